"""dev/gmm_table.py: the MSE head scored as N(prediction, s²), s² its own validation MSE, beside the GMM head."""
import json
import math

import numpy as np
import pytest
from conftest import run


@pytest.mark.slow
def test_the_mse_head_is_scored_as_a_gaussian_with_its_validation_spread(tmp_path):
    truth, median = [0.0, 1.0, 2.0, 4.0], [0.5, 1.0, 1.0, 3.0]  # variance of the truth 2.1875
    val_mse = 0.25  # s = 0.5
    gmm_mean = {"mse": 0.1, "nll": -0.5, "crps": 0.2, "cover50": 0.5, "cover90": 0.9}
    reports = {
        "val": {"splits": {"val": {"a0": {"mean": {"mse": val_mse}}}}},
        "mse": {"splits": {"test": {"a0": {"n": 4, "truth": truth, "median": median, "mean": {"mse": 0.5625}}}}},
        "gmm": {"splits": {"test": {"a0": {"mean": gmm_mean}}}},
    }
    paths = []
    for name, report in reports.items():
        paths.append(str(tmp_path / f"{name}.json"))
        with open(paths[-1], "w") as f:
            json.dump(report, f)
    r = run("dev/gmm_table.py", *paths)
    row = [line for line in r.stdout.splitlines() if line.startswith("| test | a0 |")]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    z = (np.array(truth) - np.array(median)) / 0.5
    nll = float(np.mean(0.5 * math.log(2 * math.pi * val_mse) + 0.5 * z**2))
    assert cells[2] == "4" and cells[3] == "2.188" and cells[4] == "0.5625" and cells[5] == "0.1"
    assert abs(float(cells[6]) - nll) < 1e-3 and cells[7] == "-0.500"
    # |z| = 1, 0, 2, 2: inside the central 50% (|z| < 0.674) only the exact one, inside 90% (|z| < 1.645) two
    assert cells[10] == "0.25 / 0.50" and cells[11] == "0.50 / 0.90"


@pytest.mark.slow
def test_a_missing_report_is_named():
    r = run("dev/gmm_table.py", "nowhere.json", "b.json", "c.json", check=False)
    assert r.returncode != 0 and "nowhere.json: no such eval.py report" in r.stderr
