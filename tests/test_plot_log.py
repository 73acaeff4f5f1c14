"""tools/plot_log.py: a run's log.jsonl becomes a PNG of its loss curves; a broken log is a one-line error."""
import json

import pytest

from conftest import run

ROWS = [{"iter": 0, "val_loss": 3.0, "val_ce": 2.0, "val_mse": 1.0}] + [
    {"iter": i, "loss": 3.0 / i, "ce": 2.0 / i, "mse": 1.0 / i, "lr": 1e-3} for i in range(1, 11)] + [
    {"iter": 10, "val_loss": 0.5, "val_ce": 0.3, "val_mse": 0.2}]


@pytest.mark.slow
def test_a_log_becomes_a_png(tmp_path):
    (tmp_path / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    r = run("tools/plot_log.py", str(tmp_path))
    assert f"wrote {tmp_path / 'loss.png'} (10 logged steps, 2 evaluations)" in r.stdout
    png = (tmp_path / "loss.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl", "loss.png"]  # no temporary file left


@pytest.mark.slow
@pytest.mark.parametrize("log,expected", [
    (None, "cannot read"),
    ('{"iter": 1, "loss": 2}\nnot json\n', "log.jsonl:2: not a row of train.py's log"),
    ('{"iter": 1, "lr": 0.1}\n', "holds no loss yet"),
])
def test_a_missing_or_broken_log_is_a_one_line_error(tmp_path, log, expected):
    if log is not None:
        (tmp_path / "log.jsonl").write_text(log)
    r = run("tools/plot_log.py", str(tmp_path), check=False)
    assert r.returncode == 1 and expected in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "loss.png").exists()
