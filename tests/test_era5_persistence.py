"""dev/era5_persistence.py: a temperature model set beside persistence on the same values."""
import json
import os
import sys

import numpy as np
import pytest
from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "dev"))
import era5_persistence  # noqa: E402


def write(tmp_path, model):
    """A report of 40 samples of 2-3 stations whose predictions come from model(previous, truth)."""
    rng = np.random.default_rng(0)
    lines, truth, prev = [], [], []
    for i in range(40):
        data = np.round(np.cumsum(rng.normal(0, 0.1, size=(2 + i % 2, 5)), axis=1), 3).tolist()
        lines.append(json.dumps({"description": {"coords": [[0, 1, 0]] * len(data)}, "data": data}))
        truth += [row[-1] for row in data]
        prev += [row[-2] for row in data]
    (tmp_path / "test.txt").write_text("\n".join(lines + lines[:3]) + "\n")  # more lines than scored
    pred = model(np.array(prev), np.array(truth))
    report = {"task": "era5", "data_dir": str(tmp_path), "splits": {"test": {"t+1": {"truth": truth, "median": pred.tolist()}}}}
    (tmp_path / "eval.json").write_text(json.dumps(report))
    return str(tmp_path / "eval.json")


def test_a_model_that_copies_the_previous_step_is_persistence(tmp_path):
    n, model, persistence, to_previous, errors, changes, blend = era5_persistence.row(write(tmp_path, lambda p, t: p))
    assert n == 100 and model == persistence > 0 and to_previous == 0 and errors == pytest.approx(1)
    assert np.isnan(changes)  # the model changes nothing: no correlation to speak of
    assert blend == [pytest.approx(persistence)] * 2


def test_a_model_with_part_of_the_change_helps_in_a_blend(tmp_path):
    n, model, persistence, to_previous, errors, changes, blend = era5_persistence.row(
        write(tmp_path, lambda p, t: p + 0.5 * (t - p)))
    assert model == pytest.approx(0.25 * persistence) and changes == pytest.approx(1)
    assert blend[1] == pytest.approx((1 - 0.25) ** 2 * persistence) and blend[1] < persistence


def test_a_report_of_another_task_is_refused_naming_it(tmp_path):
    (tmp_path / "eval.json").write_text(json.dumps({"task": "planets", "splits": {"test": {"a0": {}}}}))
    with pytest.raises(SystemExit, match="era5 test split"):
        era5_persistence.row(str(tmp_path / "eval.json"))


@pytest.mark.slow
def test_no_reports_is_an_error_that_says_what_is_needed():
    r = run("dev/era5_persistence.py", check=False)
    assert r.returncode == 1 and "--reports is required" in r.stderr
