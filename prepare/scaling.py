"""
The scaling of prepare/text.py, here to be changed; eval.py undoes it from meta.json's "scales".

--scale auto: every number under a key, at any depth, becomes (x - center) / spread, center and
spread the mean and standard deviation of the key's numbers in train (spread 1 for a constant key),
so original = written * spread + center; --scale none writes them as they are (center 0, spread 1).
Two different inputs that the model would see as one float32 are named in a warning.
"""

import functools
import math

import numpy as np
from common import fail
from reading import numbers


def key_numbers(records, key):
    return [x for record, _, _ in records for x in numbers(record.get(key, []))]


def scales_of(train, keys, mode):
    """{key: {"center", "spread"}} of the keys, from the training records."""
    scales = {}
    for key in keys:
        xs = np.array([float(x) for x in key_numbers(train, key)])
        if xs.size == 0:
            fail(
                f"key {key!r} holds no number in the training split ({train[0][1]} ...), so it has"
                " no scale"
            )
        if xs.std() == 0:
            print(
                f"note: key {key!r} is constant in train ({xs[0]:g}): nothing to learn from it;"
                " --columns leaves it out"
            )
        if mode == "none":
            scales[key] = {"center": 0.0, "spread": 1.0}
            continue
        # 6 significant digits (the center's to a millionth of the spread): readable, and exactly
        # what is applied
        spread = float(f"{xs.std():.6g}") or 1.0
        digits = 6 + max(0, math.ceil(math.log10(abs(xs.mean()) / spread))) if xs.mean() else 6
        scales[key] = {"center": float(f"{xs.mean():.{digits}g}"), "spread": spread}
    return scales


def decimals_of(parts, key, spread):
    """The decimals d of a key's scaled numbers: the least d with 10^-d * spread <= 10^q / 10, 10^q
    the place of the finest digit of its inputs, so that written * spread + center, rounded to the
    input's digits, is the input (of up to 15 significant digits, what a float64 holds)."""
    q = min(x.as_tuple().exponent for part in parts for x in key_numbers(part, key))
    return max(0, math.ceil(math.log10(spread) - q + 1 - 1e-9))


def standardized(x, scale):
    return (float(x) - scale["center"]) / scale["spread"]


def scaled(x, scale, digits):
    """A number as written: (x - center) / spread with `digits` decimals, no trailing zeros."""
    if digits is None:
        return str(x)
    s = f"{standardized(x, scale):.{digits}f}"
    s = s.rstrip("0").rstrip(".") if "." in s else s
    return "0" if s in ("-0", "") else s


def largest(parts, key, scale):
    xs = [abs(standardized(x, scale)) for part in parts for x in key_numbers(part, key)]
    return max(xs, default=0.0)


def check_resolution(parts, key, writer):
    """Warn where two different inputs of a key reach the model as one float32, or the key spans
    many decades."""
    seen = {}
    for x, where in ((x, w) for part in parts for r, w, _ in part for x in numbers(r.get(key, []))):
        y = np.float32(writer(x))
        if seen.setdefault(y, (x, where))[0] != x:
            print(
                f"warning: {where}: key {key!r}: {x} and {seen[y][0]} ({seen[y][1]}) reach the"
                f" model as one value ({y:g} after scaling): too many digits for a float32 beside"
                " the key's spread, or a range over many decades; write log10 of the key as a"
                " column of its own, --scale none, or leave the key out (--columns) if it is an ID"
            )
            break
    xs = [abs(float(x)) for part in parts for x in key_numbers(part, key) if x]
    if xs and max(xs) / min(xs) > 1e6:
        print(
            f"warning: key {key!r}: |x| from {min(xs):.3g} to {max(xs):.3g},"
            f" {math.log10(max(xs) / min(xs)):.0f} decades: scaled by its spread, the small ones"
            " are close to 0; write log10 of the key as a column of its own, or --scale none"
        )


def scale(parts, keys, mode):
    """({key: scale}, {key: decimals}, {key: its numbers' writer}), the scales from train."""
    scales = scales_of(parts[0], keys, mode)
    digits = {
        k: None if mode == "none" else decimals_of(parts, k, scales[k]["spread"]) for k in keys
    }
    writers = {k: functools.partial(scaled, scale=scales[k], digits=digits[k]) for k in keys}
    for k in keys:
        check_resolution(parts, k, writers[k])
    return scales, digits, writers
