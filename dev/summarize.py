"""
Several settings in one table: every DIR/<setting>_<encoding>/eval.json that eval.py wrote, encodings
side by side per setting, next to the paper's figures (docs/decisions.md#paper-figures), with each
setting's tokens per training sample and ms per step. Prints the tables and writes DIR/summary.md.

    python dev/summarize.py dev/results
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository root
from eval import COLUMNS, fmt  # noqa: E402
from util import atomic_write_text  # noqa: E402

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
    ("arithmetic:ops2", "test", "answer", "r2"): {"xval": 0.99998, "p10": 0.998, "p1000": 0.991, "fp15": 0.993},
    ("arithmetic:ops3", "test", "answer", "r2"): {"xval": 0.99994, "p10": 0.996, "p1000": 0.990, "fp15": 0.981},
    ("arithmetic:ops4", "test", "answer", "r2"): {"xval": 0.99998, "p10": 0.992, "p1000": 0.991, "fp15": 0.935},
}
ENCODING_ORDER = ["xval", "fp15", "b1999", "p1000", "p10"]


SUMMARY_METRICS = {"era5": ["mse", "mse_kelvin2"], "planets": ["mse"], "arithmetic": ["r2", "adj_r2", "mse"],
                   "lookup": ["mse", "acc3", "acc2"], "text": ["mse", "r2", "mse_original"]}


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
                                + (f" (paper {paper:g})" if paper is not None else ""))
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


def write_summary(folder):
    """Print the tables of every report under folder and write them to folder/summary.md."""
    text = summary(folder)
    atomic_write_text(os.path.join(folder, "summary.md"), text + "\n")
    print(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="One markdown table per setting from <folder>/*/eval.json.")
    parser.add_argument("folder", help="a folder of <setting>_<encoding>/eval.json reports, e.g. dev/results")
    write_summary(parser.parse_args().folder)
