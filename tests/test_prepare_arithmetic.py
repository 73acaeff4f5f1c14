"""prepare/arithmetic.py: every equation is exact and the paper's problem up to its stated scale."""
import math
import re
from decimal import Decimal
from types import SimpleNamespace

import pytest
from helpers import generated

import arithmetic


def evaluate(text):
    """(exact value, operands) of a fully parenthesised expression."""
    tree = re.sub(r"[0-9.]+", "N", text)
    while tree != "N":  # each (N op N) becomes one N
        assert re.search(r"\(N[-+*]N\)", tree), f"not fully parenthesised: {text!r}"
        tree = re.sub(r"\(N[-+*]N\)", "N", tree)
    return eval(re.sub(r"[0-9.]+", r"Decimal('\g<0>')", text)), re.findall(r"[0-9.]+", text)


def samples(variant, n=400):
    return generated(lambda rng, split: arithmetic.make_sample(rng, split, variant), ["train"], n)["train"]


@pytest.mark.parametrize("variant", ["ops2", "ops3", "ops4"])
def test_operand_trees_are_the_papers_problems_and_exact(variant):
    lines = samples(variant)
    assert {"+", "-", "*"} <= set("".join(line.split("=")[0] for line in lines))  # every operator is used
    for line in lines:
        lhs, rhs = line.split("=")
        value, operands = evaluate(lhs)
        assert Decimal(rhs) == value and len(operands) == arithmetic.VARIANTS[variant], line
        for op in operands:  # unscaled 10^U(0,2) with 3 significant digits, trailing zeros kept
            assert len(op.replace(".", "").lstrip("0")) == 3 and 1 <= Decimal(op) <= 100, f"{op!r} in {line!r}"
    assert evaluate("((1.32*32.1)+(1.42-8.20))")[0] == Decimal("35.592")  # the paper's example


@pytest.mark.parametrize("variant", ["mult3", "mult4", "mult5"])
def test_multiplications_are_integer_problems_with_the_point_moved(variant):
    n = arithmetic.VARIANTS[variant]
    for line in samples(variant, 200):
        a, b, c = re.fullmatch(r"0\.([0-9]+)\*0\.([0-9]+)=0\.([0-9]+)", line).groups()
        assert len(a) == len(b) == n and len(c) == 2 * n and a[0] != "0" and b[0] != "0", line
        assert int(a) * int(b) == int(c), line  # operands × 10^n, the product × 10^2n


@pytest.mark.parametrize("x,written", [(99.96, "100"), (9.996, "10.0"), (99.94, "99.9"), (1.0, "1.00")])
def test_a_carry_keeps_three_digits(x, written):
    rng = SimpleNamespace(uniform=lambda lo, hi: math.log10(x))
    assert str(arithmetic.operand(rng)) == written
