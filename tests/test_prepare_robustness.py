"""A prepare run owns its folder while it writes (a second prepare run and tokenize_numbers.py are refused), a
SIGTERM always stops it, even where a library swallows the exit, and no stop or failure during the swap of a
dataset leaves a folder holding neither the old dataset nor the new one."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, run
from helpers import one_line_error

LOCKS = ("prepare.lock", "tokenize.lock")


def prepare(out, *flags, check=True):
    return run("prepare/arithmetic.py", "--size=tiny", "--workers=1", "--out", str(out), *flags, check=check)


def dataset_bytes(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(folder) for f in files}


def sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_prepare_run_is_refused_a_folder_another_prepare_run_is_writing(tmp_path):
    prepare(tmp_path)
    assert not [n for n in LOCKS if (tmp_path / n).exists()]  # a finished run leaves no lock
    before = dataset_bytes(tmp_path)
    other = sleeper()
    try:
        (tmp_path / "prepare.lock").write_text(str(other.pid))
        error = one_line_error(prepare(tmp_path, "--force", "--seed=2", check=False))
        assert f"being written by another prepare run, process {other.pid}" in error
        assert dataset_bytes(tmp_path) == {**before, "prepare.lock": str(other.pid).encode()}  # its lock stays
    finally:
        other.kill()
        other.wait()
    prepare(tmp_path, "--force", "--seed=2")  # the lock of a process that has ended stops nothing
    assert json.loads((tmp_path / "meta.json").read_text())["seed"] == 2
    assert not [n for n in LOCKS if (tmp_path / n).exists()]


def test_tokenize_numbers_is_refused_a_folder_a_prepare_run_is_writing(tmp_path, monkeypatch):
    import common
    prepare(tmp_path)
    tried = []

    def meta_and_a_tokenizer(out, meta):  # a tokenize_numbers.py run starts while the dataset is written
        tried.append(subprocess.run([sys.executable, "tokenize_numbers.py", str(tmp_path), "--encoding=xval",
                                     "--workers=1"], cwd=ROOT, capture_output=True, text=True))
        return real(out, meta)
    real = common.write_meta
    monkeypatch.setattr(common, "write_meta", meta_and_a_tokenizer)
    prepare(tmp_path, "--force", "--seed=2")
    assert tried[0].returncode != 0 and f"pid {os.getpid()}" in tried[0].stderr, tried[0].stderr
    assert not (tmp_path / "xval").exists() and not [n for n in LOCKS if (tmp_path / n).exists()]


def test_a_sigterm_whose_exit_a_library_swallows_still_stops_the_run():
    """numpy's lazy import of numpy.random catches everything, the SystemExit of a SIGTERM's handler included."""
    code = ("import signal, sys; sys.path.insert(0, 'prepare'); import common\n"
            "def make_sample(rng, split):\n"
            "    try:\n"
            "        signal.raise_signal(signal.SIGTERM)\n"
            "    except BaseException:\n"
            "        pass\n"
            "    return 'x'\n"
            "common.one_line_errors(); common.generate_split(make_sample, 'train', 0, 200_000, 1, 1)\n"
            "print('went on')")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 143 and "went on" not in r.stdout, r.stderr


def test_a_sigterm_at_any_move_of_the_swap_leaves_one_whole_dataset(tmp_path, monkeypatch):
    import common
    prepare(tmp_path / "new", "--seed=2")
    new = {k: v for k, v in dataset_bytes(tmp_path / "new").items() if k != "meta.json"}
    real, k = os.renames, 0
    try:
        while True:
            out = tmp_path / f"d{k}"
            prepare(out)
            run("tokenize_numbers.py", str(out), "--encoding=xval", "--workers=1")
            moves = []

            def stopped_at_move_k(old, new):
                moves.append(old)
                if len(moves) == k + 1:
                    signal.raise_signal(signal.SIGTERM)
                return real(old, new)
            monkeypatch.setattr(common.os, "renames", stopped_at_move_k)
            r = prepare(out, "--force", "--seed=2", check=False)
            monkeypatch.undo()
            if len(moves) <= k:
                break  # every move of the swap has been tried
            assert r.returncode == 143, (k, r.stderr)
            after = dataset_bytes(out)
            assert json.loads(after.pop("meta.json"))["seed"] == 2 and after == new, (k, moves[k], sorted(after))
            assert sorted(os.listdir(out)) == ["meta.json", "test.txt", "train.txt", "val.txt"]  # no stage, no lock
            k += 1
    finally:
        common.STOPPED.clear()  # the stop was this test's, not a later in-process run's
    assert k > 10  # the old dataset, its vocabulary and arrays, and the new one's files


def test_a_new_file_that_cannot_come_in_puts_the_old_dataset_back(tmp_path, monkeypatch):
    import common
    prepare(tmp_path)
    run("tokenize_numbers.py", str(tmp_path), "--encoding=xval", "--workers=1")
    before = dataset_bytes(tmp_path)
    real = os.renames

    def stuck(old, new):
        if old.endswith(".tmp/meta.json") and new == str(tmp_path / "meta.json"):  # the swap's last move
            raise PermissionError(1, "Operation not permitted", old)
        return real(old, new)
    monkeypatch.setattr(common.os, "renames", stuck)
    r = prepare(tmp_path, "--force", "--seed=2", check=False)
    assert r.returncode != 0 and "cannot replace" in r.stderr and "is as it was" in r.stderr
    assert dataset_bytes(tmp_path) == before and sorted(os.listdir(tmp_path)) == ["meta.json", "test.txt", "train.txt",
                                                                                 "val.txt", "vocab.json", "xval"]


@pytest.mark.slow
def test_two_prepare_runs_on_one_folder_the_second_is_refused_naming_the_first(tmp_path):
    prepare(tmp_path)
    before = dataset_bytes(tmp_path)
    first = subprocess.Popen([sys.executable, "prepare/planets.py", "--size=small", "--workers=1", "--force",
                              "--out", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while not (tmp_path / "prepare.lock").exists() and time.time() < deadline:
            time.sleep(0.05)
        error = one_line_error(prepare(tmp_path, "--force", "--seed=2", check=False))
        assert f"process {first.pid}" in error
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 143
    finally:
        first.kill()
    assert dataset_bytes(tmp_path) == before  # the old dataset, and neither run's lock
