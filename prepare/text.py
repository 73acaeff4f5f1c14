"""
Your own data as a dataset like the others: CSV or JSON-lines files in; train.txt, val.txt,
test.txt and meta.json out, every number scaled per key to order 1 (xVal multiplies an embedding
by each value, docs/decisions.md#scaling). prepare/README.md#your-own-data-textpy has the details.
"""

import argparse
import contextlib
import gc
import glob
import hashlib
import json
import os
import shutil
import tempfile
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# common puts the repository's root on the path
from common import at_least, command, fail, one_line_errors, staged_dataset, write_meta
from dataset import record_level, shown
from reading import MISSING, NESTED, NUM, read_files
from records import SPLITS, check_keys, counting_keys, date_keys, leave_out_missing
from records import print_some, rows_in, split_records, warn_short, words_for_tokenizer
from scaling import scale, written
from tokenize_line import split_text
from util import TextError, check_regular, open_new

# records written at a time
BLOCK = 50_000
# join(a, b, ..., separator): the strings of each row joined
join = pc.binary_join_element_wise


def main(argv=None):
    args = parse_args(argv)
    inputs = args.files + ([args.val, args.test] if args.val else [])
    check_inputs(inputs)

    remove_old_scratch()
    table = read_files(inputs, args)

    keys, dates, renamed = clean_keys(table, args)
    kind, gaps = check_keys(table, args.missing)
    number_keys = [k for k in keys if "number" in kind[k]]
    if not number_keys:
        fail(f"{', '.join(inputs)}: no key holds numbers to predict; write digits 0-9, no unit")
    index_like = counting_keys(table, keys)

    parts, source = split_records(table, args)
    n_windowed = rows_in(table, parts).sum()

    parts, missing = leave_out_missing(parts, keys, gaps, args.missing)
    warn_short(parts, args)
    in_records = rows_in(table, parts)

    scales, digits, largest, ranges = scale(table, parts, number_keys, args.scale, index_like)

    writers = {k: lambda x, k=k: written(x, scales[k], digits[k]) for k in number_keys}
    vocab, counts = check_tokens(table, parts, keys)
    meta = {
        "dataset": "text",
        "splits": {s: len(p) for s, p in zip(SPLITS, parts)},
        "source": source,
        "window": args.window if args.window > 1 else None,
        "stride": args.stride if args.window > 1 else None,
        "keys": keys,
        "text_keys": [k for k in keys if "text" in kind[k]],
        "scales": scales,
        "ranges": ranges,
        "decimals": digits,
        "scale": args.scale,
        "missing": {"markers": list(MISSING), "how": args.missing, "records": missing},
        "dates_left_out": dates,
        "renamed": {a: b for a, b in renamed.items() if a != b},
        "mask_key": mask_key_of(args.target, number_keys, ranges, index_like),
        "rows": {"read": table.n, "in_records": int(in_records.sum())},
        "command": command("prepare/text.py", argv),
    }
    names = [f"{s}{ext}" for s in SPLITS for ext in (".txt", ".source.txt")] + ["meta.json"]
    names += [f"{s}.levels.txt" for s in SPLITS] if args.scale == "record" else []
    with staged_dataset(args.out, args.force, names) as stage:
        repeated = write_lines(stage, table, parts, keys, writers, args.scale == "record")
        write_meta(stage, meta)

    report(args, meta, table, largest, vocab, counts, n_windowed, repeated, in_records)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.error = lambda message: fail(f"{message} (--help lists the flags)")
    add = p.add_argument
    add("files", nargs="+", metavar="FILE", help="CSV or JSON-lines files (train with --val)")
    add("--out", required=True, help="output directory")
    add("--window", type=at_least(1), default=1, help="N consecutive rows of a file per record")
    add("--stride", type=at_least(1), help="with --window: a window every S rows (default N)")
    add("--order", choices=("time", "random"), help="time order (default with --window) or random")
    add("--split", default="0.8,0.1,0.1", help="train,val,test fractions")
    add("--seed", type=at_least(0), default=1337, help="seed of the random split (default 1337)")
    add("--val", metavar="FILE", help="validation records from FILE instead of a split")
    add("--test", metavar="FILE", help="test records from FILE (with --val)")
    add(
        "--missing",
        choices=("refuse", "omit", "drop"),
        default="refuse",
        help=f"a missing value ({', '.join(map(repr, MISSING))}, null): refuse (default), omit its"
        " key or drop the record",
    )
    add("--columns", help="the CSV columns or top-level JSON keys to keep, comma-separated")
    add("--text", default="", help="columns to read as text, not numbers or dates, comma-separated")
    add("--delimiter", help="the CSV delimiter (default: the header's most frequent of , ; tab |)")
    add("--decimal-comma", action="store_true", help="CSV numbers are written 12,5")
    add(
        "--scale",
        choices=("auto", "none", "record"),
        default="auto",
        help="auto: (x - mean) / std"
        " of each key on train; none: as they are; record: each window's numbers of a key divided"
        " by the mean |x| of all but its last",
    )
    add("--group", metavar="COL", help="rows with the same COL are one series (a station)")
    add("--context-before", action="store_true", help="windows may start before their part")
    add("--dates", choices=("leave-out", "number"), help="default leave-out; number: decimal years")
    add("--target", metavar="KEY", help="the key of numbers to predict (what eval.py masks)")
    add("--force", action="store_true", help="replace a dataset in --out (other files stay)")
    return p


def parse_args(argv):
    args = parser().parse_args(argv)
    if bool(args.val) != bool(args.test):
        fail("--val and --test go together (or neither, for a --split)")
    if args.stride and args.window <= 1:
        fail("--stride goes with --window N (N > 1)")
    try:
        args.fractions = [float(x) for x in args.split.split(",")]
    except ValueError:
        args.fractions = []
    positive = all(f > 0 for f in args.fractions)
    if len(args.fractions) != 3 or not positive or abs(sum(args.fractions) - 1) > 1e-6:
        fail(
            f"--split {args.split}: expected three positive fractions that add up to 1"
            " (train,val,test: 0.8,0.1,0.1)"
        )
    if args.columns:
        # each column to keep, and the flag that names it
        args.columns = dict.fromkeys([c.strip() for c in args.columns.split(",")], "--columns")
        if args.group:
            args.columns.setdefault(args.group, "--group")
    args.text = {c.strip() for c in args.text.split(",") if c.strip()}
    args.delimiter = {"tab": "\t", "\\t": "\t"}.get(args.delimiter, args.delimiter)
    args.stride = args.stride or args.window
    args.order = args.order or ("time" if args.window > 1 else "random")
    if args.scale == "record" and args.window < 2:
        fail("--scale record goes with --window N (N > 1)")
    if args.context_before and (args.order != "time" or args.window < 2 or args.val):
        fail("--context-before goes with --window N (N > 1) split in time order (--order time)")
    if args.order == "random" and args.stride < args.window and not (args.val or args.group):
        fail(
            f"--stride {args.stride} < --window {args.window} with --order random: overlapping"
            " windows would share rows between train and test; use --order time"
        )
    return args


def check_inputs(paths):
    seen = {}
    for path in paths:
        try:
            check_regular(path)
            with open(path, "rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError as e:
            fail(f"cannot read {path}: {e.strerror}")
        except TextError as e:
            fail(e)
        if digest in seen:
            fail(f"{path} holds the same bytes as {seen[digest]}: a file given twice")
        seen[digest] = path


def remove_old_scratch():
    for path in glob.glob(os.path.join(tempfile.gettempdir(), "prepare-text-*-*")):
        try:
            os.kill(int(os.path.basename(path).split("-")[2]), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (OSError, ValueError, OverflowError):
            pass


def clean_keys(table, args):
    """(keys, dates, {old: new}): dates left out, misread words renamed."""
    keys = list(table.cols)
    named = dict.fromkeys(args.text, "--text") | (args.columns or {})
    if args.group:
        named.setdefault(args.group, "--group")
    for name, flag in named.items():
        if name not in keys:
            fail(f"{flag} names {name!r}, not a column or key of the files: {', '.join(keys)}")
    if args.group:
        print(f"note: key {args.group!r} names each row's group (--group): not in the records")
    table.group = table.cols.pop(args.group) if args.group else None
    dates = date_keys(table, args.dates)
    for key in dates:
        table.cols.pop(key)
    renamed = words_for_tokenizer(table)
    keys = list(table.cols)
    if not keys:
        fail(f"{table.paths[0]}: no key left once the dates are left out")
    return keys, dates, renamed


def mask_key_of(target, number_keys, ranges, index_like):
    if target and target not in number_keys:
        fail(f"--target {target}: not a key of numbers; expected one of {', '.join(number_keys)}")
    varies = [k for k in number_keys if k not in index_like and ranges[k][0] < ranges[k][1]]
    key = target or (varies or number_keys)[0]
    if not target:
        print(
            f"note: eval.py and sample.py predict {key!r} (the first key of numbers that varies);"
            f" --target KEY names the one to predict ({', '.join(varies[:8])})"
        )
    return key


def dump(value, write):
    if isinstance(value, dict):
        items = [f"{json.dumps(k, ensure_ascii=False)}:{dump(v, write)}" for k, v in value.items()]
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v, write) for v in value) + "]"
    if isinstance(value, Decimal):
        return write([float(value)])[0]
    return json.dumps(value, ensure_ascii=False)


def zeros(x):
    return np.full(len(x), "0", dtype=object)


def lines_of(table, part, keys, writers, lo, hi, levels=()):
    """The lines of records lo..hi of a part, without the keys a record leaves out; levels: {key:
    each record's level} to divide by."""
    rows = part.rows[lo:hi]
    fields = []
    for key in keys:
        col, flat = table.cols[key], rows.ravel()
        text = np.empty(len(flat), dtype=object)
        code = col.code[flat]
        write = writers.get(key, zeros)
        x = col.x[flat]
        if key in levels:
            x = x / np.repeat(levels[key], rows.shape[1])
        text[code == NUM] = write(x[code == NUM])
        text[code >= 0] = col.words[code[code >= 0]]
        for i in np.flatnonzero(code == NESTED):
            text[i] = dump(col.nested[flat[i]], write)
        # a window's values as a list: [v1,...,vN]
        steps = [pa.array(text[j :: rows.shape[1]], pa.string()) for j in range(rows.shape[1])]
        value = steps[0] if len(steps) == 1 else join("[", join(*steps, ","), "]", "")
        field = join(json.dumps(key, ensure_ascii=False) + ":", value, "")
        fields.append(pc.if_else(part.has(key)[lo:hi], field, None))
    # a key a record leaves out is null, skipped
    return join("{", join(*fields, ",", null_handling="skip"), "}", "").to_pylist()


def check_tokens(table, parts, keys):
    """Train's text tokens, and (numbers, tokens) per record at least and most; refused: a val or
    test token train lacks."""
    vocab, seen = set(), {}
    for split, part in zip(SPLITS, parts):
        for lo in range(0, len(part), BLOCK):
            lines = lines_of(table, part, keys, {}, lo, lo + BLOCK)
            for i, line in enumerate(lines):
                if line in seen:
                    continue
                pieces = split_text(line)
                seen[line] = (sum(kind != "text" for kind, _ in pieces), len(pieces))
                unseen = [t for kind, t in pieces if kind == "text" and t not in vocab]
                if split != "train" and unseen:
                    where = table.where(part.rows[lo + i][0])
                    fix = ""
                    for k, v in json.loads(line).items():
                        if ("text", unseen[0]) in split_text(dump({k: v}, zeros)):
                            fix = f"leave out its key {k!r} (--columns) or "
                            break
                    fail(
                        f"{where}: the {split} record holds the text token {shown(unseen[0])},"
                        f" which no training record has; {fix}add such records to train"
                    )
                vocab.update(unseen)
    counts = np.array(list(seen.values()))
    return vocab, (counts.min(axis=0), counts.max(axis=0))


def write_lines(stage, table, parts, keys, writers, record):
    """Each split's files in stage; {split: how many of its lines are also in train}."""
    repeated, train = dict.fromkeys(SPLITS[1:], 0), np.empty(len(parts[0]), np.int64)
    for split, part in zip(SPLITS, parts):
        path = os.path.join(stage, split)
        levels_file = open_new(f"{path}.levels.txt", "w") if record else contextlib.nullcontext()
        source = open_new(f"{path}.source.txt", "w")
        with open_new(f"{path}.txt") as f, levels_file, source:
            for lo in range(0, len(part), BLOCK):
                rows = part.rows[lo : lo + BLOCK]
                source.write("\n".join(table.places(rows[:, 0])) + "\n")
                found = {}
                if record:
                    for key in writers:
                        col = table.cols[key]
                        x = np.where(col.code[rows] == NUM, col.x[rows], np.nan)
                        found[key] = record_level(x)
                    each = zip(*[v.tolist() for v in found.values()])
                    levels_file.write("".join(json.dumps(dict(zip(found, v))) + "\n" for v in each))
                lines = lines_of(table, part, keys, writers, lo, lo + BLOCK, found)
                f.write(("\n".join(lines) + "\n").encode())
                hashes = np.fromiter(map(hash, lines), np.int64, len(lines))
                if split == "train":
                    train[lo : lo + len(lines)] = hashes
                    continue
                at = np.minimum(np.searchsorted(train, hashes), len(train) - 1)
                repeated[split] += int((train[at] == hashes).sum())
        if split == "train":
            train.sort()
    return repeated


def report(args, meta, table, largest, vocab, counts, n_windowed, repeated, in_records):
    unit = f" of {args.window} rows each (a window every {args.stride})" if args.window > 1 else ""
    how = "in time order (per file)" if args.order == "time" else "at random"
    if args.group:
        how = f"{'in time order within each' if args.order == 'time' else 'at random, by'} group"
        how += f" ({args.group})"
    sizes = ", ".join(f"{s} {n}" for s, n in meta["splits"].items())
    print(f"wrote {args.out}: {sizes} records{unit}, split {'from the files' if args.val else how}")
    n_rows, kept = meta["rows"]["read"], meta["rows"]["in_records"]
    print(
        f"rows: {n_rows} read = {kept} in records written + {n_windowed - kept} left out for a"
        f" missing value + {n_rows - n_windowed} in no window"
    )
    missing = meta["missing"]["records"]
    what = "records left out" if args.missing == "drop" else "values left out of their records"
    if args.missing == "omit" and args.window > 1:
        what = "windows that leave the key out"
    counted = ", ".join(f"{k} {n}" for k, n in missing.items()) + f" {what} ({args.missing})"
    print(
        f"missing values ({', '.join(map(repr, MISSING))} in any case; JSON null, NaN; a key a"
        f" record lacks): {counted if missing else 'none'}"
    )
    lines = []
    for k in meta["keys"]:
        s = meta["scales"].get(k)
        if s and args.scale == "auto":
            lines.append(
                f"  {k:>12}: numbers, scaled (x - {s['center']:g}) / {s['spread']:g},"
                f" {meta['decimals'][k]} decimals, largest |x| written {largest[k]:.3g}"
            )
        elif s:
            done = "each window's divided by its level" if args.scale == "record" else "as they are"
            lines.append(f"  {k:>12}: numbers, {done}, largest |x| read {largest[k]:.3g}")
        if k in meta["text_keys"]:
            col = table.cols[k]
            codes = np.unique(col.code[in_records])
            values = sorted({col.texts[c] for c in codes[codes >= 0]}, key=str)
            lines.append(
                f"  {k:>12}: text, {len(values)} value(s): {', '.join(map(str, values[:12]))}"
                + (" ..." if len(values) > 12 else "")
            )
    print_some(lines, 20)
    (low_n, low_t), (high_n, high_t) = counts
    print(f"numbers per record: {low_n}-{high_n}; tokens per record (xval): {low_t}-{high_t}")
    more = f" ... and {len(vocab) - 200} more" if len(vocab) > 200 else ""
    print(f"text tokens ({len(vocab)}): {' '.join(sorted(vocab)[:200])}{more}")
    for s, n in repeated.items():
        if n:
            print(f"note: {n} of the {meta['splits'][s]} {s} records are also, exactly, in train")
    print(f"next: {command('tokenize_numbers.py', [args.out, '--encoding', 'xval'])}")


if __name__ == "__main__":
    one_line_errors()
    # millions of small objects, none in a cycle: the cyclic collector only slows them
    gc.disable()
    main()
