"""tools/baselines.py on a tiny temperature set written here in the exact sample format, whose last step
follows from the earlier ones (a linear trend per station): every MLP beats the training mean, the same
seed gives the same numbers, samples too short to cut are counted out, and a bad line names its place."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT
from helpers import STD, sample_line, write_dataset

sys.path.insert(0, os.path.join(ROOT, "tools"))
import baselines  # noqa: E402

SHORT = {"train": (5, 4), "val": (0, 1), "test": (1, 0)}  # (too few stations, too few steps) per split


def run_baselines(data, out, *extra):
    r = subprocess.run([sys.executable, "tools/baselines.py", f"--data_dir={data}", f"--out={out}", "--n_stations=3",
                        "--n_steps=4", "--all_width=64", "--single_width=64", "--max_iters=200",
                        "--eval_interval=50", *extra], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out + ".json") as f:
        return json.load(f), r.stdout


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("temperature")), short=SHORT)


@pytest.fixture(scope="module")
def result(data, tmp_path_factory):
    return run_baselines(data, str(tmp_path_factory.mktemp("out") / "baselines"))


@pytest.mark.slow
def test_every_mlp_beats_the_training_mean(result):
    rows = {r["variant"]: r for r in result[0]["results"]}
    assert set(rows) == {"mean", "persistence", *baselines.INPUTS}
    for variant in baselines.INPUTS:
        assert rows[variant]["test_mse"] < 0.3 * rows["mean"]["test_mse"], (variant, rows)
        assert rows[variant]["test_mse_K2"] == pytest.approx(rows[variant]["test_mse"] * STD ** 2)
    assert rows["all_stations"]["inputs"] == 3 * 3 + 4 + 3 * 3  # coords, start, 3 earlier steps per station
    assert rows["temp_only"]["inputs"] == 3 and rows["single"]["inputs"] == 3 + 3 + 4
    assert rows["temp_coord"]["inputs"] == 3 + 3 and rows["temp_toy"]["inputs"] == 3 + 2


@pytest.mark.slow
def test_short_samples_are_counted_out(result):
    samples, stdout = result[0]["samples"], result[1]
    for split, (few_stations, few_steps) in SHORT.items():
        n = {"train": 200, "val": 40, "test": 40}[split]
        assert samples[split] == {"used": n - few_stations - few_steps, "excluded": few_stations + few_steps}
    assert "train: 191 samples used, 9 excluded (fewer than 3 stations or 4 steps)" in stdout
    assert "| All Stations |" in stdout and os.path.exists(result[0]["config"]["out"] + ".md")


@pytest.mark.slow
def test_the_same_seed_gives_the_same_losses(data, result, tmp_path):
    again, _ = run_baselines(data, str(tmp_path / "again"))
    assert [r["test_mse"] for r in again["results"]] == [r["test_mse"] for r in result[0]["results"]]
    assert [r.get("val_mse") for r in again["results"]] == [r.get("val_mse") for r in result[0]["results"]]


def test_a_bad_line_is_an_error_naming_file_and_line(tmp_path):
    good = sample_line(np.random.default_rng(0), 3, 4)
    for bad in ('{"description":{"coords":[[0,0,1]]}', good.replace('"data":[[', '"data":[[1,')):
        path = tmp_path / "train.txt"
        path.write_text(good + "\n" + bad + "\n")
        with pytest.raises(SystemExit, match=f"{path}:2"):
            baselines.read_split(str(path), 3, 4)
