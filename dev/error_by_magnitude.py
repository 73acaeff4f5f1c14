"""
Where a model's error comes from, by the size of the truth. R² and MSE on raw values are carried by
the largest answers: on the multi-operand trees (answers from 0.01 to 10^8) a model can be closer
on most answers and still rank last. For eval.py reports written with --save_predictions=True, one
row per decade of |truth|: how many answers fall in it, and per report the median relative error
|prediction − truth| / |truth|, the median of prediction / truth (below 1: answers too small) and the
decade's share of the report's squared error; under the table each report's largest |prediction|
against the largest |truth|. Invalid predictions (a text encoding's unreadable number) are left out,
as in eval.py's MSE.

    python dev/error_by_magnitude.py --reports="out/xval/eval.json out/p1000/eval.json" --quantity=answer
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from configurator import configure  # noqa: E402
from predictions import saved_predictions  # noqa: E402
from util import atomic_write_text  # noqa: E402

# -- config: python dev/error_by_magnitude.py --help
reports = ""  # eval.py reports (.json, with predictions), separated by spaces
quantity = "answer"  # the quantity of the reports to read (arithmetic: answer; planets: dt, a0, ...)
split = "test"
out = ""  # also write the table to OUT.md
# -- end config


def decades(truth, pred):
    """{decade: (n, median relative error, median prediction / truth, share of the squared error)} of one
    report's valid predictions; decade d holds 10^d <= |truth| < 10^(d+1) (truths of 0 are left out)."""
    ok = np.isfinite(pred) & (truth != 0)
    t, p = truth[ok], pred[ok]
    d = np.floor(np.log10(np.abs(t))).astype(int)
    se = (p - t) ** 2
    total = se.sum() or 1.0
    return {int(k): (int((d == k).sum()), float(np.median(np.abs(p - t)[d == k] / np.abs(t[d == k]))),
                     float(np.median(p[d == k] / t[d == k])), float(se[d == k].sum() / total)) for k in np.unique(d)}


def table(paths):
    """The markdown table: a row per decade, a column per report."""
    results = []
    for path in paths:
        report, truth, pred = saved_predictions(path, None, quantity, split)
        valid = pred[np.isfinite(pred)]
        largest = float(np.abs(valid).max()) if valid.size else float("nan")
        results.append((report.get("encoding", "?"), int((~np.isfinite(pred)).sum()), len(truth), decades(truth, pred), largest))
    truth = np.abs(truth[truth != 0])  # the split's truths (the same in every report), for the counts
    counts = np.floor(np.log10(truth)).astype(int)
    lines = [f"# {quantity} on {split}: error by the size of the truth", "",
             "Per decade of |truth|: answers in it (all reports share the split), then per report the median of "
             "|prediction − truth| / |truth|, the median of prediction / truth and the decade's share of the "
             "report's squared error.", "",
             "| size of the truth | answers | " + " | ".join(f"{enc}: median rel. error | {enc}: median pred. / truth | "
                                                            f"{enc}: share of squared error" for enc, *_ in results) + " |",
             "|---|---|" + "---|---|---|" * len(results)]
    all_decades = sorted(set().union(*(r[3] for r in results)))
    for k in all_decades:
        n = int((counts == k).sum())
        cells = [f"{r[3][k][1]:.3g} | {r[3][k][2]:.3g} | {r[3][k][3]:.1%}" if k in r[3] else "– | – | –" for r in results]
        lines.append(f"| {10.0 ** k:g} to {10.0 ** (k + 1):g} | {n} | " + " | ".join(cells) + " |")
    lines += ["", f"Largest |truth| {truth.max():g}; " + " · ".join(
        f"{enc}: largest |prediction| {largest:.4g}, {bad} of {n} predictions invalid" for enc, bad, n, _, largest in results)]
    return "\n".join(lines) + "\n"


def main():
    configure(globals(), __file__)
    paths = reports.split()
    if not paths:
        raise SystemExit("error: --reports is required: eval.py reports (.json) written with --save_predictions=True")
    text = table(paths)
    print(text, end="")
    if out:
        atomic_write_text(out + ".md", text)
        print(f"wrote {out}.md")


if __name__ == "__main__":
    main()
