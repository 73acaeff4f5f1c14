"""
eval.py --plots: predicted against true values per quantity and split, and for a Gaussian-mixture
head PIT histograms and the first predicted densities. Needs matplotlib.
"""
import math

import numpy as np
import torch

from eval import DENSITY_SAMPLES, fmt
from model import mixture_nll, mixture_quantile


def write_plots(report, meta, prefix):
    """Predicted (median over seeds) vs true per quantity; training values marked on OoD splits."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for split, quantities in report["splits"].items():
        fig, axes = plt.subplots(1, len(quantities), figsize=(3.6 * len(quantities), 3.4), squeeze=False)
        for ax, (quantity, r) in zip(axes[0], quantities.items()):
            y = np.array(r["truth"], float)
            p = np.array([math.nan if v is None else v for v in r["median"]], float)
            lo, hi = np.nanmin(np.concatenate([y, p])), np.nanmax(np.concatenate([y, p]))
            ax.plot([lo, hi], [lo, hi], color="0.6", lw=1)
            ax.scatter(y, p, s=4, alpha=0.4)
            if report["task"] == "planets" and quantity == "dt" and split == "test_ood_stepsize":
                for s in meta.get("train_stepsizes", []):
                    ax.axvline(s, color="C3", ls="--", lw=1)  # the only step sizes seen in training
            if report["task"] == "planets" and quantity == "a0" and split == "test_ood_a0":
                ax.axvline(1.0, color="C3", ls="--", lw=1)  # training: the innermost planet has a = 1
            if report["task"] == "lookup" and split == "test_ood":
                ax.axvspan(*meta["gap"], color="C3", alpha=0.1)  # values never seen in training
            ax.set(title=f"{quantity} (MSE {fmt(r['median_prediction']['mse'])})", xlabel="true", ylabel="predicted")
        fig.suptitle(f"{report['task']} · {report['encoding']} · {split}")
        fig.tight_layout()
        fig.savefig(f"{prefix}_{split}.png", dpi=110)
        plt.close(fig)
        if "pit" in next(iter(quantities.values())):
            write_distribution_plots(report, split, quantities, prefix, plt)


def write_distribution_plots(report, split, quantities, prefix, plt):
    """GMM heads: PIT histograms per quantity, and the first predicted densities with their truths."""
    fig, axes = plt.subplots(1, len(quantities), figsize=(3.2 * len(quantities), 2.8), squeeze=False)
    for ax, (quantity, r) in zip(axes[0], quantities.items()):
        ax.hist(r["pit"], bins=20, range=(0, 1), density=True, color="C0", alpha=0.7)
        ax.axhline(1.0, color="0.4", lw=1, ls="--")  # calibrated: flat at 1
        m = r["per_seed"][0]
        ax.set(title=f"{quantity} (50%: {m['cover50']:.2f}, 90%: {m['cover90']:.2f})", xlabel="PIT", ylim=(0, None))
    fig.suptitle(f"{report['task']} · {split} · PIT (predicted CDF at the truth; coverage of central intervals)")
    fig.tight_layout()
    fig.savefig(f"{prefix}_{split}_pit.png", dpi=110)
    plt.close(fig)
    n = min(DENSITY_SAMPLES, min(len(r["mixture"]) for r in quantities.values()))
    fig, axes = plt.subplots(len(quantities), n, figsize=(2.8 * n, 2.2 * len(quantities)), squeeze=False)
    for row, (quantity, r) in zip(axes, quantities.items()):
        for i, ax in enumerate(row[:n]):
            num, truth = torch.tensor(r["mixture"][i], dtype=torch.float64), r["truth"][i]
            lo, hi = (float(mixture_quantile(num, q)) for q in (0.002, 0.998))
            lo, hi = min(lo, truth), max(hi, truth)
            x = torch.linspace(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), 400, dtype=torch.float64)
            ax.plot(x, torch.exp(-mixture_nll(num.expand(len(x), -1), x)), color="C0")
            ax.axvline(truth, color="C3", lw=1.2)
            ax.set_title(f"{quantity}, sample {i + 1}", fontsize=9)
            ax.set_yticks([])
    fig.suptitle(f"{report['task']} · {split} · predicted densities (red: truth)")
    fig.tight_layout()
    fig.savefig(f"{prefix}_{split}_density.png", dpi=110)
    plt.close(fig)
