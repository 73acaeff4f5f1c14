"""
How far is a temperature model from persistence, and does it know more? For each eval.py report
(written with --save_predictions=True) of a temperature test split, the masked last steps are set
beside each station's previous step (persistence, the reference forecast):

- MSE of the model and of persistence on the same values;
- MSE between the model and the previous step: 0 for a model that copies it;
- correlation of the two forecasts' errors: near 1 when the model's misses are persistence's;
- correlation of the model's change (forecast - previous) with the true change: above 0 when the
  model predicts some of the step-to-step change, which persistence cannot;
- MSE of w · model + (1 - w) · persistence for w = 0.25 and 0.5: below persistence's when the
  model carries information that persistence lacks, even if it is worse on its own.

    python dev/era5_persistence.py --reports="dev/results/era5_cpu/xval.json dev/results/era5_cpu_s5/xval.json"
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from configurator import configure  # noqa: E402
from predict import masked_groups  # noqa: E402
from eval_baselines import previous_values  # noqa: E402
from predictions import saved_predictions  # noqa: E402

# -- config: python dev/era5_persistence.py --help
reports = ""  # eval.py reports of temperature checkpoints (.json, with predictions), separated by spaces
data_dir = ""  # the temperature dataset; default: the report's
# -- end config

BLENDS = (0.25, 0.5)  # weights of the model in the blend with persistence


def previous_steps(lines, where):
    """era5: each station's second-to-last step, in the order masked_groups masks the last ones."""
    out = []
    for number, line in enumerate(lines, 1):
        at = f"{where}:{number}"
        out += previous_values(line, masked_groups("era5", line, at)[1]["t+1"], at, "a station")
    return out


def corr(a, b):
    """Pearson correlation; NaN where either side is constant (a model that copies changes nothing)."""
    return float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")


def row(report_path):
    """(n, model MSE, persistence MSE, MSE to previous, error corr, change corr, blend MSEs)."""
    report, truth, pred = saved_predictions(report_path, "era5", "t+1")
    path = os.path.join(data_dir or report["data_dir"], "test.txt")
    with open(path) as f:  # eval.py scores the first samples in order, so their values come first
        prev = np.array(previous_steps(f.read().splitlines(), path), dtype=float)[:len(truth)]
    if len(prev) != len(truth):
        raise SystemExit(f"error: {path} holds {len(prev)} masked values, fewer than the report's {len(truth)}")
    ok = np.isfinite(pred)  # a text encoding's invalid predictions are left out, as in eval.py
    truth, pred, prev = truth[ok], pred[ok], prev[ok]
    mse = lambda x: float(np.mean((x - truth) ** 2))  # noqa: E731
    return (len(truth), mse(pred), mse(prev), float(np.mean((pred - prev) ** 2)),
            corr(pred - truth, prev - truth), corr(pred - prev, truth - prev),
            [mse(w * pred + (1 - w) * prev) for w in BLENDS])


if __name__ == "__main__":
    configure(globals(), __file__)
    if not reports.split():
        raise SystemExit("error: --reports is required (eval.py reports separated by spaces)")
    blends = " | ".join(f"blend {w:g}" for w in BLENDS)
    lines = [f"| report | n | model MSE | persistence MSE | model to previous step | corr(errors) | corr(changes) | {blends} |",
             "|---|---|---|---|---|---|---|" + "---|" * len(BLENDS)]
    for path in reports.split():
        n, model, persistence, to_previous, errors, changes, blend = row(path)
        lines.append(f"| `{path}` | {n} | {model:.4f} | {persistence:.4f} | {to_previous:.4f} | {errors:.2f} | {changes:.2f} | "
                     + " | ".join(f"{b:.4f}" for b in blend) + " |")
    print("\n".join(lines))
