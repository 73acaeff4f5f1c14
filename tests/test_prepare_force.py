"""--force replaces what a prepare run wrote and nothing else: other files in the folder stay."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import run
from helpers import one_line_error, train


def prepare(out, *flags, check=True):
    return run("prepare/arithmetic.py", "--size=tiny", "--workers=1", "--out", str(out), *flags, check=check)


def test_force_keeps_files_a_prepare_run_did_not_write(tmp_path):
    (tmp_path / "lab_notes.txt").write_text("notes\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "paper.tex").write_text("draft\n")
    r = prepare(tmp_path, check=False)
    assert r.returncode != 0 and "lab_notes.txt" in r.stderr and "sub/" in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["lab_notes.txt", "sub"]  # refused: nothing written
    r = prepare(tmp_path, "--force")
    assert "left alone" in r.stdout and "lab_notes.txt, sub/" in r.stdout
    run("tokenize_numbers.py", str(tmp_path), "--encoding=xval", "--workers=1")
    (tmp_path / "xval" / "mine.md").write_text("a note among the arrays\n")
    prepare(tmp_path, "--force", "--seed=2")
    assert (tmp_path / "lab_notes.txt").read_text() == "notes\n"
    assert (tmp_path / "sub" / "paper.tex").read_text() == "draft\n"
    assert sorted(os.listdir(tmp_path / "xval")) == ["mine.md"]  # the arrays of the old dataset are gone
    assert not (tmp_path / "vocab.json").exists()
    assert json.loads((tmp_path / "meta.json").read_text())["seed"] == 2


def test_force_in_a_repository_clone_deletes_nothing_of_it(tmp_path):
    for name in ("requirements.txt", "README.md", "model.py"):
        (tmp_path / name).write_text(name)
    r = prepare(tmp_path, check=False)
    assert "not a dataset" in r.stderr and "requirements.txt" in r.stderr
    prepare(tmp_path, "--force")
    for name in ("requirements.txt", "README.md", "model.py"):
        assert (tmp_path / name).read_text() == name
    assert (tmp_path / "train.txt").exists() and (tmp_path / "meta.json").exists()


def test_a_file_of_yours_that_a_run_would_overwrite_is_refused(tmp_path):
    """Your own train.txt (a plain-text dataset, or no meta.json at all) is never overwritten."""
    (tmp_path / "train.txt").write_text("{a:1}\n")
    (tmp_path / "val.txt").write_text("{a:2}\n")
    run("tokenize_numbers.py", str(tmp_path), "--plain-text", "--encoding=xval", "--workers=1")
    for folder in (tmp_path, tmp_path / "no_meta"):
        if folder != tmp_path:
            folder.mkdir()
            (folder / "train.txt").write_text("{a:1}\n")
        before = sorted(os.listdir(folder))
        r = prepare(folder, "--force", check=False)
        assert r.returncode != 0 and "train.txt" in r.stderr and "would overwrite" in r.stderr
        assert sorted(os.listdir(folder)) == before and (folder / "train.txt").read_text() == "{a:1}\n"


def test_force_waits_for_a_tokenize_run_that_is_reading_the_dataset(tmp_path):
    prepare(tmp_path)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "tokenize.lock").write_text(str(live.pid))
        before = (tmp_path / "train.txt").read_text()
        r = prepare(tmp_path, "--force", "--seed=2", check=False)
        assert r.returncode != 0 and f"being tokenized by process {live.pid}" in r.stderr
        assert (tmp_path / "train.txt").read_text() == before and (tmp_path / "meta.json").exists()
    finally:
        live.kill()
        live.wait()
    prepare(tmp_path, "--force", "--seed=2")  # the lock of a process that has ended does not stop it
    assert json.loads((tmp_path / "meta.json").read_text())["seed"] == 2


@pytest.mark.slow
def test_a_full_disk_ends_a_prepare_script_with_one_line():
    from conftest import ROOT
    code = ("import sys; sys.path.insert(0, 'prepare'); import common, errno, os; common.one_line_errors(); "
            "raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))")  # what a write to a full disk raises
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("error: the disk filled up while writing the dataset (No space left on device)")
    code = ("import sys; sys.path.insert(0, 'prepare'); import common, errno, os; common.one_line_errors(); "
            "raise OSError(errno.EFBIG, os.strerror(errno.EFBIG), 'out/train.txt')")  # past a file-size limit
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and r.stderr == "error: File too large: out/train.txt; nothing partly written was kept\n"
    r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'prepare'); import common; "
                        "common.one_line_errors(); 1 / 0"], cwd=ROOT, capture_output=True, text=True)
    assert "Traceback" in r.stderr and "ZeroDivisionError" in r.stderr  # any other error keeps its traceback
    r = subprocess.run([sys.executable, "-c", "import sys; hook = sys.excepthook; sys.path.insert(0, 'prepare'); "
                        "import common, arithmetic, era5, lookup, planets, text; print(sys.excepthook is hook)"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.stdout.strip() == "True", r.stderr  # importing a prepare module leaves the interpreter's hook alone
    for script in ("arithmetic", "lookup", "planets", "era5", "era5_synthetic", "text"):  # each script sets it itself
        source = open(f"{ROOT}/prepare/{script}.py").read()
        assert 'if __name__ == "__main__":\n    one_line_errors()' in source, script


def dataset_bytes(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(folder) for f in files}


def test_a_force_that_fails_while_writing_leaves_the_old_dataset_whole(tmp_path, monkeypatch):
    import errno

    import common
    prepare(tmp_path)
    run("tokenize_numbers.py", str(tmp_path), "--encoding=xval", "--workers=1")
    before = dataset_bytes(tmp_path)
    written = []

    def full_after_one(out, split, lines):  # the disk fills up at the second split
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(split)
        return real(out, split, lines)
    real = common.write_split
    monkeypatch.setattr(common, "write_split", full_after_one)
    r = prepare(tmp_path, "--force", "--seed=2", check=False)
    assert r.returncode != 0 and written == ["train"]
    after = dataset_bytes(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith(".prepare-")} == before  # meta, splits, vocab, arrays
    monkeypatch.undo()
    prepare(tmp_path, "--force", "--seed=2")  # the next run replaces it, and the left-over folder with it
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".prepare-")] and not (tmp_path / "xval").exists()
    assert json.loads((tmp_path / "meta.json").read_text())["seed"] == 2


@pytest.mark.slow
def test_a_prepare_stopped_by_sigterm_leaves_the_old_dataset_whole_and_nothing_else(tmp_path):
    import signal
    import time

    from conftest import ROOT
    prepare(tmp_path)
    before = dataset_bytes(tmp_path)
    p = subprocess.Popen([sys.executable, "prepare/planets.py", "--size=small", "--workers=1", "--force",
                          "--out", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not [f for f in os.listdir(tmp_path) if f.startswith(".prepare-")] and time.time() < deadline:
        time.sleep(0.05)  # writing has begun
    p.send_signal(signal.SIGTERM)
    try:
        assert p.wait(timeout=60) == 143
    finally:
        p.kill()  # a run that did not stop must not go on generating beside the other tests
    assert dataset_bytes(tmp_path) == before  # the old dataset, and no half-written new one


@pytest.mark.slow
def test_ctrl_c_in_a_prepare_with_workers_is_one_line_and_leaves_the_old_dataset_whole(tmp_path):
    import signal
    import time

    from conftest import ROOT
    prepare(tmp_path)
    before = dataset_bytes(tmp_path)
    p = subprocess.Popen([sys.executable, "prepare/planets.py", "--size=small", "--workers=2", "--force",
                          "--out", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    deadline = time.time() + 60
    while not [f for f in os.listdir(tmp_path) if f.startswith(".prepare-")] and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1)  # the pool's workers are drawing samples
    os.killpg(p.pid, signal.SIGINT)  # Ctrl-C reaches the parent and every worker
    _, err = p.communicate(timeout=60)
    assert p.returncode in (130, -signal.SIGINT) and "Traceback" not in err, err  # a shell shows both as 130
    assert err.strip().splitlines()[-1] == "interrupted (Ctrl-C); nothing partly written was kept", err
    assert dataset_bytes(tmp_path) == before


@pytest.mark.slow
def test_a_pool_worker_interrupted_inside_a_library_ends_the_run_as_ctrl_c_does():
    """REBOUND's integrate raises KeyboardInterrupt itself on a SIGINT, in a pool worker too, where a pool would wait
    for the lost worker forever."""
    import signal

    from conftest import ROOT
    code = ("import sys; sys.path.insert(0, 'prepare'); import common\n"
            "def make_sample(rng, split):\n    raise KeyboardInterrupt\n"
            "common.one_line_errors(); common.generate_split(make_sample, 'train', 0, 200, 1, 2)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode in (130, -signal.SIGINT) and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "interrupted (Ctrl-C); nothing partly written was kept"


def test_a_force_that_cannot_move_an_old_file_aside_puts_everything_back(tmp_path, monkeypatch):
    import common
    prepare(tmp_path)
    run("tokenize_numbers.py", str(tmp_path), "--encoding=xval", "--workers=1")
    before = dataset_bytes(tmp_path)
    real = os.renames

    def stuck(old, new):  # an immutable array (root ignores chmod, so the refusal is simulated)
        if old.endswith("train.ids.npy") and ".old" in new:
            raise PermissionError(1, "Operation not permitted", old)
        return real(old, new)
    monkeypatch.setattr(common.os, "renames", stuck)
    r = prepare(tmp_path, "--force", "--seed=2", check=False)
    assert r.returncode != 0 and "cannot replace" in r.stderr and "is as it was" in r.stderr
    assert {k: v for k, v in dataset_bytes(tmp_path).items() if not k.startswith(".prepare-")} == before


def test_prepare_force_removes_the_tokenized_arrays_and_vocabulary_it_replaces(data, tmp_path):
    d = shutil.copytree(os.path.join(data), str(tmp_path / "d"))
    (tmp_path / "d" / "test_ood.txt").write_text("{a:1}a=1\n")  # a split of an earlier dataset
    (tmp_path / "d" / "notes.md").write_text("mine\n")
    run("prepare/lookup.py", "--size=tiny", "--out", d, "--workers=1", "--force")
    assert sorted(os.listdir(d)) == ["meta.json", "notes.md", "test.txt", "test_ood.txt", "train.txt", "val.txt"]
    assert open(os.path.join(d, "test_ood.txt")).read() != "{a:1}a=1\n"
    error = one_line_error(train(d, str(tmp_path / "out"), "--max_iters=1", check=False))
    assert "vocab.json not found; run: python tokenize_numbers.py" in error
