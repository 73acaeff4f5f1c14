"""
Is a look-up model matching keys, or averaging the dictionary? For each eval.py report (written
with --save_predictions=True) of the look-up test split, the answer MSE / variance of the model
is set beside that of the predictor "the mean of the sample's dictionary values" (which needs no
key matching), per number of entries, with the correlation of the two predictions. A model on the
averaging plateau has MSEs near the dictionary mean's and a correlation near 1; a model that
matches keys has MSEs far below it.

Two more columns tell copying from key matching: how often the prediction is one of the sample's
dictionary values (within 0.1%), and how often it is the queried one among those. A model that
copies a value without matching keys picks the right one at the chance rate 1/entries.

    python dev/lookup_plateau.py --reports="out/lookup/eval_1000.json out/lookup/eval_5000.json"
"""
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from configurator import configure  # noqa: E402
from predictions import saved_predictions  # noqa: E402

# -- config: python dev/lookup_plateau.py --help
reports = ""  # eval.py reports (.json, with predictions), separated by spaces
data_dir = ""  # the look-up dataset; default: the report's
# -- end config

VALUE = re.compile(r":([-+0-9.eE]+)")  # a dictionary value: after its key's colon


def rows(report_path):
    """
    (entries, model MSE / var, dictionary-mean MSE / var, correlation, n, share of predictions that
    copy a dictionary value, share of those copies that are the queried value) per entry count, then 'all'.
    """
    report, truth, pred = saved_predictions(report_path, "lookup", "answer")
    with open(os.path.join(data_dir or report["data_dir"], "test.txt")) as f:
        lines = f.read().splitlines()[:len(truth)]  # eval.py scores the first samples in order
    values = [[float(v) for v in VALUE.findall(line.split("}")[0])] for line in lines]
    entries, dict_mean = np.array([len(v) for v in values]), np.array([np.mean(v) for v in values])
    copied = np.array([np.isclose(p, v, rtol=1e-3, atol=1e-6).any() for p, v in zip(pred, values)])
    right = np.isclose(pred, truth, rtol=1e-3, atol=1e-6)
    var = truth.var()
    out = []
    for n in [*sorted(set(entries.tolist())), "all"]:
        s = np.ones(len(truth), bool) if n == "all" else entries == n
        ok = s & np.isfinite(pred)  # invalid text predictions are left out, as in eval.py
        out.append((n, np.mean((pred[ok] - truth[ok]) ** 2) / var, np.mean((dict_mean[s] - truth[s]) ** 2) / var,
                    np.corrcoef(pred[ok], dict_mean[ok])[0, 1], int(s.sum()), copied[ok].mean(),
                    right[ok & copied].sum() / max(1, (ok & copied).sum())))
    return out


def main():
    configure(globals(), __file__)
    paths = reports.split()
    if not paths:
        raise SystemExit("error: --reports is required (eval.py reports separated by spaces)")
    lines = ["| report | entries | n | model MSE / var | dictionary mean MSE / var | corr(model, dictionary mean) "
             "| copies a dictionary value | of those, the queried one |",
             "|---|---|---|---|---|---|---|---|"]
    for path in paths:
        for n, model, dict_mean, corr, count, copied, right in rows(path):
            lines.append(f"| `{path}` | {n} | {count} | {model:.3f} | {dict_mean:.3f} | {corr:.2f} "
                         f"| {copied:.1%} | {right:.1%} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
