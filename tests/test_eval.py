"""eval.py: metrics by hand, seeds combined, every task end to end, a bad score never hidden."""
import csv
import json
import math
import os
import re
import shutil

import numpy as np
import pytest
import torch
from conftest import ROOT, run
from helpers import diverged, edited, eval_model, evaluated, failed, one_line_error, own_run, prepared
from helpers import read_split, tokenize, truth_field, write_old_layout

import eval as ev
import model


def test_metrics_by_hand():
    a = lambda *x: np.array(x, float)
    assert ev.mse(a(1, 2, 3), a(1, 4, math.nan)) == pytest.approx(2.0)
    assert math.isnan(ev.mse(a(1, 2), a(math.nan, math.nan)))
    # R² = 1 - 1/2; adjusted (n 3, p 1): 1 − 0.5·2/1
    assert ev.r_squared(a(1, 2, 3), a(1, 2, 4)) == pytest.approx(0.5)
    assert ev.adjusted_r_squared(0.5, 3) == pytest.approx(0.0)
    assert ev.adjusted_r_squared(0.9, 5) == pytest.approx(1 - 0.1 * 4 / 3)
    assert math.isnan(ev.adjusted_r_squared(0.9, 2))
    assert ev.r_squared(a(1, 2, 3, 10), a(1, 2, 4, math.nan)) == pytest.approx(0.5)
    y, p = [1.234, 0.5, -2.0, 1234.0], [1.2341, 0.5049, math.nan, 1236.0]
    assert ev.accuracy(y, p, 3) == pytest.approx(1 / 4)
    assert ev.accuracy(y, p, 2) == pytest.approx(3 / 4) and ev.accuracy([-0.31], [0.31], 2) == 0.0
    m = ev.metrics("text", [0.0, 1.0, 2.0], [0.0, 1.0, 3.0], scale=(280.0, 5.0))
    assert m["mse_original"] == pytest.approx(m["mse"] * 25) and m["r2_original"] == pytest.approx(m["r2"])
    meta = {"scales": {"t.c": {"center": 280.0, "spread": 5.0}, "m": {"center": 1.0, "spread": 2.0}}}
    for quantity, scale in (("t.c", (280, 5)), ("t.c.t+2", (280, 5)), ("m.t", (1, 2)), ("m.t.t+1", (1, 2))):
        assert ev.quantity_scale("text", meta, quantity) == scale  # --horizon's t.t+1 scaled as t


def test_seeds_combine_into_mean_std_and_the_median_prediction():
    truth = np.array([1.0, 2.0, 3.0])
    runs = [(truth, np.array(p), {"numbers": 3, "invalid": bad, "not_num": 0}, None)
            for p, bad in (([1.0, 2.0, math.nan], 1), ([3.0, math.nan, math.nan], 2), ([2.0, 4.0, math.nan], 1))]
    r = ev.combine("arithmetic", runs)
    # per seed MSE 0, 4, 2.5
    assert r["mean"]["mse"] == pytest.approx(13 / 6) and r["std"]["mse"] == pytest.approx(np.std([0, 4, 2.5], ddof=1))
    assert r["mean"]["invalid_rate"] == pytest.approx(4 / 9) and r["median_prediction"]["valid"] == 2
    assert r["median"] == [2.0, 3.0, None] and r["median_prediction"]["mse"] == pytest.approx(1.0)


@pytest.mark.parametrize("says, records, said", [
    ("loses to", 40, "the model loses to the best baseline (persistence): its MSE is 2.5× the baseline's (95% interval "
                     "1.5–4, 40 records)\n\ntest · t: next to try: longer training (--max_iters)"),
    ("no clear difference", 40, "no clear difference between the model and the best baseline (persistence): its"),
    ("beats", 40, "the model beats the best baseline (persistence): its MSE is 2.5×"),
    ("too few", 3, "3 records are too few to tell the model from the best baseline (persistence): its MSE is "
                   "2.5× the baseline's; 17 more would do")])
def test_the_report_says_the_verdict_its_interval_and_writes_predictions_in_file_units(says, records, said, tmp_path):
    paired = {"persistence": [2.5, 1.5, 4.0], "train_mean": [0.5, 0.4, 0.6]}
    scores = {"mse": 1.0, "n": 2, "valid": 2}
    r = {"n": 2, "mean": {"mse": 1.0, "invalid_rate": 0}, "std": {}, "median_prediction": scores, "truth": [0.0, 1.0],
         "median": [0.5, None], "line": [2, 5], "scale": (10.0, 2.0), "predicted": {"persistence": [1.0, 2.0]}, "persistence": scores,
         "train_mean": scores, "verdict": dict(best="persistence", says=says, records=records, paired=paired)}
    report = dict(task="text", encoding="xval", checkpoints=["c.pt"], causal=False, data_dir=str(tmp_path), notes=[],
                  warnings=[], config={}, splits={"test": {"t": r}})
    md = ev.markdown(report)
    assert "the key's training mean on the same values: MSE 1; the model's MSE 0.5× its (95% interval 0.4–0.6)" in md
    assert f"test · t: verdict: {said}" in md and ("next to try" in md) == (says == "loses to")
    # line numbers count blank lines; source line k names record k
    (tmp_path / "test.txt").write_text('\n{"t":[0,1]}\n\n\n{"t":[1,0]}\n')
    (tmp_path / "test.source.txt").write_text("f.csv:2\nf.csv:3\n")
    ev.write_predictions(report, str(tmp_path / "p.csv"))
    assert (tmp_path / "p.csv").read_text() == ("split,quantity,line,source,truth,prediction,persistence\n"
                                                "test,t,2,f.csv:2,10,11,12\ntest,t,5,f.csv:3,12,,14\n")
    (tmp_path / "test.source.txt").write_text("f.csv:2\n")
    with pytest.raises(SystemExit, match="test.source.txt lacks lines of test.txt"):
        ev.write_predictions(report, str(tmp_path / "p.csv"))
    assert list(ev.series(report, "test", "t")[5][0]) == [12]


def lines(data, split):
    return sum(1 for _ in open(f"{data}/{split}.txt"))


def evaluate(ckpt, data, tmp_path, *extra, check=False):
    prefix = str(tmp_path / "e")
    return run("eval.py", f"--ckpt={ckpt}", f"--data_dir={data}", f"--out={prefix}", *extra, check=check), prefix


def reconfigured(checkpoint, path, **config):
    """The checkpoint saved at path with other settings (data_dir: as if trained there)."""
    def change(c):
        c["config"].update(config)
        c["data_dir"] = c["config"]["data_dir"]
    return edited(checkpoint, path, change)


def test_arithmetic_end_to_end_text_encoding(data, own_data, tmp_path):
    p10 = eval_model(data, tmp_path / "p10", "--encoding=p10", "--block_size=64")
    report, stdout, _ = evaluated(p10, extra=[f"--predictions={tmp_path}/p.csv"])
    assert report["task"] == "arithmetic" and report["encoding"] == "p10" and list(report["splits"]) == ["test"]
    r = report["splits"]["test"]["answer"]
    m = r["per_seed"][0]
    assert r["n"] == lines(data, "test") == len(open(f"{tmp_path}/p.csv").readlines()) - 1
    assert 0 <= r["mean"]["invalid_rate"] <= 1
    assert m["valid"] == round(r["n"] * (1 - r["mean"]["invalid_rate"]))
    assert m["valid"] <= 2 or (math.isfinite(m["r2"]) and m["adj_r2"] <= m["r2"])
    assert report["config"]["encoding"] == "p10" and "| test | answer |" in stdout
    rows = open(f"{own_data}/test.txt").read().splitlines()
    rows[-1] = "(" + "+".join(["0.5"] * 40) + ")=20"
    for said in (f"test.txt:{len(rows)}: .* more than the model's block_size", "test.txt:3: "):
        open(f"{own_data}/test.txt", "w").write("\n".join(rows) + "\n")
        assert re.search(said, one_line_error(evaluate(p10, own_data, tmp_path)[0]))
        rows[2] = "zz" + rows[2]  # text the vocabulary never saw


def test_a_causal_checkpoint_is_scored_by_generation_and_says_so(data, tmp_path):
    causal = eval_model(data, tmp_path / "causal", "--block_size=32", "--causal=True")
    report, _, prefix = evaluated(causal)
    assert report["causal"] is True and "each number generated from the text before it" in open(prefix + ".md").read()
    assert report["splits"]["test"]["answer"]["n"] == lines(data, "test")
    mlm = reconfigured(causal, tmp_path / "mlm.pt", causal=False, seed=2)
    r = run("eval.py", f"--ckpt={causal} {mlm}", f"--out={tmp_path / 'mixed'}", check=False)
    assert "differ in causal (True vs False): seeds must agree" in one_line_error(r)


@pytest.mark.slow
def test_lookup_with_two_seeds_and_plots(tmp_path_factory, tmp_path):
    data = prepared(tmp_path_factory, "lookup", "prepare/lookup.py")
    ckpts = [eval_model(data, tmp_path / f"s{s}", "--block_size=64", f"--seed={s}") for s in (1, 2)]
    report, _, prefix = evaluated(*ckpts, extra=["--plots"])
    assert list(report["splits"]) == ["test", "test_ood"]
    for split in ("test", "test_ood"):
        r = report["splits"][split]["answer"]
        seeds = r["per_seed"]
        assert r["n"] == lines(data, split) and len(seeds) == 2
        assert set(r["mean"]) >= {"mse", "acc3", "acc2", "not_num_rate"}
        assert r["mean"]["acc3"] <= r["mean"]["acc2"] + 1e-12
        assert r["std"]["mse"] == pytest.approx(abs(seeds[0]["mse"] - seeds[1]["mse"]) / math.sqrt(2))
        assert os.path.getsize(f"{prefix}_{split}.png") > 1000
    assert all(0.3 < t < 0.5 for t in report["splits"]["test_ood"]["answer"]["truth"]) and lines(data, "test_ood")


@pytest.mark.slow
def test_planets_end_to_end_on_both_ood_sets(tmp_path_factory, tmp_path):
    data = prepared(tmp_path_factory, "planets", "prepare/planets.py")
    report, _, _ = evaluated(eval_model(data, tmp_path / "xval", "--block_size=1024"))
    assert list(report["splits"]) == ["test", "test_ood_a0", "test_ood_stepsize"]
    test = report["splits"]["test"]
    assert [test[q]["n"] for q in ("dt", "a0", "e0", "m0")] == [lines(data, "test")] * 4
    planets = [sum(k.startswith("planet") for k in r["description"]) for r in read_split(data)]
    assert test["steps"]["n"] == 10 * 2 * sum(planets)  # 10 steps × (x, y) × every planet
    assert set(report["splits"]["test_ood_stepsize"]["dt"]["truth"]).isdisjoint({0.2, 0.3, 0.5, 0.8})
    assert all(1.0 < a < 1.16 for a in report["splits"]["test_ood_a0"]["a0"]["truth"])


@pytest.mark.slow
def test_temperature_end_to_end_in_kelvin(tmp_path):
    data = str(tmp_path / "data")
    nc = str(write_old_layout(tmp_path / "t2m.nc", truth_field()))
    run("prepare/era5.py", nc, "--size=tiny", "--out", data, "--workers=1")
    tokenize(data)
    report, _, prefix = evaluated(eval_model(data, tmp_path / "xval", "--block_size=2048"), extra=["--max_samples=20"])
    r = report["splits"]["test"]["t+1"]
    rows = [row for line in list(open(f"{data}/test.txt"))[:20] for row in json.loads(line)["data"]]
    std = json.load(open(f"{data}/meta.json"))["normalisation"]["std"]
    assert r["n"] == len(rows) and r["mean"]["mse_kelvin2"] == pytest.approx(r["mean"]["mse"] * std ** 2)
    assert r["persistence"]["mse"] == pytest.approx(sum((row[-1] - row[-2]) ** 2 for row in rows) / len(rows))
    assert "persistence (each station's previous step)" in open(prefix + ".md").read()


@pytest.mark.slow
def test_summary_puts_encodings_side_by_side(data, tmp_path):
    runs, ckpts = tmp_path / "runs", []
    for enc in ("p10", "xval"):  # folders <setting>_<encoding>: one table per setting
        ckpts.append(eval_model(data, runs / f"ops2_{enc}", f"--encoding={enc}", "--block_size=32"))
        run("eval.py", f"--ckpt={ckpts[-1]}", f"--out={runs / f'ops2_{enc}' / 'eval'}")
    out = run("dev/summarize.py", str(runs)).stdout
    assert out.count("## ") == 1 and "## ops2" in out and "| xval | p10 |" in out
    assert "tokens/sample mean (max) | 6 (6) | 18 (18) |" in out
    assert os.path.exists(runs / "summary.md")
    r = run("eval.py", f"--ckpt={' '.join(ckpts)}", f"--out={tmp_path / 'mixed'}", check=False)
    assert "differ in encoding" in one_line_error(r)


@pytest.mark.slow
def test_own_data_in_original_units_with_baselines_and_plots(own_run, monkeypatch, tmp_path):
    data, ckpt = own_run
    folder = os.path.dirname(ckpt)
    table = f"{folder}/predictions.csv"
    r = run("eval.py", f"--ckpt={ckpt}", "--mask_key=t", "--save_predictions=True", f"--predictions={table}",
            "--splits=test,val")
    prefix = f"{folder}/eval_t"  # named after the key
    assert f"report: {prefix}.json and {prefix}.md; predictions: {table}" in r.stdout
    report = json.load(open(prefix + ".json"))
    t = report["splits"]["test"]["t"]
    test = [record["t"] for record in read_split(data)]
    truth = np.array([row[-1] for row in test])
    by_hand = np.mean((truth - [row[-2] for row in test]) ** 2)
    mean = np.mean([record["t"][-1] for record in read_split(data, "train")])
    assert t["truth"] == truth.tolist() and t["mean"]["mse_original"] == pytest.approx(t["mean"]["mse"] * 25)
    assert t["mean"]["r2_original"] == pytest.approx(t["mean"]["r2"], abs=1e-9)
    assert [t["persistence"][k] for k in ("mse", "mse_original")] == pytest.approx([by_hand, by_hand * 25])
    assert t["train_mean"]["mse"] == pytest.approx(np.mean((truth - mean) ** 2))
    # a random walk has no period
    assert r.stdout.count("t: no period found in the training lists") == 1 and t["least_squares"]["predictors"] == ["t", "p"]
    assert all("seasonal_persistence" not in s["t"] and "persistence" in s["t"] for s in report["splits"].values())
    for said in ("the key's training mean", "MSE (original units)", "MSE of median (original units)"):
        assert said in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith("| test | t"))
    assert row.endswith(f"| {ev.fmt(t['median_prediction']['mse_original'])} |")
    figures = []  # t's scale: center 280, spread 5
    rows = [row for row in csv.DictReader(open(table)) if row["split"] == "test"]
    assert [int(row["line"]) for row in rows] == list(range(1, len(test) + 1))
    for row, window, p in zip(rows, test, t["median"]):
        own = [float(row[k]) for k in ("truth", "prediction", "persistence")]
        assert own == pytest.approx([v * 5 + 280 for v in (window[-1], p, window[-2])])
    monkeypatch.setattr(ev, "save_figure", lambda fig, title, path: figures.append((fig, title)))
    monkeypatch.setattr(ev, "mask_key", "t")
    blanks = shutil.copytree(data, tmp_path / "data") / "test.txt"
    blanks.write_text("\n" + blanks.read_text().replace("\n", "\n\n", 2))  # blank lines 1, 3 and 5
    report = ev.score_setting([ckpt], str(blanks.parent), ["test"], "cpu")
    t = report["splits"]["test"]["t"]
    assert t["line"] == [2, 4, *range(6, len(test) + 4)]  # lines of the file, blank ones counted
    t.update(mixture=[[0, 0, 0, 0, -1, -1]] * t["n"])  # as a GMM head has
    ev.write_plots(report, "e")
    (scatter, _), (densities, title) = figures
    assert len(scatter.axes) == 1 + 4  # beside the scatter, the first 4 series
    for (read, *masked), window, row in zip(ev.series(report, "test", "t").values(), test, rows):
        assert read == pytest.approx(np.array(window[:2]) * 5 + 280)
        own = [float(row[k]) for k in ("truth", "prediction", t["verdict"]["best"])]
        assert np.concatenate(masked) == pytest.approx(own)
    assert ev.series(report, "test", "p") == {}  # one number a record
    ax = scatter.axes[0]
    assert ax.get_xlabel() == "true (original units)" and ax.get_ylabel() == "predicted (original units)"
    shown = np.stack([truth, np.array(t["median"])], 1) * 5 + 280
    assert np.allclose(ax.collections[0].get_offsets(), shown)
    assert f"MSE {ev.fmt(t['median_prediction']['mse_original'])}" in ax.get_title()
    # a density of scaled mean 0 peaks at the center and integrates to 1 in the file's units
    x, y = densities.axes[0].lines[0].get_data()
    assert x[np.argmax(y)] == pytest.approx(280, abs=0.1)
    assert np.trapezoid(y, x) == pytest.approx(1, abs=0.02) and "original units" in title
    assert densities.axes[0].lines[1].get_xdata()[0] == pytest.approx(truth[0] * 5 + 280)
    report = evaluated(ckpt)[0]
    assert report["task"] == "text" and set(report["splits"]["test"]) == {"t", "p"}  # every scaled key
    assert "p: no list of numbers under it: no persistence or seasonal baseline" in report["notes"]
    run("eval.py", f"--ckpt={ckpt}", "--mask_key=t", "--mask_all=True")
    every = json.load(open(f"{folder}/eval_t_all.json"))["splits"]["test"]["t"]
    assert every["n"] == 3 * len(test) and "persistence" not in every and "train_mean" in every


def test_a_plain_text_folder_is_scored_on_its_last_number(tmp_path):
    rng = np.random.default_rng(1)
    for split, n in (("train", 40), ("val", 8), ("test", 8)):
        sums = "".join(f"{a}+{b}={round(a + b, 2)}\n" for a, b in rng.uniform(0, 1, (n, 2)).round(2))
        (tmp_path / f"{split}.txt").write_text(sums)
    tokenize(tmp_path, "--plain-text")
    report, _, _ = evaluated(eval_model(str(tmp_path), tmp_path / "run", "--block_size=32"))
    r = report["splits"]["test"]["last"]
    assert report["task"] == "text" and r["n"] == 8 and "r2" in r["mean"] and "mse_original" not in r["mean"]
    assert "train_mean" in r and "persistence" not in r


def test_only_seeds_of_one_setting_are_averaged(own_run, tmp_path):
    data, ckpt = own_run
    other = reconfigured(ckpt, tmp_path / "lr.pt", seed=2, learning_rate=1e-3)
    for ckpts, error in ((f"{ckpt} {other}", "differ in learning_rate (0.0002 vs 0.001): seeds must agree"),
                         (f"{ckpt} {ckpt}", f"{ckpt} and {ckpt} are the same run"),
                         (f"{ckpt} {shutil.copy(ckpt, tmp_path / 'copy.pt')}", "are the same run (seed 1337)"),
                         (tmp_path / "nope.pt", "nope.pt is not a readable checkpoint")):
        r = failed(run("eval.py", f"--ckpt={ckpts}", check=False), error)
        assert "evaluated in" not in r.stdout
    relative = reconfigured(ckpt, tmp_path / "relative.pt", seed=3, data_dir=os.path.relpath(data, ROOT))
    assert len(evaluated(ckpt, relative)[0]["checkpoints"]) == 2


def test_the_report_goes_where_it_can_be_written_and_replaces_no_other(checkpoint, data, tmp_path):
    (tmp_path / "file").write_text("")
    for flag, said in (("--out", "cannot write in"), ("--predictions", "choose --predictions")):
        r = run("eval.py", f"--ckpt={checkpoint}", f"{flag}={tmp_path / 'file' / 'p.csv'}", check=False)
        assert said in one_line_error(r) and flag in r.stderr and "evaluated in" not in r.stdout
    folder = os.path.dirname(checkpoint)
    run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={data}")
    full = open(f"{folder}/eval.json").read()
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={data}", "--max_samples=5")
    assert "eval_first5.md" in r.stdout and json.load(open(f"{folder}/eval_first5.json"))["max_samples"] == 5
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={shutil.copytree(data, str(tmp_path / 'copy_of_data'))}")
    assert f"{folder}/eval_copy_of_data.json" in r.stdout
    assert open(f"{folder}/eval.json").read() == full and json.loads(full)["data_dir"] == data


def test_nan_or_inf_predictions_are_counted_and_warned_of(checkpoint, data, tmp_path, monkeypatch):
    r, prefix = evaluate(checkpoint, data, tmp_path, "--plots=True", check=True)
    report = json.load(open(prefix + ".json"))
    assert os.path.getsize(prefix + "_test.png") > 1000 and report["causal"] is False  # an MLM checkpoint
    rate = report["splits"]["test"]["answer"]["mean"]["not_num_rate"]
    assert "| not [NUM] |" in r.stdout and "| invalid |" not in r.stdout and r.stdout.count("warning") == (rate > 0)
    assert rate == 0 or f"warning: test · answer: the token head did not say [NUM] at {rate:.2%} (docs" in r.stdout
    r, prefix = evaluate(diverged(checkpoint, tmp_path / "diverged.pt"), data, tmp_path, check=True)
    a = json.load(open(prefix + ".json"))["splits"]["test"]["answer"]
    assert a["per_seed"][0]["valid"] == 0 and a["mean"]["invalid_rate"] == 1.0
    assert f"warning: test · answer: {a['n']} of {a['n']} predictions are NaN or infinite" in r.stdout
    table = next(line for line in r.stdout.splitlines() if line.startswith("| test | answer |"))
    assert "| 1 |" in table  # the invalid rate
    forward, planted, full, load = model.NumberHead.forward, [], [], torch.load

    def diverging(self, h):
        out = forward(self, h).clone()
        out[0::3], out[1::3] = math.nan, math.inf
        planted.append(len(out[0::3]) + len(out[1::3]))
        return out

    def counted(path, *args, **kwargs):  # each checkpoint's weights are read once
        full.extend([] if kwargs.get("mmap") else [path])
        return load(path, *args, **kwargs)
    monkeypatch.setattr(model.NumberHead, "forward", diverging)
    monkeypatch.setattr(torch, "load", counted)
    r, prefix = evaluate(checkpoint, data, tmp_path, "--save_predictions=True", check=True)
    assert full == [checkpoint]
    report, bad, md = json.load(open(prefix + ".json")), sum(planted), open(prefix + ".md").read()
    a = report["splits"]["test"]["answer"]
    n = a["n"]
    assert 0 < bad < n and a["per_seed"][0]["valid"] == n - bad and a["mean"]["invalid_rate"] == pytest.approx(bad / n)
    warning = f"warning: test · answer: {bad} of {n} predictions are NaN or infinite"
    assert warning in r.stdout and warning in md and any(w.startswith(warning[9:]) for w in report["warnings"])
    assert "| invalid |" in md  # for xVal too
    truth, median = np.array(a["truth"]), np.array(a["median"], float)
    ok = np.isfinite(median)
    assert ok.sum() == n - bad and a["mean"]["mse"] == pytest.approx(float(np.mean((truth[ok] - median[ok]) ** 2)))


@pytest.mark.parametrize("name,text,own,error", [
    ("test.txt", "", False, "test.txt: no sample (an empty file)"),
    ("test.txt", "\n  \n", False, "test.txt: no sample (blank lines only)"),
    ("test_ood.txt", "", False, "test_ood.txt: no sample (an empty file)"),
    *[("meta.json", text, own, "meta.json: not readable JSON") for text in ("", " \n") for own in (False, True)]])
def test_an_empty_file_is_one_line_naming_it_and_no_report(checkpoint, own_data, tmp_path, name, text, own, error):
    ckpt = reconfigured(checkpoint, tmp_path / "own.pt", data_dir=own_data) if own else checkpoint
    open(f"{own_data}/{name}", "w").write(text)
    r, prefix = evaluate(ckpt, own_data, tmp_path)
    assert f"{own_data}/{error}" in one_line_error(r)
    assert not os.path.exists(prefix + ".json") and not os.path.exists(prefix + ".md")


def test_an_empty_vocab_json_is_named_where_it_is_read(checkpoint, own_data, tmp_path):
    open(f"{own_data}/vocab.json", "w").close()  # eval.py reads the checkpoint's
    run("eval.py", f"--ckpt={reconfigured(checkpoint, tmp_path / 'own.pt', data_dir=own_data)}")
    error = one_line_error(run("tokenize_numbers.py", own_data, "--workers=1", check=False))
    assert f"{own_data}/vocab.json: not readable JSON" in error
