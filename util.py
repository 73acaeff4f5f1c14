"""What every stage shares: atomic writes, locks, formatting, the device."""

import errno
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
from contextlib import contextmanager, suppress

if sys.version_info < (3, 11):
    sys.exit(f"error: Python {sys.version.split()[0]} is too old: needs Python 3.11 or newer")


class TextError(ValueError):
    """Bad input text; the message names the file or line."""


def check_regular(path):
    """Refuse a path that is no plain file (a FIFO would block)."""
    if os.path.exists(path) and not os.path.isfile(path):
        kind = "folder" if os.path.isdir(path) else "FIFO, device or socket"
        raise TextError(f"{path} is a {kind}; expected a file")


# the permissions of a new file
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def open_new(path, mode="wb"):
    """Open a new file at `path`, never through a symbolic link."""
    with suppress(FileNotFoundError):
        os.remove(path)
    return open(path, mode.replace("w", "x"))


@contextmanager
def atomic_file(path):
    """A temporary path beside `path`, renamed to `path` on success: never half a file."""
    folder, name = os.path.split(path)
    root, ext = os.path.splitext(name)
    fd, tmp = tempfile.mkstemp(prefix=f"{root}.", suffix=f".tmp{ext}", dir=folder or ".")
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        mode = 0o666 & ~_UMASK
        with suppress(FileNotFoundError):
            old = os.stat(path, follow_symlinks=False)
            if stat.S_ISREG(old.st_mode):
                mode = old.st_mode & 0o7777
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def lock_holder(path):
    """(pid, alive) of the process a lock file names, or (None, False)."""
    try:
        with open(path) as f:
            pid = int((f.read().split() or [0])[0])
    except (OSError, ValueError):
        return None, False
    if not 0 < pid < 2**31:
        return None, False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return pid, False
    except PermissionError:
        pass
    return pid, True


def take_lock(path, on_stale=None, text=None):
    """Take the lock file `path`: None, else the live holder's pid (a dead one's is replaced after
    on_stale(pid))."""
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
    """A pool worker leaves Ctrl-C to its parent; SIGTERM ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def atomic_write_text(path, text):
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def format_number(x, digits=6):
    """A number to `digits` significant digits, 0 for -0."""
    s = f"{x:.{digits}g}"
    return "0" if s in ("0", "-0") else s


def format_duration(s):
    """42s, 12m30s, 3h05m, 19.4 days."""
    if s >= 86400:
        return f"{s / 86400:.1f} days"
    if s >= 3600:
        return f"{s // 3600:.0f}h{s % 3600 // 60:02.0f}m"
    return f"{s // 60:.0f}m{s % 60:02.0f}s" if s >= 60 else f"{s:.0f}s"


def why_not_written(error, folder):
    def left():
        return f"{shutil.disk_usage(folder).free / 2**20:,.0f} MiB of disk space left in {folder}"

    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{error.strerror}; {left()}: free some"
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}{': ' + error.filename if error.filename else ''}"
    # torch's zip writer
    detail = re.sub(r"^\[enforce fail at [^]]*\][ .]*", "", str(error).strip().split("\n")[0])
    detail = detail.split("strerror: ")[-1]
    return detail + (f"; {left()}" if "write" in detail.lower() else "")


def run_main(main):
    """Run main(): Ctrl-C is one line; | head ends it quietly."""
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C)", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)


def pick_device(device="auto", threads=0):
    """'auto': cuda, else mps, else cpu; on the CPU, `threads` (0: $OMP_NUM_THREADS, else 1)."""
    import torch

    mps = torch.backends.mps.is_available()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "mps" if mps else "cpu"
    if device == "cpu":
        torch.set_num_threads(threads or int(os.environ.get("OMP_NUM_THREADS", 1)))
    kind, _, index = device.partition(":")
    count = torch.cuda.device_count() if kind == "cuda" else int(kind != "mps" or mps)
    if count <= int(index or 0):
        why = f"finds {count} {kind.upper()} devices here; use --device=auto or --device=cpu"
        raise SystemExit(f"error: --device={device}, but torch {why}")
    return device
