"""prepare/text.py's steps, each called on its own: reading (prepare/reading.py), records and splits
(prepare/records.py) and the scaling (prepare/scaling.py), and a main() that reads as those steps."""
import argparse
import ast
import json
import os
import sys
from decimal import Decimal

import numpy as np
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
                    fractions=[0.6, 0.2, 0.2], seed=1, missing="refuse", scale="auto", group=None,
                    context_before=False, target=None, **READ)
    return argparse.Namespace(**{**defaults, **flags})


def table_of(tmp_path, content, name="d.csv", **flags):
    (tmp_path / name).write_text(content)
    return reading.read_file(str(tmp_path / name), argparse.Namespace(**{**READ, **flags}))


def column(numbers):
    return "x\n" + "".join(f"{x}\n" for x in numbers)


@pytest.mark.parametrize("numbers", [["1013.25", "1009.5", "1020", "998.75"], ["0.001", "-0.0025", "0.0004"],
                                     ["123456789.123", "123456790.5", "123456788"], ["7", "7", "7"]])
def test_scaled_numbers_written_and_undone_give_back_every_digit_of_the_input(tmp_path, numbers):
    table = table_of(tmp_path, column(numbers))
    parts = [records.Part(np.arange(table.n)[:, None]), records.Part(np.empty((0, 1), int)),
             records.Part(np.empty((0, 1), int))]
    scales, digits, largest, ranges = scaling.scale(table, parts, ["x"], "auto")
    s = scales["x"]
    for x, w in zip(map(Decimal, numbers), scaling.written(table.cols["x"].x, s, digits["x"])):
        restored = Decimal(repr(float(w) * s["spread"] + s["center"])).quantize(x)
        assert restored == x, (x, w, s, digits)
    assert largest["x"] <= 3 and ranges["x"] == [min(map(float, numbers)), max(map(float, numbers))]


def test_scale_none_writes_the_numbers_as_they_are(tmp_path):
    table = table_of(tmp_path, column(["1013.25", "2.5"]))
    parts = [records.Part(np.arange(2)[:, None])] * 3
    scales, digits, _, _ = scaling.scale(table, parts, ["x"], "none")
    assert scales == {"x": {"center": 0.0, "spread": 1.0}} and digits == {"x": 2}
    assert list(scaling.written(table.cols["x"].x, scales["x"], 2)) == ["1013.25", "2.5"]


def test_a_constant_key_gets_spread_1_and_a_note(tmp_path, capsys):
    table = table_of(tmp_path, column(["5", "5"]))
    scales = scaling.scales_of(table, records.Part(np.arange(2)[:, None]), ["x"], "auto")
    assert scales["x"] == {"center": 5.0, "spread": 1.0} and "is constant in train" in capsys.readouterr().out
    assert list(scaling.written([5.0], scales["x"], 0)) == ["0"]


def test_reading_a_csv_gives_numbers_text_and_missing_values_with_their_lines(tmp_path):
    table = table_of(tmp_path, "t;p;sky\n1;1013,5;dry\n2;;rain\n", decimal_comma=True)
    assert [table.where(r) for r in range(table.n)] == [f"{tmp_path / 'd.csv'}:2", f"{tmp_path / 'd.csv'}:3"]
    t, p, sky = (table.cols[k] for k in ("t", "p", "sky"))
    assert list(t.x) == [1.0, 2.0] and p.x[0] == 1013.5 and p.code[1] == reading.GAP
    assert [sky.texts[c] for c in sky.code] == ["dry", "rain"] and list(p.q_range) == [-1, -1]


def test_a_block_of_rows_at_a_time_names_the_same_lines(tmp_path, monkeypatch):
    """Rows read in blocks (here of 8 bytes) keep their lines, a quoted line break included."""
    content = "t,note\n" + "".join(f'{i},"{"a" + chr(10) + "b" if i == 4 else "c"}"\n' for i in range(8))
    whole = table_of(tmp_path, content)
    monkeypatch.setattr(reading, "BLOCK", 8)
    blocks = table_of(tmp_path, content)
    assert list(blocks.line) == list(whole.line) == [2, 3, 4, 5, 6, 8, 9, 10]
    assert list(blocks.cols["t"].x) == list(range(8)) and blocks.cols["note"].texts == ["c", "a\nb"]


def test_reading_a_json_array_keeps_the_digits_and_names_each_record(tmp_path):
    table = table_of(tmp_path, '[{"a": 1.50, "b": ["x", null]},\n {"a": 2, "b": ["NA", "y"]}]', name="d.json")
    assert table.where(1).endswith("d.json:2 (record 2)") and list(table.cols["a"].q_range) == [-2, 0]
    assert table.cols["b"].nested == {0: ["x", None], 1: [None, "y"]} and list(table.cols["b"].gap) == [True, True]


def test_words_the_tokenizer_would_read_as_numbers_are_renamed_in_place(tmp_path, capsys):
    table = table_of(tmp_path, "pm2.5,room\n1,room 12\n")
    assert reading.words_for_tokenizer(table) == {"pm2.5": "pm2_5", "room": "room"}
    assert list(table.cols) == ["pm2_5", "room"] and table.cols["room"].texts == ["room_12"]
    assert "written as one word" in capsys.readouterr().out


def test_windows_take_consecutive_rows():
    made = records.windows(np.arange(10, 17), 3, 2)
    assert made.tolist() == [[10, 11, 12], [12, 13, 14], [14, 15, 16]]
    assert records.windows(np.arange(3), 1, 1).tolist() == [[0], [1], [2]]


def test_a_split_in_time_order_puts_every_test_window_after_every_training_window(tmp_path):
    table = table_of(tmp_path, column(range(40)))
    parts, source = records.split_records(table, args(window=4, stride=2, order="time"))
    assert source == {"files": ["a.csv"], "fractions": [0.6, 0.2, 0.2], "order": "time"}
    assert parts[0].rows.max() < parts[1].rows.min() and parts[1].rows.max() < parts[2].rows.min()
    assert parts[0].rows.min() == 0 and parts[2].rows.max() < 40


def test_context_before_lets_every_test_row_end_a_window(tmp_path):
    table = table_of(tmp_path, column(range(40)))
    parts, _ = records.split_records(table, args(window=4, stride=1, order="time", context_before=True))
    ends = [set(p.rows[:, -1].tolist()) for p in parts]
    assert ends[2] == set(range(32, 40)) and ends[1] == set(range(24, 32)) and parts[2].rows.min() == 29


def test_groups_keep_their_rows_together_in_time_or_by_group(tmp_path, capsys):
    content = "animal,w\n" + "".join(f"{'abc'[i % 3]},{i}\n" for i in range(60))
    table = table_of(tmp_path, content)
    table.group = table.cols["animal"]
    parts, source = records.split_records(table, args(window=4, order="time", group="animal", fractions=[0.5, 0.25, 0.25]))
    animal = table.cols["animal"].code
    assert all((animal[p.rows] == animal[p.rows[:, :1]]).all() for p in parts)  # no window mixes two animals
    assert source["group"] == "animal" and {int(a) for a in animal[parts[2].rows[:, 0]]} == {0, 1, 2}
    parts, _ = records.split_records(table, args(window=2, group="animal", fractions=[0.34, 0.33, 0.33]))
    assert [len({int(a) for a in animal[p.rows.ravel()]}) for p in parts] == [1, 1, 1]  # each animal in one split
    with pytest.raises(SystemExit, match=r"3 groups give train/val/test 2/1/0; .*--order time"):
        records.split_records(table, args(window=2, group="animal", fractions=[0.6, 0.3, 0.1]))


def test_a_random_split_is_fixed_by_the_seed_and_keeps_file_order(tmp_path):
    table = table_of(tmp_path, column(range(20)))
    split = [records.split_records(table, args(seed=s))[0] for s in (1, 1, 2)]
    rows = [[p.rows.ravel().tolist() for p in parts] for parts in split]
    assert rows[0] == rows[1] != rows[2] and [len(p) for p in rows[0]] == [12, 4, 4]
    assert all(p == sorted(p) for p in rows[0])


def test_missing_values_are_omitted_or_dropped_and_counted(tmp_path):
    table = table_of(tmp_path, "a,b\n1,\n2,3\n")
    part = records.Part(np.arange(2)[:, None])
    kept, missing = records.leave_out_missing(table, [part] * 3, ["a", "b"], "omit")
    assert kept[0].has("b").tolist() == [False, True] and kept[0].has("a").all() and missing == {"b": 3}
    kept, missing = records.leave_out_missing(table, [part] * 3, ["a", "b"], "drop")
    assert [len(p) for p in kept] == [1, 1, 1] and kept[0].rows.tolist() == [[1]]
    with pytest.raises(SystemExit, match="the train split holds no record once missing values are dropped"):
        records.leave_out_missing(table, [records.Part(np.array([[0]])), part, part], ["a", "b"], "drop")


def test_the_lines_written_read_back_as_the_records(tmp_path):
    (tmp_path / "d.csv").write_text("t,p,sky\n" + "".join(f"{i},{1000 + i % 7}.5,{'ab'[i % 2]}\n" for i in range(30)))
    text.main([str(tmp_path / "d.csv"), "--out", str(tmp_path / "out"), "--window", "3"])
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    lines = (tmp_path / "out" / "test.txt").read_text().splitlines()
    s = meta["scales"]["p"]
    record = json.loads(lines[0])
    assert list(record) == ["t", "p", "sky"] and record["sky"] == ["b", "a", "b"]  # rows 27-29: the last 10%
    assert [round(v * s["spread"] + s["center"], 1) for v in record["p"]] == [1006.5, 1000.5, 1001.5]


def test_main_reads_as_its_steps_in_at_most_60_lines():
    source = open(os.path.join(ROOT, "prepare", "text.py"), encoding="utf-8").read()
    main = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert main.end_lineno - main.lineno + 1 <= 60
    calls = sorted((n.lineno, n.col_offset, n.func.id) for n in ast.walk(main)
                   if isinstance(n, ast.Call) and isinstance(n.func, ast.Name))
    called = [name for _, _, name in calls]
    steps = ["read_file", "clean_keys", "split_records", "leave_out_missing", "scale", "check_tokens",
             "write_lines", "report"]
    assert [c for c in called if c in steps] == steps
