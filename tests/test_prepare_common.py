"""prepare/common.py: --force, locks, leftovers, and one whole dataset whatever stops a run."""
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, read, run
from helpers import dataset_bytes, failed, one_line_error, tokenize, train

import common

SPLITS = ["meta.json", "test.txt", "train.txt", "val.txt"]


def prepare(out, *flags, check=True, tokenized=False):
    r = run("prepare/arithmetic.py", "--size=tiny", "--workers=1", "--out", str(out), *flags, check=check)
    if tokenized:
        tokenize(out)
    return r


def python(*args):
    """`python *args` in a new process from the repository root, prepare/ first on its path."""
    path = os.pathsep.join(["prepare", os.environ.get("PYTHONPATH", "")])
    return run(*args, check=False, env={**os.environ, "PYTHONPATH": path})


def listing(folder):
    return sorted(os.listdir(folder))


def seed_of(folder):
    return json.loads((folder / "meta.json").read_text())["seed"]


def test_force_keeps_your_files(tmp_path):
    mine = ("README.md", "lab_notes.txt", "model.py", "requirements.txt", "sub/paper.tex")
    (tmp_path / "sub").mkdir()
    for name in mine:
        (tmp_path / name).write_text(name)
    listed = "README.md, lab_notes.txt, model.py, requirements.txt, sub/"
    error = one_line_error(prepare(tmp_path, check=False))
    assert "not a dataset" in error and listed in error
    assert listing(tmp_path) == [*mine[:4], "sub"]
    r = prepare(tmp_path, "--force", tokenized=True)
    assert f"left alone, not written by a prepare run: {listed}" in r.stdout
    (tmp_path / "xval" / "mine.md").write_text("a note among the arrays\n")
    (tmp_path / "p10").symlink_to(tmp_path / "sub")  # a linked folder is never emptied
    prepare(tmp_path, "--force", "--seed=2")
    assert all((tmp_path / name).read_text() == name for name in mine)
    assert listing(tmp_path / "xval") == ["mine.md"] and not (tmp_path / "vocab.json").exists()
    assert seed_of(tmp_path) == 2 and (tmp_path / "train.txt").exists()


def test_a_train_txt_of_a_plain_text_dataset_or_beside_no_meta_json_is_never_overwritten(tokenized):
    train_txt = (tokenized / "train.txt").read_text()
    (tokenized / "no_meta").mkdir()
    (tokenized / "no_meta" / "train.txt").write_text(train_txt)
    for folder in (tokenized, tokenized / "no_meta"):
        before = listing(folder)
        r = prepare(folder, "--force", check=False)
        failed(r, "train.txt", "would overwrite")
        assert listing(folder) == before and (folder / "train.txt").read_text() == train_txt


@pytest.mark.parametrize("lock, who", [("prepare.lock", "being written by another prepare run,"),
                                       ("tokenize.lock", "tokenize_numbers.py,")])
def test_a_held_folder_then_its_leftovers(tmp_path, lock, who):
    prepare(tmp_path)
    assert listing(tmp_path) == SPLITS  # no lock
    before = dataset_bytes(tmp_path)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / lock).write_text(str(other.pid))
        error = one_line_error(prepare(tmp_path, "--force", "--seed=2", check=False))
        assert f"{who} process {other.pid}" in error and f"delete {tmp_path / lock}" in error
        assert dataset_bytes(tmp_path) == {**before, lock: str(other.pid).encode()}
    finally:
        other.kill()
        other.wait()
    left = tmp_path / "left"  # a killed run's lock and stage alone
    (left / f".prepare-{other.pid}.tmp").mkdir(parents=True)
    (left / lock).write_text(str(other.pid))
    assert prepare(left).stdout.count("left by a run that ended") == 2 and listing(left) == SPLITS
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "vocab.json").write_text("{}")  # a file of ours alone is named
    assert "not a dataset (vocab.json)" in one_line_error(prepare(tmp_path / "v", check=False))
    (tmp_path / f".prepare-{other.pid}.tmp").mkdir()
    r = prepare(tmp_path, "--force", "--seed=2")  # a dead process's lock
    assert r.stdout.count("left by a run that ended") == 2 and seed_of(tmp_path) == 2
    assert listing(tmp_path) == sorted(SPLITS + ["left", "v"])


def test_tokenizing_waits_for_prepare(tmp_path, monkeypatch):
    prepare(tmp_path)
    tried, real = [], common.write_meta

    def meta_and_a_tokenizer(out, meta):
        tried.append(run("tokenize_numbers.py", str(tmp_path), "--workers=1", check=False))
        return real(out, meta)
    monkeypatch.setattr(common, "write_meta", meta_and_a_tokenizer)
    prepare(tmp_path, "--force", "--seed=2")
    assert tried[0].returncode != 0 and f"pid {os.getpid()}" in tried[0].stderr, tried[0].stderr
    assert listing(tmp_path) == SPLITS  # no arrays, no lock


FAILED = "; nothing partly written was kept"


@pytest.mark.slow
@pytest.mark.parametrize("code, exits, last", [
    (f"raise OSError({errno.EFBIG}, 'File too large', 'out/train.txt')", (1,), "error: File too large: out/train.txt"
     + FAILED),
    ("1 / 0", (1,), "ZeroDivisionError: division by zero"),
    # REBOUND raises KeyboardInterrupt itself: a pool must not wait forever
    ("def make_sample(rng, split):\n    raise KeyboardInterrupt\n"
     "common.generate_split(make_sample, 'train', 0, 200, 1, 2)", (130, -signal.SIGINT), "interrupted (Ctrl-C)" + FAILED),
    # numpy's lazy imports catch everything, a SIGTERM's SystemExit included
    ("import signal\ndef make_sample(rng, split):\n    try:\n        signal.raise_signal(signal.SIGTERM)\n"
     "    except BaseException:\n        pass\n    return 'x'\n"
     "common.generate_split(make_sample, 'train', 0, 200_000, 1, 1)\nprint('went on')", (143,), None),
])
def test_a_stop_or_failed_write_is_one_line(code, exits, last):
    code = "import common; common.one_line_errors()\n" + code
    r = python("-c", code)
    assert r.returncode in exits and "went on" not in r.stdout, r.stderr
    if last:
        traceback = "1 / 0" in code  # any other error keeps its traceback
        assert r.stderr.strip().splitlines()[-1] == last and ("Traceback" in r.stderr) == traceback
        assert r.stderr.count("\n") == 1 or traceback or exits != (1,)  # a failed write: one line alone


@pytest.mark.parametrize("full, says", [("out", "out"), ("tmp", "TMPDIR tmp")])
def test_a_full_disk_names_the_fuller_of_out_and_tmpdir(monkeypatch, capsys, full, says):
    monkeypatch.setattr(common, "OUT", ["out"])
    monkeypatch.setattr(common.tempfile, "gettempdir", lambda: "tmp")
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: shutil._ntuple_diskusage(9, 9, int(folder != full)))
    common._one_line(OSError, OSError(errno.ENOSPC, "No space left on device"), None)
    assert capsys.readouterr().err.startswith(f"error: the disk of {says} is full (No space left on device); free "
                                              "some space there;")


@pytest.mark.slow
def test_scripts_set_one_line_errors(tmp_path):
    r = python("-c", "import sys; hook = sys.excepthook; "
               "import common, arithmetic, era5, lookup, planets, text; print(sys.excepthook is hook)")
    assert r.stdout.strip() == "True", r.stderr
    for script in ("arithmetic", "lookup", "planets", "era5", "era5_synthetic", "text"):
        source = read(f"prepare/{script}.py")
        assert 'if __name__ == "__main__":\n    one_line_errors()' in source, script
    (tmp_path / "x.zip").write_bytes(b"PK\x03\x04rest of a zip")
    r = python("prepare/era5.py", str(tmp_path / "x.zip"), "--out", str(tmp_path / "o"))
    failed(r, "x.zip", "unzip it first")


@pytest.mark.slow
@pytest.mark.parametrize("stop, exits", [(signal.SIGTERM, (143,)), (signal.SIGINT, (130, -signal.SIGINT))])
def test_a_stopped_run_keeps_the_old_dataset(tmp_path, stop, exits):
    prepare(tmp_path)
    before = dataset_bytes(tmp_path)
    p = subprocess.Popen([sys.executable, "prepare/planets.py", "--size=small", "--workers=2", "--force", "--out",
                          str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    deadline = time.time() + 60
    while not [f for f in os.listdir(tmp_path) if f.startswith(".prepare-")] and time.time() < deadline:
        time.sleep(0.05)
    try:
        assert f"process {p.pid}" in one_line_error(prepare(tmp_path, "--force", "--seed=2", check=False))
        time.sleep(1)  # the pool's workers are drawing samples
        # Ctrl-C reaches every worker
        os.kill(p.pid, stop) if stop == signal.SIGTERM else os.killpg(p.pid, stop)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode in exits and "Traceback" not in err and dataset_bytes(tmp_path) == before, err
    if stop == signal.SIGINT:
        assert err.strip().splitlines()[-1] == "interrupted (Ctrl-C)" + FAILED, err


def test_sigterm_at_any_move_of_the_swap(tmp_path, monkeypatch):
    monkeypatch.setitem(common.SIZES, "tiny", (20, 5, 5))
    prepare(tmp_path / "new", "--seed=2")
    new = {k: v for k, v in dataset_bytes(tmp_path / "new").items() if k != "meta.json"}
    prepare(tmp_path / "old", tokenized=True)
    real, k, moves = os.renames, 0, [None]

    def stopped_at_move_k(old, new):
        moves.append(old)
        if len(moves) == k + 1:
            signal.raise_signal(signal.SIGTERM)
        return real(old, new)
    try:
        while len(moves) > k:
            out, moves = shutil.copytree(tmp_path / "old", tmp_path / f"d{k}"), []
            common.STOPPED.clear()  # the last run's stop
            with monkeypatch.context() as m:
                m.setattr(common.os, "renames", stopped_at_move_k)
                r = prepare(out, "--force", "--seed=2", check=False)
            if len(moves) > k:
                assert r.returncode == 143, (k, r.stderr)
                after = dataset_bytes(out)
                assert json.loads(after.pop("meta.json"))["seed"] == 2 and after == new, (k, moves[k], sorted(after))
                assert listing(out) == SPLITS  # no stage, no lock
                k += 1
    finally:
        common.STOPPED.clear()
    assert k > 10


@pytest.mark.parametrize("fails", ["the second split's write", "an old array's move", "the new meta.json's move"])
def test_a_failed_force_keeps_the_old_dataset(tmp_path, monkeypatch, fails):
    prepare(tmp_path, tokenized=True)
    before, written = dataset_bytes(tmp_path), []
    real_write, real_move = common.atomic_write_text, os.renames

    def write(path, text):  # the disk fills up
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(os.path.basename(path))
        return real_write(path, text)

    def move(old, new):  # an immutable file (root ignores chmod, so the refusal is simulated)
        if (old.endswith("train.ids.npy") and ".old" in new if "array" in fails  # the last move aside
                else old.endswith(".tmp/meta.json") and new == str(tmp_path / "meta.json")):
            raise PermissionError(1, "Operation not permitted", old)
        return real_move(old, new)
    if "write" in fails:
        monkeypatch.setattr(common, "atomic_write_text", write)
    else:
        monkeypatch.setattr(common.os, "renames", move)
    r = prepare(tmp_path, "--force", "--seed=2", check=False)
    assert r.returncode != 0 and dataset_bytes(tmp_path) == before
    assert listing(tmp_path) == SPLITS + ["vocab.json", "xval"]  # no stage left
    assert ("cannot replace" in r.stderr and "is as it was" in r.stderr) == (written == [])
    assert written == (["train.txt"] if "write" in fails else [])
    monkeypatch.undo()
    prepare(tmp_path, "--force", "--seed=2")
    assert not (tmp_path / "xval").exists() and seed_of(tmp_path) == 2


def test_force_removes_old_arrays_and_vocab(data, tmp_path):
    d = shutil.copytree(data, tmp_path / "d")
    (d / "test_ood.txt").write_text("{a:1}a=1\n")  # a split of an earlier dataset
    (d / "notes.md").write_text("mine\n")
    run("prepare/lookup.py", "--size=tiny", "--out", str(d), "--workers=1", "--force")
    assert listing(d) == ["meta.json", "notes.md", "test.txt", "test_ood.txt", "train.txt", "val.txt"]
    assert (d / "test_ood.txt").read_text() != "{a:1}a=1\n"
    error = one_line_error(train(d, str(tmp_path / "out"), "--max_iters=1", check=False))
    assert "vocab.json not found; run: python tokenize_numbers.py" in error
