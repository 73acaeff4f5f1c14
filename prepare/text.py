"""
Your own data as a dataset like the others: CSV or JSON-lines files in; train.txt, val.txt,
test.txt and meta.json out, every number scaled per key to order 1 (xVal multiplies an embedding
by each value, docs/decisions.md#scaling).

    python prepare/text.py stations.csv --out data/stations                 # one record per row
    python prepare/text.py stations.csv --window 8 --out data/stations_w8   # 8 consecutive rows per record
    python prepare/text.py a.jsonl b.jsonl --split 0.9,0.05,0.05 --seed 1 --out data/mine
    python prepare/text.py train.jsonl --val val.jsonl --test test.jsonl --out data/mine

A file whose first line starts with "{" is JSON lines (a JSON object per line, a record each); any
other file is CSV with a header row, a record {"column": value, ...} per row. A CSV column whose
cells are numbers is a number key; one whose cells are not (a station name, "rain", a date) is a
text key, kept as text that becomes tokens. Every record has the same keys. With --window N, N
consecutive records of one file become one record {"key": [v1, ..., vN], ...}: windows never span
two files, and rows left over at a file's end are named and left out.

Scaling (--scale auto): every number under a key, at any depth, becomes (x - center) / spread,
center and spread the mean and standard deviation of the key's numbers in the training split
(spread 1 for a constant key); meta.json records them as "scales": {key: {"center", "spread"}},
so original = scaled * spread + center. Digits: a key's scaled numbers are written with d
decimals, the least d with 10^-d * spread <= 10^q / 10, 10^q the place of the finest digit among
the key's input numbers; scaled * spread + center is then within 0.05 * 10^q of the input, and
rounded to the input's digits it is the input, exactly (for inputs of up to 15 significant
digits, what a float64 holds). --scale none writes the numbers as they are (center 0, spread 1).
"""
import argparse
import csv
import functools
import json
import math
import os
import re
import sys
from decimal import Decimal

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import _at_least, dataset_files, one_line_on_full_disk, prepare_out_dir, write_meta, write_split  # noqa: E402
from dataset import read_lines  # noqa: E402
from tokenize_numbers import TextError, split_text  # noqa: E402

NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # a CSV cell that is a number
SPLITS = ("train", "val", "test")


def fail(message):
    sys.exit(f"error: {message}")


def read_csv(path, lines):
    """[(record, where)] of a CSV file's rows; a column is numbers (Decimal) or text (str), never both."""
    rows = list(csv.reader(lines))
    header = [name.strip() for name in rows[0]]
    for j, name in enumerate(header):
        if not name or name in header[:j]:
            fail(f"{path}:1: column {j + 1} of the header is {'empty' if not name else f'{name!r} again'}; "
                 "expected one distinct name per column")
    if len(rows) == 1:
        fail(f"{path}: a header and no rows; expected one row per record after the header")
    for i, row in enumerate(rows[1:], 2):
        if not row:
            fail(f"{path}:{i}: empty line; expected one row per record")
        if len(row) != len(header):
            fail(f"{path}:{i}: {len(row)} cells, but the header ({path}:1) names {len(header)} columns")
    columns = []
    for j, name in enumerate(header):
        cells = [row[j].strip() for row in rows[1:]]
        if "" in cells:
            fail(f"{path}:{cells.index('') + 2}: column {name!r} is empty; fill it or remove the row")
        numeric = [NUMBER.fullmatch(c) is not None for c in cells]
        n = sum(numeric)
        if 0 < n < len(cells) and n * 2 >= len(cells):  # mostly numbers: the others are malformed numbers
            i = numeric.index(False)
            fail(f"{path}:{i + 2}: column {name!r}: {cells[i]!r} is not a number, but {n} of the column's "
                 f"{len(cells)} cells are; write it as one (e.g. 1013.6)")
        if 0 < n < len(cells):
            i = numeric.index(True)
            fail(f"{path}:{i + 2}: column {name!r}: {cells[i]!r} is a number, but most of the column's cells "
                 "are text; make a column all numbers or all text")
        columns.append([Decimal(c) for c in cells] if n else cells)
    return [(dict(zip(header, values)), f"{path}:{i}") for i, values in enumerate(zip(*columns), 2)]


def _no_constant(name):
    raise ValueError(f"{name} is not a finite number")


def read_jsonl(path, lines):
    """[(record, where)] of a JSON-lines file; numbers are read as Decimal, keeping their digits."""
    records = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            fail(f"{path}:{i}: empty line; expected one JSON record per line")
        try:
            record = json.loads(line, parse_float=Decimal, parse_int=Decimal, parse_constant=_no_constant)
        except json.JSONDecodeError as e:
            fail(f"{path}:{i}: not a JSON record ({e.msg} at column {e.colno})")
        except ValueError as e:
            fail(f"{path}:{i}: {e}")
        if not isinstance(record, dict) or not record:
            fail(f"{path}:{i}: expected a JSON object {{\"key\": value, ...}}, found {line[:40]!r}")
        for key, value in record.items():
            if "null" in kinds(value):
                fail(f"{path}:{i}: key {key!r} holds null (a missing value); fill it or remove the record")
        records.append((record, f"{path}:{i}"))
    return records


def leaves(value):
    """The numbers (Decimal), strings, booleans and nulls under a value, in order."""
    if isinstance(value, dict):
        value = list(value.values())
    return [x for v in value for x in leaves(v)] if isinstance(value, list) else [value]


def kinds(value):
    """The kinds of a value's leaves: 'number', 'text' (strings and booleans), 'null'."""
    return {"number" if isinstance(x, Decimal) else "null" if x is None else "text" for x in leaves(value)}


def numbers(value):
    return [x for x in leaves(value) if isinstance(x, Decimal)]


def read_file(path, window):
    """[(record, where)] of one file, in order, windowed when window > 1."""
    try:
        with open(path, "rb") as f:
            lines = read_lines(f, path)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except TextError as e:
        fail(str(e))
    while lines and not lines[-1].strip():  # the newline that ends the last line
        lines.pop()
    if not lines:
        fail(f"{path}: empty file; expected a CSV header and rows, or one JSON record per line")
    lines[0] = lines[0].removeprefix("\ufeff")  # the byte-order mark a spreadsheet may write
    records = (read_jsonl if lines[0].lstrip().startswith("{") else read_csv)(path, lines)
    if window <= 1:
        return records
    if len(records) < window:
        fail(f"{records[-1][1]}: the file ends after {len(records)} records, before a window of {window} "
             "is full; lower --window")
    full = len(records) // window * window
    if full < len(records):
        print(f"note: {path}: the last {len(records) - full} record(s) ({records[full][1]} on) do not fill "
              f"a window of {window}: left out")
    return [({key: [r[key] for r, _ in records[s:s + window]] for key in records[s][0]}, records[s][1])
            for s in range(0, full, window)]


def check_keys(records):
    """Every record has the first record's keys, each of the same kind (numbers, text, or both)."""
    first, first_where = records[0]
    kind = {key: kinds(value) for key, value in first.items()}
    for record, where in records:
        for key in first:
            if key not in record:
                fail(f"{where}: key {key!r} missing; every record needs the keys of the first "
                     f"({first_where}): {', '.join(first)}")
            if kinds(record[key]) != kind[key] and kinds(record[key]):
                fail(f"{where}: key {key!r} holds {' and '.join(sorted(kinds(record[key])))}, but "
                     f"{' and '.join(sorted(kind[key])) or 'nothing'} at {first_where}")
        extra = [key for key in record if key not in first]
        if extra:
            fail(f"{where}: key {extra[0]!r} is not in the first record ({first_where}): {', '.join(first)}")
    return kind


def split_records(records, fractions, seed):
    """Train, val and test: a random partition of the records (each split in file order)."""
    n = len(records)
    n_val, n_test = round(n * fractions[1]), round(n * fractions[2])
    counts = (n - n_val - n_test, n_val, n_test)
    if min(counts) < 1:
        fail(f"--split {','.join(map(str, fractions))}: {n} records give train/val/test {counts[0]}/{n_val}/"
             f"{n_test}; every split needs a record (more data, or other fractions)")
    order = np.random.default_rng(seed).permutation(n)
    bounds = np.cumsum(counts)[:-1]
    return [[records[i] for i in sorted(part)] for part in np.split(order, bounds)]


def fractions_of(text):
    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 3 or min(parts) <= 0 or abs(sum(parts) - 1) > 1e-6:
        fail(f"--split {text}: expected three positive fractions that add up to 1 (train,val,test: 0.8,0.1,0.1)")
    return parts


def scales_of(train, keys, mode):
    """{key: {"center", "spread"}} of every key that holds numbers, from the training records."""
    scales = {}
    for key in keys:
        xs = np.array([float(x) for record, _ in train for x in numbers(record[key])])
        if xs.size == 0:
            fail(f"key {key!r} holds no number in the training split ({train[0][1]} ...), so it has no scale")
        if mode == "none":
            scales[key] = {"center": 0.0, "spread": 1.0}
        else:  # 6 significant digits: readable, and exactly what is applied
            spread = float(f"{xs.std():.6g}")
            scales[key] = {"center": float(f"{xs.mean():.6g}"), "spread": spread if spread > 0 else 1.0}
    return scales


def decimals_of(splits, key, spread):
    """The decimals of a key's scaled numbers: the least d with 10^-d * spread <= 10^q / 10 (see above)."""
    q = min(x.as_tuple().exponent for part in splits for record, _ in part for x in numbers(record[key]))
    return max(0, math.ceil(math.log10(spread) - q + 1 - 1e-9))


def scaled(x, scale, digits):
    """A number as written: (x - center) / spread with `digits` decimals, no trailing zeros."""
    if digits is None:
        return str(x)
    s = f"{(float(x) - scale['center']) / scale['spread']:.{digits}f}"
    s = s.rstrip("0").rstrip(".") if "." in s else s
    return "0" if s in ("-0", "") else s


def dump(value, write_number):
    """A value as compact JSON, its numbers written by write_number."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{dump(v, write_number)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v, write_number) for v in value) + "]"
    return write_number(value) if isinstance(value, Decimal) else json.dumps(value, ensure_ascii=False)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", metavar="FILE", help="CSV or JSON-lines files (the training data with --val)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--window", type=_at_least(1), default=1, help="N consecutive records of a file per record")
    p.add_argument("--split", default="0.8,0.1,0.1", help="train,val,test fractions of a random split")
    p.add_argument("--seed", type=_at_least(0), default=1337, help="seed of the random split (default 1337)")
    p.add_argument("--val", metavar="FILE", help="validation records from FILE instead of a random split")
    p.add_argument("--test", metavar="FILE", help="test records from FILE (with --val)")
    p.add_argument("--scale", choices=("auto", "none"), default="auto",
                   help="auto: each key's numbers centred and divided by their spread on train; none: as they are")
    p.add_argument("--force", action="store_true", help="replace a dataset in --out (other files stay)")
    args = p.parse_args(argv)
    if bool(args.val) != bool(args.test):
        fail("--val and --test go together (or neither, for a random --split)")
    fractions = fractions_of(args.split)
    if os.path.isdir(args.out):  # --force would delete an input before it is read back
        replaced = {os.path.realpath(os.path.join(args.out, n)) for n in dataset_files(args.out)[0]}
        replaced |= {os.path.realpath(os.path.join(args.out, f"{s}.txt")) for s in SPLITS}
        for path in args.files + [args.val, args.test]:
            if path and os.path.realpath(path) in replaced:
                fail(f"{path} is a file that writing a dataset to {args.out} replaces; choose another --out")

    records = [r for path in args.files for r in read_file(path, args.window)]
    if args.val:
        parts = [records, read_file(args.val, args.window), read_file(args.test, args.window)]
        how = {"train": args.files, "val": args.val, "test": args.test}
    kind = check_keys([r for part in parts for r in part] if args.val else records)
    if not args.val:
        parts = split_records(records, fractions, args.seed)
        how = {"files": args.files, "fractions": fractions, "seed": args.seed}
    keys = list(kind)
    number_keys = [k for k in keys if "number" in kind[k]]
    text_keys = [k for k in keys if "text" in kind[k]]
    scales = scales_of(parts[0], number_keys, args.scale)
    digits = {k: None if args.scale == "none" else decimals_of(parts, k, scales[k]["spread"]) for k in number_keys}

    writers = {k: functools.partial(scaled, scale=scales[k], digits=digits[k]) for k in number_keys}
    lines, vocab, largest, counts = {}, {}, {k: 0.0 for k in number_keys}, []
    for split, part in zip(SPLITS, parts):
        lines[split] = []
        for record, where in part:
            line = "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{dump(record[k], writers.get(k, str))}"
                                  for k in keys) + "}"
            try:
                pieces = split_text(line, where)
            except TextError as e:
                fail(f"{e} (written as {line[:60]!r})")
            tokens = [t for kind_, t in pieces if kind_ == "text"]
            if split == "train":
                vocab.update(dict.fromkeys(tokens))
            else:
                unseen = [t for t in tokens if t not in vocab]
                if unseen:
                    fail(f"{where}: the {split} record holds the text token {unseen[0]!r}, which no training "
                         "record has, so tokenize_numbers.py could not encode it; add such records to the "
                         "training data, or write the value as a number or a category train has")
            counts.append((len(pieces) - len(tokens), len(pieces)))
            lines[split].append(line)
            for k in number_keys:
                for x in numbers(record[k]):
                    largest[k] = max(largest[k], abs((float(x) - scales[k]["center"]) / scales[k]["spread"]))

    prepare_out_dir(args.out, args.force, [f"{s}.txt" for s in SPLITS] + ["meta.json"])
    for split in SPLITS:
        write_split(args.out, split, lines[split])
    write_meta(args.out, {
        "dataset": "text", "splits": {s: len(lines[s]) for s in SPLITS}, "source": how,
        "window": args.window if args.window > 1 else None, "keys": keys, "text_keys": text_keys,
        "scales": scales, "decimals": digits, "scale": args.scale,
        "command": " ".join(["python", "prepare/text.py"] + (sys.argv[1:] if argv is None else list(argv)))})

    print(f"wrote {args.out}: train {len(parts[0])}, val {len(parts[1])}, test {len(parts[2])} records"
          + (f" of {args.window} rows each" if args.window > 1 else ""))
    for k in keys:
        if k in scales:
            s = scales[k]
            print(f"  {k:>12}: numbers, scaled (x - {s['center']:g}) / {s['spread']:g}, {digits[k]} decimals, "
                  f"largest |x| written {largest[k]:.3g}" if args.scale == "auto" else
                  f"  {k:>12}: numbers, as they are, largest |x| {largest[k]:.3g}")
        if k in text_keys:
            values = sorted({v for part in parts for r, _ in part for v in leaves(r[k]) if not isinstance(v, Decimal)},
                            key=str)
            print(f"  {k:>12}: text, {len(values)} value(s): {', '.join(map(str, values[:12]))}"
                  + (" ..." if len(values) > 12 else ""))
            with_digits = [v for v in values if any(piece == "num" for piece, _ in split_text(json.dumps(v)))]
            if with_digits:
                print(f"warning: key {k!r}: text values with digits ({with_digits[0]!r}) are read as numbers "
                      "by tokenize_numbers.py, unscaled; give such a value number columns of its own (a day of "
                      "year, say) or a name without digits")
    n_numbers, n_pieces = zip(*counts)
    print(f"numbers per record: {min(n_numbers)}-{max(n_numbers)}; tokens per record (xval): "
          f"{min(n_pieces)}-{max(n_pieces)}")
    print(f"text tokens ({len(vocab)}): {' '.join(sorted(vocab))}")
    for k in number_keys:
        if args.scale == "none" and not 0.1 <= largest[k] <= 10:
            print(f"warning: key {k!r}: numbers up to |x| = {largest[k]:.4g}; xVal learns best with values of "
                  "order 1 (--scale auto scales them)")
    print(f"next: python tokenize_numbers.py {args.out} --encoding xval")


if __name__ == "__main__":
    one_line_on_full_disk()
    main()
