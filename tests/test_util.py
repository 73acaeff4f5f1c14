"""util.py: failed writes, threads, the Python version, Ctrl-C and | head (--help too): one line or none."""
import os
import subprocess
import sys

import pytest
import torch
from conftest import ROOT

from util import pick_device, run_main, why_not_written


def test_a_write_torch_refuses_says_why_in_the_oss_words(tmp_path):
    def why(text):
        return why_not_written(RuntimeError(text), str(tmp_path))
    assert why("[enforce fail at inline_container.cc:747] . open file failed with strerror: Operation not permitted") \
        == "Operation not permitted"
    assert why("[enforce fail at inline_container.cc:626] . unexpected pos 64 vs 0\nmore") == "unexpected pos 64 vs 0"
    written = why("PytorchStreamWriter failed writing file data/0: file write failed")
    assert written.startswith("PytorchStreamWriter failed writing file data/0: file write failed; ")
    assert "MiB of disk" in written


def test_on_the_cpu_torch_runs_one_thread_unless_asked(monkeypatch):
    saved = torch.get_num_threads()
    try:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        assert pick_device("cpu") == "cpu" and torch.get_num_threads() == 1
        pick_device("cpu", threads=2)
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        pick_device("cpu")
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(saved)


@pytest.mark.slow
def test_an_older_python_gets_one_line(monkeypatch):
    import runpy
    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
    with pytest.raises(SystemExit) as e:
        runpy.run_path(os.path.join(ROOT, "util.py"))
    assert str(e.value).startswith("error: Python") and "needs Python 3.11 or newer" in str(e.value)
    if os.path.exists(old := os.path.expanduser("~/.pyenv/versions/3.10.13/bin/python")):
        r = subprocess.run([old, "-c", "import sys; sys.path.insert(0, '.'); import util"], cwd=ROOT, capture_output=True,
                           text=True)
        assert r.returncode == 1 and r.stderr.strip().startswith("error: Python 3.10.13 is too old") and "\n" not in r.stderr.strip()


@pytest.mark.slow
def test_ctrl_c_and_head_end_a_command_in_one_line_or_none(checkpoint):
    def interrupted():
        raise KeyboardInterrupt
    with pytest.raises(SystemExit) as e:
        run_main(interrupted)
    assert e.value.code == 130
    lines = "".join(f"(0.{i:03d}+0.5)=[?]\n" for i in range(400))
    p = subprocess.Popen(f"{sys.executable} sample.py --ckpt={checkpoint} --show=400 | head -n 1", shell=True, cwd=ROOT,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(lines, timeout=120)
    assert out.count("\n") == 1 and "Traceback" not in err and "BrokenPipe" not in err, err
    # configurator.py's --help
    for script in ("train.py", "tools/curves.py"):
        p = subprocess.Popen([sys.executable, script, "--help"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.close()  # | head -0
        err = p.stderr.read().decode()
        assert p.wait() == 141 and "Traceback" not in err and "BrokenPipe" not in err, err
