"""
The two things every stage does the same way: write a file atomically, and pick the device.
Any script (prepare/, tokenize_numbers.py, train.py, sample.py, eval.py, ...) may import it.
"""
import math
import os
from contextlib import contextmanager


@contextmanager
def atomic_file(path):
    """
    Yield a temporary path next to `path` to write to; on success it is synced and renamed to
    `path`, so a crash never leaves half a file under the real name (an old file stays whole until
    the rename). On an error the temporary file is removed. The temporary name keeps the
    extension (x.tmp.npy), as np.save and netCDF4 expect.
    """
    root, ext = os.path.splitext(path)
    tmp = f"{root}.tmp{ext}"
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def atomic_write_text(path, text):
    """Write text (UTF-8) to path atomically."""
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def format_number(x, digits=6):
    """A number as short text: `digits` significant digits, no trailing zeros, 0 for -0, NaN as 'nan'
    (the datasets' literals, predictions and table cells all use it)."""
    if math.isnan(x):
        return "nan"
    s = f"{x:.{digits}g}"
    return "0" if s in ("0", "-0") else s


def pick_device(device="auto"):
    """'auto' becomes cuda if a GPU is there, else mps (Apple), else cpu; anything else is kept."""
    if device != "auto":
        return device
    import torch  # here: the data stages import this module without needing torch
    if torch.cuda.is_available():
        return "cuda"
    return "mps" if torch.backends.mps.is_available() else "cpu"
