"""Arithmetic of the paper (App. A), exact, one sample a line: n-digit products scaled to order 1,
or random trees of + - * over n operands (prepare/README.md#arithmetic-arithmeticpy)."""

import functools
from decimal import Decimal

from common import base_parser, one_line_errors, write_dataset

VARIANTS = {"mult3": 3, "mult4": 4, "mult5": 5, "ops2": 2, "ops3": 3, "ops4": 4}
OPERATORS = "+-*"


def plain(d):
    """An exact Decimal as plain text: no exponent, no trailing zeros."""
    s = format(d.normalize(), "f")
    return "0" if s in ("0", "-0") else s


def operand(rng):
    """10^U(0,2) with 3 significant digits, trailing zeros kept (8.20)."""
    x = Decimal(repr(float(10 ** rng.uniform(0, 2))))
    # 3 significant digits, half-even; again, as a carry (99.96 -> 100.0) adds a 4th
    x = x.quantize(Decimal(1).scaleb(x.adjusted() - 2))
    return x.quantize(Decimal(1).scaleb(x.adjusted() - 2))


def expression(rng, n_operands):
    """(text, exact value) of a random tree with n_operands leaves."""
    if n_operands == 1:
        x = operand(rng)
        return str(x), x
    # leaves in the left subtree
    left = int(rng.integers(1, n_operands))
    lt, lv = expression(rng, left)
    rt, rv = expression(rng, n_operands - left)
    op = OPERATORS[int(rng.integers(len(OPERATORS)))]
    value = lv + rv if op == "+" else lv - rv if op == "-" else lv * rv
    return f"({lt}{op}{rt})", value


def make_sample(rng, split, variant):
    n = VARIANTS[variant]
    if variant.startswith("mult"):
        a, b = (int(rng.integers(10 ** (n - 1), 10**n)) for _ in range(2))
        return f"0.{a}*0.{b}=0.{a * b:0{2 * n}d}"
    text, value = expression(rng, n)
    return f"{text}={plain(value)}"


if __name__ == "__main__":
    one_line_errors()
    p = base_parser("Arithmetic datasets of the paper (App. A).", "data/arithmetic_<variant>")
    variant = "mult3|mult4|mult5: n-digit multiplication; ops2|ops3|ops4: n-operand expressions"
    p.add_argument("--variant", default="ops2", choices=list(VARIANTS), help=variant)
    args = p.parse_args()
    args.out = args.out.replace("<variant>", args.variant)
    n = VARIANTS[args.variant]
    # a number in the text = the number of the original problem × scale
    scales = {"operands": "1", "result": "1"}
    if args.variant.startswith("mult"):
        scales = {"operands": f"1e-{n}", "result": f"1e-{2 * n}"}
    meta = {"dataset": "arithmetic", "variant": args.variant, "scales": scales}
    write_dataset(args, functools.partial(make_sample, variant=args.variant), meta)
