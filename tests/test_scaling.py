"""prepare/scaling.py: numbers scaled to order 1 and written with the digits that give the input back."""
from decimal import Decimal

import numpy as np
import pytest
import scaling
from helpers import own_table
from records import Part


def column(tmp_path, numbers):
    return own_table(tmp_path, "x\n" + "".join(f"{x}\n" for x in numbers))


@pytest.mark.parametrize("numbers", [["1013.25", "1009.5", "1020", "998.75"], ["0.001", "-0.0025", "0.0004"],
                                     ["123456789.123", "123456790.5", "123456788"], ["7", "7", "7"]])
def test_scaled_numbers_written_and_undone_give_back_every_digit_of_the_input(tmp_path, numbers):
    table = column(tmp_path, numbers)
    none = Part(np.empty((0, 1), int))
    scales, digits, largest, ranges = scaling.scale(table, [Part(np.arange(table.n)[:, None]), none, none], ["x"],
                                                    "auto")
    s = scales["x"]
    for x, w in zip(map(Decimal, numbers), scaling.written(table.cols["x"].x, s, digits["x"])):
        assert Decimal(repr(float(w) * s["spread"] + s["center"])).quantize(x) == x, (x, w, s, digits)
    assert largest["x"] <= 3 and ranges["x"] == [min(map(float, numbers)), max(map(float, numbers))]


def test_scale_none_writes_the_numbers_as_they_are(tmp_path):
    table = column(tmp_path, ["1013.25", "2.5"])
    scales, digits, _, _ = scaling.scale(table, [Part(np.arange(2)[:, None])] * 3, ["x"], "none")
    assert scales == {"x": {"center": 0.0, "spread": 1.0}} and digits == {"x": 2}
    assert list(scaling.written(table.cols["x"].x, scales["x"], 2)) == ["1013.25", "2.5"]


def test_a_constant_key_gets_spread_1_and_a_note(tmp_path, capsys):
    scale = scaling.scale_of(column(tmp_path, ["5", "5"]), Part(np.arange(2)[:, None]), "x", "auto")
    assert scale == {"center": 5.0, "spread": 1.0} and "is constant in train" in capsys.readouterr().out
    assert list(scaling.written([5.0], scale, 0)) == ["0"]
