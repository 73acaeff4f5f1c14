"""
The MSE head against the GMM head, side by side, from eval.py reports written with
--save_predictions=True (a report of the MSE checkpoint on val gives its residual spread).

    python dev/gmm_table.py MSE_VAL.json MSE_TEST.json GMM_TEST.json > table.md

The MSE head predicts no spread. To score it as a distribution anyway, it is given the Gaussian
N(prediction, s²) with s² its own MSE on the validation split, per quantity (a constant spread,
fitted on held-out data): the best a point predictor can claim without a density head.
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from mixture import MIN_STD, distribution_metrics  # noqa: E402


def constant_gaussian(truth, prediction, std):
    """distribution_metrics of N(prediction, std²) at every truth, through a one-component mixture."""
    n = len(truth)
    num = np.stack([np.zeros(n), np.asarray(prediction, float), np.full(n, math.log(std - MIN_STD))], -1)
    return distribution_metrics(truth, num)


def main(mse_val, mse_test, gmm_test):
    for p in (mse_val, mse_test, gmm_test):
        if not os.path.isfile(p):
            raise SystemExit(f"error: {p}: no such eval.py report (written with --save_predictions=True)")
    val, mse, gmm = (json.load(open(p)) for p in (mse_val, mse_test, gmm_test))
    rows = ["| split | quantity | n | variance of truth | MSE: MSE head | MSE: GMM mean | NLL: MSE head + val σ | NLL: GMM "
            "| CRPS: MSE head + val σ | CRPS: GMM | 50% / 90% cover: MSE head + val σ | 50% / 90% cover: GMM |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for split, quantities in gmm["splits"].items():
        for q, g in quantities.items():
            m = mse["splits"][split][q]
            truth = np.array(m["truth"], float)
            std = math.sqrt(val["splits"]["val"][q]["mean"]["mse"])
            base = constant_gaussian(truth, m["median"], std)
            gm = g["mean"]
            rows.append(f"| {split} | {q} | {m['n']} | {truth.var():.4g} | {m['mean']['mse']:.4g} | {gm['mse']:.4g} "
                        f"| {base['nll']:.3f} | {gm['nll']:.3f} | {base['crps']:.4g} | {gm['crps']:.4g} "
                        f"| {base['cover50']:.2f} / {base['cover90']:.2f} | {gm['cover50']:.2f} / {gm['cover90']:.2f} |")
    print("\n".join(rows))


if __name__ == "__main__":
    torch.set_num_threads(1)
    if len(sys.argv) != 4:
        raise SystemExit("usage: python dev/gmm_table.py MSE_VAL.json MSE_TEST.json GMM_TEST.json")
    main(*sys.argv[1:])
