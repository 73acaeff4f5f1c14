"""
Arithmetic datasets of the paper (App. A), one sample per line, right-hand side exact:

  multiplication of two n-digit integers (n = 3, 4, 5), written with the decimal point shifted
  n places in each operand and 2n places in the product, so every number is of order 1 as xVal
  expects (docs/decisions.md#scaling); this scale keeps the equation exact and the digits those
  of the integer problem:
  0.123*0.456=0.056088   (123·456 = 56088)

  fully parenthesised random binary trees of 2, 3 or 4 operands with + − ×, operands 10^U(0,2)
  rounded to 3 significant digits, written unscaled: the paper's problem itself, e.g.
  ((1.32*32.1)+(1.42-8.20))=35.592

The trees are not scaled because no single scale keeps them the same problem: dividing every
operand by s divides a sum by s but a product by s², so the scaled expression has another value
(and sometimes another sign) than the paper's. Their answers therefore reach 1e4 (two operands),
1e6 (three) and 1e8 (four); the smallest nonzero ones are 0.01 and a few are exactly 0. The
paper's answer to such a range is multi-scale xVal (its eq. 1: a number x is embedded as
Σ tanh(x·10^i)·[NUM_i], i = -k..k, and the number head is trained on the normalised MSE), so an
xVal model of these variants is trained with --k=4 (dev/config/arithmetic_ops_small.py); plain xVal
(k = 0) would multiply an embedding by numbers up to 1e8.

    python prepare/arithmetic.py --variant ops2 --size small      # -> data/arithmetic_ops2
    python prepare/arithmetic.py --variant mult5 --size paper

The right-hand side is computed in exact decimal arithmetic, so it is never 35.592000000000006.
"""

import os
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import base_parser, one_line_errors, write_dataset  # noqa: E402

VARIANTS = {"mult3": 3, "mult4": 4, "mult5": 5, "ops2": 2, "ops3": 3, "ops4": 4}
OPERATORS = "+-*"


def plain(d):
    """An exact Decimal as plain positional text (no exponent, no trailing zeros)."""
    s = format(d.normalize(), "f")
    return "0" if s in ("0", "-0") else s


def operand(rng):
    """10^U(0,2) with 3 significant digits, trailing zeros kept (8.20)."""
    x = Decimal(repr(float(10 ** rng.uniform(0, 2))))
    x = x.quantize(Decimal(1).scaleb(x.adjusted() - 2))  # 3 significant digits, half-even
    # a carry (99.96 -> 100.0) adds a 4th: drop it
    return x.quantize(Decimal(1).scaleb(x.adjusted() - 2))


def expression(rng, n_operands):
    """(text, exact value) of a random binary tree with n_operands leaves."""
    if n_operands == 1:
        x = operand(rng)
        return str(x), x
    left = int(rng.integers(1, n_operands))  # leaves in the left subtree
    lt, lv = expression(rng, left)
    rt, rv = expression(rng, n_operands - left)
    op = OPERATORS[int(rng.integers(len(OPERATORS)))]
    value = lv + rv if op == "+" else lv - rv if op == "-" else lv * rv
    return f"({lt}{op}{rt})", value


def make_sample(rng, split, variant):
    n = VARIANTS[variant]
    if variant.startswith("mult"):
        a, b = (int(rng.integers(10 ** (n - 1), 10**n)) for _ in range(2))
        return f"0.{a}*0.{b}=0.{a * b:0{2 * n}d}"  # every digit of a, b and a·b kept
    text, value = expression(rng, n)
    return f"{text}={plain(value)}"


class Sample:
    """make_sample bound to one variant, picklable for the worker pool."""

    def __init__(self, variant):
        self.variant = variant

    def __call__(self, rng, split):
        return make_sample(rng, split, self.variant)


if __name__ == "__main__":
    one_line_errors()
    p = base_parser(__doc__.split("\n\n")[0], "data/arithmetic_<variant>")
    p.add_argument(
        "--variant",
        default="ops2",
        choices=list(VARIANTS),
        help="mult3|mult4|mult5: n-digit multiplication; ops2|ops3|ops4: n-operand expressions",
    )
    args = p.parse_args()
    args.out = args.out.replace("<variant>", args.variant)
    n = VARIANTS[args.variant]
    scales = (
        {"operands": f"1e-{n}", "result": f"1e-{2 * n}"}
        if args.variant.startswith("mult")
        else {"operands": "1", "result": "1"}
    )
    write_dataset(
        args,
        Sample(args.variant),
        meta={
            "dataset": "arithmetic",
            "variant": args.variant,
            "scales": scales,  # number in the text = number of the original problem × scale
        },
    )
