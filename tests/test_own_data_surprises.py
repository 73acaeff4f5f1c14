"""prepare/text.py on what a new user's files hold: no header row, --text on a JSON number key,
numbers far from order 1 once scaled, which key to predict, groups of rows (--group), short splits,
Windows line ends and a stray carriage return far into a file."""
import json
import os
import re
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import text  # noqa: E402


def prepare(tmp_path, content, *flags, name="data.csv"):
    (tmp_path / name).write_bytes(content.encode() if isinstance(content, str) else content)
    out = tmp_path / "out"
    text.main([str(tmp_path / name), "--out", str(out), "--force", *flags])
    return out, json.loads((out / "meta.json").read_text())


def read(out, split):
    return [json.loads(line) for line in (out / f"{split}.txt").read_text().splitlines()]


def test_a_file_without_a_header_row_is_refused(tmp_path):
    content = "".join(f"{i / 10},{3 + i % 4},{'ab'[i % 2]}\n" for i in range(1, 40))
    with pytest.raises(SystemExit, match=r"data.csv:1: the header holds numbers \(0.1, 4\): a file without a "
                                         r"header row\? .*add a line of names"):
        prepare(tmp_path, content)


def test_text_makes_a_json_number_key_words(tmp_path):
    content = "".join(json.dumps({"diet": i % 4 + 1, "w": 40 + i}) + "\n" for i in range(40))
    out, meta = prepare(tmp_path, content, "--text", "diet", name="d.jsonl")
    assert meta["text_keys"] == ["diet"] and "diet" not in meta["scales"]
    assert {r["diet"] for s in ("train", "val", "test") for r in read(out, s)} == {"_1", "_2", "_3", "_4"}


def test_numbers_far_from_order_1_once_scaled_are_warned_of(tmp_path, capsys):
    day = [1] * 60 + [40]  # a small spread beside one far value: |x| 7.8 once scaled
    prepare(tmp_path, "day,t\n" + "".join(f"{d},{np.sin(i):.3f}\n" for i, d in enumerate(day)))
    assert "warning: key 'day'" not in capsys.readouterr().out
    day = [1] * 300 + [40]  # |x| over 10
    prepare(tmp_path, "day,t\n" + "".join(f"{d},{np.sin(i):.3f}\n" for i, d in enumerate(day)))
    assert re.search(r"warning: key 'day': scaled, its numbers reach \|x\| = 1\d\.\d .*order 1",
                     capsys.readouterr().out)


def test_the_key_to_predict_is_said_and_target_names_it(tmp_path, capsys):
    content = "year,lat,mag,site\n" + "".join(f"{2000 + i // 10},{(i * 7) % 11 - 20.5},{4 + (i * 5) % 9 / 10},{'ab'[i % 2]}\n"
                                              for i in range(60))
    _, meta = prepare(tmp_path, content)
    assert meta["mask_key"] == "year"
    assert "note: eval.py and sample.py predict 'year' (the first key of numbers that varies); --target KEY " \
           "names the one to predict (year, lat, mag)" in capsys.readouterr().out
    _, meta = prepare(tmp_path, content, "--target", "mag")
    assert meta["mask_key"] == "mag" and "note: eval.py" not in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"--target site: not a key of numbers; expected one of year, lat, mag"):
        prepare(tmp_path, content, "--target", "site")


def test_groups_keep_their_rows_and_the_split_is_said(tmp_path, capsys):
    rows = [(a, day, 40 + 3 * day + a) for day in range(30) for a in range(4)]  # animals interleaved by day
    content = "animal,day,weight\n" + "".join(f"a{a},{d},{w}\n" for a, d, w in rows)
    out, meta = prepare(tmp_path, content, "--window", "5", "--group", "animal", "--split", "0.6,0.2,0.2")
    printed = capsys.readouterr().out
    assert meta["keys"] == ["day", "weight"] and meta["source"]["group"] == "animal"
    assert "split in time order within each group (animal)" in printed and "note: key 'animal' names each row's group" in printed
    s = meta["scales"]["day"]
    for split in ("train", "val", "test"):
        for r in read(out, split):
            days = [round(v * s["spread"] + s["center"]) for v in r["day"]]
            assert days == list(range(days[0], days[0] + 5))  # one animal's consecutive days, never two animals
    assert meta["splits"] == {"train": 12, "val": 4, "test": 4}
    assert "warning: the test split holds 4 record(s): a score over fewer than 30 says little" in printed
    assert "--context-before" in printed
    out, meta = prepare(tmp_path, content, "--window", "5", "--group", "animal", "--split", "0.6,0.2,0.2",
                        "--stride", "1", "--context-before")
    assert meta["splits"]["test"] == 4 * 6  # every test day ends a window, its context the days before


def test_windows_line_ends_read_as_unix_ones_and_a_stray_carriage_return_far_in_is_refused(tmp_path):
    lines = ["t,p"] + [f"{i},{i % 7}" for i in range(70000)]
    out, _ = prepare(tmp_path, "\n".join(lines) + "\n")
    unix = (out / "train.txt").read_text()
    out, _ = prepare(tmp_path, "\r\n".join(lines) + "\r\n")
    assert (out / "train.txt").read_text() == unix
    lines[69000] = "3\r,4"
    with pytest.raises(SystemExit, match=r"data.csv:69001: a lone carriage return \(\\r\) at column 2"):
        prepare(tmp_path, "\n".join(lines) + "\n")


def test_a_key_that_goes_up_by_a_rounded_step_is_noted(tmp_path, capsys):
    months = "time,t\n" + "".join(f"{1920 + i / 12:.11f},{np.sin(i):.3f}\n" for i in range(60))
    _, meta = prepare(tmp_path, months)
    assert "note: key 'time' goes up by 0.08333333333 from row to row" in capsys.readouterr().out
    assert meta["mask_key"] == "t"
    steps = "n,t\n" + "".join(f"{i + i // 2},{np.sin(i):.3f}\n" for i in range(60))  # steps of 1 and 2
    prepare(tmp_path, steps)
    assert "note: key 'n' goes up" not in capsys.readouterr().out


def test_a_record_that_omit_leaves_empty_is_said(tmp_path, capsys):
    content = "date,co2\n" + "".join(f"2001-01-{1 + i % 28:02d},{'NA' if i % 9 == 4 else f'{300 + i / 7:.3f}'}\n"
                                      for i in range(90))  # one key, a gap in 10 windows of 3 rows
    _, meta = prepare(tmp_path, content, "--window", "3", "--missing", "omit")
    printed = capsys.readouterr().out
    assert "note: 10 record(s) left out: every key of theirs missing" in printed
    assert "co2 10 windows that leave the key out (omit)" in printed
    assert sum(meta["splits"].values()) == 30 - 10


def test_a_file_of_many_columns_needs_no_file_per_column_open(tmp_path):
    import resource
    import subprocess
    (tmp_path / "wide.csv").write_text(",".join(f"c{j}" for j in range(120)) + "\n" + "".join(
        ",".join(f"{(i * j) % 97 / 10}" for j in range(120)) + "\n" for i in range(40)))
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))  # fewer than the columns
    r = subprocess.run([sys.executable, os.path.join(ROOT, "prepare", "text.py"), str(tmp_path / "wide.csv"),
                        "--out", str(tmp_path / "out")], preexec_fn=limit, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["keys"][-1] == "c119"
