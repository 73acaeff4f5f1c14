"""What every prepare script shares: flags, split sizes, seeding, records, and writing a dataset
staged, under a lock, swapped in whole."""

import argparse
import errno
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from multiprocessing import Pool

import numpy as np
from tqdm import tqdm

# the repository root
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from util import atomic_write_text, format_number, release_lock, take_lock, worker_signals

# SIGTERMs received: a library's bare `except:` may swallow the exit
STOPPED = []
# --out, once a run writes there
OUT = []


def _stop(*_):
    STOPPED.append(True)
    sys.exit(143)


def _one_line(kind, error, traceback, default=sys.excepthook):
    if issubclass(kind, KeyboardInterrupt):
        line = "interrupted (Ctrl-C)"
    elif issubclass(kind, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        # the fuller disk of --out's and TMPDIR's, where prepare keeps scratch files
        full = min([*OUT, tempfile.gettempdir()], key=lambda f: shutil.disk_usage(f).free)
        where = full if full in OUT else f"TMPDIR {full}"
        line = f"error: the disk of {where} is full ({error.strerror}); free some space there"
    elif issubclass(kind, OSError) and error.strerror:
        line = f"error: {error.strerror}" + (f": {error.filename}" if error.filename else "")
    else:
        return default(kind, error, traceback)
    print(f"{line}; nothing partly written was kept", file=sys.stderr)


def fail(message):
    sys.exit(f"error: {message}")


def one_line_errors():
    """Ctrl-C, SIGTERM and a failed read or write end with one line."""
    sys.excepthook = _one_line
    signal.signal(signal.SIGTERM, _stop)


# samples per split: (train, val, test); every extra test set (OoD) has the size of test
SIZES = {
    "tiny": (400, 50, 50),
    "small": (40_000, 5_000, 5_000),
    "paper": (1_000_000, 125_000, 125_000),
}


def at_least(low):
    def parse(text):
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer ≥ {low}, got {value}")
        return value

    # the name argparse gives a non-integer
    parse.__name__ = "integer"
    return parse


def int_range(most=None):
    """An argparse type: 'MIN,MAX' -> (MIN, MAX)."""

    def parse(text):
        try:
            low, high = (int(x) for x in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected MIN,MAX; found '{text}'") from None
        if not 1 <= low <= high <= (most or high):
            limit = f" <= {most}" if most else ""
            raise argparse.ArgumentTypeError(f"expected 1 <= MIN <= MAX{limit}; found {low},{high}")
        return low, high

    return parse


def base_parser(description, default_out):
    p = argparse.ArgumentParser(description=description)
    add = p.add_argument
    add("--out", default=default_out, help=f"output directory (default {default_out})")
    size = "tiny: seconds, for tests; small: minutes on a laptop; paper: 1M/125k/125k"
    add("--size", default="small", choices=list(SIZES), help=size)
    add("--seed", type=at_least(0), default=1337, help="fixes every sample (default 1337)")
    workers = "processes to use (default: all cores); does not change the output"
    add("--workers", type=at_least(1), default=os.cpu_count() or 1, help=workers)
    add("--force", action="store_true", help="overwrite an existing dataset in --out")
    return p


def command(script, argv=None):
    return shlex.join(["python", script, *(sys.argv[1:] if argv is None else argv)])


def dumps(obj):
    """Compact JSON, floats to 4 significant digits."""
    if isinstance(obj, dict):
        return "{" + ",".join(f'"{k}":{dumps(v)}' for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(map(dumps, obj)) + "]"
    if isinstance(obj, float):
        return format_number(obj, 4)
    return json.dumps(obj)


# a prepare run's dataset before its swap
STAGE = re.compile(r"\.prepare-\d+\.tmp")
# what tokenize_numbers.py writes in <encoding>/
TOKENIZED = re.compile(r"\w+\.(ids|values|offsets|json|tmp)\b.*")
# held by a prepare run (both) or a tokenize_numbers.py run (the second): who holds it
LOCKS = {
    "prepare.lock": "written by another prepare run",
    "tokenize.lock": "tokenized by tokenize_numbers.py",
}


def dataset_files(out):
    """(ours, others, prepared): what prepare or tokenize runs wrote in `out`, the rest, and
    whether a prepare run wrote meta.json."""
    from dataset import ENCODINGS, read_meta

    try:
        meta = read_meta(out)
    except (OSError, ValueError):
        meta = {}
    known = isinstance(meta.get("splits"), (dict, list))
    prepared = known and meta.get("dataset") != "plain text"
    names = {"vocab.json"} | ({"meta.json"} if known else set())
    if prepared:
        extensions = (".txt", ".ocean.txt", ".levels.txt", ".source.txt")
        names |= {f"{s}{ext}" for s in meta["splits"] for ext in extensions}
    ours, others = [], []
    for name in sorted(set(os.listdir(out)) - set(LOCKS)):
        path = os.path.join(out, name)
        # a linked folder is the user's: never emptied
        if name in ENCODINGS and os.path.isdir(path) and not os.path.islink(path):
            for f in sorted(os.listdir(path)):
                is_ours = TOKENIZED.fullmatch(f) and os.path.isfile(os.path.join(path, f))
                (ours if is_ours else others).append(f"{name}/{f}")
        # atomic_file's leftovers, <root>.<random>.tmp<ext>, are ours too
        elif re.sub(r"\.\w+\.tmp(?=\.\w+$)", "", name) in names and os.path.isfile(path):
            ours.append(name)
        elif STAGE.fullmatch(name) and os.path.isdir(path):
            ours.append(name + "/")
        else:
            others.append(name + "/" if os.path.isdir(path) else name)
    return ours, others, prepared


def _some(names, n=6):
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def _check_out(out, force, writes):
    """Refuse a full `out` without --force, and a user's file in `writes`."""
    ours, others, prepared = dataset_files(out)
    clash = [n for n in others if n.rstrip("/") in writes]
    if clash and not prepared:
        fix = "move it away or choose another --out"
        fail(f"{out} holds {_some(clash)}, which this run would overwrite; {fix}")
    if (ours or others) and not force:
        what = f"files that are not a dataset ({_some(others or ours)})"
        what = "a dataset (meta.json)" if prepared else what
        fail(f"{out} already holds {what}; pass --force to replace it")
    stuck = sorted({os.path.dirname(os.path.join(out, n)) for n in ours} - {out})
    for folder in [f for f in stuck if not os.access(f, os.W_OK | os.X_OK)]:
        fail(f"{folder} is not writable, so --force cannot replace the files in it")
    if others:
        print(f"note: {out}: left alone, not written by a prepare run: {_some(others)}")


@contextmanager
def staged_dataset(out, force, writes):
    """Yield a stage folder, swapped into `out` when the block ends without error, under locks."""
    if os.path.islink(out):
        fail(f"--out {out} is a symbolic link; give the folder itself ({os.path.realpath(out)})")
    held, swapped, stage = [], False, os.path.join(out, f".prepare-{os.getpid()}.tmp")
    try:
        for name, who in LOCKS.items():
            path = os.path.join(out, name)
            ended = f"note: removed {path}, left by a run that ended"
            try:
                os.makedirs(out, exist_ok=True)
                pid = take_lock(path, lambda _, note=ended: print(note))
            except OSError as e:
                fail(f"cannot write to output directory {out}: {e.strerror}")
            if pid is not None:
                why = f"wait for it to end, or delete {path} if no such run is going"
                fail(f"{out} is being {who}, process {pid}; {why}")
            held.append(path)
        OUT[:] = [out]
        # a killed run's stage, unless it holds the old dataset's files
        for name in filter(STAGE.fullmatch, os.listdir(out)):
            left = os.path.join(out, name)
            if os.path.islink(left):
                fail(f"{left} is a symbolic link where this run stages its files; remove it")
            if not os.path.exists(os.path.join(left, ".old")):
                shutil.rmtree(left)
                print(f"note: removed {left}, left by a run that ended")
        _check_out(out, force, writes)
        os.makedirs(stage)
        yield stage
        # a SIGTERM whose exit a library swallowed
        if STOPPED:
            sys.exit(143)
        # a SIGTERM or Ctrl-C waits for the swap
        stops = {signal.SIGTERM, signal.SIGINT}
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        try:
            swap_in(out, stage)
            swapped = True
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
    finally:
        # not the old dataset, where putting it back failed
        if swapped or not os.path.exists(os.path.join(stage, ".old")):
            shutil.rmtree(stage, ignore_errors=True)
        for path in held:
            release_lock(path)


def swap_in(out, stage):
    """Replace what a prepare run wrote in `out` by `stage`; a failed move puts every file back."""
    aside = os.path.join(stage, ".old")
    old = [n.rstrip("/") for n in dataset_files(out)[0]]
    old = sorted([n for n in old if n != os.path.basename(stage)], key=lambda n: n != "meta.json")
    new = sorted(set(os.listdir(stage)) - {".old"}, key=lambda n: n == "meta.json")
    moves = [(os.path.join(out, n), os.path.join(aside, n)) for n in old]
    moves += [(os.path.join(stage, n), os.path.join(out, n)) for n in new]
    done = []
    try:
        for a, b in moves:
            os.renames(a, b)
            done.append((a, b))
    except OSError as e:
        for a, b in reversed(done):
            os.renames(b, a)
        shutil.rmtree(aside, ignore_errors=True)
        fail(f"cannot replace {e.filename} ({e.strerror}); {out} is as it was")


class _Interrupted(Exception):
    """Ctrl-C in a pool worker: a pool hangs on KeyboardInterrupt, not on an Exception."""


def _make_one(args):
    make_sample, seed, code, index, split = args
    try:
        # a generator per sample: the same lines for any --workers
        return make_sample(np.random.default_rng([seed, code, index]), split)
    except KeyboardInterrupt:
        raise _Interrupted from None


def progress(items, **bar):
    """items, with a progress bar; a SIGTERM's exit a library swallowed ends the run."""
    for item in tqdm(items, file=sys.stderr, mininterval=0.5, **bar):
        if STOPPED:
            sys.exit(143)
        yield item


def generate_split(make_sample, split, code, n, seed, workers):
    """The n lines of one split, in order, made by `workers` processes."""
    jobs = ((make_sample, seed, code, i, split) for i in range(n))
    bar = {"total": n, "desc": f"{split:>16}", "unit": "sample"}
    try:
        if workers <= 1:
            return list(progress(map(_make_one, jobs), **bar))
        with Pool(workers, worker_signals) as pool:
            return list(progress(pool.imap(_make_one, jobs, chunksize=64), **bar))
    except _Interrupted:
        raise KeyboardInterrupt from None


def write_meta(out, meta):
    """<out>/meta.json, written last: it marks a complete dataset."""
    atomic_write_text(os.path.join(out, "meta.json"), json.dumps(meta, indent=2) + "\n")


def write_dataset(args, make_sample, meta, extra_splits=()):
    """<out>/<split>.txt, a line a make_sample(rng, split), then <out>/meta.json."""
    counts = dict(zip(("train", "val", "test"), SIZES[args.size]))
    counts.update(dict.fromkeys(extra_splits, counts["test"]))
    meta = {**meta, "seed": args.seed, "size": args.size, "splits": counts}
    meta["command"] = command(sys.argv[0])
    t0 = time.time()
    writes = [f"{split}.txt" for split in counts] + ["meta.json"]
    with staged_dataset(args.out, args.force, writes) as stage:
        # split codes: train 0, val 1, test 2, extras 3..
        for code, (split, n) in enumerate(counts.items()):
            lines = generate_split(make_sample, split, code, n, args.seed, args.workers)
            atomic_write_text(os.path.join(stage, f"{split}.txt"), "\n".join(lines) + "\n")
        write_meta(stage, meta)
    seconds, total = time.time() - t0, sum(counts.values())
    print(
        f"wrote {total} samples to {args.out} in {seconds:.1f} s ({total / seconds:.0f} samples/s)"
    )
