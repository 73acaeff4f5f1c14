"""eval_baselines.py: least squares, (seasonal) persistence and the verdict."""
import json

import numpy as np
import pytest
from conftest import run
from helpers import evaluated, own_model, own_run, read_split

import eval_baselines as eb
from predict import masked_numbers
from tokenize_line import split_text


def test_a_key_with_a_dot_is_a_top_level_key_before_a_path():
    assert eb.value_under({"a.b": [1], "a": {"b": 2}}, "a.b") == [1] and eb.value_under({"a": {"b": 2}}, "a.b") == 2


def test_least_squares_fills_missing_predictors_with_training_means():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    y = x @ [0.5, -2.0, 1.0] + 0.3 + rng.normal(0, 0.1, 300)
    x[rng.random(x.shape) < 0.2] = np.nan
    fit = eb.LeastSquares([(k, None) for k in "abcy"], ("y", None))
    for row, target in zip(x, y):
        fit.add({"y": float(target), **{k: float(v) for k, v in zip("abc", row) if not np.isnan(v)}})
    fit = fit.fit()
    means = np.nanmean(x, 0)
    by_hand = np.linalg.lstsq(np.c_[np.where(np.isnan(x), means, x), np.ones(len(y))], y, rcond=None)[0]
    assert fit.weights == pytest.approx(by_hand, abs=1e-9)
    # a record without the target is not predicted
    predicted, lacking = fit.predict([{"a": 1.0, "b": 2.0, "c": -1.0, "y": 0}, {"a": 1.0, "y": 0}, {"a": 1.0}])
    assert predicted == pytest.approx([by_hand @ [1.0, 2.0, -1.0, 1.0], by_hand @ [1.0, *means[1:], 1.0]])
    assert lacking == 1


@pytest.mark.slow
def test_least_squares_recovers_a_linear_relation_and_a_list_valued_key_gets_persistence(tmp_path):
    rng = np.random.default_rng(1)
    records = [{"site": "pq"[i % 2], "a": a, "b": b, "c": c, "y": round(2 * a - 3 * b + 0.5 * c + 1, 3),
                "t": np.cumsum(rng.normal(0, 1, 5)).round(2).tolist()}
               for i, (a, b, c) in enumerate(rng.uniform(-5, 5, (240, 3)).round(2).tolist())]
    data, ckpt = own_model(tmp_path, "records.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    report, stdout, _ = evaluated(ckpt, extra=["--mask_key=y"])
    r = report["splits"]["test"]["y"]
    fit = r["least_squares"]
    assert fit["predictors"] == ["a", "b", "c"] and fit["filled"] == 0
    assert fit["mse"] < 1e-6 < r["train_mean"]["mse"] and fit["mse_original"] < 1e-4
    assert "least squares on the record's other numbers (a, b, c; a missing one filled with its training" in stdout
    assert r["verdict"]["best"] == "least_squares" and r["verdict"]["says"] == "loses to" and r["verdict"]["paired"]["least_squares"][0] > 1e3
    assert "test · y: verdict: the model loses to the best baseline (least squares): its MSE is" in stdout
    assert "test · y: next to try: longer training (--max_iters)" in stdout
    report, stdout, _ = evaluated(ckpt, extra=["--mask_key=t"])
    r = report["splits"]["test"]["t"]
    test = [record["t"] for record in read_split(data)]
    assert r["persistence"]["mse"] == pytest.approx(np.mean([(w[-1] - w[-2]) ** 2 for w in test]))
    assert "least_squares" not in r and "persistence (the key's last value that the model reads)" in stdout


def test_the_period_of_a_sine_is_found_and_a_random_walk_or_a_trend_has_none():
    rng = np.random.default_rng(2)

    def period(make):
        return eb.period_of([make(np.arange(s, s + 24)).tolist() for s in range(0, 24 * 150, 24)])[0]

    assert period(lambda t: np.sin(2 * np.pi * t / 7) + rng.normal(0, 0.5, t.size)) == 7
    assert period(lambda t: np.sin(2 * np.pi * t / 5) + 0.1 * t) == 5  # not 10, 15
    assert period(lambda t: np.cumsum(rng.normal(size=t.size))) is None
    assert period(lambda t: 0.5 * t + rng.normal(0, 0.1, t.size)) is None


@pytest.mark.slow
def test_seasonal_persistence_finds_a_sines_period(tmp_path):
    rng = np.random.default_rng(3)
    i = np.arange(720)
    t = 10 + 5 * np.sin(2 * np.pi * i / 6) + 0.01 * i + rng.normal(0, 0.2, 720)
    csv = "t,p\n" + "".join(f"{a:.2f},{b:.2f}\n" for a, b in zip(t, rng.normal(1000, 3, 720)))
    data, ckpt = own_model(tmp_path, "sine.csv", csv, "--window", "16")
    report, stdout, _ = evaluated(ckpt, extra=["--mask_key=t"])
    r = report["splits"]["test"]["t"]
    seasonal = r["seasonal_persistence"]
    assert seasonal["period"] == 6 and "t: period 6 detected in the training lists" in stdout
    assert seasonal["mse"] < r["persistence"]["mse"] / 5
    assert "seasonal persistence (the value 6 steps earlier) on the same values" in stdout
    assert r["verdict"]["best"] == "seasonal_persistence" and "(seasonal persistence)" in stdout
    w = np.array([record["t"] for record in read_split(data)])
    assert seasonal["mse"] == pytest.approx(np.mean((w[:, -1] - w[:, -7]) ** 2))
    # a period given is used (here half the true one: worse)
    given, stdout, _ = evaluated(ckpt, extra=["--mask_key=t", "--period=3"])
    g = given["splits"]["test"]["t"]["seasonal_persistence"]
    assert g["period"] == 3 and "--period=3" in stdout and g["mse"] > seasonal["mse"]
    # --horizon: seasonal persistence where the value a period earlier is not masked
    ahead = evaluated(ckpt, extra=["--mask_key=t", "--horizon=8"])[0]["splits"]["test"]
    assert ["seasonal_persistence" in ahead[f"t.t+{h}"] for h in range(1, 9)] == [True] * 6 + [False] * 2
    assert ahead["t.t+6"]["seasonal_persistence"]["mse"] == pytest.approx(np.mean((w[:, -3] - w[:, -9]) ** 2))


@pytest.mark.slow
@pytest.mark.parametrize("flags, error", [("--mask_key=t", ""), ("--mask_key=t --horizon=3", "windows longer than 3"),
                                          ("--mask_key=", "--horizon need --mask_key")])
def test_horizon_scores_each_step_against_the_last_value_not_masked(own_run, flags, error):
    data, ckpt = own_run
    r = run("eval.py", f"--ckpt={ckpt}", "--horizon=2", *flags.split(), check=False)
    assert (r.returncode != 0) == bool(error) and error in r.stderr
    w = np.array([record["t"] for record in read_split(data)])
    for h in (1, 2) if not error else ():
        step = json.load(open(ckpt.replace("ckpt_best.pt", "eval_t_h2.json")))["splits"]["test"][f"t.t+{h}"]
        assert step["n"] == len(w) and step["persistence"]["mse"] == pytest.approx(np.mean((w[:, h] - w[:, 0]) ** 2))


def test_horizon_masks_the_last_steps_of_one_list_of_numbers():
    line = '{"m":[{"t":1,"k":1},{"t":2,"k":1}],"s":[1,2,3]}'
    assert masked_numbers(line, split_text(line), "x", ["s"], 2) == {"s": [5, 6]}
    for key in ("m", "m.t"):
        with pytest.raises(ValueError, match=f"--horizon needs '{key}' to hold one list of numbers"):
            masked_numbers(line, split_text(line), "x", [key], 2)


@pytest.mark.parametrize("noise, n, says", [(1.0, 200, "no clear difference"), (0.3, 60, "beats"),
                                             (3.0, 60, "loses to"), (0.3, 19, "too few")])
def test_the_verdict_is_paired_and_says_beats_only_where_its_interval_excludes_1(noise, n, says):
    rng = np.random.default_rng(5)
    y = rng.normal(size=2 * n)
    baseline, model = y + rng.normal(size=2 * n), y + noise * rng.normal(size=2 * n)
    model[-1] = np.nan  # left out of the pairs
    r = {"truth": y.tolist(), "median": model.tolist()}
    v = eb.verdict(r, {"persistence": baseline, "train_mean": y * 0 + 3}, np.arange(2 * n) // 2)  # 2 values a record
    ratio, low, high = v["paired"]["persistence"]
    mse = np.nanmean((model - y) ** 2)
    assert v["best"] == "persistence" and v["says"] == says
    assert ratio == pytest.approx(mse / np.mean((baseline - y)[:-1] ** 2))
    assert low < ratio < high and (low < 1 < high) == (says == "no clear difference") or says == "too few"
    assert v["records"] == n and v["paired"]["train_mean"][0] == pytest.approx(mse / np.mean((y[:-1] - 3) ** 2))
    assert eb.verdict({**r, "median": [None] * 2 * n}, {"persistence": baseline}, range(2 * n)) is None  # no valid
    assert eb.verdict(r, {}, range(2 * n)) is None  # no baselines


def test_true_values_outside_the_training_range_are_noted():
    meta, scale = {"ranges": {"co2": [310.0, 360.0]}}, (330.0, 10.0)
    note = eb.outside_training("co2", [3.5, 4.0, -1.0], meta, scale)
    assert note.startswith("2 of 3 true values lie outside the training range [310, 360]")
    assert "(0 below, 2 above, from 365 to 370); a level that moves: prepare/text.py --scale record" in note
    assert eb.outside_training("co2", [0.5, -1.0], meta, scale) is None
    assert eb.outside_training("co2", [9.0], {}, scale) is None
    for quantity in ("co2.ppm", "co2.ppm.t+2"):  # a key with a dot, --horizon's step
        assert eb.outside_training(quantity, [9.0], {"ranges": {"co2.ppm": [310, 360]}}, scale).startswith("1 of 1")
    # 309.99 written with 3 decimals, scaled (-2.001), is the least value rounded: not outside
    rounded = {**meta, "decimals": {"co2": 3}}
    assert eb.outside_training("co2", [-2.0009], rounded, scale) is None
    assert eb.outside_training("co2", [-2.003], rounded, scale).startswith("1 of 1")
