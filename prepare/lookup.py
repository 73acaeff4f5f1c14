"""
Number look-up (paper App. "A number look-up experiment"): a small dictionary, then one of its
keys and the value it holds, e.g.

    {d:1.53,e:-1.33,a:2.53,i:0.0232}e=-1.33

- keys: distinct one-letter lowercase names, unquoted; 2 to 6 entries per sample (uniform; the
  paper's example has 4, its size is not given; `--entries MIN,MAX` changes the range)
- values: uniform in [-3, 3], written with 3 significant digits ("0.0232", "-1.33", "0" for an
  exact zero, never "-0"); in train/val/test no value lies in the open gap (0.3, 0.5): a draw
  whose *written* value falls in the gap is redrawn, so values that round to 0.3 or 0.5 (the gap's
  endpoints) are kept and nothing inside the gap appears in the text
- query: a key of the dictionary chosen uniformly; the answer is its value written identically

Out-of-distribution test set test_ood: the queried entry's value is uniform in (0.3, 0.5) (its
written value strictly inside the gap); every other entry is drawn as in training.

    python prepare/lookup.py --size small     # 40k/5k/5k (+5k OoD), seconds
"""

import argparse
import functools
import string

from common import base_parser, fmt_number, one_line_errors, write_dataset

DIGITS = 3  # significant digits of every value
VALUE_RANGE = (-3.0, 3.0)
GAP = (0.3, 0.5)  # open interval held out of training, used by test_ood
ENTRIES = (2, 6)  # entries per dictionary, both ends included
KEYS = string.ascii_lowercase
SPLITS = ("train", "val", "test", "test_ood")


def in_gap(text):
    return GAP[0] < float(text) < GAP[1]


def draw_value(rng, inside_gap):
    """A value as written (3 significant digits), inside or outside the gap, by rejection."""
    lo, hi = GAP if inside_gap else VALUE_RANGE
    while True:  # test the written value, so rounding can never carry a value across the gap edge
        text = fmt_number(rng.uniform(lo, hi), DIGITS)
        if in_gap(text) == inside_gap:
            return text


def make_sample(rng, split, entries=ENTRIES):
    """One look-up as one line of text (see the module docstring); entries: (min, max) per
    dictionary."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    n = int(rng.integers(entries[0], entries[1] + 1))
    keys = [KEYS[i] for i in rng.choice(len(KEYS), size=n, replace=False)]
    values = [draw_value(rng, inside_gap=False) for _ in range(n)]
    q = int(rng.integers(n))  # the queried entry
    if split == "test_ood":
        values[q] = draw_value(rng, inside_gap=True)
    return "{" + ",".join(f"{k}:{v}" for k, v in zip(keys, values)) + "}" + f"{keys[q]}={values[q]}"


def entry_range(text):
    """argparse type of --entries: 'MIN,MAX' → (MIN, MAX), 1 <= MIN <= MAX <= 26 (one key per
    letter)."""
    try:
        low, high = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected MIN,MAX (two integers, e.g. 2,6); found '{text}'"
        )
    if not 1 <= low <= high <= len(KEYS):
        raise argparse.ArgumentTypeError(
            f"expected 1 <= MIN <= MAX <= {len(KEYS)}; found {low},{high}"
        )
    return low, high


if __name__ == "__main__":
    one_line_errors()
    parser = base_parser("Number look-up: {key:value,...}key=value.", "data/lookup")
    parser.add_argument(
        "--entries",
        type=entry_range,
        default=ENTRIES,
        metavar="MIN,MAX",
        help=f"entries per dictionary, inclusive (default {ENTRIES[0]},{ENTRIES[1]})",
    )
    args = parser.parse_args()
    meta = {
        "dataset": "lookup",
        "digits": DIGITS,
        "value_range": VALUE_RANGE,
        "gap": GAP,  # no train/val/test value lies in the open interval
        "entries": args.entries,
        "ood": {"test_ood": f"the queried value lies in the open interval {GAP}"},
    }
    write_dataset(
        args,
        functools.partial(make_sample, entries=args.entries),
        extra_splits=SPLITS[3:],
        meta=meta,
    )
