"""
Score checkpoints on a dataset's test and OoD splits beside the baselines a model must beat;
seeds of one setting give mean ± std (docs/training.md#evaluate).

    python eval.py --ckpt="out/s1/ckpt_best.pt out/s2/ckpt_best.pt out/s3/ckpt_best.pt" --plots
    python eval.py --ckpt=out/own/ckpt_best.pt --mask_key=t
"""

import csv
import glob
import json
import math
import os
import re
import tempfile
import time
import warnings

import numpy as np
import torch

from checkpoint import load_checkpoint
from configurator import configure
from dataset import check_name, check_trained_on, read_meta, read_samples
from eval_baselines import BASELINES, baseline_predictions, baseline_text, learn_baselines
from eval_baselines import NEXT, in_file_units, outside_training, value_under, verdict, verdict_text
from mixture import distribution_metrics, mixture_nll, mixture_quantile
from predict import check_meta, fill_in, load_model, masked_samples, read_levels
from util import TextError, atomic_file, atomic_write_text, format_number, pick_device, run_main

# -- config: python eval.py --help
ckpt = ""  # checkpoint(s) of one setting, separated by spaces: several seeds are combined
data_dir = ""  # a prepared dataset; default: the one the checkpoint was trained on
splits = ""  # comma-separated; default: test and every test_ood* split present
mask_key = ""  # own data: score the last number under this JSON key; default: every scaled key
mask_all = False  # with mask_key: score every number under the key, masked at once
horizon = 0  # windows, with mask_key: score the last H, masked at once, step by step
max_samples = 0  # evaluate at most this many samples per split; 0 = all
batch_size = 64
out = ""  # output path without extension; default: eval... beside the first checkpoint
plots = False  # also write PNG figures (needs matplotlib)
save_predictions = False  # keep every truth and (median) prediction in the JSON report
predictions = ""  # a CSV to write: each scored value's line, truth and predictions, in file units
period = 0  # own series: seasonal persistence's period in steps; 0: detected in the training lists
changed_data = False  # evaluate on the checkpoint's data_dir although it was prepared again since
device = "auto"
# -- end config
RANGES = dict(batch_size="[1, inf)", device="auto | cpu | mps | cuda | cuda:N")

# seeds of one setting may differ in these
NOT_THE_SETTING = {"seed", "out_dir", "resume", "overwrite", "device", "compile", "flex_attention"}
NOT_THE_SETTING |= {"micro_batch_size", "log_interval", "keep_every", "threads"}


def mse(y, yhat):
    ok = ~np.isnan(yhat)
    return float(np.mean((y[ok] - yhat[ok]) ** 2)) if ok.any() else math.nan


def r_squared(y, yhat):
    ok = ~np.isnan(yhat)
    return float(1 - mse(y, yhat) / np.var(y[ok])) if ok.sum() > 1 else math.nan


def adjusted_r_squared(r2, n):
    return 1 - (1 - r2) * (n - 1) / (n - 2) if n > 2 else math.nan


def accuracy(y, yhat, figures):
    """The share of predictions right to `figures` significant figures."""
    same = [f"{p:.{figures - 1}e}" == f"{t:.{figures - 1}e}" for t, p in zip(y, yhat)]
    return float(np.mean(same))


def metrics(task, y, yhat, scale):
    """Every metric of one quantity; with scale (center, spread) also in the data's units."""
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    valid = int((~np.isnan(yhat)).sum())
    m = {"n": len(y), "valid": valid, "mse": mse(y, yhat)}
    if task in ("arithmetic", "text"):
        m["r2"] = r_squared(y, yhat)
    if task == "arithmetic":
        m["adj_r2"] = adjusted_r_squared(m["r2"], valid)
    if task == "lookup":
        m["acc3"], m["acc2"] = accuracy(y, yhat, 3), accuracy(y, yhat, 2)
    if scale is not None:
        y, yhat = in_file_units(y, scale), in_file_units(yhat, scale)
        m["mse_kelvin2" if task == "era5" else "mse_original"] = mse(y, yhat)
        if task == "text":
            m["r2_original"] = r_squared(y, yhat)
    return m


def quantity_scale(task, meta, quantity):
    """(center, spread) of a quantity's numbers, or None."""
    if task == "era5":
        return meta["normalisation"]["mean"], meta["normalisation"]["std"]
    scales = (meta.get("scales") or {}) if task == "text" else {}
    key = quantity.split(".t+")[0]  # --horizon's t.t+1 takes t's scale
    s = scales.get(key) or scales.get(key.split(".")[0])
    return (s["center"], s["spread"]) if s else None


def task_of(meta, path):
    if "normalisation" in meta and "variable" in meta:
        return "era5"
    task = meta.get("dataset")
    if task in ("planets", "arithmetic", "lookup", "text", "plain text"):
        return "text" if task == "plain text" else task
    raise SystemExit(f"error: {path}: not a dataset of prepare/ or tokenize_numbers.py")


def run_model(model, vocab, jobs, dev):
    """{quantity: (truths, predictions (NaN: invalid), counts, mixtures (n, 3K) or None)}."""
    results = {}
    for quantity, (samples, truths) in jobs.items():
        predicted, counts, mixtures = fill_in(model, vocab, samples, dev, batch_size)
        preds = np.concatenate(predicted)
        preds[~np.isfinite(preds)] = math.nan
        mixture = torch.cat(mixtures).double().numpy() if mixtures else None
        for h, name in enumerate(steps_ahead() if horizon else [quantity]):
            step = slice(h, None, horizon or 1)
            mixed = None if mixture is None else mixture[step]
            results[name] = (np.array(truths, float)[step], preds[step], counts, mixed)
    return results


def steps_ahead():
    return [f"{mask_key}.t+{h}" for h in range(1, horizon + 1)]


def combine(task, runs, scale=None):
    """One quantity over seeds' runs: each metric's mean and std, and the median prediction's."""
    truths, seeds = runs[0][0], []
    for _, preds, counts, mixture in runs:
        m = metrics(task, truths, preds, scale)
        for k in ("invalid", "not_num"):
            m[f"{k}_rate"] = counts[k] / counts["numbers"]
        if mixture is not None:
            m.update(distribution_metrics(truths, mixture))
        seeds.append(m)
    # NaN where no seed's prediction is valid
    with warnings.catch_warnings(action="ignore"):
        median = np.nanmedian(np.stack([r[1] for r in runs]), axis=0)
    keys = [k for k in seeds[0] if k not in ("n", "valid")]
    one = len(seeds) == 1
    r = {
        "n": len(truths),
        "mean": {k: float(np.mean([s[k] for s in seeds])) for k in keys},
        "std": {k: 0.0 if one else float(np.std([s[k] for s in seeds], ddof=1)) for k in keys},
        "median_prediction": metrics(task, truths, median, scale),
        "per_seed": seeds,
        "truth": truths.tolist(),
        "median": [None if math.isnan(v) else v for v in median.tolist()],
    }
    if (mixture := runs[0][3]) is not None:
        r["mixture"] = mixture[:4].tolist()  # the first 4 densities drawn
    return r


def check_seeds(checkpoints):
    """The first checkpoint's settings; all must agree but in NOT_THE_SETTING."""
    first, seeds = None, {}
    for path in checkpoints:
        # weights mapped, not read: load_model reads them
        c = load_checkpoint(path, mmap=True)
        first = first or c
        a, b = first["config"], c["config"]
        for key in sorted((set(a) | set(b)) - NOT_THE_SETTING):
            x, y = a.get(key), b.get(key)
            if key == "data_dir":
                x, y = os.path.realpath(x or ""), os.path.realpath(y or "")
            if x != y:
                raise SystemExit(
                    f"error: {checkpoints[0]} and {path} differ in {key} ({a.get(key)!r} vs"
                    f" {b.get(key)!r}): seeds must agree"
                )
        # the data's fingerprint covers its vocabulary and the encoding's arrays
        if c.get("data_fingerprint") != first.get("data_fingerprint"):
            raise SystemExit(f"error: {path} was trained on other data than {checkpoints[0]}")
        if (seed := b.get("seed")) in seeds:
            raise SystemExit(f"error: {seeds[seed]} and {path} are the same run (seed {seed})")
        seeds[seed] = path
    return first


def split_jobs(task, data, split, meta, model, vocab, keys, learned):
    """A split's model jobs, baselines' predictions, masked indices and (--scale record) levels."""
    where = os.path.join(data, f"{split}.txt")
    numbered = read_samples(where)
    counted = meta["splits"].get(split) if isinstance(meta["splits"], dict) else None
    if counted not in (None, len(numbered)):
        raise TextError(
            f"{where} has {len(numbered):,} samples, meta.json {counted:,}: a copy cut short?"
        )
    levels = read_levels(where, meta)
    numbered = numbered[: max_samples or None]
    size = model.cfg.block_size
    jobs, masked = masked_samples(task, numbered, vocab, where, size, keys, horizon or mask_all)
    if not jobs:
        raise TextError(f"{where}: no sample holds a number the {task} task predicts")
    if horizon:
        masked = [dict(zip(steps_ahead(), ([i] for i in g.get(mask_key, ())))) for g in masked]
    found = baseline_predictions(task, numbered, masked, where, learned, meta.get("window"))
    lines = [number for number, _ in numbered]
    return {"jobs": jobs, "baselines": found, "masked": masked, "levels": levels, "lines": lines}


def score_setting(checkpoints, data, split_names, dev):
    """One setting's report: each split × quantity, per seed and combined, with baselines."""
    meta, path = read_meta(data), os.path.join(data, "meta.json")
    check_meta(meta, path, mask_key, "--horizon or --mask_all" * bool(mask_all or horizon))
    task = task_of(meta, path)
    if mask_key and task != "text":
        raise SystemExit(f"error: --mask_key is for your own data; {data} is a {task} dataset")
    keys = [mask_key] if mask_key else list(meta.get("scales") or {}) if task == "text" else []
    if horizon and not horizon < (meta.get("window") or 0):
        raise SystemExit(f"error: --horizon needs a dataset of windows longer than {horizon}")
    learned, notes = learn_baselines(task, data, meta, keys, horizon or mask_all, period)
    # --horizon: the baselines per step ahead
    for found in learned.values() if horizon else ():
        if mask_key in found:
            found.update(dict.fromkeys(steps_ahead(), found.pop(mask_key)))
    ood = glob.glob(os.path.join(data, "test_ood*.txt"))
    split_names = split_names or ["test"] + sorted(os.path.basename(p)[:-4] for p in ood)
    report = dict(task=task, data_dir=data, checkpoints=checkpoints, max_samples=max_samples)
    report.update(splits={}, warnings=[], notes=notes)
    # encoded once: every seed has the same vocabulary
    encoded, per_seed = {}, []
    for path in checkpoints:
        t0 = time.time()
        model, vocab, config = load_model(path, dev)
        report.update(encoding=vocab.encoding, causal=model.cfg.causal)
        report.setdefault("config", config)
        for split in (s for s in split_names if s not in encoded):
            encoded[split] = split_jobs(task, data, split, meta, model, vocab, keys, learned)
        per_seed.append({s: run_model(model, vocab, encoded[s]["jobs"], dev) for s in split_names})
        print(f"{path}: evaluated in {time.time() - t0:.1f} s")
    for split in split_names:
        report["splits"][split] = {}
        masks, levels = encoded[split]["masked"], encoded[split]["levels"]
        for quantity, (truths, *_) in per_seed[0][split].items():
            # each scored value's record, and its line in the file
            records = [i for i, g in enumerate(masks) for _ in g.get(quantity, ())]
            lines = [encoded[split]["lines"][i] for i in records]
            scale = quantity_scale(task, meta, quantity)
            if scale and levels:
                scale = 0.0, np.array([levels[i][quantity] for i in records])
            r = combine(task, [s[split][quantity] for s in per_seed], scale)
            r["scale"] = scale
            if invalid := sum(s["n"] - s["valid"] for s in r["per_seed"]):
                said = f"{invalid} of {r['n'] * len(per_seed)} predictions are NaN or infinite"
                report["warnings"].append(f"{split} · {quantity}: {said}: counted as invalid")
            found, note = encoded[split]["baselines"]
            predicted = {}
            for name, (predicted[name], extra) in found.get(quantity, {}).items():
                r[name] = {**metrics(task, truths, predicted[name], scale), **extra}
            r.update(line=lines, predicted=predicted, verdict=verdict(r, predicted, lines))
            if not_num := r["mean"].get("not_num_rate"):
                said = f"the token head did not say [NUM] at {not_num:.2%} (docs/training.md)"
                report["warnings"].append(f"{split} · {quantity}: {said}")
            report["splits"][split][quantity] = r
            notes = [note.get(quantity), outside_training(quantity, truths, meta, scale)]
            report["notes"] += [f"{split} · {quantity}: {n}" for n in notes if n]
    return report


def report_prefix(checkpoints, data, same_data):
    """Where the report goes (--out, or beside the first checkpoint), writable."""
    name = "eval" if same_data else "eval_" + os.path.basename(os.path.normpath(data))
    if mask_key:
        suffix = "_all" if mask_all else f"_h{horizon}" if horizon else ""
        name += re.sub(r"[^\w.-]", "_", f"_{mask_key}{suffix}")
    name += f"_first{max_samples}" if max_samples else ""
    prefix = out or os.path.join(os.path.dirname(checkpoints[0]) or ".", name)
    # the report's folder and the CSV's, checked before the evaluation
    for path, flag in ((prefix, "--out"), (predictions or prefix, "--predictions")):
        folder = os.path.dirname(path) or "."
        try:
            os.makedirs(folder, exist_ok=True)
            tempfile.TemporaryFile(dir=folder).close()
        except OSError as e:
            raise SystemExit(f"error: cannot write in {folder} ({e.strerror or e}); choose {flag}")
    return prefix


def write_predictions(report, path):
    """--predictions: a CSV row a scored value, in the file's units."""
    rows = [(s, q, r) for s, quantities in report["splits"].items() for q, r in quantities.items()]
    names = [name for name in BASELINES if any(name in r["predicted"] for *_, r in rows)]
    sources = {}
    for split in report["splits"]:
        source = os.path.join(report["data_dir"], f"{split}.source.txt")
        sources[split] = {}
        if not os.path.exists(source):
            continue
        named = read_samples(source, False)
        numbered = read_samples(os.path.join(report["data_dir"], f"{split}.txt"))
        if len(named) < len(numbered):
            raise SystemExit(f"error: {source} lacks lines of {split}.txt; prepare the data again")
        # line k names record k
        sources[split] = {n: s for (n, _), (_, s) in zip(numbered, named)}
    with atomic_file(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["split", "quantity", "line", "source", "truth", "prediction", *names])
        for split, quantity, r in rows:
            none = [None] * r["n"]
            columns = [r["truth"], r["median"], *(r["predicted"].get(n, none) for n in names)]
            for line, *values in zip(r["line"], *(in_file_units(c, r["scale"]) for c in columns)):
                own = ["" if math.isnan(v) else format_number(v, 8) for v in values]
                writer.writerow([split, quantity, line, sources[split].get(line, ""), *own])


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
    return "—" if x is None or math.isnan(x) else format_number(x, 4)


def markdown(report):
    """One setting's table (mean ± std over seeds), baselines, notes and warnings."""
    rows = [(s, q, r) for s, quantities in report["splits"].items() for q, r in quantities.items()]
    # xVal: invalid predictions only where there are any
    hidden = "invalid_rate" if report["encoding"] == "xval" else "not_num_rate"
    if hidden == "invalid_rate" and any(r["mean"]["invalid_rate"] for *_, r in rows):
        hidden = None
    keys = [k for k in COLUMNS if k in rows[0][2]["mean"] and k != hidden]
    seeds = len(report["checkpoints"])
    how = "masked fill-in: one forward pass per sample"
    if report["causal"]:
        how = "causal model: each number generated from the text before it"
    checkpoints = ", ".join(f"`{c}`" for c in report["checkpoints"])
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
        v = r.get("verdict") or {}
        for name in (name for name in BASELINES if name in r):
            scores = ", ".join(f"{COLUMNS[k]} {fmt(r[name][k])}" for k in COLUMNS if k in r[name])
            if paired := v.get("paired", {}).get(name):
                scores += "; the model's MSE {}× its (95% interval {}–{})".format(*map(fmt, paired))
            what = baseline_text(name, r[name], report["task"])
            lines += ["", f"{split} · {quantity}: {what} on the same values: {scores}"]
        if v:
            lines += ["", f"{split} · {quantity}: verdict: {verdict_text(v)}"]
        if v.get("says") == "loses to":
            lines += ["", f"{split} · {quantity}: next to try: {NEXT}"]
    warned = [f"- note: {n}" for n in report["notes"]]
    warned += [f"- warning: {w}" for w in report["warnings"]]
    shown = "encoding n_layer n_head n_embd max_iters batch_size learning_rate seed".split()
    config = json.dumps({k: report["config"].get(k) for k in shown})
    lines += ["", *warned] + [""] * bool(warned) + [f"config: `{config}`", ""]
    return "\n".join(lines)


def write_plots(report, prefix):
    """Predicted (median over seeds) vs true, in the data's units; with --mask_key, series()."""
    from matplotlib.figure import Figure

    task = report["task"]
    for split, quantities in report["splits"].items():
        shown = series(report, split, mask_key) if mask_key and not mask_all else {}
        n = len(quantities) + len(shown)
        fig = Figure(figsize=(3.6 * n, 3.4))
        axes = fig.subplots(1, n, squeeze=False)
        for ax, (quantity, r) in zip(axes[0], quantities.items()):
            # None: no valid prediction
            y, p = (in_file_units(r[k], r["scale"]) for k in ("truth", "median"))
            m = r["median_prediction"]
            mse = m.get("mse_kelvin2", m.get("mse_original", m["mse"]))
            unit = (" (K)" if task == "era5" else " (original units)") if r["scale"] else ""
            ax.axline((0, 0), slope=1, color="0.6", lw=1)
            ax.scatter(y, p, s=4, alpha=0.4)
            ax.set(title=f"{quantity} (MSE {fmt(mse)})", xlabel=f"true{unit}")
            ax.set(ylabel=f"predicted{unit}")
        for ax, (line, (read, *masked)) in zip(axes[0][len(quantities) :], shown.items()):
            ax.plot(read, ".-", color="0.5", label="read")
            for values, style, label in zip(masked, "ox+", ("true", "model", "best baseline")):
                ax.plot(range(len(read), len(read) + len(values)), values, style, label=label)
            ax.set_title(f"{mask_key}, line {line}")
            ax.legend(fontsize=7)
        save_figure(fig, f"{task} · {report['encoding']} · {split}", f"{prefix}_{split}.png")
        if "mixture" in next(iter(quantities.values())):
            write_distribution_plots(task, split, quantities, f"{prefix}_{split}")


def series(report, split, key):
    """The first 4 series in the file's units: {line: (read, truths, medians, best baseline's)}."""
    lines = dict(read_samples(os.path.join(report["data_dir"], f"{split}.txt")))
    steps = report["splits"][split].values()
    shown = {}
    # one value a record in each step
    for i, line in enumerate(next(iter(steps))["line"][:4]):
        values = value_under(json.loads(lines[line]), key)
        if not isinstance(values, list):
            return {}
        masked = []
        for r in steps:
            center, spread = r["scale"] or (0, 1)
            scale = center, np.broadcast_to(spread, r["n"])[i]
            best = r["predicted"].get((r["verdict"] or {}).get("best"), [None] * r["n"])
            masked.append(in_file_units([r["truth"][i], r["median"][i], best[i]], scale))
        shown[line] = (in_file_units(values[: -len(masked)], scale), *np.transpose(masked))
    return shown


def save_figure(fig, title, path):
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_file(path) as tmp:
        fig.savefig(tmp, dpi=110)


def write_distribution_plots(task, split, quantities, prefix):
    """GMM heads: the first densities with their truths."""
    from matplotlib.figure import Figure

    n, k = len(quantities), min(len(r["mixture"]) for r in quantities.values())
    fig = Figure(figsize=(2.8 * k, 2.2 * n))
    axes = fig.subplots(n, k, squeeze=False)
    for row, (quantity, r) in zip(axes, quantities.items()):
        center, spreads = r["scale"] or (0.0, 1.0)
        for i, ax in enumerate(row):
            spread = np.broadcast_to(spreads, r["n"])[i]
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
    title += ", original units" * any(r["scale"] for r in quantities.values())
    save_figure(fig, title, f"{prefix}_density.png")


def main():
    configure(globals(), __file__)
    checkpoints = [ckpt] if os.path.isfile(ckpt) else ckpt.replace(",", " ").split()
    if not checkpoints:
        raise SystemExit("error: --ckpt is required")
    if (mask_all or horizon) and not mask_key:
        raise SystemExit("error: --mask_all and --horizon need --mask_key=KEY")
    if mask_all and horizon:
        raise SystemExit("error: --mask_all or --horizon, not both")
    trained = check_seeds(checkpoints)
    if not isinstance(trained.get("data_dir"), str):
        raise SystemExit(f"error: {checkpoints[0]}: its config names no data_dir")
    data = data_dir or trained["data_dir"]
    same_data = os.path.realpath(data) == os.path.realpath(trained["data_dir"])
    try:
        if same_data:
            check_trained_on(trained, checkpoints[0], trained["data_dir"], changed_data)
        prefix = report_prefix(checkpoints, data, same_data)
        names = [s for s in splits.split(",") if s]
        for split in names:
            check_name(split, "--splits:")
        report = score_setting(checkpoints, data, names, pick_device(device))
        if predictions:
            write_predictions(report, predictions)
    except (ValueError, OSError) as e:
        raise SystemExit(f"error: {e}")
    per_point = ["line", "predicted", "scale"]
    per_point += [] if save_predictions else ["truth", "median", "mixture"]
    saved = {**report, "splits": {}}
    for split, quantities in report["splits"].items():
        saved["splits"][split] = {
            q: {k: v for k, v in r.items() if k not in per_point} for q, r in quantities.items()
        }
    atomic_write_text(prefix + ".json", json.dumps(saved, indent=1) + "\n")
    text = markdown(report)
    atomic_write_text(prefix + ".md", text)
    print(text)
    if plots:
        write_plots(report, prefix)
    written = f"; figures: {prefix}_<split>.png" if plots else ""
    written += f"; predictions: {predictions}" * bool(predictions)
    print(f"report: {prefix}.json and {prefix}.md{written}")


if __name__ == "__main__":
    run_main(main)
