"""
Loss curves of a training run: train.py's log.jsonl drawn to a PNG, the total loss (train and
validation) on the left, its parts on the right (cross-entropy of the text tokens, MSE of the
numbers; xVal only), both against the step.

    python tools/plot_log.py out/run                  # -> out/run/loss.png
    python tools/plot_log.py out/run --out loss.png
"""

import argparse
import json
import os
import sys

# the repository root
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from util import atomic_file  # noqa: E402

CURVES = {"loss": ("loss", "val_loss"), "parts": ("ce", "mse", "val_ce", "val_mse")}


def read_log(path):
    """{name: ([step], [value])} of every metric in CURVES that the log holds."""
    series = {}
    try:
        with open(path) as f:
            for i, line in enumerate(f, 1):
                try:
                    row = json.loads(line)
                    step = row["iter"]
                except (ValueError, KeyError, TypeError):
                    sys.exit(
                        f"error: {path}:{i}: not a row of train.py's log (a JSON object with"
                        " 'iter')"
                    )
                for name in CURVES["loss"] + CURVES["parts"]:
                    if isinstance(row.get(name), (int, float)):
                        steps, values = series.setdefault(name, ([], []))
                        steps.append(step)
                        values.append(row[name])
    except OSError as e:
        sys.exit(
            f"error: cannot read {path}: {e.strerror} (is {os.path.dirname(path)} a train.py"
            " --out_dir?)"
        )
    if not series:
        sys.exit(f"error: {path} holds no loss yet; expected rows with 'loss' or 'val_loss'")
    return series


def plot(series, out, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, panel in zip(axes, CURVES):
        names = [n for n in CURVES[panel] if n in series]
        for name in names:
            steps, values = series[name]
            ax.plot(steps, values, "o-" if name.startswith("val") else "-", ms=3, lw=1, label=name)
        if names and all(v > 0 for n in names for v in series[n][1]):
            ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_title("loss" if panel == "loss" else "parts: CE (text tokens), MSE (numbers)")
        if names:
            ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_file(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", help="a train.py --out_dir holding log.jsonl")
    p.add_argument("--out", help="the PNG to write (default OUT_DIR/loss.png)")
    args = p.parse_args(argv)
    series = read_log(os.path.join(args.out_dir, "log.jsonl"))
    out = args.out or os.path.join(args.out_dir, "loss.png")
    plot(series, out, os.path.abspath(args.out_dir))
    train, val = series.get("loss", ([], []))[0], series.get("val_loss", ([], []))[0]
    print(f"wrote {out} ({len(train)} logged steps, {len(val)} evaluations)")


if __name__ == "__main__":
    main()
