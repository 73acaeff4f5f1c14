"""prepare/text.py: CSV or JSON lines become records scaled to order 1; a misreading, one line."""
import csv
import datetime
import gzip
import inspect
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import warnings
from decimal import Decimal

import numpy as np
import pytest
from conftest import ROOT, run
from helpers import EVAL_TINY, tokenize

import text

from dataset import Split
from predict import masked_numbers
from records import SPLITS
from tokenize_line import split_text

CSV = "station,t,p,weather\n" + "".join(
    f"{'abc'[i % 3]},{10 + 7 * np.sin(i / 9) + i % 3:.2f},{1013 + 5 * np.cos(i / 7):.1f},{'rain' if i % 4 else 'dry'}\n"
    for i in range(60))
JSONL = "".join(json.dumps({"site": "ns"[i % 2], "t": [round(280 + i / 3 + k, 2) for k in range(3)],
                            "h": 1e-3 * i}) + "\n" for i in range(40))
LONG_CSV = "station,t,p\n" + "".join(
    f"{'ab'[i % 2]},{10 + 7 * np.sin(i / 9):.2f},{1013 + 5 * np.cos(i / 7):.1f}\n" for i in range(400))
SERIES = "date,co2,rain\n" + "".join(
    f"1990-01-{1 + i % 28:02d},{350 + i / 10 + np.sin(i / 5):.2f},"
    f"{'' if i in (7, 33) else 'NA' if i == 50 else f'{i % 7 / 10:.1f}'}\n" for i in range(80))
TRAIN = ("train.py", "config/own_small.py", *EVAL_TINY, "--eval_interval=2", "--eval_batches=1", "--batch_size=8",
         "--micro_batch_size=8")
OMIT_OR_DROP = "--missing=omit leaves it out of the record, --missing=drop drops the record"
SIGN = "is a number written with a currency or percent sign, digit groups or in hex; write"
SIGNS = [("45%", "45"), ("$12.50", "12.50"), ("-€3", "-3"), ("1_000", "1000"), ("0x1F", "31")]


def write(path, content):
    path.write_bytes(content.encode() if isinstance(content, str) else content)


@pytest.fixture
def prepare(tmp_path):
    """text.py on `content` in a folder whose name holds a space: (out, meta)."""
    def prepare(content, *flags, name="data.csv"):
        folder = tmp_path / "my data"
        folder.mkdir(exist_ok=True)
        write(folder / name, content)
        text.main([str(folder / name), "--out", str(folder / "out"), "--force", *flags])
        return folder / "out", json.loads((folder / "out" / "meta.json").read_text())
    return prepare


@pytest.fixture
def error(tmp_path):
    """text.py's refusal of `content`: one line, nothing written."""
    def error(content, *flags, name="bad.csv"):
        if content is not None:
            write(tmp_path / name, content)
        with pytest.raises(SystemExit) as e:
            text.main([str(tmp_path / name), "--out", str(tmp_path / "never"), *flags])
        assert not (tmp_path / "never").exists() and "\n" not in str(e.value.code)
        return str(e.value.code)
    return error


def said(capsys, *phrases):
    """What was printed since the last look; it holds every phrase."""
    printed = capsys.readouterr().out
    for phrase in phrases:
        assert phrase in printed
    return printed


def lines(out, *splits):
    return "".join((out / f"{s}.txt").read_text() for s in splits or SPLITS)


def read(out, *splits):
    return [json.loads(line) for line in lines(out, *splits).splitlines()]


def original(meta, key, values):
    s = meta["scales"][key]
    return [v * s["spread"] + s["center"] for v in values]


def undone(content, out, meta):
    """Every number written, unscaled, gives back each digit of the input's."""
    if content.startswith("{"):
        rows = [json.loads(line, parse_float=Decimal, parse_int=Decimal) for line in content.splitlines()]
    else:
        rows = list(csv.DictReader(content.splitlines()))
    for key in meta["scales"]:
        inputs = sorted(Decimal(x) for r in rows for x in np.ravel(r[key]).tolist())
        values = original(meta, key, [float(x) for r in read(out) for x in np.ravel(r[key])])
        written = sorted(Decimal(repr(x)) for x in values)
        assert len(written) == len(inputs)
        assert sorted(w.quantize(x) for w, x in zip(written, inputs)) == inputs, key


def column_x(cell):
    return "t,x\n" + "".join(f"{i},{cell}\n" for i in range(20))


def test_a_csv_becomes_a_dataset_that_tokenizes(prepare, capsys):
    out, meta = prepare(CSV)
    said(capsys, "station: text, 3 value(s): a, b, c", "(x - ", "numbers per record: 2-2", '"rain"',
         "note: eval.py and sample.py predict 't' (the first key of numbers that varies); --target KEY"
         " names the one to predict (t, p)")
    assert meta["dataset"] == "text" and meta["window"] is None and meta["mask_key"] == "t"
    assert meta["splits"] == {"train": 48, "val": 6, "test": 6}
    assert meta["keys"] == ["station", "t", "p", "weather"]
    assert meta["text_keys"] == ["station", "weather"]
    assert set(meta["scales"]) == {"t", "p"} and abs(meta["scales"]["p"]["center"] - 1013) < 2
    assert {r["station"] for r in read(out)} == {"a", "b", "c"}  # 60 records: undone() counts them
    train_p = np.array([r["p"] for r in read(out, "train")])
    assert abs(train_p.mean()) < 1e-3 and abs(train_p.std() - 1) < 1e-3
    undone(CSV, out, meta)
    tokenize(out)
    assert len(Split(str(out), "test", "xval")) == 6
    # decimal commas and gzip read as the plain file
    plain = lines(out, "train")
    euro = CSV.replace(",", ";").replace(".", ",")
    assert lines(prepare(euro, "--decimal-comma")[0], "train") == plain
    assert lines(prepare(gzip.compress(CSV.encode()), name="d.csv.gz")[0], "train") == plain
    said(capsys)
    out, meta = prepare(CSV, "--scale", "none", "--target", "p")
    assert meta["scales"]["p"] == {"center": 0.0, "spread": 1.0} and meta["mask_key"] == "p"
    assert all(1000 < r["p"] < 1020 for r in read(out))
    assert "note: eval.py" not in said(capsys, "warning: key 'p': numbers up to |x| = 10")


def test_json_lines_arrays_and_objects_over_lines_are_records_windows_keep_their_layout(prepare):
    out, meta = prepare(JSONL, name="data.jsonl")
    undone(JSONL, out, meta)
    train = lines(out, "train")
    records = [json.loads(line) for line in JSONL.splitlines()]
    for content in (json.dumps(records), json.dumps(records, indent=2),
                    "\n".join(json.dumps(r, indent=2) for r in records)):
        out, meta = prepare(content, name="data.json")
        assert lines(out, "train") == train and meta["splits"]["train"] == 32
    flags = ("--window", "3", "--split", "0.6,0.2,0.2", "--seed", "3", "--order", "random")
    out, meta = prepare(JSONL, *flags, name="data.jsonl")
    # 40 records: 13 windows, 1 left out
    assert meta["window"] == 3 and sum(meta["splits"].values()) == 13
    record = read(out, "train")[0]
    assert list(record) == ["site", "t", "h"] and len(record["site"]) == 3
    assert np.shape(record["t"]) == (3, 3)
    tokenize(out)
    assert len(Split(str(out), "train", "xval")) == meta["splits"]["train"]
    # the lines written read back as the records: rows 27-29, the last 10%
    content = "t,p,sky\n" + "".join(f"{i},{1000 + i % 7}.5,{'ab'[i % 2]}\n" for i in range(30))
    out, meta = prepare(content, "--window", "3")
    record = read(out, "test")[0]
    assert list(record) == ["t", "p", "sky"] and record["sky"] == ["b", "a", "b"]
    assert [round(p, 1) for p in original(meta, "p", record["p"])] == [1006.5, 1000.5, 1001.5]


def test_dates_are_left_out_and_text_with_digits_is_one_word_everywhere(prepare, error, capsys):
    content = "\ufeffdate,day,at,site,room,zip,pm2.5\n" + "".join(
        f"2021-03-{d:02d},202103{d:02d},2021-03-{d:02d} {d:02d}:00:01,b7,room {d % 3},"
        f"0{1000 + d % 2},{d / 4}\n" for d in range(1, 21))
    out, meta = prepare(content, "--text", "zip", "--dates=number")
    said(capsys, "(20210301 ... 20210320): kept as a number (--dates=number)")
    # ISO dates and yyyymmdd as decimal years, date-times to the second
    d = np.rint(4 * np.array(original(meta, "pm2_5", [r["pm2_5"] for r in read(out)])))
    year = 2021 + (58 + d) / 365
    hand = {"date": year, "day": year, "at": year + (d + 1 / 3600) / 24 / 365}
    for key, values in hand.items():
        assert original(meta, key, [r[key] for r in read(out)]) == pytest.approx(values, abs=1e-9)
    out, meta = prepare(content, "--text", "zip")
    said(capsys, "note: key 'date' holds dates or times")
    assert meta["dates_left_out"] == ["date", "day", "at"]
    assert meta["keys"] == ["site", "room", "zip", "pm2_5"]
    assert meta["renamed"] == {"pm2.5": "pm2_5"}
    assert {r["room"] for r in read(out)} == {"room_0", "room_1", "room_2"}
    assert {r["zip"] for r in read(out)} == {"_01000", "_01001"}
    for line in lines(out).splitlines():
        assert masked_numbers(line, split_text(line), "x", ["pm2_5"]) == {"pm2_5": [0]}
    tokenize(out)
    assert re.search(r"bad.csv:2: column 'zip': '0100[01]' has a leading zero.*--text zip", error(content))
    # as spreadsheets write them
    formats = {"us": "%m/%d/%Y %I:%M %p", "named": "%d-%b-%Y", "long": "%B %d, %Y",
               "de": "%d.%m.%y %H:%M", "short": "%m/%d/%y", "utc": "%Y-%m-%d %H:%M:%S UTC",
               "month": "%b-%Y", "clock": "%I:%M %p"}
    start = datetime.datetime(2021, 1, 1, 5, 6)
    days = [start + datetime.timedelta(days=40 * i, hours=7 * i) for i in range(20)]
    rows = [",".join(f'"{d.strftime(f)}"' for f in formats.values()) + f",{i / 4}\n" for i, d in enumerate(days)]
    _, meta = prepare(",".join(formats) + ",t\n" + "".join(rows))
    assert meta["dates_left_out"] == list(formats) and meta["keys"] == ["t"]
    said(capsys, "note: key 'named' holds dates or times (01-Jan-2021 ... 05-Feb-2023)")
    # in a JSON list, and numbers read as text (--text)
    prepare("".join(f'{{"a":["pm2.5"],"b":"r 1","x":{i}}}\n' for i in range(20)), name="d.jsonl")
    said(capsys, "word each: 'r 1' as 'r_1'")
    for cell, _ in SIGNS:
        assert sum(prepare(column_x(cell), "--text", "x")[1]["splits"].values()) == 20
    content = "".join(json.dumps({"diet": i % 4 + 1, "w": 40 + i}) + "\n" for i in range(40))
    out, meta = prepare(content, "--text", "diet", name="d.jsonl")
    assert meta["text_keys"] == ["diet"] and "diet" not in meta["scales"]
    assert {r["diet"] for r in read(out)} == {"_1", "_2", "_3", "_4"}


STACKED = [(a, d) for a in range(2) for d in range(1, 21)]
# interleaved, days 3 and 4 swapped
SWAPPED = [(a, d) for d in (1, 2, 4, 3, *range(5, 21)) for a in range(2)]
# days 10, missing, 9: rows apart not compared
GAPPED = [(0, d) for d in (*range(1, 11), 0, 9, *range(11, 21))]


@pytest.mark.parametrize("rows,flags,back", [
    (STACKED, (), "data.csv:22: sort the file"), (STACKED, ("--group", "animal"), None),
    (SWAPPED, ("--group", "animal"), "data.csv:8: sort the file"),
    (GAPPED, ("--missing", "omit"), None)])
def test_dates_going_back_are_noted_within_each_group(prepare, capsys, rows, flags, back):
    content = "animal,date,w\n" + "".join(
        f"{a},{f'2021-03-{d:02d}' if d else 'NA'},{d + a}\n" for a, d in rows)
    prepare(content, "--window", "2", *flags)
    printed = said(capsys, "left out (--dates=number keeps it as a number)")
    assert re.findall(r"[^/]*: sort the file", printed) == ([back] if back else [])


def test_val_and_test_files_an_unseen_text_value_force_a_file_given_twice_or_a_fifo(
        tmp_path, prepare, error, capsys):
    for name, content in (("val", "b,1.5"), ("train", "a,1.0\nb,2.0")):
        (tmp_path / f"{name}.csv").write_text(f"station,t\n{content}\n")
    flags = [str(tmp_path / "train.csv"), "--val", str(tmp_path / "val.csv"),
             "--test", str(tmp_path / "test.csv"), "--out", str(tmp_path / "o")]

    def splits(test, *more):
        (tmp_path / "test.csv").write_text(f"station,t\n{test}\n")
        text.main([*flags, *more])
        return json.loads((tmp_path / "o" / "meta.json").read_text())["splits"]
    unseen = r"test.csv:2: .*'\"z\"', which no training record has; leave out its key 'station'"
    with pytest.raises(SystemExit, match=unseen):
        splits("z,1.5")
    assert splits("a,1.25") == {"train": 2, "val": 1, "test": 1}
    (tmp_path / "o" / "lab_notes.txt").write_text("mine\n")
    with pytest.raises(SystemExit, match="--force"):
        splits("a,1.25")
    # the dataset replaced, other files kept
    assert splits("a,1.25\nb,1.5", "--force")["test"] == 2
    assert (tmp_path / "o" / "lab_notes.txt").read_text() == "mine\n"
    # each group in its own file's split
    grouped = splits("a,1.25\nb,1.5", "--force", "--group", "station")
    assert grouped == {"train": 2, "val": 1, "test": 2}
    os.mkfifo(tmp_path / "fifo.csv")
    assert "fifo.csv is a FIFO, device or socket; expected a file" in error(None, name="fifo.csv")
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    for path in (a, b):
        write(path, CSV)
    given_twice = r"holds the same bytes as .*a.csv: a file given twice"
    for files in ([a, a], [a, b], [a, "--val", b, "--test", tmp_path / "t.csv"]):
        with pytest.raises(SystemExit, match=given_twice):
            text.main([*map(str, files), "--out", str(tmp_path / "o")])
    # every record twice: most land in two splits
    prepare(CSV + CSV.partition("\n")[2])
    assert re.search(r"note: \d+ of the 12 val records are also, exactly, in train", said(capsys))


TWO_ROWS = "a,b\n1,2\n3,4\n"


@pytest.mark.parametrize("case", [
    ("a,b\n1,2\n3\n", r"bad.csv:3: 1 cells, but the header \(.*bad.csv:1\) names 2 columns"),
    ("", "bad.csv: empty file"),
    ("\n\n", "bad.jsonl: empty file"),
    ("a\n1\n\n2\n", "bad.csv:3: empty line; expected one row per record"),
    ('{"a":1,"b":2}\n{"a":3}\n', "bad.jsonl:2: key 'b' is missing .*" + OMIT_OR_DROP),
    ('{"a":1}\n{"a":3,"c":4}\n', "bad.jsonl:1: key 'c' is missing"),
    ('{"a":1}\n{"a":"rain"}\n', "bad.jsonl:2: key 'a' holds text, but number"),
    ("a,b\n1,2\n,4\n", "bad.csv:3: column 'a' is missing .*" + OMIT_OR_DROP),
    ("a,b\n1,2\n1.2.3,4\n5,6\n", r"bad.csv:3: column 'a': '1.2.3' is not a number"),
    ("a,b\n1,2\n--5,4\n5,6\n", r"bad.csv:3: column 'a': '--5' is not a number"),
    ('{"a":1.2.3}\n', "bad.jsonl:1: not a JSON record"),
    ('{"t":1,"x":"0.0"}\n', "bad.jsonl:1: key 'x': '0.0' is a number written as a string"),
    ('{"a":1}\n{"a":NaN}\n', "bad.jsonl:2: key 'a' is missing"),
    ('{"a":Infinity}\n', "bad.jsonl:1: Infinity is not a finite number"),
    (TWO_ROWS, "bad.csv:3: the file ends after 2 rows, before a window of 3", "--window 3 --order random"),
    (TWO_ROWS, r"bad.csv: --split 0.8,0.1,0.1 in time order cuts its 2 rows into 2/0/0.*: more rows or",
     "--window 3"),
    ("a\n" + "0\n" * 10, r"cuts its 10 rows into 6/2/2; each part needs 3 row\(s\): --context-before$",
     "--window 3 --split 0.6,0.2,0.2"),
    (TWO_ROWS, r"--split 0.8,0.1,0.1: 2 records give train/val/test"),
    ("a,a\n1,2\n", "bad.csv:1: column 2 of the header is 'a' again"),
    ('t,"x\ny",g\n1,2,3\n', "bad.csv:1: column 2 of the header holds a line break"),
    ('{"a":1,"a":2}\n', "bad.jsonl:1: key 'a' is repeated in one object"),
    ('t,note\n1,"ok"\n2,"open\n3,x\n4,y\n', r"bad.csv:3: unexpected end of data \(an unterminated"),
    ('t,n,m\n1,2,3\n4,"x\n5,6,7\n', r"bad.csv:3: unexpected end of data \(an unterminated"),
    ("t,x\na," + "z" * (200 << 10) + "\n5\n", "bad.csv:3: 1 cells"),
    # its text in a cell above
    ('a,b,c\n1,2,"x\n5,6\nz"\n5,6\n', "bad.csv:5: 2 cells, but the header"),
    ("t,x\n" + "".join(f"{i},{'' if i < 16 else 1}\n" for i in range(20)),
     "key 'x' holds no number in the training split", "--order time --missing omit"),
    ("t,p\r\n1,2\r\n3\r,4\r\n", r"bad.csv:3: a lone carriage return \(\\r\) at column 2"),
    ('t,n\n1,"33,231"\n2,"1,000"\n', (r"bad.csv:2: column 'n': '33,231' holds a thousands separator or a "
     r"decimal comma; write 33231 or 33.231")),
    (CSV.replace(",", ";").replace(".", ","), (r"bad.csv:2: column 't': '10,00' holds a thousands separator "
     r"or a decimal comma; write 1000 or 10.00, or --decimal-comma")),
    ("t p q\n1 2 3\n", "bad.csv:1: the header holds no , ; tab or | but spaces"),
    ("a,b\n1,2\n", "bad.csv:1: --columns names 'c', not a column here: a, b", "--columns a,c"),
    ('{"a":[1,2],"b":1}\n', "--text names 'z', not a column or key", "--text z"),
    (CSV, "--target station: not a key of numbers; expected one of t, p$", "--target station"),
    ("a\n1\n2\n", ("--stride 1 < --window 2 with --order random: overlapping windows would share rows "
     "between train and test"), "--window 2 --stride 1 --order random"),
    ("t,e\n1,\n2,NA\n", r"key 'e' holds no value in any record; leave it out with --columns"),
    ("t,e\n1,\n2,NA\n", r"key 'e' holds no value in any record", "--missing omit"),
    ("# logger 7\n# units: C, hPa\nt,p\n1,2\n", (r"bad.csv:1: '# logger 7' is a comment, not a header "
     r"\(2 line\(s\) start with #\); expected the column names on line 1: delete the lines")),
    ("x\n2\n1e400\n", r"bad.csv:3: column 'x': 1E\+400 is beyond what a float64 holds"),
    ("x\n2\n1e-320\n", r"bad.csv:3: column 'x': 1E-320 is beyond what a float64 holds, squared"),
    (CSV, r"^error: argument --stride: expected an integer ≥ 1, got 0 \(--help lists", "--stride 0"),
    (CSV, r"^error: argument --window: invalid integer value: 'nan'", "--window nan"),
    (CSV, r"^error: argument --seed: expected an integer ≥ 0, got -1", "--seed -1"),
    ("".join(f'{{"x": {i}, "y": {{"12": {i % 5}}}}}\n' for i in range(40)),
     r"bad.jsonl:1: the tokenizer reads a number in the key '12'; rename it '_12'$"),
    ('{"t":1,"x":[2,-1e-400]}\n', r"bad.jsonl:1: key 'x': -1E-400 is beyond what a float64 holds"),
    ('t,x\n0,"$1,000.50"\n', rf"bad.csv:2: column 'x': '\$1,000.50' {SIGN} 1000.50"),
    (json.dumps({"t": {str(i): i for i in range(20)}, "x": {str(i): i / 2 for i in range(20)}}),
     "one JSON object of columns of 20 values"),
    ("t;p\n1;1014\n2;1.013,5\n3;1012\n", r"bad.csv:3: column 'p': '1.013,5' is not a number", "--decimal-comma"),
    ("t;p\n1;1014\n2;1.5\n3;1012\n", (r"bad.csv:3: column 'p': '1.5' holds a point, but --decimal-comma "
     r"says numbers are written 12,5"), "--decimal-comma"),
    ("".join(f"{i / 10},{3 + i % 4},{'ab'[i % 2]}\n" for i in range(1, 40)),
     (r"bad.csv:1: the header holds numbers \(0.1, 4\): a file without a header row\? "
      r".*add a line of names")),
    ("a,b\n1,2\n", "--split nan,0.5,0.5: expected three positive fractions", "--split nan,0.5,0.5"),
    ("x\n" + "1\n" * 20 + "1e308\n", r"bad.csv:22: column 'x': 1E\+308 is beyond what a float64"),
    ("d,t\n12:30,1\n", r"bad.csv:2: key 'd': --dates=number reads ISO .*'12:30'", "--dates=number"),
    ("a,b,c\n1,2,3\n", "bad.csv:1: --group names 'x', not a column here: a, b, c", "--columns a,b --group x"),
    ('{"a":1}\n', "--columns names 'b', not a column or key of the files: a$", "--columns a,b"),
    ('{"a":' + "[" * 5000 + "]" * 5000 + "}\n", "bad.jsonl:1: a record nested too deep"),
    ("t,x\n1," + "y" * (3 << 20) + "\n", "bad.csv:2: a row of more than 1 MiB"),
    ('t,x\n1,"' + "y\n" * (1 << 20) + '"\n', "bad.csv:2: a row of more than 1 MiB"),
    ("t,x\n" + "y" * (3 << 19) + ",1\n", "bad.csv:2: a row of more than 1 MiB"),
    ("x\n1\n" + "y" * 99 + "\n3\n", r"bad.csv:3: column 'x': 'y{60}'… \(99 characters\) is not a number"),
    ('t,n\n1,"1,013.2"\n', r"'1,013.2' holds a thousands separator or a decimal comma; write 1013.2, or --text n$",
     "--decimal-comma"),
    ("Temp (°C),n\n01,2\n", r"bad.csv:2: column 'Temp \(°C\)': '01' .*; --text 'Temp \(°C\)' reads it as text$"),
    ("t,n\n" + "１６,a\n" * 20, "bad.csv: no key holds numbers to predict; write digits 0-9, no unit"),
    # an .xlsx is a zip archive
    (b"PK\x03\x04\x14\x00\x06\x00", r"bad.xlsx: a zip archive or an Excel workbook .*CSV UTF-8"),
    (CSV.encode("utf-16"), r"bad.csv: UTF-16 text \(Excel's Unicode Text\); save the file as UTF-8"),
    ('[{"a":1},\n{"a":2}\n', r"bad.json:2: the file ends inside the JSON array"),
    ('[{"a":1},\n 5]', r"bad.json:2 \(record 2\): expected a JSON object"),
    ('[{"a":1} {"a":2}]', r"bad.json:1: expected , or \] after a record"),
    ('[{"a":1}] x', r"bad.json:1: expected nothing after the JSON array's \]"),
    ('[{"a":1},{"b":2}]', r"bad.json:1 \(record 1\): key 'b' is missing"),
    ("[]", r"bad.json: an empty JSON array"),
    # too short to split in time or at random: the fixes that work
    ("animal,day,w\n" + "".join(f"{a},{d},{d}\n" for a in "abc" for d in range(12)),
     ("the val split holds no record; more data, other --split fractions, --context-before, "
      "--order random, a smaller --window or --stride"), "--group animal --window 4"),
    ('{"a":1}\n{"a":\n', r"bad.json:2: not a JSON record \(Expecting value at column 6\)"),
] + [(f"t,p\n1.5,2\n2.5,{m}\n3,4\n", "bad.csv:3: column 'p' is missing .*" + OMIT_OR_DROP)
     for m in ("", "NA", "NaN", "null", "?", "-", "n/a")
] + [(column_x(cell), rf"bad.csv:2: column 'x': '{re.escape(cell)}' {SIGN} {re.escape(plain)}, or --text x")
     for cell, plain in SIGNS
] + [("".join(json.dumps({"t": i, "x": [1.5, cell]}) + "\n" for i in range(20)),
      (rf"bad.jsonl:1: key 'x': '{re.escape(cell)}' is a number written as a string; write it as "
       rf"a JSON number \({re.escape(plain)}\), or --text x")) for cell, plain in SIGNS])
def test_what_would_be_misread_is_a_one_line_error_naming_file_and_line(error, case):
    content, expected, *flags = case  # flags: one string, if any
    name = re.match(r"bad\.\w+|", expected)[0] or "bad.csv"
    assert re.search(expected, error(content, *"".join(flags).split(), name=name))


@pytest.mark.parametrize("content, name, flags, key", [
    (LONG_CSV, "data.csv", "--window 4", "t"), (JSONL, "data.jsonl", "", "t"),
    # p missing where it ends in .3
    (re.sub(r",1\d{3}\.3\n", ",NA\n", LONG_CSV), "data.csv", "--missing omit", "p"),
    (LONG_CSV.replace("station,t,p", "station,Temp (°C),p"), "data.csv", "", "Temp (°C)")])
def test_own_data_from_file_to_scores_in_original_units(prepare, content, name, flags, key):
    out, meta = prepare(content, *flags.split(), name=name)
    tokenize(out)
    run_dir = out.parent / "run"
    train = (*TRAIN, f"--data_dir={out}", f"--out_dir={run_dir}", "--max_iters=4")
    r = run(*train)
    # the hint names a key of numbers, not an index
    assert f"--mask_key={meta['mask_key']}" in r.stdout
    if key.startswith("Temp"):
        # the hints, pasted into a shell
        assert meta["mask_key"] == key
        words = shlex.split(r.stdout.split("predict with:")[1])
        assert words[:2] == ["python", "sample.py"] and f"--mask_key={key}" in words
        printed = run(*words[1:], "--max_lines=3").stdout
        words = shlex.split(printed.splitlines()[-1].split(": ", 1)[1])
        assert words[:2] == ["python", "eval.py"] and f"--mask_key={key}" in words
        assert "original units" in run(*words[1:], "--max_samples=3").stdout
        return
    # a second dataset needs another out_dir
    assert "choose another --out_dir" in run(*train, check=False).stderr
    ckpt = f"--ckpt={run_dir / 'ckpt_best.pt'}"
    assert "original units" in run("eval.py", ckpt, f"--mask_key={key}").stdout
    report = json.loads((run_dir / f"eval_{key}.json").read_text())
    scores, spread = report["splits"]["test"][key], meta["scales"][key]["spread"]
    assert report["task"] == "text" and scores["n"] == sum(key in r for r in read(out, "test"))
    assert scores["mean"]["mse_original"] == pytest.approx(scores["mean"]["mse"] * spread ** 2)
    assert ("persistence" in scores) == (bool(meta["window"]) or name == "data.jsonl")
    assert "train_mean" in scores
    # records without the key left out, and said
    r = run("sample.py", ckpt, f"--input={out / 'test.txt'}", f"--mask_key={key}")
    assert f"{scores['n']} numbers predicted" in r.stdout
    assert (scores["n"] < meta["splits"]["test"]) == ("lines have no number under key" in r.stderr)


def test_missing_values_omitted_or_dropped_and_every_row_accounted_for(prepare, capsys):
    out, meta = prepare(SERIES, "--missing", "omit", "--order", "random")
    said(capsys, "'', 'NA', 'N/A', 'NaN', 'null'", "rain 3 values left out",
         "rows: 80 read = 80 in records written + 0 left out")
    records = read(out)
    assert len(records) == 80 and sum("rain" not in r for r in records) == 3
    assert all("co2" in r for r in records) and meta["missing"]["records"] == {"rain": 3}
    out, meta = prepare(SERIES, "--missing", "drop")
    said(capsys, "rows: 80 read = 77 in records written + 3 left out for a missing value")
    assert sum(meta["splits"].values()) == 77 and meta["rows"] == {"read": 80, "in_records": 77}
    jsonl = "".join(json.dumps({"t": i / 2, "h": None if i == 3 else i % 5}) + "\n" for i in range(30))
    out, meta = prepare(jsonl, "--missing", "omit", name="d.jsonl")
    assert meta["missing"]["records"] == {"h": 1} and len(read(out)) == 30
    # a gap drops its window
    out, meta = prepare(SERIES, "--window", "8", "--missing", "drop")
    said(capsys, "rows: 80 read = 56 in records written + 24 left out for a missing value + 0 in "
                 "no window", "note: key 'co2': val/test numbers reach [")
    assert meta["splits"] == {"train": 5, "val": 1, "test": 1}
    assert meta["missing"]["records"] == {"rain": 3}
    # one key, a gap in 10 windows of 3 rows
    content = "date,co2\n" + "".join(
        f"2001-01-{1 + i % 28:02d},{'NA' if i % 9 == 4 else f'{300 + i / 7:.3f}'}\n"
        for i in range(90))
    _, meta = prepare(content, "--window", "3", "--missing", "omit")
    said(capsys, "note: 10 record(s) left out: every key of theirs missing",
         "co2 10 windows that leave the key out (omit)")
    assert sum(meta["splits"].values()) == 30 - 10
    # any number of keys
    rows = [",".join("" if j == 64 and i % 2 else f"{i * j % 13}.5" for j in range(70)) for i in range(100)]
    header = ",".join(f"c{j}" for j in range(70))
    out, meta = prepare("\n".join([header, *rows]) + "\n", "--missing", "omit")
    assert meta["missing"]["records"] == {"c64": 50} and "null" not in lines(out)
    assert len(read(out)) == 100 and sum("c64" not in r for r in read(out)) == 50


def test_windows_are_split_in_time_order_with_a_stride(prepare, capsys):
    content = "day,x\n" + "".join(f"{i},{i * 0.5 + np.sin(i):.3f}\n" for i in range(100))
    out, meta = prepare(content, "--window", "4", "--stride", "2", "--split", "0.6,0.2,0.2")
    said(capsys, "note: key 'day' goes up by 1 from row to row")
    assert meta["window"] == 4 and meta["stride"] == 2 and meta["source"]["order"] == "time"
    days = {s: [[round(d) for d in original(meta, "day", r["day"])] for r in read(out, s)] for s in SPLITS}
    # 60/20/20 rows: windows every 2 rows inside each part
    assert [len(days[s]) for s in SPLITS] == [29, 9, 9]
    assert max(map(max, days["train"])) < 60 <= min(map(min, days["val"]))
    assert max(map(max, days["val"])) < 80 <= min(map(min, days["test"]))
    assert days["train"][1] == [2, 3, 4, 5] and meta["mask_key"] == "x"
    # an hour that wraps, Unix time, a rounded step
    for content, step in (
            ("hour,t\n" + "".join(f"{i % 24},{np.sin(i / 5):.3f}\n" for i in range(100)), "1"),
            ("time,t\n" + "".join(f"{1614816000 + 3600 * i},{np.sin(i / 5):.3f}\n"
                                  for i in range(100)), "3600"),
            ("time,t\n" + "".join(f"{1920 + i / 12:.11f},{np.sin(i):.3f}\n" for i in range(60)),
             "0.08333333333")):
        assert prepare(content, "--window", "4")[1]["mask_key"] == "t"
        said(capsys, f"goes up by {step} from row to row")
    # steps of 1 and 2
    prepare("n,t\n" + "".join(f"{i + i // 2},{np.sin(i):.3f}\n" for i in range(60)))
    assert "note: key 'n' goes up" not in said(capsys)


def test_messy_csv_reads_right_and_says_how(prepare, error, capsys):
    notes = ["two\rlines" if i % 4 == 1 else "one" for i in range(41)]
    rows = [f'"{i}";{i / 4:.2f};{"ab"[i % 2]};"{notes[i]}";{9 - i % 3}' for i in range(1, 41)]
    out, meta = prepare("\r".join(['"";"t";"s";"note";"k"', *rows]) + "\r", "--columns", "t,s,note")
    printed = said(capsys, "its lines end in a carriage return alone",
                   "columns separated by a semicolon",
                   "column 1 has no name (row names, as R writes them): left out")
    assert re.search(r"data.csv:2-3: a quoted cell holds a line break \(10 such row", printed)
    assert meta["keys"] == ["t", "s", "note"] and len(read(out)) == 40
    assert {r["note"] for r in read(out)} == {"one", "two\nlines"}
    # a header may start with a bracket
    assert prepare("[a],b\n" + "".join(f"{i},{i}\n" for i in range(20)))[1]["keys"] == ["[a]", "b"]
    # Windows line ends read as Unix ones
    rows = ["t,p"] + [f"{i},{i % 7}" for i in range(7000)]
    unix = lines(prepare("\n".join(rows) + "\n")[0], "train")
    assert lines(prepare("\r\n".join(rows) + "\r\n")[0], "train") == unix
    # a stray carriage return far in
    rows[6900] = "3\r,4"
    assert re.search(r"bad.csv:6901: a lone carriage return \(\\r\) at column 2", error("\n".join(rows)))


@pytest.mark.parametrize("header", ["t,p,site,", "t,p,site"])
def test_a_delimiter_ending_every_row_is_an_empty_column_left_out(prepare, error, capsys, header):
    rows = "".join(f"{i / 4},{1000 + i % 7},{'ab'[i % 2]},\r\n" for i in range(30))
    _, meta = prepare(header + "\r\n" + rows + "\r\n")
    said(capsys, "every row ends in a comma, an empty last column with no name: left out")
    assert meta["keys"] == ["t", "p", "site"] and sum(meta["splits"].values()) == 30
    # not every row
    message = error(header + "\r\n" + rows.replace("0.25,1001,b,\r\n", "0.25,1001,b\r\n"))
    if header.endswith(","):
        assert re.search(r"bad.csv:3: 3 cells, but the header .* names 4", message)
    else:
        assert re.search(r"bad.csv:2: 4 cells, but the header .* names 3 columns \(the last one "
                         r"empty: a delimiter at the end of some rows but not all\? remove it\)",
                         message)


def test_what_the_model_cannot_use_well_is_named(prepare, capsys):
    ids = "".join(f"{12345678901234567890 + i},{10.0 ** (i % 40 - 20):.3g},7,{i % 5}\n" for i in range(40))
    prepare("id,wide,c,y\n" + ids)
    printed = said(capsys, "note: key 'c' is constant in train (7)")
    assert re.search(r"warning: \S*/my data/data.csv:\d+: key 'id': 1234567890123456789\d and "
                     r"1234567890123456789\d .*reach the model as one value", printed)
    assert re.search(r"warning: key 'wide': \|x\| from 1e-20 to 1e\+19: scaled.*log10", printed)
    # |x| 7.8 once scaled, then past 10
    for n, far in ((60, False), (300, True)):
        days = [1] * n + [40]
        prepare("day,t\n" + "".join(f"{d},{np.sin(i):.3f}\n" for i, d in enumerate(days)))
        printed = said(capsys)
        far_off = re.search(r"warning: key 'day': scaled, its numbers reach \|x\| = 1\d\.\d; .*order 1", printed)
        assert bool(far_off) == far
        assert far or "warning: key 'day'" not in printed
    # a tiny number beside large ones: at most 17 digits
    content = "x,y\n" + "".join(f"{i}.5,{'1e-60' if i % 2 else 1}\n" for i in range(40))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out, meta = prepare(content)
    assert meta["decimals"]["y"] <= 17 and all(len(str(r["y"])) <= 20 for r in read(out))


def test_groups_keep_their_rows_too_short_ones_go_to_train_and_the_split_is_said(prepare, capsys):
    # animals interleaved by day
    rows = [(a, day, 40 + 3 * day + a) for day in range(30) for a in range(4)]
    content = "animal,day,weight\n" + "".join(f"a{a},{d},{w}\n" for a, d, w in rows)
    flags = ("--window", "5", "--group", "animal", "--split", "0.6,0.2,0.2")
    out, meta = prepare(content, *flags)
    said(capsys, "split in time order within each group (animal)", "--context-before",
         "note: key 'animal' names each row's group",
         "warning: the test split holds 4 record(s): a score over fewer than 30 says little")
    assert meta["keys"] == ["day", "weight"] and meta["source"]["group"] == "animal"
    assert meta["splits"] == {"train": 12, "val": 4, "test": 4}
    # one animal's consecutive days, never two animals; source.txt names each record's first row
    rows = content.splitlines()
    for r, place in zip(read(out), open(out / "train.source.txt")):
        days = [round(d) for d in original(meta, "day", r["day"])]
        assert days == list(range(days[0], days[0] + 5))
        path, line = place.rstrip("\n").rsplit(":", 1)
        assert path.endswith("data.csv") and rows[int(line) - 1].split(",")[1] == str(days[0])
    # every test day ends a window, its context the days before
    _, meta = prepare(content, *flags, "--stride", "1", "--context-before")
    assert meta["splits"]["test"] == 4 * 6
    # groups too short to split go to train, and --columns keeps the group
    sizes = {"a": 30, "b": 30, "c": 5, "d": 2}
    content = "animal,day,w\n" + "".join(f"{a},{d},{3 * d + n}\n" for a, n in sizes.items() for d in range(n))
    flags = ("--group", "animal", "--window", "4", "--stride", "1", "--split", "0.6,0.2,0.2")
    _, meta = prepare(content, *flags, "--columns", "day,w")
    said(capsys, "note: 1 group(s) shorter than --window (2 rows): left out",
         "note: 1 group(s) too short to split in time (5 rows): whole in train")
    # c's 5 rows make 2 training windows, d's 2 none
    assert meta["splits"] == {"train": 32, "val": 6, "test": 6} and meta["keys"] == ["day", "w"]
    # whole groups per split: overlapping windows cannot leak; d is shorter than a window
    _, meta = prepare(content, *flags, "--window", "3", "--order", "random")
    printed = said(capsys, "note: 1 group(s) shorter than --window (2 rows): left out")
    assert meta["source"]["order"] == "random" and "--context-before" not in printed
    assert sum(meta["splits"].values()) == 28 + 28 + 3


def test_mask_key_names_a_top_level_key_or_a_dotted_path():
    line = '{"t":[1,2],"meta":{"t":3,"u":4},"a.b":5}'
    masked = lambda key, line=line: masked_numbers(line, split_text(line), "x", [key])
    assert masked("t") == {"t": [1]} and masked("meta.t") == {"meta.t": [2]}
    assert masked("a.b") == {"a.b": [4]}
    with pytest.raises(ValueError, match=r"no number under key 'u' \(--mask_key names a top-level "
                                         r"key\); a nested key is named by its path: meta.u"):
        masked("u")
    with pytest.raises(ValueError, match="names a top-level key and a path to a nested one"):
        masked("a.b", '{"a.b":1,"a":{"b":2}}')


def test_main_reads_as_its_steps():
    steps = ["read_files", "clean_keys", "split_records", "leave_out_missing", "scale",
             "check_tokens", "write_lines", "report"]
    called = re.findall(r"(\w+)\(", inspect.getsource(text.main))
    assert [f for f in called if f in steps] == steps


@pytest.mark.slow
def test_many_keys_print_a_few_lines_and_need_no_file_per_column_open(tmp_path):
    content = ",".join(f"k{j}" for j in range(250)) + "\n" + "".join(
        ",".join(f"{(i * j) % 7 if j % 2 else 3}" for j in range(250)) + "\n" for i in range(40))
    write(tmp_path / "wide.csv", content)
    # fewer files open than the columns
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "prepare", "text.py"),
                        str(tmp_path / "wide.csv"), "--out", str(tmp_path / "out")],
                       preexec_fn=limit, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["keys"][-1] == "k249"
    printed = r.stdout.splitlines()
    assert len(printed) < 45 and max(map(len, printed)) < 3000, printed
    assert {"  ... and 230 more such lines", "  ... and 138 more such lines"} <= set(printed)
    assert any(line.startswith("text tokens (254)") and line.endswith("... and 54 more") for line in printed)


def test_scratch_of_a_killed_run_is_removed(tmp_path, monkeypatch, prepare):
    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for pid in (dead.pid, os.getpid()):
        (tmp_path / f"prepare-text-{pid}-x1").mkdir()
    prepare(CSV)
    assert not (tmp_path / f"prepare-text-{dead.pid}-x1").exists()
    assert (tmp_path / f"prepare-text-{os.getpid()}-x1").exists()
