"""
What every prepare script shares: the command-line flags, the split sizes, per-sample seeding that
makes the output independent of the worker count, compact JSON-like records, and writing a
dataset's splits (atomically, with util.py).

A prepare script defines `make_sample(rng, split) -> str` (one line of text) and calls
`write_dataset(...)`. Sample i of split s is drawn from its own generator seeded by
(seed, s, i), so the files are byte-identical whatever --workers is.
"""

import argparse
import atexit
import errno
import json
import math
import os
import re
import shutil
import signal
import sys
import time
from multiprocessing import Pool

import numpy as np

# the repository root
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from util import (  # noqa: E402
    atomic_file,
    atomic_write_text,
    format_number,
    lock_holder,
    worker_signals,
)


def _one_line(kind, error, traceback, default=sys.excepthook):
    """Ctrl-C, a full disk or any other failed read or write ends a prepare script with one line,
    not a traceback: its writes are staged (prepare_out_dir), so an earlier dataset in --out is as
    it was and no half file stays."""
    if issubclass(kind, KeyboardInterrupt):
        print("interrupted (Ctrl-C); nothing partly written was kept", file=sys.stderr)
    elif issubclass(kind, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        print(
            f"error: the disk filled up while writing the dataset ({error.strerror}); nothing"
            " partly written was kept: free some space and run again",
            file=sys.stderr,
        )
    elif issubclass(kind, OSError) and error.strerror:
        print(
            f"error: {error.strerror}{': ' + str(error.filename) if error.filename else ''};"
            " nothing partly written was kept",
            file=sys.stderr,
        )
    else:
        default(kind, error, traceback)


def one_line_errors():
    """Called by each prepare script when it runs as one (importing this module changes nothing); a
    SIGTERM ends it as Ctrl-C does, so that its half-written dataset is removed."""
    sys.excepthook = _one_line
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


# samples per split: (train, val, test); every extra test set (OoD) has the size of test
SIZES = {
    "tiny": (400, 50, 50),
    "small": (40_000, 5_000, 5_000),
    "paper": (1_000_000, 125_000, 125_000),
}


def _at_least(low):
    """An argparse type: an integer ≥ low."""

    def parse(text):
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer ≥ {low}, got {value}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its message for a non-integer
    return parse


def base_parser(description, default_out):
    """The flags every prepare script has: --out, --size, --seed, --workers, --force."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default=default_out, help=f"output directory (default {default_out})")
    p.add_argument(
        "--size",
        default="small",
        choices=list(SIZES),
        help="tiny: seconds, for tests; small: minutes on a laptop; paper: 1M/125k/125k",
    )
    p.add_argument(
        "--seed", type=_at_least(0), default=1337, help="fixes every sample (default 1337)"
    )
    p.add_argument(
        "--workers",
        type=_at_least(1),
        default=os.cpu_count() or 1,
        help="processes to use (default: all cores); does not change the output",
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing dataset in --out")
    return p


def sample_rng(seed, split_code, index):
    """The generator of one sample: a pure function of (seed, split, index)."""
    return np.random.default_rng(np.random.SeedSequence([seed, split_code, index]))


def fmt_number(x, digits):
    """A float as a sample's literal (`digits` significant digits); non-finite numbers are
    refused."""
    if not math.isfinite(x):
        raise ValueError(f"refusing to write the non-finite number {x!r} into a sample")
    return format_number(x, digits)


def dumps(obj, digits=4):
    """Compact JSON (no spaces) with floats written to `digits` significant digits."""
    if isinstance(obj, dict):
        return "{" + ",".join(f'"{k}":{dumps(v, digits)}' for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(dumps(v, digits) for v in obj) + "]"
    if isinstance(obj, (bool, np.bool_)):
        return "true" if obj else "false"
    if isinstance(obj, (int, np.integer)):
        return str(int(obj))
    if isinstance(obj, (float, np.floating)):
        return fmt_number(float(obj), digits)
    if isinstance(obj, str):
        return json.dumps(obj)
    raise TypeError(f"cannot write {type(obj).__name__} into a record")


STAGE = re.compile(r"\.prepare-\d+\.tmp")  # where a prepare run writes its dataset before swap_in
# what tokenize_numbers.py writes in <encoding>/
TOKENIZED = re.compile(r"\w+\.(ids|values|offsets|json|tmp)\b.*")


def _read_meta(out):
    """The meta.json in `out` as a dict, or None when there is none or it is not a dataset's."""
    try:
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
        return (
            meta
            if isinstance(meta, dict) and isinstance(meta.get("splits"), (dict, list))
            else None
        )
    except (OSError, ValueError):
        return None


def dataset_files(out):
    """
    (ours, others, prepared): the entries of `out` that a prepare run and the tokenizing of its
    dataset wrote (meta.json, the <split>.txt and <split>.ocean.txt of the splits it names,
    vocab.json, the tokenized files in <encoding>/ folders, atomic_file's temporary names of these
    and era5.py's scratch file), the others (a folder as "sub/"), and whether a prepare run's
    meta.json is there. The splits of a plain-text dataset (tokenize_numbers.py --plain-text) are
    the user's own text, not ours.
    """
    from tokenize_numbers import ENCODINGS

    meta = _read_meta(out)
    prepared = meta is not None and meta.get("dataset") != "plain text"
    names = {"vocab.json", ".raw.npy.tmp"} | ({"meta.json"} if meta is not None else set())
    if prepared:
        names |= {f"{s}{ext}" for s in meta["splits"] for ext in (".txt", ".ocean.txt")}
    # an interrupted write: atomic_file's x.<random>.tmp.json (or an older x.tmp.json)
    temporaries = re.compile(
        "|".join(
            rf"{re.escape(r)}\.(?:\w+\.)?tmp{re.escape(e)}" for r, e in map(os.path.splitext, names)
        )
    )
    ours, others = [], []
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if name in ENCODINGS and os.path.isdir(path):
            for f in sorted(os.listdir(path)):
                is_ours = TOKENIZED.fullmatch(f) and os.path.isfile(os.path.join(path, f))
                (ours if is_ours else others).append(f"{name}/{f}")
        elif (name in names or temporaries.fullmatch(name)) and os.path.isfile(path):
            ours.append(name)
        # a prepare run's new dataset, before its swap
        elif STAGE.fullmatch(name) and os.path.isdir(path):
            ours.append(name + "/")
        else:
            others.append(name + "/" if os.path.isdir(path) else name)
    return ours, others, prepared


def _some(names, n=6):
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def prepare_out_dir(out, force, writes):
    """Make `out` ready for a dataset whose files are `writes` (names in `out`), and return the
    folder to write it into, out/.prepare-<pid>.tmp: nothing of an earlier dataset goes until the
    new one is complete and swap_in() replaces it, so a failed or stopped run leaves `out` as it was
    (the folder is removed when the process ends). A folder holding files needs --force, which
    replaces only what an earlier prepare run wrote there; every other file stays and is named. A
    file this run would overwrite is refused unless a prepare run wrote it. Fails early if `out` is
    not writable."""
    if os.path.exists(out) and not os.path.isdir(out):
        sys.exit(f"error: --out {out} exists and is not a directory")
    if os.path.isdir(out) and os.listdir(out):
        ours, others, prepared = dataset_files(out)
        clash = [n for n in others if n in writes or n.rstrip("/") in writes]
        if clash and not prepared:
            sys.exit(
                f"error: {out} holds {_some(clash)}, which this run would overwrite but no prepare"
                " run wrote (no meta.json of a prepared dataset names it); move it away or choose"
                " another --out"
            )
        if not force:
            what = (
                "a dataset (meta.json)"
                if prepared
                else f"files that are not a dataset ({_some(others)})"
            )
            sys.exit(
                f"error: {out} already holds {what}; pass --force to replace what a prepare run"
                " wrote there (other files stay), or choose another --out"
            )
        pid, tokenizing = lock_holder(os.path.join(out, "tokenize.lock"))
        if tokenizing:
            sys.exit(
                f"error: {out} is being tokenized by process {pid} ({out}/tokenize.lock); wait for"
                " that tokenize_numbers.py run to end before --force replaces the dataset it reads"
            )
        stuck = sorted({os.path.dirname(os.path.join(out, n)) for n in ours} - {out})
        for folder in [f for f in stuck if not os.access(f, os.W_OK | os.X_OK)]:
            sys.exit(
                f"error: {folder} is not writable, so --force could not replace the files in it; "
                "make it writable (nothing was changed)"
            )
        if others:
            print(f"note: {out}: left alone, not written by a prepare run: {_some(others)}")
    try:
        stage = os.path.join(out, f".prepare-{os.getpid()}.tmp")
        shutil.rmtree(stage, ignore_errors=True)
        os.makedirs(stage)
    except OSError as e:
        sys.exit(f"error: cannot write to output directory {out}: {e.strerror}")
    atexit.register(shutil.rmtree, stage, True)
    return stage


def swap_in(out, stage):
    """Replace what an earlier prepare run wrote in `out` by the complete dataset in `stage`: the
    old files are first moved aside (meta.json first), and put back if any cannot be; the new ones
    come in (meta.json last), and only then are the old ones deleted. `out` never looks complete
    while it is mixed, and a failure loses nothing."""
    ours = [n for n in dataset_files(out)[0] if n.rstrip("/") != os.path.basename(stage)]
    aside, moved = os.path.join(stage, ".old"), []
    try:
        for name in ["meta.json"] * ("meta.json" in ours) + [n for n in ours if n != "meta.json"]:
            os.renames(os.path.join(out, name.rstrip("/")), os.path.join(aside, name.rstrip("/")))
            moved.append(name.rstrip("/"))
    except OSError as e:
        for name in reversed(moved):
            os.renames(os.path.join(aside, name), os.path.join(out, name))
        sys.exit(
            f"error: cannot replace {e.filename} ({e.strerror}); {out} is as it was (the new"
            " dataset is not kept)"
        )
    # an <encoding>/ folder left empty
    for name in {n.split("/")[0] for n in ours if "/" in n.rstrip("/")}:
        if os.path.isdir(os.path.join(out, name)) and not os.listdir(os.path.join(out, name)):
            os.rmdir(os.path.join(out, name))
    for name in sorted(set(os.listdir(stage)) - {".old"}, key=lambda n: n == "meta.json"):
        os.replace(os.path.join(stage, name), os.path.join(out, name))
    shutil.rmtree(stage)


class _Interrupted(Exception):
    """Ctrl-C inside a pool worker, where a library raises KeyboardInterrupt itself (REBOUND's
    integrate handles SIGINT while it runs): a pool loses a worker that dies of a KeyboardInterrupt
    and waits for it forever, but passes an Exception back to the parent, which ends as Ctrl-C does.
    """


def _make_one(args):
    make_sample, seed, code, index, split = args
    try:
        return make_sample(sample_rng(seed, code, index), split)
    except KeyboardInterrupt:
        raise _Interrupted from None


def generate_split(make_sample, split, code, n, seed, workers, chunksize=64):
    """Return the n lines of one split, in index order, using `workers` processes."""
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is optional: fall back to no progress bar

        def tqdm(it, **_):
            return it

    jobs = ((make_sample, seed, code, i, split) for i in range(n))
    bar = dict(total=n, desc=f"{split:>16}", unit="sample", file=sys.stderr, mininterval=0.5)
    try:
        if workers <= 1:
            return [line for line in tqdm(map(_make_one, jobs), **bar)]
        with Pool(workers, worker_signals) as pool:
            return [line for line in tqdm(pool.imap(_make_one, jobs, chunksize=chunksize), **bar)]
    except _Interrupted:
        raise KeyboardInterrupt from None


def write_split(out, split, lines):
    """<out>/<split>.txt, one line per sample, written atomically."""
    for i, line in enumerate(lines):
        if "\n" in line:
            raise ValueError(f"sample {i} of {split} spans several lines")
    atomic_write_text(os.path.join(out, f"{split}.txt"), "\n".join(lines) + "\n")


def write_meta(out, meta):
    """<out>/meta.json, written last: its presence marks a complete dataset."""
    atomic_write_text(os.path.join(out, "meta.json"), json.dumps(meta, indent=2) + "\n")


def write_dataset(args, make_sample, extra_splits=(), meta=None, sizes=None):
    """
    Generate train/val/test (+ extra test splits such as OoD sets) and write them atomically as
    <out>/<split>.txt, one sample per line, then <out>/meta.json last (its presence marks a
    complete dataset). make_sample(rng, split) returns one line without a newline.
    """
    sizes = sizes or SIZES
    n_train, n_val, n_test = sizes[args.size]
    counts = {"train": n_train, "val": n_val, "test": n_test}
    counts.update({name: n_test for name in extra_splits})
    stage = prepare_out_dir(
        args.out, args.force, [f"{split}.txt" for split in counts] + ["meta.json"]
    )
    t0 = time.time()
    for code, (split, n) in enumerate(counts.items()):  # code: train 0, val 1, test 2, extras 3..
        write_split(
            stage, split, generate_split(make_sample, split, code, n, args.seed, args.workers)
        )
    meta = dict(meta or {})
    meta.update(
        seed=args.seed, size=args.size, splits=counts, command=" ".join(["python"] + sys.argv)
    )
    write_meta(stage, meta)
    swap_in(args.out, stage)
    seconds = time.time() - t0
    total = sum(counts.values())
    print(
        f"wrote {total} samples to {args.out} in {seconds:.1f} s ({total / seconds:.0f} samples/s)"
    )
    return meta
