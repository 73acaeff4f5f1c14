"""sample.py: your own data scored by --mask_key (in original units), and careless input answered
with one clear line: no [?], no input, [?] written with spaces, and glued [?][?] printed apart."""
import json
import os
import re

import numpy as np
import pytest
from conftest import run

TINY = ["--n_layer=1", "--n_head=2", "--n_embd=16", "--device=cpu", "--compile=False", "--warmup_iters=0",
        "--log_interval=1", "--max_iters=3", "--eval_interval=3", "--batch_size=4", "--micro_batch_size=4"]
SCALES = {"t": {"center": 280.0, "spread": 5.0}, "p": {"center": 1013.0, "spread": 4.0}}


def write_own_data(folder, n=(40, 12, 12), window=3, seed=0):
    """A hand-made dataset as prepare/text.py writes it: scaled JSON records, one per line, and meta.json."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    for split, count in zip(("train", "val", "test"), n):
        with open(os.path.join(folder, f"{split}.txt"), "w") as f:
            for _ in range(count):
                t = np.cumsum(rng.normal(0, 0.3, window)).round(2).tolist()
                record = {"station": str(rng.choice(["a", "b"])), "t": t, "p": round(float(rng.normal()), 2)}
                f.write(json.dumps(record, separators=(",", ":")) + "\n")
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump({"dataset": "text", "splits": ["train", "val", "test"], "scales": SCALES, "window": window,
                   "text_keys": ["station"]}, f)
    run("tokenize_numbers.py", folder, "--encoding", "xval", "--workers=1")
    return folder


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """(dataset, checkpoint) of a tiny model trained on own data."""
    data = write_own_data(str(tmp_path_factory.mktemp("own") / "data"))
    out = str(tmp_path_factory.mktemp("own_run"))
    run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", "--block_size=64")
    return data, os.path.join(out, "ckpt_best.pt")


def test_mask_key_shows_the_last_number_under_the_key_beside_its_truth(own):
    data, ckpt = own
    test = [json.loads(l) for l in open(os.path.join(data, "test.txt"))]
    r = run("sample.py", f"--ckpt={ckpt}", f"--input={data}/test.txt", "--mask_key=t", "--show=1")
    shown = r.stdout.splitlines()[0]
    assert shown.startswith('{"station":') and f"{test[0]['t'][1]}," in shown and str(test[0]["p"]) in shown
    assert shown.endswith(f"(true: {test[0]['t'][-1]:g})") and f"{len(test)} numbers predicted" in r.stdout
    assert f"python eval.py --ckpt={ckpt} --mask_key=t" in r.stdout and "MSE" not in r.stdout  # eval.py scores
    r = run("sample.py", f"--ckpt={ckpt}", f"--input={data}/test.txt", "--mask_key=p", "--show=1")
    assert json.dumps(test[0]["t"], separators=(",", ":")) in r.stdout.splitlines()[0]  # t visible, p predicted


def test_mask_all_masks_every_number_under_the_key(own):
    data, ckpt = own
    n = sum(1 for _ in open(os.path.join(data, "test.txt")))
    r = run("sample.py", f"--ckpt={ckpt}", f"--input={data}/test.txt", "--mask_key=t", "--mask_all=True", "--show=1")
    assert f"{3 * n} numbers predicted" in r.stdout and r.stdout.splitlines()[0].count(",", r.stdout.index("(true: ")) == 2
    r = run("sample.py", f"--ckpt={ckpt}", f"--input={data}/test.txt", "--mask_all=True", check=False)
    assert r.returncode != 0 and "--mask_all=True needs --mask_key" in r.stderr


def test_a_record_without_the_key_or_not_json_is_named_by_its_line(own, tmp_path):
    data, ckpt = own
    lines = open(os.path.join(data, "test.txt")).read().splitlines()
    (tmp_path / "in.txt").write_text(lines[0] + "\n" + lines[1].replace('"p"', '"q"') + "\n")
    r = run("sample.py", f"--ckpt={ckpt}", f"--input={tmp_path / 'in.txt'}", "--mask_key=p", check=False)
    assert r.returncode == 0 and "note: 1 of 2 lines have no number under key 'p', left out" in r.stderr
    assert "in.txt:2: no number under key 'p'" in r.stderr  # a value left out as missing (prepare/text.py --missing=omit)
    (tmp_path / "in.txt").write_text(lines[1].replace('"p"', '"q"') + "\n")
    r = run("sample.py", f"--ckpt={ckpt}", f"--input={tmp_path / 'in.txt'}", "--mask_key=p", check=False)
    assert r.returncode != 0 and "error: 1 of 1 lines have no number under key 'p'" in r.stderr


@pytest.fixture(scope="module")
def arithmetic(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("ops2") / "data")
    run("prepare/arithmetic.py", "--variant=ops2", "--size=tiny", "--out", d, "--workers=1")
    run("tokenize_numbers.py", d, "--encoding", "xval", "--workers=1")
    out = str(tmp_path_factory.mktemp("ops2_run"))
    run("train.py", *TINY, f"--data_dir={d}", f"--out_dir={out}", "--block_size=32")
    return os.path.join(out, "ckpt_best.pt")


def test_a_line_without_a_marker_is_an_error_not_an_echo(arithmetic):
    r = run("sample.py", f"--ckpt={arithmetic}", input="(0.5+0.25)=[?]\n(0.5+0.25)=0.75\n", check=False)
    assert r.returncode != 0 and "(0.5+0.25)=0.75" not in r.stdout
    assert "stdin:2: no [?] in the line" in r.stderr and "--mask_last" in r.stderr


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_input_is_an_error(arithmetic, text):
    r = run("sample.py", f"--ckpt={arithmetic}", input=text, check=False)
    assert r.returncode != 0 and r.stdout == "" and "stdin: no lines to predict" in r.stderr


def test_a_marker_written_with_spaces_is_named(arithmetic):
    r = run("sample.py", f"--ckpt={arithmetic}", input="(0.5+0.25)=[ ? ]\n", check=False)
    assert r.returncode != 0 and "stdin:1: '[ ? ]' looks like the marker [?]" in r.stderr


def test_glued_markers_are_printed_apart(arithmetic):
    r = run("sample.py", f"--ckpt={arithmetic}", input="([?][?][?])=0.5\n")
    shown = r.stdout.splitlines()[0]
    assert "3 numbers predicted" in r.stdout and shown.count(",") == 2 and "[?]" not in shown
    assert re.fullmatch(r"\(-?[\d.e+-]+,-?[\d.e+-]+,-?[\d.e+-]+\)=0\.5", shown), shown
