"""What eval.py writes of a report: its table (markdown) and, with --plots, its figures."""

import json
import math

import numpy as np
import torch

from eval_baselines import BASELINES, baseline_text
from mixture import mixture_nll, mixture_quantile
from util import format_number

# metric -> header; only those a report has are shown
COLUMNS = dict(
    mse="MSE",
    mse_kelvin2="MSE (K²)",
    r2="R²",
    adj_r2="adj. R²",
    acc3="acc @3 s.f.",
    acc2="acc @2 s.f.",
    invalid_rate="invalid",
    not_num_rate="not [NUM]",
    nll="NLL",
    crps="CRPS",
    cover50="50% cover",
    cover90="90% cover",
    mse_original="MSE (original units)",
    r2_original="R² (original units)",
)


def fmt(x):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format_number(x, 4)


def markdown(report):
    """The table of one setting (split × quantity: mean ± std over seeds, the median's MSE),
    baselines, notes and warnings."""
    rows = [(s, q, r) for s, quantities in report["splits"].items() for q, r in quantities.items()]
    # xVal: the rate of invalid predictions only where there are any
    hidden = "invalid_rate" if report["encoding"] == "xval" else "not_num_rate"
    if hidden == "invalid_rate" and any(r["mean"]["invalid_rate"] for *_, r in rows):
        hidden = None
    keys = [k for k in COLUMNS if k in rows[0][2]["mean"] and k != hidden]
    seeds = len(report["checkpoints"])
    how = "masked fill-in: one forward pass per sample"
    if report["causal"]:
        how = "causal model: each number generated from the text before it"
    checkpoints = ", ".join(f"`{c}`" for c in report["checkpoints"])
    # the median's MSE in the file's own units where the data has them
    median = "mse_original" if "mse_original" in keys else "mse"
    header = ["split", "quantity", "n", *(COLUMNS[k] for k in keys), "MSE of median"]
    header[-1] += " (original units)" * (median != "mse")
    lines = [f"# {report['task']} · {report['encoding']} · {seeds} seed(s)", ""]
    lines += [f"data: `{report['data_dir']}`; checkpoints: {checkpoints}", "", how, ""]
    lines += ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for split, quantity, r in rows:
        cells = [fmt(r["mean"][k]) + (f" ± {fmt(r['std'][k])}" if seeds > 1 else "") for k in keys]
        cells = [split, quantity, r["n"], *cells, fmt(r["median_prediction"][median])]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    for split, quantity, r in rows:
        for name in (name for name in BASELINES if name in r):
            scores = ", ".join(f"{COLUMNS[k]} {fmt(r[name][k])}" for k in COLUMNS if k in r[name])
            what = baseline_text(name, r[name], report["task"])
            lines += ["", f"{split} · {quantity}: {what} on the same values: {scores}"]
        if v := r.get("verdict"):
            beats = "beats" if v["beats"] else "does not beat"
            said = f"the model {beats} the best baseline ({BASELINES[v['best']]})"
            said += f": its MSE is {fmt(v['ratio'])}× the baseline's"
            lines += ["", f"{split} · {quantity}: verdict: {said}"]
    warned = [f"- note: {n}" for n in report.get("notes", [])]
    warned += [f"- warning: {w}" for w in report["warnings"]]
    shown = "encoding n_layer n_head n_embd max_iters batch_size learning_rate seed".split()
    config = json.dumps({k: report["config"].get(k) for k in shown})
    lines += ["", *warned] + [""] * bool(warned) + [f"config: `{config}`", ""]
    return "\n".join(lines)


def write_plots(report, meta, scales, prefix):
    """Predicted (median over seeds) vs true per quantity, in the data's own units where scales
    has its (center, spread); training values marked on OoD splits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    task = report["task"]
    # planets: the only step sizes seen in training; training's innermost planet has a = 1
    seen = {("dt", "test_ood_stepsize"): meta.get("train_stepsizes", [])}
    seen["a0", "test_ood_a0"] = [1.0]
    for split, quantities in report["splits"].items():
        n = len(quantities)
        fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.4), squeeze=False)
        for ax, (quantity, r) in zip(axes[0], quantities.items()):
            y = np.array(r["truth"], float)
            p = np.array([math.nan if v is None else v for v in r["median"]], float)
            m, unit = r["median_prediction"], ""
            mse = m.get("mse_kelvin2", m.get("mse_original", m["mse"]))
            if scale := scales[quantity]:
                y, p = y * scale[1] + scale[0], p * scale[1] + scale[0]
                unit = " (K)" if task == "era5" else " (original units)"
            both = np.concatenate([y, p])
            lo, hi = np.nanmin(both), np.nanmax(both)
            ax.plot([lo, hi], [lo, hi], color="0.6", lw=1)
            ax.scatter(y, p, s=4, alpha=0.4)
            for x in seen.get((quantity, split), []) if task == "planets" else []:
                ax.axvline(x, color="C3", ls="--", lw=1)
            # values never seen in training
            if task == "lookup" and split == "test_ood":
                ax.axvspan(*meta["gap"], color="C3", alpha=0.1)
            ax.set(title=f"{quantity} (MSE {fmt(mse)})", xlabel=f"true{unit}")
            ax.set(ylabel=f"predicted{unit}")
        save_figure(plt, fig, f"{task} · {report['encoding']} · {split}", f"{prefix}_{split}.png")
        if "pit" in next(iter(quantities.values())):
            write_distribution_plots(task, split, quantities, f"{prefix}_{split}", plt, scales)


def save_figure(plt, fig, title, path):
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_distribution_plots(task, split, quantities, prefix, plt, scales):
    """GMM heads: PIT histograms, and the first predicted densities with their truths."""
    n = len(quantities)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 2.8), squeeze=False)
    for ax, (quantity, r) in zip(axes[0], quantities.items()):
        ax.hist(r["pit"], bins=20, range=(0, 1), density=True, color="C0", alpha=0.7)
        # calibrated: flat at 1
        ax.axhline(1.0, color="0.4", lw=1, ls="--")
        m = r["per_seed"][0]
        title = f"{quantity} (50%: {m['cover50']:.2f}, 90%: {m['cover90']:.2f})"
        ax.set(title=title, xlabel="PIT", ylim=(0, None))
    what = "PIT (predicted CDF at the truth; coverage of central intervals)"
    save_figure(plt, fig, f"{task} · {split} · {what}", f"{prefix}_pit.png")
    # eval.py keeps the first DENSITY_SAMPLES
    k = min(len(r["mixture"]) for r in quantities.values())
    fig, axes = plt.subplots(n, k, figsize=(2.8 * k, 2.2 * n), squeeze=False)
    for row, (quantity, r) in zip(axes, quantities.items()):
        # value = center + spread · scaled, density / spread
        center, spread = scales[quantity] or (0.0, 1.0)
        for i, ax in enumerate(row[:k]):
            num, truth = torch.tensor(r["mixture"][i], dtype=torch.float64), r["truth"][i]
            lo, hi = (float(mixture_quantile(num, q)) for q in (0.002, 0.998))
            lo, hi = min(lo, truth), max(hi, truth)
            x = torch.linspace(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), 400, dtype=torch.float64)
            density = torch.exp(-mixture_nll(num.expand(len(x), -1), x)) / spread
            ax.plot(x * spread + center, density, color="C0")
            ax.axvline(truth * spread + center, color="C3", lw=1.2)
            ax.set_title(f"{quantity}, sample {i + 1}", fontsize=9)
            ax.set_yticks([])
    title = f"{task} · {split} · predicted densities (red: truth)"
    title += ", original units" * any(scales[q] for q in quantities)
    save_figure(plt, fig, title, f"{prefix}_density.png")
