"""dev/gpu_claims.py: a dry run end to end, a second one skips it all; a stopped command resumes."""
import os
import sys
import time

import pytest
from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "dev"))
import gpu_claims


def in_process(calls):
    """gpu_claims.run, noting each script and running it as the suite does."""
    def fake_run(cmd, log_path, deadline):
        calls.append(cmd[1])
        r = run(*cmd[1:])
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        with open(log_path, "a") as log:
            log.write(r.stdout + r.stderr)
        return True
    return fake_run


def table_rows(path):
    """{first cell: [cells of each row]} of the markdown tables' body rows."""
    rows = {}
    for line in open(path, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        header = set(cells[0]) <= set("-") or cells[0] in ("encoding", "run")
        if line.startswith("|") and not header:
            rows.setdefault(cells[0], []).append(cells)
    return rows


@pytest.mark.slow
def test_a_dry_run_writes_a_row_per_encoding_and_a_second_skips_all(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(gpu_claims, "run", in_process(calls))
    monkeypatch.chdir(ROOT)
    out = tmp_path / "gpu"
    gpu_claims.main(["--dry-run", "--out", str(out)])
    assert calls.count("train.py") == 5 and calls.count("eval.py") == 5
    assert calls.count("prepare/lookup.py") == 1 and calls.count("prepare/planets.py") == 1
    lookup, planets = (table_rows(out / f"{t}.md") for t in ("lookup", "planets"))
    assert sorted(e for e in lookup if not e.startswith("the mean")) == ["fp15", "p10", "xval"]
    for e in ("xval", "p10", "fp15"):
        assert len(lookup[e]) == 1 and lookup[e][0][1] == "4"  # steps done
    assert lookup["the mean of the dictionary's values (no key matching)"][0][2] == "4"
    assert sorted(planets) == ["b1999", "xval"] and all(len(planets[e]) == 2 for e in planets)
    assert planets["xval"][0][1] == "4" and planets["xval"][0][3] not in ("—", "")  # xVal's Δt
    runs = table_rows(out / "runs.md")
    assert sorted(runs) == ["lookup_fp15", "lookup_p10", "lookup_xval", "planets_b1999", "planets_xval"]
    for name in runs:
        assert {"eval.json", "eval_test.png"} <= set(os.listdir(out / name))
    assert (out / "planets_xval" / "eval_test_ood_stepsize.png").exists()
    readme = out / "README.md"
    with open(readme, "a") as f:
        f.write("Verdict: written by hand.\n")

    calls.clear()
    before = os.path.getmtime(out / "lookup_xval" / "eval.json")
    gpu_claims.main(["--dry-run", "--out", str(out)])
    assert calls == []
    assert os.path.getmtime(out / "lookup_xval" / "eval.json") == before
    assert readme.read_text().endswith("Verdict: written by hand.\n")
    assert table_rows(out / "lookup.md") == lookup


def test_a_stopped_training_resumes_a_finished_one_is_skipped(tmp_path, monkeypatch):
    calls = []

    def stopped(cmd, log_path, deadline):
        calls.append(cmd)
        return False
    monkeypatch.setattr(gpu_claims, "run", stopped)
    args = gpu_claims.argparse.Namespace(dry_run=True, out=str(tmp_path), budget=540, work=str(tmp_path))
    plan = gpu_claims.Plan(args)
    run_dir = tmp_path / "lookup_xval"
    run_dir.mkdir()
    for name, flag in (("log.jsonl", "--overwrite=True"), ("ckpt_latest.pt", "--resume")):
        (run_dir / name).touch()
        assert not gpu_claims.trained(plan, "lookup", "xval")
        assert calls[-1][-1] == flag
    assert "--overwrite=True" not in calls[-1]
    (run_dir / "trained").touch()
    assert gpu_claims.trained(plan, "lookup", "xval") and len(calls) == 2
    plan.start -= 540  # the budget spent
    assert not gpu_claims.trained(plan, "lookup", "p10") and len(calls) == 2


@pytest.mark.slow  # sh ignores the SIGINT: 10 s to the SIGKILL
def test_a_command_past_its_deadline_is_stopped_a_failing_one_an_error(tmp_path):
    log = tmp_path / "x.log"
    t0 = time.time()
    assert not gpu_claims.run(["sh", "-c", "echo started; sleep 60"], log, time.time() + 0.5)
    assert time.time() - t0 < 15
    assert "started" in log.read_text() and "stopped at the time budget" in log.read_text()
    assert gpu_claims.run(["sh", "-c", "echo fine"], log, deadline=time.time() + 60)
    with pytest.raises(SystemExit, match="failed \\(exit 3\\).*x.log"):
        gpu_claims.run(["sh", "-c", "exit 3"], log, time.time() + 60)


def test_a_dry_run_never_mixes_with_a_gpu_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as usage:
        gpu_claims.main(["--dry-run"])
    assert usage.value.code == 2 and "--dry-run needs --out" in capsys.readouterr().err
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "plan.json").write_text('{"dry_run": true}\n')
    with pytest.raises(SystemExit, match="holds the results of a dry run"):
        gpu_claims.main(["--out", str(tmp_path / "gpu")])
