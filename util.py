"""
What every stage does the same way: write a file atomically, format a number, read a checkpoint,
pick the device. Any script (prepare/, tokenize_numbers.py, train.py, sample.py, eval.py, ...) may
import it; torch is imported only where needed, so the data stages do not load it.
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


def load_checkpoint(path, device="cpu"):
    """A train.py checkpoint; a truncated, empty or foreign file is a one-line error naming it."""
    import torch
    try:
        checkpoint = torch.load(path, map_location=device, weights_only=False)
    except Exception as e:  # truncated, empty or not a checkpoint at all
        raise SystemExit(f"error: {path} is not a readable checkpoint ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else 'no detail'})")
    missing = [k for k in ("model", "model_args", "text_tokens", "config")
               if not isinstance(checkpoint, dict) or k not in checkpoint]
    if missing:
        raise SystemExit(f"error: {path} is not a checkpoint written by train.py (no {', '.join(missing)})")
    return checkpoint


def pick_device(device="auto"):
    """'auto' becomes cuda if a GPU is there, else mps (Apple), else cpu; anything else is kept."""
    if device != "auto":
        return device
    import torch
    if torch.cuda.is_available():
        return "cuda"
    return "mps" if torch.backends.mps.is_available() else "cpu"
