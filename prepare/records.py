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
from reading import GAP, MISSING, NUM, leaves, rewrite

from dataset import shown
from tokenize_line import split_text
from util import TextError

SPLITS = ("train", "val", "test")
# 12:30, 05:06:07.5, 5:06 PM
TIME = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?[ap]\.?m\.?)?"
MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
DATE = re.compile(
    r"(?:\d{4}-\d{1,2}(?:-\d{1,2})?|\d{4}/\d{1,2}/\d{1,2}|\d{1,2}[/.]\d{1,2}[/.](?:\d{4}|\d\d)"
    # 4-Mar-2021, Mar 4, 2021, Mar-2021
    rf"|\d{{1,2}}[- ]{MONTH}[- ](?:\d{{4}}|\d\d)|{MONTH} \d{{1,2}},? \d{{4}}|{MONTH}[- ]\d{{4}})"
    rf"(?:[T ]{TIME}(?:Z| ?UTC| ?GMT|[+-]\d{{2}}:?\d{{2}})?)?|{TIME}",
    re.IGNORECASE,
)
# what a key's values hold, by bits: 1 numbers, 2 text, 3 both (in a JSON list)
HOLDS = ("nothing", "number", "text", "number and text")


def print_some(lines, most=5):
    for line in lines[:most]:
        print(line)
    if len(lines) > most:
        print(f"  ... and {len(lines) - most} more such lines")


class Part:
    """A split's records: rows[i] the rows of record i; lacks[key][i] when it leaves key out."""

    def __init__(self, rows, lacks=None):
        self.rows, self.lacks = rows, lacks or {}

    def __len__(self):
        return len(self.rows)

    def has(self, key):
        return ~self.lacks[key] if key in self.lacks else np.ones(len(self.rows), bool)


def check_keys(table, how):
    """({key: the kinds of its values}, {key: the rows missing its value, or holding one (a JSON
    list with a null)}); refused: a key of no value or of two kinds, a missing value unless
    --missing."""
    kind, gaps = {}, {}
    for key, col in table.cols.items():
        bits = (col.code == NUM) + np.int8(2) * (col.code >= 0)
        gap = col.code == GAP
        for row, value in col.nested.items():
            scalars = leaves(value)
            number = [isinstance(x, Decimal) for x in scalars if x is not None]
            bits[row] = any(number) + 2 * (not all(number))
            gap[row] = None in scalars
        present = np.flatnonzero(bits)
        if not len(present):
            fail(f"key {key!r} holds no value in any record; leave it out with --columns")
        first = present[0]
        other = present[bits[present] != bits[first]]
        if len(other):
            fail(
                f"{table.where(other[0])}: key {key!r} holds {HOLDS[bits[other[0]]]},"
                f" but {HOLDS[bits[first]]} at {table.where(first)}"
            )
        kind[key] = set(HOLDS[bits[first]].split(" and "))
        if gap.any():
            gaps[key] = gap
    if gaps and how == "refuse":
        first = {key: np.argmax(gap) for key, gap in gaps.items()}
        key = min(first, key=first.get)
        fail(
            f"{table.where(first[key])}: {table.cols[key].noun} {key!r} is missing (no value, or"
            f" one of {', '.join(map(repr, MISSING))}, null); --missing=omit leaves it out of the"
            " record, --missing=drop drops the record"
        )
    return kind, gaps


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
    """[(path, rows)]: each file's rows, or with --group each group's rows in a file."""
    files = np.split(np.arange(table.n, dtype=np.int32), table.starts[1:-1])
    if not group:
        return list(zip(table.paths, files))
    col = table.group
    # missing, or a JSON list or object
    gap = np.flatnonzero(col.code < NUM)
    if len(gap):
        fail(f"{table.where(gap[0])}: --group {group}: no value here; every row needs its group")
    value = np.where(col.code == NUM, col.x, col.code)
    out = []
    for path, rows in zip(table.paths, files):
        ids, first = np.unique(value[rows], return_index=True)
        out += [(path, rows[value[rows] == v]) for v in ids[np.argsort(first)]]
    if short := [len(rows) for _, rows in out if len(rows) < window]:
        print(f"note: {len(short)} group(s) shorter than --window ({sum(short)} rows): left out")
    return [(path, rows) for path, rows in out if len(rows) >= window]


def split_counts(n, fractions):
    n_val, n_test = round(n * fractions[1]), round(n * fractions[2])
    return n - n_val - n_test, n_val, n_test


def time_parts(path, rows, args):
    """One series' rows cut in time order into train, val and test (with --context-before, each
    with the window - 1 rows before it); [rows] for a group too short."""
    a, b, c = split_counts(len(rows), args.fractions)
    need = 1 if args.context_before else args.window
    if min(a, b, c) < need:
        if args.group:
            return [rows]
        fix = "--context-before" if min(a, b, c) and need > 1 else "more rows or other fractions"
        fail(
            f"{path}: --split {args.split} in time order cuts its"
            f" {len(rows)} rows into {a}/{b}/{c}; each part needs {need} row(s): {fix}"
        )
    back = args.window - 1 if args.context_before else 0
    return [rows[max(0, lo - back) : hi] for lo, hi in ((0, a), (a, a + b), (a + b, len(rows)))]


def split_records(table, args):
    """Train, val and test Parts and their source: the --val and --test files, each series in
    time order, or records or groups at random."""
    series = series_of(table, args.group, args.window)
    pieces = [rows for _, rows in series]
    source = {"files": args.files, "fractions": args.fractions}
    if args.group:
        source["group"] = args.group
    if args.val:
        # each series in its file's split: train, --val or --test
        file = np.searchsorted(table.starts, [rows[0] for rows in pieces], "right")
        labels = np.maximum(file - len(args.files), 0)
        source = {"train": args.files, "val": args.val, "test": args.test}
    elif args.order == "time":
        cut = [time_parts(path, rows, args) for path, rows in series]
        if short := [len(p[0]) for p in cut if len(p) == 1]:
            print(
                f"note: {len(short)} group(s) too short to split in time ({sum(short)} rows): whole"
                " in train"
            )
        pieces = [rows for p in cut for rows in p]
        labels = np.array([k for p in cut for k in range(len(p))], int)
        source["order"] = "time"
    blocks = []
    for rows in pieces:
        starts = np.arange(0, len(rows) - args.window + 1, args.stride)
        blocks.append(rows[starts[:, None] + np.arange(args.window)])
    records = np.concatenate([np.empty((0, args.window), np.int32), *blocks])
    each_record = args.order == "random" and not (args.val or args.group)
    if args.order == "random" and not args.val:
        for rows in pieces:
            if len(rows) < args.window:
                fail(
                    f"{table.where(rows[-1])}: the file ends after {len(rows)} rows, before a"
                    f" window of {args.window} is full; lower --window"
                )
        n = len(records) if each_record else len(blocks)
        counts = split_counts(n, args.fractions)
        if min(counts) < 1:
            what = "groups" if args.group else "records"
            fix = ", or --order time to split each group in time" if args.group else ""
            fail(
                f"--split {args.split}: {n} {what} give train/val/test"
                f" {'/'.join(map(str, counts))}; every split needs one (more data, other"
                f" fractions{fix})"
            )
        labels = np.empty(n, np.int8)
        labels[np.random.default_rng(args.seed).permutation(n)] = np.repeat([0, 1, 2], counts)
        source |= {"seed": args.seed, "order": "random"}
    if not each_record:
        # a piece goes whole to one split
        labels = np.repeat(labels, [len(b) for b in blocks])
    return [Part(records[labels == k]) for k in range(3)], source


def rows_in(table, parts, key=None):
    held = np.zeros(table.n, bool)
    for part in parts:
        held[part.rows[part.has(key)].ravel()] = True
    return held


def leave_out_missing(parts, keys, gaps, how):
    """The splits with missing values left out, and {key: records it was missing from}."""
    missing, kept, emptied = {}, [], 0
    for part in parts:
        lacks = {key: gap[part.rows].any(axis=1) for key, gap in gaps.items()}
        lacking = sum(lacks.values(), np.zeros(len(part), int))
        for key, lack in lacks.items():
            if lack.any():
                missing[key] = missing.get(key, 0) + int(lack.sum())
        keep = lacking == 0 if how == "drop" else lacking < len(keys)
        emptied += int((lacking == len(keys)).sum()) if how == "omit" else 0
        kept.append(Part(part.rows[keep], {k: v[keep] for k, v in lacks.items()}))
    if emptied:
        print(f"note: {emptied} record(s) left out: every key of theirs missing")
    return kept, missing


def warn_short(parts, args):
    helps = args.order == "time" and args.window > 1 and not args.val
    more = "--context-before, " if helps and not args.context_before else ""
    more += "--order random, " if helps and args.group else ""
    fixes = f"more data, other --split fractions, {more}a smaller --window or --stride"
    for split, part in zip(SPLITS, parts):
        if not len(part):
            fail(f"the {split} split holds no record; {fixes}")
        if len(part) < 30:
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


def date_keys(table, how):
    """The keys (not --text) whose every value is a date or time, noted; with how "number" made
    numbers, else left out (returned)."""
    dates, lines = [], []
    for key, col in table.cols.items():
        texts = col.texts
        present = np.flatnonzero(col.code != GAP)
        dated = all(DATE.fullmatch(str(t)) for t in texts) and len(present)
        if col.as_text or not dated or col.nested:
            continue
        index = col.code[present]
        numbers = (index == NUM).any()
        if numbers:
            # yyyymmdd, from 1800 to 2099 (a text's x is NaN)
            x = col.x[present]
            if col.q != 0 or not ((x > 18e6) & (x < 21e6)).all():
                continue
            days, index = np.unique(x, return_inverse=True)
            texts = [f"{d:.0f}" for d in days]
        years = decimal_years(texts)[index]
        if numbers and np.isnan(years).any():
            continue
        # rows in file order, within each group (without --group: each run of consecutive rows)
        group = present - np.arange(len(present))
        if table.group:
            group = np.where(table.group.code == NUM, table.group.x, table.group.code)[present]
        order = np.argsort(group, kind="stable")
        same = np.diff(group[order]) == 0
        same &= np.diff(np.searchsorted(table.starts, present[order], "right")) == 0  # one file
        steps = np.diff(years[order])
        # a time of day again: series interleaved
        timed = any(":" in t for t in texts)
        back = present[order][1:][((steps < 0) | (steps == 0) & timed) & same]
        after = ""
        if len(back):
            fix = "sort the file, or name each row's series with --group"
            after = f" (they go back in time or repeat at {table.where(back[0])}: {fix})"
        kept = "left out (--dates=number keeps it as a number)"
        if how != "number":
            dates.append(key)
        elif np.isnan(years).any():
            i = np.argmax(np.isnan(years))
            fail(
                f"{table.where(present[i])}: key {key!r}: --dates=number reads ISO 8601 dates and"
                f" yyyymmdd (2021-03-04T12:30, 20210304), not {shown(texts[index[i]])}; write it"
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
            f" {kept}; rows taken in file order{after}"
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
    return "_" + word if word[0].isdigit() else word


def keys_within(value):
    if isinstance(value, dict):
        return [*value, *keys_within(list(value.values()))]
    return [k for v in value for k in keys_within(v)] if isinstance(value, list) else []


def words_for_tokenizer(table):
    """Key names and text values made words (as_word), noted; {old: new} of the keys."""
    cols = table.cols.values()
    renamed = {key: as_word(key) for key in table.cols}
    strings = [t for c in cols for t in c.texts]
    strings += [x for c in cols for v in c.nested.values() for x in leaves(v)]
    values = {x: as_word(x) for x in strings if isinstance(x, str)}
    for mapping, what in ((renamed, "key"), (values, "text value")):
        written = {}
        for a, b in mapping.items():
            if written.setdefault(b, a) != a:
                both = f"{shown(written[b])} and {shown(a)}"
                fail(f"the {what}s {both} would both be written {shown(b)}; rename one")
        if changed := [(a, b) for a, b in mapping.items() if a != b]:
            a, b = changed[0]
            print(
                f"note: {len(changed)} {what}(s) the tokenizer would read as numbers written as one"
                f" word each: {shown(a)} as {shown(b)}"
                + (" (--mask_key takes the new name)" if what == "key" else "")
            )
    word = lambda x: values.get(x, x)
    for name, col in table.cols.items():
        col.texts = [word(t) for t in col.texts]
        for row, value in col.nested.items():
            # the keys within a JSON value are not renamed
            for key in keys_within(value):
                if as_word(key) != key:
                    fail(
                        f"{table.where(row)}: the tokenizer reads a number in the key"
                        f" {shown(key)}; rename it {shown(as_word(key))}"
                    )
                if f"{name}.{key}" in table.cols:
                    both = f"the key '{name}.{key}' and {key!r} within {name!r}"
                    fail(f"{table.where(row)}: --mask_key names {both} alike; rename one")
            col.nested[row] = rewrite(value, word)
    table.cols = {renamed[k]: c for k, c in table.cols.items()}
    return renamed
