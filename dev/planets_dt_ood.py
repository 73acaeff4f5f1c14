"""
Do the encodings predict step sizes they never saw? The paper's claim 6: on planets, xVal
interpolates the step size Δt to values absent from training, while text encodings answer only
the step sizes they were trained on.

For eval.py reports of planets models (written with --save_predictions=True, each scoring the
test_ood_stepsize split), one panel per report: predicted against true Δt, with the training step
sizes (meta.json's train_stepsizes) marked, and a table: MSE, correlation with the truth, and the
share of predictions within --near of a training step size (the truths lie at least 0.02 away
from all of them, so a model that only recalls training values scores near 100% here).

    python dev/planets_dt_ood.py --reports="out/xval.json out/b1999.json" --out=dev/results/planets_cpu/dt_ood
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from configurator import configure  # noqa: E402
from predictions import saved_predictions  # noqa: E402
from util import atomic_write_text  # noqa: E402

# -- config: python dev/planets_dt_ood.py --help
reports = ""  # eval.py reports (.json, with predictions), separated by spaces
near = 0.01  # a prediction this close to a training step size counts as recalling it
out = "dt_ood"  # writes OUT.md and OUT.png
# -- end config


def rows(path, near):
    """(encoding, n, mse, correlation, share near a training step size, truths, predictions, steps)."""
    report, truth, pred = saved_predictions(path, "planets", "dt", split="test_ood_stepsize")
    meta_path = os.path.join(report.get("data_dir", ""), "meta.json")
    if not os.path.isfile(meta_path):
        raise SystemExit(f"error: {path}: its data_dir has no meta.json ({meta_path}); the training step sizes are needed")
    with open(meta_path) as f:
        steps = np.array(json.load(f).get("train_stepsizes", []), dtype=float)
    if steps.size == 0:
        raise SystemExit(f"error: {meta_path}: no train_stepsizes; is it a planets dataset?")
    ok = np.isfinite(pred)
    t, p = truth[ok], pred[ok]
    recalled = (np.abs(p[:, None] - steps[None, :]) <= near).any(axis=1)
    corr = float(np.corrcoef(t, p)[0, 1]) if len(t) > 1 and p.std() > 0 else float("nan")
    return (report.get("encoding", "?"), int(ok.sum()), float(np.mean((t - p) ** 2)), corr,
            float(recalled.mean()), t, p, steps)


def main():
    configure(globals(), __file__)
    paths = reports.split()
    if not paths:
        raise SystemExit("error: --reports is required: eval.py reports (.json) written with --save_predictions=True")
    table = [rows(p, near) for p in paths]
    lines = ["# Δt on unseen step sizes (test_ood_stepsize)", "",
             f"Share of predictions within {near} of a training step size; the truths lie 0.02 or more from all of them.", "",
             "| report | encoding | samples | MSE | correlation | near a training step size |", "|---|---|---|---|---|---|"]
    for path, (enc, n, mse, corr, share, *_) in zip(paths, table):
        lines.append(f"| `{path}` | {enc} | {n} | {mse:.4g} | {corr:.3f} | {share:.0%} |")
    atomic_write_text(out + ".md", "\n".join(lines) + "\n")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(table), figsize=(4 * len(table), 4), squeeze=False)
    for ax, (enc, n, mse, corr, share, t, p, steps) in zip(axes[0], table):
        for s in steps:
            ax.axhline(s, color="0.8", lw=1, zorder=0)
        ax.plot([0.15, 0.85], [0.15, 0.85], "k--", lw=0.8)
        ax.scatter(t, p, s=6)
        ax.set(title=f"{enc}: MSE {mse:.3g}, {share:.0%} at a training Δt", xlabel="true Δt", ylabel="predicted Δt",
               xlim=(0.15, 0.85), ylim=(0.15, 0.85))
    fig.tight_layout()
    tmp = out + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, out + ".png")
    print("\n".join(lines))
    print(f"wrote {out}.md and {out}.png")


if __name__ == "__main__":
    main()
