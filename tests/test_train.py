"""train.py end to end on a tiny arithmetic set: nothing lost, nothing silent, the loop as nanoGPT's."""
import ast
import copy
import errno
import gc
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import torch
from conftest import ROOT, run
from helpers import diverging_after, losses, one_line_error, resumed_losses_match, train, train_args

from dataset import Split
from model import GPT, GPTConfig


def read_log(out, key):
    with open(os.path.join(out, "log.jsonl")) as f:
        return {r["iter"]: r[key] for r in map(json.loads, f) if key in r}


def test_the_loop_is_at_most_80_lines_each_phase_under_a_heading():
    lines = open(os.path.join(ROOT, "train.py"), encoding="utf-8").read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "while True:")
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" "))
    loop = "\n".join(lines[start:end]).rstrip()
    assert len(loop.splitlines()) <= 80
    phases = ("# determine and set the learning rate", "# evaluate", "# forward and backward", "# clip the gradient",
              "# timing and logging", "# step the optimizer")
    assert [loop.index(heading) for heading in phases] == sorted(loop.index(heading) for heading in phases)


def test_train_py_has_no_tuple_of_six_targets_no_dict_keyed_by_a_sentence_and_no_open_outside_a_with():
    tree = ast.parse(open(os.path.join(ROOT, "train.py"), encoding="utf-8").read())
    targets = [len(t.elts) for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
               if isinstance(t, ast.Tuple)]
    assert max(targets, default=0) <= 5
    keys = [k.value for node in ast.walk(tree) if isinstance(node, ast.Dict) for k in node.keys
            if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    assert not [k for k in keys if " " in k]
    in_with = {id(item.context_expr) for node in ast.walk(tree) if isinstance(node, ast.With) for item in node.items}
    opens = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "id", None) == "open" and id(node) not in in_with]
    assert not opens, f"train.py:{opens}"


@pytest.mark.parametrize("encoding", ["xval", "p10"])
def test_a_tiny_model_learns(data, tmp_path, encoding):
    k = ["--k=4"] if encoding == "xval" else []  # the trees' answers reach 1e4: multi-scale xVal
    train(data, tmp_path, f"--encoding={encoding}", *k, "--max_iters=60", "--eval_interval=60", "--batch_size=32",
          "--micro_batch_size=32", "--learning_rate=3e-3", "--min_lr=3e-4")
    loss = losses(tmp_path)
    assert sum(loss[i] for i in (58, 59, 60)) < 0.75 * sum(loss[i] for i in (1, 2, 3))
    assert os.path.exists(tmp_path / "ckpt_best.pt") and os.path.exists(tmp_path / "ckpt_latest.pt")


def test_keep_every_keeps_a_checkpoint_of_each_such_step(data, tmp_path):
    train(data, tmp_path, "--max_iters=6", "--eval_interval=6", "--keep_every=2")
    kept = sorted(f for f in os.listdir(tmp_path) if f.startswith("ckpt_") and f[5].isdigit())
    assert kept == ["ckpt_2.pt", "ckpt_4.pt", "ckpt_6.pt"]
    assert [torch.load(tmp_path / f, weights_only=False)["iter_num"] for f in kept] == [2, 4, 6]


def test_resume_continues_exactly(data, tmp_path):
    resumed_losses_match(data, tmp_path)


def test_packing_gives_the_losses_of_padding(tmp_path):
    data = str(tmp_path / "lookup")  # 2-6 entries: samples of different lengths
    run("prepare/lookup.py", "--size=tiny", "--out", data, "--workers=1")
    run("tokenize_numbers.py", data, "--encoding=p10", "--workers=1")
    common = ["--block_size=64", "--batch_size=16", "--micro_batch_size=16", "--max_iters=3", "--eval_interval=100",
              "--encoding=p10"]
    train(data, tmp_path / "padded", *common)
    train(data, tmp_path / "packed", *common, "--packing=True")
    padding = {name: read_log(tmp_path / name, "padding") for name in ("padded", "packed")}
    assert all(padding["packed"][i] < 0.6 * padding["padded"][i] for i in (1, 2, 3)), padding
    a, b = losses(tmp_path / "padded"), losses(tmp_path / "packed")
    assert all(b[i] == pytest.approx(a[i], rel=1e-5) for i in (1, 2, 3))


def test_sample_fills_in_marked_numbers_and_reports_r2(data, tmp_path):
    train(data, tmp_path, "--max_iters=5", "--eval_interval=5")
    ckpt = f"--ckpt={tmp_path}/ckpt_best.pt"
    lines = run("sample.py", ckpt, input="(0.5+0.25)=[?]\n([?]*0.1)=0.05\n").stdout.splitlines()
    assert lines[0].startswith("(0.5+0.25)=") and "[?]" not in lines[0]
    assert lines[1].endswith("*0.1)=0.05") and "[?]" not in lines[1] and "2 numbers predicted" in lines[-1]
    r = run("sample.py", ckpt, f"--input={data}/test.txt", "--mask_last", "--show=2")
    assert "50 numbers predicted" in r.stdout and r.stdout.count("(true: ") == 2
    assert "python eval.py --ckpt=" in r.stdout
    r = run("sample.py", ckpt, input="(0.5+0.25)=[?]\n\n(a+0.25)=[?]\n", check=False)
    assert r.returncode != 0 and "stdin:3" in r.stderr and "'a'" in r.stderr  # blank lines still count


def test_generation_from_a_causal_model(data, tmp_path):
    train(data, tmp_path, "--max_iters=3", "--eval_interval=3", "--causal=True")
    r = run("sample.py", f"--ckpt={tmp_path}/ckpt_best.pt", "--max_new_tokens=5", input="(0.5+0.25)=\n")
    assert r.stdout.startswith("(0.5+0.25)=")


@pytest.mark.parametrize("args,message", [
    (["--learning_rat=1e-3"], "unknown flag --learning_rat"),
    (["--max_iters=ten"], "max_iters expects int"),
    (["--compile=1"], "compile expects 'auto', True or False"),
    (["--packing=1"], "packing expects bool"),
    (["--n_layer"], "--n_layer needs a value"),
    (["missing_config.py"], "config file missing_config.py not found"),
])
def test_bad_settings_are_clear_errors(args, message):
    r = run("train.py", *args, check=False)
    assert r.returncode != 0 and message in r.stderr


def test_an_unknown_key_in_a_config_file_names_the_file(tmp_path):
    (tmp_path / "bad.py").write_text("n_layer = 2\nlearnin_rate = 1e-3\n")
    r = run("train.py", str(tmp_path / "bad.py"), check=False)
    assert r.returncode != 0 and "bad.py" in r.stderr and "'learnin_rate'" in r.stderr


def test_help_lists_every_setting_with_its_default():
    r = run("train.py", "--help")
    assert "--learning_rate" in r.stdout and "0.0002" in r.stdout and "--mlm_probability" in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("script", ["train.py", "sample.py", "eval.py", "tools/curves.py", "tokenize_numbers.py"])
def test_each_script_starts_as_its_own_process(script):
    # the other tests run most scripts inside the test process; this one starts a new Python process
    r = run(script, "--help", process=True)
    assert r.returncode == 0 and "--" in r.stdout and not r.stderr.strip()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_float32_matmuls_stay_float32_and_the_number_head_matches_float64(data, tmp_path, device):
    """TF32 would round the float32 number path's matmuls to a 10-bit mantissa (~1e-3 relative)."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    torch.set_float32_matmul_precision("high")  # what TF32 on means; train.py must undo it
    train(data, tmp_path, f"--device={device}", "--max_iters=1")
    assert torch.get_float32_matmul_precision() == "highest" and not torch.backends.cuda.matmul.allow_tf32
    torch.manual_seed(0)
    net = GPT(GPTConfig(vocab_size=12, num_id=3, block_size=16, n_layer=1, n_head=2, n_embd=256)).to(device)
    h = torch.randn(64, 256, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):  # as train.py runs it on a GPU
        num = net.heads(h)[1]
    exact = copy.deepcopy(net.num_head).double().cpu()(h.double().cpu()).squeeze(-1)
    assert num.dtype == torch.float32
    assert ((num.double().cpu() - exact).norm() / exact.norm()).item() < 2e-6


def host_reads(data, out, steps, log_interval):
    """How often the project's code reads a device value on the host in train.py's main thread (each read waits
    for the device) in a run."""
    import threading
    reads, originals = [], {name: getattr(torch.Tensor, name) for name in ("tolist", "item", "__bool__", "__int__",
                                                                          "__float__", "numpy")}

    def counted(name):
        def read(self, *args):
            if threading.current_thread() is threading.main_thread() and \
                    os.path.dirname(sys._getframe(1).f_code.co_filename) == ROOT:
                reads.append(name)
            return originals[name](self, *args)
        return read
    try:
        for name in originals:
            setattr(torch.Tensor, name, counted(name))
        train(data, out, f"--max_iters={steps}", "--eval_interval=100", f"--log_interval={log_interval}")
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)
    return len(reads)


def test_the_host_waits_for_the_device_once_a_logged_step_not_every_step(data, tmp_path):
    """nanoGPT's habit: the losses and the finiteness check cross to the host together, on a logged step (and
    before a checkpoint); the steps between queue work on the device without waiting for it."""
    quiet = [host_reads(data, tmp_path / f"q{steps}", steps, 100) for steps in (4, 8)]  # logs only the last step
    logged = [host_reads(data, tmp_path / f"l{steps}", steps, 2) for steps in (4, 8)]  # logs every second step
    assert quiet[1] - quiet[0] == 0 and logged[1] - logged[0] == 2, (quiet, logged)


# ---------------------------------------------------------------- runs

@pytest.mark.slow
def test_a_run_that_ends_in_an_error_releases_its_lock_but_a_torchrun_worker_keeps_it(tmp_path):
    for env in (None, {**os.environ, "TORCHELASTIC_RUN_ID": "launch-a"}):  # one process; a worker torchrun may restart
        r = run("train.py", f"--data_dir={tmp_path / 'missing'}", f"--out_dir={tmp_path}", env=env, check=False,
                process=True)
        assert r.returncode != 0 and "missing is not a directory" in r.stderr
        assert os.path.exists(tmp_path / "train.lock") == (env is not None)  # a restart reads the launch in it


def test_a_run_is_never_replaced_without_overwrite_nor_while_another_holds_its_out_dir(data, tmp_path):
    train(data, tmp_path)
    assert not os.path.exists(tmp_path / "train.lock")  # released at the end
    before, log = (tmp_path / "ckpt_best.pt").read_bytes(), (tmp_path / "log.jsonl").read_text()
    error = one_line_error(train(data, tmp_path, check=False))
    assert "--resume" in error and "--overwrite=True" in error and "ckpt_best.pt" in error
    other = subprocess.Popen(["sleep", "60"])  # stands for a run still writing out_dir
    try:
        (tmp_path / "train.lock").write_text(str(other.pid))
        error = one_line_error(train(data, tmp_path, "--overwrite=True", check=False))
        assert f"in use by another train.py run (pid {other.pid}); wait for it to end" in error
    finally:
        other.kill()
        other.wait()
    assert (tmp_path / "ckpt_best.pt").read_bytes() == before and (tmp_path / "log.jsonl").read_text() == log
    # the lock of a process that has ended is taken over; afresh, nothing of the first run is left
    train(data, tmp_path, "--max_iters=1", "--overwrite=True")
    assert sorted(losses(tmp_path)) == [1]
    assert torch.load(tmp_path / "ckpt_best.pt", weights_only=False)["iter_num"] == 1


def test_a_non_finite_loss_stops_training_before_a_checkpoint_and_the_last_one_resumes(own_data, tmp_path):
    train(own_data, tmp_path)
    good = (tmp_path / "ckpt_latest.pt").read_bytes()
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    np.save(path, np.where(values != 1, values * 2, values))  # other numbers
    error = one_line_error(train(own_data, tmp_path, "--max_iters=4", "--resume", check=False))
    assert "is not the data" in error and "--changed_data=True" in error  # the arrays are not those it trained on
    with diverging_after(1):  # the resumed run's first step leaves NaN weights: step 4's loss is NaN
        r = train(own_data, tmp_path, "--max_iters=4", "--resume", "--changed_data=True", check=False)
    error = one_line_error(r)
    assert error.startswith("error: step 4: non-finite training loss") and "ckpt_latest.pt is untouched" in error
    assert (tmp_path / "ckpt_latest.pt").read_bytes() == good and max(losses(tmp_path)) == 3
    np.save(path, values)
    r = train(own_data, tmp_path, "--max_iters=4", "--resume")
    assert "resuming at step 2" in r.stdout and sorted(losses(tmp_path)) == [1, 2, 3, 4]


def test_a_non_finite_loss_between_logged_steps_or_in_validation_stops_before_any_checkpoint(own_data, tmp_path):
    """The host reads the device only on a logged step or one before a save: a NaN in step 3 of 4 (logging every 4)
    stops every process at step 4, with the last good checkpoint untouched; so does a NaN validation loss."""
    train(own_data, tmp_path)
    good = (tmp_path / "ckpt_latest.pt").read_bytes()
    with diverging_after(1):  # step 3 of the run: its weights are NaN, step 4 is checked
        r = train(own_data, tmp_path, "--max_iters=6", "--log_interval=4", "--eval_interval=6", "--resume", check=False)
    error = one_line_error(r)
    assert error.startswith("error: step 4: non-finite training loss") and "since the last check nan" in error, error
    with diverging_after(2):  # the training loss of step 4 is checked before its optimizer step leaves NaN
        error = one_line_error(train(own_data, tmp_path, "--max_iters=4", "--resume", check=False))
    assert error.startswith("error: step 4: non-finite validation loss")
    assert (tmp_path / "ckpt_latest.pt").read_bytes() == good


def test_a_value_beyond_float32_in_the_arrays_is_refused_naming_the_sample(own_data, tmp_path):
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    values[Split(own_data, "train", "xval").offsets[7]] = np.inf  # the first token of sample 7
    np.save(path, values)
    error = one_line_error(train(own_data, tmp_path, "--max_iters=60", "--eval_interval=100", check=False))
    assert "train.values.npy: sample 7 (line 8 of train.txt) holds a non-finite number" in error


def test_resume_cuts_the_log_back_to_the_checkpoint(data, tmp_path):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    train(data, straight, "--max_iters=4")
    train(data, resumed)
    later = [line for line in open(straight / "log.jsonl") if json.loads(line)["iter"] == 3]
    with open(resumed / "log.jsonl", "a") as f:  # what a run killed after step 3 leaves behind
        f.writelines(later)
    train(data, resumed, "--max_iters=4", "--resume")

    def rows(out):
        with open(out / "log.jsonl") as f:
            return [(r["iter"], "loss" in r) for r in map(json.loads, f)]
    assert rows(resumed) == rows(straight)  # each step once, in order: no row repeated, none going back
    a, b = losses(straight), losses(resumed)
    assert all(b[i] == pytest.approx(a[i], rel=1e-6) for i in a)


# ---------------------------------------------------------------- resume, disk, devices, leftovers

def test_resume_refuses_what_would_not_continue_the_run_and_applies_and_says_the_rest(data, tmp_path):
    train(data, tmp_path, "--max_iters=4", "--min_lr=1e-4")  # a decaying learning rate
    refused = (("batch_size=8", "4"), ("seed=1337", "7"), ("mlm_probability=0.2", "0.3"), ("block_size=32", "64"))
    for was, now in refused:
        flag = f"--{was.split('=')[0]}={now}"  # another sample stream or model shape
        error = one_line_error(train(data, tmp_path, flag, "--max_iters=8", "--resume", check=False))
        assert f"trained with {was}, not {now}" in error, error
    error = one_line_error(train(data, tmp_path, "--resume", "--max_iters=2", check=False))
    assert "--max_iters=2 is below the 4 steps" in error
    r = train(data, tmp_path, "--resume", "--max_iters=4")  # a finished run: nothing to do, and it says so
    assert "has done all 4 steps; nothing to train" in r.stdout
    r = train(data, tmp_path, "--resume", "--max_iters=8", "--min_lr=1e-4", "--dropout=0.5")
    assert "resume: changed settings applied: " in r.stdout and "dropout 0.0 → 0.5" in r.stdout
    assert torch.load(tmp_path / "ckpt_latest.pt", weights_only=True)["model_args"]["dropout"] == 0.5
    # step 4 of 4 is the end of the cosine (min_lr); of 8 its middle: (1e-3 + 1e-4) / 2
    assert "max_iters 4 → 8" in r.stdout
    assert "at step 4 was 1.00e-04, now 5.50e-04" in r.stdout
    assert read_log(tmp_path, "lr")[5] == pytest.approx(5.5e-4)


def test_a_checkpoint_that_cannot_be_written_is_a_one_line_error_naming_the_disk_only_when_full(data, tmp_path,
                                                                                              monkeypatch):
    train(data, tmp_path)
    good = (tmp_path / "ckpt_latest.pt").read_bytes()

    def full(obj, f, *args, **kwargs):
        with open(f, "wb") as partial:
            partial.write(b"PK" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(torch, "save", full)
    error = one_line_error(train(data, tmp_path, "--resume", "--max_iters=4", check=False))
    assert "No space left on device" in error and "disk space" in error and "ckpt_latest.pt" in error
    assert (tmp_path / "ckpt_latest.pt").read_bytes() == good and not [f for f in os.listdir(tmp_path) if ".tmp" in f]

    def refused(obj, path, *args, **kwargs):  # an out_dir made read-only during the run
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(torch, "save", refused)
    error = one_line_error(train(data, tmp_path / "other", check=False))
    assert "Permission denied" in error and "disk" not in error


def test_a_missing_device_and_an_unusable_out_dir_fail_before_the_data_loads(tmp_path):
    missing = f"--data_dir={tmp_path / 'no_such_data'}"  # an error about the data would mean it was read first
    if not torch.cuda.is_available():
        error = one_line_error(run("train.py", "--device=cuda", missing, f"--out_dir={tmp_path}", check=False))
        assert "--device=cuda" in error and "CUDA" in error
    assert "--out_dir is empty" in one_line_error(run("train.py", "--out_dir=", missing, check=False))
    (tmp_path / "a_file").write_text("")
    error = one_line_error(run("train.py", f"--out_dir={tmp_path / 'a_file' / 'out'}", missing, check=False))
    assert f"cannot write to out_dir {tmp_path / 'a_file' / 'out'}" in error
    error = one_line_error(run("train.py", f"--out_dir={tmp_path / 'a_file'}", missing, check=False))
    assert f"cannot write to out_dir {tmp_path / 'a_file'}: it is a file, not a folder" in error


def test_a_checkpoint_cut_short_by_a_kill_is_removed_by_the_next_run_and_named(data, tmp_path):
    train(data, tmp_path)
    leftover = tmp_path / "ckpt_latest.tmp.pt"
    leftover.write_bytes(b"\0" * 100_000)
    r = train(data, tmp_path, "--resume", "--max_iters=4")
    assert f"removed {leftover}" in r.stdout and not os.path.exists(leftover)


def test_overwrite_leaves_nothing_of_the_earlier_run_and_says_what_it_removed(data, tmp_path):
    train(data, tmp_path, "--keep_every=2")
    run("eval.py", f"--ckpt={tmp_path}/ckpt_best.pt", "--max_samples=4")
    assert {"ckpt_2.pt", "eval_first4.json", "eval_first4.md"} <= set(os.listdir(tmp_path))
    r = train(data, tmp_path, "--max_iters=1", "--overwrite=True", "--eval_interval=1")
    assert "--overwrite=True removed" in r.stdout and "eval_first4.json" in r.stdout
    assert not {"ckpt_2.pt", "eval_first4.json", "eval_first4.md"} & set(os.listdir(tmp_path))


def test_the_closing_message_names_only_checkpoints_that_exist_and_a_tiny_val_split_is_warned_of(own_data, tmp_path):
    first = open(os.path.join(own_data, "val.txt")).readline()
    with open(os.path.join(own_data, "val.txt"), "w") as f:
        f.write(first)
    meta = json.load(open(os.path.join(own_data, "meta.json")))
    meta["splits"]["val"] = 1  # a dataset prepared so (meta.json counts its samples)
    json.dump(meta, open(os.path.join(own_data, "meta.json"), "w"))
    run("tokenize_numbers.py", own_data, "--encoding=xval", "--workers=1")
    r = train(own_data, tmp_path, "--learning_rate=30", "--min_lr=30")  # worse than step 0
    assert "val.txt has 1 sample(s)" in r.stdout
    assert not os.path.exists(tmp_path / "ckpt_best.pt")  # (seed 1337: step 2 is worse than step 0)
    assert "no validation beat step 0" in r.stdout and f"--ckpt={tmp_path}/ckpt_latest.pt" in r.stdout
    assert "ckpt_best.pt" not in r.stdout.split("done in")[1]


def test_a_run_leaves_none_of_its_own_files_open(data, tmp_path):
    gc.collect()  # what earlier tests left is theirs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        train(data, tmp_path)
        train(data, tmp_path, "--max_iters=3", "--resume")
        gc.collect()
    # the files train.py reads and writes itself (dataset.py reads the arrays and the vocabulary)
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
                and re.search(r"(meta\.json|log\.jsonl|train\.lock|\.pt)'", str(w.message))]
    assert not unclosed, unclosed


@pytest.mark.slow
def test_ctrl_c_ends_a_training_in_one_line_with_exit_code_130(data, tmp_path):
    p = subprocess.Popen([sys.executable, "train.py", *train_args(data, tmp_path, "--max_iters=100000")],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (tmp_path / "ckpt_latest.pt").exists() and time.time() < deadline:
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err.strip().startswith("interrupted (Ctrl-C) at step") and len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------- checkpoints know their data

def test_a_checkpoint_knows_its_data_by_content_not_by_path(own_data, tmp_path):
    out = tmp_path / "out"
    train(own_data, out)
    ckpt = out / "ckpt_latest.pt"
    moved = shutil.copytree(own_data, str(tmp_path / "moved"))  # the same data under another name
    elsewhere = shutil.copytree(out, str(tmp_path / "out2"))
    assert "resuming at step 2" in train(moved, elsewhere, "--max_iters=3", "--resume").stdout
    error = one_line_error(train(tmp_path / "gone", out, "--max_iters=3", "--resume", check=False))
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


def test_the_validation_set_does_not_depend_on_the_memory_settings(data, tmp_path):
    """ckpt_best.pt is chosen by comparing validation losses: a resume with another micro-batch size (a memory
    setting) must compare losses of the same samples."""
    val = {}
    for micro in (8, 2):
        train(data, tmp_path / f"m{micro}", "--max_iters=1", "--eval_interval=1", "--eval_batches=2",
              f"--micro_batch_size={micro}")
        val[micro] = read_log(tmp_path / f"m{micro}", "val_loss")
    assert val[8][0] == pytest.approx(val[2][0], rel=1e-6)
