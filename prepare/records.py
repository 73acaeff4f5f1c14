"""
Records from the rows read, for prepare/text.py: names and text values made words the tokenizer
reads as words, the kinds of each key checked, windows of consecutive rows, and the split into
train, val and test (from files, in time order or at random), missing values left out. A record
travels as (record, where, places), places the (file, row) pairs it holds, so that every row read
is accounted for.
"""

import json
import math
import re
from decimal import Decimal

import numpy as np
from reading import MISSING, fail, kinds, leaves, numbers, rewrite

from tokenize_numbers import TextError, split_text

SPLITS = ("train", "val", "test")


def reads_numbers(text):
    """Whether the tokenizer reads a number in a JSON string (a key or a text value)."""
    try:
        return any(kind == "num" for kind, _ in split_text(json.dumps(text, ensure_ascii=False)))
    except TextError:
        return True


def one_word(text):
    """A string the tokenizer reads as one word: every character but letters, digits and _ made _
    ("room_12", "_01234")."""
    word = re.sub(r"\W", "_", text)
    return "_" + word if not word or word[0].isdigit() else word


def words_for_tokenizer(files):
    """Key names and text values the tokenizer would read as numbers become one word each (noted),
    in every file's rows; {old: new} keys."""
    renamed, values = {}, {}
    for rows in files:
        for record, _ in rows:
            for key, value in record.items():
                if key not in renamed:
                    renamed[key] = one_word(key) if reads_numbers(key) else key
                for x in leaves(value):
                    if isinstance(x, str) and x not in values:
                        values[x] = one_word(x) if reads_numbers(x) else x
    for mapping, what in ((renamed, "key"), (values, "text value")):
        changed = {a: b for a, b in mapping.items() if a != b}
        clash = {}
        for a, b in mapping.items():
            if clash.setdefault(b, a) != a:
                fail(f"the {what}s {clash[b]!r} and {a!r} would both be written {b!r}; rename one")
        if changed:
            a, b = next(iter(changed.items()))
            print(
                f"note: {len(changed)} {what}(s) the tokenizer would read as numbers written as one"
                f" word each: {a!r} as {b!r}"
                + (" (--mask_key takes the new name)" if what == "key" else "")
            )
    word = lambda x: values.get(x, x) if isinstance(x, str) else x
    for rows in files:
        rows[:] = [({renamed[k]: rewrite(v, word) for k, v in r.items()}, w) for r, w in rows]
    return renamed


def check_keys(rows):
    """Every present value of a key has the same kinds (numbers, text, or both): {key: kinds}."""
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


def complete_records(files, keys, missing):
    """Every record given every key (None where it lacks one: missing too); a missing value refused
    unless --missing says what to do with it, and a number a float64 cannot hold refused."""
    for _, rows, noun in files:
        for record, where in rows:
            for key in keys:
                record.setdefault(key, None)
                if missing == "refuse" and "null" in kinds(record[key]):
                    fail(
                        f"{where}: {noun} {key!r} is missing (no value, or one of"
                        f" {', '.join(map(repr, MISSING))}, null); --missing=omit leaves it out of"
                        " the record, --missing=drop drops the record"
                    )
                for x in numbers(record[key]):
                    if not math.isfinite(float(x)) or (x and not float(x)):
                        fail(
                            f"{where}: {noun} {key!r}: {x} is beyond what a float64 holds"
                            " (|x| from 1e-308 to 1.8e308, or 0); write the key in other units (a"
                            " power of ten in its name)"
                        )


def counts_up(rows, key):
    """The step by which a key's values go up from row to row, the same each time but perhaps
    wrapping to their least (a row number, a year, an hour of the day, a timestamp), else None."""
    xs = [r.get(key) for r, _ in rows]
    if len(xs) <= 2 or not all(isinstance(x, Decimal) for x in xs):
        return None
    low, high = min(xs), max(xs)
    step = next((b - a for a, b in zip(xs, xs[1:]) if (a, b) != (high, low)), 0)
    counts = (
        step > 0
        and high - low >= 2 * step
        and all(b - a == step or (a, b) == (high, low) for a, b in zip(xs, xs[1:]))
    )
    return step if counts else None


def counting_keys(files, keys):
    """The keys that count rows in every file (noted): kept as numbers, not named by train.py's
    hint."""
    steps = {k: {counts_up(rows, k) for _, rows, _ in files} for k in keys}
    index_like = [k for k in keys if None not in steps[k]]
    for key in index_like:
        print(
            f"note: key {key!r} goes up by {' or '.join(sorted(map(str, steps[key])))} from row to"
            " row (a row number, a year, an hour of the day, a timestamp?): kept as a number;"
            " --columns leaves it out"
        )
    return index_like


def windows(rows, window, stride, file, first=0):
    """[(record, where, places)] of a file's rows (record, where) taken window at a time, a window
    starting every stride; places: (file, first + the row's index)."""
    if window <= 1:
        return [(r, w, [(file, first + i)]) for i, (r, w) in enumerate(rows)]
    return [
        (
            {key: [rows[i][0].get(key) for i in range(s, s + window)] for key in rows[s][0]},
            rows[s][1],
            [(file, first + i) for i in range(s, s + window)],
        )
        for s in range(0, len(rows) - window + 1, stride)
    ]


def split_counts(n, fractions):
    """Train, val and test counts of n rows or records: val and test rounded, train the rest."""
    n_val, n_test = round(n * fractions[1]), round(n * fractions[2])
    return n - n_val - n_test, n_val, n_test


def time_parts(path, rows, fractions, window):
    """Train, val and test rows of one file in time order: the first rows, then the next, then the
    last."""
    n, counts = len(rows), split_counts(len(rows), fractions)
    if min(counts) < window:
        fail(
            f"{path}: --split {','.join(map(str, fractions))} in time order cuts its {n} rows into"
            f" {'/'.join(map(str, counts))}; each part needs {window} (a window): more rows, other"
            " fractions, or a smaller --window"
        )
    return [rows[: counts[0]], rows[counts[0] : n - counts[2]], rows[n - counts[2] :]]


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
    """Train, val and test records, and where they came from: the --val and --test files, each
    file's rows cut in time order (--order time, windows taken inside each part), or the records at
    random."""
    window, stride = args.window, args.stride
    by_file = [windows(rows, window, stride, i) for i, (_, rows, _) in enumerate(files)]
    if args.val:
        n = len(args.files)
        parts = [[r for f in by_file[:n] for r in f], by_file[n], by_file[n + 1]]
        return parts, {"train": args.files, "val": args.val, "test": args.test}
    if args.order == "time":
        parts = [[], [], []]
        for i, (path, rows, _) in enumerate(files):
            first = 0
            for k, part in enumerate(time_parts(path, rows, args.fractions, window)):
                parts[k] += windows(part, window, stride, i, first)
                first += len(part)
        return parts, {"files": args.files, "fractions": args.fractions, "order": "time"}
    for _, rows, _ in files:
        if len(rows) < window:
            fail(
                f"{rows[-1][1]}: the file ends after {len(rows)} rows, before a window of"
                f" {window} is full; lower --window"
            )
    parts = random_parts([r for f in by_file for r in f], args.fractions, args.seed)
    return parts, {
        "files": args.files,
        "fractions": args.fractions,
        "seed": args.seed,
        "order": "random",
    }


def rows_in(parts):
    """The (file, row) places the records of the splits hold."""
    return {place for part in parts for _, _, places in part for place in places}


def leave_out_missing(parts, keys, how):
    """The splits once missing values are left out (omit: the key, from its record; drop: the
    record), and {key: the records it was left out of, or dropped for}."""
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
