"""
The scaling of prepare/text.py, here to be changed: xVal multiplies an embedding by each value,
so each key's numbers are brought to order 1, (x - center) / spread, center and spread the mean
and standard deviation of the key's numbers in train (docs/decisions.md#scaling). Each key's
scaled numbers are written with just enough decimals that scaled * spread + center, rounded to
the input's digits, is the input (text.py's docstring has the rule). meta.json records the scales,
and eval.py reports errors in original units as value * spread + center: another scaling must be
undone the same way.
"""

import functools
import math

import numpy as np
from reading import fail, numbers


def scales_of(train, keys, mode):
    """{key: {"center", "spread"}} of every key that holds numbers, from the training records."""
    scales = {}
    for key in keys:
        xs = np.array([float(x) for record, _, _ in train for x in numbers(record.get(key, []))])
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
        # 6 significant digits (the center's to a millionth of the spread): readable, and exactly
        # what is applied
        else:
            spread = float(f"{xs.std():.6g}") or 1.0
            digits = 6 + max(0, math.ceil(math.log10(abs(xs.mean()) / spread))) if xs.mean() else 6
            scales[key] = {"center": float(f"{xs.mean():.{digits}g}"), "spread": spread}
    return scales


def decimals_of(parts, key, spread):
    """The decimals of a key's scaled numbers: the least d with 10^-d * spread <= 10^q / 10, 10^q
    the place of the finest digit among the key's input numbers."""
    q = min(
        x.as_tuple().exponent
        for part in parts
        for record, _, _ in part
        for x in numbers(record.get(key, []))
    )
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
    """The largest |x| of a key's numbers once scaled (0 for none)."""
    xs = [x for part in parts for r, _, _ in part for x in numbers(r.get(key, []))]
    return max((abs(standardized(x, scale)) for x in xs), default=0.0)


def check_resolution(parts, key, writer):
    """Warn where two different inputs of a key reach the model as one float32, or the key spans
    many decades."""
    seen, xs, told = {}, [], False
    for part in parts:
        for record, where, _ in part:
            for x in numbers(record.get(key, [])):
                xs.append(abs(float(x)))
                y = np.float32(writer(x))
                if seen.setdefault(y, (x, where))[0] != x and not told:
                    told = True
                    print(
                        f"warning: {where}: key {key!r}: {x} and {seen[y][0]} ({seen[y][1]}) reach"
                        f" the model as one value ({y:g} after scaling): too many digits for a"
                        " float32 beside the key's spread, or a range over many decades; write"
                        " log10 of the key as a column of its own, --scale none, or leave the key"
                        " out (--columns) if it is an ID"
                    )
    nonzero = [x for x in xs if x > 0]
    if nonzero and max(nonzero) / min(nonzero) > 1e6:
        print(
            f"warning: key {key!r}: |x| from {min(nonzero):.3g} to {max(nonzero):.3g},"
            f" {math.log10(max(nonzero) / min(nonzero)):.0f} decades: scaled by its spread, the"
            " small ones are close to 0; write log10 of the key as a column of its own, or --scale"
            " none"
        )


def scale(parts, keys, mode):
    """({key: scale}, {key: decimals}, {key: the function that writes its numbers}) of the keys
    that hold numbers, the scales from train (--scale auto) or none (--scale none)."""
    scales = scales_of(parts[0], keys, mode)
    digits = {
        k: None if mode == "none" else decimals_of(parts, k, scales[k]["spread"]) for k in keys
    }
    writers = {k: functools.partial(scaled, scale=scales[k], digits=digits[k]) for k in keys}
    for k in keys:
        check_resolution(parts, k, writers[k])
    return scales, digits, writers
