"""distributed.py on a CPU with gloo: two processes give one's losses; restarts, SIGTERM, two agents."""
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import ROOT, run
from helpers import TINY, losses, torchrun, train, train_args

from batching import step_samples
from dataset import Split

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
# a decaying lr; no dropout: its masks follow the rank
SIX = ["--max_iters=6", "--eval_interval=3", "--min_lr=1e-4"]
QUIET = ["--log_interval=2", "--eval_interval=100"]


@pytest.fixture(scope="module")
def straight(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    train(data, out, *SIX)
    return losses(out)


def signalled(name, step, *args, data, out):
    """torchrun's command of a tiny train.py run whose rank 1 gets signal `name` as step `step` begins."""
    return [sys.executable, "-m", "torch.distributed.run", *args, "--monitor-interval=0.2", "tests/signal_at_step.py",
            name, str(step), "1", "train.py", *train_args(data, out, *SIX, "--micro_batch_size=4")]


def same(a, b):
    return a == pytest.approx(b, rel=1e-5)


@pytest.mark.slow
def test_two_processes_give_the_loss_of_one(data, straight, tmp_path):
    torchrun(2, *train_args(data, tmp_path, *SIX, "--micro_batch_size=2"))
    assert same(losses(tmp_path), straight)


@pytest.mark.slow
def test_era5_xval_runs_unchanged_on_8_processes(data, tmp_path):
    common = ["config/era5_xval.py", *TINY, f"--data_dir={data}", "--max_iters=2", "--eval_interval=100",
              "--eval_batches=1", "--learning_rate=1e-3"]
    r = run("train.py", *common, f"--out_dir={tmp_path / 'one'}")
    assert "batch: 64 samples/step = 16 × 1 processes × 4 accumulation steps" in r.stdout
    r = torchrun(8, *common, f"--out_dir={tmp_path / 'eight'}")
    assert r.stdout.count("micro_batch_size 16 × 8 processes exceeds batch_size 64: micro-batches of 8") == 1
    assert "batch: 64 samples/step = 8 × 8 processes × 1 accumulation steps" in r.stdout
    assert sorted(losses(tmp_path / "one")) == [1, 2] and same(losses(tmp_path / "eight"), losses(tmp_path / "one"))


@pytest.mark.slow
def test_a_bad_sample_met_by_one_process_stops_both_in_one_line(own_data, tmp_path):
    split = Split(own_data, "train", "xval")
    bad = int(step_samples(len(split), 8, 1, 1337)[1][5])  # step 1, the second process's share
    path = os.path.join(own_data, "xval", "train.values.npy")
    values = np.load(path)
    values[split.offsets[bad]] = np.inf
    np.save(path, values)
    r = torchrun(2, *train_args(own_data, tmp_path, "--micro_batch_size=4", "--max_iters=4", "--eval_interval=100"),
                 check=False)
    errors = {line for line in r.stderr.splitlines() if line.startswith("error:")}
    assert errors == {f"error: {own_data}/xval/train.values.npy: sample {bad} (line {bad + 1} of train.txt) holds a "
                      "non-finite number; remove or rescale it and tokenize again"}, r.stderr
    assert r.returncode != 0 and "gloo" not in r.stderr.lower() and "ProcessGroup" not in r.stderr


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_the_run_resumes(data, straight, tmp_path):
    command = signalled("SIGKILL", 5, "--standalone", "--nproc_per_node=2", "--max-restarts=1", data=data, out=tmp_path)
    r = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming at step 3" in r.stdout  # rank 1 died in step 5
    assert same(losses(tmp_path), straight)


@pytest.mark.slow
def test_a_sigterm_to_one_of_two_processes_stops_both_in_one_line(data, tmp_path):
    command = signalled("SIGTERM", 3, "--standalone", "--nproc_per_node=2", data=data, out=tmp_path)
    r = subprocess.run([*command, *QUIET], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=240)
    assert r.returncode != 0 and (r.stdout + r.stderr).count("stopped by a SIGTERM after step 4") == 1, r.stdout + r.stderr
    assert torch.load(tmp_path / "ckpt_latest.pt", weights_only=True)["iter_num"] == 4


def test_a_torchrun_restart_continues_only_its_own_launch(data, tmp_path, monkeypatch):
    train(data, tmp_path, *SIX, "--max_iters=3")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "launch-b")  # no RANK: one process
    (tmp_path / "train.lock").write_text("999999999 launch-a")  # another launch's run
    assert "holds a run" in train(data, tmp_path, *SIX, check=False).stderr
    (tmp_path / "train.lock").write_text("999999999 launch-b")  # this launch's
    r = train(data, tmp_path, *SIX, "--overwrite=True")
    assert "resuming at step 3" in r.stdout and sorted(losses(tmp_path)) == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_two_agents_give_one_machines_losses_and_a_sigterm_saves(data, straight, tmp_path):
    """Two agents (machines): a SIGTERM in step 3 stops both after step 4, the next logged one."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    command = signalled("SIGTERM", 3, "--nnodes=2", "--nproc_per_node=1", "--rdzv_backend=c10d",
                        f"--rdzv_endpoint=localhost:{port}", "--rdzv_id=two-agents", data=data, out=tmp_path)
    agents = [subprocess.Popen([*command, *QUIET], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    text = "".join(a.communicate(timeout=240)[0] for a in agents)
    assert all(a.returncode != 0 for a in agents), text
    assert f"stopped by a SIGTERM after step 4, saved in {tmp_path}/ckpt_latest.pt" in text and "--resume" in text
    assert text.count("stopped by a SIGTERM") == 2  # one a machine
    assert torch.load(tmp_path / "ckpt_latest.pt", weights_only=True)["iter_num"] == 4
    assert same(losses(tmp_path), {i: straight[i] for i in (2, 4)})  # one machine's
    train(data, tmp_path, *SIX, *QUIET, "--resume")
    a = losses(tmp_path)
    assert sorted(a) == [2, 4, 6] and a[6] == pytest.approx(straight[6], rel=1e-5)
