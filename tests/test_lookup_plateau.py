"""dev/lookup_plateau.py: a model that averages the dictionary is told apart from one that matches keys."""
import json
import os
import sys

import numpy as np
import pytest
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "dev"))
import lookup_plateau  # noqa: E402


@pytest.mark.parametrize("model", ["average", "lookup", "copy"])
def test_averaging_copying_and_matching_keys_are_told_apart(tmp_path, model):
    rng = np.random.default_rng(0)
    lines, truth, pred = [], [], []
    for i in range(200):
        values = np.round(rng.uniform(-3, 3, size=2 + i % 5), 2)
        q = int(rng.integers(len(values)))
        lines.append("{" + ",".join(f"{k}:{v}" for k, v in zip("abcdef", values)) + "}" + f"{'abcdef'[q]}={values[q]}")
        truth.append(values[q])
        pred.append({"average": values.mean(), "lookup": values[q], "copy": values[i % len(values)]}[model])
    (tmp_path / "test.txt").write_text("\n".join(lines) + "\n")
    report = {"task": "lookup", "data_dir": str(tmp_path), "splits": {"test": {"answer": {"truth": truth, "median": pred}}}}
    (tmp_path / "eval.json").write_text(json.dumps(report))
    n, model_nmse, mean_nmse, corr, count, copied, right = lookup_plateau.rows(str(tmp_path / "eval.json"))[-1]
    assert n == "all" and count == 200 and mean_nmse > 0.5
    if model == "average":
        assert model_nmse == pytest.approx(mean_nmse) and corr == pytest.approx(1.0) and copied < 0.2
    elif model == "lookup":
        assert model_nmse == 0.0 and copied == right == 1.0
    else:  # a dictionary value, not the queried one: every prediction a copy, right about 1 in entries
        chance = np.mean([1 / (2 + i % 5) for i in range(200)])
        assert copied == 1.0 and right == pytest.approx(chance, abs=0.1) and model_nmse > mean_nmse


def test_a_report_of_another_task_is_refused_naming_it(tmp_path):
    (tmp_path / "eval.json").write_text(json.dumps({"task": "arithmetic", "splits": {"test": {"answer": {}}}}))
    with pytest.raises(SystemExit, match="lookup test split with 'answer', got task 'arithmetic'"):
        lookup_plateau.rows(str(tmp_path / "eval.json"))
