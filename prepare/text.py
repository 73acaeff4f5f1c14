"""
Your own data as a dataset like the others: CSV or JSON-lines files in; train.txt, val.txt,
test.txt and meta.json out, every number scaled per key to order 1 (xVal multiplies an embedding
by each value, docs/decisions.md#scaling). prepare/README.md#your-own-data-textpy has the details.

    # one record per row, random split
    python prepare/text.py stations.csv --out data/stations
    # a series, split in time
    python prepare/text.py co2.csv --window 16 --stride 4 --missing drop --out data/co2
    python prepare/text.py a.jsonl b.jsonl --split 0.9,0.05,0.05 --seed 1 --out data/mine
    python prepare/text.py train.jsonl --val val.jsonl --test test.jsonl --out data/mine

Reading. A file that starts with "{" or "[" is JSON: an object per line (JSON lines), objects spread
over lines, or one array of objects, a record each; any other file is CSV with a header row
(delimiter , ; tab or |, the header's most frequent, named when not a comma), a record {"column":
value, ...} per row. A column of numbers is a number key, one of other values a text key. Missing
values (MISSING below, any case; JSON null and NaN; a key a JSON record lacks) are refused unless
--missing=omit (the key is left out of that record) or --missing=drop (the record, or window, is
left out). A key of dates or times (2021-03-04, 2021-03-04T12:00, 12:30, 03/04/2021, 4-Mar-2021,
5:06 PM, 20210304) is left out with a note: rows are taken in file order. A text value or key name
the tokenizer would read as holding numbers (room 12, 01234) is written as one word, its other
characters "_" ("room_12", "_01234"), so every later step reads it alike.

Records. With --window N, N consecutive rows of one file become one record {"key": [v1, ..., vN]},
a window starting every --stride S rows (default N). --order time (the default with --window)
cuts each file's rows into train, then val, then test by --split, and takes windows inside each
part; --order random (the default without) splits the records at random.

Scaling (--scale auto): every number under a key, at any depth, becomes (x - center) / spread,
center and spread the mean and standard deviation of the key's numbers in the training split
(spread 1 for a constant key); meta.json records them as "scales": {key: {"center", "spread"}},
so original = scaled * spread + center. Digits: a key's scaled numbers are written with d
decimals, the least d with 10^-d * spread <= 10^q / 10, 10^q the place of the finest digit among
the key's input numbers; scaled * spread + center is then within 0.05 * 10^q of the input, and
rounded to the input's digits it is the input, exactly (for inputs of up to 15 significant
digits, what a float64 holds). --scale none writes the numbers as they are (center 0, spread 1).
Two different inputs that the model would see as one float32 are named in a warning.
"""

import argparse
import hashlib
import json
import os
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    _at_least,
    dataset_files,
    one_line_errors,
    prepare_out_dir,
    swap_in,
    write_meta,
    write_split,
)
from reading import MISSING, date_keys, fail, leaves, numbers, read_file  # noqa: E402
from records import (  # noqa: E402
    SPLITS,
    check_keys,
    complete_records,
    counting_keys,
    leave_out_missing,
    rows_in,
    split_records,
    words_for_tokenizer,
)
from scaling import largest, scale  # noqa: E402

from tokenize_numbers import TextError, split_text  # noqa: E402
from util import shell_line  # noqa: E402


def main(argv=None):
    args = parse_args(argv)
    inputs = args.files + ([args.val, args.test] if args.val else [])
    check_inputs(inputs, args.out)

    # read: each file's rows (record, where) in order, and what the file calls a key
    files = [(path, *read_file(path, args)) for path in inputs]
    n_rows = sum(len(rows) for _, rows, _ in files)

    # clean keys: dates left out, words the tokenizer would misread renamed, every value checked
    keys, kind, dates, renamed = clean_keys(files, args.text)
    complete_records(files, keys, args.missing)
    index_like = counting_keys(files, keys)

    # records, split into train, val and test
    parts, source = split_records(files, args)
    windowed = rows_in(parts)

    # missing values: left out of their records (omit), or the records dropped (drop)
    parts, missing = leave_out_missing(parts, keys, args.missing)

    # scale each key's numbers by train's center and spread
    number_keys = [k for k in keys if "number" in kind[k]]
    scales, digits, writers = scale(parts, number_keys, args.scale)

    # write: a line of JSON per record, then meta.json
    lines, vocab, counts = write_lines(parts, keys, writers)
    meta = {
        "dataset": "text",
        "splits": {s: len(lines[s]) for s in SPLITS},
        "source": source,
        "window": args.window if args.window > 1 else None,
        "stride": args.stride if args.window > 1 else None,
        "keys": keys,
        "text_keys": [k for k in keys if "text" in kind[k]],
        "scales": scales,
        "decimals": digits,
        "scale": args.scale,
        "missing": {"markers": list(MISSING), "how": args.missing, "records": missing},
        "dates_left_out": dates,
        "renamed": {a: b for a, b in renamed.items() if a != b},
        "mask_key": mask_key_of(parts[0], number_keys, index_like),
        "rows": {"read": n_rows, "in_records": len(rows_in(parts))},
        "command": " ".join(
            ["python", "prepare/text.py"] + (sys.argv[1:] if argv is None else list(argv))
        ),
    }
    stage = prepare_out_dir(args.out, args.force, [f"{s}.txt" for s in SPLITS] + ["meta.json"])
    for split in SPLITS:
        write_split(stage, split, lines[split])
    write_meta(stage, meta)
    swap_in(args.out, stage)
    report(args, meta, parts, lines, vocab, counts, len(windowed))


def parse_args(argv):
    """The command line, checked; args.fractions from --split, args.stride and args.order filled
    in."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="CSV or JSON-lines files (the training data with --val)",
    )
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--window", type=_at_least(1), default=1, help="N consecutive rows of a file per record"
    )
    p.add_argument(
        "--stride",
        type=_at_least(1),
        help="with --window: a window starts every S rows (default N: no overlap)",
    )
    p.add_argument(
        "--order",
        choices=("time", "random"),
        help="split in time order (default with --window) or at random",
    )
    p.add_argument(
        "--split",
        default="0.8,0.1,0.1",
        help="train,val,test fractions (of the rows in time order)",
    )
    p.add_argument(
        "--seed", type=_at_least(0), default=1337, help="seed of the random split (default 1337)"
    )
    p.add_argument("--val", metavar="FILE", help="validation records from FILE instead of a split")
    p.add_argument("--test", metavar="FILE", help="test records from FILE (with --val)")
    p.add_argument(
        "--missing",
        choices=("refuse", "omit", "drop"),
        default="refuse",
        help=(
            f"a missing value ({', '.join(repr(m) for m in MISSING)}, any case; JSON null, NaN):"
            " refuse (default), omit (leave its key out of the record) or drop (leave the record"
            " out)"
        ),
    )
    p.add_argument(
        "--columns", help="the columns (CSV) or top-level keys (JSON) to keep, comma-separated"
    )
    p.add_argument(
        "--text", default="", help="columns to read as text, not numbers or dates, comma-separated"
    )
    p.add_argument(
        "--delimiter", help="the CSV delimiter (default: the header's most frequent of , ; tab |)"
    )
    p.add_argument(
        "--decimal-comma",
        action="store_true",
        help=(
            "CSV numbers are written 12,5 (as European spreadsheets write them, with ; or tab"
            " between cells)"
        ),
    )
    p.add_argument(
        "--scale",
        choices=("auto", "none"),
        default="auto",
        help=(
            "auto: each key's numbers centred and divided by their spread on train; none: as"
            " they are"
        ),
    )
    p.add_argument(
        "--force", action="store_true", help="replace a dataset in --out (other files stay)"
    )
    args = p.parse_args(argv)
    if bool(args.val) != bool(args.test):
        fail("--val and --test go together (or neither, for a --split)")
    if args.stride and args.window <= 1:
        fail("--stride goes with --window N (N > 1): the rows between the starts of two windows")
    args.fractions = fractions_of(args.split)
    args.columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    args.text = {c.strip() for c in args.text.split(",") if c.strip()}
    args.delimiter = {"tab": "\t", "\\t": "\t"}.get(args.delimiter, args.delimiter)
    args.stride = args.stride or args.window
    args.order = args.order or ("time" if args.window > 1 else "random")
    if args.order == "random" and args.stride < args.window and not args.val:
        fail(
            f"--stride {args.stride} < --window {args.window} with --order random: overlapping"
            " windows would share rows between train and test; use --order time, or a stride of"
            " at least the window"
        )
    return args


def fractions_of(text):
    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 3 or min(parts) <= 0 or abs(sum(parts) - 1) > 1e-6:
        fail(
            f"--split {text}: expected three positive fractions that add up to 1 (train,val,test:"
            " 0.8,0.1,0.1)"
        )
    return parts


def check_inputs(paths, out):
    """No file given twice, under one name or two (a val or test file equal to a training file
    leaks), and none that writing the dataset to out replaces (--force would delete it before it is
    read)."""
    seen = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            fail(f"cannot read {path}: {e.strerror}")
        if digest in seen:
            fail(
                f"{path} holds the same bytes as {seen[digest]}: a file given twice (or a val/test"
                " file equal to train) would put the same records in two splits; give each file"
                " once"
            )
        seen[digest] = path
    if os.path.isdir(out):
        names = dataset_files(out)[0] + [f"{s}.txt" for s in SPLITS]
        replaced = {os.path.realpath(os.path.join(out, name)) for name in names}
        for path in paths:
            if os.path.realpath(path) in replaced:
                fail(
                    f"{path} is a file that writing a dataset to {out} replaces; choose another --out"
                )


def clean_keys(files, text_keys):
    """(keys, {key: kinds}, the keys of dates left out, {old: new} names): a key of dates or times
    is left out of every record, names and text values the tokenizer would read as numbers become
    words, and every key must hold a value of one kind."""
    rows = [row for _, part, _ in files for row in part]
    keys = list(dict.fromkeys(k for record, _ in rows for k in record))
    for name in text_keys:
        if name not in keys:
            fail(f"--text names {name!r}, not a column or key of the files: {', '.join(keys)}")
    dates = date_keys(rows, keys, text_keys)
    for record, _ in rows:
        for key in dates:
            record.pop(key, None)
    renamed = words_for_tokenizer([part for _, part, _ in files])
    keys = [renamed[k] for k in keys if k not in dates]
    if not keys:
        fail(
            f"{files[0][0]}: no key left once the dates are left out; expected a column of numbers"
            " or text"
        )
    kind = check_keys([row for _, part, _ in files for row in part])
    for key in [k for k in keys if k not in kind]:
        fail(
            f"key {key!r} holds no value in any record (each is empty or a missing value); leave it"
            " out with --columns"
        )
    return keys, kind, dates, renamed


def mask_key_of(train, number_keys, index_like):
    """train.py's hint: the first key whose numbers vary in train and do not count rows, else the
    first number key."""
    varies = [
        k for k in number_keys if len({x for r, _, _ in train for x in numbers(r.get(k, []))}) > 1
    ]
    return next((k for k in varies if k not in index_like), number_keys[0] if number_keys else None)


def json_object(pairs):
    """Compact JSON of an object's (key, value written as JSON) pairs."""
    return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{v}" for k, v in pairs) + "}"


def dump(value, write_number):
    """A value as compact JSON, its numbers written by write_number."""
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{json.dumps(k, ensure_ascii=False)}:{dump(v, write_number)}"
                for k, v in value.items()
            )
            + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(dump(v, write_number) for v in value) + "]"
    return (
        write_number(value) if isinstance(value, Decimal) else json.dumps(value, ensure_ascii=False)
    )


def write_lines(parts, keys, writers):
    """Each split's lines (a record as compact JSON, its keys in order), train's text tokens, and
    (numbers, tokens) per record. Refused: a record the tokenizer would read other numbers in, and
    a val or test record with a text token that train lacks."""
    lines, vocab, counts = {}, {}, []
    for split, part in zip(SPLITS, parts):
        lines[split] = []
        for record, where, _ in part:
            line = json_object(
                (k, dump(record[k], writers.get(k, str))) for k in keys if k in record
            )
            try:
                pieces = split_text(line, where)
            except TextError as e:
                fail(f"{e} (written as {line[:60]!r})")
            tokens = [t for kind, t in pieces if kind == "text"]
            n_numbers = sum(len(numbers(v)) for v in record.values())
            if len(pieces) - len(tokens) != n_numbers:
                fail(
                    f"{where}: the tokenizer reads {len(pieces) - len(tokens)} numbers in the"
                    f" record written as {line[:60]!r}, which holds {n_numbers}"
                )
            if split == "train":
                vocab.update(dict.fromkeys(tokens))
            else:
                unseen = [t for t in tokens if t not in vocab]
                if unseen:
                    fail(
                        f"{where}: the {split} record holds the text token {unseen[0]!r}, which no"
                        " training record has, so tokenize_numbers.py could not encode it; add"
                        " such records to the training data, or write the value as a number or a"
                        " category train has"
                    )
            counts.append((len(pieces) - len(tokens), len(pieces)))
            lines[split].append(line)
    return lines, vocab, counts


def report(args, meta, parts, lines, vocab, counts, n_windowed):
    """What was written: the records per split, every row read accounted for, the missing values,
    each key, the tokens, and what to look at."""
    unit = f" of {args.window} rows each (a window every {args.stride})" if args.window > 1 else ""
    how = {"time": "in time order (per file)", "random": "at random"}[args.order]
    print(
        f"wrote {args.out}: train {len(parts[0])}, val {len(parts[1])}, test {len(parts[2])}"
        f" records{unit}, split {'from the files' if args.val else how}"
    )
    n_rows, kept = meta["rows"]["read"], meta["rows"]["in_records"]
    print(
        f"rows: {n_rows} read = {kept} in records written + {n_windowed - kept} left out for a"
        f" missing value + {n_rows - n_windowed} in no window (a file's or a split's last rows)"
    )
    missing = meta["missing"]["records"]
    print(
        f"missing values ({', '.join(map(repr, MISSING))} in any case; JSON null, NaN; a key a"
        " record lacks): "
        + (
            ", ".join(f"{k} {n}" for k, n in missing.items())
            + (
                " records left out (drop)"
                if args.missing == "drop"
                else " values left out of their records (omit)"
            )
            if missing
            else "none"
        )
    )
    scales = meta["scales"]
    top = {k: largest(parts, k, s) for k, s in scales.items()}
    for k in meta["keys"]:
        if k in scales:
            s = scales[k]
            print(
                f"  {k:>12}: numbers, scaled (x - {s['center']:g}) / {s['spread']:g},"
                f" {meta['decimals'][k]} decimals, largest |x| written {top[k]:.3g}"
                if args.scale == "auto"
                else f"  {k:>12}: numbers, as they are, largest |x| {top[k]:.3g}"
            )
        if k in meta["text_keys"]:
            values = {
                v
                for part in parts
                for r, _, _ in part
                for v in leaves(r.get(k))
                if not isinstance(v, Decimal)
            }
            values = sorted(values, key=str)
            print(
                f"  {k:>12}: text, {len(values)} value(s): {', '.join(map(str, values[:12]))}"
                + (" ..." if len(values) > 12 else "")
            )
    n_numbers, n_pieces = zip(*counts)
    print(
        f"numbers per record: {min(n_numbers)}-{max(n_numbers)}; tokens per record (xval): "
        f"{min(n_pieces)}-{max(n_pieces)}"
    )
    print(f"text tokens ({len(vocab)}): {' '.join(sorted(vocab))}")
    in_train = set(lines["train"])
    for s in SPLITS[1:]:
        n = sum(line in in_train for line in lines[s])
        if n:
            print(
                f"note: {n} of the {len(lines[s])} {s} records are also, exactly, in train"
                " (duplicate records)"
            )
    for k in scales:
        if args.scale == "none" and not 0.1 <= top[k] <= 10:
            print(
                f"warning: key {k!r}: numbers up to |x| = {top[k]:.4g}; xVal learns best with"
                " values of order 1 (--scale auto scales them)"
            )
    print(f"next: {shell_line('python', 'tokenize_numbers.py', args.out, '--encoding', 'xval')}")


if __name__ == "__main__":
    one_line_errors()
    main()
