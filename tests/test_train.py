"""train.py end to end on a tiny arithmetic set: nothing lost, nothing silent, the loop as nanoGPT's."""
import ast
import copy
import errno
import gc
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import torch
from conftest import ROOT, read, run
from helpers import (diverging_after, failed, losses, one_line_error, prepared, resumed_losses_match, tiny, tokenize,
                     train, train_args)

from dataset import Split

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def refused(data_dir, out, *args):
    return one_line_error(train(data_dir, out, *args, check=False))


def iter_num(path):
    return torch.load(path, weights_only=True)["iter_num"]


def test_the_loop_reads_as_nanogpts():
    # the loop: its first line and the indented or blank ones after it
    loop = re.search(r"^while True:\n((?: .*)?\n)*", read("train.py"), re.M).group().rstrip()
    assert len(loop.splitlines()) <= 80
    phases = [loop.index("# " + h) for h in ("determine and set the learning rate", "evaluate", "forward and backward",
                                            "clip the gradient", "timing and logging", "step the optimizer")]
    assert phases == sorted(phases)
    nodes = list(ast.walk(ast.parse(read("train.py"))))
    targets = [len(t.elts) for n in nodes if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Tuple)]
    assert max(targets, default=0) <= 5
    keys = [k.value for n in nodes if isinstance(n, ast.Dict) for k in n.keys if isinstance(k, ast.Constant)]
    assert not [k for k in keys if isinstance(k, str) and " " in k]
    in_with = {id(item.context_expr) for n in nodes if isinstance(n, ast.With) for item in n.items}
    opens = [n.lineno for n in nodes if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "open"
             and id(n) not in in_with]
    assert not opens, f"train.py:{opens}"


@pytest.mark.parametrize("encoding,steps", [("xval", 30), ("p10", 60)])
def test_a_tiny_model_learns(data, tmp_path, encoding, steps):
    k = ["--k=4"] if encoding == "xval" else []  # answers reach 1e4: multi-scale xVal
    train(data, tmp_path, f"--encoding={encoding}", *k, f"--max_iters={steps}", f"--eval_interval={steps}",
          "--batch_size=16", "--micro_batch_size=16", "--learning_rate=3e-3", "--min_lr=3e-4")
    loss = losses(tmp_path)
    assert sum(loss[steps - i] for i in range(3)) < 0.75 * sum(loss[i] for i in (1, 2, 3))
    assert {"ckpt_best.pt", "ckpt_latest.pt"} <= set(os.listdir(tmp_path))


def test_packing_gives_the_losses_of_padding(tmp_path, tmp_path_factory):
    data = prepared(tmp_path_factory, "lookup", "prepare/lookup.py", encodings=("p10",))
    flags = ["--block_size=64", "--batch_size=16", "--micro_batch_size=16", "--max_iters=3", "--eval_interval=100",
             "--encoding=p10"]
    train(data, tmp_path / "padded", *flags)
    train(data, tmp_path / "packed", *flags, "--packing=True")
    padding = {name: losses(tmp_path / name, "padding") for name in ("padded", "packed")}
    assert all(padding["packed"][i] < 0.6 * padding["padded"][i] for i in (1, 2, 3)), padding
    assert losses(tmp_path / "packed") == pytest.approx(losses(tmp_path / "padded"), rel=1e-5)


def test_sample_fills_in_and_a_causal_model_generates(data, two_steps, tmp_path):
    r = run("sample.py", f"--ckpt={two_steps}/ckpt_best.pt", f"--input={data}/test.txt", "--mask_last", "--show=2")
    assert "50 numbers predicted" in r.stdout and r.stdout.count("(true: ") == 2
    assert "python eval.py --ckpt=" in r.stdout
    train(data, tmp_path, "--max_iters=3", "--eval_interval=3", "--causal=True")
    r = run("sample.py", f"--ckpt={tmp_path}/ckpt_best.pt", "--max_new_tokens=5", input="(0.5+0.25)=\n")
    assert r.stdout.startswith("(0.5+0.25)=")


@pytest.mark.parametrize("args,message", [
    ("--compile=1", "'1' (from --compile) is not one of"),
    ("--packing=1", "packing expects bool"),
    ("--n_layer", "--n_layer needs a value"),
    ("--max_iters 5", "error: '5' after --max_iters: write --max_iters=5"),
    ("--resume nope.py", "config file nope.py: No such file"),  # a boolean flag takes no value
    ("T/bad.py", "bad.py: unknown config key 'learnin_rate'"),
    ("--out_dir=", "--out_dir is empty"),
    ("--out_dir=T/a_file/out", "cannot write to out_dir T/a_file/out"),
    ("--out_dir=T/a_file", "cannot write to out_dir T/a_file: it is a file, not a folder"),
    pytest.param("--device=cuda", "--device=cuda, but torch finds 0 CUDA",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")),
])
def test_a_bad_setting_is_one_line_before_the_data_loads(args, message, tmp_path):
    (tmp_path / "bad.py").write_text("n_layer = 2\nlearnin_rate = 1e-3\n")
    (tmp_path / "a_file").write_text("")
    args = [f"--out_dir={tmp_path}/out", *args.replace("T/", f"{tmp_path}/").split()]
    error = one_line_error(run("train.py", *args, f"--data_dir={tmp_path}/no_data", check=False))
    assert message.replace("T/", f"{tmp_path}/") in error


@pytest.mark.slow
@pytest.mark.parametrize("script", ["train.py", "sample.py", "eval.py", "tools/curves.py", "tokenize_numbers.py"])
def test_each_script_starts_as_its_own_process_and_lists_its_settings(script):
    r = run(script, "--help", process=True)
    assert "--" in r.stdout and not r.stderr.strip()
    if script == "train.py":
        assert "--learning_rate" in r.stdout and "0.0002" in r.stdout and "--mlm_probability" in r.stdout


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
def test_matmuls_stay_float32(data, tmp_path, device):
    torch.set_float32_matmul_precision("high")  # TF32 would round the number path to ~1e-3
    train(data, tmp_path, f"--device={device}", "--max_iters=1")
    assert torch.get_float32_matmul_precision() == "highest" and not torch.backends.cuda.matmul.allow_tf32
    net = tiny(block_size=16, n_layer=1, n_embd=256).to(device)
    h = torch.randn(64, 256, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):
        num = net.heads(h)[1]
    exact = copy.deepcopy(net.num_head).double().cpu()(h.double().cpu()).squeeze(-1)
    assert num.dtype == torch.float32
    assert ((num.double().cpu() - exact).norm() / exact.norm()).item() < 2e-6


def host_reads(monkeypatch, data, out, steps, log_interval):
    """How often train.py's main thread reads a device value on the host."""
    reads = []

    def counted(original):
        def read(self, *args):
            if threading.current_thread() is threading.main_thread() and \
                    os.path.dirname(sys._getframe(1).f_code.co_filename) == ROOT:
                reads.append(original)
            return original(self, *args)
        return read
    for name in ("tolist", "item", "__bool__", "__int__", "__float__", "numpy"):
        monkeypatch.setattr(torch.Tensor, name, counted(getattr(torch.Tensor, name)))
    train(data, out, f"--max_iters={steps}", "--eval_interval=100", f"--log_interval={log_interval}")
    monkeypatch.undo()
    return len(reads)


def test_the_host_waits_once_a_logged_step(data, tmp_path, monkeypatch):
    quiet = [host_reads(monkeypatch, data, tmp_path / f"q{steps}", steps, 100) for steps in (4, 8)]
    logged = [host_reads(monkeypatch, data, tmp_path / f"l{steps}", steps, 2) for steps in (4, 8)]
    assert quiet[1] - quiet[0] == 0 and logged[1] - logged[0] == 2, (quiet, logged)


@pytest.mark.slow
def test_an_error_releases_the_lock_but_a_worker_keeps_it(tmp_path):
    for env in (None, {**os.environ, "TORCHELASTIC_RUN_ID": "launch-a"}):  # a worker torchrun may restart
        r = run("train.py", f"--data_dir={tmp_path / 'missing'}", f"--out_dir={tmp_path}", env=env, check=False,
                process=True)
        failed(r, "missing is not a directory")
        assert os.path.exists(tmp_path / "train.lock") == (env is not None)


def test_a_run_is_replaced_only_with_overwrite_and_unlocked(data, two_steps, tmp_path):
    assert not os.path.exists(two_steps / "train.lock")
    out = shutil.copytree(two_steps, tmp_path / "run")
    before, log = (out / "ckpt_best.pt").read_bytes(), (out / "log.jsonl").read_text()
    error = refused(data, out)
    assert "--resume" in error and "--overwrite=True" in error and "ckpt_best.pt" in error
    # a live process holds the lock, then a dead one
    (out / "train.lock").write_text(str(os.getpid()))
    error = refused(data, out, "--overwrite=True")
    assert f"in use by another train.py run (pid {os.getpid()}); wait for it to end" in error
    (out / "train.lock").write_text("999999999")
    assert (out / "ckpt_best.pt").read_bytes() == before and (out / "log.jsonl").read_text() == log
    train(data, out, "--max_iters=1", "--overwrite=True")
    assert sorted(losses(out)) == [1] and iter_num(out / "ckpt_best.pt") == 1


def test_a_non_finite_loss_or_value_stops_the_run(own_data, tmp_path):
    train(own_data, tmp_path)
    good = (tmp_path / "ckpt_latest.pt").read_bytes()
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    np.save(path, np.where(values != 1, values * 2, values))
    error = refused(own_data, tmp_path, "--max_iters=4", "--resume")
    assert "is not the data" in error and "--changed_data=True" in error
    flags = ["--max_iters=6", "--log_interval=4", "--eval_interval=6", "--resume", "--changed_data=True"]
    with diverging_after(1):  # step 3 leaves NaN weights, step 4 is checked
        error = refused(own_data, tmp_path, *flags)
    assert error.startswith("error: step 4: non-finite training loss") and "since the last check nan" in error, error
    assert "ckpt_latest.pt is untouched" in error and max(losses(tmp_path)) == 2
    np.save(path, values)
    with diverging_after(2):  # step 4's loss is checked before its optimizer step leaves NaN
        error = refused(own_data, tmp_path, "--max_iters=4", "--resume")
    assert error.startswith("error: step 4: non-finite validation loss")
    assert (tmp_path / "ckpt_latest.pt").read_bytes() == good
    r = train(own_data, tmp_path, "--max_iters=4", "--resume")
    assert "resuming at step 2" in r.stdout and sorted(losses(tmp_path)) == [1, 2, 3, 4]
    values[Split(own_data, "train", "xval").offsets[7]] = np.inf
    np.save(path, values)
    error = refused(own_data, tmp_path / "inf", "--max_iters=60", "--eval_interval=100")
    assert "train.values.npy: sample 7 (line 8 of train.txt) holds a non-finite number" in error


def test_huge_grad_norms_are_finite_validation_ignores_micro_batches(data, tmp_path, monkeypatch):
    # four norms of 3e38 sum past float32's largest
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda *args: torch.tensor(3e38))
    for micro in (8, 2):
        train(data, tmp_path / f"m{micro}", "--max_iters=4", "--log_interval=4",
              "--eval_interval=4", "--eval_batches=2", f"--micro_batch_size={micro}")
        assert sorted(losses(tmp_path / f"m{micro}")) == [4]
    val = [losses(tmp_path / f"m{micro}", "val_loss")[0] for micro in (8, 2)]
    assert val[0] == pytest.approx(val[1], rel=1e-6)


def test_resume_continues_exactly_cuts_the_log_back_and_no_file_is_left_open(data, tmp_path):
    gc.collect()  # what earlier tests left is theirs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        resumed_losses_match(data, tmp_path)
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
                and re.search(r"(meta\.json|log\.jsonl|train\.lock|\.pt)'", str(w.message))]
    assert not unclosed, unclosed

    def rows(out):
        with open(out / "log.jsonl") as f:
            return [(r["iter"], "loss" in r) for r in map(json.loads, f)]
    assert rows(tmp_path / "resumed") == rows(tmp_path / "straight")


def test_resume_writes_through_no_symlink(data, two_steps, tmp_path):
    out, elsewhere = shutil.copytree(two_steps, tmp_path / "out"), tmp_path / "elsewhere"
    elsewhere.mkdir()

    def linked(name):
        shutil.move(out / name, elsewhere / name)
        os.symlink(elsewhere / name, out / name)
        return (elsewhere / name).read_bytes()
    log = linked("log.jsonl")
    error = refused(data, out, "--max_iters=4", "--resume")
    assert "log.jsonl is a symbolic link" in error and (elsewhere / "log.jsonl").read_bytes() == log
    os.remove(out / "log.jsonl")
    before = linked("ckpt_latest.pt")
    (elsewhere / "user.pt").write_text("a user's file")
    for name in ("ckpt_4.pt", "train.lock"):
        os.symlink(elsewhere / "user.pt", out / name)
    train(data, out, "--max_iters=4", "--resume", "--keep_every=2")
    assert not any(os.path.islink(out / name) for name in ("ckpt_latest.pt", "ckpt_4.pt", "log.jsonl", "train.lock"))
    assert (elsewhere / "ckpt_latest.pt").read_bytes() == before and (elsewhere / "user.pt").read_text() == "a user's file"
    assert iter_num(out / "ckpt_4.pt") == 4


def test_resume_refuses_or_says_what_changed(data, tmp_path):
    train(data, tmp_path, "--max_iters=4", "--min_lr=1e-4")
    for was, now in (("batch_size=8", "4"), ("seed=1337", "7"), ("mlm_probability=0.2", "0.3"), ("block_size=32", "64")):
        error = refused(data, tmp_path, f"--{was.split('=')[0]}={now}", "--max_iters=8", "--resume")
        assert f"trained with {was}, not {now}" in error, error
    assert "--max_iters=2 is below the 4 steps" in refused(data, tmp_path, "--resume", "--max_iters=2")
    assert "has done all 4 steps; nothing to train" in train(data, tmp_path, "--resume", "--max_iters=4").stdout
    r = train(data, tmp_path, "--resume", "--max_iters=8", "--min_lr=1e-4", "--dropout=0.5")
    assert "resume: changed settings applied: " in r.stdout and "dropout 0.0 → 0.5" in r.stdout
    assert torch.load(tmp_path / "ckpt_latest.pt", weights_only=True)["model_args"]["dropout"] == 0.5
    # step 4 of 4 ends the cosine (min_lr); of 8 it is its middle: (1e-3 + 1e-4) / 2
    assert "max_iters 4 → 8" in r.stdout and "at step 4 was 1.00e-04, now 5.50e-04" in r.stdout
    assert losses(tmp_path, "lr")[5] == pytest.approx(5.5e-4)


def test_an_unwritable_checkpoint_is_one_line(data, two_steps, tmp_path, monkeypatch):
    out = shutil.copytree(two_steps, tmp_path / "run")
    good = (out / "ckpt_latest.pt").read_bytes()

    def full(obj, f, *args, **kwargs):
        with open(f, "wb") as partial:
            partial.write(b"PK" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(torch, "save", full)
    error = refused(data, out, "--resume", "--max_iters=4")
    assert "No space left on device" in error and "disk space" in error and "ckpt_latest.pt" in error
    assert (out / "ckpt_latest.pt").read_bytes() == good and not [f for f in os.listdir(out) if ".tmp" in f]

    def denied(obj, path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(torch, "save", denied)
    error = refused(data, tmp_path / "other")
    assert "Permission denied" in error and "disk" not in error


def test_keep_every_leftovers_and_overwrite(data, tmp_path):
    train(data, tmp_path, "--keep_every=2")
    leftover = tmp_path / "ckpt_latest.tmp.pt"
    leftover.write_bytes(b"\0" * 100_000)
    r = train(data, tmp_path, "--resume", "--max_iters=6", "--eval_interval=6", "--keep_every=2")
    assert f"removed {leftover}" in r.stdout and not os.path.exists(leftover)
    kept = sorted(f for f in os.listdir(tmp_path) if re.fullmatch(r"ckpt_\d+\.pt", f))
    assert kept == ["ckpt_2.pt", "ckpt_4.pt", "ckpt_6.pt"] and [iter_num(tmp_path / f) for f in kept] == [2, 4, 6]
    run("eval.py", f"--ckpt={tmp_path}/ckpt_best.pt", "--max_samples=4")
    earlier = {"ckpt_2.pt", "eval_first4.json", "eval_first4.md"}
    assert earlier <= set(os.listdir(tmp_path))
    (tmp_path / "eval_notes.md").write_text("mine")
    r = train(data, tmp_path, "--max_iters=1", "--overwrite=True", "--eval_interval=1")
    assert "--overwrite=True removed" in r.stdout and "eval_first4.json" in r.stdout
    assert not earlier & set(os.listdir(tmp_path)) and (tmp_path / "eval_notes.md").read_text() == "mine"


def test_the_end_names_checkpoints_that_exist(own_data, tmp_path):
    val, meta = pathlib.Path(own_data, "val.txt"), pathlib.Path(own_data, "meta.json")
    val.write_text(val.read_text().splitlines(keepends=True)[0])
    counts = json.loads(meta.read_text())
    counts["splits"]["val"] = 1
    meta.write_text(json.dumps(counts))
    tokenize(own_data)
    r = train(own_data, tmp_path, "--learning_rate=30", "--min_lr=30")  # step 2 is worse than step 0
    assert "val.txt has 1 sample(s)" in r.stdout and not os.path.exists(tmp_path / "ckpt_best.pt")
    assert "no validation beat step 0" in r.stdout and f"--ckpt={tmp_path}/ckpt_latest.pt" in r.stdout
    assert "ckpt_best.pt" not in r.stdout.split("done in")[1]


@pytest.mark.slow
def test_ctrl_c_is_one_line_and_exit_code_130(data, tmp_path):
    p = subprocess.Popen([sys.executable, "train.py", *train_args(data, tmp_path, "--max_iters=100000")],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (tmp_path / "ckpt_latest.pt").exists() and time.time() < deadline:
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    err = p.communicate(timeout=60)[1].strip()
    assert p.returncode == 130 and err.startswith("interrupted (Ctrl-C) at step") and len(err.splitlines()) == 1, err


def test_a_checkpoint_knows_its_data_by_content(own_data, tmp_path, tmp_path_factory):
    other = prepared(tmp_path_factory, "seed5", "prepare/arithmetic.py", "--variant=ops2", "--seed=5")
    out = tmp_path / "out"
    train(own_data, out)
    ckpt = out / "ckpt_latest.pt"

    def evaluated(*args, check=False):
        return run("eval.py", f"--ckpt={ckpt}", *args, check=check)
    moved = shutil.copytree(own_data, str(tmp_path / "moved"))
    elsewhere = shutil.copytree(out, str(tmp_path / "out2"))
    assert "resuming at step 2" in train(moved, elsewhere, "--max_iters=3", "--resume").stdout
    error = refused(tmp_path / "gone", out, "--max_iters=3", "--resume")
    assert "gone is not a directory" in error and f"was trained on {own_data}" in error
    error = refused(other, out, "--max_iters=3", "--resume")
    assert f"trained on ({own_data})" in error and f"--data_dir={own_data}" in error and "changed_data" not in error
    r = evaluated(f"--out={tmp_path / 'e1'}", "--max_samples=4", check=True)
    assert "prepared again" not in r.stdout
    shutil.rmtree(own_data)
    error = one_line_error(evaluated())
    assert f"{own_data}/meta.json not found" in error and "the folder it names" in error and "--data_dir" in error
    shutil.copytree(other, own_data)
    error = refused(own_data, out, "--max_iters=4", "--resume")
    assert "is not the data" in error and "--overwrite=True" in error
    error = one_line_error(evaluated(f"--out={tmp_path / 'e2'}"))
    assert "prepared again since" in error and "--changed_data=True" in error
    r = evaluated(f"--out={tmp_path / 'e3'}", "--changed_data=True", "--max_samples=4", check=True)
    assert "warning:" in r.stdout and "evaluating anyway" in r.stdout
