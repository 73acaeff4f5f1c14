"""What every stage does the same way: write a file atomically, take a lock, format a number or a
time span, read a checkpoint, pick the device. torch is imported only where needed: data stages
skip it."""

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

# every script imports this file before the tokenizer compiles its regexes
if sys.version_info < (3, 11):
    sys.exit(
        f"error: Python {'.'.join(map(str, sys.version_info[:3]))} is too old: this code needs"
        " Python 3.11 or newer (the tokenizer's regular expressions use possessive quantifiers)"
    )


class TextError(ValueError):
    """Bad input text; the message names the file, line or sample and what was expected."""


def check_regular(path):
    """A file to read must be a plain file: a folder fails, a FIFO or a device would block or never
    end."""
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        kind = "folder" if os.path.isdir(path) else "FIFO, device or socket"
        raise TextError(f"{path} is a {kind}; expected a file")


# the permissions a new file gets (the umask read once, at import)
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def open_new(path, mode="wb"):
    """Open a new file at `path`, never through a symbolic link or into a file left at that name (a
    shared folder): what stands there is removed first, a link's target never touched."""

    def create(name, flags):
        return os.open(name, flags | os.O_EXCL, 0o666)

    try:
        return open(path, mode, opener=create)
    except FileExistsError:
        os.remove(path)
        return open(path, mode, opener=create)


@contextmanager
def atomic_file(path):
    """Yield a new temporary path beside `path` (x.<random>.tmp.npy: np.save and netCDF4 want the
    extension); on success it is synced and renamed to `path` with the permissions of the file it
    replaces, so a crash never leaves half a file under the real name; on an error it is removed."""
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
            pid = int((f.read().split() or [0])[0])  # "pid" or "pid launch" (train.py)
    except (OSError, ValueError):
        return None, False
    # garbage (a pid no process can have) is no lock
    if not 0 <= pid < 2**31:
        return None, False
    try:
        if pid > 0:
            os.kill(pid, 0)
        return pid, pid > 0
    except PermissionError:  # a live process of another user
        return pid, True
    except OSError:  # the process has ended
        return pid, False


def take_lock(path, on_stale=None, text=None):
    """Create the lock file `path` naming this process (text: its content, the pid first) in one
    step, a hard link, so no process reads it empty: None once taken, else the pid of the live
    process holding it. A lock whose process has ended is replaced after on_stale(pid)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open_new(tmp, "w") as f:
        f.write(text or str(os.getpid()))
    try:
        while True:
            try:
                return os.link(tmp, path)  # None
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
    """Remove the lock file `path` if it names this process (one in a folder made read-only stays:
    the next run takes it over)."""
    if lock_holder(path)[0] == os.getpid():
        with suppress(OSError):
            os.remove(path)


def worker_signals():
    """A pool worker's signals: Ctrl-C (sent to the whole process group) is the parent's to report,
    and SIGTERM, with which the pool ends its workers, ends a worker at once."""
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
    """A time span in seconds as a person reads it: 42s, 12m30s, 3h05m, 19.4 days."""
    if s >= 86400:
        return f"{s / 86400:.1f} days"
    if s >= 3600:
        return f"{s // 3600:.0f}h{s % 3600 // 60:02.0f}m"
    return f"{s // 60:.0f}m{s % 60:02.0f}s" if s >= 60 else f"{s:.0f}s"


def load_checkpoint(path, device="cpu", mmap=False):
    """A train.py checkpoint read as data only (foreign files cannot run code); a bad file is a
    one-line error naming it. mmap: tensors are mapped, not read (to look at its settings)."""
    import torch

    try:
        check_regular(path)
        checkpoint = torch.load(path, map_location=device, weights_only=True, mmap=mmap)
    except Exception as e:
        if mmap:  # a file torch cannot map: say what a plain load says of it
            return load_checkpoint(path, device)
        detail = str(e).strip().splitlines()[0] if str(e).strip() else "no detail"
        # never torch's advice to load it unsafely
        if "weights_only" in str(e) or "Weights only" in detail:
            detail = (
                "it holds Python objects besides tensors and plain data, which are never loaded:"
                " they could run code"
            )
        raise SystemExit(
            f"error: {path} is not a readable checkpoint ({type(e).__name__}: {detail})"
        )
    kinds = {"model": dict, "model_args": dict, "text_tokens": list, "config": dict}
    if missing := [k for k in kinds if not isinstance(checkpoint, dict) or k not in checkpoint]:
        raise SystemExit(
            f"error: {path} is not a checkpoint written by train.py (no {', '.join(missing)})"
        )
    if wrong := [k for k, kind in kinds.items() if not isinstance(checkpoint[k], kind)]:
        raise SystemExit(f"error: {path}: {', '.join(wrong)} of the wrong kind (an edited file?)")
    if not isinstance(checkpoint["model_args"].get("encoding"), str):
        raise SystemExit(f"error: {path}: its model_args have no encoding (an edited file?)")
    if not all(isinstance(t, str) for t in checkpoint["text_tokens"]):
        raise SystemExit(f"error: {path}: text_tokens holds something other than strings")
    # a compiled or DDP-wrapped model's weights carry a prefix
    checkpoint["model"] = {
        re.sub(r"^(?:_orig_mod\.|module\.)+", "", k): v for k, v in checkpoint["model"].items()
    }
    return checkpoint


# peak dense bf16 FLOP/s for MFU; the first key in the device's name counts: PCIe and NVL before SXM
PEAK_FLOPS = {
    "H100 PCIe": 756e12,
    "H100 NVL": 835e12,
    "H100": 989e12,
    "H200": 989e12,
    "GH200": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "A10G": 70e12,
    "RTX 4090": 165e12,
    "RTX 3090": 71e12,
}


def peak_flops(device_name):
    """The bf16 dense peak of a GPU from its name (torch.cuda.get_device_name), else None."""
    return next((value for key, value in PEAK_FLOPS.items() if key in device_name), None)


def why_not_written(error, folder):
    """The reason a write failed, for a one-line error: a full disk says how much is free."""
    import errno

    def left():
        return f"{shutil.disk_usage(folder).free / 2**20:,.0f} MiB of disk space left in {folder}"

    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{error.strerror}; {left()}: free some"
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}{': ' + error.filename if error.filename else ''}"
    # torch's zip writer: its C++ line
    detail = re.sub(r"^\[enforce fail at [^]]*\][ .]*", "", str(error).strip().split("\n")[0])
    # "open file failed with strerror: Operation not permitted": the OS's words
    detail = detail.split("strerror: ")[-1]
    # torch's zip writer says a full disk in its own words
    return detail + (f"; {left()}" if "write" in detail.lower() else "")


def shell_line(*words):
    """A command to copy and paste: each word quoted where the shell needs it (spaces, say)."""
    return " ".join(map(shlex.quote, words))


def exit_on_ctrl_c(where=lambda: ""):
    """From now on Ctrl-C ends the process with one line, `interrupted (Ctrl-C)` + where() (rank 0's
    alone under torchrun), and the exit code 130 shells expect."""

    def interrupted(*_):
        if int(os.environ.get("RANK", 0)) == 0:
            print(f"interrupted (Ctrl-C){where()}", file=sys.stderr)
        sys.exit(130)

    signal.signal(signal.SIGINT, interrupted)


def run_main(main):
    """Run a script's main() as users expect of a command line tool: Ctrl-C is one line and exit
    code 130, and a reader that stops early (| head) ends the script quietly."""
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C)", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # the reader has gone: nothing more to print, and no traceback about it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)


def pick_device(device="auto", threads=0):
    """'auto' becomes cuda if a GPU is there, else mps (Apple), else cpu; a device that is not
    there is an error. On the CPU, torch runs `threads` threads (0: $OMP_NUM_THREADS, else 1): the
    small models meant for a CPU gain little from more, and a core another job takes stalls every
    thread (9-12× slower with 2 threads beside one busy process; docs/benchmarks.md)."""
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
