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
from tokenize_numbers import Split  # noqa: E402

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
    for record, _ in text.read_file(str(tmp_path / name), argparse.Namespace(columns=None, text=set(), delimiter=None))[0]:
        for key in meta["scales"]:
            inputs.setdefault(key, []).extend(text.numbers(record[key]))
    for key, scale in meta["scales"].items():
        written = [x for split in ("train", "val", "test") for r in read(out, split)
                   for x in np.ravel(r[key])]
        restored = [Decimal(repr(float(x) * scale["spread"] + scale["center"])) for x in written]
        assert len(restored) == len(inputs[key])
        exact = sorted(r.quantize(x) for r, x in zip(sorted(restored), sorted(inputs[key])))
        assert exact == sorted(inputs[key]), key  # every digit written in the input comes back


def test_text_values_that_the_tokenizer_reads_as_numbers_are_named(tmp_path, capsys):
    csv = "\ufeffdate,site,t\n" + "".join(f"2021-03-{d:02d},b7,{d / 4}\n" for d in range(1, 21))
    out, meta = prepare(tmp_path, csv)
    printed = capsys.readouterr().out
    assert meta["text_keys"] == ["date", "site"]  # the byte-order mark is not part of the first key
    assert "warning: key 'date': text values with digits ('2021-03-01') are read as numbers" in printed
    assert "key 'site'" not in printed.split("warning")[-1]  # "b7" is one word to the tokenizer


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
    ('{"a":NaN}\n', [], "bad.jsonl", "bad.jsonl:1: key 'a' is missing"),
    ('{"a":Infinity}\n', [], "bad.jsonl", "bad.jsonl:1: Infinity is not a finite number"),
    ("a,b\n1,2\n3,4\n", ["--window", "3", "--order", "random"], "bad.csv", "bad.csv:3: the file ends after 2 rows, before a window of 3"),
    ("a,b\n1,2\n3,4\n", ["--window", "3"], "bad.csv", r"bad.csv: --split 0.8,0.1,0.1 in time order cuts its 2 rows into 2/0/0"),
    ("a,b\n1,2\n3,4\n", [], "bad.csv", r"--split 0.8,0.1,0.1: 2 records give train/val/test"),
    ("a,a\n1,2\n", [], "bad.csv", "bad.csv:1: column 2 of the header is 'a' again"),
])
def test_bad_input_is_a_one_line_error_naming_file_and_line(tmp_path, content, flags, name, expected):
    assert re.search(expected, error(tmp_path, content, *flags, name=name))


LONG_CSV = "station,t,p\n" + "".join(f"{'ab'[i % 2]},{10 + 7 * np.sin(i / 9):.2f},{1013 + 5 * np.cos(i / 7):.1f}\n" for i in range(400))


@pytest.mark.parametrize("content, name, flags, key", [(LONG_CSV, "data.csv", ("--window", "4"), "t"),
                                                       (JSONL, "data.jsonl", (), "t")])
def test_own_data_from_file_to_scores_in_original_units(tmp_path, content, name, flags, key):
    """The README's four commands: prepare/text.py, tokenize, train a tiny model, eval.py --mask_key."""
    out, meta = prepare(tmp_path, content, *flags, name=name)
    run("tokenize_numbers.py", str(out), "--encoding=xval", "--workers=1")
    run("train.py", "config/own_small.py", f"--data_dir={out}", f"--out_dir={tmp_path / 'run'}", "--n_layer=1",
        "--n_head=2", "--n_embd=16", "--device=cpu", "--compile=False", "--max_iters=4", "--eval_interval=2",
        "--eval_batches=1", "--batch_size=8", "--micro_batch_size=8", "--warmup_iters=0")
    r = run("eval.py", f"--ckpt={tmp_path / 'run' / 'ckpt_best.pt'}", f"--mask_key={key}")
    report = json.load(open(tmp_path / "run" / f"eval_{key}.json"))
    scores = report["splits"]["test"][key]
    spread = meta["scales"][key]["spread"]
    assert report["task"] == "text" and scores["n"] == meta["splits"]["test"]
    assert scores["mean"]["mse_original"] == pytest.approx(scores["mean"]["mse"] * spread ** 2)
    assert ("persistence" in scores) == bool(meta["window"]) and "train_mean" in scores
    assert "original units" in r.stdout
