"""
Records for prepare/text.py: windows of rows, split into train, val and test, missing values left
out (prepare/README.md's "Records and splits"). A record travels as (record, where, places),
places the (file, row) pairs it holds, so that every row read is accounted for.
"""

import itertools
import math
from decimal import Decimal

import numpy as np
from common import fail
from reading import MISSING, kinds, numbers

SPLITS = ("train", "val", "test")


def check_keys(rows):
    """{key: the kinds of its values}, the same for every present value of a key."""
    kind, first = {}, {}
    for record, where in rows:
        for key, value in record.items():
            found = kinds(value) - {"null"}
            if found and key not in kind:
                kind[key], first[key] = found, where
            elif found and found != kind[key]:
                fail(
                    f"{where}: key {key!r} holds {' and '.join(sorted(found))}, but "
                    f"{' and '.join(sorted(kind[key]))} at {first[key]}"
                )
    return kind


def check_values(files, keys, missing):
    """Every record given every key (None if it lacks one); refused: a missing value unless
    --missing, a number a float64 cannot hold."""
    for _, rows, noun in files:
        for (record, where), key in itertools.product(rows, keys):
            record.setdefault(key, None)
            if missing == "refuse" and "null" in kinds(record[key]):
                fail(
                    f"{where}: {noun} {key!r} is missing (no value, or one of"
                    f" {', '.join(map(repr, MISSING))}, null); --missing=omit leaves it out of the"
                    " record, --missing=drop drops the record"
                )
            for x in numbers(record[key]):
                if not math.isfinite(float(x)) or (x and not float(x)):
                    fail(
                        f"{where}: {noun} {key!r}: {x} is beyond what a float64 holds (|x| from"
                        " 1e-308 to 1.8e308, or 0); write the key in other units (a power of ten"
                        " in its name)"
                    )


def counts_up(rows, key):
    """The step by which a key's values go up from row to row, the same each time but perhaps
    wrapping to their least (an hour of the day), else None."""
    xs = [r.get(key) for r, _ in rows]
    if len(xs) <= 2 or not all(isinstance(x, Decimal) for x in xs):
        return None
    low, high = min(xs), max(xs)
    pairs = list(zip(xs, xs[1:]))
    step = next((b - a for a, b in pairs if (a, b) != (high, low)), 0)
    steady = all(b - a == step or (a, b) == (high, low) for a, b in pairs)
    return step if step > 0 and high - low >= 2 * step and steady else None


def counting_keys(files, keys):
    """The keys that count rows in every file, noted (train.py's hint names another)."""
    steps = {k: {counts_up(rows, k) for _, rows, _ in files} for k in keys}
    counting = [k for k in keys if None not in steps[k]]
    for key in counting:
        print(
            f"note: key {key!r} goes up by {' or '.join(sorted(map(str, steps[key])))} from row to"
            " row (a row number, a year, an hour of the day, a timestamp?): kept as a number;"
            " --columns leaves it out"
        )
    return counting


def windows(rows, window, stride, file, first=0):
    """[(record, where, places)], a window of rows starting every stride; rows[0] is row first."""
    records = []
    for s in range(0, len(rows) - window + 1, stride):
        span = rows[s : s + window]
        record = {k: [r.get(k) for r, _ in span] for k in span[0][0]} if window > 1 else span[0][0]
        records.append((record, span[0][1], [(file, first + i) for i in range(s, s + window)]))
    return records


def split_counts(n, fractions):
    n_val, n_test = round(n * fractions[1]), round(n * fractions[2])
    return n - n_val - n_test, n_val, n_test


def time_parts(path, rows, fractions, window):
    """Train, val and test rows of one file in time order: the first, the next, the last."""
    a, b, c = split_counts(len(rows), fractions)
    if min(a, b, c) < window:
        fail(
            f"{path}: --split {','.join(map(str, fractions))} in time order cuts its {len(rows)}"
            f" rows into {a}/{b}/{c}; each part needs {window} (a window): more rows, other"
            " fractions, or a smaller --window"
        )
    return [rows[:a], rows[a : a + b], rows[a + b :]]


def random_parts(records, fractions, seed):
    """Train, val and test: a random partition of the records (each split in file order)."""
    counts = split_counts(len(records), fractions)
    if min(counts) < 1:
        fail(
            f"--split {','.join(map(str, fractions))}: {len(records)} records give train/val/test"
            f" {'/'.join(map(str, counts))}; every split needs a record (more data, or other"
            " fractions)"
        )
    order = np.random.default_rng(seed).permutation(len(records))
    return [[records[i] for i in sorted(part)] for part in np.split(order, np.cumsum(counts)[:-1])]


def split_records(files, args):
    """Train, val and test records, and their source: the --val and --test files, each file's rows
    in time order (windows inside each part), or the records at random."""
    window, stride, fractions = args.window, args.stride, args.fractions
    source = {"files": args.files, "fractions": fractions}
    by_file = [windows(rows, window, stride, i) for i, (_, rows, _) in enumerate(files)]
    if args.val:
        n = len(args.files)
        parts = [[r for f in by_file[:n] for r in f], by_file[n], by_file[n + 1]]
        return parts, {"train": args.files, "val": args.val, "test": args.test}
    if args.order == "time":
        parts = [[], [], []]
        for i, (path, rows, _) in enumerate(files):
            first = 0
            for k, part in enumerate(time_parts(path, rows, fractions, window)):
                parts[k] += windows(part, window, stride, i, first)
                first += len(part)
        return parts, {**source, "order": "time"}
    for _, rows, _ in files:
        if len(rows) < window:
            fail(
                f"{rows[-1][1]}: the file ends after {len(rows)} rows, before a window of"
                f" {window} is full; lower --window"
            )
    parts = random_parts([r for f in by_file for r in f], fractions, args.seed)
    return parts, {**source, "seed": args.seed, "order": "random"}


def rows_in(parts):
    return {place for part in parts for _, _, places in part for place in places}


def leave_out_missing(parts, keys, how):
    """The splits with missing values left out, and {key: records it was left out of or dropped
    for}."""
    missing, kept = {}, [[], [], []]
    for part, kept_part in zip(parts, kept):
        for record, where, places in part:
            gaps = [key for key in keys if "null" in kinds(record[key])]
            for key in gaps:
                missing[key] = missing.get(key, 0) + 1
            if how == "omit":
                record = {key: v for key, v in record.items() if key not in gaps}
            if record and not (how == "drop" and gaps):
                kept_part.append((record, where, places))
    for split, part in zip(SPLITS, kept):
        if not part:
            fail(
                f"the {split} split holds no record once"
                f" {'missing values are dropped' if missing else 'split'}; more data, other --split"
                " fractions, or a smaller --window"
            )
    return kept, missing
