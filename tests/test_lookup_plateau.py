"""results/lookup_plateau.py: a model that averages the dictionary is told apart from one that matches keys."""
import json
import os
import sys

import numpy as np
import pytest
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "results"))
import lookup_plateau  # noqa: E402


@pytest.mark.parametrize("model,expect_corr", [("average", 1.0), ("lookup", None)])
def test_the_dictionary_mean_is_the_baseline_of_the_averaging_plateau(tmp_path, model, expect_corr):
    rng = np.random.default_rng(0)
    lines, truth, pred = [], [], []
    for i in range(200):
        values = np.round(rng.uniform(-3, 3, size=2 + i % 5), 2)
        q = int(rng.integers(len(values)))
        lines.append("{" + ",".join(f"{k}:{v}" for k, v in zip("abcdef", values)) + "}" + f"{'abcdef'[q]}={values[q]}")
        truth.append(values[q])
        pred.append(values.mean() if model == "average" else values[q])
    (tmp_path / "test.txt").write_text("\n".join(lines) + "\n")
    report = {"task": "lookup", "data_dir": str(tmp_path), "splits": {"test": {"answer": {"truth": truth, "median": pred}}}}
    (tmp_path / "eval.json").write_text(json.dumps(report))
    n, model_nmse, mean_nmse, corr, count = lookup_plateau.rows(str(tmp_path / "eval.json"))[-1]
    assert n == "all" and count == 200 and mean_nmse > 0.5
    if expect_corr:
        assert model_nmse == pytest.approx(mean_nmse) and corr == pytest.approx(1.0)
    else:
        assert model_nmse == 0.0


def test_a_report_of_another_task_is_refused_naming_it(tmp_path):
    (tmp_path / "eval.json").write_text(json.dumps({"task": "arithmetic", "splits": {"test": {"answer": {}}}}))
    with pytest.raises(SystemExit, match="look-up test split, got task 'arithmetic'"):
        lookup_plateau.rows(str(tmp_path / "eval.json"))
