"""Number look-up (paper App. C): {d:1.53,e:-1.33,a:2.53,i:0.0232}e=-1.33; test_ood queries values
in a gap (prepare/README.md#number-look-up-lookuppy)."""

import functools
import string

from common import base_parser, int_range, one_line_errors, write_dataset

from util import format_number

# significant digits of every value
DIGITS = 3
VALUE_RANGE = (-3.0, 3.0)
# the open interval held out of training, used by test_ood
GAP = (0.3, 0.5)
# entries per dictionary, both ends included
ENTRIES = (2, 6)
KEYS = string.ascii_lowercase
SPLITS = ("train", "val", "test", "test_ood")


def draw_value(rng, inside_gap):
    """A value as written, inside or outside the gap: rounding never carries it across."""
    lo, hi = GAP if inside_gap else VALUE_RANGE
    while True:
        text = format_number(rng.uniform(lo, hi), DIGITS)
        if (GAP[0] < float(text) < GAP[1]) == inside_gap:
            return text


def make_sample(rng, split, entries=ENTRIES):
    """One look-up line; entries: (min, max) per dictionary."""
    n = int(rng.integers(entries[0], entries[1] + 1))
    keys = [KEYS[i] for i in rng.choice(len(KEYS), size=n, replace=False)]
    values = [draw_value(rng, inside_gap=False) for _ in range(n)]
    # the queried entry
    q = int(rng.integers(n))
    if split == "test_ood":
        values[q] = draw_value(rng, inside_gap=True)
    return "{" + ",".join(f"{k}:{v}" for k, v in zip(keys, values)) + "}" + f"{keys[q]}={values[q]}"


if __name__ == "__main__":
    one_line_errors()
    parser = base_parser("Number look-up: {key:value,...}key=value.", "data/lookup")
    entries = f"entries per dictionary, inclusive (default {ENTRIES[0]},{ENTRIES[1]})"
    parser.add_argument(
        "--entries", type=int_range(len(KEYS)), default=ENTRIES, metavar="MIN,MAX", help=entries
    )
    args = parser.parse_args()
    meta = {
        "dataset": "lookup",
        "digits": DIGITS,
        "value_range": VALUE_RANGE,
        "gap": GAP,
        "entries": args.entries,
        "ood": {"test_ood": f"the queried value lies in the open interval {GAP}"},
    }
    sample = functools.partial(make_sample, entries=args.entries)
    write_dataset(args, sample, meta, extra_splits=SPLITS[3:])
