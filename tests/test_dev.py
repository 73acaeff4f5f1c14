"""dev/'s scripts on hand-written eval.py reports: models told apart, tables' numbers by hand."""
import contextlib
import io
import json
import math
import os
import runpy
import sys
from unittest import mock

import numpy as np
import pytest
from conftest import ROOT
from helpers import sample_line
from planets import TRAIN_STEPSIZES as STEPS

sys.path.insert(0, os.path.join(ROOT, "dev"))
import era5_persistence
import gmm_table
import lookup_plateau
import planets_a0
import planets_dt_ood
import train_time


def script(name, *args):
    """What dev/<name> prints, run as a command in this process."""
    out = io.StringIO()
    with mock.patch.object(sys, "argv", [name, *args]), contextlib.redirect_stdout(out):
        runpy.run_path(os.path.join(ROOT, "dev", name), run_name="__main__")
    return out.getvalue()


def write_report(path, task, split, quantity, truth, pred, lines=(), **fields):
    """An eval.py report with one quantity's saved predictions; `lines`: its data's test.txt."""
    if lines:
        (path.parent / "test.txt").write_text("\n".join(lines) + "\n")
        fields["data_dir"] = str(path.parent)
    predictions = {"truth": [float(t) for t in truth], "median": [float(p) for p in pred]}
    path.write_text(json.dumps({"task": task, **fields, "splits": {split: {quantity: predictions}}}))
    return str(path)


def magnitudes(path, *args):
    return script("error_by_magnitude.py", f"--reports={path}", *args)


@pytest.mark.parametrize("read,content,message", [
    (era5_persistence.row, '{"task": "planets", "splits": {"test": {"a0": {}}}}',
     "era5 test split"),
    (lookup_plateau.rows, '{"task": "arithmetic", "splits": {"test": {"answer": {}}}}',
     "lookup test split with 'answer', got task 'arithmetic'"),
    (planets_a0.rows, '{"task": "lookup", "splits": {"test": {"answer": {}}}}',
     "planets test split with .a0."),
    (magnitudes, "not json", "eval.json: not an eval.py report"),
    (magnitudes, None, "eval.json: no such report"),
    (lambda path: magnitudes(path, "--quantity=dt"),
     '{"task": "arithmetic", "splits": {"test": {"answer": {"truth": [1.0], "median": [1.0]}}}}',
     "eval.json.*'dt'"),
] + [(lambda path, name=name: script(name), None, "^error: --reports is required") for name in
     ("era5_persistence.py", "error_by_magnitude.py", "planets_a0.py", "planets_dt_ood.py")])
def test_a_report_it_cannot_read_or_none_is_refused_naming_it(tmp_path, read, content, message):
    if content is not None:
        (tmp_path / "eval.json").write_text(content)
    with pytest.raises(SystemExit, match=message):
        read(str(tmp_path / "eval.json"))


def era5_report(tmp_path, model):
    """40 samples of 2-3 stations whose predictions are model(previous step, truth)."""
    rng = np.random.default_rng(0)
    lines = [sample_line(rng, 2 + i % 2, 5) for i in range(40)]
    rows = [row for line in lines for row in json.loads(line)["data"]]
    truth, previous = [row[-1] for row in rows], [row[-2] for row in rows]
    pred = model(np.array(previous), np.array(truth))
    return write_report(tmp_path / "eval.json", "era5", "test", "t+1", truth, pred, lines + lines[:3])


def test_persistence_and_a_model_with_part_of_the_change_blended_with_it(tmp_path):
    n, model, persistence, to_previous, errors, changes, blend = era5_persistence.row(
        era5_report(tmp_path, lambda previous, truth: previous))
    assert n == 100 and model == persistence > 0 and to_previous == 0
    assert errors == pytest.approx(1) and np.isnan(changes)  # no change: no correlation
    assert blend == [pytest.approx(persistence)] * 2
    _, model, persistence, _, _, changes, blend = era5_persistence.row(
        era5_report(tmp_path, lambda previous, truth: previous + 0.5 * (truth - previous)))
    assert model == pytest.approx(0.25 * persistence) and changes == pytest.approx(1)
    assert blend[1] == pytest.approx((1 - 0.25) ** 2 * persistence) and blend[1] < persistence


def test_each_decade_has_its_count_relative_error_and_share_of_the_squared_error(tmp_path):
    truth = [2.0, 4.0, 5.0, 20.0, 2000.0, -3000.0]
    # xval 10% off, then 90% off; p1000 100% off (one answer invalid), then 10%
    small = write_report(tmp_path / "x.json", "arithmetic", "test", "answer", truth,
                         [2.2, 4.4, 5.5, 22.0, 200.0, -300.0], encoding="xval")
    large = write_report(tmp_path / "p.json", "arithmetic", "test", "answer", truth,
                         [4.0, 8.0, float("nan"), 40.0, 2200.0, -3300.0], encoding="p1000")
    out = tmp_path / "mag"
    printed = magnitudes(f"{small} {large}", f"--out={out}")
    rows = [r for r in out.with_suffix(".md").read_text().splitlines() if r.startswith("| ")]
    assert rows[1].startswith("| 1 to 10 | 3 | 0.1 | 1.1 | 0.0% | 1 | 2 | 0.0% |")
    assert rows[2].startswith("| 10 to 100 | 1 | 0.1 | 1.1 | 0.0% | 1 | 2 | 0.3% |")
    assert rows[3].startswith("| 1000 to 10000 | 2 | 0.9 | 0.1 | 100.0% | 0.1 | 1.1 | 99.7% |")
    assert "Largest |truth| 3000; xval: largest |prediction| 300, 0 of 6 predictions invalid" in printed
    assert "p1000: largest |prediction| 3300, 1 of 6 predictions invalid" in printed
    assert f"wrote {out}.md" in printed


def test_the_mse_head_is_scored_as_a_gaussian_with_its_validation_spread(tmp_path, capsys):
    truth, median = [0.0, 1.0, 2.0, 4.0], [0.5, 1.0, 1.0, 3.0]  # variance of the truth 2.1875
    val_mse = 0.25  # s = 0.5
    gmm = {"mse": 0.1, "nll": -0.5, "crps": 0.2, "cover50": 0.5, "cover90": 0.9}
    reports = {
        "val": {"val": {"a0": {"mean": {"mse": val_mse}}}},
        "mse": {"test": {"a0": {"n": 4, "truth": truth, "median": median,
                                "mean": {"mse": 0.5625}}}},
        "gmm": {"test": {"a0": {"mean": gmm}}},
    }
    for name, splits in reports.items():
        (tmp_path / f"{name}.json").write_text(json.dumps({"splits": splits}))
    gmm_table.main(*(str(tmp_path / f"{name}.json") for name in reports))
    (row,) = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| test | a0 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    z = (np.array(truth) - np.array(median)) / 0.5
    nll = np.mean(0.5 * math.log(2 * math.pi * val_mse) + 0.5 * z**2)
    assert cells[2:6] == ["4", "2.188", "0.5625", "0.1"]
    assert float(cells[6]) == pytest.approx(nll, abs=1e-3) and cells[7] == "-0.500"
    # |z| = 1, 0, 2, 2: inside the central 50% (|z| < 0.674) only the exact one, in 90% two
    assert cells[10] == "0.25 / 0.50" and cells[11] == "0.50 / 0.90"
    with pytest.raises(SystemExit, match="nowhere.json: no such eval.py report"):
        gmm_table.main("nowhere.json", "b.json", "c.json")


@pytest.mark.parametrize("model", ["average", "lookup", "copy"])
def test_averaging_copying_and_matching_keys_are_told_apart(tmp_path, model):
    rng = np.random.default_rng(0)
    lines, truth, pred = [], [], []
    for i in range(200):
        values = np.round(rng.uniform(-3, 3, size=2 + i % 5), 2)
        q = int(rng.integers(len(values)))
        entries = ",".join(f"{k}:{v}" for k, v in zip("abcdef", values))
        lines.append(f"{{{entries}}}{'abcdef'[q]}={values[q]}")
        truth.append(values[q])
        guesses = {"average": values.mean(), "lookup": values[q], "copy": values[i % len(values)]}
        pred.append(guesses[model])
    report = write_report(tmp_path / "eval.json", "lookup", "test", "answer", truth, pred, lines)
    n, model_nmse, mean_nmse, corr, count, copied, right = lookup_plateau.rows(report)[-1]
    assert n == "all" and count == 200 and mean_nmse > 0.5
    if model == "average":
        assert model_nmse == pytest.approx(mean_nmse) and corr == pytest.approx(1.0)
        assert copied < 0.2
    elif model == "lookup":
        assert model_nmse == 0.0 and copied == right == 1.0
    else:  # a dictionary value, not the queried one: all copies, right about 1 in entries
        chance = np.mean([1 / (2 + i % 5) for i in range(200)])
        assert copied == 1.0 and right == pytest.approx(chance, abs=0.1)
        assert model_nmse > mean_nmse


@pytest.mark.parametrize("others, n, a0", [
    ([1.5, 2.0], 3, 1.0),  # 1 is missing: planet0 is the innermost
    ([1.0, 1.5, 2.0], 4, 2.5),  # evenly spaced from 1: planet0 is the outermost
    ([1.0, 2.0, 2.5], 4, 1.5),  # a gap of two steps: planet0 fills it
    ([1.0], 2, 2.25),  # a0 = a_f, uniform in [1.5, 3]
    ([1.0, 2.0], 3, (0.5 * 1.5 + 1.0 * 3.0) / 1.5),  # 2 is a_f (a0 1.5) or the middle (a0 3), 1 : 2
    ([1.0, 2.8], 3, 1.9),  # 2.8 can only be a_f (a middle one lies in [1.25, 2])
])
def test_a0_from_the_description_by_hand(others, n, a0):
    assert planets_a0.from_description(others, n) == pytest.approx(a0)


def test_the_ambiguous_case_is_the_posterior_mean_of_the_prior():
    rng = np.random.default_rng(0)
    a_f = rng.uniform(1.5, 3.0, 2_000_000)
    middle = (1 + a_f) / 2
    first = rng.integers(0, 3, len(a_f))  # planet0 is a random one of the axes 1, middle, a_f
    # planet0 not 1: the other axis that is not 1 is near 1.8
    x = np.where(first == 1, a_f, middle)
    a0 = np.where(first == 1, middle, a_f)[(first != 0) & (np.abs(x - 1.8) < 0.01)]
    expected = planets_a0.from_description([1.0, 1.8], 3)
    assert a0.mean() == pytest.approx(expected, abs=0.015)  # 4 standard errors
    with pytest.raises(ValueError, match="not evenly spaced"):
        planets_a0.from_description([1.0, 1.5, 2.7], 4)


def test_planets_a0_report_columns(tmp_path):
    rng = np.random.default_rng(1)
    lines, truth, pred = [], [], []
    for i in range(60):
        n, a_f = 2 + i % 3, rng.uniform(1.5, 3.0)
        axes = [round(1 + j * (a_f - 1) / (n - 1), 3) for j in range(n)]
        rng.shuffle(axes)
        desc = {f"planet{j}": {"m": 1, "a": a, "e": 0} for j, a in enumerate(axes)}
        steps = [[[a * math.cos(t + j), a * math.sin(t + j)] for j, a in enumerate(axes)]
                 for t in np.linspace(0, 3, 20)]
        lines.append(json.dumps({"description": {**desc, "stepsize": 0.2}, "data": steps}))
        truth.append(axes[0])
        pred.append(planets_a0.from_description(axes[1:], n))  # reads the description only
    report = write_report(tmp_path / "eval.json", "planets", "test", "a0", truth, pred, lines)
    n, model, desc, orbit, fixed, there, corr = planets_a0.rows(report)
    assert n == 60 and model == pytest.approx(desc) and corr == pytest.approx(1.0)
    assert there == pytest.approx(0, abs=1e-6)
    # circles of radius a0; 2-planet systems with planet0 outer are not fixed
    assert orbit < 1e-6 < desc and 0.5 < fixed < 1


def dt_report(tmp_path, encoding, truth, pred):
    (tmp_path / "meta.json").write_text(json.dumps({"dataset": "planets", "train_stepsizes": STEPS}))
    return write_report(tmp_path / f"{encoding}.json", "planets", "test_ood_stepsize", "dt", truth,
                        pred, encoding=encoding, data_dir=str(tmp_path))


def test_recalling_and_interpolating_models_are_told_apart(tmp_path):
    truth = np.random.default_rng(0).uniform(0.22, 0.78, 200)
    distance = np.abs(truth[:, None] - np.array(STEPS))
    far = distance.min(1) >= 0.02
    truth, recalled = truth[far], np.array(STEPS)[distance[far].argmin(1)]
    encoding, n, mse, corr, share, *_ = planets_dt_ood.rows(dt_report(tmp_path, "b1999", truth, recalled), 0.01)
    assert (encoding, n, share) == ("b1999", len(truth), 1.0) and mse > 1e-4
    _, _, mse, corr, share, *_ = planets_dt_ood.rows(dt_report(tmp_path, "xval", truth, truth + 0.001), 0.01)
    assert share == 0.0 and mse == pytest.approx(1e-6) and corr == pytest.approx(1.0)


@pytest.mark.slow
def test_planets_dt_ood_writes_the_table_and_figure(tmp_path):
    truth = np.linspace(0.33, 0.47, 20)  # 0.03 or more from every training step size
    paths = [dt_report(tmp_path, encoding, truth, truth) for encoding in ("xval", "p10")]
    printed = script("planets_dt_ood.py", f"--reports={' '.join(paths)}", f"--out={tmp_path / 'dt'}")
    table = (tmp_path / "dt.md").read_text()
    assert table.count("| `") == 2 and "| xval | 20 | 0 | 1.000 | 0% |" in table
    assert (tmp_path / "dt.png").stat().st_size > 0 and "wrote" in printed


def test_steps_and_time_of_each_run_and_the_total_or_a_one_line_error(tmp_path, capsys):
    # 10 steps at 100 ms, a validation row, 10 at 200 ms, 5 at 400 ms (off the interval): 0.5 min
    logs = {"a": [{"iter": 10, "loss": 1.0, "ms_per_step": 100.0}, {"iter": 10, "val_loss": 1.0},
                  {"iter": 20, "loss": 1.0, "ms_per_step": 200.0},
                  {"iter": 25, "loss": 1.0, "ms_per_step": 400.0}],
            "b": [{"iter": 3600, "loss": 1.0, "ms_per_step": 1000.0}],  # one hour
            "broken": [{"iter": 1, "ms_per_step": 5}, {"ms_per_step": 5}]}
    for name, rows in logs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    train_time.main([str(tmp_path / "a"), str(tmp_path / "b")])
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path / 'a'}: 25 steps, 5s (0.00 h)",
        f"{tmp_path / 'b'}: 3,600 steps, 1h00m (1.00 h)",
        "total: 2 runs, 1.0 h of training"]
    with pytest.raises(SystemExit, match="cannot read.*train.py --out_dir"):
        train_time.main([str(tmp_path)])
    with pytest.raises(SystemExit, match="log.jsonl:2: not a row of train.py's log") as error:
        train_time.main([str(tmp_path / "broken")])
    assert "\n" not in str(error.value)
