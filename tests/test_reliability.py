"""Nothing lost, nothing silent: runs are not overwritten, non-finite losses stop training before a
checkpoint, stale or half-written datasets are refused, settings have ranges, bad input is a
one-line error naming where it is."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import CHECKED, RANGE, ROOT
from test_train import TINY, losses, run

import tokenize_numbers
from configurator import configure, defaults
from dataset import Split

TRAIN = os.path.join(ROOT, "train.py")


def one_line_error(r):
    """The command failed with exactly one line on stderr, an error, and no traceback."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("data") / "ops2")
    run("prepare/arithmetic.py", "--variant=ops2", "--size=tiny", "--out", d, "--workers=1")
    run("tokenize_numbers.py", d, "--encoding=xval", "--workers=1")
    return d


@pytest.fixture
def own_data(data, tmp_path):
    """A copy of the tiny dataset that a test may damage."""
    return shutil.copytree(data, str(tmp_path / "ops2"))


def train(data_dir, out, *args, check=True):
    return run("train.py", *TINY, f"--data_dir={data_dir}", f"--out_dir={out}", "--batch_size=8",
               "--micro_batch_size=8", "--eval_interval=2", "--eval_batches=1", "--learning_rate=1e-3", "--min_lr=1e-3",
               *args,
               check=check)


@pytest.fixture(scope="module")
def checkpoint(data, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("run"))
    train(data, out, "--max_iters=2")
    return os.path.join(out, "ckpt_best.pt")


# ---------------------------------------------------------------- settings

@pytest.mark.parametrize("script", CHECKED)
def test_every_numeric_setting_has_a_range_and_the_defaults_lie_in_it(script):
    path = next(p for p in (os.path.join(ROOT, script), os.path.join(ROOT, "tools", script)) if os.path.exists(p))
    settings = defaults(path)
    numeric = {k for k, v in settings.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert numeric <= set(RANGE)
    configure(dict(settings), path, [])  # no error


def test_the_encoding_choices_are_the_tokenizers():
    assert RANGE["encoding"] == " | ".join(tokenize_numbers.ENCODINGS)


def test_every_range_is_one_some_script_has():
    keys = set().union(*(defaults(p) for s in CHECKED for p in (os.path.join(ROOT, s), os.path.join(ROOT, "tools", s))
                         if os.path.exists(p)))
    assert set(RANGE) <= keys


@pytest.mark.parametrize("script,args,message", [
    ("train.py", ["--n_layer=0"], "n_layer = 0 (from --n_layer) is out of its range [1, inf)"),
    ("train.py", ["--n_head=0"], "n_head = 0 (from --n_head) is out of its range [1, inf)"),
    ("train.py", ["--n_embd=130"], "n_embd = 130 (from --n_embd) must be a multiple of n_head = 6"),
    ("train.py", ["--n_head=5"], "n_embd = 768 (the default) must be a multiple of n_head = 5"),
    ("train.py", ["--dropout=1.5"], "dropout = 1.5 (from --dropout) is out of its range [0, 1)"),
    ("train.py", ["--mlm_probability=0"], "mlm_probability = 0.0 (from --mlm_probability) is out of its range (0, 1)"),
    ("train.py", ["--mlm_probability=1.5"], "mlm_probability = 1.5"),
    ("train.py", ["--eval_batches=0"], "eval_batches = 0"),
    ("train.py", ["--max_iters=-5"], "max_iters = -5 (from --max_iters) is out of its range [1, inf)"),
    ("train.py", ["--eval_interval=0"], "eval_interval = 0"),
    ("train.py", ["--log_interval=0"], "log_interval = 0"),
    ("train.py", ["--micro_batch_size=0"], "micro_batch_size = 0"),
    ("train.py", ["--batch_size=0"], "batch_size = 0"),
    ("train.py", ["--k=-1"], "k = -1 (from --k) is out of its range [0, inf)"),
    ("train.py", ["--learning_rate=0"], "learning_rate = 0.0"),
    ("train.py", ["--learning_rate=1e-3", "--min_lr=1e-2"], "min_lr = 0.01 (from --min_lr) is out of its range "
                                                            "[0, learning_rate] (learning_rate = 0.001)"),
    ("train.py", ["--seed=-1"], "seed = -1"),
    ("train.py", ["--dtype=fp16"], "dtype = 'fp16' (from --dtype) is not one of auto | bfloat16 | float32"),
    ("train.py", ["--encoding=p11"], "encoding = 'p11' (from --encoding) is not one of xval | p10 | p1000 | b1999 | fp15"),
    ("train.py", ["--max_iters=None"], "max_iters expects int (default 500000), got None"),
    ("sample.py", ["--batch_size=0"], "batch_size = 0 (from --batch_size) is out of its range [1, inf)"),
    ("sample.py", ["--max_lines=-1"], "max_lines = -1 (from --max_lines) is out of its range [0, inf)"),
    ("eval.py", ["--max_samples=-1"], "max_samples = -1"),
])
def test_a_setting_out_of_its_range_is_an_error_naming_key_value_and_range(script, args, message):
    path = os.path.join(ROOT, script)
    with pytest.raises(SystemExit, match="^error: .*") as e:
        configure(defaults(path), path, args)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_mlm_probability_is_not_checked_for_a_causal_model():
    assert configure(defaults(TRAIN), TRAIN, ["--causal=True", "--mlm_probability=0"])["mlm_probability"] == 0


def test_a_range_error_is_one_line_on_the_command_line():
    assert "n_layer = 0" in one_line_error(run("train.py", "--n_layer=0", check=False))


@pytest.mark.parametrize("text,message", [
    ("n_layer = 2\nmax_iters = (\n", "bad.py:2: '(' was never closed"),
    ("n_layer = 2\n\nmax_iters = 10 // 0\n", "bad.py:3: ZeroDivisionError"),
    ("max_iters = None\n", "bad.py: max_iters expects int (default 500000), got None"),
    ("dropout = 2.0\n", "dropout = 2.0 (from "),
])
def test_a_config_file_that_does_not_parse_names_the_file_and_line(tmp_path, text, message):
    (tmp_path / "bad.py").write_text(text)
    with pytest.raises(SystemExit) as e:
        configure(defaults(TRAIN), TRAIN, [str(tmp_path / "bad.py")])
    assert message in str(e.value)


def test_a_flag_overrides_a_config_file_wherever_the_file_stands(tmp_path):
    (tmp_path / "it3.py").write_text("max_iters = 3\nlog_interval = 7\n")
    for argv in (["--max_iters=20", str(tmp_path / "it3.py")], [str(tmp_path / "it3.py"), "--max_iters=20"]):
        config = configure(defaults(TRAIN), TRAIN, argv)
        assert (config["max_iters"], config["log_interval"]) == (20, 7)


def test_a_directory_as_config_file_is_an_error(tmp_path):
    with pytest.raises(SystemExit, match="is a directory"):
        configure(defaults(TRAIN), TRAIN, [str(tmp_path)])


def test_prepare_refuses_a_negative_seed(tmp_path):
    r = run("prepare/lookup.py", "--size=tiny", "--seed", "-1", "--out", str(tmp_path / "d"), check=False)
    assert r.returncode != 0 and "--seed: expected an integer ≥ 0, got -1" in r.stderr and "Traceback" not in r.stderr
    assert not os.path.exists(tmp_path / "d")


# ---------------------------------------------------------------- runs

def test_a_second_run_in_an_out_dir_in_use_is_refused_even_with_overwrite(data, tmp_path):
    import subprocess
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    assert not os.path.exists(os.path.join(out, "train.lock"))  # released at the end
    log = open(os.path.join(out, "log.jsonl")).read()
    other = subprocess.Popen(["sleep", "60"])  # stands for a run still writing out_dir
    try:
        open(os.path.join(out, "train.lock"), "w").write(str(other.pid))
        error = one_line_error(train(data, out, "--max_iters=2", "--overwrite=True", check=False))
        assert f"in use by another train.py run (pid {other.pid})" in error
        assert open(os.path.join(out, "log.jsonl")).read() == log  # nothing deleted
    finally:
        other.kill()
        other.wait()
    train(data, out, "--max_iters=2", "--overwrite=True")  # the lock of a process that has ended is taken over


def test_a_run_that_ends_in_an_error_releases_its_lock_but_a_torchrun_worker_keeps_it(data, tmp_path):
    out = str(tmp_path / "out")
    for env in (None, {**os.environ, "TORCHELASTIC_RUN_ID": "launch-a"}):  # one process; a worker torchrun may restart
        r = run("train.py", f"--data_dir={tmp_path / 'missing'}", f"--out_dir={out}", env=env, check=False, process=True)
        assert r.returncode != 0 and "missing is not a directory" in r.stderr
        assert os.path.exists(os.path.join(out, "train.lock")) == (env is not None)  # a restart reads the launch in it


def test_a_finished_run_is_never_overwritten_without_resume_or_overwrite(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    before = open(os.path.join(out, "ckpt_best.pt"), "rb").read()
    error = one_line_error(train(data, out, "--max_iters=2", check=False))
    assert "--resume" in error and "--overwrite=True" in error and "ckpt_best.pt" in error
    assert open(os.path.join(out, "ckpt_best.pt"), "rb").read() == before and sorted(losses(out)) == [1, 2]
    train(data, out, "--max_iters=1", "--overwrite=True")  # afresh: nothing of the first run is left
    assert sorted(losses(out)) == [1]
    assert torch.load(os.path.join(out, "ckpt_best.pt"), weights_only=False)["iter_num"] == 1


def test_a_non_finite_loss_stops_training_before_a_checkpoint_and_the_last_one_resumes(own_data, tmp_path):
    out = str(tmp_path / "out")
    train(own_data, out, "--max_iters=2")
    latest = os.path.join(out, "ckpt_latest.pt")
    good = open(latest, "rb").read()
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    np.save(path, np.where(values != 1, np.float32(1e20), values))  # finite, but its square is not
    error = one_line_error(train(own_data, out, "--max_iters=4", "--resume", check=False))
    assert "is not the data" in error and "--changed_data=True" in error  # the arrays are not those it trained on
    error = one_line_error(train(own_data, out, "--max_iters=4", "--resume", "--changed_data=True", check=False))
    assert error.startswith("error: step 3: non-finite training loss") and "ckpt_latest.pt is untouched" in error
    assert open(latest, "rb").read() == good and max(losses(out)) == 2
    np.save(path, values)
    r = train(own_data, out, "--max_iters=4", "--resume")
    assert "resuming at step 2" in r.stdout and sorted(losses(out)) == [1, 2, 3, 4]


def test_a_non_finite_loss_between_logged_steps_stops_at_the_next_check_before_any_checkpoint(own_data, tmp_path):
    """The host reads the device only on a logged step or one before a save: a NaN in step 3 of 4 (logging every 4)
    stops every process at step 4, with the last good checkpoint untouched (tests/test_train.py counts the reads)."""
    out = str(tmp_path / "out")
    train(own_data, out, "--max_iters=2")
    good = open(os.path.join(out, "ckpt_latest.pt"), "rb").read()
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    np.save(path, np.where(values != 1, np.float32(1e20), values))
    error = one_line_error(train(own_data, out, "--max_iters=6", "--log_interval=4", "--eval_interval=6", "--resume",
                                 "--changed_data=True", check=False))
    assert error.startswith("error: step 4: non-finite training loss") and "since the last check nan" in error, error
    assert open(os.path.join(out, "ckpt_latest.pt"), "rb").read() == good


def test_a_non_finite_validation_loss_stops_before_the_checkpoint(own_data, tmp_path):
    out = str(tmp_path / "out")
    train(own_data, out, "--max_iters=2")
    good = open(os.path.join(out, "ckpt_latest.pt"), "rb").read()
    path = os.path.join(own_data, "xval", "val.values.npy")
    values = np.load(path)
    np.save(path, np.where(values != 1, np.float32(1e20), values))
    error = one_line_error(train(own_data, out, "--max_iters=4", "--resume", "--changed_data=True", check=False))
    assert error.startswith("error: step 4: non-finite validation loss")
    assert open(os.path.join(out, "ckpt_latest.pt"), "rb").read() == good


def test_a_value_beyond_float32_in_the_arrays_is_refused_naming_the_sample(own_data, tmp_path):
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    values[Split(own_data, "train", "xval").offsets[7]] = np.inf  # the first token of sample 7
    np.save(path, values)
    error = one_line_error(train(own_data, str(tmp_path / "out"), "--max_iters=60", "--eval_interval=100", check=False))
    assert "train.values.npy: sample 7 (line 8 of train.txt) holds a non-finite number" in error


def test_resume_cuts_the_log_back_to_the_checkpoint(data, tmp_path):
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    train(data, straight, "--max_iters=4")
    train(data, resumed, "--max_iters=2")
    with open(os.path.join(straight, "log.jsonl")) as f:
        later = [line for line in f if json.loads(line)["iter"] == 3]
    with open(os.path.join(resumed, "log.jsonl"), "a") as f:  # what a run killed after step 3 leaves behind
        f.writelines(later)
    train(data, resumed, "--max_iters=4", "--resume")

    def rows(out):
        with open(os.path.join(out, "log.jsonl")) as f:
            return [(r["iter"], "loss" in r) for r in map(json.loads, f)]
    assert rows(resumed) == rows(straight)  # each step once, in order: no row repeated, none going back
    a, b = losses(straight), losses(resumed)
    assert all(b[i] == pytest.approx(a[i], rel=1e-6) for i in a)


def test_a_truncated_or_empty_checkpoint_is_a_one_line_error_naming_it(checkpoint, data, tmp_path):
    truncated, empty = str(tmp_path / "ckpt_latest.pt"), str(tmp_path / "empty.pt")
    with open(truncated, "wb") as f:
        f.write(open(checkpoint, "rb").read()[:1000])
    open(empty, "wb").close()
    for bad, r in ((truncated, train(data, str(tmp_path), "--max_iters=4", "--resume", check=False)),
                   (empty, run("sample.py", f"--ckpt={empty}", input="(0.5+0.25)=[?]\n", check=False)),
                   (truncated, run("eval.py", f"--ckpt={truncated}", f"--data_dir={data}", check=False))):
        assert f"{bad} is not a readable checkpoint" in one_line_error(r)


# ---------------------------------------------------------------- datasets

def test_prepare_force_removes_the_tokenized_arrays_and_vocabulary_it_replaces(data, tmp_path):
    d = shutil.copytree(os.path.join(data), str(tmp_path / "d"))
    (tmp_path / "d" / "test_ood.txt").write_text("{a:1}a=1\n")  # a split of an earlier dataset
    (tmp_path / "d" / "notes.md").write_text("mine\n")
    run("prepare/lookup.py", "--size=tiny", "--out", d, "--workers=1", "--force")
    assert sorted(os.listdir(d)) == ["meta.json", "notes.md", "test.txt", "test_ood.txt", "train.txt", "val.txt"]
    assert open(os.path.join(d, "test_ood.txt")).read() != "{a:1}a=1\n"
    error = one_line_error(train(d, str(tmp_path / "out"), "--max_iters=1", check=False))
    assert "vocab.json not found; run: python tokenize_numbers.py" in error


def test_a_folder_without_meta_json_is_refused_unless_declared_plain_text(tmp_path):
    d = str(tmp_path)
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    with pytest.raises(SystemExit, match="meta.json not found.*--plain-text"):
        tokenize_numbers.main([d, "--workers=1"])
    assert sorted(os.listdir(d)) == ["train.txt", "val.txt"]
    tokenize_numbers.main([d, "--workers=1", "--plain-text"])
    assert json.load(open(tmp_path / "meta.json"))["splits"] == ["train", "val"]
    assert len(Split(d, "val", "xval")) == 1
    os.remove(tmp_path / "meta.json")  # as a prepare run that stopped before its end leaves it
    with pytest.raises(SystemExit, match="meta.json not found"):
        tokenize_numbers.main([d, "--workers=1", "--rebuild-vocab"])
    with pytest.raises(FileNotFoundError, match="not a complete dataset"):
        Split(d, "train", "xval")


@pytest.mark.parametrize("empty", ["train", "val"])
def test_an_empty_split_is_refused_and_leaves_nothing_behind(tmp_path, empty):
    for split in ("train", "val"):
        (tmp_path / f"{split}.txt").write_text("" if split == empty else "{a:1}\n")
    with pytest.raises(SystemExit, match=f"{empty}.txt:1: empty file"):
        tokenize_numbers.main([str(tmp_path), "--workers=1", "--plain-text"])
    assert sorted(os.listdir(tmp_path)) == ["train.txt", "val.txt"]  # no meta.json, vocab.json or arrays


def test_arrays_whose_offsets_belong_to_another_split_are_refused(tmp_path):
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    tokenize_numbers.main([str(tmp_path), "--workers=1", "--plain-text"])
    shutil.copy(tmp_path / "xval" / "val.offsets.npy", tmp_path / "xval" / "train.offsets.npy")
    with pytest.raises(ValueError, match="come from different runs"):
        Split(str(tmp_path), "train", "xval")


def test_text_edited_after_tokenizing_is_refused_until_tokenized_again(tmp_path):
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    tokenize_numbers.main([str(tmp_path), "--workers=1", "--plain-text"])
    with open(tmp_path / "train.txt", "a") as f:
        f.write("{a:7,b:8}\n")
    with pytest.raises(ValueError, match=r"train.txt has changed since it was tokenized \(36 bytes, 26 then\)"):
        Split(str(tmp_path), "train", "xval")
    assert len(Split(str(tmp_path), "val", "xval")) == 1  # an untouched split still loads
    tokenize_numbers.main([str(tmp_path), "--workers=1"])
    assert len(Split(str(tmp_path), "train", "xval")) == 3


def test_text_that_is_not_utf8_is_an_error_naming_file_and_line(tmp_path):
    (tmp_path / "train.txt").write_bytes(b"{a:1}\n{b:2}\n{\xe9:3}\n")
    with pytest.raises(SystemExit, match=r"train.txt:3: not UTF-8 text \(byte 0xe9 at column 2\)"):
        tokenize_numbers.main([str(tmp_path), "--workers=1", "--plain-text"])


# ---------------------------------------------------------------- sample.py

def test_sample_reports_each_line_it_cannot_predict_and_predicts_the_rest(checkpoint):
    long_line = "(" + "+".join(["0.5"] * 40) + ")=[?]"  # more than the model's 32 tokens
    text = "(0.5+0.25)=[?]\n(a+0.25)=[?]\n" + long_line + "\n(1e300+0.25)=[?]\n\n(0.1*0.2)=[?]\n"
    r = run("sample.py", f"--ckpt={checkpoint}", input=text, check=False)
    errors = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(errors) == 4 and "Traceback" not in r.stderr
    assert errors[0].startswith("error: stdin:2: 'a' is not in the vocabulary") and "the model knows only" in errors[0]
    assert "--rebuild-vocab" not in errors[0]  # a trained model's vocabulary is fixed: rebuilding it would not help
    assert errors[1].startswith("error: stdin:3: 82 tokens, more than the model's block_size 32")
    assert errors[2].startswith("error: stdin:4: the number 1e+300 overflows float32")
    assert errors[3] == "error: 3 of 5 lines could not be predicted (reported above)"
    out = r.stdout.splitlines()
    assert out[0].startswith("(0.5+0.25)=") and out[1].startswith("(0.1*0.2)=") and "[?]" not in r.stdout
    assert "2 numbers predicted" in r.stdout


def test_sample_names_the_line_of_text_that_is_not_utf8(checkpoint, tmp_path):
    (tmp_path / "in.txt").write_bytes(b"(0.5+0.25)=[?]\n(0.\xe9+1)=[?]\n")
    error = one_line_error(run("sample.py", f"--ckpt={checkpoint}", f"--input={tmp_path / 'in.txt'}", check=False))
    assert f"{tmp_path / 'in.txt'}:2: not UTF-8 text" in error


# ---------------------------------------------------------------- resume, disk, devices, leftovers

def test_resume_applies_changed_settings_and_says_so(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    r = train(data, out, "--resume", "--max_iters=4", "--dropout=0.5", "--eval_interval=4")
    assert "resume: changed settings applied: " in r.stdout and "dropout 0.0 → 0.5" in r.stdout
    assert torch.load(os.path.join(out, "ckpt_latest.pt"), weights_only=True)["model_args"]["dropout"] == 0.5


def test_resume_refuses_a_changed_model_shape_naming_the_key_and_both_values(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    error = one_line_error(train(data, out, "--resume", "--max_iters=4", "--block_size=64", check=False))
    assert "block_size=32" in error and "64" in error


def test_resume_with_a_longer_schedule_says_what_the_learning_rate_was_and_is(data, tmp_path):
    out = str(tmp_path / "out")
    schedule = ["--learning_rate=1e-3", "--min_lr=1e-4", "--warmup_iters=0"]  # a decaying learning rate
    train(data, out, "--max_iters=4", *schedule)
    r = train(data, out, "--resume", "--max_iters=8", *schedule)
    # step 4 of 4 is the end of the cosine (min_lr); of 8 its middle: (1e-3 + 1e-4) / 2
    assert "max_iters 4 → 8" in r.stdout
    assert "at step 4 the learning rate was 1.00e-04 and now is 5.50e-04" in r.stdout
    with open(os.path.join(out, "log.jsonl")) as f:
        lrs = {row["iter"]: row["lr"] for row in map(json.loads, f) if "lr" in row}
    assert lrs[5] == pytest.approx(5.5e-4)


def test_resume_with_max_iters_below_the_steps_done_is_an_error(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=4")
    error = one_line_error(train(data, out, "--resume", "--max_iters=2", check=False))
    assert "--max_iters=2 is below the 4 steps" in error
    r = train(data, out, "--resume", "--max_iters=4")  # a finished run: nothing to do, and it says so
    assert "has done all 4 steps; nothing to train" in r.stdout


def test_a_full_disk_during_a_checkpoint_save_is_a_one_line_error(data, tmp_path, monkeypatch):
    import errno
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    good = open(os.path.join(out, "ckpt_latest.pt"), "rb").read()

    def full(obj, f, *args, **kwargs):
        with open(f, "wb") as partial:
            partial.write(b"PK" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(torch, "save", full)
    error = one_line_error(train(data, out, "--resume", "--max_iters=4", check=False))
    assert "No space left on device" in error and "disk space" in error and "ckpt_latest.pt" in error
    assert open(os.path.join(out, "ckpt_latest.pt"), "rb").read() == good
    assert not [f for f in os.listdir(out) if ".tmp" in f]


def test_a_checkpoint_write_that_torch_refuses_says_why_in_the_oss_words(tmp_path):
    from util import why_not_written
    refused = RuntimeError("[enforce fail at inline_container.cc:747] . open file failed with strerror: Operation not "
                           "permitted")  # what torch.save raises in a folder made immutable
    assert why_not_written(refused, str(tmp_path)) == "Operation not permitted"
    full = RuntimeError("[enforce fail at inline_container.cc:626] . unexpected pos 64 vs 0\nmore")
    assert why_not_written(full, str(tmp_path)) == "unexpected pos 64 vs 0"
    written = why_not_written(RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed"), str(tmp_path))
    assert written.startswith("PytorchStreamWriter failed writing file data/0: file write failed; ") and "MiB of disk" in written


def test_a_foreign_checkpoint_cannot_run_code_and_is_a_clear_error(data, tmp_path):
    import pathlib
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return pathlib.Path.touch, (marker,)
    out = tmp_path / "out"
    out.mkdir()
    torch.save({"model": Payload()}, str(out / "ckpt_latest.pt"))
    error = one_line_error(train(data, str(out), "--resume", "--max_iters=4", check=False))
    assert f"{out / 'ckpt_latest.pt'} is not a readable checkpoint" in error and not marker.exists()
    assert "weights_only" not in error and "could run code" in error  # never the advice to load it unsafely
    (out / "random.pt").write_bytes(np.random.default_rng(0).bytes(5000))  # random bytes: a plain one-line error
    error = one_line_error(run("eval.py", f"--ckpt={out / 'random.pt'}", check=False))
    assert f"{out / 'random.pt'} is not a readable checkpoint" in error and "weights_only" not in error


def test_eval_reads_each_checkpoints_weights_once(checkpoint, data, tmp_path, monkeypatch):
    full, real = [], torch.load

    def load(path, *args, **kwargs):  # a load that reads every tensor (not mapped) is counted
        full.extend([] if kwargs.get("mmap") else [path])
        return real(path, *args, **kwargs)
    monkeypatch.setattr(torch, "load", load)
    run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={data}", f"--out={tmp_path / 'eval'}", "--max_samples=4")
    assert full == [checkpoint]


def test_a_missing_device_and_an_unusable_out_dir_fail_before_the_data_loads(tmp_path):
    missing = str(tmp_path / "no_such_data")  # an error about the data would mean it was read first
    if not torch.cuda.is_available():
        error = one_line_error(run("train.py", "--device=cuda", f"--data_dir={missing}", f"--out_dir={tmp_path}", check=False))
        assert "--device=cuda" in error and "CUDA" in error
    assert "--out_dir is empty" in one_line_error(run("train.py", "--out_dir=", f"--data_dir={missing}", check=False))
    (tmp_path / "a_file").write_text("")
    error = one_line_error(run("train.py", f"--out_dir={tmp_path / 'a_file' / 'out'}", f"--data_dir={missing}", check=False))
    assert f"cannot write to out_dir {tmp_path / 'a_file' / 'out'}" in error
    error = one_line_error(run("train.py", f"--out_dir={tmp_path / 'a_file'}", f"--data_dir={missing}", check=False))
    assert f"cannot write to out_dir {tmp_path / 'a_file'}: it is a file, not a folder" in error


def test_a_checkpoint_cut_short_by_a_kill_is_removed_by_the_next_run_and_named(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2")
    leftover = os.path.join(out, "ckpt_latest.tmp.pt")
    with open(leftover, "wb") as f:
        f.write(b"\0" * 100_000)
    r = train(data, out, "--resume", "--max_iters=4")
    assert f"removed {leftover}" in r.stdout and not os.path.exists(leftover)


def test_a_bad_sample_met_by_one_of_two_processes_stops_both_with_one_message(own_data, tmp_path):
    from batching import step_samples
    split = Split(own_data, "train", "xval")
    bad = int(step_samples(len(split), 8, 1, 1337)[1][5])  # step 1's sixth sample: the second process's share
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    values[split.offsets[bad]] = np.inf
    np.save(path, values)
    r = run("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "train.py", *TINY,
            f"--data_dir={own_data}", f"--out_dir={tmp_path}", "--batch_size=8", "--micro_batch_size=4", "--max_iters=4",
            "--eval_interval=100", env={**os.environ, "OMP_NUM_THREADS": "1"}, check=False)
    errors = {line for line in r.stderr.splitlines() if line.startswith("error:")}
    assert errors == {f"error: {own_data}/xval/train.values.npy: sample {bad} (line {bad + 1} of train.txt) holds a "
                      "non-finite number; remove or rescale it and tokenize again"}, r.stderr
    assert r.returncode != 0 and "gloo" not in r.stderr.lower() and "ProcessGroup" not in r.stderr


def test_on_the_cpu_torch_runs_one_thread_unless_asked(monkeypatch):
    import torch

    from util import pick_device
    saved = torch.get_num_threads()
    try:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        assert pick_device("cpu") == "cpu" and torch.get_num_threads() == 1  # a busy core cannot stall a second thread
        pick_device("cpu", threads=2)
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        pick_device("cpu")
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(saved)


def test_an_older_python_gets_one_line_naming_the_version_it_needs(monkeypatch):
    import runpy
    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
    with pytest.raises(SystemExit) as e:
        runpy.run_path(os.path.join(ROOT, "util.py"))
    assert str(e.value).startswith("error: Python") and "needs Python 3.11 or newer" in str(e.value)
    if os.path.exists(old := os.path.expanduser("~/.pyenv/versions/3.10.13/bin/python")):  # and a real one
        r = subprocess.run([old, "-c", "import sys; sys.path.insert(0, '.'); import util"], cwd=ROOT, capture_output=True,
                           text=True)
        assert r.returncode == 1 and r.stderr.strip().startswith("error: Python 3.10.13 is too old") and "\n" not in r.stderr.strip()


def test_a_test_sample_longer_than_the_models_context_is_one_line_naming_it(checkpoint, own_data, tmp_path):
    long = "(" + "+".join(["0.5"] * 40) + ")=20"  # far more tokens than the tiny model's block_size
    with open(os.path.join(own_data, "test.txt"), "a") as f:
        f.write(long + "\n")
    n = sum(1 for _ in open(os.path.join(own_data, "test.txt")))
    error = one_line_error(run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={own_data}", f"--out={tmp_path / 'e'}",
                               check=False))
    assert f"test.txt:{n}:" in error and "more than the block_size" in error
    r = run("sample.py", f"--ckpt={checkpoint}", input=f"(0.5+0.25)=[?]\n{long[:-2]}[?]\n", check=False)
    assert r.returncode != 0 and "stdin:2" in r.stderr and "block_size" in r.stderr and "Traceback" not in r.stderr
    assert r.stdout.startswith("(0.5+0.25)=")  # the other line is still predicted


def test_a_report_of_some_samples_never_replaces_the_report_of_all(checkpoint, data):
    folder = os.path.dirname(checkpoint)
    run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={data}")
    full = open(os.path.join(folder, "eval.json")).read()
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={data}", "--max_samples=5")
    assert open(os.path.join(folder, "eval.json")).read() == full
    assert json.load(open(os.path.join(folder, "eval_first5.json")))["max_samples"] == 5 and "eval_first5.md" in r.stdout


def test_ctrl_c_and_a_reader_that_stops_early_end_a_command_in_one_line_or_none(checkpoint):
    from util import run_main

    def interrupted():
        raise KeyboardInterrupt
    with pytest.raises(SystemExit) as e:
        run_main(interrupted)
    assert e.value.code == 130
    lines = "".join(f"(0.{i:03d}+0.5)=[?]\n" for i in range(400))
    p = subprocess.Popen(f"{sys.executable} sample.py --ckpt={checkpoint} --show=400 | head -n 1", shell=True, cwd=ROOT,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(lines, timeout=120)
    assert out.count("\n") == 1 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_value_after_a_space_is_named_as_the_flags_value_not_a_missing_config_file():
    error = one_line_error(run("train.py", "--max_iters", "5", check=False))
    assert "write --max_iters=5" in error and "not found" not in error
    error = one_line_error(run("train.py", "--resume", "nope.py", check=False))  # a boolean flag takes no value
    assert "config file nope.py not found" in error


# ---------------------------------------------------------------- checkpoints know their data

def test_a_checkpoint_knows_its_data_by_content_not_by_path(own_data, tmp_path):
    out = str(tmp_path / "out")
    train(own_data, out, "--max_iters=2")
    ckpt = os.path.join(out, "ckpt_latest.pt")
    moved = shutil.copytree(own_data, str(tmp_path / "moved"))  # the same data under another name
    elsewhere = shutil.copytree(out, str(tmp_path / "out2"))
    assert "resuming at step 2" in train(moved, elsewhere, "--max_iters=3", "--resume").stdout
    error = one_line_error(train(str(tmp_path / "gone"), out, "--max_iters=3", "--resume", check=False))
    assert "gone is not a directory" in error and f"was trained on {own_data}" in error  # where its data was
    other = str(tmp_path / "other")  # another dataset in another folder: most likely the wrong config or --data_dir
    run("prepare/arithmetic.py", "--variant=ops2", "--size=tiny", "--seed=6", "--out", other, "--workers=1")
    run("tokenize_numbers.py", other, "--encoding=xval", "--workers=1")
    error = one_line_error(train(other, out, "--max_iters=3", "--resume", check=False))
    assert f"trained on ({own_data})" in error and f"--data_dir={own_data}" in error and "changed_data" not in error
    r = run("eval.py", f"--ckpt={ckpt}", f"--out={tmp_path / 'e1'}", "--max_samples=4")  # its own folder, unchanged
    assert r.returncode == 0 and "prepared again" not in r.stdout
    shutil.rmtree(own_data)  # the folder it names is gone: say where the path came from and what fixes it
    error = one_line_error(run("eval.py", f"--ckpt={ckpt}", check=False))
    assert f"{own_data}/meta.json not found" in error and "the folder it names" in error and "--data_dir" in error
    run("prepare/arithmetic.py", "--variant=ops2", "--size=tiny", "--seed=5", "--out", own_data, "--workers=1")
    run("tokenize_numbers.py", own_data, "--encoding=xval", "--workers=1")  # prepared again in place: other samples
    error = one_line_error(train(own_data, out, "--max_iters=4", "--resume", check=False))
    assert "is not the data" in error and "--overwrite=True" in error
    error = one_line_error(run("eval.py", f"--ckpt={ckpt}", f"--out={tmp_path / 'e2'}", check=False))
    assert "prepared again since" in error and "--changed_data=True" in error
    r = run("eval.py", f"--ckpt={ckpt}", f"--out={tmp_path / 'e3'}", "--changed_data=True", "--max_samples=4")
    assert "warning:" in r.stdout and "evaluating anyway" in r.stdout


def test_overwrite_leaves_nothing_of_the_earlier_run_and_says_what_it_removed(data, tmp_path):
    out = str(tmp_path / "out")
    train(data, out, "--max_iters=2", "--keep_every=2")
    run("eval.py", f"--ckpt={out}/ckpt_best.pt", "--max_samples=4")
    assert {"ckpt_2.pt", "eval_first4.json", "eval_first4.md"} <= set(os.listdir(out))
    r = train(data, out, "--max_iters=1", "--overwrite=True", "--eval_interval=1")
    assert "removed the earlier run's" in r.stdout and "eval_first4.json" in r.stdout
    assert not {"ckpt_2.pt", "eval_first4.json", "eval_first4.md"} & set(os.listdir(out))


def test_the_closing_message_names_only_checkpoints_that_exist_and_a_tiny_val_split_is_warned_of(own_data, tmp_path):
    lines = open(os.path.join(own_data, "val.txt")).read().splitlines()
    (tmp_path / "val.txt").write_text(lines[0] + "\n")
    shutil.copy(tmp_path / "val.txt", os.path.join(own_data, "val.txt"))
    run("tokenize_numbers.py", own_data, "--encoding=xval", "--workers=1")
    out = str(tmp_path / "out")
    r = train(own_data, out, "--max_iters=2", "--learning_rate=30", "--min_lr=30", "--warmup_iters=0")  # worse than step 0
    assert "val.txt has 1 sample(s)" in r.stdout
    assert not os.path.exists(os.path.join(out, "ckpt_best.pt"))  # (seed 1337: step 2 is worse than step 0)
    assert "no validation beat step 0" in r.stdout and f"--ckpt={out}/ckpt_latest.pt" in r.stdout
    assert "ckpt_best.pt" not in r.stdout.split("done in")[1]


def test_a_checkpoint_that_cannot_be_written_says_why_in_one_line_not_blaming_the_disk(data, tmp_path, monkeypatch):
    def refused(obj, path, *args, **kwargs):  # an out_dir made read-only during the run
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(torch, "save", refused)
    error = one_line_error(train(data, str(tmp_path / "out"), "--max_iters=2", check=False))
    assert "Permission denied" in error and "disk" not in error


def test_ctrl_c_ends_a_training_in_one_line_with_exit_code_130(data, tmp_path):
    import signal
    import time
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "train.py", *TINY, f"--data_dir={data}", f"--out_dir={out}", "--max_iters=100000",
                          "--batch_size=8", "--micro_batch_size=8", "--eval_interval=2", "--eval_batches=1"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (out / "ckpt_latest.pt").exists() and time.time() < deadline:
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err.strip().startswith("interrupted (Ctrl-C) at step") and len(err.strip().splitlines()) == 1, err


def test_a_context_too_long_for_the_machine_is_refused_with_the_figure_before_anything_is_allocated(data, tmp_path):
    error = one_line_error(train(data, str(tmp_path / "out"), "--max_iters=2", "--block_size=2000000", check=False))
    assert "a context of 2,000,000 tokens needs" in error and "GiB" in error and "--window" in error


def test_plain_text_with_carriage_return_line_ends_is_refused_naming_the_line(tmp_path):
    (tmp_path / "train.txt").write_bytes(b"{a:1.5}\r{a:2}\r{a:3}\r")
    (tmp_path / "val.txt").write_text("{a:1}\n")
    error = one_line_error(run("tokenize_numbers.py", str(tmp_path), "--plain-text", "--workers=1", check=False))
    assert "train.txt:1: a carriage return inside the line" in error and not (tmp_path / "xval").exists()
