r"""
Learning curves from saved checkpoints: every ckpt_<step>.pt that train.py --keep_every=N kept in
each run folder is scored by eval.py on the test split, and one quantity's MSE, divided by the
variance of its truth, is drawn against training steps and against training FLOPs (log-log, one
line per run, the learning criterion 0.1 × variance marked).

    python tools/curves.py --runs="out/lookup_xval out/lookup_p10" --quantity=answer \
        --out=out/lookup_curves

Training FLOPs at step s: s × batch_size × (mean tokens per training sample) ×
model.flops_per_token, the estimate train.py uses for MFU. Each checkpoint's report is kept next to
it (eval_<step>.json) and reused when the script runs again. Writes <out>.json, <out>.md and
<out>.png."""

import glob
import json
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the core modules
from configurator import configure  # noqa: E402
from model import flops_per_token  # noqa: E402
from dataset import Split  # noqa: E402
from predict import load_model  # noqa: E402
from util import atomic_file, atomic_write_text  # noqa: E402

# -- config: python tools/curves.py --help
runs = ""  # run folders (out_dir of train.py), separated by spaces
quantity = "answer"  # the quantity of eval.py's report: answer, a0, dt, last step, ...
split = "test"
max_samples = 0  # score at most this many samples per checkpoint; 0 = all
out = "out/curves"  # output path without extension
# -- end config

CRITERION = 0.1  # learned: MSE at most this fraction of the truth's variance


def checkpoints(run):
    """(step, path) of every ckpt_<step>.pt in a run folder, by step."""
    found = [
        (int(m.group(1)), p)
        for p in glob.glob(os.path.join(run, "ckpt_*.pt"))
        if (m := re.fullmatch(r"ckpt_(\d+)\.pt", os.path.basename(p)))
    ]
    if not found:
        raise SystemExit(f"error: {run} holds no ckpt_<step>.pt; train it with --keep_every=N")
    return sorted(found)


def kept(path):
    """The report at path if it scores this split on max_samples samples, else None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        report = json.load(f)
    return (
        report if split in report["splits"] and report.get("max_samples") == max_samples else None
    )


def score(path, step):
    """eval.py's report of one checkpoint on the split, with predictions (for the variance), kept
    as eval_<step>.json (test) or eval_<step>_<split>.json; a kept report of another max_samples is
    redone."""
    prefix = os.path.join(
        os.path.dirname(path), f"eval_{step}" + ("" if split == "test" else f"_{split}")
    )
    report = kept(prefix + ".json")
    if report is None:
        cmd = [
            sys.executable,
            os.path.join(ROOT, "eval.py"),
            f"--ckpt={path}",
            f"--splits={split}",
            f"--max_samples={max_samples}",
            f"--out={prefix}",
            "--save_predictions=True",
        ]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"error: {' '.join(cmd)} failed:\n{r.stderr.strip()}")
        report = kept(prefix + ".json")
    if report is None:
        raise SystemExit(
            f"error: eval.py wrote {prefix}.json without the {split} split of {max_samples} samples"
        )
    quantities = report["splits"][split]
    if quantity not in quantities:
        raise SystemExit(
            f"error: {prefix}.json has no quantity {quantity!r}; it has {', '.join(quantities)}"
        )
    return quantities[quantity]


def curve(run):
    """One run's points: step, training FLOPs, MSE, MSE / variance of the truth, invalid rate."""
    found = checkpoints(run)
    # the checkpoints of a run share model, data and batch
    model, _, config = load_model(found[0][1])
    mean_length = float(
        np.diff(Split(config["data_dir"], "train", config["encoding"]).offsets).mean()
    )
    predicted = 1.0 if config["causal"] else config["mlm_probability"]
    flops_per_step = (
        config["batch_size"] * mean_length * flops_per_token(model, mean_length, predicted)
    )
    points = []
    for step, path in found:
        r = score(path, step)
        mse = r["mean"]["mse"]
        points.append(
            {
                "step": step,
                "flops": step * flops_per_step,
                "mse": mse,
                "nmse": mse / float(np.var(np.asarray(r["truth"], dtype=float))),
                "invalid_rate": r["mean"]["invalid_rate"],
            }
        )
    return {"run": run, "encoding": config["encoding"], "points": points}


def markdown(curves):
    lines = [
        f"# learning curves: {quantity} on {split}",
        "",
        f"MSE / variance of the truth; learned when at most {CRITERION}.",
        "",
        "| run | encoding | step | training FLOPs | MSE | MSE / variance | invalid |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in curves:
        for p in c["points"]:
            lines.append(
                f"| `{c['run']}` | {c['encoding']} | {p['step']} | {p['flops']:.3g} |"
                f" {p['mse']:.4g} | {p['nmse']:.4g} | {p['invalid_rate']:.2%} |"
            )
    return "\n".join(lines) + "\n"


def plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, x, label in ((axes[0], "step", "training steps"), (axes[1], "flops", "training FLOPs")):
        for c in curves:
            ax.plot(
                [p[x] for p in c["points"]],
                [p["nmse"] for p in c["points"]],
                "o-",
                label=f"{c['encoding']} ({os.path.basename(c['run'].rstrip('/'))})",
            )
        ax.axhline(CRITERION, color="gray", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
    axes[0].set_ylabel(f"{quantity} MSE / variance ({split})")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    with atomic_file(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")


def main():
    configure(globals(), __file__)
    folders = runs.split()
    if not folders:
        raise SystemExit("error: --runs is required (run folders separated by spaces)")
    curves = [curve(run) for run in folders]
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    atomic_write_text(
        out + ".json",
        json.dumps({"quantity": quantity, "split": split, "curves": curves}, indent=1) + "\n",
    )
    text = markdown(curves)
    atomic_write_text(out + ".md", text)
    plot(curves, out + ".png")
    print(text + f"figure: {out}.png")


if __name__ == "__main__":
    main()
