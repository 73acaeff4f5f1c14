"""prepare/records.py: keys cleaned, rows made records (windows), split; missing values left out."""
import re

import numpy as np
import pytest
import reading
import records
import text
from helpers import own_table


def args(*flags):
    return text.parse_args(["a.csv", "--out", "o", "--split", "0.6,0.2,0.2", "--seed", "1", *flags])


def test_a_split_in_time_order_puts_test_windows_last_a_random_one_follows_the_seed(tmp_path):
    table = own_table(tmp_path, "x\n" + "".join(f"{x}\n" for x in range(40)))
    parts, source = records.split_records(table, args("--window", "4", "--stride", "2"))
    assert source == {"files": ["a.csv"], "fractions": [0.6, 0.2, 0.2], "order": "time"}
    assert parts[0].rows.max() < parts[1].rows.min() and parts[1].rows.max() < parts[2].rows.min()
    assert parts[0].rows.min() == 0 and parts[2].rows.max() < 40
    # windows of consecutive rows
    assert parts[0].rows[:3].tolist() == [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7]]
    flags = args("--window", "4", "--stride", "1", "--context-before")
    parts, _ = records.split_records(table, flags)
    # every test row ends a window
    ends = [set(p.rows[:, -1].tolist()) for p in parts]
    assert ends[2] == set(range(32, 40)) and ends[1] == set(range(24, 32))
    assert parts[2].rows.min() == 29
    # at random: fixed by the seed, each split in file order
    rows = [[p.rows.ravel().tolist() for p in records.split_records(table, args("--seed", s))[0]]
            for s in ("1", "1", "2")]
    assert rows[0] == rows[1] != rows[2] and [len(p) for p in rows[0]] == [24, 8, 8]
    assert all(p == sorted(p) for p in rows[0]) and sorted(sum(rows[0], [])) == list(range(40))


def test_groups_keep_their_rows_together_in_time_or_by_group(tmp_path):
    table = own_table(tmp_path, "animal,w\n" + "".join(f"{'abc'[i % 3]},{i}\n" for i in range(60)))
    table.group = table.cols["animal"]
    animal = table.cols["animal"].code
    split = lambda *flags: records.split_records(table, args("--group", "animal", *flags))
    parts, source = split("--split", "0.5,0.25,0.25", "--window", "4", "--stride", "1")
    # no window mixes two animals
    assert all((animal[p.rows] == animal[p.rows[:, :1]]).all() for p in parts)
    assert source["group"] == "animal"
    assert {int(a) for a in animal[parts[2].rows[:, 0]]} == {0, 1, 2}
    # each animal in one split
    parts, _ = split("--split", "0.34,0.33,0.33", "--window", "2", "--order", "random")
    assert [len({int(a) for a in animal[p.rows.ravel()]}) for p in parts] == [1, 1, 1]
    with pytest.raises(SystemExit, match=r"3 groups give train/val/test 2/1/0; .*--order time"):
        split("--split", "0.6,0.3,0.1", "--window", "2", "--order", "random")


def test_a_split_emptied_by_missing_values_is_refused(tmp_path):
    table = own_table(tmp_path, "a,b\n1,\n2,3\n")
    part = records.Part(np.arange(2)[:, None])
    one = records.Part(np.array([[0]]))
    gaps = records.check_keys(table, "drop")[1]
    kept, _ = records.leave_out_missing([one, part, part], ["a", "b"], gaps, "drop")
    with pytest.raises(SystemExit, match="the train split holds no record; more data"):
        records.warn_short(kept, args())


def test_words_the_tokenizer_would_read_as_numbers_are_renamed_in_place(tmp_path, capsys):
    table = own_table(tmp_path, "pm2.5,room\n1,room 12\n")
    assert records.words_for_tokenizer(table) == {"pm2.5": "pm2_5", "room": "room"}
    assert list(table.cols) == ["pm2_5", "room"] and table.cols["room"].texts == ["room_12"]
    assert "written as one word" in capsys.readouterr().out
    # a key a.b beside a key b within a
    lines = '{"a.b": 1, "a": {"c": 2}}\n{"a.b": 3, "a": [{"b": 4}]}\n'
    with pytest.raises(SystemExit, match=r"d.jsonl:2: --mask_key names the key 'a.b' and 'b' within"):
        records.words_for_tokenizer(own_table(tmp_path, lines, name="d.jsonl"))


@pytest.mark.parametrize("files,noted", [
    (["2021-03-01 2021-03-02", "2021-01-01 2021-01-03 2021-01-02"], ["b.csv:4"]),
    # a time of day again: series interleaved; a date again: rows of one day
    (["2021-03-01T00:00 2021-03-01T00:00 2021-03-01T01:00"], ["a.csv:3"]),
    (["2021-03-01 2021-03-01 2021-03-02"], [])])
def test_dates_going_back_or_a_time_again_are_noted_within_a_file(tmp_path, capsys, files, noted):
    paths = [tmp_path / f"{name}.csv" for name in "ab"[: len(files)]]
    for path, dates in zip(paths, files):
        path.write_text("d,t\n" + "".join(f"{d},{i}\n" for i, d in enumerate(dates.split())))
    table = reading.read_files(list(map(str, paths)), args())
    table.group = None
    assert records.date_keys(table, None) == ["d"]
    out = capsys.readouterr().out
    assert re.findall(r"([^/]*): sort the file, or name each row's series with --group", out) == noted
