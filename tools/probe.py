r"""
The probe of paper App. C ("Comparison of fine-tuning behavior"): is the first station of a
temperature sample over the ocean? A frozen temperature model reads each whole sample (nothing
masked); the output of its last transformer block (before the final LayerNorm), averaged over the
sample's tokens, is the sample's feature vector. L2-regularised logistic regression is fitted on
500 training samples and scored by ROC AUC on held-out ones (paper: xVal 0.62, FP15 0.60, P10 0.58).
With 500 samples the map from the written coordinates to land/sea cannot be learnt, so a good score
means the model's representation carries what the temperatures say about the surface.

    python tools/probe.py --ckpt=out/era5_xval/ckpt_best.pt --data_dir=data/era5 \
        --out=out/probe_xval

Labels: <split>.ocean.txt, written by prepare/era5.py --land-sea-mask (1 = ocean, lsm < 0.5).
Samples: the first n_train lines of the train split, the first n_test of the test split, encoded
with the checkpoint's vocabulary. Readings where the paper is silent: features are standardised with
the training samples' mean and std, and the L2 strength is chosen by cross-validation on those same
training samples (out-of-fold ROC AUC), then refitted on all of them.
"""

import itertools
import json
import os
import sys
import time

import numpy as np
import torch

# the repository root
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from batching import collate, fill_in_example, to_device  # noqa: E402
from configurator import configure  # noqa: E402
from predict import load_model  # noqa: E402
from tokenize_line import encode  # noqa: E402
from util import TextError  # noqa: E402
from util import atomic_write_text, pick_device  # noqa: E402

# -- config: python tools/probe.py --help
ckpt = "out/era5_xval/ckpt_best.pt"  # a temperature checkpoint written by train.py
data_dir = "data/era5"  # with <split>.ocean.txt (prepare/era5.py --land-sea-mask)
out = "out/probe"  # results are written to <out>.json and <out>.md
n_train = 500  # training samples for the logistic regression (paper: 500)
n_test = 5000  # held-out samples scored (all of the test split if it is smaller, with a note)
l2_grid = [1e-4, 1e-3, 1e-2, 1e-1, 1.0]  # L2 strengths tried; one value skips the cross-validation
folds = 5  # cross-validation folds over the training samples
batch_size = 16  # samples per forward pass
device = "auto"  # auto (cuda if available, else cpu) | cpu | cuda | mps
seed = 1337  # fixes the cross-validation folds
# -- end config
# the settings' ranges (setting_checks.py); a number not named here: [0, inf)
RANGES = dict(
    n_train="[folds, inf)",
    n_test="[1, inf)",
    folds="[2, inf)",
    batch_size="[1, inf)",
    device="auto | cpu | mps | cuda | cuda:N",
    seed="[0, 4294967295]",
)


def roc_auc(labels, scores):
    """
    Area under the ROC curve: the chance that a random positive scores above a random negative,
    a tie counting one half (Mann-Whitney U from ranks, tied scores sharing their mean rank).
    """
    labels, scores = np.asarray(labels).astype(bool), np.asarray(scores, np.float64)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(
            f"ROC AUC needs both classes; all {len(labels)} labels are {int(n_pos > 0)}"
        )
    if np.isnan(scores).any():
        raise ValueError("ROC AUC of NaN scores")
    order = np.argsort(scores, kind="stable")
    _, first, count = np.unique(scores[order], return_index=True, return_counts=True)
    ranks = np.empty(len(scores))
    ranks[order] = np.repeat(first + (count + 1) / 2, count)  # 1-based, mean rank of each tie group
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def fit_logistic(x, y, l2, iters=100, tol=1e-10):
    """
    L2-regularised logistic regression, minimising mean log-loss + l2/2·|w|² (the bias is not
    penalised) by Newton's method with step halving. x: (N, D), y: (N,) in {0, 1}. Returns (w, b).
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    a = np.hstack([x, np.ones((len(x), 1))])  # the last weight is the bias
    penalty = np.append(np.full(x.shape[1], float(l2)), 1e-12)

    def objective(theta):
        z = a @ theta
        return np.mean(np.logaddexp(0, z) - y * z) + 0.5 * np.sum(penalty * theta**2)

    theta = np.zeros(a.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(a @ theta)))
        gradient = a.T @ (p - y) / len(y) + penalty * theta
        hessian = (a.T * (p * (1 - p))) @ a / len(y) + np.diag(penalty)
        step, t, before = np.linalg.solve(hessian, gradient), 1.0, objective(theta)
        while objective(theta - t * step) > before and t > 1e-8:
            t /= 2
        theta -= t * step
        if np.abs(t * step).max() < tol:
            break
    return theta[:-1], theta[-1]


def read_samples(data_dir, split, n, vocab, block_size):
    """The first n samples of a split, encoded, with their ocean labels; fewer if the split is
    smaller."""
    text, label_path = (
        os.path.join(data_dir, f"{split}.txt"),
        os.path.join(data_dir, f"{split}.ocean.txt"),
    )
    if not os.path.exists(label_path):
        raise SystemExit(
            f"error: {label_path} not found: the probe needs land/sea labels; rerun "
            "prepare/era5.py with --land-sea-mask FILE (the ERA5 lsm field)"
        )
    with open(label_path) as f:
        labels = [line.strip() for line in f]
    with open(text, "rb") as f:
        n_lines = sum(1 for _ in f)
    if len(labels) != n_lines:
        raise SystemExit(
            f"error: {label_path} has {len(labels)} labels for the {n_lines} samples of {text}"
        )
    for number, label in enumerate(labels, 1):
        if label not in ("0", "1"):
            raise SystemExit(
                f"error: {label_path}:{number}: expected a label 0 or 1, found {label!r}"
            )
    samples = []
    with open(text) as f:
        for number, line in enumerate(itertools.islice(f, n), 1):
            try:
                ids, values, _ = encode(line, vocab, f"{text}:{number}")
            except TextError as e:
                raise SystemExit(f"error: {e}")
            if not 0 < len(ids) <= block_size:
                raise SystemExit(
                    f"error: {text}:{number}: {len(ids)} tokens; expected 1 to the checkpoint's "
                    f"block_size {block_size}"
                )
            samples.append((ids, values))
    return samples, np.array([int(v) for v in labels[: len(samples)]])


@torch.no_grad()
def embed_samples(model, samples, device, batch_size):
    """Each sample's mean over its tokens of the last block's output (before the final LayerNorm):
    (N, C)."""
    captured = {}
    hook = model.blocks[-1].register_forward_hook(
        lambda module, inputs, output: captured.update(h=output)
    )
    # similar lengths: less padding
    order = np.argsort([len(ids) for ids, _ in samples], kind="stable")
    features = np.zeros((len(samples), model.cfg.n_embd))
    try:
        for start in range(0, len(samples), batch_size):
            chunk = order[start : start + batch_size]
            no_mask = [
                fill_in_example(*samples[i], np.zeros(len(samples[i][0]), bool)) for i in chunk
            ]
            batch = to_device(collate(no_mask), device)
            model.trunk(batch["ids"], batch["values"], pos=batch["pos"], doc=batch["doc"])
            h = captured["h"].float()  # (B, T, C)
            real = (
                torch.ones(h.shape[:2], device=h.device)
                if batch["doc"] is None
                else (batch["doc"] >= 0).float()
            )
            features[chunk] = (
                ((h * real.unsqueeze(-1)).sum(1) / real.sum(1, keepdim=True)).cpu().numpy()
            )
    finally:
        hook.remove()
    return features


def cross_validated_auc(x, y, l2):
    """ROC AUC of the out-of-fold scores of `folds` fits on the other folds."""
    scores = np.zeros(len(y))
    for fold in np.array_split(np.random.default_rng(seed).permutation(len(y)), folds):
        rest = np.setdiff1d(np.arange(len(y)), fold)
        w, b = fit_logistic(x[rest], y[rest], l2)
        scores[fold] = x[fold] @ w + b
    return roc_auc(y, scores)


def main():
    config = configure(globals(), __file__)
    dev = pick_device(device)
    if not os.path.exists(ckpt):
        raise SystemExit(f"error: {ckpt} not found")
    t0 = time.time()
    model, vocab, _ = load_model(ckpt, dev)
    print(
        f"{ckpt}: {vocab.encoding}, {model.cfg.n_layer} layers, width {model.cfg.n_embd}; features:"
        f" output of block {model.cfg.n_layer} (before the final LayerNorm), mean over tokens;"
        f" device {dev}"
    )
    train, y_train = read_samples(data_dir, "train", n_train, vocab, model.cfg.block_size)
    test, y_test = read_samples(data_dir, "test", n_test, vocab, model.cfg.block_size)
    if len(train) < n_train:
        raise SystemExit(
            f"error: the train split has {len(train)} samples; the probe needs n_train = {n_train}"
        )
    if len(test) < n_test:
        print(
            f"note: the test split has only {len(test)} samples (n_test = {n_test}); scoring all"
            f" {len(test)}"
        )
    if len(set(y_train)) < 2:
        raise SystemExit(
            f"error: the {n_train} training samples are all label {y_train[0]}; need both classes"
        )
    print(
        f"train: {len(train)} samples ({y_train.mean():.1%} ocean); test: {len(test)} samples"
        f" ({y_test.mean():.1%} ocean)"
    )

    x_train, x_test = (
        embed_samples(model, train, dev, batch_size),
        embed_samples(model, test, dev, batch_size),
    )
    mean, std = x_train.mean(0), x_train.std(0)
    std[std == 0] = 1.0
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    cv = (
        {l2: cross_validated_auc(x_train, y_train, l2) for l2 in l2_grid}
        if len(l2_grid) > 1
        else {}
    )
    l2 = max(cv, key=lambda v: (cv[v], v)) if cv else l2_grid[0]  # ties: the stronger penalty
    if cv:
        print(
            "cross-validated ROC AUC by L2: " + ", ".join(f"{v:g}: {a:.4f}" for v, a in cv.items())
        )
    w, b = fit_logistic(x_train, y_train, l2)
    try:
        auc = roc_auc(y_test, x_test @ w + b)
    except ValueError as e:
        raise SystemExit(f"error: test split: {e}")
    result = {
        "config": config,
        "encoding": vocab.encoding,
        "n_train": len(train),
        "n_test": len(test),
        "ocean_fraction": {"train": float(y_train.mean()), "test": float(y_test.mean())},
        "l2": l2,
        "cv_auc": {str(v): a for v, a in cv.items()},
        "train_auc": roc_auc(y_train, x_train @ w + b),
        "test_auc": auc,
        "seconds": round(time.time() - t0, 1),
    }
    table = (
        "| checkpoint | encoding | train samples | test samples | L2 | test ROC AUC"
        f" |\n|---|---|---|---|---|---|\n| {ckpt} | {vocab.encoding} | {len(train)} | {len(test)} |"
        f" {l2:g} | {auc:.4f} |"
    )
    print(table)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    atomic_write_text(out + ".json", json.dumps(result, indent=1) + "\n")
    atomic_write_text(out + ".md", table + "\n")
    print(f"wrote {out}.json and {out}.md in {result['seconds']} s")


if __name__ == "__main__":
    main()
