"""Your own data in its own units: sample.py reads records typed in the file's units and prints its
predictions in them (--scaled: as the dataset's text files write them), a number far outside its key's
training range is warned of, and eval.py's plots and table are in the file's units."""
import json
import os

import numpy as np
import pytest
from conftest import run
from helpers import EVAL_TINY as TINY

import eval_report
import predict


@pytest.fixture(scope="module")
def quakes(tmp_path_factory):
    """(dataset, meta, checkpoint) of a tiny model trained on a CSV made a dataset by prepare/text.py;
    its key 'x 1' is renamed 'x_1' (the tokenizer would read a number in it)."""
    folder = tmp_path_factory.mktemp("quakes")
    rng = np.random.default_rng(0)
    rows = [(rng.uniform(40, 680), rng.uniform(10, 20)) for _ in range(200)]
    csv = "depth,x 1,mag\n" + "".join(f"{d:.0f},{x:.2f},{4 + d / 200:.2f}\n" for d, x in rows)
    (folder / "quakes.csv").write_text(csv)
    data = str(folder / "data")
    run("prepare/text.py", str(folder / "quakes.csv"), "--out", data)
    run("tokenize_numbers.py", data, "--encoding", "xval", "--workers=1")
    out = str(folder / "run")
    run("train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", "--block_size=32", "--learning_rate=3e-3",
        "--max_iters=10", "--eval_interval=10")
    meta = json.load(open(os.path.join(data, "meta.json")))
    assert meta["renamed"] == {"x 1": "x_1"} and set(meta["ranges"]) == {"depth", "x_1", "mag"}
    return data, meta, os.path.join(out, "ckpt_best.pt")


def predicted(r):
    """The numbers of sample.py's first printed record."""
    return list(json.loads(r.stdout.splitlines()[0].split("  (true")[0]).values())


def scaled(x, scale):
    return (x - scale["center"]) / scale["spread"]


def test_a_record_in_the_files_units_is_predicted_as_the_same_record_scaled_by_hand(quakes):
    data, meta, ckpt = quakes
    s = meta["scales"]
    own = run("sample.py", f"--ckpt={ckpt}", input='{"depth":562,"x 1":12.5,"mag":[?]}\n')
    assert "units: the file's own" in own.stderr and "warning" not in own.stderr
    depth, x1, mag = predicted(own)
    assert (depth, x1) == (562, 12.5)  # the line as typed, renamed key by its written name
    by_hand = f'{{"depth":{scaled(562, s["depth"])!r},"x_1":{scaled(12.5, s["x_1"])!r},"mag":[?]}}\n'
    written = run("sample.py", f"--ckpt={ckpt}", "--scaled", input=by_hand)
    assert "units: as written in" in written.stderr and "(--scaled)" in written.stderr
    back = predicted(written)[2] * s["mag"]["spread"] + s["mag"]["center"]
    assert mag == pytest.approx(back, rel=1e-5) and mag != pytest.approx(predicted(written)[2], abs=0.1)
    # the written name of a renamed key reads the same record
    same = run("sample.py", f"--ckpt={ckpt}", input='{"depth":562,"x_1":12.5,"mag":[?]}\n')
    assert predicted(same) == [depth, x1, mag]
    # as json.dumps writes it, with spaces after , and :
    spaced = run("sample.py", f"--ckpt={ckpt}", input='{"depth": 562, "x 1": 12.5, "mag": [?]}\n')
    assert predicted(spaced) == [depth, x1, mag]


def test_a_test_split_masked_in_the_files_units_matches_the_split_as_written(quakes, tmp_path):
    data, meta, ckpt = quakes
    s = meta["scales"]
    # the dataset's own test.txt is read as it is written (scaled), and said so
    written = run("sample.py", f"--ckpt={ckpt}", f"--input={data}/test.txt", "--mask_key=mag", "--show=3")
    assert f"{data}/test.txt is one of them" in written.stderr
    records = [json.loads(l) for l in open(os.path.join(data, "test.txt"))][:3]
    own = [{k: round(v * s[k]["spread"] + s[k]["center"], 6) for k, v in r.items()} for r in records]
    (tmp_path / "own.jsonl").write_text("".join(json.dumps(r) + "\n" for r in own))
    r = run("sample.py", f"--ckpt={ckpt}", f"--input={tmp_path / 'own.jsonl'}", "--mask_key=mag")
    for line, record, shown in zip(r.stdout.splitlines(), own, written.stdout.splitlines()):
        assert line.endswith(f"(true: {record['mag']:g})")
        prediction = json.loads(line.split("  (true")[0])["mag"]
        in_file = json.loads(shown.split("  (true")[0])["mag"]
        assert prediction == pytest.approx(in_file * s["mag"]["spread"] + s["mag"]["center"], rel=1e-4)


def test_a_number_far_outside_its_keys_training_range_is_warned_of_and_still_predicted(quakes):
    data, meta, ckpt = quakes
    least, largest = meta["ranges"]["depth"]
    width = largest - least
    inside = largest + 0.9 * width  # beyond the range, but by less than its width
    r = run("sample.py", f"--ckpt={ckpt}", input=f'{{"depth":{inside:.1f},"x_1":12.5,"mag":[?]}}\n')
    assert "warning" not in r.stderr
    far = largest + 1.1 * width
    r = run("sample.py", f"--ckpt={ckpt}", input=f'{{"depth":{far:.1f},"x_1":12.5,"mag":[?]}}\n')
    assert r.returncode == 0 and len(predicted(r)) == 3 and "1 numbers predicted" in r.stdout
    assert f"stdin:1: key 'depth': {float(f'{far:.1f}'):g} is far outside its training range" in r.stderr
    assert f"[{least:g}, {largest:g}]" in r.stderr
    # as written in the dataset's text, the same number is not checked against the file's range
    r = run("sample.py", f"--ckpt={ckpt}", "--scaled", input='{"depth":900,"x_1":0,"mag":[?]}\n')
    assert "warning" not in r.stderr


def test_a_number_under_a_key_the_model_never_scaled_is_an_error(quakes):
    data, meta, ckpt = quakes
    r = run("sample.py", f"--ckpt={ckpt}", input='{"depth":562,"y":12.5,"mag":[?]}\n', check=False)
    assert r.returncode != 0 and "stdin:1: a number under key 'y'" in r.stderr
    assert "its number keys: depth, x_1, mag" in r.stderr


def test_a_generated_record_is_printed_in_the_files_units():
    meta = {"scales": {"a": {"center": 10.0, "spread": 2.0}, "b": {"center": -1.0, "spread": 0.5}}}
    assert predict.in_own_units('{"a":0.5,"b":[1,-2]}', "x", meta) == '{"a":11,"b":[-0.5,-2]}'
    assert predict.in_own_units('{"a":0.5,"b":[1', "x", meta).endswith("(scaled: not a complete record)")


def test_eval_writes_its_table_and_plots_in_the_files_units(quakes, monkeypatch):
    data, meta, ckpt = quakes
    s = meta["scales"]["mag"]
    r = run("eval.py", f"--ckpt={ckpt}", "--mask_key=mag", "--save_predictions=True")
    report = json.load(open(os.path.join(os.path.dirname(ckpt), "eval_mag.json")))
    mag = report["splits"]["test"]["mag"]
    row = next(l for l in r.stdout.splitlines() if l.startswith("| test | mag"))
    assert "MSE of median (original units)" in r.stdout
    assert row.endswith(f"| {eval_report.fmt(mag['median_prediction']['mse_original'])} |")
    assert mag["mean"]["mse_original"] == pytest.approx(mag["mean"]["mse"] * s["spread"] ** 2)
    figures = []
    monkeypatch.setattr(eval_report, "save_figure", lambda plt, fig, title, path: figures.append((fig, title)))
    mixture = [[0.0, 0.0, 0.0, 0.0, -1.0, -1.0]] * len(mag["truth"])
    mag.update(pit=[0.5] * len(mag["truth"]), mixture=mixture, per_seed=[{"cover50": 0.5, "cover90": 0.9}])
    eval_report.write_plots(report, meta, {"mag": (s["center"], s["spread"])}, "unused")
    (scatter, _), _, (densities, title) = figures
    ax = scatter.axes[0]
    assert ax.get_xlabel() == "true (original units)" and ax.get_ylabel() == "predicted (original units)"
    truth, median = np.array(mag["truth"]), np.array(mag["median"])
    assert np.allclose(ax.collections[0].get_offsets(), np.stack([truth, median], 1) * s["spread"] + s["center"])
    assert f"MSE {eval_report.fmt(mag['median_prediction']['mse_original'])}" in ax.get_title()
    # a density of mean 0 (scaled) peaks at the key's center, and integrates to 1 in the file's units
    x, y = densities.axes[0].lines[0].get_data()
    assert x[np.argmax(y)] == pytest.approx(s["center"], abs=0.02 * s["spread"])
    assert np.trapezoid(y, x) == pytest.approx(1, abs=0.02) and "original units" in title
    assert densities.axes[0].lines[1].get_xdata()[0] == pytest.approx(truth[0] * s["spread"] + s["center"])
