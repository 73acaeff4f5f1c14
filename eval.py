"""
The paper's evaluations (paper §3, App. A, C; docs/decisions.md#evaluation): mask the numbers a
task asks for, fill them in with one forward pass per sample, and score them, on the test split
and every OoD split.
A causal (autoregressive) checkpoint is not given masks: each asked number is generated greedily
from the text before it (sample.fill_in_causal), and the report says so.

    python eval.py --ckpt=out/lookup_xval/ckpt_best.pt
    python eval.py --ckpt="out/s1/ckpt_best.pt out/s2/ckpt_best.pt out/s3/ckpt_best.pt" --plots

What is masked (all tokens of each number for text encodings), per task:
- era5 (temperature): every station's last time step, all at once; MSE normalised and in kelvin, and
  that of persistence (each station's previous step) on the same values.
- planets: Δt, planet0's a, e and m (one pass each, the other numbers visible), and the last 10
  steps of every planet (all at once); MSE of each, in the text's units (m×1e5, e×20).
- arithmetic: the right-hand side; MSE, R² and adjusted R² (p = 1).
- lookup: the answer; MSE and accuracy at 3 and 2 significant figures.
Invalid predictions (text encodings: tokens that are not a number) are left out of MSE and R²,
count as wrong in accuracy, and are reported as a rate; so is the rate at which the xVal token
head does not predict [NUM] where a number was masked (the number head's value is still used).

Several checkpoints of one setting (seeds) give each metric as mean ± std over seeds (std with
ddof=1), and the metrics of the per-point median prediction. Writes <out>.json and <out>.md
(default: eval next to the first checkpoint) and with --plots <out>_<split>.png.

A Gaussian-mixture number head (train.py --num_head=gmm) is scored by its mixture mean like any
other prediction, and also as a distribution, per quantity: the mean negative log-likelihood of
the truth (NLL), the CRPS (closed form), and the calibration: how often the truth falls in the
central 50% and 90% intervals (0.5 and 0.9 when calibrated). --plots adds <out>_<split>_pit.png
(histograms of the PIT, the predicted CDF at the truth: flat when calibrated) and
<out>_<split>_density.png (the predicted densities of the first samples, the truth marked).

--summarize=DIR collects every DIR/*/eval.json into one markdown table per task, next to the
paper's figures (docs/decisions.md#paper-figures), and prints it.
"""
import glob
import json
import math
import os
import time

import numpy as np
import torch

from configurator import configure
from model import mixture_cdf, mixture_crps, mixture_nll, mixture_quantile
from sample import fill_in, load_model
from tokenize_numbers import TextError, encode_pieces, read_lines, split_text
from util import accuracy, adjusted_r_squared, atomic_write_text, format_number, load_checkpoint, mse, pick_device, r_squared

# -- config: python eval.py --help
ckpt = ""  # checkpoint(s) of one setting, separated by spaces: several seeds are combined
data_dir = ""  # a prepared dataset; default: the one the checkpoint was trained on
splits = ""  # comma-separated; default: test and every test_ood* split present
max_samples = 0  # evaluate at most this many samples per split; 0 = all
batch_size = 64
out = ""  # output path without extension; default: <first checkpoint's folder>/eval
plots = False  # also write PNG figures (needs matplotlib)
save_predictions = False  # keep every truth and (median) prediction in the JSON report
summarize = ""  # a folder of <setting>/eval.json reports: print one table per task and write it
device = "auto"
# -- end config

PLANET_STEPS = 10  # planets: the last 10 time steps of every planet are predicted at once
DENSITY_SAMPLES = 4  # GMM heads: predicted densities of this many first numbers per quantity are drawn


# ---------------------------------------------------------------- metrics (docs/decisions.md#metrics)

def metrics(task, y, yhat, meta):
    """Every metric of one quantity (docs/decisions.md#metrics) from truths and predictions (NaN = invalid)."""
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    valid = int((~np.isnan(yhat)).sum())
    m = {"n": len(y), "valid": valid, "mse": mse(y, yhat)}
    if task == "arithmetic":
        m["r2"] = r_squared(y, yhat)
        m["adj_r2"] = adjusted_r_squared(m["r2"], valid)
    if task == "lookup":
        m["acc3"], m["acc2"] = accuracy(y, yhat, 3), accuracy(y, yhat, 2)
    if task == "era5":
        m["mse_kelvin2"] = m["mse"] * meta["normalisation"]["std"] ** 2
    return m


def distribution_metrics(y, mixture):
    """The scores of predicted mixtures (n, 3K) against truths y (n,): NLL, CRPS, coverage of the central 50% and 90%."""
    y, num = torch.as_tensor(np.asarray(y, float)), torch.as_tensor(np.asarray(mixture, float))
    pit = mixture_cdf(num, y)
    return {"nll": float(mixture_nll(num, y).mean()), "crps": float(mixture_crps(num, y).mean()),
            "cover50": float(((pit >= 0.25) & (pit <= 0.75)).double().mean()),
            "cover90": float(((pit >= 0.05) & (pit <= 0.95)).double().mean())}


# ---------------------------------------------------------------- what each task masks

def json_paths(obj, path=()):
    """The path of every number of a JSON value, in the order the numbers are written."""
    if isinstance(obj, dict):
        for key, v in obj.items():
            yield from json_paths(v, path + (key,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from json_paths(v, path + (i,))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path


def masked_groups(task, line, where):
    """
    The fill-in passes of one sample: {quantity: indices of the numbers masked together}, counting
    numbers in the order split_text reads them.
    """
    pieces = split_text(line, where)
    n_numbers = sum(kind == "num" for kind, _ in pieces)
    if task in ("arithmetic", "lookup"):
        return pieces, {"answer": [n_numbers - 1]}
    try:
        paths = list(json_paths(json.loads(line)))
    except json.JSONDecodeError as e:
        raise TextError(f"{where}: a {task} sample must be JSON ({e})")
    if len(paths) != n_numbers:
        raise TextError(f"{where}: JSON holds {len(paths)} numbers but the tokenizer reads {n_numbers}")
    if task == "era5":  # data[station][step]: each station's last step
        last = {p[1]: i for i, p in enumerate(paths) if p[0] == "data"}
        return pieces, {"t+1": sorted(last.values())}
    if task == "planets":  # data[step][planet][x or y]
        n_steps = 1 + max(p[1] for p in paths if p[0] == "data")
        find = {p: i for i, p in enumerate(paths)}
        groups = {"dt": [find[("description", "stepsize")]]}
        for q in ("a", "e", "m"):
            groups[f"{q}0"] = [find[("description", "planet0", q)]]
        groups["steps"] = [i for i, p in enumerate(paths) if p[0] == "data" and p[1] >= n_steps - PLANET_STEPS]
        return pieces, groups
    raise ValueError(f"unknown task {task!r}")


def previous_steps(lines, where):
    """era5: each station's second-to-last step, in the order masked_groups masks the last ones."""
    previous = []
    for number, line in enumerate(lines, 1):
        for row in json.loads(line)["data"]:
            if len(row) < 2:
                raise TextError(f"{where}:{number}: a station with {len(row)} time step(s); a forecast needs at least 2")
            previous.append(row[-2])
    return previous


def saved_predictions(path, task, quantity, split="test"):
    """
    (report, truths, predictions) of one quantity of a report written with --save_predictions=True,
    for the scripts of results/ that study a model's predictions; errors name the file.
    """
    if not os.path.isfile(path):
        raise SystemExit(f"error: {path}: no such report; write one with eval.py --save_predictions=True")
    with open(path) as f:
        report = json.load(f)
    r = report.get("splits", {}).get(split, {}).get(quantity)
    if report.get("task") != task or r is None:
        raise SystemExit(f"error: {path}: expected an eval.py report of a {task} {split} split with {quantity!r}, "
                         f"got task {report.get('task')!r} with splits {', '.join(report.get('splits', {}))}")
    if "truth" not in r:
        raise SystemExit(f"error: {path} has no predictions; run eval.py with --save_predictions=True")
    return report, np.array(r["truth"], dtype=float), np.array(r["median"], dtype=float)


def task_of(meta, path):
    """The task a dataset's meta.json describes."""
    if "normalisation" in meta and "variable" in meta:
        return "era5"
    if meta.get("dataset") in ("planets", "arithmetic", "lookup"):
        return meta["dataset"]
    raise SystemExit(f"error: {path}: not a dataset written by prepare/ (no known 'dataset' key)")


# ---------------------------------------------------------------- running the model

def masked_samples(task, lines, vocab, where):
    """
    Every masked group of every line, encoded: {quantity: (samples, truths)}, samples being the
    (ids, values, ask) triples of fill_in in line order and truths the masked numbers in order.
    """
    jobs = {}  # quantity -> (samples, truths)
    for number, line in enumerate(lines, 1):
        pieces, groups = masked_groups(task, line, f"{where}:{number}")
        numbers = [j for j, (kind, _) in enumerate(pieces) if kind == "num"]
        for quantity, indices in groups.items():
            asked = list(pieces)
            for i in indices:
                asked[numbers[i]] = ("ask", None)
            samples, truths = jobs.setdefault(quantity, ([], []))
            samples.append(encode_pieces(asked, vocab, f"{where}:{number}"))
            truths.extend(pieces[numbers[i]][1] for i in indices)
    return jobs


def predict(model, vocab, jobs, dev):
    """
    Fill in the masked samples of every quantity. Returns {quantity: (truths, predictions, counts,
    mixtures)} with counts of numbers, invalid predictions and non-[NUM] token predictions, and
    for a GMM head the mixture outputs (numbers, 3K) (else None).
    """
    results = {}
    for quantity, (samples, truths) in jobs.items():
        order = np.argsort([len(s[0]) for s in samples], kind="stable")  # similar lengths share a batch
        mixtures = []
        predicted, counts = fill_in(model, vocab, [samples[i] for i in order], dev, batch_size, mixtures)
        unsorted, unsorted_mixtures = [None] * len(samples), [None] * len(samples)
        for k, i in enumerate(order):
            unsorted[i] = predicted[k]
            unsorted_mixtures[i] = mixtures[k] if mixtures else None
        preds = np.array([p for ps in unsorted for p in ps], float)
        mixture = torch.cat(unsorted_mixtures).double().numpy() if mixtures else None
        results[quantity] = (np.array(truths, float), preds, counts, mixture)
    return results


def combine(task, runs, meta):
    """
    One quantity over several seeds: runs = [(truths, predictions, counts, mixtures)] (the same
    truths). Each metric as mean and std over seeds, and the metrics of the per-point median
    prediction (the median of the seeds' valid predictions; NaN where none is valid). GMM heads
    add the distribution's metrics, and the first seed's PIT values and first mixtures for plots.
    """
    truths = runs[0][0]
    seeds = []
    for _, preds, counts, mixture in runs:
        m = metrics(task, truths, preds, meta)
        m["invalid_rate"] = counts["invalid"] / max(1, counts["numbers"])
        m["not_num_rate"] = counts["not_num"] / max(1, counts["numbers"])
        if mixture is not None:
            m.update(distribution_metrics(truths, mixture))
        seeds.append(m)
    stack = np.stack([r[1] for r in runs])
    median = np.array([np.median(c[~np.isnan(c)]) if (~np.isnan(c)).any() else math.nan for c in stack.T])
    keys = [k for k in seeds[0] if k not in ("n", "valid")]
    return {
        "n": len(truths),
        "mean": {k: float(np.mean([s[k] for s in seeds])) for k in keys},
        "std": {k: float(np.std([s[k] for s in seeds], ddof=1)) if len(seeds) > 1 else 0.0 for k in keys},
        "median_prediction": metrics(task, truths, median, meta),
        "per_seed": seeds,
        "truth": truths.tolist(),
        "median": [None if math.isnan(v) else v for v in median.tolist()],
        **({"pit": mixture_cdf(torch.as_tensor(runs[0][3]), torch.as_tensor(truths)).tolist(),
            "mixture": runs[0][3][:DENSITY_SAMPLES].tolist()} if runs[0][3] is not None else {}),
    }


def evaluate(checkpoints, data, split_names, dev):
    """The report of one setting: every split × quantity, per seed and combined."""
    meta_path = os.path.join(data, "meta.json")
    if not os.path.exists(meta_path):
        raise SystemExit(f"error: {meta_path} not found: is {data} a dataset written by prepare/?")
    meta = json.load(open(meta_path))
    task = task_of(meta, meta_path)
    if not split_names:
        split_names = ["test"] + sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(data, "test_ood*.txt")))
    report = {"task": task, "data_dir": data, "checkpoints": checkpoints, "max_samples": max_samples, "splits": {}}
    jobs = {}  # split -> masked samples, read and encoded once: every seed has the same vocabulary
    persistence = {}  # era5: split -> each station's previous step, the reference forecast of the same values
    first = None  # the first checkpoint's vocabulary
    per_seed = []  # [seed][split] -> {quantity: (truths, predictions, counts)}
    for path in checkpoints:
        t0 = time.time()
        model, vocab, config = load_model(path, dev)
        first = vocab if first is None else first
        report.setdefault("encoding", vocab.encoding)
        report.setdefault("config", config)
        report.setdefault("causal", model.cfg.causal)
        if model.cfg.causal != report["causal"]:
            raise SystemExit(f"error: {path} is {'' if model.cfg.causal else 'not '}causal but {checkpoints[0]} "
                             f"is{'' if report['causal'] else ' not'}: the checkpoints of one setting must agree")
        if (vocab.encoding, vocab.itos) != (first.encoding, first.itos):
            raise SystemExit(f"error: {path} has another encoding or vocabulary than {checkpoints[0]}: "
                             "the checkpoints of one setting must share both")
        seed_results = {}
        for split in split_names:
            text_path = os.path.join(data, f"{split}.txt")
            try:
                if split not in jobs:
                    if not os.path.exists(text_path):
                        raise SystemExit(f"error: {text_path} not found")
                    with open(text_path, "rb") as f:
                        lines = [l for l in read_lines(f, text_path) if l.strip()][: max_samples or None]
                    jobs[split] = masked_samples(task, lines, vocab, text_path)
                    if task == "era5":  # the masked values are data[station][-1], station by station
                        persistence[split] = previous_steps(lines, text_path)
                seed_results[split] = predict(model, vocab, jobs[split], dev)
            except (TextError, ValueError) as e:
                raise SystemExit(f"error: {e}")
        per_seed.append(seed_results)
        print(f"{path}: evaluated in {time.time() - t0:.1f} s")
    for split in split_names:
        report["splits"][split] = {quantity: combine(task, [s[split][quantity] for s in per_seed], meta)
                                   for quantity in per_seed[0][split]}
        if split in persistence:
            r = report["splits"][split]["t+1"]
            r["persistence"] = metrics(task, r["truth"], persistence[split], meta)
    return report, meta


# ---------------------------------------------------------------- output

COLUMNS = {  # metric -> header; only those a report has are shown
    "mse": "MSE", "mse_kelvin2": "MSE (K²)", "r2": "R²", "adj_r2": "adj. R²",
    "acc3": "acc @3 s.f.", "acc2": "acc @2 s.f.", "invalid_rate": "invalid", "not_num_rate": "not [NUM]",
    "nll": "NLL", "crps": "CRPS", "cover50": "50% cover", "cover90": "90% cover",
}


def fmt(x):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format_number(x, 4)


def markdown(report):
    """One table of one setting: split × quantity rows, mean ± std over seeds and the median's MSE."""
    first = next(iter(next(iter(report["splits"].values())).values()))
    hidden = "invalid_rate" if report["encoding"] == "xval" else "not_num_rate"
    keys = [k for k in COLUMNS if k in first["mean"] and k != hidden]
    seeds = len(report["checkpoints"])
    lines = [f"# {report['task']} · {report['encoding']} · {seeds} seed(s)", "",
             f"data: `{report['data_dir']}`; checkpoints: " + ", ".join(f"`{c}`" for c in report["checkpoints"]), "",
             "causal model: each number generated from the text before it" if report.get("causal") else
             "masked fill-in: one forward pass per sample", "",
             "| split | quantity | n | " + " | ".join(COLUMNS[k] for k in keys) + " | MSE of median |",
             "|---|---|---|" + "---|" * len(keys) + "---|"]
    for split, quantities in report["splits"].items():
        for quantity, r in quantities.items():
            cells = [fmt(r["mean"][k]) + (f" ± {fmt(r['std'][k])}" if seeds > 1 else "") for k in keys]
            lines.append(f"| {split} | {quantity} | {r['n']} | " + " | ".join(cells)
                         + f" | {fmt(r['median_prediction']['mse'])} |")
    for split, quantities in report["splits"].items():
        if "persistence" in quantities.get("t+1", {}):
            p = quantities["t+1"]["persistence"]
            lines += ["", f"{split}: persistence (each station's previous step) on the same values: "
                          f"MSE {fmt(p['mse'])} ({fmt(p['mse_kelvin2'])} K²)"]
    lines += ["", "config: `" + json.dumps({k: report["config"].get(k) for k in (
        "encoding", "n_layer", "n_head", "n_embd", "max_iters", "batch_size", "learning_rate", "seed")}) + "`", ""]
    return "\n".join(lines)


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


# ---------------------------------------------------------------- several settings, one table

PAPER = {  # docs/decisions.md#paper-figures: (task, split, quantity, metric) -> {encoding: value}
    ("era5", "test", "t+1", "mse"): {"p10": 0.173, "p1000": 5.20e-2, "b1999": 5.27e-2, "fp15": 4.54e-3, "xval": 4.29e-3},
    ("planets", "test", "a0", "mse"): {"p1000": 4.0e-6, "xval": 5.1e-5},
    ("planets", "test", "dt", "mse"): {"p1000": 0.0, "xval": 2.32e-4},
    ("planets", "test", "e0", "mse"): {"p1000": 5.15e-3, "xval": 1.37e-3},
    ("planets", "test_ood_a0", "a0", "mse"): {"p1000": 6.99e-3, "xval": 1.6e-4},
    ("planets", "test_ood_stepsize", "dt", "mse"): {"p1000": 4.69e-3, "xval": 1.25e-3},
    ("planets", "test", "m0", "mse"): {"p1000": 0.333, "xval": 1.33},
    ("lookup", "test", "answer", "mse"): {"xval": 3e-3, "fp15": 7e-3, "p10": 2.1e-2},
    ("lookup", "test_ood", "answer", "mse"): {"xval": 3.5e-3, "fp15": 9e-2, "p10": 0.38},
    ("lookup", "test", "answer", "acc3"): {"fp15": 0.999, "p10": 0.91, "xval": 0.06},
    ("arithmetic:mult3", "test", "answer", "adj_r2"): {"xval": 0.9986, "b1999": 0.9998},
    ("arithmetic:ops3", "test", "answer", "r2"): {"xval": 0.99994, "p10": 0.996, "fp15": 0.981},
}
ENCODING_ORDER = ["xval", "fp15", "b1999", "p1000", "p10"]


SUMMARY_METRICS = {"era5": ["mse", "mse_kelvin2"], "planets": ["mse"], "arithmetic": ["r2", "adj_r2", "mse"],
                   "lookup": ["mse", "acc3", "acc2"]}


def needed(path, report):
    """A file a report refers to; a clear error if it is gone (the summary reads the datasets)."""
    if not os.path.exists(path):
        raise SystemExit(f"error: {report['report']} refers to {path}, which is not there: the summary "
                         "needs the dataset each report was evaluated on")
    return path


def cost(report):
    """Tokens per training sample (mean, max) and the median ms per training step of a setting."""
    tokens = json.load(open(needed(os.path.join(report["data_dir"], report["encoding"], "train.json"), report)))
    steps = []
    for c in report["checkpoints"]:
        log_path = os.path.join(os.path.dirname(c), "log.jsonl")
        if os.path.exists(log_path):
            steps += [r["ms_per_step"] for r in map(json.loads, open(log_path)) if "ms_per_step" in r]
    return tokens["tokens_per_sample_mean"], tokens["tokens_per_sample_max"], (np.median(steps) if steps else None)


def summary(folder):
    """
    One markdown table per setting from every <folder>/<setting>_<encoding>/eval.json (encodings
    side by side), next to the paper's figures.
    """
    reports = []
    for path in sorted(glob.glob(os.path.join(folder, "*", "eval.json"))):
        r = json.load(open(path))
        r["report"] = path
        meta = json.load(open(needed(os.path.join(r["data_dir"], "meta.json"), r)))
        r["paper"] = r["task"] + (f":{meta['variant']}" if "variant" in meta else "")
        setting = os.path.basename(os.path.dirname(path))  # e.g. planets_long_xval
        suffix = "_" + r["encoding"]
        r["name"] = setting[:-len(suffix)] if setting.endswith(suffix) else setting
        reports.append(r)
    if not reports:
        raise SystemExit(f"error: no {folder}/*/eval.json found")
    out = []
    for name in sorted({r["name"] for r in reports}):
        group = sorted((r for r in reports if r["name"] == name), key=lambda r: ENCODING_ORDER.index(r["encoding"]))
        seeds = max(len(r["checkpoints"]) for r in group)
        out += [f"## {name}" + (f" ({seeds} seeds: mean ± std)" if seeds > 1 else ""), "",
                "| split | quantity | metric | " + " | ".join(r["encoding"] for r in group) + " |",
                "|---|---|---|" + "---|" * len(group)]

        def row(split, quantity, label, value):
            cells = []
            for r in group:
                v = r["splits"].get(split, {}).get(quantity)
                cells.append("—" if v is None else value(r, v))
            out.append(f"| {split} | {quantity} | {label} | " + " | ".join(cells) + " |")

        for split, quantities in group[0]["splits"].items():
            for quantity in quantities:
                for k in SUMMARY_METRICS[group[0]["task"]]:
                    def value(r, v, k=k):
                        paper = PAPER.get((r["paper"], split, quantity, k), {}).get(r["encoding"])
                        return (fmt(v["mean"][k]) + (f" ± {fmt(v['std'][k])}" if len(r["checkpoints"]) > 1 else "")
                                + (f" (paper {fmt(paper)})" if paper is not None else ""))
                    row(split, quantity, COLUMNS[k], value)
                if seeds > 1:
                    row(split, quantity, "MSE of median", lambda r, v: fmt(v["median_prediction"]["mse"]))
                row(split, quantity, "invalid · xVal: not [NUM]",
                    lambda r, v: f"{v['mean']['not_num_rate' if r['encoding'] == 'xval' else 'invalid_rate']:.2%}")
        costs = [cost(r) for r in group]
        out.append("| train | — | tokens/sample mean (max) | " + " | ".join(f"{m:.0f} ({x})" for m, x, _ in costs) + " |")
        out.append("| train | — | ms/step (median) | " + " | ".join(fmt(ms) for _, _, ms in costs) + " |")
        out.append("")
    return "\n".join(out)


def main():
    configure(globals(), __file__)
    if summarize:
        text = summary(summarize)
        atomic_write_text(os.path.join(summarize, "summary.md"), text + "\n")
        print(text)
        return
    checkpoints = ckpt.replace(",", " ").split()
    if not checkpoints:
        raise SystemExit("error: --ckpt is required (one checkpoint, or several seeds separated by spaces)")
    for path in checkpoints:
        if not os.path.exists(path):
            raise SystemExit(f"error: checkpoint {path} not found")
    dev = pick_device(device)
    data = data_dir or load_checkpoint(checkpoints[0])["data_dir"]
    report, meta = evaluate(checkpoints, data, [s for s in splits.split(",") if s], dev)
    prefix = out or os.path.join(os.path.dirname(checkpoints[0]) or ".", "eval")
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    saved = report if save_predictions else {**report, "splits": {
        split: {q: {k: v for k, v in r.items() if k not in ("truth", "median", "pit", "mixture")} for q, r in quantities.items()}
        for split, quantities in report["splits"].items()}}
    atomic_write_text(prefix + ".json", json.dumps(saved, indent=1) + "\n")
    text = markdown(report)
    atomic_write_text(prefix + ".md", text)
    print(text)
    if plots:
        write_plots(report, meta, prefix)
        print(f"figures: {prefix}_<split>.png")


if __name__ == "__main__":
    main()
