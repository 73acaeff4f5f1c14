"""Records for prepare/text.py: keys checked, windows of rows, split into train, val and test (a
Part each), missing values left out."""

import functools
import json
import re
import warnings
from decimal import Decimal
from itertools import pairwise

import numpy as np
from common import fail
from reading import GAP, MISSING, NUM, excerpt, leaves, rewrite

from tokenize_line import split_text
from util import TextError

SPLITS = ("train", "val", "test")
# 12:30, 05:06:07.5, 5:06 PM
TIME = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?[ap]\.?m\.?)?"
MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
DATE = re.compile(
    rf"(?:\d{{4}}-\d{{1,2}}(?:-\d{{1,2}})?|\d{{4}}/\d{{1,2}}/\d{{1,2}}"
    rf"|\d{{1,2}}[/.]\d{{1,2}}[/.](?:\d{{4}}|\d\d)"
    # 4-Mar-2021, Mar 4, 2021, Mar-2021
    rf"|\d{{1,2}}[- ]{MONTH}[- ](?:\d{{4}}|\d\d)|{MONTH} \d{{1,2}},? \d{{4}}|{MONTH}[- ]\d{{4}})"
    rf"(?:[T ]{TIME}(?:Z| ?UTC| ?GMT|[+-]\d{{2}}:?\d{{2}})?)?|{TIME}",
    re.IGNORECASE,
)
# the kinds a key's values may hold (a bit each)
KINDS = {"number": 1, "text": 2}


def print_some(lines, most=5):
    """lines printed, those past the first `most` only counted."""
    for line in lines[:most]:
        print(line)
    if len(lines) > most:
        print(f"  ... and {len(lines) - most} more such lines")


def kinds(value):
    return {
        "number" if isinstance(x, Decimal) else "null" if x is None else "text"
        for x in leaves(value)
    }


def missing_rows(col):
    """A column's rows whose value is missing, or holds one (a JSON list with a null)."""
    gap = col.code == GAP
    for row, value in col.nested.items():
        gap[row] = "null" in kinds(value)
    return gap


class Part:
    """A split's records: rows[i] the rows of record i; lacks[key][i] when it leaves key out."""

    def __init__(self, rows, lacks=None):
        self.rows, self.lacks = rows, lacks or {}

    def __len__(self):
        return len(self.rows)

    def has(self, key):
        return ~self.lacks[key] if key in self.lacks else np.ones(len(self.rows), bool)


def check_keys(table):
    """{key: the kinds of its values}, the same for every present value; a key of none refused."""
    kind = {}
    for key, col in table.cols.items():
        code = col.code
        bits = (code == NUM) + np.int8(2) * (code >= 0)
        for row, value in col.nested.items():
            bits[row] = sum(KINDS.get(k, 0) for k in kinds(value))
        if not bits.any():
            fail(f"key {key!r} holds no value in any record; leave it out with --columns")
        names = lambda b: [k for k, bit in KINDS.items() if b & bit]
        first = int(np.argmax(bits != 0))
        other = (bits != 0) & (bits != bits[first])
        if other.any():
            row = int(np.argmax(other))
            fail(
                f"{table.where(row)}: key {key!r} holds {' and '.join(names(bits[row]))},"
                f" but {' and '.join(names(bits[first]))} at {table.where(first)}"
            )
        kind[key] = set(names(bits[first]))
    return kind


def check_values(table, keys, missing):
    """Refused unless --missing: a missing value (the first row holding one, its first key)."""
    if missing != "refuse":
        return
    gaps = {key: np.flatnonzero(missing_rows(table.cols[key])) for key in keys}
    gaps = {key: rows[0] for key, rows in gaps.items() if len(rows)}
    if gaps:
        key = min(gaps, key=gaps.get)
        fail(
            f"{table.where(gaps[key])}: {table.cols[key].noun} {key!r} is missing (no value, or"
            f" one of {', '.join(map(repr, MISSING))}, null); --missing=omit leaves it out of the"
            " record, --missing=drop drops the record"
        )


# |x| / 10^q beyond a float64 counts no rows (None), without a warning
@np.errstate(over="ignore")
def counts_up(x, q, size=1 << 18):
    """The step by which a file's numbers go up from row to row, perhaps wrapping to their least
    (an hour of the day), else None."""
    if len(x) <= 2 or len(x) > 1000 and not counts_up(x[:1000], q):
        return None
    unit = 10.0 ** int(q)
    low, high = np.rint(x.min() / unit), np.rint(x.max() / unit)
    if max(-low, high) > 2**53:
        return None
    # each piece's steps (a piece ends where the next begins), but where it wraps to its least
    least, most = np.inf, 0
    for lo in range(0, len(x) - 1, size):
        m = np.rint(x[lo : lo + size + 1] / unit)
        d = np.diff(m)[(m[:-1] != high) | (m[1:] != low)]
        least, most = min(least, d.min(initial=np.inf)), max(most, d.max(initial=0))
    # the same step, but for a rounding of the last digit of a long one (1/12 as 0.0833333333)
    if least <= 0 or most - least > (least >= 1000) or high - low < 2 * least:
        return None
    return f"{least * unit:.10g}"


def counting_keys(table, keys):
    """The keys that count rows in every file, noted."""
    counting, lines = [], []
    for key in keys:
        col = table.cols[key]
        if not (col.code == NUM).all():
            continue
        steps = {counts_up(col.x[a:b], col.q) for a, b in pairwise(table.starts)}
        if None in steps:
            continue
        counting.append(key)
        lines.append(
            f"note: key {key!r} goes up by {' or '.join(sorted(steps))} from row to row (a row"
            " number, a year, a timestamp?): kept as a number; --columns leaves it out"
        )
    print_some(lines)
    return counting


def series_of(table, group, window):
    """[(name, rows)]: each file's rows, or with --group each group's rows in a file."""
    if not group:
        return list(zip(table.paths, file_rows(table)))
    col = table.group
    # missing, or a JSON list or object
    gap = np.flatnonzero(col.code < NUM)
    if len(gap):
        fail(f"{table.where(gap[0])}: --group {group}: no value here; every row needs its group")
    value = np.where(col.code == NUM, col.x, col.code)
    out = []
    for path, rows in zip(table.paths, file_rows(table)):
        ids, first = np.unique(value[rows], return_index=True)
        for i in np.argsort(first):
            label = col.texts[int(ids[i])] if col.code[rows[first[i]]] >= 0 else f"{ids[i]:g}"
            out.append((f"{path} ({group} {label})", rows[value[rows] == ids[i]]))
    if short := [len(rows) for _, rows in out if len(rows) < window]:
        print(f"note: {len(short)} group(s) shorter than --window ({sum(short)} rows): left out")
    return [(name, rows) for name, rows in out if len(rows) >= window]


def file_rows(table):
    return [np.arange(a, b, dtype=np.int32) for a, b in pairwise(table.starts)]


def windows(rows, window, stride):
    """Each window's rows, one starting every stride."""
    starts = np.arange(0, len(rows) - window + 1, stride)
    return rows[starts[:, None] + np.arange(window)]


def split_counts(n, fractions):
    n_val, n_test = round(n * fractions[1]), round(n * fractions[2])
    return n - n_val - n_test, n_val, n_test


def time_parts(name, rows, args):
    """Train, val and test windows of one series in time order; None for a group too short."""
    a, b, c = split_counts(len(rows), args.fractions)
    need = 1 if args.context_before else args.window
    if min(a, b, c) < need:
        if args.group:
            return None
        fix = "--context-before" if min(a, b, c) and need > 1 else "more rows or other fractions"
        fail(
            f"{name}: --split {args.split} in time order cuts its"
            f" {len(rows)} rows into {a}/{b}/{c}; each part needs {need} row(s): {fix}"
        )
    parts = []
    for lo, hi in ((0, a), (a, a + b), (a + b, len(rows))):
        back = min(lo, args.window - 1) if args.context_before else 0
        parts.append(windows(rows[lo - back : hi], args.window, args.stride))
    return parts


def split_records(table, args):
    """Train, val and test Parts and their source: the --val and --test files, each series in
    time order, or records or groups at random."""
    window, stride, fractions = args.window, args.stride, args.fractions
    source = {"files": args.files, "fractions": fractions}
    series = series_of(table, args.group, window)
    empty = np.empty((0, window), np.int32)
    parts = [[empty], [empty], [empty]]
    if args.val:
        for _, rows in series:
            f = np.searchsorted(table.starts, rows[0], "right") - len(args.files)
            parts[max(0, f)].append(windows(rows, window, stride))
        splits = {"train": args.files, "val": args.val, "test": args.test}
        return [Part(np.concatenate(p)) for p in parts], splits
    if args.group:
        source["group"] = args.group
    if args.order == "time":
        short = []
        for name, rows in series:
            split = time_parts(name, rows, args)
            if split is None:
                short.append(len(rows))
                split = [windows(rows, window, stride), empty, empty]
            for k, part in enumerate(split):
                parts[k].append(part)
        if short:
            print(
                f"note: {len(short)} group(s) too short to split in time ({sum(short)} rows): whole"
                " in train"
            )
        return [Part(np.concatenate(p)) for p in parts], {**source, "order": "time"}
    for _, rows in series:
        if len(rows) < window:
            fail(
                f"{table.where(rows[-1])}: the file ends after {len(rows)} rows, before a window of"
                f" {window} is full; lower --window"
            )
    units = [windows(rows, window, stride) for _, rows in series]
    if not args.group:
        units = np.concatenate(units)
    what = "groups" if args.group else "records"
    n = len(units)
    counts = split_counts(n, fractions)
    if min(counts) < 1:
        fail(
            f"--split {args.split}: {n} {what} give train/val/test"
            f" {'/'.join(map(str, counts))}; every split needs one (more data, other"
            " fractions" + (", or --order time to split each group in time)" if args.group else ")")
        )
    order = np.random.default_rng(args.seed).permutation(n)
    chosen = [np.sort(p) for p in np.split(order, np.cumsum(counts)[:-1])]
    if args.group:
        parts = [np.concatenate([empty] + [units[i] for i in p]) for p in chosen]
    else:
        parts = [units[p] for p in chosen]
    return [Part(p) for p in parts], {**source, "seed": args.seed, "order": "random"}


def rows_in(table, parts, key=None):
    """Which rows the splits' records (that hold key) hold."""
    held = np.zeros(table.n, bool)
    for part in parts:
        held[part.rows[part.has(key)].ravel()] = True
    return held


def leave_out_missing(table, parts, keys, how):
    """The splits with missing values left out, and {key: records it was missing from}."""
    missing, kept, emptied = {}, [], 0
    gaps = {key: gap for key in keys if (gap := missing_rows(table.cols[key])).any()}
    for part in parts:
        none = np.zeros(len(part), bool)
        lacks = {key: gaps[key][part.rows].any(axis=1) if key in gaps else none for key in keys}
        for key in keys:
            if lacks[key].any():
                missing[key] = missing.get(key, 0) + int(lacks[key].sum())
        lacking = np.column_stack([lacks[k] for k in keys])
        keep = ~lacking.any(axis=1) if how == "drop" else ~lacking.all(axis=1)
        emptied += int(lacking.all(axis=1).sum()) if how == "omit" else 0
        lacks = {k: v[keep] for k, v in lacks.items() if how == "omit" and v.any()}
        kept.append(Part(part.rows[keep], lacks))
    if emptied:
        print(f"note: {emptied} record(s) left out: every key of theirs missing")
    return kept, missing


def warn_short(parts, args):
    """A split of fewer than 30 records warned of (of none refused), with what to change."""
    for split, part in zip(SPLITS, parts):
        if len(part) < 30:
            helps = args.order == "time" and args.window > 1 and not args.val
            more = "--context-before, " if helps and not args.context_before else ""
            more += "--order random, " if helps and args.group else ""
            fixes = f"more data, other --split fractions, {more}a smaller --window or --stride"
            if not len(part):
                fail(f"the {split} split holds no record; {fixes}")
            said = f"a score over fewer than 30 says little; {fixes}"
            print(f"warning: the {split} split holds {len(part)} record(s): {said}")


def read_iso(text):
    try:
        return np.datetime64(text, "ms")
    except ValueError:
        return np.datetime64("NaT", "ms")


def decimal_years(texts):
    """ISO 8601 dates and times (yyyymmdd too) as decimal years (prepare/README.md, Dates and
    times); NaN where numpy reads none."""
    if texts[0].isdigit():
        texts = [f"{t[:4]}-{t[4:6]}-{t[6:]}" for t in texts]
    with warnings.catch_warnings(action="ignore"):
        t = np.array([read_iso(text.replace(" ", "T", 1)) for text in texts])
    year = t.astype("datetime64[Y]")
    start, end = year.astype(t.dtype), (year + 1).astype(t.dtype)
    return 1970 + year.astype(int) + (t - start) / (end - start)


def date_keys(table, text_keys, how):
    """The keys (not --text) whose every value is a date or time, noted; with how "number" made
    numbers, else left out (returned)."""
    dates, lines = [], []
    for key, col in table.cols.items():
        texts = all(isinstance(t, str) and DATE.fullmatch(t) for t in col.texts)
        if key in text_keys or not texts or col.nested:
            continue
        present = np.flatnonzero(col.code != GAP)
        if not len(present):
            continue
        index, texts, x = col.code[present], col.texts, col.x[present]
        numbers = not (index >= 0).all()
        if numbers:
            # a column of numbers (a text's x is NaN): yyyymmdd, from 1800 to 2099
            if col.q != 0 or not ((x > 18e6) & (x < 21e6)).all():
                continue
            days, index = np.unique(x, return_inverse=True)
            texts = [f"{d:.0f}" for d in days]
        years = decimal_years(texts)[index]
        if numbers and np.isnan(years).any():
            continue
        # in file order within each group
        by_group, same = slice(None), np.diff(present) == 1
        if table.group:
            group = np.where(table.group.code == NUM, table.group.x, table.group.code)[present]
            by_group = np.lexsort((present, group))
            same = np.diff(group[by_group]) == 0
        after = present[by_group][1:][(np.diff(years[by_group]) < 0) & same]
        back = ""
        if len(after):
            back = f" (they go back in time at {table.where(after[0])}: sort the file)"
        kept = "left out (--dates=number keeps it as a number)"
        if how != "number":
            dates.append(key)
        elif np.isnan(years).any():
            i = np.argmax(np.isnan(years))
            fail(
                f"{table.where(present[i])}: key {key!r}: --dates=number reads ISO 8601 dates and"
                f" yyyymmdd (2021-03-04T12:30, 20210304), not {excerpt(texts[index[i]])}; write it"
                " so, or leave the key out (--columns)"
            )
        else:
            np.memmap(col.paths[0], np.int32, "r+")[present] = NUM
            np.memmap(col.paths[1], float, "r+")[present] = years
            # written to 10^-8 of a year, a third of a second
            col.texts, col.q = [], -8
            kept = "kept as a number (--dates=number)"
        lines.append(
            f"note: key {key!r} holds dates or times ({texts[index[0]]} ... {texts[index[-1]]}):"
            f" {kept}; rows taken in file order{back}"
        )
    print_some(lines)
    return dates


@functools.cache
def as_word(text):
    """text, or if the tokenizer would read a number in it, one word ("room_12", "_01234")."""
    try:
        if all(kind != "num" for kind, _ in split_text(json.dumps(text, ensure_ascii=False))):
            return text
    except TextError:
        pass
    word = re.sub(r"\W", "_", text)
    return "_" + word if not word or word[0].isdigit() else word


def keys_within(value):
    if isinstance(value, dict):
        return [*value, *keys_within(list(value.values()))]
    return [k for v in value for k in keys_within(v)] if isinstance(value, list) else []


def words_for_tokenizer(table):
    """Key names and text values made words (as_word), noted; {old: new} of the keys."""
    renamed = {key: as_word(key) for key in table.cols}
    strings = [t for c in table.cols.values() for t in c.texts]
    strings += [x for c in table.cols.values() for v in c.nested.values() for x in leaves(v)]
    values = {x: as_word(x) for x in strings if isinstance(x, str)}
    for mapping, what in ((renamed, "key"), (values, "text value")):
        changed = {a: b for a, b in mapping.items() if a != b}
        clash = {}
        for a, b in mapping.items():
            if clash.setdefault(b, a) != a:
                both = f"{excerpt(clash[b])} and {excerpt(a)}"
                fail(f"the {what}s {both} would both be written {excerpt(b)}; rename one")
        if changed:
            a, b = next(iter(changed.items()))
            print(
                f"note: {len(changed)} {what}(s) the tokenizer would read as numbers written as one"
                f" word each: {excerpt(a)} as {excerpt(b)}"
                + (" (--mask_key takes the new name)" if what == "key" else "")
            )
    # not renamed: the keys within a JSON value
    for col in table.cols.values():
        for row, value in col.nested.items():
            for key in keys_within(value):
                if as_word(key) != key:
                    fail(
                        f"{table.where(row)}: the tokenizer reads a number in the key"
                        f" {excerpt(key)}; rename it {excerpt(as_word(key))}"
                    )
    word = lambda x: values.get(x, x)
    for col in table.cols.values():
        col.texts = [word(t) for t in col.texts]
        col.nested = {r: rewrite(v, word) for r, v in col.nested.items()}
    table.cols = {renamed[k]: c for k, c in table.cols.items()}
    return renamed
