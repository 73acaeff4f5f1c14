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

The files are read in prepare/reading.py, made records and split in prepare/records.py, and
scaled in prepare/scaling.py.
"""

import argparse
import hashlib
import json
import os
from decimal import Decimal

# common puts the repository's root on the path
from common import at_least, command, dataset_files, fail, one_line_errors, staged_dataset
from common import write_meta, write_split
from reading import MISSING, date_keys, leaves, numbers, read_file, words_for_tokenizer
from records import SPLITS, check_keys, check_values, counting_keys, leave_out_missing
from records import rows_in, split_records
from scaling import key_numbers, largest, scale
from tokenize_numbers import TextError, split_text
from util import shell_line


def main(argv=None):
    args = parse_args(argv)
    inputs = args.files + ([args.val, args.test] if args.val else [])
    check_inputs(inputs, args.out)

    # read: each file's rows [(record, where)], and what it calls a key
    files = [(path, *read_file(path, args)) for path in inputs]
    n_rows = sum(len(rows) for _, rows, _ in files)

    # clean keys: dates left out, words the tokenizer would misread renamed, values checked
    keys, kind, dates, renamed = clean_keys(files, args.text)
    check_values(files, keys, args.missing)
    index_like = counting_keys(files, keys)

    # records, split into train, val and test
    parts, source = split_records(files, args)
    n_windowed = len(rows_in(parts))

    # missing values left out (omit: of their records; drop: with them)
    parts, missing = leave_out_missing(parts, keys, args.missing)

    # scale each key's numbers
    number_keys = [k for k in keys if "number" in kind[k]]
    scales, digits, writers = scale(parts, number_keys, args.scale)

    # write a line of JSON per record, and meta.json
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
        # each number key's least and largest number in train, in the file's units
        "ranges": {
            k: [float(min(v)), float(max(v))] for k in scales if (v := key_numbers(parts[0], k))
        },
        "decimals": digits,
        "scale": args.scale,
        "missing": {"markers": list(MISSING), "how": args.missing, "records": missing},
        "dates_left_out": dates,
        "renamed": {a: b for a, b in renamed.items() if a != b},
        "mask_key": mask_key_of(parts[0], number_keys, index_like),
        "rows": {"read": n_rows, "in_records": len(rows_in(parts))},
        "command": command("prepare/text.py", argv),
    }
    with staged_dataset(
        args.out, args.force, [f"{s}.txt" for s in SPLITS] + ["meta.json"]
    ) as stage:
        for split in SPLITS:
            write_split(stage, split, lines[split])
        write_meta(stage, meta)

    report(args, meta, parts, lines, vocab, counts, n_windowed)


def parse_args(argv):
    """The command line, checked; args.fractions, .stride and .order set."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add(
        "files",
        nargs="+",
        metavar="FILE",
        help="CSV or JSON-lines files (the training data with --val)",
    )
    add("--out", required=True, help="output directory")
    add("--window", type=at_least(1), default=1, help="N consecutive rows of a file per record")
    add(
        "--stride",
        type=at_least(1),
        help="with --window: a window starts every S rows (default N: no overlap)",
    )
    add(
        "--order",
        choices=("time", "random"),
        help="split in time order (default with --window) or at random",
    )
    add(
        "--split",
        default="0.8,0.1,0.1",
        help="train,val,test fractions (of the rows in time order)",
    )
    add("--seed", type=at_least(0), default=1337, help="seed of the random split (default 1337)")
    add("--val", metavar="FILE", help="validation records from FILE instead of a split")
    add("--test", metavar="FILE", help="test records from FILE (with --val)")
    add(
        "--missing",
        choices=("refuse", "omit", "drop"),
        default="refuse",
        help=f"a missing value ({', '.join(map(repr, MISSING))}, any case; JSON null, NaN): refuse"
        " (default), omit (leave its key out of the record) or drop (leave the record out)",
    )
    add("--columns", help="the columns (CSV) or top-level keys (JSON) to keep, comma-separated")
    add("--text", default="", help="columns to read as text, not numbers or dates, comma-separated")
    add("--delimiter", help="the CSV delimiter (default: the header's most frequent of , ; tab |)")
    add(
        "--decimal-comma",
        action="store_true",
        help="CSV numbers are written 12,5 (as European spreadsheets write them, with ; or tab"
        " between cells)",
    )
    add(
        "--scale",
        choices=("auto", "none"),
        default="auto",
        help="auto: each key's numbers centred and divided by their spread on train; none: as they"
        " are",
    )
    add("--force", action="store_true", help="replace a dataset in --out (other files stay)")
    args = p.parse_args(argv)
    if bool(args.val) != bool(args.test):
        fail("--val and --test go together (or neither, for a --split)")
    if args.stride and args.window <= 1:
        fail("--stride goes with --window N (N > 1): the rows between the starts of two windows")
    try:
        args.fractions = [float(x) for x in args.split.split(",")]
    except ValueError:
        args.fractions = []
    if len(args.fractions) != 3 or min(args.fractions) <= 0 or abs(sum(args.fractions) - 1) > 1e-6:
        fail(
            f"--split {args.split}: expected three positive fractions that add up to 1"
            " (train,val,test: 0.8,0.1,0.1)"
        )
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


def check_inputs(paths, out):
    """No file given twice, under one name or two, nor one that writing to out replaces."""
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
    # --force would delete an input before it is read back
    if os.path.isdir(out):
        names = dataset_files(out)[0] + [f"{s}.txt" for s in SPLITS]
        replaced = {os.path.realpath(os.path.join(out, name)) for name in names}
        for path in paths:
            if os.path.realpath(path) in replaced:
                fail(
                    f"{path} is a file that writing a dataset to {out} replaces; choose another"
                    " --out"
                )


def clean_keys(files, text_keys):
    """(keys, {key: kinds}, dates, {old: new}); dates left out, misread words renamed."""
    rows = [row for _, part, _ in files for row in part]
    keys = list(dict.fromkeys(k for record, _ in rows for k in record))
    for name in text_keys:
        if name not in keys:
            fail(f"--text names {name!r}, not a column or key of the files: {', '.join(keys)}")
    dates = date_keys(rows, keys, text_keys)
    for record, _ in rows:
        for key in dates:
            record.pop(key, None)
    renamed = words_for_tokenizer(rows)
    keys = [renamed[k] for k in keys if k not in dates]
    if not keys:
        fail(
            f"{files[0][0]}: no key left once the dates are left out; expected a column of numbers"
            " or text"
        )
    kind = check_keys(rows)
    for key in [k for k in keys if k not in kind]:
        fail(
            f"key {key!r} holds no value in any record (each is empty or a missing value); leave it"
            " out with --columns"
        )
    return keys, kind, dates, renamed


def mask_key_of(train, number_keys, index_like):
    """train.py's hint: the first key whose numbers vary in train and count no rows."""
    for k in number_keys:
        if k not in index_like and len(set(key_numbers(train, k))) > 1:
            return k
    return number_keys[0] if number_keys else None


def dump(value, writers, key=None):
    """A value as compact JSON, the numbers under top-level key k written by writers[k]."""
    if isinstance(value, dict):
        items = [
            f"{json.dumps(k, ensure_ascii=False)}:{dump(v, writers, k if key is None else key)}"
            for k, v in value.items()
        ]
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v, writers, key) for v in value) + "]"
    if isinstance(value, Decimal):
        return writers.get(key, str)(value)
    return json.dumps(value, ensure_ascii=False)


def write_lines(parts, keys, writers):
    """Each split's lines, train's text tokens, and (numbers, tokens) per record."""
    lines, vocab, counts = {s: [] for s in SPLITS}, {}, []
    for split, part in zip(SPLITS, parts):
        for record, where, _ in part:
            line = dump({k: record[k] for k in keys if k in record}, writers)
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
            unseen = [t for t in tokens if t not in vocab]
            if split != "train" and unseen:
                fail(
                    f"{where}: the {split} record holds the text token {unseen[0]!r}, which no"
                    " training record has, so tokenize_numbers.py could not encode it; add such"
                    " records to the training data, or write the value as a number or a category"
                    " train has"
                )
            vocab.update(dict.fromkeys(tokens))
            counts.append((n_numbers, len(pieces)))
            lines[split].append(line)
    return lines, vocab, counts


def report(args, meta, parts, lines, vocab, counts, n_windowed):
    """Records per split, every row read accounted for, missing values, keys, tokens."""
    unit = f" of {args.window} rows each (a window every {args.stride})" if args.window > 1 else ""
    how = "in time order (per file)" if args.order == "time" else "at random"
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
    what = "records left out" if args.missing == "drop" else "values left out of their records"
    print(
        f"missing values ({', '.join(map(repr, MISSING))} in any case; JSON null, NaN; a key a"
        " record lacks): "
        + (", ".join(f"{k} {n}" for k, n in missing.items()) if missing else "none")
        + (f" {what} ({args.missing})" if missing else "")
    )
    scales = meta["scales"]
    top = {k: largest(parts, k, s) for k, s in scales.items()}
    for k in meta["keys"]:
        s = scales.get(k)
        if s and args.scale == "auto":
            print(
                f"  {k:>12}: numbers, scaled (x - {s['center']:g}) / {s['spread']:g},"
                f" {meta['decimals'][k]} decimals, largest |x| written {top[k]:.3g}"
            )
        elif s:
            print(f"  {k:>12}: numbers, as they are, largest |x| {top[k]:.3g}")
        if k in meta["text_keys"]:
            values = [v for part in parts for r, _, _ in part for v in leaves(r.get(k))]
            values = sorted({v for v in values if not isinstance(v, Decimal)}, key=str)
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
