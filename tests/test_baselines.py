"""tools/baselines.py on a tiny temperature set written here in the exact sample format, whose last step
follows from the earlier ones (a linear trend per station): every MLP beats the training mean, the same
seed gives the same numbers, samples too short to cut are counted out, and a bad line names its place."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import baselines  # noqa: E402

STD = 2.0  # the normalisation std written to meta.json: MSE in K² = standardised MSE × 4
SHORT = {"train": (5, 4), "val": (0, 1), "test": (1, 0)}  # (too few stations, too few steps) per split


def sample_line(rng, n_stations, n_steps):
    """One sample as prepare/era5.py writes it: each station warms or cools linearly, plus a little noise."""
    lat, lon = rng.uniform(-math.pi / 2, math.pi / 2, n_stations), rng.uniform(0, 2 * math.pi, n_stations)
    coords = np.round(np.stack([np.sin(lat), np.sin(lon), np.cos(lon)], 1), 4)
    tod, toy = rng.uniform(0, 2 * math.pi, 2)
    start = np.round([math.sin(tod), math.cos(tod), math.sin(toy), math.cos(toy)], 4)
    base, slope = rng.normal(0, 1, (n_stations, 1)), rng.normal(0, 0.4, (n_stations, 1))
    data = base + slope * np.arange(n_steps) + rng.normal(0, 0.02, (n_stations, n_steps))
    record = {"description": {"coords": coords.tolist(), "start": start.tolist()},
              "data": [[float(f"{v:.4g}") for v in row] for row in data]}
    return json.dumps(record, separators=(",", ":"))


def write_dataset(d, sizes=None, short=None, ocean=False, seed=0):
    """train/val/test.txt with 3-4 stations and 4-5 steps, plus `short` samples that have 2 stations or
    3 steps; meta.json; with ocean=True also <split>.ocean.txt (1 when the first station's sin lat < 0)."""
    rng = np.random.default_rng(seed)
    sizes = sizes or {"train": 200, "val": 40, "test": 40}
    os.makedirs(d, exist_ok=True)
    for split, n in sizes.items():
        few_stations, few_steps = (short or {}).get(split, (0, 0))
        shapes = ([(2, 5)] * few_stations + [(4, 3)] * few_steps +
                  [(int(rng.integers(3, 5)), int(rng.integers(4, 6))) for _ in range(n - few_stations - few_steps)])
        lines = [sample_line(rng, *shapes[i]) for i in rng.permutation(n)]
        with open(os.path.join(d, f"{split}.txt"), "w") as f:
            f.write("".join(line + "\n" for line in lines))
        if ocean:
            labels = [int(json.loads(line)["description"]["coords"][0][0] < 0) for line in lines]
            with open(os.path.join(d, f"{split}.ocean.txt"), "w") as f:
                f.write("".join(f"{v}\n" for v in labels))
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"splits": sizes, "normalisation": {"mean": 280.0, "std": STD, "units": "K", "from": "train"}}, f)
    return d


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


def test_every_mlp_beats_the_training_mean(result):
    rows = {r["variant"]: r for r in result[0]["results"]}
    assert set(rows) == {"mean", "persistence", *baselines.INPUTS}
    for variant in baselines.INPUTS:
        assert rows[variant]["test_mse"] < 0.3 * rows["mean"]["test_mse"], (variant, rows)
        assert rows[variant]["test_mse_K2"] == pytest.approx(rows[variant]["test_mse"] * STD ** 2)
    assert rows["all_stations"]["inputs"] == 3 * 3 + 4 + 3 * 3  # coords, start, 3 earlier steps per station
    assert rows["temp_only"]["inputs"] == 3 and rows["single"]["inputs"] == 3 + 3 + 4
    assert rows["temp_coord"]["inputs"] == 3 + 3 and rows["temp_toy"]["inputs"] == 3 + 2


def test_short_samples_are_counted_out(result):
    samples, stdout = result[0]["samples"], result[1]
    for split, (few_stations, few_steps) in SHORT.items():
        n = {"train": 200, "val": 40, "test": 40}[split]
        assert samples[split] == {"used": n - few_stations - few_steps, "excluded": few_stations + few_steps}
    assert "train: 191 samples used, 9 excluded (fewer than 3 stations or 4 steps)" in stdout
    assert "| All Stations |" in stdout and os.path.exists(result[0]["config"]["out"] + ".md")


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
