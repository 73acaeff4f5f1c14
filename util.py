"""What every stage does the same way: write a file atomically, take a lock, format a number or a
time span, pick the device. torch is imported only where needed: data stages skip it."""

import math
import os
import re
import shlex
import shutil
import signal
import stat
import sys
import tempfile
from contextlib import contextmanager, suppress

if sys.version_info < (3, 11):
    sys.exit(
        f"error: Python {'.'.join(map(str, sys.version_info[:3]))} is too old: this code needs"
        " Python 3.11 or newer (the tokenizer's regular expressions use possessive quantifiers)"
    )


class TextError(ValueError):
    """Bad input text; the message names the file, line or sample and what was expected."""


def check_regular(path):
    """Refuse a path that is no plain file (a FIFO or device would block or never end)."""
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        kind = "folder" if os.path.isdir(path) else "FIFO, device or socket"
        raise TextError(f"{path} is a {kind}; expected a file")


# the permissions of a new file
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def open_new(path, mode="wb"):
    """Open a new file at `path`, never through a symbolic link or into a file left at that name:
    what stands there is removed first."""

    def create(name, flags):
        return os.open(name, flags | os.O_EXCL, 0o666)

    try:
        return open(path, mode, opener=create)
    except FileExistsError:
        os.remove(path)
        return open(path, mode, opener=create)


@contextmanager
def atomic_file(path):
    """Yield a temporary path beside `path` (x.<random>.tmp.npy: np.save wants the extension); on
    success it is synced and renamed to `path` with the permissions of the file it replaces, so a
    crash never leaves half a file; on an error it is removed."""
    folder, name = os.path.split(path)
    root, ext = os.path.splitext(name)
    fd, tmp = tempfile.mkstemp(prefix=f"{root}.", suffix=f".tmp{ext}", dir=folder or ".")
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        try:
            old = os.stat(path, follow_symlinks=False)
            mode = old.st_mode & 0o7777 if stat.S_ISREG(old.st_mode) else 0o666 & ~_UMASK
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def lock_holder(path):
    """(pid, alive) of the process a lock file names; (None, False) without a readable lock."""
    try:
        with open(path) as f:
            pid = int((f.read().split() or [0])[0])
    except (OSError, ValueError):
        return None, False
    if not 0 <= pid < 2**31:
        return None, False
    try:
        if pid > 0:
            os.kill(pid, 0)
        return pid, pid > 0
    # a live process of another user
    except PermissionError:
        return pid, True
    except OSError:
        return pid, False


def take_lock(path, on_stale=None, text=None):
    """Create the lock file `path` (text: its content, the pid first) in one step, a hard link: None
    once taken, else the pid of the live process holding it. A dead one's is replaced after
    on_stale(pid)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open_new(tmp, "w") as f:
        f.write(text or str(os.getpid()))
    try:
        while True:
            try:
                return os.link(tmp, path)
            except FileExistsError:
                pid, alive = lock_holder(path)
                if alive:
                    return pid
                if on_stale:
                    on_stale(pid)
                if os.path.exists(path):
                    os.remove(path)
    finally:
        os.remove(tmp)


def release_lock(path):
    """Remove the lock file `path` if it names this process."""
    if lock_holder(path)[0] == os.getpid():
        with suppress(OSError):
            os.remove(path)


def worker_signals():
    """A pool worker's signals: Ctrl-C is the parent's to report; SIGTERM ends it at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def atomic_write_text(path, text):
    """Write text (UTF-8) to path atomically."""
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def format_number(x, digits=6):
    """A number as short text: `digits` significant digits, no trailing zeros, 0 for -0, 'nan'."""
    if math.isnan(x):
        return "nan"
    s = f"{x:.{digits}g}"
    return "0" if s in ("0", "-0") else s


def format_duration(s):
    """Seconds as a person reads them: 42s, 12m30s, 3h05m, 19.4 days."""
    if s >= 86400:
        return f"{s / 86400:.1f} days"
    if s >= 3600:
        return f"{s // 3600:.0f}h{s % 3600 // 60:02.0f}m"
    return f"{s // 60:.0f}m{s % 60:02.0f}s" if s >= 60 else f"{s:.0f}s"


def why_not_written(error, folder):
    """Why a write failed, in a line: a full disk says how much is free."""
    import errno

    def left():
        return f"{shutil.disk_usage(folder).free / 2**20:,.0f} MiB of disk space left in {folder}"

    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{error.strerror}; {left()}: free some"
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}{': ' + error.filename if error.filename else ''}"
    # torch's zip writer: its C++ line, the OS's words after "strerror: "
    detail = re.sub(r"^\[enforce fail at [^]]*\][ .]*", "", str(error).strip().split("\n")[0])
    detail = detail.split("strerror: ")[-1]
    return detail + (f"; {left()}" if "write" in detail.lower() else "")


def shell_line(*words):
    """A command to copy and paste: each word quoted where the shell needs it (spaces, say)."""
    return " ".join(map(shlex.quote, words))


def exit_on_ctrl_c(where=lambda: ""):
    """From now on Ctrl-C ends the process with one line (rank 0's), `interrupted (Ctrl-C)` +
    where(), and exit code 130."""

    def interrupted(*_):
        if int(os.environ.get("RANK", 0)) == 0:
            print(f"interrupted (Ctrl-C){where()}", file=sys.stderr)
        sys.exit(130)

    signal.signal(signal.SIGINT, interrupted)


def run_main(main):
    """Run a script's main(): Ctrl-C is one line and exit code 130; a reader that stops early
    (| head) ends it quietly."""
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C)", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)


def pick_device(device="auto", threads=0):
    """'auto': cuda, else mps, else cpu; a device not there is an error. On the CPU, `threads`
    threads (0: $OMP_NUM_THREADS, else 1: a core another job takes stalls every thread)."""
    import torch

    mps = torch.backends.mps.is_available()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "mps" if mps else "cpu"
    if device == "cpu":
        torch.set_num_threads(threads or int(os.environ.get("OMP_NUM_THREADS", 1)))
    kind, _, index = device.partition(":")
    count = torch.cuda.device_count() if kind == "cuda" else int(kind != "mps" or mps)
    if count <= int(index or 0):
        raise SystemExit(
            f"error: --device={device}, but torch finds {count} {kind.upper()}"
            f" device{'s' * (count != 1)} here; use --device=auto or --device=cpu"
        )
    return device
