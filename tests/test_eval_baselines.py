"""eval_baselines.py: the baselines a model must beat, beside it in eval.py's report: for
independent records a least-squares fit on the record's other numbers, for series persistence and
seasonal persistence (its period detected in the training lists, or given), and a verdict naming
the best of them."""
import json

import numpy as np
import pytest
from conftest import run
from helpers import EVAL_TINY, write_own_data

import eval_baselines as eb


def scored(tmp_path, data, key, *evals, source=None, flags=()):
    """Own data (written from source by prepare/text.py, with flags), tokenized, a tiny model trained
    on it, and eval.py --mask_key=key once per extra flags in evals: [(report, stdout)]."""
    if source:
        (tmp_path / source[0]).write_text(source[1])
        run("prepare/text.py", str(tmp_path / source[0]), "--out", data, *flags)
    out = tmp_path / "run"
    run("tokenize_numbers.py", data, "--encoding=xval", "--workers=1")
    run("train.py", *EVAL_TINY, f"--data_dir={data}", f"--out_dir={out}", "--block_size=128")
    results = []
    for extra in evals or [()]:
        r = run("eval.py", f"--ckpt={out / 'ckpt_best.pt'}", f"--mask_key={key}", f"--out={out / 'report'}", *extra)
        results.append((json.load(open(out / "report.json")), r.stdout))
    return results


def test_least_squares_with_missing_predictors_is_the_fit_on_rows_filled_with_the_training_means():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    y = x @ [0.5, -2.0, 1.0] + 0.3 + rng.normal(0, 0.1, 300)
    x[rng.random(x.shape) < 0.2] = np.nan  # a fifth of the predictors missing
    fit = eb.LeastSquares([("a", None), ("b", None), ("c", None)])
    for row, target in zip(x, y):
        fit.add({k: float(v) for k, v in zip("abc", row) if not np.isnan(v)}, float(target))
    fit = fit.fit()
    by_hand = np.linalg.lstsq(np.c_[np.where(np.isnan(x), np.nanmean(x, 0), x), np.ones(len(y))], y, rcond=None)[0]
    assert fit.weights == pytest.approx(by_hand, abs=1e-9)
    predicted, lacking = fit.predict([{"a": 1.0, "b": 2.0, "c": -1.0}, {"a": 1.0}])
    assert predicted[0] == pytest.approx(by_hand @ [1.0, 2.0, -1.0, 1.0])
    assert predicted[1] == pytest.approx(by_hand @ [1.0, *np.nanmean(x, 0)[1:], 1.0]) and lacking == 1


@pytest.mark.slow
def test_least_squares_recovers_an_exact_linear_relation_and_the_model_does_not_beat_it(tmp_path):
    rows = np.random.default_rng(1).uniform(-5, 5, (240, 3)).round(2)
    csv = "site,a,b,c,y\n" + "".join(f"{'pq'[i % 2]},{a},{b},{c},{2 * a - 3 * b + 0.5 * c + 1:.3f}\n"
                                     for i, (a, b, c) in enumerate(rows))
    [(report, stdout)] = scored(tmp_path, str(tmp_path / "data"), "y", source=("linear.csv", csv))
    r = report["splits"]["test"]["y"]
    assert r["least_squares"]["predictors"] == ["a", "b", "c"] and r["least_squares"]["filled"] == 0
    assert r["least_squares"]["mse"] < 1e-6 < r["train_mean"]["mse"]  # y follows from a, b and c exactly
    assert r["least_squares"]["mse_original"] < 1e-4
    assert "least squares on the record's other numbers (a, b, c; a missing one filled with its training" in stdout
    assert r["verdict"]["best"] == "least_squares" and not r["verdict"]["beats"] and r["verdict"]["ratio"] > 1e3
    assert "test · y: verdict: the model does not beat the best baseline (least squares): its MSE is" in stdout


def test_the_period_of_a_sine_is_found_and_a_random_walk_or_a_trend_has_none():
    rng = np.random.default_rng(2)

    def period(make):
        return eb.period_of([make(np.arange(s, s + 24)).tolist() for s in range(0, 24 * 150, 24)])[0]

    assert period(lambda t: np.sin(2 * np.pi * t / 7) + rng.normal(0, 0.5, t.size)) == 7
    assert period(lambda t: np.sin(2 * np.pi * t / 5) + 0.1 * t) == 5  # not its multiples 10, 15
    assert period(lambda t: np.cumsum(rng.normal(size=t.size))) is None
    assert period(lambda t: 0.5 * t + rng.normal(0, 0.1, t.size)) is None


@pytest.mark.slow
def test_seasonal_persistence_finds_the_period_of_a_sine_and_beats_plain_persistence(tmp_path):
    rng = np.random.default_rng(3)
    i = np.arange(720)
    t = 10 + 5 * np.sin(2 * np.pi * i / 6) + 0.01 * i + rng.normal(0, 0.2, 720)
    csv = "t,p\n" + "".join(f"{a:.2f},{b:.2f}\n" for a, b in zip(t, rng.normal(1000, 3, 720)))
    (report, stdout), (given, given_out) = scored(tmp_path, str(tmp_path / "data"), "t", (), ("--period=3",),
                                                  source=("sine.csv", csv), flags=("--window", "16"))
    r = report["splits"]["test"]["t"]
    assert r["seasonal_persistence"]["period"] == 6 and "t: period 6 detected in the training lists" in stdout
    assert r["seasonal_persistence"]["mse"] < r["persistence"]["mse"] / 5
    assert "seasonal persistence (the value 6 steps earlier) on the same values" in stdout
    assert r["verdict"]["best"] == "seasonal_persistence" and "(seasonal persistence)" in stdout
    # a period given: used as given (here half the true one, so worse than the detected one)
    g = given["splits"]["test"]["t"]["seasonal_persistence"]
    assert g["period"] == 3 and "--period=3" in given_out and g["mse"] > r["seasonal_persistence"]["mse"]
    test = [json.loads(line)["t"] for line in open(tmp_path / "data" / "test.txt")]  # 6 steps earlier, by hand
    assert r["seasonal_persistence"]["mse"] == pytest.approx(np.mean([(w[-1] - w[-7]) ** 2 for w in test]))


@pytest.mark.slow
def test_no_period_is_said_once_and_gives_no_seasonal_row(tmp_path):
    data = write_own_data(str(tmp_path / "data"))  # windows of 3 steps of a random walk
    [(report, stdout)] = scored(tmp_path, data, "t", ("--splits=test,val",))
    assert stdout.count("t: no period found in the training lists") == 1
    assert all("seasonal_persistence" not in s["t"] and "persistence" in s["t"] for s in report["splits"].values())
    # least squares on the window's other numbers: p's three and t's first two
    assert report["splits"]["test"]["t"]["least_squares"]["predictors"] == ["t", "p"]


@pytest.mark.slow
def test_a_list_valued_json_key_of_independent_records_gets_persistence(tmp_path):
    rng = np.random.default_rng(4)
    lines = "".join(json.dumps({"t": np.cumsum(rng.normal(0, 1, 5)).round(2).tolist(), "h": round(rng.normal(), 2)})
                    + "\n" for _ in range(120))
    [(report, stdout)] = scored(tmp_path, str(tmp_path / "data"), "t", source=("series.jsonl", lines))
    r = report["splits"]["test"]["t"]
    test = [json.loads(line)["t"] for line in open(tmp_path / "data" / "test.txt")]
    assert r["persistence"]["mse"] == pytest.approx(np.mean([(w[-1] - w[-2]) ** 2 for w in test]))
    assert "least_squares" not in r and "persistence (the previous value of the same key)" in stdout


def test_the_verdict_names_the_best_baseline_and_the_ratio_of_mses():
    r = {"mean": {"mse": 2.0}, "train_mean": {"mse": 1.0}, "persistence": {"mse": 4.0}}
    assert eb.verdict(r) == {"best": "train_mean", "ratio": 2.0, "beats": False}
    r["mean"]["mse"] = 0.25
    assert eb.verdict(r) == {"best": "train_mean", "ratio": 0.25, "beats": True}
    r["mean"]["mse"] = float("nan")  # no valid prediction: no better than anything
    assert eb.verdict(r)["beats"] is False
    assert eb.verdict({"mean": {"mse": 1.0}}) is None  # a task without baselines


def test_true_values_outside_the_training_range_are_noted():
    meta, scale = {"ranges": {"co2": [310.0, 360.0]}}, (330.0, 10.0)  # written (x - 330) / 10
    note = eb.outside_training("co2", [3.5, 4.0, -1.0], meta, scale)
    assert note.startswith("2 of 3 true values lie outside the training range [310, 360]")
    assert "(0 below, 2 above, from 320 to 370)" in note
    assert eb.outside_training("co2", [0.5, -1.0], meta, scale) is None
    assert eb.outside_training("co2", [9.0], {}, scale) is None
