"""dev/gpu_claims.py: the dry run goes end to end and a second invocation skips what is finished;
a command running past the time budget is stopped and a stopped training continues with --resume."""
import os
import subprocess
import sys
import time

import pytest
from conftest import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "dev"))
import gpu_claims  # noqa: E402


def in_process(calls):
    """A stand-in for gpu_claims.run: the project's scripts run in this process (the suite's fast path)."""
    def fake_run(cmd, log_path, deadline):
        calls.append(cmd[1:])
        r = run(*cmd[1:], check=False)
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        with open(log_path, "a") as log:
            log.write(r.stdout + r.stderr)
        if r.returncode != 0:
            raise SystemExit(f"error: {' '.join(cmd[1:])} failed:\n{r.stdout}\n{r.stderr}")
        return True
    return fake_run


def table_rows(path):
    """{first cell: cells} of every body row of the markdown tables in path."""
    rows = {}
    for line in open(path, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and not set(cells[0]) <= set("-") and cells[0] not in ("encoding", "run"):  # not a header
            rows.setdefault(cells[0], []).append(cells)
    return rows


@pytest.mark.slow
def test_dry_run_writes_one_row_per_encoding_and_a_second_invocation_skips_everything(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(gpu_claims, "run", in_process(calls))
    monkeypatch.chdir(ROOT)  # main() works from the repository root; the test's folder comes back afterwards
    out = str(tmp_path / "gpu")
    gpu_claims.main(["--dry-run", "--out", out])
    scripts = [c[0] for c in calls]
    assert scripts.count("train.py") == 5 and scripts.count("eval.py") == 5
    assert scripts.count("prepare/lookup.py") == 1 and scripts.count("prepare/planets.py") == 1

    lookup, planets = table_rows(os.path.join(out, "lookup.md")), table_rows(os.path.join(out, "planets.md"))
    assert sorted(e for e in lookup if not e.startswith("the mean")) == ["fp15", "p10", "xval"]
    assert all(len(lookup[e]) == 1 and lookup[e][0][1] == "4" for e in ("xval", "p10", "fp15"))  # steps done
    assert lookup["the mean of the dictionary's values (no key matching)"][0][2] == "4"  # its n: the samples evaluated
    assert sorted(planets) == ["b1999", "xval"] and all(len(planets[e]) == 2 for e in planets)  # test and OoD tables
    assert planets["xval"][0][1] == "4" and planets["xval"][0][3] not in ("—", "")  # xVal's Δt is always a number
    runs = table_rows(os.path.join(out, "runs.md"))
    assert sorted(runs) == ["lookup_fp15", "lookup_p10", "lookup_xval", "planets_b1999", "planets_xval"]
    for name in runs:
        assert os.path.exists(os.path.join(out, name, "eval.json")) and os.path.exists(os.path.join(out, name, "eval_test.png"))
    assert os.path.exists(os.path.join(out, "planets_xval", "eval_test_ood_stepsize.png"))
    readme = os.path.join(out, "README.md")
    with open(readme, "a") as f:
        f.write("Verdict: written by hand.\n")

    calls.clear()
    before = os.path.getmtime(os.path.join(out, "lookup_xval", "eval.json"))
    gpu_claims.main(["--dry-run", "--out", out])
    assert calls == []  # nothing prepared, trained or evaluated again
    assert os.path.getmtime(os.path.join(out, "lookup_xval", "eval.json")) == before
    assert open(readme).read().endswith("Verdict: written by hand.\n")  # the skeleton is never replaced
    assert table_rows(os.path.join(out, "lookup.md")) == lookup


def test_a_stopped_training_continues_with_resume_and_a_finished_one_is_skipped(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(gpu_claims, "run", lambda cmd, log_path, deadline: calls.append(cmd) or False)
    plan = gpu_claims.Plan(gpu_claims.argparse.Namespace(dry_run=True, out=str(tmp_path), budget=540, work=None))
    run_dir = plan.run_dir("lookup", "xval")
    os.makedirs(run_dir)
    open(os.path.join(run_dir, "log.jsonl"), "w").close()
    assert not gpu_claims.trained(plan, "lookup", "xval")  # stopped before its first checkpoint: starts again
    assert calls[-1][-1] == "--overwrite=True"
    open(os.path.join(run_dir, "ckpt_latest.pt"), "w").close()
    assert not gpu_claims.trained(plan, "lookup", "xval")
    assert calls[-1][-1] == "--resume" and "--overwrite=True" not in calls[-1]
    open(os.path.join(run_dir, "trained"), "w").close()
    assert gpu_claims.trained(plan, "lookup", "xval") and len(calls) == 2
    plan.start -= 540  # the budget spent: nothing new is started
    assert not gpu_claims.trained(plan, "lookup", "p10") and len(calls) == 2


def test_a_command_past_its_deadline_is_stopped_and_a_failing_one_is_an_error(tmp_path):
    log = str(tmp_path / "x.log")
    t0 = time.time()
    assert not gpu_claims.run([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"],
                              log, deadline=time.time() + 1.5)
    assert time.time() - t0 < 15
    text = open(log).read()
    assert "started" in text and "stopped at the time budget" in text
    assert gpu_claims.run([sys.executable, "-c", "print('fine')"], log, deadline=time.time() + 60)
    with pytest.raises(SystemExit, match="failed \\(exit 3\\).*x.log"):
        gpu_claims.run([sys.executable, "-c", "import sys; sys.exit(3)"], log, deadline=time.time() + 60)


@pytest.mark.slow
def test_results_of_a_dry_run_are_never_mixed_with_a_gpu_run(tmp_path):
    def claims(*args):
        return subprocess.run([sys.executable, "dev/gpu_claims.py", *args], cwd=ROOT, capture_output=True, text=True)
    r = claims("--dry-run")
    assert r.returncode == 2 and "--dry-run needs --out" in r.stderr
    os.makedirs(tmp_path / "gpu")
    with open(tmp_path / "gpu" / "plan.json", "w") as f:
        f.write('{"dry_run": true}\n')
    r = claims("--out", str(tmp_path / "gpu"))
    assert r.returncode == 1 and "holds the results of a dry run" in r.stderr
