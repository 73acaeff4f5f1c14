"""prepare/text.py: your CSV or JSON lines become records scaled to order 1; a misreading is a one-line error."""
import json
import os
import re
import sys
from decimal import Decimal

import numpy as np
import pytest
from conftest import ROOT, run
from helpers import tokenize

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import text

from dataset import Split
from predict import masked_numbers
from tokenize_line import split_text

SPLITS = ("train", "val", "test")
CSV = "station,t,p,weather\n" + "".join(
    f"{'abc'[i % 3]},{10 + 7 * np.sin(i / 9) + i % 3:.2f},{1013 + 5 * np.cos(i / 7):.1f},{'rain' if i % 4 else 'dry'}\n"
    for i in range(60))
JSONL = "".join(json.dumps({"site": "ns"[i % 2], "t": [round(280 + i / 3 + k, 2) for k in range(3)], "h": 1e-3 * i})
                + "\n" for i in range(40))
LONG_CSV = "station,t,p\n" + "".join(f"{'ab'[i % 2]},{10 + 7 * np.sin(i / 9):.2f},{1013 + 5 * np.cos(i / 7):.1f}\n"
                                     for i in range(400))
SERIES = "date,co2,rain\n" + "".join(f"1990-01-{1 + i % 28:02d},{350 + i / 10 + np.sin(i / 5):.2f},"
                                     f"{'' if i in (7, 33) else 'NA' if i == 50 else f'{i % 7 / 10:.1f}'}\n"
                                     for i in range(80))
TRAIN = ("train.py", "config/own_small.py", "--n_layer=1", "--n_head=2", "--n_embd=16", "--device=cpu",
         "--compile=False", "--eval_interval=2", "--eval_batches=1", "--batch_size=8", "--micro_batch_size=8",
         "--warmup_iters=0")


def prepare(tmp_path, content, *flags, name="data.csv"):
    (tmp_path / name).write_bytes(content.encode() if isinstance(content, str) else content)
    text.main([str(tmp_path / name), "--out", str(tmp_path / "out"), "--force", *flags])
    return tmp_path / "out", json.loads((tmp_path / "out" / "meta.json").read_text())


def error(tmp_path, content, *flags, name="bad.csv"):
    if content is not None:
        (tmp_path / name).write_bytes(content.encode() if isinstance(content, str) else content)
    with pytest.raises(SystemExit) as e:
        text.main([str(tmp_path / name), "--out", str(tmp_path / "never"), *flags])
    assert not (tmp_path / "never").exists() and "\n" not in str(e.value.code)
    return str(e.value.code)


def read(out, *splits):
    return [json.loads(line) for s in splits or SPLITS for line in (out / f"{s}.txt").read_text().splitlines()]


def test_a_csv_becomes_a_dataset_that_tokenizes(tmp_path, capsys):
    out, meta = prepare(tmp_path, CSV)
    printed = capsys.readouterr().out
    assert meta["dataset"] == "text" and meta["window"] is None and meta["splits"] == {"train": 48, "val": 6, "test": 6}
    assert meta["keys"] == ["station", "t", "p", "weather"] and meta["text_keys"] == ["station", "weather"]
    assert set(meta["scales"]) == {"t", "p"} and abs(meta["scales"]["p"]["center"] - 1013) < 2
    for key in ("station: text, 3 value(s): a, b, c", "(x - ", "numbers per record: 2-2", '"rain"'):
        assert key in printed
    records = read(out)
    assert len(records) == 60 and {r["station"] for r in records} == {"a", "b", "c"}
    train_p = np.array([r["p"] for r in read(out, "train")])
    assert abs(train_p.mean()) < 1e-3 and abs(train_p.std() - 1) < 1e-3  # order 1: centred, unit spread
    tokenize(out)
    assert len(Split(str(out), "test", "xval")) == 6
    out, meta = prepare(tmp_path, CSV, "--scale", "none")
    assert meta["scales"]["p"] == {"center": 0.0, "spread": 1.0} and all(1000 < r["p"] < 1020 for r in read(out))
    assert "warning: key 'p': numbers up to |x| = 10" in capsys.readouterr().out


def test_json_lines_in_windows_tokenize_and_keep_their_layout(tmp_path):
    out, meta = prepare(tmp_path, JSONL, "--window", "3", "--split", "0.6,0.2,0.2", "--seed", "3", "--order",
                        "random", name="series.jsonl")
    assert meta["window"] == 3 and sum(meta["splits"].values()) == 13  # 40 records: 13 windows, 1 left out
    record = read(out, "train")[0]
    assert list(record) == ["site", "t", "h"] and len(record["site"]) == 3 and np.shape(record["t"]) == (3, 3)
    tokenize(out)
    assert len(Split(str(out), "train", "xval")) == meta["splits"]["train"]


@pytest.mark.parametrize("content,name", [(CSV, "data.csv"), (JSONL, "data.jsonl")])
def test_scales_are_recorded_and_undone_exactly(tmp_path, content, name):
    out, meta = prepare(tmp_path, content, name=name)
    if name.endswith(".csv"):
        import csv
        rows = list(csv.DictReader(content.splitlines()))
    else:
        rows = [json.loads(line, parse_float=Decimal, parse_int=Decimal) for line in content.splitlines()]
    for key, s in meta["scales"].items():  # the multisets of numbers per key
        inputs = sorted(Decimal(x) for r in rows for x in np.ravel(r[key]).tolist())
        written = sorted(Decimal(repr(float(x) * s["spread"] + s["center"])) for r in read(out) for x in np.ravel(r[key]))
        assert len(written) == len(inputs)
        assert sorted(w.quantize(x) for w, x in zip(written, inputs)) == inputs, key  # every digit comes back


def test_dates_are_left_out_and_text_with_digits_is_one_word_everywhere(tmp_path, capsys):
    csv = "\ufeffdate,day,hour,site,room,zip,pm2.5\n" + "".join(
        f"2021-03-{d:02d},202103{d:02d},{d % 24:02d}:00,b7,room {d % 3},0{1000 + d % 2},{d / 4}\n" for d in range(1, 21))
    out, meta = prepare(tmp_path, csv, "--text", "zip")
    assert meta["dates_left_out"] == ["date", "day", "hour"]
    assert "note: key 'date' holds dates or times" in capsys.readouterr().out
    assert meta["keys"] == ["site", "room", "zip", "pm2_5"] and meta["renamed"] == {"pm2.5": "pm2_5"}
    records = read(out)
    assert {r["room"] for r in records} == {"room_0", "room_1", "room_2"}
    assert {r["zip"] for r in records} == {"_01000", "_01001"}
    for line in "".join((out / f"{s}.txt").read_text() for s in SPLITS).splitlines():
        assert masked_numbers(line, split_text(line), "x", ["pm2_5"]) == {"pm2_5": [0]}  # the one number is pm2.5's
    tokenize(out)
    assert re.search(r"bad.csv:2: column 'zip': '0100[01]' has a leading zero.*--text zip", error(tmp_path, csv))


def test_dates_as_spreadsheets_write_them_are_left_out(tmp_path, capsys):
    import datetime
    formats = {"us": "%m/%d/%Y %I:%M %p", "named": "%d-%b-%Y", "long": "%B %d, %Y", "de": "%d.%m.%y %H:%M",
               "short": "%m/%d/%y", "utc": "%Y-%m-%d %H:%M:%S UTC", "month": "%b-%Y", "clock": "%I:%M %p"}
    days = [datetime.datetime(2021, 1, 1, 5, 6) + datetime.timedelta(days=40 * i, hours=7 * i) for i in range(20)]
    _, meta = prepare(tmp_path, ",".join(formats) + ",t\n" + "".join(
        ",".join(f'"{d.strftime(f)}"' for f in formats.values()) + f",{i / 4}\n" for i, d in enumerate(days)))
    assert meta["dates_left_out"] == list(formats) and meta["keys"] == ["t"]
    assert "note: key 'named' holds dates or times (01-Jan-2021 ... 05-Feb-2023)" in capsys.readouterr().out


def test_val_and_test_files_an_unseen_text_value_and_force(tmp_path):
    for name, content in (("val", "b,1.5"), ("test", "z,1.5"), ("train", "a,1.0\nb,2.0")):
        (tmp_path / f"{name}.csv").write_text(f"station,t\n{content}\n")
    flags = [str(tmp_path / "train.csv"), "--val", str(tmp_path / "val.csv"), "--test", str(tmp_path / "test.csv"),
             "--out", str(tmp_path / "o")]
    with pytest.raises(SystemExit, match=r"test.csv:2: .*'\"z\"', which no training record has"):
        text.main(flags)
    (tmp_path / "test.csv").write_text("station,t\na,1.25\n")
    text.main(flags)
    splits = lambda: json.loads((tmp_path / "o" / "meta.json").read_text())["splits"]
    assert splits() == {"train": 2, "val": 1, "test": 1}
    (tmp_path / "o" / "lab_notes.txt").write_text("mine\n")
    with pytest.raises(SystemExit, match="--force"):
        text.main(flags)
    (tmp_path / "test.csv").write_text("station,t\na,1.25\nb,1.5\n")
    text.main([*flags, "--force"])  # the dataset replaced, other files kept
    assert splits()["test"] == 2
    assert (tmp_path / "o" / "lab_notes.txt").read_text() == "mine\n"


def test_the_same_data_in_two_splits_is_refused_or_reported(tmp_path, capsys):
    (tmp_path / "a.csv").write_text(CSV)
    (tmp_path / "b.csv").write_text(CSV)
    a, b = str(tmp_path / "a.csv"), str(tmp_path / "b.csv")
    for flags in ([a, a], [a, b], [a, "--val", b, "--test", str(tmp_path / "t.csv")]):
        with pytest.raises(SystemExit, match=r"holds the same bytes as .*a.csv: a file given twice"):
            text.main([*flags, "--out", str(tmp_path / "o")])
    prepare(tmp_path, CSV + CSV.partition("\n")[2])  # every record twice: most land in two splits
    assert re.search(r"note: \d+ of the 12 val records are also, exactly, in train", capsys.readouterr().out)


COLUMNS = json.dumps({"t": {str(i): i for i in range(20)}, "x": {str(i): i / 2 for i in range(20)}})  # df.to_json()


@pytest.mark.parametrize("content,flags,expected", [
    ("a,b\n1,2\n3\n", [], r"bad.csv:3: 1 cells, but the header \(.*bad.csv:1\) names 2 columns"),
    ("", [], "bad.csv: empty file"),
    ("\n\n", [], "bad.jsonl: empty file"),
    ("a\n1\n\n2\n", [], "bad.csv:3: empty line; expected one row per record"),
    ('{"a":1,"b":2}\n{"a":3}\n', [], "bad.jsonl:2: key 'b' is missing .*--missing=omit .*--missing=drop"),
    ('{"a":1}\n{"a":3,"c":4}\n', [], "bad.jsonl:1: key 'c' is missing"),
    ('{"a":1}\n{"a":"rain"}\n', [], "bad.jsonl:2: key 'a' holds text, but number"),
    ("a,b\n1,2\n,4\n", [], "bad.csv:3: column 'a' is missing .*--missing=omit .*--missing=drop"),
    ("a,b\n1,2\n1.2.3,4\n5,6\n", [], r"bad.csv:3: column 'a': '1.2.3' is not a number"),
    ("a,b\n1,2\n--5,4\n5,6\n", [], r"bad.csv:3: column 'a': '--5' is not a number"),
    ('{"a":1.2.3}\n', [], "bad.jsonl:1: not a JSON record"),
    ('{"t":1,"x":"0.0"}\n', [], "bad.jsonl:1: key 'x': '0.0' is a number written as a string"),
    ('{"a":1}\n{"a":NaN}\n', [], "bad.jsonl:2: key 'a' is missing"),
    ('{"a":Infinity}\n', [], "bad.jsonl:1: Infinity is not a finite number"),
    ("a,b\n1,2\n3,4\n", ["--window", "3", "--order", "random"],
     "bad.csv:3: the file ends after 2 rows, before a window of 3"),
    ("a,b\n1,2\n3,4\n", ["--window", "3"], (r"bad.csv: --split 0.8,0.1,0.1 in time order cuts its 2 rows "
     r"into 2/0/0")),
    ("a,b\n1,2\n3,4\n", [], r"--split 0.8,0.1,0.1: 2 records give train/val/test"),
    ("a,a\n1,2\n", [], "bad.csv:1: column 2 of the header is 'a' again"),
    ('{"a":1,"a":2}\n', [], "bad.jsonl:1: key 'a' is repeated in one object"),
    ('t,note\n1,"ok"\n2,"open\n3,x\n4,y\n', [], r"bad.csv:3: unexpected end of data \(an unterminated"),
    ("t,p\r\n1,2\r\n3\r,4\r\n", [], r"bad.csv:3: a lone carriage return \(\\r\) at column 2"),
    ('t,n\n1,"33,231"\n2,"1,000"\n', [], (r"bad.csv:2: column 'n': '33,231' holds a thousands separator "
     r"or a decimal comma; write 33231 or 33.231")),
    ("t p q\n1 2 3\n", [], "bad.csv:1: the header holds no , ; tab or | but spaces"),
    ("a,b\n1,2\n", ["--columns", "a,c"], "bad.csv:1: --columns names 'c', not a column here: a, b"),
    ('{"a":[1,2],"b":1}\n', ["--text", "z"], "--text names 'z', not a column or key"),
    ("a\n1\n2\n", ["--window", "2", "--stride", "1", "--order", "random"],
     "--stride 1 < --window 2 with --order random: overlapping windows would share rows between train and test"),
    ("t,e\n1,\n2,NA\n", [], r"key 'e' holds no value in any record; leave it out with --columns"),
    ("t,e\n1,\n2,NA\n", ["--missing", "omit"], r"key 'e' holds no value in any record"),
    ("# logger 7\n# units: C, hPa\nt,p\n1,2\n", [], (r"bad.csv:1: '# logger 7' is a comment, not a header "
     r"\(2 line\(s\) start with #\); expected the column names on line 1: delete the lines")),
    ("t,x\n1,2\n2,1e400\n3,4\n", [], r"bad.csv:3: column 'x': 1E\+400 is beyond what a float64 holds"),
    ('{"t":1,"x":[2,-1e-400]}\n', [], r"bad.jsonl:1: key 'x': -1E-400 is beyond what a float64 holds"),
    ('t,x\n0,"$1,000.50"\n', [], (r"bad.csv:2: column 'x': '\$1,000.50' is a number written with a currency or percent sign, "
     r"digit groups or in hex; write 1000.50")),
    (COLUMNS, [], "one JSON object of columns of 20 values"),
    ("t;p\n1;1014\n2;1.013,5\n3;1012\n", ["--decimal-comma"], (r"bad.csv:3: column 'p': '1.013,5' is not a "
     r"number")),
    ("t;p\n1;1014\n2;1.5\n3;1012\n", ["--decimal-comma"], (r"bad.csv:3: column 'p': '1.5' holds a point, "
     r"but --decimal-comma says numbers are written 12,5")),
    ("".join(f"{i / 10},{3 + i % 4},{'ab'[i % 2]}\n" for i in range(1, 40)), [], (r"bad.csv:1: the header "
     r"holds numbers \(0.1, 4\): a file without a header row\? .*add a line of names")),
    ("a,b\n1,2\n", ["--split", "nan,0.5,0.5"], "--split nan,0.5,0.5: expected three positive fractions"),
    ("x\n" + "1\n" * 20 + "1e308\n", [], r"key 'x': \|x\| up to 1e\+308, too large to scale; write log10"),
    ('{"a":' + "[" * 5000 + "]" * 5000 + "}\n", [], "bad.jsonl:1: a record nested too deep"),
    ("t,x\n1," + "y" * (3 << 20) + "\n", [], "bad.csv:2: a line of more than 1 MiB, over the limit"),
    ('t,x\n1,"' + "y\n" * (1 << 20) + '"\n', [], "bad.csv: a row of more than 1 MiB, over the limit"),
    ("x\n1\n" + "y" * 99 + "\n3\n", [], r"bad.csv:3: column 'x': 'y{56}\.\.\. is not a number"),
] + [(f"t,p\n1.5,2\n2.5,{m}\n3,4\n", [], (r"bad.csv:3: column 'p' is missing .*--missing=omit leaves it out "
     r"of the record, --missing=drop drops the record")) for m in ("", "NA", "NaN", "null", "?", "-", "n/a")])
def test_what_would_be_misread_is_a_one_line_error_naming_file_and_line(tmp_path, content, flags, expected):
    name = re.match(r"bad\.\w+|", expected)[0] or ("bad.jsonl" if content.startswith("{") else "bad.csv")
    assert re.search(expected, error(tmp_path, content, *flags, name=name))


@pytest.mark.parametrize("content, name, flags, key, folder", [
    (LONG_CSV, "data.csv", ("--window", "4"), "t", ""), (JSONL, "data.jsonl", (), "t", ""),
    (re.sub(r",1\d{3}\.3\n", ",NA\n", LONG_CSV), "data.csv", ("--missing", "omit"), "p", ""),  # p missing at .3
    (LONG_CSV.replace("station,t,p", "station,Temp (°C),p"), "data.csv", (), "Temp (°C)", "my data")])
def test_own_data_from_file_to_scores_in_original_units(tmp_path, content, name, flags, key, folder):
    (tmp_path / folder).mkdir(exist_ok=True)
    out, meta = prepare(tmp_path / folder, content, *flags, name=name)
    tokenize(out)
    train = (*TRAIN, f"--data_dir={out}", f"--out_dir={tmp_path / folder / 'run'}", "--max_iters=4")
    r = run(*train)
    assert f"--mask_key={meta['mask_key']}" in r.stdout  # the hint names a key of numbers, not an index
    if folder:
        import shlex
        assert meta["mask_key"] == key
        words = shlex.split(r.stdout.split("predict with:")[1])  # pasted into a shell as printed
        assert words[:2] == ["python", "sample.py"] and f"--mask_key={key}" in words
        words = shlex.split(run(*words[1:], "--max_lines=3").stdout.splitlines()[-1].split(": ", 1)[1])
        assert words[:2] == ["python", "eval.py"] and f"--mask_key={key}" in words
        assert "original units" in run(*words[1:], "--max_samples=3").stdout
        return
    assert "choose another --out_dir" in run(*train, check=False).stderr  # a second dataset: another out_dir
    ckpt = f"--ckpt={tmp_path / 'run' / 'ckpt_best.pt'}"
    assert "original units" in run("eval.py", ckpt, f"--mask_key={key}").stdout
    report = json.loads((tmp_path / "run" / f"eval_{key}.json").read_text())
    scores, spread = report["splits"]["test"][key], meta["scales"][key]["spread"]
    assert report["task"] == "text" and scores["n"] == sum(key in record for record in read(out, "test"))
    assert scores["mean"]["mse_original"] == pytest.approx(scores["mean"]["mse"] * spread ** 2)
    assert ("persistence" in scores) == (bool(meta["window"]) or name == "data.jsonl") and "train_mean" in scores
    r = run("sample.py", ckpt, f"--input={out / 'test.txt'}", f"--mask_key={key}")
    assert f"{scores['n']} numbers predicted" in r.stdout  # records without the key left out, and said
    assert (scores["n"] < meta["splits"]["test"]) == ("lines have no number under key" in r.stderr)


def test_missing_values_omitted_or_dropped_and_every_row_accounted_for(tmp_path, capsys):
    out, meta = prepare(tmp_path, SERIES, "--missing", "omit", "--order", "random")
    printed = capsys.readouterr().out
    assert len(read(out)) == 80 and sum("rain" not in r for r in read(out)) == 3 and all("co2" in r for r in read(out))
    assert meta["missing"]["records"] == {"rain": 3} and "'', 'NA', 'N/A', 'NaN', 'null'" in printed
    assert "rows: 80 read = 80 in records written + 0 left out" in printed and "rain 3 values left out" in printed
    out, meta = prepare(tmp_path, SERIES, "--missing", "drop")
    assert sum(meta["splits"].values()) == 77 and meta["rows"] == {"read": 80, "in_records": 77}
    assert "rows: 80 read = 77 in records written + 3 left out for a missing value" in capsys.readouterr().out
    jsonl = "".join(json.dumps({"t": i / 2, "h": None if i == 3 else i % 5}) + "\n" for i in range(30))
    out, meta = prepare(tmp_path, jsonl, "--missing", "omit", name="d.jsonl")
    assert meta["missing"]["records"] == {"h": 1} and len(read(out)) == 30
    out, meta = prepare(tmp_path, SERIES, "--window", "8", "--missing", "drop")  # a gap drops its window
    assert meta["splits"] == {"train": 5, "val": 1, "test": 1} and meta["missing"]["records"] == {"rain": 3}
    assert "rows: 80 read = 56 in records written + 24 left out for a missing value + 0 in no window" in \
        capsys.readouterr().out
    content = "date,co2\n" + "".join(f"2001-01-{1 + i % 28:02d},{'NA' if i % 9 == 4 else f'{300 + i / 7:.3f}'}\n"
                                     for i in range(90))  # one key, a gap in 10 windows of 3 rows
    _, meta = prepare(tmp_path, content, "--window", "3", "--missing", "omit")
    printed = capsys.readouterr().out
    assert "note: 10 record(s) left out: every key of theirs missing" in printed
    assert "co2 10 windows that leave the key out (omit)" in printed and sum(meta["splits"].values()) == 30 - 10


def test_a_record_leaves_out_its_missing_keys_whatever_the_number_of_keys(tmp_path):
    header = ",".join(f"c{j}" for j in range(70))
    rows = "".join(",".join("" if j == 64 and i % 2 else f"{i * j % 13}.5" for j in range(70)) + "\n" for i in range(100))
    out, meta = prepare(tmp_path, header + "\n" + rows, "--missing", "omit")
    lines = "".join((out / f"{s}.txt").read_text() for s in SPLITS)
    assert meta["missing"]["records"] == {"c64": 50} and "null" not in lines and len(read(out)) == 100
    assert sum("c64" not in r for r in read(out)) == 50


def test_windows_are_split_in_time_order_with_a_stride(tmp_path, capsys):
    csv = "day,x\n" + "".join(f"{i},{i * 0.5 + np.sin(i):.3f}\n" for i in range(100))
    out, meta = prepare(tmp_path, csv, "--window", "4", "--stride", "2", "--split", "0.6,0.2,0.2")
    assert meta["window"] == 4 and meta["stride"] == 2 and meta["source"]["order"] == "time"
    day = meta["scales"]["day"]
    days = {s: [[round(v * day["spread"] + day["center"]) for v in r["day"]] for r in read(out, s)] for s in SPLITS}
    assert [len(days[s]) for s in SPLITS] == [29, 9, 9]  # 60/20/20 rows: windows every 2 rows inside each part
    assert max(map(max, days["train"])) < 60 <= min(map(min, days["val"])) and max(map(max, days["val"])) < 80
    assert min(map(min, days["test"])) >= 80 and days["train"][1] == [2, 3, 4, 5]
    assert meta["mask_key"] == "x" and "note: key 'day' goes up by 1 from row to row" in capsys.readouterr().out
    for content, step in (("hour,t\n" + "".join(f"{i % 24},{np.sin(i / 5):.3f}\n" for i in range(100)), "1"),  # wraps
                          ("time,t\n" + "".join(f"{1614816000 + 3600 * i},{np.sin(i / 5):.3f}\n" for i in range(100)),
                           "3600"),  # Unix time
                          ("time,t\n" + "".join(f"{1920 + i / 12:.11f},{np.sin(i):.3f}\n" for i in range(60)),
                           "0.08333333333")):  # a rounded step
        _, meta = prepare(tmp_path, content, "--window", "4")
        assert meta["mask_key"] == "t" and f"goes up by {step} from row to row" in capsys.readouterr().out
    prepare(tmp_path, "n,t\n" + "".join(f"{i + i // 2},{np.sin(i):.3f}\n" for i in range(60)))  # steps of 1 and 2
    assert "note: key 'n' goes up" not in capsys.readouterr().out


def test_messy_csv_reads_right_and_says_how(tmp_path, capsys):
    rows = [f'"{i}";{i / 4:.2f};{"ab"[i % 2]};"{"two" + chr(13) + "lines" if i % 4 == 1 else "one"}";{9 - i % 3}'
            for i in range(1, 41)]
    out, meta = prepare(tmp_path, '"";"t";"s";"note";"k"\r' + "\r".join(rows) + "\r", "--columns", "t,s,note")
    printed = capsys.readouterr().out
    assert "its lines end in a carriage return alone" in printed and "columns separated by a semicolon" in printed
    assert "column 1 has no name (row names, as R writes them): left out" in printed
    assert re.search(r"data.csv:2-3: a quoted cell holds a line break \(10 such row", printed)
    assert meta["keys"] == ["t", "s", "note"] and len(read(out)) == 40
    assert {r["note"] for r in read(out)} == {"one", "two\nlines"}
    lines = ["t,p"] + [f"{i},{i % 7}" for i in range(7000)]  # Windows line ends read as Unix ones
    out, _ = prepare(tmp_path, "\n".join(lines) + "\n")
    unix = (out / "train.txt").read_text()
    out, _ = prepare(tmp_path, "\r\n".join(lines) + "\r\n")
    assert (out / "train.txt").read_text() == unix
    lines[6900] = "3\r,4"  # a stray carriage return far in
    assert re.search(r"bad.csv:6901: a lone carriage return \(\\r\) at column 2", error(tmp_path, "\n".join(lines)))


@pytest.mark.parametrize("header", ["t,p,site,", "t,p,site"])
def test_a_delimiter_ending_every_row_is_an_empty_column_left_out(tmp_path, capsys, header):
    content = header + "\r\n" + "".join(f"{i / 4},{1000 + i % 7},{'ab'[i % 2]},\r\n" for i in range(30)) + "\r\n"
    _, meta = prepare(tmp_path, content)
    assert meta["keys"] == ["t", "p", "site"] and sum(meta["splits"].values()) == 30
    assert "every row ends in a comma, an empty last column with no name: left out" in capsys.readouterr().out
    message = error(tmp_path, content.replace("0.25,1001,b,\r\n", "0.25,1001,b\r\n"))  # not every row
    assert re.search(r"bad.csv:3: 3 cells, but the header .* names 4" if header.endswith(",") else
                     r"bad.csv:2: 4 cells, but the header .* names 3 columns \(the last one empty: a delimiter at the "
                     r"end of some rows but not all\? remove it\)", message)


def test_decimal_commas_gzip_and_what_is_not_text(tmp_path):
    import gzip
    import zipfile
    (tmp_path / "p").mkdir()
    plain = (prepare(tmp_path / "p", CSV)[0] / "train.txt").read_text()
    euro = CSV.replace(",", ";").replace(".", ",")
    assert re.search(r"bad.csv:2: column 't': '10,00' holds a thousands separator or a decimal comma; write 1000 or "
                     r"10.00, or --decimal-comma", error(tmp_path, euro))
    assert (prepare(tmp_path, euro, "--decimal-comma", name="euro.csv")[0] / "train.txt").read_text() == plain
    assert (prepare(tmp_path, gzip.compress(CSV.encode()), name="d.csv.gz")[0] / "train.txt").read_text() == plain
    with zipfile.ZipFile(tmp_path / "book.xlsx", "w") as z:
        z.writestr("xl/workbook.xml", "<workbook/>")
    os.mkfifo(tmp_path / "fifo.csv")
    assert "fifo.csv is a FIFO, device or socket; expected a file" in error(tmp_path, None, name="fifo.csv")
    assert prepare(tmp_path, "[a],b\n" + "".join(f"{i},{i}\n" for i in range(20)))[1]["keys"] == ["[a]", "b"]
    assert re.search(r"book.xlsx: a zip archive or an Excel workbook .*CSV UTF-8", error(tmp_path, None, name="book.xlsx"))
    assert "utf16.csv: UTF-16 text (Excel's Unicode Text); save the file as UTF-8" in error(
        tmp_path, CSV.encode("utf-16"), name="utf16.csv")


def test_a_json_array_or_objects_spread_over_lines_are_records(tmp_path):
    records = [json.loads(line) for line in JSONL.splitlines()]
    lines = (prepare(tmp_path, JSONL, name="data.jsonl")[0] / "train.txt").read_text()
    for content in (json.dumps(records), json.dumps(records, indent=2),
                    "\n".join(json.dumps(r, indent=2) for r in records)):
        out, meta = prepare(tmp_path, content, name="data.json")
        assert (out / "train.txt").read_text() == lines and meta["splits"]["train"] == 32
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
    content = "t,x\n" + "".join(f"{i},{cell}\n" for i in range(20))
    assert re.search(rf"bad.csv:2: column 'x': '{re.escape(cell)}' is a number written with a currency or percent "
                     rf"sign, digit groups or in hex; write {plain}, or --text x", error(tmp_path, content))
    assert sum(prepare(tmp_path, content, "--text", "x")[1]["splits"].values()) == 20
    jsonl = "".join(json.dumps({"t": i, "x": [1.5, cell]}) + "\n" for i in range(20))
    assert re.search(rf"bad.jsonl:1: key 'x': '{re.escape(cell)}' is a number written as a string; write it as a "
                     rf"JSON number \({plain}\), or --text x", error(tmp_path, jsonl, name="bad.jsonl"))
    content = "".join(json.dumps({"diet": i % 4 + 1, "w": 40 + i}) + "\n" for i in range(40))
    out, meta = prepare(tmp_path, content, "--text", "diet", name="d.jsonl")  # --text makes a number key words
    assert meta["text_keys"] == ["diet"] and "diet" not in meta["scales"]
    assert {r["diet"] for r in read(out)} == {"_1", "_2", "_3", "_4"}


def test_what_the_model_cannot_use_well_is_named(tmp_path, capsys):
    ids = "".join(f"{12345678901234567890 + i},{10.0 ** (i % 40 - 20):.3g},7,{i % 5}\n" for i in range(40))
    prepare(tmp_path, "id,wide,c,y\n" + ids)
    printed = capsys.readouterr().out
    assert re.search(r"warning: \S*data.csv:\d+: key 'id': 1234567890123456789\d and 1234567890123456789\d .*reach the "
                     r"model as one value", printed)
    assert re.search(r"warning: key 'wide': \|x\| from 1e-20 to 1e\+19, 39 decades.*log10", printed)
    assert "note: key 'c' is constant in train (7)" in printed
    for n, far in ((60, False), (300, True)):  # |x| 7.8 once scaled, then past 10
        prepare(tmp_path, "day,t\n" + "".join(f"{d},{np.sin(i):.3f}\n" for i, d in enumerate([1] * n + [40])))
        printed = capsys.readouterr().out
        far_off = re.search(r"warning: key 'day': scaled, its numbers reach \|x\| = 1\d\.\d; .*order 1", printed)
        assert bool(far_off) == far
        assert far or "warning: key 'day'" not in printed


def test_the_key_to_predict_is_said_and_target_names_it(tmp_path, capsys):
    content = "year,lat,mag,site\n" + "".join(
        f"{2000 + i // 10},{(i * 7) % 11 - 20.5},{4 + (i * 5) % 9 / 10},{'ab'[i % 2]}\n" for i in range(60))
    assert prepare(tmp_path, content)[1]["mask_key"] == "year"
    assert "note: eval.py and sample.py predict 'year' (the first key of numbers that varies); --target KEY " \
           "names the one to predict (year, lat, mag)" in capsys.readouterr().out
    assert prepare(tmp_path, content, "--target", "mag")[1]["mask_key"] == "mag"
    assert "note: eval.py" not in capsys.readouterr().out
    assert "--target site: not a key of numbers; expected one of year, lat, mag" in error(tmp_path, content, "--target",
                                                                                         "site")


def test_groups_keep_their_rows_and_the_split_is_said(tmp_path, capsys):
    rows = [(a, day, 40 + 3 * day + a) for day in range(30) for a in range(4)]  # animals interleaved by day
    content = "animal,day,weight\n" + "".join(f"a{a},{d},{w}\n" for a, d, w in rows)
    flags = ("--window", "5", "--group", "animal", "--split", "0.6,0.2,0.2")
    out, meta = prepare(tmp_path, content, *flags)
    printed = capsys.readouterr().out
    assert meta["keys"] == ["day", "weight"] and meta["source"]["group"] == "animal"
    assert "split in time order within each group (animal)" in printed and "note: key 'animal' names each row's group" \
        in printed
    s = meta["scales"]["day"]
    for r in read(out):
        days = [round(v * s["spread"] + s["center"]) for v in r["day"]]
        assert days == list(range(days[0], days[0] + 5))  # one animal's consecutive days, never two animals
    assert meta["splits"] == {"train": 12, "val": 4, "test": 4} and "--context-before" in printed
    assert "warning: the test split holds 4 record(s): a score over fewer than 30 says little" in printed
    _, meta = prepare(tmp_path, content, *flags, "--stride", "1", "--context-before")
    assert meta["splits"]["test"] == 4 * 6  # every test day ends a window, its context the days before


def test_mask_key_names_a_top_level_key_or_a_dotted_path():
    line = '{"t":[1,2],"meta":{"t":3,"u":4},"a.b":5}'
    masked = lambda key, line=line: masked_numbers(line, split_text(line), "x", [key])
    assert masked("t") == {"t": [1]} and masked("meta.t") == {"meta.t": [2]} and masked("a.b") == {"a.b": [4]}
    with pytest.raises(ValueError, match=r"no number under key 'u' \(--mask_key names a top-level key\); a nested key "
                                         r"is named by its path: meta.u"):
        masked("u")
    with pytest.raises(ValueError, match="names a top-level key and a path to a nested one"):
        masked("a.b", '{"a.b":1,"a":{"b":2}}')


@pytest.mark.slow
def test_a_file_of_many_columns_needs_no_file_per_column_open(tmp_path):
    import resource
    import subprocess
    (tmp_path / "wide.csv").write_text(",".join(f"c{j}" for j in range(120)) + "\n" + "".join(
        ",".join(f"{(i * j) % 97 / 10}" for j in range(120)) + "\n" for i in range(40)))
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))  # fewer than the columns
    r = subprocess.run([sys.executable, os.path.join(ROOT, "prepare", "text.py"), str(tmp_path / "wide.csv"),
                        "--out", str(tmp_path / "out")], preexec_fn=limit, capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["keys"][-1] == "c119"


def test_the_lines_written_read_back_as_the_records(tmp_path):
    content = "t,p,sky\n" + "".join(f"{i},{1000 + i % 7}.5,{'ab'[i % 2]}\n" for i in range(30))
    out, meta = prepare(tmp_path, content, "--window", "3")
    s, record = meta["scales"]["p"], read(out, "test")[0]
    assert list(record) == ["t", "p", "sky"] and record["sky"] == ["b", "a", "b"]  # rows 27-29: the last 10%
    assert [round(v * s["spread"] + s["center"], 1) for v in record["p"]] == [1006.5, 1000.5, 1001.5]


def test_main_reads_as_its_steps():  # in at most 60 lines: test_shape.py
    import inspect
    steps = ["read_files", "clean_keys", "split_records", "leave_out_missing", "scale", "check_tokens", "write_lines",
             "report"]
    assert [f for f in re.findall(r"(\w+)\(", inspect.getsource(text.main)) if f in steps] == steps


# ---------------------------------------------------------------- edge numbers, flags, volume, leftovers
NESTED_KEY = "".join(f'{{"x": {i}, "y": {{"12": {i % 5}}}}}\n' for i in range(40))


@pytest.mark.parametrize("content,flags,expected", [
    ("t,x\n1,2\n2,1e-320\n3,4\n", [], r"bad.csv:3: column 'x': 1E-320 is beyond what a float64 holds, squared"),
    (CSV, ["--stride", "0"], r"^error: argument --stride: expected an integer ≥ 1, got 0 \(--help lists"),
    (CSV, ["--window", "nan"], r"^error: argument --window: invalid integer value: 'nan'"),
    (CSV, ["--seed", "-1"], r"^error: argument --seed: expected an integer ≥ 0, got -1"),
    (NESTED_KEY, [], r"bad.jsonl:3: the tokenizer reads a number in the key '12'; rename it '_12'$"),
])
def test_edge_numbers_flags_and_misread_nested_keys_are_one_line(tmp_path, content, flags, expected):
    name = "bad.jsonl" if content.startswith("{") else "bad.csv"
    assert re.search(expected, error(tmp_path, content, *flags, name=name))


def test_a_tiny_number_beside_large_ones_is_written_with_at_most_17_digits(tmp_path):
    import warnings
    content = "x,y\n" + "".join(f"{i}.5,{'1e-60' if i % 2 else 1}\n" for i in range(40))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out, meta = prepare(tmp_path, content)
    assert meta["decimals"]["y"] <= 17 and all(len(str(r["y"])) <= 20 for r in read(out))


def test_many_keys_print_a_few_lines(tmp_path, capsys):
    content = ",".join(f"k{j}" for j in range(250)) + "\n" + "".join(
        ",".join(f"{(i * j) % 7 if j % 2 else 3}" for j in range(250)) + "\n" for i in range(40))
    prepare(tmp_path, content)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) < 45 and max(map(len, printed)) < 3000, printed
    assert {"  ... and 230 more such lines", "  ... and 138 more such lines"} <= set(printed)
    assert any(line.startswith("text tokens (254)") and line.endswith("... and 54 more") for line in printed)


def test_scratch_of_a_killed_run_is_removed_and_a_full_tmpdir_named(tmp_path, monkeypatch):
    import subprocess
    import tempfile
    import reading
    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for pid in (dead.pid, os.getpid()):
        (tmp_path / f"prepare-text-{pid}-x1").mkdir()
    prepare(tmp_path, CSV)
    assert not (tmp_path / f"prepare-text-{dead.pid}-x1").exists()
    assert (tmp_path / f"prepare-text-{os.getpid()}-x1").exists()
    def full(*_):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(reading.Column, "write", full)
    assert error(tmp_path, CSV).startswith(f"error: {tmp_path} (TMPDIR): No space left")
