"""tokenize_numbers.py: whole datasets only, bad text named by line, failed or concurrent runs change nothing."""
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, run
from helpers import one_line_error, tokenize, write

from dataset import Split


def arrays(d, enc="xval"):
    return {f: (d / enc / f).read_bytes() for f in os.listdir(d / enc)}


def popen(*args):
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def temporaries(d):
    return [f for _, _, files in os.walk(d) for f in files if ".tmp" in f]


def test_plain_text_must_be_declared_and_its_splits_are_the_split_files(tmp_path, capsys):
    (tmp_path / "train.txt").write_text("{a:1}\n{a:2}\n")
    (tmp_path / "README.txt").write_text("my notes\n")
    with pytest.raises(SystemExit, match="meta.json not found.*--plain-text"):
        tokenize(tmp_path)
    with pytest.raises(SystemExit, match="no val.txt; put samples"):
        tokenize(tmp_path, "--plain-text")
    assert "README.txt not taken as splits" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path)) == ["README.txt", "train.txt"]
    for split, splits, flags in (("val", ["train", "val"], ["--plain-text"]), ("test", ["test", "train", "val"], [])):
        (tmp_path / f"{split}.txt").write_text("{a:3}\n")
        tokenize(tmp_path, *flags)  # then a plain-text dataset's new split, without the flag
        assert json.loads((tmp_path / "meta.json").read_text())["splits"] == splits
        assert len(Split(str(tmp_path), split, "xval")) == 1
    os.remove(tmp_path / "meta.json")  # a prepare run cut short
    with pytest.raises(SystemExit, match="meta.json not found"):
        tokenize(tmp_path, "--rebuild-vocab")
    with pytest.raises(FileNotFoundError, match="not a complete dataset"):
        Split(str(tmp_path), "train", "xval")


@pytest.mark.parametrize("name, text, error", [
    ("train.txt", b"", "train.txt:1: empty file"),
    ("val.txt", b"", "val.txt:1: empty file"),
    ("train.txt", b"{a:1}\n{b:2}\n{\xe9:3}\n", r"train.txt:3: not UTF-8 text \(byte 0xe9 at column 2\)"),
    ("train.txt", b'{"a":1,"b":-5}\n' * 3 + b'{"a":1.2.3,"b":--5}\n', r"train.txt:4: malformed number '1.2.3'"),
    ("train.txt", b"{a:1.5}\r{a:2}\r{a:3}\r", "train.txt:1: a carriage return inside the line"),
])
def test_bad_text_names_file_and_line(tmp_path, name, text, error):
    write(tmp_path)
    (tmp_path / name).write_bytes(text)
    r = run("tokenize_numbers.py", str(tmp_path), "--plain-text", "--workers=1", check=False)
    assert re.search(error, one_line_error(r)) and sorted(os.listdir(tmp_path)) == ["train.txt", "val.txt"]


def test_val_after_train_and_an_unseen_token(tmp_path, capsys):
    write(tmp_path, train="{station:a,t:1.5}\n", val="{station:a,t:2}\n{station:b,t:3}\n")
    (tmp_path / "test.txt").write_text("{station:a,t:1e-50}\n")
    with pytest.raises(SystemExit, match="val.txt:2: 'b' is not in the vocabulary.*--rebuild-vocab"):
        tokenize(tmp_path, "--plain-text")
    assert sorted(os.listdir(tmp_path)) == ["test.txt", "train.txt", "val.txt"]  # a failed run leaves nothing
    (tmp_path / "train.txt").write_text("{station:a,t:1.5}\n{station:b,t:-250}\n")
    capsys.readouterr()
    tokenize(tmp_path, "--plain-text")
    out = capsys.readouterr().out
    assert out.index("  train:") < out.index("  val:") and "largest |x| 250" in out
    assert "note: test: 1 numbers below 1.4e-45" in out  # float32 has no 1e-50
    assert json.loads((tmp_path / "xval" / "test.json").read_text())["flushed_to_zero"] == 1


def test_a_held_lock_refuses_a_dead_ones_is_cleaned(tokenized, capsys):
    before, lock = arrays(tokenized), tokenized / "tokenize.lock"
    lock.write_text(str(os.getppid()))  # a live process holds it
    with pytest.raises(SystemExit, match=rf"tokenize.lock: another tokenize_numbers.py run \(pid {os.getppid()}\)"):
        tokenize(tokenized, "--encoding=xval")
    assert arrays(tokenized) == before
    gone = popen("-c", "import os; print(os.getpid())").communicate()[0].strip()
    lock.write_text(gone)  # a process that has ended
    (tokenized / "xval" / f"train.ids.{gone}.tmp.npy").write_bytes(b"half")
    capsys.readouterr()
    tokenize(tokenized)
    assert f"removing {lock} of process {gone}" in capsys.readouterr().out
    assert sorted(os.listdir(tokenized / "xval")) == sorted(before) and not lock.exists()


@pytest.mark.parametrize("name", ["xval", "xval/val.json", "tokenize.lock", "vocab.json"])
def test_a_symlink_where_it_writes_is_refused(tokenized, name):
    shutil.rmtree(tokenized / "xval") if name == "xval" else (tokenized / name).unlink(missing_ok=True)
    (tokenized / "elsewhere").mkdir()
    (tokenized / name).symlink_to(tokenized / "elsewhere" / ("" if name == "xval" else "mine"))
    with pytest.raises(SystemExit, match=f"{tokenized / name} is a symbolic link, which this run writes; remove it"):
        tokenize(tokenized, "--rebuild-vocab")
    assert os.listdir(tokenized / "elsewhere") == []


@pytest.mark.parametrize("error, says", [
    (OSError(errno.ENOSPC, "No space left on device"), r"arrays of (.*) failed: No space left on device; [\d,]+ MiB of disk space left in \1: free some"),
    (PermissionError(errno.EACCES, "Permission denied", "xval"), "Permission denied.*nothing was changed"),
])
def test_a_failed_write_keeps_the_old_arrays(tokenized, monkeypatch, error, says):
    before = arrays(tokenized)
    (tokenized / "val.txt").write_text("{b:0.25}\n{a:7}\n")

    def fails(out, header):  # half the bytes, then the error
        out.write(b"\x93NUMPY")
        raise error
    monkeypatch.setattr("numpy.lib.format.write_array_header_1_0", fails)
    with pytest.raises(SystemExit, match=says) as e:
        tokenize(tokenized)
    assert arrays(tokenized) == before and not (tokenized / "tokenize.lock").exists()  # no temporaries
    assert ("disk space left" in str(e.value)) == (error.errno == errno.ENOSPC)


@pytest.mark.slow
def test_two_concurrent_runs_never_mix_arrays(tmp_path):
    lines = [f'{{"a":[{i * 0.5},{-i}],"b":{i % 7}}}' for i in range(60_000)]
    write(tmp_path, "\n".join(lines) + "\n", "\n".join(lines[:100]) + "\n")
    runs = [popen("tokenize_numbers.py", str(tmp_path), "--workers=1", "--plain-text") for _ in range(2)]
    results = [(r.wait(), r.stderr.read()) for r in runs]
    assert any(code == 0 for code, _ in results)
    for code, err in results:
        assert code == 0 or "another tokenize_numbers.py run" in err, err
    split = Split(str(tmp_path), "train", "xval")
    assert len(split) == 60_000 and split[59_999][1][3:5].tolist() == [29999.5, -59999]
    assert not temporaries(tmp_path)


@pytest.mark.slow
def test_sigterm_keeps_the_old_arrays(tokenized):
    before = arrays(tokenized)
    (tokenized / "train.txt").write_text("".join(f"{{a:{i * 0.5},b:{-i}}}\n" for i in range(1_000_000)))
    p = popen("tokenize_numbers.py", str(tokenized), "--plain-text", "--workers=1", "--encoding=all")
    deadline = time.time() + 60
    while not temporaries(tokenized):
        assert time.time() < deadline and p.poll() is None, p.poll() and p.communicate()
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == 143 and arrays(tokenized) == before
    assert not temporaries(tokenized) and not (tokenized / "tokenize.lock").exists()


@pytest.mark.slow
def test_one_of_many_processes_takes_a_lock(tmp_path):
    # the lock is created whole (a hard link): none reads it empty as stale
    script = ("import sys, time; sys.path.insert(0, sys.argv[1]); from util import take_lock\n"
              "time.sleep(max(0, float(sys.argv[3]) - time.time()))\n"
              "print('held' if take_lock(sys.argv[2]) is None else 'refused'); time.sleep(1)")
    for round in range(3):
        path, start = str(tmp_path / f"x{round}.lock"), time.time() + 1
        procs = [popen("-c", script, ROOT, path, str(start)) for _ in range(6)]
        assert sorted(p.communicate()[0].strip() for p in procs) == ["held"] + ["refused"] * 5


@pytest.mark.slow
def test_the_benchmark_writes_nothing(tmp_path):
    (tmp_path / "train.txt").write_text("".join(f"{{a:[{i},{i / 3:.4g}],b:-{i}e-3}}\n" for i in range(50)))
    r = run("tools/bench_tokenize.py", str(tmp_path), "--lines", "20", "--repeats", "1")
    assert "20 lines, 3.0 numbers per line" in r.stdout and "| all five, one pass |" in r.stdout
    assert os.listdir(tmp_path) == ["train.txt"]
