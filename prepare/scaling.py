"""
The scaling of prepare/text.py, here to be changed; eval.py and sample.py undo it from meta.json's
"scales".

--scale auto: every number under a key, at any depth, becomes (x - center) / spread, center and
spread the mean and standard deviation of the key's numbers in train (spread 1 for a constant key),
so original = written * spread + center; --scale none writes them as they are (center 0, spread 1).
Two different inputs that the model would see as one float32 are named in a warning.
"""

import math

import numpy as np
from common import fail
from records import weights

# scaled numbers beyond this are far from order 1: warned of
FAR = 10


def in_rows(table, parts, key):
    """Which rows a record that holds key holds, in any of the parts."""
    held = np.zeros(table.n, bool)
    for part in parts:
        held[part.rows[part.has(key)].ravel()] = True
    return held


def scales_of(table, train, keys, mode):
    """{key: {"center", "spread"}} of the keys, from the training records."""
    scales = {}
    for key in keys:
        x, rows = table.cols[key].numbers()
        w = weights(table, train, key)[rows]
        xs, ws = x[w > 0], w[w > 0]
        if xs.size == 0:
            fail(
                f"key {key!r} holds no number in the training split"
                f" ({table.where(train.rows[0][0])} ...), so it has no scale"
            )
        mean = np.average(xs, weights=ws)
        std = math.sqrt(np.average((xs - mean) ** 2, weights=ws))
        if std == 0:
            print(
                f"note: key {key!r} is constant in train ({xs[0]:g}): nothing to learn from it;"
                " --columns leaves it out"
            )
        if mode == "none":
            scales[key] = {"center": 0.0, "spread": 1.0}
            continue
        # 6 significant digits (the center's to a millionth of the spread): readable, and exactly
        # what is applied
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
    """Numbers as the text writes them: (x - center) / spread with `digits` decimals, no trailing
    zeros, each distinct number formatted once."""
    z = (np.asarray(x, float) - scale["center"]) / scale["spread"]
    distinct, inverse = np.unique(z, return_inverse=True)
    text = ("{:.%df}\0" % digits * len(distinct)).format(*distinct.tolist()).split("\0")[:-1]
    if digits:
        text = [t.rstrip("0").rstrip(".") for t in text]
    text = ["0" if t in ("-0", "") else t for t in text]
    return np.array(text, dtype=object)[inverse.ravel()]


def check_resolution(table, key, x, rows, scale, digits):
    """Warn where two different inputs of a key reach the model as one float32, or the key spans
    many decades."""
    clash = table.cols[key].clash
    if clash is None and len(x):
        distinct, first = np.unique(x, return_index=True)
        as_read = np.array(written(distinct, scale, digits), dtype=float).astype(np.float32)
        same = np.flatnonzero(as_read[1:] == as_read[:-1])
        if len(same):
            pair = sorted([first[same[0]], first[same[0] + 1]])
            clash = [repr(float(x[pair[1]])), table.where(rows[pair[1]])]
            clash += [repr(float(x[pair[0]])), table.where(rows[pair[0]])]
    if clash:
        a, where, b, seen = clash
        y = np.float32(written([float(a)], scale, digits)[0])
        print(
            f"warning: {where}: key {key!r}: {a} and {b} ({seen}) reach the model as one value"
            f" ({y:g} after scaling): too many digits for a float32 beside the key's spread, or a"
            " range over many decades; write log10 of the key as a column of its own, --scale"
            " none, or leave the key out (--columns) if it is an ID"
        )
    xs = np.abs(x[x != 0])
    if len(xs) and xs.max() / xs.min() > 1e6:
        print(
            f"warning: key {key!r}: |x| from {xs.min():.3g} to {xs.max():.3g},"
            f" {math.log10(xs.max() / xs.min()):.0f} decades: scaled by its spread, the small ones"
            " are close to 0; write log10 of the key as a column of its own, or --scale none"
        )


def scale(table, parts, keys, mode):
    """({key: scale}, {key: decimals}, {key: largest |x| written}, {key: [least, largest] in
    train}), the scales from train; what the model could not tell apart warned of."""
    scales = scales_of(table, parts[0], keys, mode)
    digits, largest, ranges = {}, {}, {}
    for key in keys:
        x, rows = table.cols[key].numbers()
        kept = in_rows(table, parts, key)[rows]
        x, rows = x[kept], rows[kept]
        digits[key] = decimals_of(table.cols[key].q_range[0], scales[key]["spread"], mode)
        z = np.abs(x - scales[key]["center"]) / scales[key]["spread"]
        largest[key] = float(z.max())
        train = x[weights(table, parts[0], key)[rows] > 0]
        ranges[key] = [float(train.min()), float(train.max())]
        check_resolution(table, key, x, rows, scales[key], digits[key])
        if mode == "auto" and largest[key] > FAR:
            print(
                f"warning: key {key!r}: scaled, its numbers reach |x| = {largest[key]:.3g} (a few"
                " far from the rest, or a spread small beside the range): xVal learns best with"
                " numbers of order 1; write log10 of the key as a column of its own, or leave the"
                " outliers out"
            )
    return scales, digits, largest, ranges
