"""prepare/arithmetic.py: every written equation is exact and is the paper's problem up to its stated scale."""
import math
import os
import re
import sys
from decimal import Decimal

import pytest
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import arithmetic  # noqa: E402
from common import sample_rng  # noqa: E402

TOKEN = re.compile(r"\(|\)|[+*]|-(?=[0-9(])|[0-9]+\.?[0-9]*")


def evaluate(text):
    """(exact value, operands) of a fully parenthesised expression, parsed with Decimal only."""
    tokens = TOKEN.findall(text)
    assert "".join(tokens) == text, f"unexpected characters in {text!r}"
    pos = 0

    def term():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok != "(":
            return Decimal(tok), [tok]
        left, lops = term()
        op = tokens[pos]
        pos += 1
        right, rops = term()
        assert tokens[pos] == ")", f"unbalanced parentheses in {text!r}"
        pos += 1
        value = left + right if op == "+" else left - right if op == "-" else left * right
        return value, lops + rops

    value, operands = term()
    assert pos == len(tokens), f"trailing text in {text!r}"
    return value, operands


def samples(variant, n=400):
    return [arithmetic.make_sample(sample_rng(7, 0, i), "train", variant) for i in range(n)]


@pytest.mark.parametrize("variant", ["ops2", "ops3", "ops4"])
def test_operand_trees_are_the_papers_problems_and_exact(variant):
    n_operands = arithmetic.VARIANTS[variant]
    ops = "".join(re.sub(r"[0-9.]|(?<=[(=])-", "", line.split("=")[0]) for line in samples(variant))
    assert {"+", "-", "*"} <= set(ops)  # every operator is used
    for line in samples(variant):
        lhs, rhs = line.split("=")
        value, operands = evaluate(lhs)
        assert Decimal(rhs) == value, f"{line!r}: the left-hand side is {value}"
        assert len(operands) == n_operands, line
        for op in operands:  # unscaled 10^U(0,2) with 3 significant digits, trailing zeros kept
            digits = op.replace(".", "").lstrip("0")
            assert len(digits) == 3 and 1 <= Decimal(op) <= 100, f"{op!r} in {line!r}"


@pytest.mark.parametrize("variant", ["mult3", "mult4", "mult5"])
def test_multiplications_are_integer_problems_with_the_point_moved(variant):
    n = arithmetic.VARIANTS[variant]
    for line in samples(variant, 200):
        m = re.fullmatch(r"0\.([0-9]+)\*0\.([0-9]+)=0\.([0-9]+)", line)
        assert m, line
        a, b, c = m.groups()
        assert len(a) == len(b) == n and len(c) == 2 * n and a[0] != "0" and b[0] != "0", line
        assert int(a) * int(b) == int(c), line  # operands × 10^n, the product × 10^2n
        assert Decimal("0." + a) * Decimal("0." + b) == Decimal("0." + c), line


def test_the_papers_example_is_exact_unscaled():
    assert evaluate("((1.32*32.1)+(1.42-8.20))")[0] == Decimal("35.592")


@pytest.mark.parametrize("x,written", [(99.96, "100"), (9.996, "10.0"), (99.94, "99.9"), (1.0, "1.00")])
def test_an_operand_keeps_three_significant_digits_when_rounding_carries(x, written):
    class FixedDraw:  # an rng whose uniform() returns the exponent of x
        def uniform(self, lo, hi):
            return math.log10(x)

    assert str(arithmetic.operand(FixedDraw())) == written
