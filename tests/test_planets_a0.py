"""dev/planets_a0.py: a0 from the other planets' axes (the training prior), and the report's columns."""
import json
import math
import os
import sys

import numpy as np
import pytest
from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "dev"))
import planets_a0  # noqa: E402


@pytest.mark.parametrize("others, n, a0", [
    ([1.5, 2.0], 3, 1.0),  # 1 is missing: planet0 is the innermost
    ([1.0, 1.5, 2.0], 4, 2.5),  # evenly spaced from 1: planet0 is the outermost
    ([1.0, 2.0, 2.5], 4, 1.5),  # a gap of two steps: planet0 fills it
    ([1.0], 2, 2.25),  # a0 = a_f, uniform in [1.5, 3]
    ([1.0, 2.0], 3, (0.5 * 1.5 + 1.0 * 3.0) / 1.5),  # 2 is a_f (a0 1.5) or the middle (a0 3), 1 : 2
    ([1.0, 2.8], 3, 1.9),  # 2.8 can only be a_f (a middle one lies in [1.25, 2])
])
def test_the_description_predictor_by_hand(others, n, a0):
    assert planets_a0.from_description(others, n) == pytest.approx(a0)


def test_the_ambiguous_case_is_the_posterior_mean_of_the_prior():
    rng = np.random.default_rng(0)
    a_f = rng.uniform(1.5, 3.0, 2_000_000)
    axes = np.stack([np.ones_like(a_f), (1 + a_f) / 2, a_f], axis=1)
    first = rng.integers(0, 3, len(a_f))  # planet0 is a random one of the three
    a0 = axes[np.arange(len(a_f)), first]
    x = np.where(first == 1, a_f, (1 + a_f) / 2)  # the other axis that is not 1 (first != 0)
    near = (first != 0) & (np.abs(x - 1.8) < 0.01)
    assert a0[near].mean() == pytest.approx(planets_a0.from_description([1.0, 1.8], 3), abs=0.015)  # 4 standard errors


def test_axes_not_evenly_spaced_from_1_are_refused():
    with pytest.raises(ValueError, match="not evenly spaced"):
        planets_a0.from_description([1.0, 1.5, 2.7], 4)


def test_report_columns(tmp_path):
    rng = np.random.default_rng(1)
    lines, truth, pred = [], [], []
    for i in range(60):
        n, a_f = 2 + i % 3, rng.uniform(1.5, 3.0)
        axes = [round(1 + j * (a_f - 1) / (n - 1), 3) for j in range(n)]
        rng.shuffle(axes)
        desc = {f"planet{j}": {"m": 1, "a": a, "e": 0} for j, a in enumerate(axes)}
        steps = [[[a * math.cos(t + j), a * math.sin(t + j)] for j, a in enumerate(axes)] for t in np.linspace(0, 3, 20)]
        lines.append(json.dumps({"description": {**desc, "stepsize": 0.2}, "data": steps}))
        truth.append(axes[0])
        pred.append(planets_a0.from_description(axes[1:], n))  # a model that reads the description only
    (tmp_path / "test.txt").write_text("\n".join(lines) + "\n")
    report = {"task": "planets", "data_dir": str(tmp_path), "splits": {"test": {"a0": {"truth": truth, "median": pred}}}}
    (tmp_path / "eval.json").write_text(json.dumps(report))
    n, model, desc, orbit, fixed, there, corr = planets_a0.rows(str(tmp_path / "eval.json"))
    assert n == 60 and model == pytest.approx(desc) and corr == pytest.approx(1.0) and there == pytest.approx(0, abs=1e-6)
    assert orbit < 1e-6 < desc and 0.5 < fixed < 1  # circles of radius a0; 2-planet systems with planet0 outer are not fixed


def test_a_report_of_another_task_is_refused_naming_it(tmp_path):
    (tmp_path / "eval.json").write_text(json.dumps({"task": "lookup", "splits": {"test": {"answer": {}}}}))
    with pytest.raises(SystemExit, match="planets test split with .a0."):
        planets_a0.rows(str(tmp_path / "eval.json"))


@pytest.mark.slow
def test_no_reports_is_an_error_that_says_what_is_needed():
    r = run("dev/planets_a0.py", check=False)
    assert r.returncode == 1 and "--reports is required" in r.stderr
