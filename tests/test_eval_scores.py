"""eval.py never hides a bad score: a prediction that is not a finite number (a number head that gives
NaN or inf) is counted, warned about and reported, not silently left out of MSE and R²; and every file
eval.py and sample.py read (a split, --input, meta.json, vocab.json) may be empty or blank: one line
naming the file, and no report written."""
import json
import math
import os

import numpy as np
import pytest
import torch
from conftest import run
from helpers import one_line_error

import model


def report_of(prefix):
    with open(prefix + ".json") as f:
        return json.load(f)


def test_a_number_head_giving_nan_or_inf_is_counted_warned_and_reported(checkpoint, data, tmp_path, monkeypatch):
    forward, planted = model.NumberHead.forward, []

    def diverging(self, h):  # every third prediction NaN, the next one inf
        out = forward(self, h).clone()
        out[0::3], out[1::3] = math.nan, math.inf
        planted.append(len(out[0::3]) + len(out[1::3]))
        return out
    monkeypatch.setattr(model.NumberHead, "forward", diverging)
    prefix = str(tmp_path / "e")
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={data}", f"--out={prefix}", "--save_predictions=True")
    report, bad = report_of(prefix), sum(planted)
    a = report["splits"]["test"]["answer"]
    n = a["n"]
    assert 0 < bad < n and a["per_seed"][0]["valid"] == n - bad
    assert a["mean"]["invalid_rate"] == pytest.approx(bad / n)
    warning = f"warning: test · answer: {bad} of {n} predictions are NaN or infinite"
    assert warning in r.stdout and warning in open(prefix + ".md").read()
    assert any(w.startswith(warning[9:]) for w in report["warnings"])
    assert "| invalid |" in open(prefix + ".md").read()  # shown for xVal too, where there are any
    # the MSE is over the finite predictions: a number, not inf, and the one computed by hand
    truth, median = np.array(a["truth"]), np.array([math.nan if v is None else v for v in a["median"]])
    ok = np.isfinite(median)
    assert ok.sum() == n - bad and math.isfinite(a["mean"]["mse"])
    assert a["mean"]["mse"] == pytest.approx(float(np.mean((truth[ok] - median[ok]) ** 2)))


def test_a_diverged_checkpoint_is_not_scored_silently(checkpoint, data, tmp_path):
    c = torch.load(checkpoint, weights_only=True)
    c["model"] = {k: v.fill_(math.nan) if k.startswith("num_head.") else v for k, v in c["model"].items()}
    torch.save(c, tmp_path / "diverged.pt")
    prefix = str(tmp_path / "e")
    r = run("eval.py", f"--ckpt={tmp_path / 'diverged.pt'}", f"--data_dir={data}", f"--out={prefix}")
    a = report_of(prefix)["splits"]["test"]["answer"]
    assert a["per_seed"][0]["valid"] == 0 and a["mean"]["invalid_rate"] == 1.0
    assert f"warning: test · answer: {a['n']} of {a['n']} predictions are NaN or infinite" in r.stdout
    table = next(line for line in r.stdout.splitlines() if line.startswith("| test | answer |"))
    assert "| 1 |" in table  # the invalid rate, beside the MSE that has no value


def test_xval_hides_an_invalid_column_that_is_zero(checkpoint, data, tmp_path):
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={data}", f"--out={tmp_path / 'e'}")
    assert "| not [NUM] |" in r.stdout and "| invalid |" not in r.stdout and "warning" not in r.stdout


@pytest.mark.parametrize("split,text,what", [("test", "", "an empty file"), ("test", "\n  \n", "blank lines only"),
                                              ("test_ood", "", "an empty file")])
def test_an_empty_or_blank_split_is_one_line_and_no_report(checkpoint, own_data, tmp_path, split, text, what):
    with open(os.path.join(own_data, f"{split}.txt"), "w") as f:
        f.write(text)
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={own_data}", f"--out={tmp_path / 'e'}", check=False)
    error = one_line_error(r)
    assert f"{os.path.join(own_data, split)}.txt: no sample ({what})" in error
    assert not (tmp_path / "e.json").exists() and not (tmp_path / "e.md").exists()


def own_checkpoint(checkpoint, data_dir, path):
    """The checkpoint, as if it had been trained on data_dir (its own dataset: the fingerprint is checked)."""
    c = torch.load(checkpoint, weights_only=True)
    c["data_dir"] = c["config"]["data_dir"] = data_dir
    torch.save(c, path)
    return str(path)


@pytest.mark.parametrize("text", ["", " \n"])
@pytest.mark.parametrize("own", [False, True])
def test_an_empty_meta_json_is_one_line_naming_it(checkpoint, own_data, tmp_path, text, own):
    ckpt = own_checkpoint(checkpoint, own_data, tmp_path / "own.pt") if own else checkpoint
    with open(os.path.join(own_data, "meta.json"), "w") as f:
        f.write(text)
    r = run("eval.py", f"--ckpt={ckpt}", f"--data_dir={own_data}", f"--out={tmp_path / 'e'}", check=False)
    assert f"{os.path.join(own_data, 'meta.json')}: not readable JSON" in one_line_error(r)
    assert not (tmp_path / "e.json").exists()


def test_an_empty_vocab_json_is_named_where_it_is_read(checkpoint, own_data, tmp_path):
    open(os.path.join(own_data, "vocab.json"), "w").close()
    # eval.py and sample.py read the vocabulary from the checkpoint, which holds it
    ckpt = own_checkpoint(checkpoint, own_data, tmp_path / "own.pt")
    assert run("eval.py", f"--ckpt={ckpt}", f"--out={tmp_path / 'e'}").returncode == 0
    error = one_line_error(run("tokenize_numbers.py", own_data, "--workers=1", check=False))
    assert f"{os.path.join(own_data, 'vocab.json')}: not readable JSON" in error


@pytest.mark.parametrize("text", ["", "\n \n\t\n"])
def test_sample_on_an_empty_or_blank_input_file_is_one_line_naming_it(checkpoint, tmp_path, text):
    path = tmp_path / "in.txt"
    path.write_text(text)
    r = run("sample.py", f"--ckpt={checkpoint}", f"--input={path}", check=False)
    assert f"{path}: no lines to predict" in one_line_error(r) and r.stdout == ""


def test_sample_says_how_many_of_a_diverged_models_numbers_are_not_finite(checkpoint, tmp_path):
    c = torch.load(checkpoint, weights_only=True)
    c["model"] = {k: v.fill_(math.nan) if k.startswith("num_head.") else v for k, v in c["model"].items()}
    torch.save(c, tmp_path / "diverged.pt")
    r = run("sample.py", f"--ckpt={tmp_path / 'diverged.pt'}", input="(0.5+0.25)=[?]\n(0.1+0.2)=[?]\n")
    assert "2 numbers predicted" in r.stdout and "2 not finite" in r.stdout
