"""
What does a planets model use to predict a0? For an eval.py report (written with
--save_predictions=True) of the planets test split, the model's a0 MSE / variance is set beside
that of a predictor that reads only the description: the other planets' semimajor axes.

In the data (prepare/planets.py) the axes are evenly spaced from 1 to a_f, with a_f uniform in
[1.5, 3], and the planets are written in a random order. So the other planets' axes often fix
a0: if none of them is 1, planet0 is the innermost and a0 = 1; if they are 1, 1.5, 2, a0 is 2.5.
Where they leave a choice (2 planets and the other at 1: a0 = a_f, anywhere in [1.5, 3]; 3
planets with the others at 1 and x: x is a_f or the middle one), the predictor is the posterior
mean under the training prior. The orbit itself fixes a0 in every case (planet0's distance from
the star stays within a0 (1 ± e), e <= 0.1), so this predictor is a floor for a model that reads
the orbit and a ceiling for one that reads only the description's arithmetic. A third column
shows how well the orbit fixes it: planet0's mean distance from the star over the sample's steps.

    python dev/planets_a0.py --reports="out/planets_cpu/xval/eval_4500.json out/planets_cpu/xval/eval_9000.json"
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from configurator import configure  # noqa: E402
from predictions import saved_predictions  # noqa: E402

# -- config: python dev/planets_a0.py --help
reports = ""  # eval.py reports (.json, with predictions), separated by spaces
data_dir = ""  # the planets dataset; default: the report's
# -- end config

A_F = (1.5, 3.0)  # prior of the outermost axis (prepare/planets.py)
TOL = 2e-3  # the axes are written to 4 significant digits


def from_description(others, n):
    """Posterior mean of a0 given the other n - 1 planets' axes, under the training prior."""
    seen = sorted(others)
    if seen[0] > 1 + TOL:
        return 1.0  # 1 is missing: planet0 is the innermost
    if n == 2:
        return sum(A_F) / 2  # a0 = a_f, uniform
    total = weight = 0.0
    for j in range(1, n):  # planet0 in grid place j; the others fill the rest
        places = [i for i in range(n) if i != j]
        d = (seen[-1] - 1) / places[-1]
        fits = all(abs(a - (1 + i * d)) <= TOL * i for a, i in zip(seen, places))
        if fits and A_F[0] - TOL <= 1 + (n - 1) * d <= A_F[1] + TOL:
            w = 1 / places[-1]  # the density of the largest seen axis given this place, a_f uniform
            total, weight = total + w * (1 + j * d), weight + w
    if weight == 0:
        raise ValueError(f"axes {seen} of a {n}-planet system are not evenly spaced from 1")
    return total / weight


def rows(report_path):
    """
    (n, model MSE / var, description MSE / var, orbit MSE / var, share the description fixes,
    model MSE / var there, corr(model, description)).
    """
    report, truth, pred = saved_predictions(report_path, "planets", "a0")
    with open(os.path.join(data_dir or report["data_dir"], "test.txt")) as f:
        lines = f.read().splitlines()[:len(truth)]  # eval.py scores the first samples in order
    guess, orbit = [], []
    for number, line in enumerate(lines, 1):
        sample = json.loads(line)
        desc = sample["description"]
        planets = [desc[key] for key in desc if key.startswith("planet")]
        orbit.append(np.mean([np.hypot(*step[0]) for step in sample["data"]]))  # data[step][planet][x, y]
        if planets[0]["a"] != truth[number - 1]:
            raise SystemExit(f"error: test.txt line {number}: planet0's a is not the report's truth; wrong --data_dir?")
        guess.append(from_description([p["a"] for p in planets[1:]], len(planets)))
    guess, orbit, var = np.array(guess), np.array(orbit), truth.var()
    fixed = np.abs(guess - truth) <= TOL
    ok = np.isfinite(pred)
    return (len(truth), np.mean((pred[ok] - truth[ok]) ** 2) / var, np.mean((guess - truth) ** 2) / var,
            np.mean((orbit - truth) ** 2) / var, fixed.mean(), np.mean((pred[fixed & ok] - truth[fixed & ok]) ** 2) / var,
            np.corrcoef(pred[ok], guess[ok])[0, 1])


if __name__ == "__main__":
    configure(globals(), __file__)
    if not reports.split():
        raise SystemExit("error: --reports is required (eval.py reports separated by spaces)")
    lines = ["| report | n | model MSE / var | description MSE / var | orbit MSE / var | description fixes a0 "
             "| model MSE / var there | corr(model, description) |", "|---|---|---|---|---|---|---|---|"]
    for path in reports.split():
        n, model, desc, orbit, fixed, there, corr = rows(path)
        lines.append(f"| `{path}` | {n} | {model:.3f} | {desc:.3f} | {orbit:.4f} | {fixed:.0%} | {there:.3f} | {corr:.2f} |")
    print("\n".join(lines))
