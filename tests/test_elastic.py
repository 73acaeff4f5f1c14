"""The long multi-GPU run, on a CPU with gloo: a lost worker is replaced by torchrun and the run goes on from its last
checkpoint, a SIGTERM (preemption) saves and stops, and two torchrun agents (two machines) give one machine's losses."""
import os
import socket
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, run
from helpers import TINY, losses

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def common(data):
    return [*TINY, f"--data_dir={data}", "--batch_size=8", "--max_iters=6", "--eval_interval=3", "--eval_batches=1",
            "--learning_rate=1e-3", "--min_lr=1e-4"]  # a decaying lr; no dropout: its masks follow the rank


@pytest.fixture(scope="module")
def straight(data, tmp_path_factory):
    """The losses of an uninterrupted run of one process."""
    out = str(tmp_path_factory.mktemp("straight"))
    run("train.py", *common(data), f"--out_dir={out}", "--micro_batch_size=8")
    return losses(out)


def torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", *args]


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_the_run_continues_from_its_last_checkpoint(data, straight, tmp_path):
    out = str(tmp_path / "out")
    r = subprocess.run(torchrun("--standalone", "--nproc_per_node=2", "--max-restarts=1", "--monitor-interval=0.2",
                                "tests/signal_at_step.py", "SIGKILL", "5", "1", "train.py", *common(data),
                                f"--out_dir={out}", "--micro_batch_size=4"),
                       cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming at step 3" in r.stdout  # the checkpoint of step 3; rank 1 died in step 5
    a = losses(out)
    assert sorted(a) == sorted(straight) == [1, 2, 3, 4, 5, 6]
    assert all(a[i] == pytest.approx(straight[i], rel=1e-5) for i in a)


@pytest.mark.slow
def test_a_sigterm_on_one_machine_of_two_processes_stops_both_with_one_line(data, tmp_path):
    out = str(tmp_path / "out")
    r = subprocess.run(torchrun("--standalone", "--nproc_per_node=2", "--monitor-interval=0.2", "tests/signal_at_step.py",
                                "SIGTERM", "3", "1", "train.py", *common(data), f"--out_dir={out}", "--micro_batch_size=4",
                                "--log_interval=2", "--eval_interval=100"),
                       cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=240)
    assert r.returncode != 0 and (r.stdout + r.stderr).count("stopped by a SIGTERM after step 4") == 1, r.stdout + r.stderr
    assert torch.load(os.path.join(out, "ckpt_latest.pt"), weights_only=True)["iter_num"] == 4


def test_a_torchrun_restart_continues_only_its_own_launch(data, tmp_path, monkeypatch):
    out = str(tmp_path / "out")
    run("train.py", *common(data), f"--out_dir={out}", "--micro_batch_size=8", "--max_iters=3")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "launch-b")  # torchrun's name of this launch (no RANK: one process)
    open(os.path.join(out, "train.lock"), "w").write("999999999 launch-a")  # the run of another launch
    r = run("train.py", *common(data), f"--out_dir={out}", "--micro_batch_size=8", check=False)
    assert r.returncode != 0 and "holds a run" in r.stderr
    open(os.path.join(out, "train.lock"), "w").write("999999999 launch-b")  # this launch's run, before a restart
    r = run("train.py", *common(data), f"--out_dir={out}", "--micro_batch_size=8", "--overwrite=True")
    assert "resuming at step 3" in r.stdout and sorted(losses(out)) == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_two_agents_give_one_machines_losses_and_a_sigterm_saves_for_resume(data, straight, tmp_path):
    """Two torchrun agents on localhost (--nnodes=2, as two machines run it); a SIGTERM to one worker in step 3 stops
    both after step 4, the next logged step, with ckpt_latest.pt of step 4; --resume ends with the uninterrupted losses."""
    out = str(tmp_path / "out")
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    agent = torchrun("--nnodes=2", "--nproc_per_node=1", "--rdzv_backend=c10d", f"--rdzv_endpoint=localhost:{port}",
                     "--rdzv_id=two-agents", "--monitor-interval=0.2", "tests/signal_at_step.py", "SIGTERM", "3", "1",
                     "train.py", *common(data), f"--out_dir={out}", "--micro_batch_size=4", "--log_interval=2",
                     "--eval_interval=100")
    agents = [subprocess.Popen(agent, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
              for _ in range(2)]
    text = "".join(a.communicate(timeout=240)[0] for a in agents)
    assert all(a.returncode != 0 for a in agents), text
    assert f"stopped by a SIGTERM after step 4, saved in {out}/ckpt_latest.pt" in text and "--resume" in text
    assert text.count("stopped by a SIGTERM") == 2  # one line from each machine
    assert torch.load(os.path.join(out, "ckpt_latest.pt"), weights_only=True)["iter_num"] == 4
    a = losses(out)
    assert sorted(a) == [2, 4] and all(a[i] == pytest.approx(straight[i], rel=1e-5) for i in a)  # one machine's
    run("train.py", *common(data), f"--out_dir={out}", "--micro_batch_size=8", "--log_interval=2", "--eval_interval=100",
        "--resume")
    a = losses(out)
    assert sorted(a) == [2, 4, 6] and a[6] == pytest.approx(straight[6], rel=1e-5)
