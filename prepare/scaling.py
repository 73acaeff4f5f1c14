"""The scaling of prepare/text.py, undone by eval.py and sample.py from meta.json's "scales"."""

import math
from collections import defaultdict

import numpy as np
from common import fail
from reading import NUM, numbers
from records import print_some, rows_in


def number_pieces(col, weights, size=1 << 18):
    """A column's numbers in the rows of weight > 0 (a mask or a count per row), nested ones too,
    a piece at a time, each with its weight."""
    for lo in range(0, col.n, size):
        w = weights[lo : lo + size]
        mask = (col.code[lo : lo + size] == NUM) & (w > 0)
        yield col.x[lo : lo + size][mask], w[mask]
    deep = [(r, float(d)) for r, v in col.nested.items() if weights[r] for d in numbers(v)]
    if deep:
        rs, x = zip(*deep)
        yield np.array(x), weights[list(rs)]


def extremes(col, rows):
    """(least, largest, least |x| but 0) of a column's numbers in rows (a mask or counts)."""
    low, high, small = np.inf, -np.inf, np.inf
    for x, _ in number_pieces(col, rows):
        low, high = x.min(initial=low), x.max(initial=high)
        small = np.abs(x[x != 0]).min(initial=small)
    return low, high, small


def scale_of(col, weights, mode):
    if mode != "auto":
        return {"center": 0.0, "spread": 1.0}
    total = count = 0.0
    for x, n in number_pieces(col, weights):
        total, count = total + (x * n).sum(), count + n.sum()
    mean, squares = total / count, 0.0
    for x, n in number_pieces(col, weights):
        squares += ((x - mean) ** 2 * n).sum()
    # 6 significant digits (the center's to a millionth of the spread), exactly as applied
    spread = float(f"{math.sqrt(squares / count):.6g}") or 1.0
    digits = 6 + max(0, math.ceil(math.log10(abs(mean) / spread))) if mean else 6
    return {"center": float(f"{mean:.{digits}g}"), "spread": spread}


def decimals_of(q, spread, mode, largest):
    # prepare/README.md, Digits
    d = -int(q) if mode == "none" else math.ceil(math.log10(spread) - int(q) + 1 - 1e-9)
    return max(0, min(d, 17 - math.floor(math.log10(largest or 1))))


def written(x, scale, digits):
    z = (np.asarray(x, float) - scale["center"]) / scale["spread"]
    distinct, inverse = np.unique(z, return_inverse=True)
    text = [f"{v:.{digits}f}" for v in distinct.tolist()]
    if digits:
        text = [t.rstrip("0").rstrip(".") for t in text]
    text = ["0" if t == "-0" else t for t in text]
    return np.array(text, dtype=object)[inverse.ravel()]


def scale(table, parts, keys, mode, counting=()):
    """({key: scale}, {key: decimals}, {key: largest |x| written}, {key: [least, largest] in
    train}), from train; what the model cannot tell apart warned of, numbers beyond train noted."""
    scales, digits, largest, ranges = {}, {}, {}, {}
    said = defaultdict(list)
    for key in keys:
        col = table.cols[key]
        # each number counted as often as training records hold it
        weights = np.bincount(parts[0].rows[parts[0].has(key)].ravel(), minlength=table.n)
        low, high, small = extremes(col, weights)
        if low > high:
            where = table.where(parts[0].rows[0][0])
            fail(f"key {key!r} holds no number in the training split ({where} ...)")
        s = scales[key] = scale_of(col, weights, mode)
        out_low, out_high, out_small = extremes(col, rows_in(table, parts[1:], key))
        ranges[key] = [float(low), float(high)]
        if low == high:
            said["constant"].append(
                f"note: key {key!r} is constant in train ({low:g}): nothing to learn from it;"
                " --columns leaves it out"
            )
        bottom, top = min(low, out_low), max(high, out_high)  # of every split
        largest[key] = max(abs(top - s["center"]), abs(bottom - s["center"])) / s["spread"]
        digits[key] = decimals_of(col.q, s["spread"], mode, largest[key])
        if mode == "record":
            if col.nested:
                fail(f"key {key!r} holds lists or objects: --scale record scales plain numbers")
            # from train alone: nothing written hangs on the value a record predicts
            digits[key] = decimals_of(col.q, max(high, -low) or 1, mode, 1)
            continue
        if key not in counting and max(low - out_low, out_high - high) > (high - low) / 10:
            said["beyond"].append(
                f"note: key {key!r}: val/test numbers reach [{out_low:g}, {out_high:g}], beyond"
                f" train's [{low:g}, {high:g}]; for a level that moves, --scale record --window N"
            )
        if col.clash:
            a, where, b, seen = col.clash
            said["clash"].append(
                f"warning: {where}: key {key!r}: {a} and {b} ({seen}) reach the model as one value;"
                " write log10 of the key, --scale none, or leave an ID out (--columns)"
            )
        small = min(small, out_small)
        if max(top, -bottom) / small > 1e6:
            said["decades"].append(
                f"warning: key {key!r}: |x| from {small:.3g} to {max(top, -bottom):.3g}: scaled,"
                " the small ones are near 0; write log10 of the key, or --scale none"
            )
        if mode == "auto" and largest[key] > 10:
            said["far"].append(
                f"warning: key {key!r}: scaled, its numbers reach |x| = {largest[key]:.3g}; far"
                " from order 1: write log10 of the key, or leave outliers out"
            )
        if mode == "none" and not 0.1 <= largest[key] <= 10:
            said["far"].append(
                f"warning: key {key!r}: numbers up to |x| = {largest[key]:.4g}, far from order 1"
                " (--scale auto scales them)"
            )
    for lines in said.values():
        print_some(lines)
    return scales, digits, largest, ranges
