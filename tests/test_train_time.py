"""dev/train_time.py: a run's training time is its rows' ms/step times the steps each covers, summed over runs."""
import json

import pytest
from conftest import run


def write_log(folder, rows):
    folder.mkdir()
    (folder / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.slow
def test_steps_and_time_of_each_run_and_the_total(tmp_path):
    # 10 steps at 100 ms, a validation row, 10 at 200 ms, 5 at 400 ms (a last log off the interval): 0.5 min
    write_log(tmp_path / "a", [{"iter": 10, "loss": 1.0, "ms_per_step": 100.0}, {"iter": 10, "val_loss": 1.0},
                               {"iter": 20, "loss": 1.0, "ms_per_step": 200.0}, {"iter": 25, "loss": 1.0, "ms_per_step": 400.0}])
    write_log(tmp_path / "b", [{"iter": 3600, "loss": 1.0, "ms_per_step": 1000.0}])  # one hour
    r = run("dev/train_time.py", str(tmp_path / "a"), str(tmp_path / "b"))
    lines = r.stdout.splitlines()
    assert lines == [f"{tmp_path / 'a'}: 25 steps, 5s (0.00 h)", f"{tmp_path / 'b'}: 3,600 steps, 1h00m (1.00 h)",
                     "total: 2 runs, 1.0 h of training"]


@pytest.mark.slow
def test_a_missing_or_broken_log_is_a_one_line_error(tmp_path):
    r = run("dev/train_time.py", str(tmp_path), check=False)
    assert r.returncode == 1 and "cannot read" in r.stderr and "train.py --out_dir" in r.stderr
    (tmp_path / "log.jsonl").write_text('{"iter": 1, "ms_per_step": 5}\n{"ms_per_step": 5}\n')
    r = run("dev/train_time.py", str(tmp_path), check=False)
    assert r.returncode == 1 and "log.jsonl:2: not a row of train.py's log" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
