"""
The scaling of prepare/text.py (eval.py and sample.py undo it from meta.json's "scales"): --scale
auto makes every number under a key (x - center) / spread, the mean and standard deviation of the
key's numbers in train (spread 1 for a constant key); --scale none keeps them (center 0, spread 1).
"""

import math

import numpy as np
from common import fail
from reading import NUM, numbers
from records import rows_in, weights

# scaled numbers beyond this are far from order 1: warned of
FAR = 10


def number_pieces(col, rows, weights=None, size=1 << 18):
    """A column's numbers in rows (a mask), nested ones too, a piece at a time, each with its
    numbers' weights (given one per row)."""
    for lo in range(0, col.n, size):
        mask = (col.code[lo : lo + size] == NUM) & rows[lo : lo + size]
        w = weights[lo : lo + size][mask] if weights is not None else None
        yield col.x[lo : lo + size][mask], w
    deep = [(r, float(d)) for r, v in col.nested.items() if rows[r] for d in numbers(v)]
    if deep:
        rs, x = zip(*deep)
        yield np.array(x), (weights[list(rs)] if weights is not None else None)


def extremes(pieces):
    """(least, largest, least |x| but 0, largest |x|) of numbers given a piece at a time."""
    low, high, small = np.inf, -np.inf, np.inf
    for x, _ in pieces:
        if len(x):
            low, high = min(low, x.min()), max(high, x.max())
            positive = np.min(x, where=x > 0, initial=np.inf)
            small = min(small, positive, -np.max(x, where=x < 0, initial=-np.inf))
    return low, high, small, max(high, -low)


def scales_of(table, train, keys, mode):
    """{key: {"center", "spread"}} of the keys, from the training records."""
    scales = {}
    for key in keys:
        col, w = table.cols[key], weights(table, train, key)
        # each number counted as often as records hold it
        total = count = 0.0
        for x, n in number_pieces(col, w > 0, w):
            total, count = total + (x * n).sum(), count + n.sum()
        if not count:
            fail(
                f"key {key!r} holds no number in the training split"
                f" ({table.where(train.rows[0][0])} ...), so it has no scale"
            )
        mean = total / count
        squares = sum((((x - mean) ** 2) * n).sum() for x, n in number_pieces(col, w > 0, w))
        std = math.sqrt(squares / count)
        if std == 0:
            first = next(x for x, _ in number_pieces(col, w > 0) if len(x))[0]
            print(
                f"note: key {key!r} is constant in train ({first:g}): nothing to learn from it;"
                " --columns leaves it out"
            )
        if mode == "none":
            scales[key] = {"center": 0.0, "spread": 1.0}
            continue
        # 6 significant digits (the center's to a millionth of the spread), exactly as applied
        spread = float(f"{std:.6g}") or 1.0
        digits = 6 + max(0, math.ceil(math.log10(abs(mean) / spread))) if mean else 6
        scales[key] = {"center": float(f"{mean:.{digits}g}"), "spread": spread}
    return scales


def decimals_of(q, spread, mode):
    """The decimals d of a key's written numbers. Scaled: the least d with 10^-d * spread <= 10^q /
    10, 10^q the place of the finest digit of its inputs, so that written * spread + center,
    rounded to the input's digits, is the input (of up to 15 significant digits, what a float64
    holds). As they are: the input's own decimals."""
    if mode == "none":
        return max(0, -int(q))
    return max(0, math.ceil(math.log10(spread) - int(q) + 1 - 1e-9))


def written(x, scale, digits):
    """Numbers as the text writes them: (x - center) / spread, `digits` decimals, no trailing
    zeros."""
    z = (np.asarray(x, float) - scale["center"]) / scale["spread"]
    distinct, inverse = np.unique(z, return_inverse=True)
    text = ("{:.%df}\0" % digits * len(distinct)).format(*distinct.tolist()).split("\0")[:-1]
    if digits:
        text = [t.rstrip("0").rstrip(".") for t in text]
    text = ["0" if t in ("-0", "") else t for t in text]
    return np.array(text, dtype=object)[inverse.ravel()]


def row_of(col, value, rows):
    """The first of rows (a mask) that holds the number value."""
    found = (col.x == value) & (col.code == NUM) & rows
    if found.any():
        return int(np.argmax(found))
    return min(r for r, v in col.nested.items() if value in map(float, numbers(v)))


def check_resolution(table, key, held, scale, digits):
    """Warn where two inputs of a key reach the model as one float32 (within a piece of the
    column), or the key spans many decades."""
    col = table.cols[key]
    clash = col.clash
    for x, _ in number_pieces(col, held) if not clash else ():
        distinct = np.unique(x)
        as_read = np.array(written(distinct, scale, digits), dtype=float).astype(np.float32)
        same = np.flatnonzero(as_read[1:] == as_read[:-1])
        if len(same):
            pair = sorted(distinct[same[0] : same[0] + 2], key=lambda v: row_of(col, v, held))
            clash = [repr(float(pair[1])), table.where(row_of(col, pair[1], held))]
            clash += [repr(float(pair[0])), table.where(row_of(col, pair[0], held))]
            break
    if clash:
        a, where, b, seen = clash
        y = np.float32(written([float(a)], scale, digits)[0])
        print(
            f"warning: {where}: key {key!r}: {a} and {b} ({seen}) reach the model as one value"
            f" ({y:g} scaled); write log10 of the key as a column, --scale none, or leave an ID"
            " out (--columns)"
        )
    *_, least, most = extremes(number_pieces(col, held))
    if least < np.inf and most / least > 1e6:
        print(
            f"warning: key {key!r}: |x| from {least:.3g} to {most:.3g},"
            f" {math.log10(most / least):.0f} decades: scaled, the small ones are near 0; write"
            " log10 of the key as a column, or --scale none"
        )


def scale(table, parts, keys, mode):
    """({key: scale}, {key: decimals}, {key: largest |x| written}, {key: [least, largest] in
    train}), from train."""
    scales = scales_of(table, parts[0], keys, mode)
    digits, largest, ranges = {}, {}, {}
    for key in keys:
        col, (center, spread) = table.cols[key], scales[key].values()
        held = rows_in(table, parts, key)
        low, high, _, _ = extremes(number_pieces(col, held))
        digits[key] = decimals_of(col.q, spread, mode)
        largest[key] = max(abs(high - center), abs(low - center)) / spread
        low, high, _, _ = extremes(number_pieces(col, weights(table, parts[0], key) > 0))
        ranges[key] = [float(low), float(high)]
        check_resolution(table, key, held, scales[key], digits[key])
        if mode == "auto" and largest[key] > FAR:
            print(
                f"warning: key {key!r}: scaled, its numbers reach |x| = {largest[key]:.3g}; xVal"
                " learns best with numbers of order 1: write log10 of the key, or leave outliers"
                " out"
            )
    return scales, digits, largest, ranges
