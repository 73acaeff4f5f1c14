"""prepare/text.py: your own CSV or JSON lines become a dataset whose numbers are scaled to order 1,
the scales recorded so that the original numbers come back exactly; bad input is a one-line error."""
import argparse
import json
import os
import re
import sys
from decimal import Decimal

import numpy as np
import pytest

from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import text  # noqa: E402
from dataset import Split  # noqa: E402

CSV = "station,t,p,weather\n" + "".join(
    f"{'abc'[i % 3]},{10 + 7 * np.sin(i / 9) + i % 3:.2f},{1013 + 5 * np.cos(i / 7):.1f},{'rain' if i % 4 else 'dry'}\n"
    for i in range(60))
JSONL = "".join(json.dumps({"site": "ns"[i % 2], "t": [round(280 + i / 3 + k, 2) for k in range(3)], "h": 1e-3 * i})
                + "\n" for i in range(40))


def prepare(tmp_path, content, *flags, name="data.csv"):
    path = tmp_path / name
    path.write_text(content)
    out = tmp_path / "out"
    text.main([str(path), "--out", str(out), *flags])
    return out, json.loads((out / "meta.json").read_text())


def error(tmp_path, content, *flags, name="bad.csv"):
    (tmp_path / name).write_text(content)
    with pytest.raises(SystemExit) as e:
        text.main([str(tmp_path / name), "--out", str(tmp_path / "never"), *flags])
    assert not (tmp_path / "never").exists()
    message = str(e.value.code)
    assert "\n" not in message
    return message


def read(out, split):
    return [json.loads(line) for line in (out / f"{split}.txt").read_text().splitlines()]


def test_a_csv_becomes_a_dataset_that_tokenizes(tmp_path, capsys):
    out, meta = prepare(tmp_path, CSV)
    printed = capsys.readouterr().out
    assert meta["dataset"] == "text" and meta["window"] is None and meta["splits"] == {"train": 48, "val": 6, "test": 6}
    assert meta["keys"] == ["station", "t", "p", "weather"] and meta["text_keys"] == ["station", "weather"]
    assert set(meta["scales"]) == {"t", "p"} and abs(meta["scales"]["p"]["center"] - 1013) < 2
    for key in ("station: text, 3 value(s): a, b, c", "(x - ", "numbers per record: 2-2", '"rain"'):
        assert key in printed
    records = [r for split in ("train", "val", "test") for r in read(out, split)]
    assert len(records) == 60 and {r["station"] for r in records} == {"a", "b", "c"}
    train_p = np.array([r["p"] for r in read(out, "train")])
    assert abs(train_p.mean()) < 1e-3 and abs(train_p.std() - 1) < 1e-3  # order 1: centred, unit spread
    run("tokenize_numbers.py", str(out), "--encoding=xval", "--workers=1")
    assert len(Split(str(out), "test", "xval")) == 6


def test_json_lines_in_windows_tokenize_and_keep_their_layout(tmp_path):
    out, meta = prepare(tmp_path, JSONL, "--window", "3", "--split", "0.6,0.2,0.2", "--seed", "3", "--order", "random",
                        name="series.jsonl")
    assert meta["window"] == 3 and sum(meta["splits"].values()) == 13  # 40 records: 13 windows, 1 left out
    record = read(out, "train")[0]
    assert list(record) == ["site", "t", "h"] and len(record["site"]) == 3 and np.shape(record["t"]) == (3, 3)
    run("tokenize_numbers.py", str(out), "--encoding=xval", "--workers=1")
    assert len(Split(str(out), "train", "xval")) == meta["splits"]["train"]


@pytest.mark.parametrize("content,name", [(CSV, "data.csv"), (JSONL, "data.jsonl")])
def test_scales_are_recorded_and_undone_exactly(tmp_path, content, name):
    out, meta = prepare(tmp_path, content, name=name)
    inputs = {}  # (key, station/site, position) is not unique; compare the multisets of numbers per key
    if name.endswith(".csv"):
        import csv
        rows = list(csv.DictReader(content.splitlines()))
    else:
        rows = [json.loads(line, parse_float=Decimal, parse_int=Decimal) for line in content.splitlines()]
    for record in rows:
        for key in meta["scales"]:
            inputs.setdefault(key, []).extend(map(Decimal, np.ravel(record[key]).tolist()))
    for key, scale in meta["scales"].items():
        written = [x for split in ("train", "val", "test") for r in read(out, split)
                   for x in np.ravel(r[key])]
        restored = [Decimal(repr(float(x) * scale["spread"] + scale["center"])) for x in written]
        assert len(restored) == len(inputs[key])
        exact = sorted(r.quantize(x) for r, x in zip(sorted(restored), sorted(inputs[key])))
        assert exact == sorted(inputs[key]), key  # every digit written in the input comes back


def test_dates_are_left_out_and_text_with_digits_is_one_word_everywhere(tmp_path, capsys):
    """Dates (ISO, yyyymmdd, times) are dropped with a note; a key or text value the tokenizer would read as
    numbers (pm2.5, room 12, a ZIP code kept as text) is written as one word, so eval.py and sample.py read
    every record's numbers where prepare wrote them."""
    csv = "\ufeffdate,day,hour,site,room,zip,pm2.5\n" + "".join(
        f"2021-03-{d:02d},202103{d:02d},{d % 24:02d}:00,b7,room {d % 3},0{1000 + d % 2},{d / 4}\n" for d in range(1, 21))
    out, meta = prepare(tmp_path, csv, "--text", "zip")
    printed = capsys.readouterr().out
    assert meta["dates_left_out"] == ["date", "day", "hour"] and "note: key 'date' holds dates or times" in printed
    assert meta["keys"] == ["site", "room", "zip", "pm2_5"] and meta["renamed"] == {"pm2.5": "pm2_5"}
    records = [r for split in ("train", "val", "test") for r in read(out, split)]
    assert {r["room"] for r in records} == {"room_0", "room_1", "room_2"} and {r["zip"] for r in records} == {"_01000", "_01001"}
    from predict import masked_numbers
    from tokenize_numbers import split_text
    for split in ("train", "val", "test"):
        for i, line in enumerate((out / f"{split}.txt").read_text().splitlines()):
            assert masked_numbers(line, split_text(line), f"{split}:{i}", ["pm2_5"]) == {"pm2_5": [0]}  # the one number is pm2.5's
    run("tokenize_numbers.py", str(out), "--encoding=xval", "--workers=1")
    message = error(tmp_path, csv)  # without --text, a ZIP code would lose its leading zero
    assert re.search(r"bad.csv:2: column 'zip': '0100[01]' has a leading zero.*--text zip", message)


def test_val_and_test_files_and_an_unseen_text_value(tmp_path):
    (tmp_path / "val.csv").write_text("station,t\nb,1.5\n")
    (tmp_path / "test.csv").write_text("station,t\nz,1.5\n")
    (tmp_path / "train.csv").write_text("station,t\na,1.0\nb,2.0\n")
    flags = ["--val", str(tmp_path / "val.csv"), "--out", str(tmp_path / "o")]
    with pytest.raises(SystemExit, match=r"test.csv:2: .*'\"z\"', which no training record has"):
        text.main([str(tmp_path / "train.csv"), *flags, "--test", str(tmp_path / "test.csv")])
    (tmp_path / "test.csv").write_text("station,t\na,1.25\n")
    text.main([str(tmp_path / "train.csv"), *flags, "--test", str(tmp_path / "test.csv")])
    assert json.loads((tmp_path / "o" / "meta.json").read_text())["splits"] == {"train": 2, "val": 1, "test": 1}


def test_scale_none_keeps_numbers_and_warns(tmp_path, capsys):
    out, meta = prepare(tmp_path, CSV, "--scale", "none")
    assert meta["scales"]["p"] == {"center": 0.0, "spread": 1.0}
    assert all(1000 < r["p"] < 1020 for r in read(out, "train"))
    assert "warning: key 'p': numbers up to |x| = 10" in capsys.readouterr().out


def test_force_replaces_the_dataset_and_keeps_other_files(tmp_path):
    out, _ = prepare(tmp_path, CSV)
    (out / "lab_notes.txt").write_text("mine\n")
    with pytest.raises(SystemExit, match="--force"):
        prepare(tmp_path, CSV, "--seed", "2")
    _, meta = prepare(tmp_path, CSV, "--seed", "2", "--force")
    assert meta["source"]["seed"] == 2 and (out / "lab_notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("content,flags,name,expected", [
    ("a,b\n1,2\n3\n", [], "bad.csv", r"bad.csv:3: 1 cells, but the header \(.*bad.csv:1\) names 2 columns"),
    ("", [], "bad.csv", "bad.csv: empty file"),
    ("\n\n", [], "bad.jsonl", "bad.jsonl: empty file"),
    ('{"a":1,"b":2}\n{"a":3}\n', [], "bad.jsonl", "bad.jsonl:2: key 'b' is missing .*--missing=omit .*--missing=drop"),
    ('{"a":1}\n{"a":3,"c":4}\n', [], "bad.jsonl", "bad.jsonl:1: key 'c' is missing"),
    ('{"a":1}\n{"a":"rain"}\n', [], "bad.jsonl", "bad.jsonl:2: key 'a' holds text, but number"),
    ("a,b\n1,2\n,4\n", [], "bad.csv", "bad.csv:3: column 'a' is missing .*--missing=omit .*--missing=drop"),
    ("a,b\n1,2\n1.2.3,4\n5,6\n", [], "bad.csv", r"bad.csv:3: column 'a': '1.2.3' is not a number"),
    ("a,b\n1,2\n--5,4\n5,6\n", [], "bad.csv", r"bad.csv:3: column 'a': '--5' is not a number"),
    ('{"a":1.2.3}\n', [], "bad.jsonl", "bad.jsonl:1: not a JSON record"),
    ('{"a":1}\n{"a":NaN}\n', [], "bad.jsonl", "bad.jsonl:2: key 'a' is missing"),
    ('{"a":Infinity}\n', [], "bad.jsonl", "bad.jsonl:1: Infinity is not a finite number"),
    ("a,b\n1,2\n3,4\n", ["--window", "3", "--order", "random"], "bad.csv", "bad.csv:3: the file ends after 2 rows, before a window of 3"),
    ("a,b\n1,2\n3,4\n", ["--window", "3"], "bad.csv", r"bad.csv: --split 0.8,0.1,0.1 in time order cuts its 2 rows into 2/0/0"),
    ("a,b\n1,2\n3,4\n", [], "bad.csv", r"--split 0.8,0.1,0.1: 2 records give train/val/test"),
    ("a,a\n1,2\n", [], "bad.csv", "bad.csv:1: column 2 of the header is 'a' again"),
])
def test_bad_input_is_a_one_line_error_naming_file_and_line(tmp_path, content, flags, name, expected):
    assert re.search(expected, error(tmp_path, content, *flags, name=name))


LONG_CSV = "station,t,p\n" + "".join(f"{'ab'[i % 2]},{10 + 7 * np.sin(i / 9):.2f},{1013 + 5 * np.cos(i / 7):.1f}\n" for i in range(400))


GAPPY_CSV = re.sub(r",1\d{3}\.3\n", ",NA\n", LONG_CSV)  # p missing where its value ends in .3


@pytest.mark.parametrize("content, name, flags, key", [(LONG_CSV, "data.csv", ("--window", "4"), "t"),
                                                       (JSONL, "data.jsonl", (), "t"),
                                                       (GAPPY_CSV, "data.csv", ("--missing", "omit"), "p")])
def test_own_data_from_file_to_scores_in_original_units(tmp_path, content, name, flags, key):
    """The README's four commands: prepare/text.py, tokenize, train a tiny model, eval.py --mask_key."""
    out, meta = prepare(tmp_path, content, *flags, name=name)
    run("tokenize_numbers.py", str(out), "--encoding=xval", "--workers=1")
    flags = ("train.py", "config/own_small.py", f"--data_dir={out}", f"--out_dir={tmp_path / 'run'}", "--n_layer=1",
             "--n_head=2", "--n_embd=16", "--device=cpu", "--compile=False", "--max_iters=4", "--eval_interval=2",
             "--eval_batches=1", "--batch_size=8", "--micro_batch_size=8", "--warmup_iters=0")
    assert f"--mask_key={meta['mask_key']}" in run(*flags).stdout  # the hint names a key of numbers, not an index
    assert "choose another --out_dir" in run(*flags, check=False).stderr  # a second dataset: another out_dir
    r = run("eval.py", f"--ckpt={tmp_path / 'run' / 'ckpt_best.pt'}", f"--mask_key={key}")
    report = json.load(open(tmp_path / "run" / f"eval_{key}.json"))
    scores = report["splits"]["test"][key]
    spread = meta["scales"][key]["spread"]
    assert report["task"] == "text" and scores["n"] == sum(key in record for record in read(out, "test"))
    assert scores["mean"]["mse_original"] == pytest.approx(scores["mean"]["mse"] * spread ** 2)
    assert ("persistence" in scores) == (bool(meta["window"]) or name == "data.jsonl") and "train_mean" in scores
    assert "original units" in r.stdout
    r = run("sample.py", f"--ckpt={tmp_path / 'run' / 'ckpt_best.pt'}", f"--input={out / 'test.txt'}", f"--mask_key={key}")
    assert f"{scores['n']} numbers predicted" in r.stdout  # records without the key left out, and said
    assert (scores["n"] < meta["splits"]["test"]) == ("lines have no number under key" in r.stderr)


def test_the_commands_each_step_suggests_run_as_printed_with_a_key_and_folder_holding_spaces(tmp_path):
    import shlex
    folder = tmp_path / "my data"
    folder.mkdir()
    out, meta = prepare(folder, LONG_CSV.replace("station,t,p", "station,Temp (°C),p"))
    assert meta["mask_key"] == "Temp (°C)"
    run("tokenize_numbers.py", str(out), "--encoding=xval", "--workers=1")
    r = run("train.py", "config/own_small.py", f"--data_dir={out}", f"--out_dir={folder / 'run'}", "--n_layer=1",
            "--n_head=2", "--n_embd=16", "--device=cpu", "--compile=False", "--max_iters=2", "--eval_interval=2",
            "--eval_batches=1", "--batch_size=8", "--micro_batch_size=8", "--warmup_iters=0")
    words = shlex.split(r.stdout.split("predict with:")[1])  # pasted into a shell as printed
    assert words[:2] == ["python", "sample.py"] and "--mask_key=Temp (°C)" in words
    r = run(*words[1:], "--max_lines=3")
    words = shlex.split(r.stdout.splitlines()[-1].split(": ", 1)[1])
    assert words[:2] == ["python", "eval.py"] and "--mask_key=Temp (°C)" in words
    assert "original units" in run(*words[1:], "--max_samples=3").stdout


SERIES = "date,co2,rain\n" + "".join(f"1990-01-{1 + i % 28:02d},{350 + i / 10 + np.sin(i / 5):.2f},"
                                      f"{'' if i in (7, 33) else 'NA' if i == 50 else f'{i % 7 / 10:.1f}'}\n" for i in range(80))


@pytest.mark.parametrize("marker", ["", "NA", "NaN", "null", "?", "-", "n/a"])
def test_a_missing_value_is_refused_naming_file_line_column_and_both_options(tmp_path, marker):
    message = error(tmp_path, f"t,p\n1.5,2\n2.5,{marker}\n3,4\n")
    assert re.search(r"bad.csv:3: column 'p' is missing .*--missing=omit leaves it out of the record, "
                     r"--missing=drop drops the record", message)


def test_missing_values_omitted_or_dropped_and_every_row_accounted_for(tmp_path, capsys):
    out, meta = prepare(tmp_path, SERIES, "--missing", "omit", "--order", "random")
    printed = capsys.readouterr().out
    records = [r for split in ("train", "val", "test") for r in read(out, split)]
    assert len(records) == 80 and sum("rain" not in r for r in records) == 3 and all("co2" in r for r in records)
    assert meta["missing"]["records"] == {"rain": 3} and "'', 'NA', 'N/A', 'NaN', 'null'" in printed
    assert "rows: 80 read = 80 in records written + 0 left out" in printed and "rain 3 values left out" in printed
    out, meta = prepare(tmp_path, SERIES, "--missing", "drop", "--force")
    assert sum(meta["splits"].values()) == 77 and meta["rows"] == {"read": 80, "in_records": 77}
    assert "rows: 80 read = 77 in records written + 3 left out for a missing value" in capsys.readouterr().out
    jsonl = "".join(json.dumps({"t": i / 2, "h": None if i == 3 else i % 5}) + "\n" for i in range(30))
    out, meta = prepare(tmp_path, jsonl, "--missing", "omit", "--force", name="d.jsonl")
    assert meta["missing"]["records"] == {"h": 1} and sum(len(read(out, s)) for s in ("train", "val", "test")) == 30


def test_windows_are_split_in_time_order_with_a_stride(tmp_path, capsys):
    csv = "day,x\n" + "".join(f"{i},{i * 0.5 + np.sin(i):.3f}\n" for i in range(100))
    out, meta = prepare(tmp_path, csv, "--window", "4", "--stride", "2", "--split", "0.6,0.2,0.2")
    assert meta["window"] == 4 and meta["stride"] == 2 and meta["source"]["order"] == "time"
    day = meta["scales"]["day"]
    days = {s: [[round(v * day["spread"] + day["center"]) for v in r["day"]] for r in read(out, s)] for s in SPLITS}
    assert [len(days[s]) for s in SPLITS] == [29, 9, 9]  # 60/20/20 rows: windows starting every 2 rows inside each part
    assert max(map(max, days["train"])) < 60 <= min(map(min, days["val"])) and max(map(max, days["val"])) < 80
    assert min(map(min, days["test"])) >= 80 and days["train"][1] == [2, 3, 4, 5]
    assert meta["mask_key"] == "x" and "note: key 'day' goes up by 1 from row to row" in capsys.readouterr().out
    hourly = "hour,t\n" + "".join(f"{i % 24},{np.sin(i / 5):.3f}\n" for i in range(100))  # an hour of the day wraps
    out, meta = prepare(tmp_path, hourly, "--window", "4", "--force")
    assert meta["mask_key"] == "t" and "note: key 'hour' goes up by 1 from row to row" in capsys.readouterr().out
    stamped = "time,t\n" + "".join(f"{1614816000 + 3600 * i},{np.sin(i / 5):.3f}\n" for i in range(100))  # Unix time
    out, meta = prepare(tmp_path, stamped, "--window", "4", "--force")
    assert meta["mask_key"] == "t" and "note: key 'time' goes up by 3600 from row to row" in capsys.readouterr().out
    out, meta = prepare(tmp_path, SERIES, "--window", "8", "--missing", "drop", "--force")  # a gap drops its window
    printed = capsys.readouterr().out
    assert meta["splits"] == {"train": 5, "val": 1, "test": 1} and meta["missing"]["records"] == {"rain": 3}
    assert "rows: 80 read = 56 in records written + 24 left out for a missing value + 0 in no window" in printed


SPLITS = ("train", "val", "test")


@pytest.mark.parametrize("content,flags,name,expected", [
    ('{"a":1,"a":2}\n', [], "bad.jsonl", "bad.jsonl:1: key 'a' is repeated in one object"),
    ('t,note\n1,"ok"\n2,"open\n3,x\n4,y\n', [], "bad.csv", r"bad.csv:3: unexpected end of data \(an unterminated quote\?\)"),
    ("t,p\r\n1,2\r\n3\r,4\r\n", [], "bad.csv", r"bad.csv:3: a lone carriage return \(\\r\) at column 2"),
    ('t,n\n1,"33,231"\n2,"1,000"\n', [], "bad.csv", r"bad.csv:2: column 'n': '33,231' holds a thousands separator "
                                                     r"or a decimal comma; write 33231 or 33.231"),
    ("t p q\n1 2 3\n", [], "bad.csv", "bad.csv:1: the header holds no , ; tab or | but spaces"),
    ("a,b\n1,2\n", ["--columns", "a,c"], "bad.csv", "bad.csv:1: --columns names 'c', not a column here: a, b"),
    ('{"a":[1,2],"b":1}\n', ["--text", "z"], "bad.jsonl", "--text names 'z', not a column or key"),
    ("a\n1\n2\n", ["--window", "2", "--stride", "1", "--order", "random"], "bad.csv",
     "--stride 1 < --window 2 with --order random: overlapping windows would share rows between train and test"),
    ("t,e\n1,\n2,NA\n", [], "bad.csv", r"key 'e' holds no value in any record .*leave it out with --columns"),
    ("t,e\n1,\n2,NA\n", ["--missing", "omit"], "bad.csv", r"key 'e' holds no value in any record"),
    ("# logger 7\n# units: C, hPa\nt,p\n1,2\n", [], "bad.csv", r"bad.csv:1: '# logger 7' is a comment, not a header "
     r"\(2 line\(s\) start with #\); expected the column names on line 1"),
])
def test_what_would_be_misread_is_a_one_line_error(tmp_path, content, flags, name, expected):
    assert re.search(expected, error(tmp_path, content, *flags, name=name))


def test_messy_csv_reads_right_and_says_how(tmp_path, capsys):
    """CR-only line ends, a semicolon delimiter, a quoted line break and R's unnamed row-name column are read
    right and named; --columns keeps the columns asked for."""
    rows = [f'"{i}";{i / 4:.2f};{"ab"[i % 2]};"{"two" + chr(13) + "lines" if i % 4 == 1 else "one"}";{9 - i % 3}'
            for i in range(1, 41)]
    content = '"";"t";"s";"note";"k"\r' + "\r".join(rows) + "\r"
    out, meta = prepare(tmp_path, content, "--columns", "t,s,note")
    printed = capsys.readouterr().out
    assert "its lines end in a carriage return alone" in printed and "columns separated by a semicolon" in printed
    assert "column 1 has no name (row names, as R writes them): left out" in printed
    assert re.search(r"data.csv:2-3: a quoted cell holds a line break, read as part of the cell \(10 such row", printed)
    records = [r for split in SPLITS for r in read(out, split)]
    assert meta["keys"] == ["t", "s", "note"] and len(records) == 40 and {r["note"] for r in records} == {"one", "two\nlines"}


def test_numbers_the_model_cannot_tell_apart_and_constant_keys_are_named(tmp_path, capsys):
    ids = "".join(f"{12345678901234567890 + i},{10.0 ** (i % 40 - 20):.3g},7,{i % 5}\n" for i in range(40))
    prepare(tmp_path, "id,wide,c,y\n" + ids)
    printed = capsys.readouterr().out
    assert re.search(r"warning: \S*data.csv:\d+: key 'id': 1234567890123456789\d and 1234567890123456789\d .*reach the "
                     r"model as one value", printed)
    assert re.search(r"warning: key 'wide': \|x\| from 1e-20 to 1e\+19, 39 decades.*log10", printed)
    assert "note: key 'c' is constant in train (7)" in printed


def test_the_same_data_in_two_splits_is_refused_or_reported(tmp_path, capsys):
    (tmp_path / "a.csv").write_text(CSV)
    (tmp_path / "b.csv").write_text(CSV)
    for flags in ([str(tmp_path / "a.csv"), str(tmp_path / "a.csv")], [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")],
                  [str(tmp_path / "a.csv"), "--val", str(tmp_path / "b.csv"), "--test", str(tmp_path / "t.csv")]):
        with pytest.raises(SystemExit, match=r"holds the same bytes as .*a.csv: a file given twice"):
            text.main([*flags, "--out", str(tmp_path / "o")])
    prepare(tmp_path, CSV + CSV.partition("\n")[2])  # every record twice: most land in two splits
    assert re.search(r"note: \d+ of the 12 val records are also, exactly, in train", capsys.readouterr().out)


def test_mask_key_names_a_top_level_key_or_a_dotted_path(tmp_path):
    from predict import masked_numbers
    from tokenize_numbers import split_text
    line = '{"t":[1,2],"meta":{"t":3,"u":4},"a.b":5}'
    assert masked_numbers(line, split_text(line), "x", ["t"]) == {"t": [1]}  # not meta's t
    assert masked_numbers(line, split_text(line), "x", ["meta.t"]) == {"meta.t": [2]}
    assert masked_numbers(line, split_text(line), "x", ["a.b"]) == {"a.b": [4]}
    with pytest.raises(ValueError, match=r"no number under key 'u' \(--mask_key names a top-level key\); a nested key is named by its path: meta.u"):
        masked_numbers(line, split_text(line), "x", ["u"])
    with pytest.raises(ValueError, match="names a top-level key and a path to a nested one"):
        masked_numbers('{"a.b":1,"a":{"b":2}}', split_text('{"a.b":1,"a":{"b":2}}'), "x", ["a.b"])


@pytest.mark.parametrize("content,name,expected", [
    ("t,x\n1,2\n2,1e400\n3,4\n", "bad.csv", r"bad.csv:3: column 'x': 1E\+400 is beyond what a float64 holds"),
    ('{"t":1,"x":[2,-1e-400]}\n', "bad.jsonl", r"bad.jsonl:1: key 'x': -1E-400 is beyond what a float64 holds"),
])
def test_a_number_beyond_float64_is_refused(tmp_path, content, name, expected):
    assert re.search(expected, error(tmp_path, content, name=name))


def test_a_gzip_file_is_read_and_a_workbook_or_utf16_is_named(tmp_path):
    import gzip
    import zipfile
    (tmp_path / "data.csv.gz").write_bytes(gzip.compress(CSV.encode()))
    text.main([str(tmp_path / "data.csv.gz"), "--out", str(tmp_path / "gz")])
    out, _ = prepare(tmp_path, CSV)
    assert (tmp_path / "gz" / "train.txt").read_text() == (out / "train.txt").read_text()
    with zipfile.ZipFile(tmp_path / "book.xlsx", "w") as z:
        z.writestr("xl/workbook.xml", "<workbook/>")
    (tmp_path / "utf16.csv").write_bytes(CSV.encode("utf-16"))
    for name, expected in (("book.xlsx", r"book.xlsx: a zip archive or an Excel workbook .*CSV UTF-8"),
                           ("utf16.csv", r"utf16.csv: UTF-16 text .*save the file as UTF-8")):
        with pytest.raises(SystemExit, match=expected):
            text.main([str(tmp_path / name), "--out", str(tmp_path / "never")])


def test_a_json_array_or_objects_spread_over_lines_are_records(tmp_path):
    """A JSON array of objects (json.dump of a list) and pretty-printed objects one after another give the records
    that the same objects as JSON lines give; a broken array names its line."""
    records = [json.loads(line) for line in JSONL.splitlines()]
    out, _ = prepare(tmp_path, JSONL, name="data.jsonl")
    for i, content in enumerate((json.dumps(records), json.dumps(records, indent=2),
                                 "\n".join(json.dumps(r, indent=2) for r in records))):
        out_i, meta = prepare(tmp_path, content, "--force", name=f"data{i}.json")
        assert (out_i / "train.txt").read_text() == (out / "train.txt").read_text() and meta["splits"]["train"] == 32
    for content, expected in (('[{"a":1},\n{"a":2}\n', r"bad.json:2: the file ends inside the JSON array"),
                              ('[{"a":1},\n 5]', r"bad.json:2 \(record 2\): expected a JSON object"),
                              ('[{"a":1} {"a":2}]', r"bad.json:1: expected , or \] after a record"),
                              ('[{"a":1}] x', r"bad.json:1: expected nothing after the JSON array's \]"),
                              ('[{"a":1},{"b":2}]', r"bad.json:1 \(record 1\): key 'b' is missing"),
                              ("[]", r"bad.json: an empty JSON array"),
                              ('{"a":1}\n{"a":\n', r"bad.json:2: not a JSON record \(Expecting value at column 6\)")):
        assert re.search(expected, error(tmp_path, content, name="bad.json"))


@pytest.mark.parametrize("cell,plain", [("45%", "45"), ("$12.50", "12.50"), ("-€3", "-3"), ("1_000", "1000"),
                                        ("0x1F", "31")])
def test_a_number_with_a_sign_or_in_quotes_is_refused_not_made_a_word(tmp_path, cell, plain):
    """45%, $12.50, 1_000 and 0x1F are quantities the tokenizer would read as words (each value a category of its
    own), and so is a JSON string "12.5": refused, naming the plain number, unless --text asks for words."""
    content = "t,x\n" + "".join(f"{i},{cell}\n" for i in range(20))
    message = error(tmp_path, content)
    assert re.search(rf"bad.csv:2: column 'x': '{re.escape(cell)}' is a number written with a currency or percent "
                     rf"sign, digit groups or in hex; write {plain} .*--text x", message)
    args = argparse.Namespace(columns=None, text={"x"}, delimiter=None, decimal_comma=False)
    assert text.read_file(str(tmp_path / "bad.csv"), args).n == 20
    jsonl = "".join(json.dumps({"t": i, "x": [1.5, cell]}) + "\n" for i in range(20))
    assert re.search(rf"bad.jsonl:1: key 'x': '{re.escape(cell)}' is a number written as a string; write it as a "
                     rf"JSON number \({plain}\), or --text x", error(tmp_path, jsonl, name="bad.jsonl"))
    jsonl = "".join(json.dumps({"t": i, "x": f"{i / 2}"}) + "\n" for i in range(20))
    assert "'0.0' is a number written as a string" in error(tmp_path, jsonl, name="bad.jsonl")


def test_money_with_digit_groups_and_pandas_columns_json_are_named(tmp_path):
    content = "t,x\n" + "".join(f'{i},"$1,{i:03d}.50"\n' for i in range(20))
    assert "bad.csv:2: column 'x': '$1,000.50' is a number written with a currency or percent sign, digit groups or in " \
           "hex; write 1000.50" in error(tmp_path, content)
    columns = json.dumps({"t": {str(i): i for i in range(20)}, "x": {str(i): i / 2 for i in range(20)}})  # df.to_json()
    assert "one JSON object of columns, each holding 20 values" in error(tmp_path, columns, name="bad.json")


def test_dates_as_spreadsheets_write_them_are_left_out(tmp_path, capsys):
    import datetime
    formats = {"us": "%m/%d/%Y %I:%M %p", "named": "%d-%b-%Y", "long": "%B %d, %Y", "de": "%d.%m.%y %H:%M",
               "short": "%m/%d/%y", "utc": "%Y-%m-%d %H:%M:%S UTC", "month": "%b-%Y", "clock": "%I:%M %p"}
    days = [datetime.datetime(2021, 1, 1, 5, 6) + datetime.timedelta(days=40 * i, hours=7 * i) for i in range(20)]
    content = ",".join(formats) + ",t\n" + "".join(
        ",".join(f'"{d.strftime(f)}"' for f in formats.values()) + f",{i / 4}\n" for i, d in enumerate(days))
    out, meta = prepare(tmp_path, content)
    assert meta["dates_left_out"] == list(formats) and meta["keys"] == ["t"]
    assert "note: key 'named' holds dates or times (01-Jan-2021 ... 05-Feb-2023)" in capsys.readouterr().out


@pytest.mark.parametrize("header", ["t,p,site,", "t,p,site"])
def test_a_delimiter_ending_every_row_is_an_empty_column_left_out(tmp_path, capsys, header):
    content = header + "\r\n" + "".join(f"{i / 4},{1000 + i % 7},{'ab'[i % 2]},\r\n" for i in range(30)) + "\r\n"
    out, meta = prepare(tmp_path, content)
    assert meta["keys"] == ["t", "p", "site"] and sum(meta["splits"].values()) == 30
    assert "every row ends in a comma, an empty last column with no name: left out" in capsys.readouterr().out
    message = error(tmp_path, content.replace("0.25,1001,b,\r\n", "0.25,1001,b\r\n"))  # not every row
    assert re.search(r"bad.csv:3: 3 cells, but the header .* names 4" if header.endswith(",") else
                     r"bad.csv:2: 4 cells, but the header .* names 3 columns \(the last one empty: a delimiter at the end "
                     r"of some rows but not all\? remove it\)", message)


def test_decimal_commas_as_european_spreadsheets_write_them(tmp_path):
    out, _ = prepare(tmp_path, CSV)
    euro = CSV.replace(",", ";").replace(".", ",")
    message = error(tmp_path, euro)
    assert re.search(r"bad.csv:2: column 't': '10,00' holds a thousands separator or a decimal comma; write 1000 or "
                     r"10.00, or --decimal-comma", message)
    out_euro, _ = prepare(tmp_path, euro, "--decimal-comma", "--force", name="euro.csv")
    assert (out_euro / "train.txt").read_text() == (out / "train.txt").read_text()
    assert re.search(r"bad.csv:3: column 'p': '1.013,5' is not a number",
                     error(tmp_path, "t;p\n1;1014\n2;1.013,5\n3;1012\n", "--decimal-comma"))
    assert re.search(r"bad.csv:3: column 'p': '1.5' holds a point, but --decimal-comma says numbers are written 12,5",
                     error(tmp_path, "t;p\n1;1014\n2;1.5\n3;1012\n", "--decimal-comma"))
