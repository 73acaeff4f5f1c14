"""prepare/scaling.py: numbers scaled to order 1, written with the digits that give them back."""
from decimal import Decimal

import numpy as np
import pytest
import scaling
from helpers import own_table, read_split
from records import Part


def scaled(tmp_path, numbers, mode):
    """A table of a key x, and scale()'s results with every row in every split."""
    table = own_table(tmp_path, "x\n" + "".join(f"{x}\n" for x in numbers))
    return table, *scaling.scale(table, [Part(np.arange(table.n)[:, None])] * 3, ["x"], mode)


@pytest.mark.parametrize("numbers, mode", [
    (["1013.25", "1009.5", "1020", "998.75"], "auto"), (["0.001", "-0.0025", "0.0004"], "auto"),
    (["123456789.123", "123456790.5", "123456788"], "auto"), (["7", "7", "7"], "auto"),
    (["1013.25", "2.5"], "none")])
def test_scaled_numbers_written_and_undone_give_back_every_digit_of_the_input(tmp_path, capsys, numbers, mode):
    table, scales, digits, largest, ranges = scaled(tmp_path, numbers, mode)
    s = scales["x"]
    written = list(scaling.written(table.cols["x"].x, s, digits["x"]))
    for x, w in zip(map(Decimal, numbers), written):
        undone = Decimal(repr(float(w) * s["spread"] + s["center"]))
        assert undone.quantize(x) == x, (x, w, s, digits)
    assert ranges["x"] == [min(map(float, numbers)), max(map(float, numbers))]
    assert largest["x"] <= 3 or mode == "none"
    # a constant key: spread 1, written 0, and a note
    if numbers == ["7"] * 3:
        assert s == {"center": 7.0, "spread": 1.0} and written == ["0"] * 3
        assert "is constant in train" in capsys.readouterr().out
    # --scale none: the numbers as they are
    if mode == "none":
        assert s == {"center": 0.0, "spread": 1.0} and digits == {"x": 2} and written == numbers


def test_scale_record_divides_each_window_by_the_mean_of_all_but_its_last(tmp_path):
    import text
    y = [round(100 * 1.02 ** i + 5 * (i % 4), 1) for i in range(60)]
    for times in (1, 10):
        y[-1] *= times
        (tmp_path / "g.csv").write_text("y\n" + "".join(f"{v}\n" for v in y))
        text.main([str(tmp_path / "g.csv"), "--out", str(tmp_path / "d"), "--force", "--window=6",
                   "--stride=1", "--scale=record", "--context-before"])
        test = [r["y"] for r in read_split(tmp_path / "d")]
        levels = [r["y"] for r in read_split(tmp_path / "d", "test.levels")]
        windows = [y[i - 5 : i + 1] for i in range(60 - len(test), 60)]
        assert levels == pytest.approx([np.mean(w[:-1]) for w in windows], rel=1e-12)
        assert [v * level for w, level in zip(test, levels) for v in w] == pytest.approx(
            [v for w in windows for v in w], abs=0.05)
        # the value to predict changes neither its record's other numbers nor the level
        if times > 1:
            assert test[-1][:-1] == before and levels[-1] == level
        before, level = test[-1][:-1], levels[-1]
    with pytest.raises(SystemExit, match="--scale record goes with --window N"):
        text.parse_args(["g.csv", "--out", "e", "--scale=record"])
