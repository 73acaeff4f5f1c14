"""tools/gpu_check.py's dry run: every stage (data, tests, ddp, bench) on the CPU at tiny sizes, two processes."""
import os
import sys

import pytest
from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "tools"))
import gpu_check  # noqa: E402


@pytest.mark.slow
def test_the_gpu_check_dry_run_passes_and_writes_its_table(tmp_path):
    table = tmp_path / "gpu_check.md"
    r = run("tools/gpu_check.py", "--device=cpu", "--tiny=True", f"--data_dir={tmp_path / 'data'}", f"--record={table}",
            "--encodings=xval p10", "--steps=4", "--warmup=2", env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert "== GPU check passed" in r.stdout and "resuming at step 10" in r.stdout
    assert "== 2 processes (gloo)" in r.stdout
    assert "2 processes give the losses of one process at steps 1-10" in r.stdout
    rows = [line for line in table.read_text().splitlines() if line.startswith(("| xval", "| p10"))]
    # the configs' own batches (64 in micro-batches of 16) over the two processes, and a projected wall time
    assert len(rows) == 2 and all("| 64 = 16 × 2 × 2 |" in row and "h |" in row for row in rows), rows


def test_n_processes_must_log_the_losses_of_one():
    one = {1: 2.0, 2: 1.5, 3: 1.25}
    assert gpu_check.same_losses(one, {1: 2.0, 2: 1.5001, 3: 1.25}, 2, 3, 1e-3) == pytest.approx(1e-4 / 1.5)
    with pytest.raises(SystemExit, match=r"4 processes log other losses .* \{2: \(1.5, 1.6\)\}"):
        gpu_check.same_losses(one, {1: 2.0, 2: 1.6, 3: 1.25}, 4, 3, 1e-3)
    with pytest.raises(SystemExit, match=r"no training loss logged at steps \[3\]"):
        gpu_check.same_losses(one, {1: 2.0, 2: 1.5}, 2, 3, 1e-3)


@pytest.mark.slow
def test_the_gpu_check_refuses_an_unknown_stage():
    r = run("tools/gpu_check.py", "--device=cpu", "--stages=data bnech", check=False)
    assert r.returncode != 0 and "unknown stage 'bnech'" in r.stderr
