import atexit
import contextlib
import functools
import glob
import io
import os
import pathlib
import runpy
import shutil
import signal
import subprocess
import sys
import traceback
from unittest import mock

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
for path in (ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "prepare")):
    sys.path.insert(0, path)
from setting_checks import read_ranges


@functools.cache
def read(path):
    """A file of the repository (path relative to its root) as text, read once a session."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def in_root(*patterns):
    """The repository's files that match the glob patterns, relative to its root."""
    paths = [p for pattern in patterns for p in glob.glob(os.path.join(ROOT, pattern), recursive=True)]
    return sorted(os.path.relpath(p, ROOT) for p in paths)


# Scripts run in the test process (a new one spends seconds importing torch), unless they set their
# own environment or compile (compiled code caches by process); these with one worker only (their
# default is every core).
IN_PROCESS = ("train.py", "sample.py", "eval.py", "tools/curves.py")
WITH_WORKERS = ("tokenize_numbers.py", "prepare/arithmetic.py", "prepare/lookup.py", "prepare/planets.py",
                "prepare/era5.py")

# The scripts whose settings have RANGES, and all their ranges
RANGED = ("train.py", "sample.py", "eval.py", "tools/curves.py", "tools/probe.py", "tools/baselines.py")
RANGE = {k: v for p in RANGED for k, v in read_ranges(os.path.join(ROOT, p)).items()}


def run(*args, check=True, input=None, env=None, process=False):
    """`python *args` from the repository root: a CompletedProcess. check: a failure raises, with both
    streams. process: always a new process."""
    one_worker = "--workers=1" in args or ("--workers", "1") in zip(args, args[1:])
    if env is None and not process and "--compile=True" not in args and (
            args[0] in IN_PROCESS or args[0] in WITH_WORKERS and one_worker):
        r = run_in_process(args, input)
    else:
        r = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, input=input, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
    return r


def run_in_process(args, input):
    """Run a script as __main__ in this process, with Python's exit semantics."""
    import torch
    script = os.path.join(ROOT, args[0])
    # real streams, whose reconfigure() works
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True) for _ in range(2))
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8")
    threads = torch.get_num_threads()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    code, at_exit, register = 0, [], atexit.register

    def at_script_exit(f, *args):
        """The project's exit handlers (the lock release) run as the script ends, others at ours."""
        source = getattr(f, "__code__", None)
        if source and os.path.dirname(source.co_filename) == ROOT:
            return at_exit.append((f, args))
        return register(f, *args)
    with contextlib.ExitStack() as restore:
        for patch in (mock.patch.object(sys, "argv", [script, *args[1:]]),
                      mock.patch.object(sys, "stdin", stdin),
                      mock.patch.object(sys, "path", [os.path.dirname(script), *sys.path]),
                      mock.patch.dict(os.environ), contextlib.chdir(ROOT)):
            restore.enter_context(patch)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                    mock.patch("atexit.register", at_script_exit):
                runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            if isinstance(e.code, str):
                print(e.code, file=err)
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception:
            traceback.print_exc(file=err)
            code = 1
        finally:
            for f, a in at_exit:
                f(*a)
            torch.set_num_threads(threads)
            for s, handler in handlers.items():
                signal.signal(s, handler)
    return subprocess.CompletedProcess(args, code, *(s.buffer.getvalue().decode() for s in (out, err)))


# -- fixtures the test files share
@pytest.fixture(scope="session")
def data(tmp_path_factory):
    """The tiny arithmetic set (ops2), tokenized in xVal and p10."""
    from helpers import prepared
    return prepared(tmp_path_factory, "data", "prepare/arithmetic.py", "--variant=ops2",
                    encodings=("xval", "p10"))


@pytest.fixture
def own_data(data, tmp_path):
    """A copy of the tiny dataset that a test may damage."""
    return shutil.copytree(data, str(tmp_path / "ops2"))


@pytest.fixture
def two_steps(checkpoint):
    return pathlib.Path(checkpoint).parent


@pytest.fixture
def tokenized(tmp_path):
    from helpers import tokenize, write
    write(tmp_path)
    tokenize(tmp_path, "--plain-text")
    return tmp_path


@pytest.fixture(scope="session")
def checkpoint(data, tmp_path_factory):
    """The best checkpoint of a tiny xVal model trained two steps on `data`."""
    from helpers import train
    out = str(tmp_path_factory.mktemp("run"))
    train(data, out, "--max_iters=2")
    return os.path.join(out, "ckpt_best.pt")
