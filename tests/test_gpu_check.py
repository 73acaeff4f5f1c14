"""tools/gpu_check.py's dry run: every stage (data, tests, ddp, bench) on the CPU at tiny sizes."""
import os

from test_train import run


def test_the_gpu_check_dry_run_passes_and_writes_its_table(tmp_path):
    table = tmp_path / "gpu_check.md"
    r = run("tools/gpu_check.py", "--device=cpu", "--tiny=True", f"--data_dir={tmp_path / 'data'}", f"--record={table}",
            "--encodings=xval p10", "--steps=4", "--warmup=2", env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert "== GPU check passed" in r.stdout and "resuming at step 10" in r.stdout
    rows = [line for line in table.read_text().splitlines() if line.startswith(("| xval", "| p10"))]
    assert len(rows) == 2 and all("h |" in row for row in rows)  # a projected wall time in each


def test_the_gpu_check_refuses_an_unknown_stage():
    r = run("tools/gpu_check.py", "--device=cpu", "--stages=data bnech", check=False)
    assert r.returncode != 0 and "unknown stage 'bnech'" in r.stderr
