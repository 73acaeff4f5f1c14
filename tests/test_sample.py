"""sample.py: your own data scored by --mask_key (in original units), and careless input answered
with one clear line: no [?], no input, [?] written with spaces, and glued [?][?] printed apart."""
import json
import os
import re

import pytest
from conftest import run
from helpers import EVAL_TINY as TINY
from helpers import one_line_error, write_own_data


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


def test_sample_reports_each_line_it_cannot_predict_and_predicts_the_rest(checkpoint):
    long_line = "(" + "+".join(["0.5"] * 40) + ")=[?]"  # more than the model's 32 tokens
    text = "(0.5+0.25)=[?]\n(a+0.25)=[?]\n" + long_line + "\n(1e300+0.25)=[?]\n\n(0.1*0.2)=[?]\n"
    r = run("sample.py", f"--ckpt={checkpoint}", input=text, check=False)
    errors = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(errors) == 4 and "Traceback" not in r.stderr
    assert errors[0].startswith("error: stdin:2: 'a' is not in the vocabulary") and "the model knows only" in errors[0]
    assert "--rebuild-vocab" not in errors[0]  # a trained model's vocabulary is fixed: rebuilding it would not help
    assert errors[1].startswith("error: stdin:3: 82 tokens, more than the model's block_size 32")
    assert errors[2].startswith("error: stdin:4: the number 1e+300 overflows float32")
    assert errors[3] == "error: 3 of 5 lines could not be predicted (reported above)"
    out = r.stdout.splitlines()
    assert out[0].startswith("(0.5+0.25)=") and out[1].startswith("(0.1*0.2)=") and "[?]" not in r.stdout
    assert "2 numbers predicted" in r.stdout


def test_sample_names_the_line_of_text_that_is_not_utf8(checkpoint, tmp_path):
    (tmp_path / "in.txt").write_bytes(b"(0.5+0.25)=[?]\n(0.\xe9+1)=[?]\n")
    error = one_line_error(run("sample.py", f"--ckpt={checkpoint}", f"--input={tmp_path / 'in.txt'}", check=False))
    assert f"{tmp_path / 'in.txt'}:2: not UTF-8 text" in error
