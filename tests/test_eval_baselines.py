"""eval.py's baselines beside the model, which a model must beat to be of use: for independent records
a least-squares fit on the record's other numbers, for series persistence and seasonal persistence (its
period detected in the training lists, or given), and a verdict naming the best of them."""
import json
import os

import numpy as np
import pytest
from conftest import run
from helpers import EVAL_TINY, write_own_data

import eval_baselines as ev


def scored(tmp_path, name, content, *flags, key, evals=((),)):
    """prepare/text.py, tokenize and train a tiny model on `content`, then eval.py --mask_key=key once
    per extra flags in evals: [(report, stdout)]."""
    path = tmp_path / name
    path.write_text(content)
    data, out = tmp_path / "data", tmp_path / "run"
    run("prepare/text.py", str(path), "--out", str(data), *flags)
    return trained_and_scored(str(data), out, key, evals)


def trained_and_scored(data, out, key, evals):
    run("tokenize_numbers.py", data, "--encoding=xval", "--workers=1")
    run("train.py", *EVAL_TINY, f"--data_dir={data}", f"--out_dir={out}", "--block_size=128")
    results = []
    for extra in evals:
        prefix = os.path.join(out, "report")
        r = run("eval.py", f"--ckpt={os.path.join(out, 'ckpt_best.pt')}", f"--mask_key={key}",
                f"--out={prefix}", *extra)
        results.append((json.load(open(prefix + ".json")), r.stdout))
    return results


# ---------------------------------------------------------------- independent records: least squares

def test_least_squares_with_missing_predictors_is_the_fit_on_rows_filled_with_the_training_means():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    y = x @ [0.5, -2.0, 1.0] + 0.3 + rng.normal(0, 0.1, 300)
    x[rng.random(x.shape) < 0.2] = np.nan  # a fifth of the predictors missing
    fit = ev.LeastSquares([("a", None), ("b", None), ("c", None)])
    for row, target in zip(x, y):
        fit.add({k: float(v) for k, v in zip("abc", row) if not np.isnan(v)}, float(target))
    fit = fit.fit()
    filled = np.where(np.isnan(x), np.nanmean(x, 0), x)
    by_hand = np.linalg.lstsq(np.c_[filled, np.ones(len(y))], y, rcond=None)[0]
    assert fit.weights == pytest.approx(by_hand, abs=1e-9)
    predicted, lacking = fit.predict([{"a": 1.0, "b": 2.0, "c": -1.0}, {"a": 1.0}])
    assert predicted[0] == pytest.approx(by_hand @ [1.0, 2.0, -1.0, 1.0])
    assert predicted[1] == pytest.approx(by_hand @ [1.0, *np.nanmean(x, 0)[1:], 1.0]) and lacking == 1


@pytest.mark.slow
def test_least_squares_recovers_an_exact_linear_relation_and_the_model_does_not_beat_it(tmp_path):
    rng = np.random.default_rng(1)
    rows = rng.uniform(-5, 5, (240, 3)).round(2)
    csv = "site,a,b,c,y\n" + "".join(f"{'pq'[i % 2]},{a},{b},{c},{2 * a - 3 * b + 0.5 * c + 1:.3f}\n"
                                     for i, (a, b, c) in enumerate(rows))
    [(report, stdout)] = scored(tmp_path, "linear.csv", csv, key="y")
    r = report["splits"]["test"]["y"]
    assert r["least_squares"]["predictors"] == ["a", "b", "c"] and r["least_squares"]["filled"] == 0
    assert r["least_squares"]["mse"] < 1e-6 < r["train_mean"]["mse"]  # y follows from a, b and c exactly
    assert r["least_squares"]["mse_original"] < 1e-4
    assert "least squares on the record's other numbers (a, b, c; a missing one filled with its training" in stdout
    assert r["verdict"]["best"] == "least_squares" and not r["verdict"]["beats"] and r["verdict"]["ratio"] > 1e3
    assert "test · y: verdict: the model does not beat the best baseline (least squares): its MSE is" in stdout


# ---------------------------------------------------------------- series: persistence, seasonal persistence

def test_the_period_of_a_sine_is_found_and_a_random_walk_or_a_trend_has_none():
    rng = np.random.default_rng(2)

    def period(make):
        return ev.period_of([make(np.arange(s, s + 24)).tolist() for s in range(0, 24 * 150, 24)])[0]

    assert period(lambda t: np.sin(2 * np.pi * t / 7) + rng.normal(0, 0.5, t.size)) == 7
    assert period(lambda t: np.sin(2 * np.pi * t / 5) + 0.1 * t) == 5  # not its multiples 10, 15
    assert period(lambda t: np.cumsum(rng.normal(size=t.size))) is None
    assert period(lambda t: 0.5 * t + rng.normal(0, 0.1, t.size)) is None


def sine_csv(n=720, period=6, seed=3):
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    t = 10 + 5 * np.sin(2 * np.pi * i / period) + 0.01 * i + rng.normal(0, 0.2, n)
    return "t,p\n" + "".join(f"{a:.2f},{b:.2f}\n" for a, b in zip(t, rng.normal(1000, 3, n)))


@pytest.mark.slow
def test_seasonal_persistence_finds_the_period_of_a_sine_and_beats_plain_persistence(tmp_path):
    (report, stdout), (given, given_out) = scored(tmp_path, "sine.csv", sine_csv(), "--window", "16", key="t",
                                                  evals=((), ("--period=3",)))
    r = report["splits"]["test"]["t"]
    assert r["seasonal_persistence"]["period"] == 6
    assert r["seasonal_persistence"]["mse"] < r["persistence"]["mse"] / 5
    assert "t: period 6 detected in the training lists" in stdout
    assert "seasonal persistence (the value 6 steps earlier) on the same values" in stdout
    assert r["verdict"]["best"] == "seasonal_persistence" and "(seasonal persistence)" in stdout
    # a period given: used as given (here half the true one, so worse than the detected one)
    g = given["splits"]["test"]["t"]
    assert g["seasonal_persistence"]["period"] == 3 and "--period=3" in given_out
    assert g["seasonal_persistence"]["mse"] > r["seasonal_persistence"]["mse"]
    # the values 6 steps earlier, by hand
    test = [json.loads(line)["t"] for line in open(tmp_path / "data" / "test.txt")]
    assert r["seasonal_persistence"]["mse"] == pytest.approx(np.mean([(w[-1] - w[-7]) ** 2 for w in test]))


@pytest.mark.slow
def test_no_period_is_said_once_and_gives_no_seasonal_row(tmp_path):
    data = write_own_data(str(tmp_path / "data"))  # windows of 3 steps of a random walk
    [(report, stdout)] = trained_and_scored(data, str(tmp_path / "run"), "t", [("--splits=test,val",)])
    assert stdout.count("t: no period found in the training lists") == 1
    assert all("seasonal_persistence" not in s["t"] and "persistence" in s["t"] for s in report["splits"].values())
    # least squares on the window's other numbers: p's three and t's first two
    assert report["splits"]["test"]["t"]["least_squares"]["predictors"] == ["t", "p"]


@pytest.mark.slow
def test_a_list_valued_json_key_of_independent_records_gets_persistence(tmp_path):
    rng = np.random.default_rng(4)
    lines = "".join(json.dumps({"t": np.cumsum(rng.normal(0, 1, 5)).round(2).tolist(), "h": round(rng.normal(), 2)})
                    + "\n" for _ in range(120))
    [(report, stdout)] = scored(tmp_path, "series.jsonl", lines, key="t")
    r = report["splits"]["test"]["t"]
    test = [json.loads(line)["t"] for line in open(tmp_path / "data" / "test.txt")]
    assert r["persistence"]["mse"] == pytest.approx(np.mean([(w[-1] - w[-2]) ** 2 for w in test]))
    assert "least_squares" not in r  # a list is no single number to fit
    assert "persistence (the previous value of the same key)" in stdout


# ---------------------------------------------------------------- the verdict

def test_the_verdict_names_the_best_baseline_and_the_ratio_of_mses():
    r = {"mean": {"mse": 2.0}, "train_mean": {"mse": 1.0}, "persistence": {"mse": 4.0}}
    assert ev.verdict(r) == {"best": "train_mean", "ratio": 2.0, "beats": False}
    r["mean"]["mse"] = 0.25
    assert ev.verdict(r) == {"best": "train_mean", "ratio": 0.25, "beats": True}
    r["mean"]["mse"] = float("nan")  # no valid prediction: no better than anything
    assert ev.verdict(r)["beats"] is False
    assert ev.verdict({"mean": {"mse": 1.0}}) is None  # a task without baselines


def test_true_values_outside_the_training_range_are_noted():
    meta = {"ranges": {"co2": [310.0, 360.0]}}
    scale = (330.0, 10.0)  # written (x - 330) / 10
    note = ev.outside_training("co2", [3.5, 4.0, -1.0], meta, scale)
    assert note.startswith("2 of 3 true values lie outside the training range [310, 360]")
    assert "(0 below, 2 above, from 320 to 370)" in note
    assert ev.outside_training("co2", [0.5, -1.0], meta, scale) is None
    assert ev.outside_training("co2", [9.0], {}, scale) is None
