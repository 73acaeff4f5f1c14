"""tools/probe.py: ROC AUC against hand-computed values, logistic regression on toy sets, features that are
the last block's output averaged over real tokens only, and the whole probe on a tiny checkpoint."""
import json
import os
import shutil
import sys

import numpy as np
import pytest
import torch
import conftest
from model import GPT, GPTConfig
from helpers import write_dataset
from tokenize_numbers import Vocab, build_text_vocab, encode

sys.path.insert(0, os.path.join(conftest.ROOT, "tools"))
import probe  # noqa: E402


@pytest.mark.parametrize("labels,scores,auc", [
    ([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.75),  # 3 of the 4 (positive, negative) pairs ordered right
    ([0, 1, 0, 1], [0.5, 0.5, 0.2, 0.9], 0.875),  # the tied pair counts one half: 3.5 / 4
    ([0, 0, 1, 1, 1], [1, 2, 3, 4, 5], 1.0),  # perfect ranking
    ([1, 1, 0, 0], [1, 2, 3, 4], 0.0),  # inverted
    ([1, 0, 1, 0], [7, 7, 7, 7], 0.5),  # all tied
])
def test_roc_auc_by_hand(labels, scores, auc):
    assert probe.roc_auc(labels, scores) == pytest.approx(auc)


def test_roc_auc_needs_both_classes():
    with pytest.raises(ValueError, match="both classes"):
        probe.roc_auc([1, 1, 1], [0.1, 0.2, 0.3])


def test_logistic_regression_separates_a_separable_set_and_l2_shrinks_it():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    x = x[np.abs(x.sum(1)) > 0.3]  # a margin around the boundary x0 + x1 = 0
    y = (x.sum(1) > 0).astype(int)
    w, b = probe.fit_logistic(x, y, l2=1e-3)
    assert np.all(((x @ w + b) > 0) == y) and probe.roc_auc(y, x @ w + b) == 1.0
    assert np.linalg.norm(probe.fit_logistic(x, y, l2=10.0)[0]) < 0.2 * np.linalg.norm(w)


def test_logistic_regression_reaches_the_minimum():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 4))
    y = (x[:, 0] - x[:, 1] + rng.normal(size=300) > 0).astype(int)  # overlapping classes
    w, b = probe.fit_logistic(x, y, l2=0.1)
    p = 1 / (1 + np.exp(-(x @ w + b)))
    assert np.abs(x.T @ (p - y) / len(y) + 0.1 * w).max() < 1e-8 and abs(np.mean(p - y)) < 1e-8  # zero gradient


def test_features_are_the_last_block_output_averaged_over_real_tokens():
    texts = ("{x=[1.5,2,-3]}", "x=0.25", "[1,2,3,4,5,6,7,8]")
    vocab = Vocab(build_text_vocab(texts), "xval")
    model = GPT(GPTConfig(vocab_size=len(vocab), num_id=vocab.num_id, block_size=32, n_layer=2, n_head=2,
                          n_embd=16)).eval()
    samples = [encode(text, vocab)[:2] for text in texts]
    batched = probe.embed_samples(model, samples, "cpu", batch_size=3)  # padded to the longest
    for (ids, values), row in zip(samples, batched):
        x = model.embed(torch.from_numpy(ids)[None], torch.from_numpy(values)[None]) + model.wpe(torch.arange(len(ids)))
        for block in model.blocks:
            x = block(x, None, False)
        assert row == pytest.approx(x[0].mean(0).detach().numpy(), abs=1e-5)  # no final LayerNorm, no padding


def run(*args, check=True):
    return conftest.run(*args, check=check, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny xVal model trained for 3 steps on a tiny temperature set with ocean labels."""
    data = write_dataset(str(tmp_path_factory.mktemp("temperature")), {"train": 60, "val": 10, "test": 20}, ocean=True)
    run("tokenize_numbers.py", data, "--encoding=xval", "--workers=1")
    out = str(tmp_path_factory.mktemp("ckpt"))
    run("train.py", f"--data_dir={data}", f"--out_dir={out}", "--n_layer=2", "--n_head=2", "--n_embd=32",
        "--block_size=64", "--device=cpu", "--compile=False", "--warmup_iters=0", "--max_iters=3",
        "--eval_interval=3", "--batch_size=8", "--micro_batch_size=8")
    return os.path.join(out, "ckpt_best.pt"), data


@pytest.mark.slow
def test_probe_end_to_end(checkpoint, tmp_path):
    ckpt, data = checkpoint
    out = str(tmp_path / "probe")
    r = run("tools/probe.py", f"--ckpt={ckpt}", f"--data_dir={data}", f"--out={out}", "--n_train=40",
            "--l2_grid=[0.01, 1.0]", "--folds=2")
    assert "note: the test split has only 20 samples (n_test = 5000)" in r.stdout
    with open(out + ".json") as f:
        result = json.load(f)
    assert 0.0 <= result["test_auc"] <= 1.0 and result["l2"] in (0.01, 1.0)
    assert (result["n_train"], result["n_test"], result["encoding"]) == (40, 20, "xval")
    with open(out + ".md") as f:
        assert "| xval | 40 | 20 |" in f.read()
    r = run("tools/probe.py", f"--ckpt={ckpt}", f"--data_dir={data}", f"--out={out}", "--n_train=40", "--n_test=10",
            "--l2_grid=[0.1]")
    with open(out + ".json") as f:
        assert json.load(f)["n_test"] == 10 and "note:" not in r.stdout


@pytest.mark.slow
def test_probe_without_labels_says_how_to_make_them(checkpoint, tmp_path):
    ckpt, data = checkpoint
    bare = shutil.copytree(data, tmp_path / "bare", ignore=shutil.ignore_patterns("*.ocean.txt"))
    r = run("tools/probe.py", f"--ckpt={ckpt}", f"--data_dir={bare}", f"--out={tmp_path / 'p'}", check=False)
    assert r.returncode != 0 and "train.ocean.txt not found" in r.stderr and "--land-sea-mask" in r.stderr
