"""sample.py: careless input is one line, the rest predicted; your own data in its units."""
import csv
import json
import math
import re
import shutil
import warnings

import numpy as np
import pytest
from conftest import run
from helpers import diverged, failed, one_line_error, own_model, own_run, read_split

from predict import units_of


def sample(ckpt, text=None, *args, check=True):
    return run("sample.py", f"--ckpt={ckpt}", *args, input=text, check=check)


def from_file(ckpt, path, text, *args, check=True):
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return sample(ckpt, None, f"--input={path}", *args, check=check)


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_input_is_an_error(checkpoint, tmp_path, text):
    assert failed(sample(checkpoint, text, check=False), "stdin: no lines to predict").stdout == ""
    r = from_file(checkpoint, tmp_path / "in.txt", text, check=False)
    assert f"{tmp_path / 'in.txt'}: no lines to predict" in one_line_error(r) and r.stdout == ""


def test_each_bad_line_is_reported_and_the_rest_predicted(checkpoint, tmp_path):
    long_line = "(" + "+".join(["0.5"] * 40) + ")=[?]"
    text = f"(0.5+0.25)=[?]\n(a+0.25)=[?]\n{long_line}\n(1e300+0.25)=[?]\n\n(0.1*0.2)=[?]\n(0.5+0.25)=0.75\n"
    r = sample(checkpoint, text + "(0.5+0.25)=[ ? ]\n([?][?][?])=0.5\n", check=False)
    errors = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(errors) == 6 and "Traceback" not in r.stderr
    assert errors[0].startswith("error: stdin:2: 'a' is not in the vocabulary") and "(a space splits one)" in errors[0]
    assert "--rebuild-vocab" not in errors[0]  # a trained model's vocabulary is fixed
    assert errors[1].startswith("error: stdin:3: 82 tokens, more than the model's block_size 32")
    assert errors[2].startswith("error: stdin:4: the number 1e+300 overflows float32")
    assert errors[3].startswith("error: stdin:7: no [?] in the line") and "--mask_last" in errors[3]
    assert errors[4].startswith("error: stdin:8: '[ ? ]' looks like the marker [?]")
    assert errors[5] == "error: 5 of 8 lines could not be predicted (above)" and "5 numbers predicted" in r.stdout
    out = r.stdout.splitlines()
    assert len(out) == 4 and out[0].startswith("(0.5+0.25)=") and out[1].startswith("(0.1*0.2)=") and "[?]" not in r.stdout
    # glued markers print apart
    assert re.fullmatch(r"\(-?[\d.e+-]+,-?[\d.e+-]+,-?[\d.e+-]+\)=0\.5", out[2]), r.stdout
    r = from_file(checkpoint, tmp_path / "in.txt", b"(0.5+0.25)=[?]\n(0.\xe9+1)=[?]\n", check=False)
    assert f"{tmp_path / 'in.txt'}:2: not UTF-8 text" in one_line_error(r)
    r = sample(diverged(checkpoint, tmp_path / "diverged.pt"), "(0.5+0.25)=[?]\n(0.1+0.2)=[?]\n")
    assert "2 numbers predicted" in r.stdout and "2 not finite" in r.stdout


def test_mask_key_shows_the_masked_numbers_beside_their_truth(own_run, tmp_path):
    data, ckpt = own_run
    test = read_split(data)

    def masked(*args, check=True):
        return sample(ckpt, None, f"--input={data}/test.txt", "--scaled", *args, check=check)
    r = masked("--mask_key=t", "--show=1")
    shown = r.stdout.splitlines()[0]
    assert shown.startswith('{"station":') and f"{test[0]['t'][1]}," in shown and str(test[0]["p"]) in shown
    assert shown.endswith(f"(true: {test[0]['t'][-1]:g})") and f"{len(test)} numbers predicted" in r.stdout
    assert f"python eval.py --ckpt={ckpt} --mask_key=t" in r.stdout and "MSE" not in r.stdout
    first = masked("--mask_key=p", "--show=1").stdout.splitlines()[0]
    assert json.dumps(test[0]["t"], separators=(",", ":")) in first
    r = masked("--mask_key=t", "--mask_all=True", "--show=1")
    assert f"{3 * len(test)} numbers predicted" in r.stdout
    assert r.stdout.splitlines()[0].count(",", r.stdout.index("(true: ")) == 2
    failed(masked("--mask_all=True", check=False), "--mask_all=True needs --mask_key")
    # a record without the key is named by its line
    first, second = open(f"{data}/test.txt").read().splitlines()[:2]
    second = second.replace('"p"', '"q"') + "\n"
    r = from_file(ckpt, tmp_path / "in.txt", f"{first}\n{second}", "--mask_key=p")
    assert "note: 1 of 2 lines have no number under key 'p', left out" in r.stderr
    assert "in.txt:2: no number under key 'p'" in r.stderr
    r = from_file(ckpt, tmp_path / "in.txt", second, "--mask_key=p", check=False)
    failed(r, "error: 1 of 1 lines have no number under key 'p'")


@pytest.fixture(scope="module")
def quakes(tmp_path_factory):
    rng = np.random.default_rng(0)
    rows = "".join(f"{d:.0f},{x:.2f},{4 + d / 200:.2f}\n" for d, x in rng.uniform((40, 10), (680, 20), (200, 2)))
    data, ckpt = own_model(tmp_path_factory.mktemp("quakes"), "q.csv", "depth,pm2.5,mag\n" + rows,
                           train=("--block_size=32", "--learning_rate=3e-3"))
    meta = json.load(open(f"{data}/meta.json"))
    assert meta["renamed"] == {"pm2.5": "pm2_5"} and set(meta["ranges"]) == {"depth", "pm2_5", "mag"}
    return data, meta, ckpt


def quake(depth=562, pm25=12.5, key="pm2_5"):
    return f'{{"depth":{depth},"{key}":{pm25},"mag":[?]}}\n'


def predicted(r):
    """The numbers of sample.py's first printed record."""
    return list(json.loads(r.stdout.splitlines()[0].split("  (true")[0]).values())


def test_a_record_and_a_split_in_the_files_units_as_by_hand_and_range_checked(quakes, tmp_path):
    data, meta, ckpt = quakes
    s = meta["scales"]
    original = lambda key, v: v * s[key]["spread"] + s[key]["center"]
    own = sample(ckpt, quake(key="pm2.5"))
    assert "units: the file's own" in own.stderr and "warning" not in own.stderr
    depth, pm25, mag = predicted(own)
    assert (depth, pm25) == (562, 12.5)
    scaled = {k: (v - s[k]["center"]) / s[k]["spread"] for k, v in (("depth", 562), ("pm2_5", 12.5))}
    written = sample(ckpt, quake(scaled["depth"], scaled["pm2_5"]), "--scaled")
    assert "units: as written in" in written.stderr and "(--scaled)" in written.stderr
    scaled_mag = predicted(written)[2]
    assert mag == pytest.approx(original("mag", scaled_mag), rel=1e-5) and mag != pytest.approx(scaled_mag, abs=0.1)
    # the written name of a renamed key, and json.dumps' spaces, read the same record
    for text in (quake(), '{"depth": 562, "pm2.5": 12.5, "mag": [?]}\n'):
        assert predicted(sample(ckpt, text)) == [depth, pm25, mag]
    r = sample(ckpt, quake(key="y"), check=False)
    failed(r, "stdin:1: a number under key 'y'", "its number keys: depth, pm2_5, mag")
    least, largest = meta["ranges"]["depth"]
    assert "warning" not in sample(ckpt, quake(f"{largest + 0.9 * (largest - least):.1f}")).stderr
    far = f"{largest + 1.1 * (largest - least):.1f}"
    r = sample(ckpt, quake(far))
    assert len(predicted(r)) == 3 and "1 numbers predicted" in r.stdout
    assert f"stdin:1: key 'depth': {float(far):g} is far outside its training range" in r.stderr
    assert f"[{least:g}, {largest:g}]" in r.stderr
    # as written in the dataset's text, not checked against the file's range
    assert "warning" not in sample(ckpt, quake(900, 0), "--scaled").stderr
    # a split: printed in the file's units, or with --scaled as written
    args = (f"--input={data}/test.txt", "--mask_key=mag", "--show=3")
    written, split = (sample(ckpt, None, *args, *scaled) for scaled in (["--scaled"], []))
    assert "(--scaled)" in written.stderr and f"{data}/test.txt is written scaled" in split.stderr
    records = read_split(data)[:3]
    own = [{k: round(original(k, v), 6) for k, v in r.items()} for r in records]
    (tmp_path / "own.jsonl").write_text("".join(json.dumps(r) + "\n" for r in own))
    r = sample(ckpt, None, f"--input={tmp_path / 'own.jsonl'}", "--mask_key=mag")
    for line, record, shown, in_units in zip(r.stdout.splitlines(), own, written.stdout.splitlines(),
                                             split.stdout.splitlines()):
        assert line.endswith(f"(true: {record['mag']:g})") and in_units.endswith(f"(true: {record['mag']:g})")
        prediction, in_file, printed = (json.loads(x.split("  (true")[0]) for x in (line, shown, in_units))
        assert prediction["mag"] == pytest.approx(original("mag", in_file["mag"]), rel=1e-4)
        assert printed == pytest.approx(prediction, rel=1e-4)


@pytest.mark.parametrize("script", ["sample.py", "eval.py"])
def test_tampered_ranges_and_a_renamed_mask_key_are_one_line_without_warnings(quakes, tmp_path, script):
    data, meta, ckpt = quakes
    copy = shutil.copytree(data, str(tmp_path / "copy"))
    flags = [f"--ckpt={ckpt}", f"--data_dir={copy}"] + [f"--out={tmp_path / 'e'}"] * (script == "eval.py")

    def error(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = run(script, *flags, *args, input=quake(key="pm2.5"), check=False)
            return one_line_error(r)
    for ranges in ("abc", [1, 2], {"depth": 5}, {"depth": [1]}, {"depth": [math.nan] * 2}, {"depth": [0, math.inf]}):
        json.dump({**meta, "ranges": ranges}, open(f"{copy}/meta.json", "w"))
        said = error()
        assert f'{copy}/meta.json: "ranges" holds' in said and "expected {key: [least, largest]}" in said
    json.dump(meta, open(f"{copy}/meta.json", "w"))
    assert "--mask_key=pm2.5: prepare/text.py renamed this key 'pm2_5'" in error("--mask_key=pm2.5")
    if script == "eval.py":
        assert "test.txt: no record has a number under key 'zzz'" in error("--mask_key=zzz")


@pytest.mark.parametrize("edit, said", [({"seed": 7}, "has been prepared again since"),
                                        ({"keys": ["other"]}, "holds another dataset than")])
def test_a_dataset_changed_since_training_is_named_truthfully(own_run, tmp_path, capsys, edit, said):
    data, ckpt = own_run
    copy = shutil.copytree(data, tmp_path / "data")
    meta = json.loads((copy / "meta.json").read_text())
    (copy / "meta.json").write_text(json.dumps(meta | edit))
    assert units_of(ckpt, str(copy)) is not None
    assert said in capsys.readouterr().err


@pytest.mark.slow
def test_scale_record_is_undone_by_eval_and_sample(tmp_path):
    y = [100 * 1.03 ** i + 8 * (i % 3) for i in range(90)]
    data, ckpt = own_model(tmp_path, "g.csv", "y\n" + "".join(f"{v:.1f}\n" for v in y), "--window=5",
                           "--stride=1", "--scale=record", "--context-before", train=("--block_size=32",))
    levels = [r["y"] for r in read_split(data, "test.levels")]
    truth = [round(v, 1) for v in y[-len(levels):]]
    r = run("eval.py", f"--ckpt={ckpt}", "--mask_key=y", f"--predictions={tmp_path / 'p.csv'}")
    rows = list(csv.DictReader(open(tmp_path / "p.csv")))
    assert [float(row["truth"]) for row in rows] == pytest.approx(truth, abs=0.01)
    assert float(rows[-1]["persistence"]) == pytest.approx(truth[-2], abs=0.01)
    scores = json.load(open(f"{tmp_path / 'run'}/eval_y.json"))["splits"]["test"]["y"]
    predicted = np.array([float(row["prediction"]) for row in rows])
    assert scores["mean"]["mse_original"] == pytest.approx(np.mean((predicted - truth) ** 2), rel=1e-4)
    ratio = scores["mean"]["mse_original"] / scores["persistence"]["mse_original"]
    assert scores["verdict"]["paired"]["persistence"][0] == pytest.approx(ratio) and "levels" not in scores
    assert "outside the training range" in r.stdout and "--scale record" not in r.stdout
    # the levels come from the numbers these would mask
    for script, flag, typed in (("eval.py", "--mask_all=True", None), ("eval.py", "--horizon=2", None),
                                ("sample.py", f"--input={data}/test.txt --mask_all=True", None),
                                ("sample.py", "--mask_all=True", '{"y":[1,2,3,4,5]}\n')):
        r = run(script, f"--ckpt={ckpt}", "--mask_key=y", *flag.split(), input=typed, check=False)
        assert "--scale record: " in r.stderr and "would mask what its levels are from" in r.stderr
    # a split: printed in the file's units; a record typed in them: scaled by its own level
    first = [round(v, 1) for v in y[86 - len(levels) : 91 - len(levels)]]
    split = sample(ckpt, None, f"--input={data}/test.txt", "--mask_key=y", "--show=1")
    shown = json.loads(split.stdout.split("  (true")[0])["y"]
    assert shown[:4] == pytest.approx(first[:4], abs=0.01) and f"(true: {first[4]:g})" in split.stdout
    assert shown[4] == pytest.approx(predicted[0], rel=1e-4)
    text = open(f"{data}/test.txt").read()
    open(f"{data}/test.txt", "w").write("\n" + text)  # a blank line: each record's level all the same
    assert sample(ckpt, None, f"--input={data}/test.txt", "--mask_key=y", "--show=1").stdout == split.stdout
    typed = sample(ckpt, '{"y":' + json.dumps(first[:4])[:-1] + ",[?]]}\n")
    assert json.loads(typed.stdout.splitlines()[0])["y"][4] == pytest.approx(predicted[0], rel=1e-3)

