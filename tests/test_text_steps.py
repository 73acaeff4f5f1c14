"""prepare/text.py's steps, each called on its own: reading (prepare/reading.py), records and splits
(prepare/records.py) and the scaling (prepare/scaling.py), and a main() that reads as those steps."""
import argparse
import ast
import json
import os
import sys
from decimal import Decimal

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import reading  # noqa: E402
import records  # noqa: E402
import scaling  # noqa: E402
import text  # noqa: E402

READ = dict(columns=None, text=set(), delimiter=None, decimal_comma=False)


def args(**flags):
    """text.py's settings after parse_args, as a step sees them."""
    defaults = dict(files=["a.csv"], val=None, test=None, window=1, stride=1, order="random",
                    fractions=[0.6, 0.2, 0.2], seed=1, missing="refuse", scale="auto", **READ)
    return argparse.Namespace(**{**defaults, **flags})


def as_records(numbers, key="x"):
    """(record, where, places) of one number each, as records.split_records makes them."""
    return [({key: Decimal(x)}, f"f:{i + 2}", [(0, i)]) for i, x in enumerate(numbers)]


@pytest.mark.parametrize("numbers", [["1013.25", "1009.5", "1020", "998.75"], ["0.001", "-0.0025", "0.0004"],
                                     ["123456789.123", "123456790.5", "123456788"], ["7", "7", "7"]])
def test_scaled_numbers_written_and_undone_give_back_every_digit_of_the_input(numbers):
    parts = [as_records(numbers), [], []]
    scales, digits, writers = scaling.scale(parts, ["x"], "auto")
    s = scales["x"]
    for x in map(Decimal, numbers):
        written = float(writers["x"](x))
        restored = Decimal(repr(written * s["spread"] + s["center"])).quantize(x)
        assert restored == x, (x, writers["x"](x), s, digits)
    assert abs(scaling.largest(parts, "x", s)) <= 3


def test_scale_none_writes_the_numbers_as_they_are():
    scales, digits, writers = scaling.scale([as_records(["1013.25", "2.5"]), [], []], ["x"], "none")
    assert scales == {"x": {"center": 0.0, "spread": 1.0}} and digits == {"x": None}
    assert writers["x"](Decimal("1013.25")) == "1013.25"


def test_a_constant_key_gets_spread_1_and_a_note(capsys):
    scales = scaling.scales_of(as_records(["5", "5"]), ["x"], "auto")
    assert scales["x"] == {"center": 5.0, "spread": 1.0} and "is constant in train" in capsys.readouterr().out
    assert scaling.scaled(Decimal("5"), scales["x"], 0) == "0"


def test_reading_a_csv_gives_numbers_text_and_missing_values_with_their_lines(tmp_path):
    (tmp_path / "d.csv").write_text("t;p;sky\n1;1013,5;dry\n2;;rain\n")
    rows, noun = reading.read_file(str(tmp_path / "d.csv"), argparse.Namespace(**{**READ, "decimal_comma": True}))
    assert noun == "column" and [where for _, where in rows] == [f"{tmp_path / 'd.csv'}:2", f"{tmp_path / 'd.csv'}:3"]
    assert rows[0][0] == {"t": Decimal("1"), "p": Decimal("1013.5"), "sky": "dry"} and rows[1][0]["p"] is None


def test_reading_a_json_array_keeps_the_digits_and_names_each_record(tmp_path):
    (tmp_path / "d.json").write_text('[{"a": 1.50, "b": ["x", null]},\n {"a": 2, "b": ["NA", "y"]}]')
    rows, noun = reading.read_file(str(tmp_path / "d.json"), argparse.Namespace(**READ))
    assert noun == "key" and rows[1][1].endswith("d.json:2 (record 2)")
    assert str(rows[0][0]["a"]) == "1.50" and rows[1][0]["b"] == [None, "y"]


def test_words_the_tokenizer_would_read_as_numbers_are_renamed_in_place(capsys):
    rows = [({"pm2.5": Decimal(1), "room": "room 12"}, "f:2")]
    assert reading.words_for_tokenizer(rows) == {"pm2.5": "pm2_5", "room": "room"}
    assert rows[0][0] == {"pm2_5": Decimal(1), "room": "room_12"} and "written as one word" in capsys.readouterr().out


def test_windows_take_consecutive_rows_and_name_the_rows_they_hold():
    rows = [({"t": Decimal(i)}, f"f:{i + 2}") for i in range(7)]
    made = records.windows(rows, 3, 2, file=1, first=10)
    assert [r["t"] for r, _, _ in made] == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    assert [w for _, w, _ in made] == ["f:2", "f:4", "f:6"] and made[1][2] == [(1, 12), (1, 13), (1, 14)]
    assert [r for r, _, _ in records.windows(rows, 1, 1, file=0)][:2] == [rows[0][0], rows[1][0]]


def test_a_split_in_time_order_puts_every_test_window_after_every_training_window():
    rows = [({"t": Decimal(i)}, f"f:{i + 2}") for i in range(40)]
    parts, source = records.split_records([("f", rows, "column")], args(window=4, stride=2, order="time"))
    assert source == {"files": ["a.csv"], "fractions": [0.6, 0.2, 0.2], "order": "time"}
    last = [max(row for part in split for _, _, places in split for _, row in places) for split in parts]
    first = [min(row for _, _, places in split for _, row in places) for split in parts]
    assert last[0] < first[1] and last[1] < first[2] and first[0] == 0
    assert records.rows_in(parts) <= {(0, i) for i in range(40)}


def test_a_random_split_is_fixed_by_the_seed_and_keeps_file_order():
    rows = [({"t": Decimal(i)}, f"f:{i + 2}") for i in range(20)]
    split = [records.split_records([("f", rows, "column")], args(seed=s))[0] for s in (1, 1, 2)]
    assert split[0] == split[1] != split[2] and [len(p) for p in split[0]] == [12, 4, 4]
    assert all([r["t"] for r, _, _ in p] == sorted(r["t"] for r, _, _ in p) for p in split[0])


def test_missing_values_are_omitted_or_dropped_and_counted():
    part = [({"a": Decimal(1), "b": None}, "f:2", [(0, 0)]), ({"a": Decimal(2), "b": Decimal(3)}, "f:3", [(0, 1)])]
    kept, missing = records.leave_out_missing([part, part, part], ["a", "b"], "omit")
    assert kept[0][0][0] == {"a": Decimal(1)} and missing == {"b": 3}
    kept, missing = records.leave_out_missing([part, part, part], ["a", "b"], "drop")
    assert [len(p) for p in kept] == [1, 1, 1] and kept[0][0][1] == "f:3"
    with pytest.raises(SystemExit, match="the train split holds no record once missing values are dropped"):
        records.leave_out_missing([part[:1], part, part], ["a", "b"], "drop")


def test_the_steps_called_one_by_one_write_what_main_writes(tmp_path):
    (tmp_path / "d.csv").write_text("t,p,sky\n" + "".join(f"{i},{1000 + i % 7}.5,{'ab'[i % 2]}\n" for i in range(30)))
    path = str(tmp_path / "d.csv")
    text.main([path, "--out", str(tmp_path / "out")])
    a = args(files=[path], fractions=[0.8, 0.1, 0.1], seed=1337)
    files = [(path, *reading.read_file(path, a))]
    keys, kind, _, _ = text.clean_keys(files, a.text)
    records.check_values(files, keys, a.missing)
    parts, _ = records.split_records(files, a)
    parts, _ = records.leave_out_missing(parts, keys, a.missing)
    _, _, writers = scaling.scale(parts, [k for k in keys if "number" in kind[k]], a.scale)
    lines, vocab, _ = text.write_lines(parts, keys, writers)
    for split in records.SPLITS:
        assert lines[split] == (tmp_path / "out" / f"{split}.txt").read_text().splitlines()
    assert json.dumps(json.loads(lines["train"][0])["sky"]) in vocab


def test_main_reads_as_its_steps_in_at_most_60_lines():
    source = open(os.path.join(ROOT, "prepare", "text.py"), encoding="utf-8").read()
    main = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert main.end_lineno - main.lineno + 1 <= 60
    calls = sorted((n.lineno, n.col_offset, n.func.id) for n in ast.walk(main)
                   if isinstance(n, ast.Call) and isinstance(n.func, ast.Name))
    called = [name for _, _, name in calls]
    steps = ["read_file", "clean_keys", "split_records", "leave_out_missing", "scale", "write_lines", "report"]
    assert [c for c in called if c in steps] == steps
