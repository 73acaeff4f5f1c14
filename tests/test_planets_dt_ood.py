"""dev/planets_dt_ood.py: a model that recalls training step sizes is told from one that interpolates."""
import json
import os
import sys

import numpy as np
import pytest
from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "dev"))
import planets_dt_ood  # noqa: E402

STEPS = [0.2, 0.3, 0.5, 0.8]


def report(tmp_path, name, encoding, truth, pred):
    (tmp_path / "meta.json").write_text(json.dumps({"dataset": "planets", "train_stepsizes": STEPS}))
    r = {"task": "planets", "encoding": encoding, "data_dir": str(tmp_path),
         "splits": {"test_ood_stepsize": {"dt": {"truth": list(truth), "median": list(pred)}}}}
    path = tmp_path / name
    path.write_text(json.dumps(r))
    return str(path)


def test_recalling_and_interpolating_models_are_told_apart(tmp_path):
    truth = np.random.default_rng(0).uniform(0.22, 0.78, 200)
    truth = truth[np.min(np.abs(truth[:, None] - np.array(STEPS)), axis=1) >= 0.02]
    recalled = np.array(STEPS)[np.argmin(np.abs(truth[:, None] - np.array(STEPS)), axis=1)]
    enc, n, mse, corr, share, *_ = planets_dt_ood.rows(report(tmp_path, "b.json", "b1999", truth, recalled), 0.01)
    assert (enc, n, share) == ("b1999", len(truth), 1.0) and mse > 1e-4
    enc, n, mse, corr, share, *_ = planets_dt_ood.rows(report(tmp_path, "x.json", "xval", truth, truth + 0.001), 0.01)
    assert share == 0.0 and mse == pytest.approx(1e-6) and corr == pytest.approx(1.0)


@pytest.mark.slow
def test_the_command_writes_the_table_and_figure(tmp_path):
    truth = np.linspace(0.33, 0.47, 20)  # 0.03 or more from every training step size
    paths = [report(tmp_path, f"{e}.json", e, truth, truth) for e in ("xval", "p10")]
    out = tmp_path / "dt"
    r = run("dev/planets_dt_ood.py", f"--reports={' '.join(paths)}", f"--out={out}")
    table = (tmp_path / "dt.md").read_text()
    assert table.count("| `") == 2 and "| xval | 20 | 0 | 1.000 | 0% |" in table
    assert (tmp_path / "dt.png").stat().st_size > 0 and "wrote" in r.stdout


@pytest.mark.slow
def test_no_reports_is_an_error_that_says_what_is_needed():
    r = run("dev/planets_dt_ood.py", check=False)
    assert r.returncode == 1 and "--reports is required" in r.stderr
