"""A run's folder: claiming out_dir (one run at a time, none replaced by accident, a torchrun
restart continuing its launch), tidying it, saving, loading and resuming checkpoints, and the
closing note naming the command to run next."""

import atexit
import json
import math
import os
import re
import tempfile

import torch
import torch.distributed as dist

from distributed import stop, torchrun_launch
from model import GPTConfig
from util import atomic_file, atomic_write_text, check_regular, format_duration, release_lock
from util import shell_line, take_lock, why_not_written

# what --resume cannot change: the weights' shapes, and the sample stream a data position belongs to
SHAPE = "vocab_size block_size n_layer n_head n_embd encoding k causal num_head n_components"
RESUME_REFUSES = {"model_args": SHAPE.split(), "config": ["batch_size", "seed", "mlm_probability"]}


def claim_out_dir(out_dir, resume, overwrite, master):
    """Make out_dir this run's: refuse one that cannot be written, or holds a run unless --resume or
    --overwrite=True; lock it (rank 0). Returns (resume, the earlier run's files)."""
    lock_path = os.path.join(out_dir, "train.lock")
    # a torchrun restart (same command, lost worker) continues its launch (the lock names it)
    launch = torchrun_launch()
    restarted = [master and bool(launch) and os.path.exists(lock_path)]
    if restarted[0]:
        with open(lock_path) as f:
            restarted = [f.read().split()[1:] == [launch]]
    if dist.is_initialized():
        dist.broadcast_object_list(restarted)
    if restarted[0]:
        resume = os.path.exists(os.path.join(out_dir, "ckpt_latest.pt"))
        overwrite = not resume
    if resume and overwrite:
        raise SystemExit("error: --resume or --overwrite=True: pick one")
    if not out_dir:
        raise SystemExit("error: --out_dir is empty")
    # fail now, not at the first save
    try:
        os.makedirs(out_dir, exist_ok=True)
        tempfile.TemporaryFile(dir=out_dir).close()
    except OSError as e:
        why = "it is a file, not a folder" if os.path.isfile(out_dir) else e.strerror
        raise SystemExit(f"error: cannot write to out_dir {out_dir}: {why}")
    earlier_run = run_files(out_dir)
    if earlier_run and not (resume or overwrite):
        raise SystemExit(
            f"error: {out_dir} holds a run ({', '.join(map(os.path.basename, earlier_run))});"
            " continue it with --resume, replace it with --overwrite=True, or choose another"
            " --out_dir"
        )
    if master:
        holder = take_lock(lock_path, text=f"{os.getpid()} {launch}")
        if holder is not None:
            raise SystemExit(
                f"error: {out_dir} is in use by another train.py run (pid {holder}); if there is"
                f" none, delete {lock_path}"
            )
        # released however the run ends; under torchrun it stays for a restart to read
        if not launch:
            atexit.register(release_lock, lock_path)
    return resume, earlier_run


def run_files(out_dir):
    """What train.py and eval.py wrote in out_dir: log.jsonl, checkpoints, eval.py's reports."""
    names = set(os.listdir(out_dir))
    ours = {n for n in names if re.fullmatch(r"log\.jsonl|ckpt_(latest|best|\d+)\.pt", n)}
    for name in [n for n in names if re.fullmatch(r"eval[\w.-]*\.json", n)]:
        try:
            with open(os.path.join(out_dir, name)) as f:
                report = json.load(f)
            splits = list(report["splits"]) if "task" in report else None
        except (OSError, ValueError, TypeError, KeyError):
            splits = None
        if splits is not None:
            prefix = name[:-5]
            plots = [f"{prefix}_{s}{kind}.png" for s in splits for kind in ("", "_pit", "_density")]
            ours |= {name, f"{prefix}.md", *plots} & names
    return [os.path.join(out_dir, name) for name in sorted(ours)]


def tidy_out_dir(out_dir, resume, iter_num, earlier_run):
    """(rank 0) Remove checkpoints cut short by a kill; on resume, cut the log back to the
    checkpoint's step; afresh, remove the earlier run's files. Returns the log's path."""
    for name in sorted(os.listdir(out_dir)):
        if re.fullmatch(r"ckpt_(latest|best|\d+)(\.\w+)?\.tmp\.pt", name):
            leftover = os.path.join(out_dir, name)
            os.remove(leftover)
            print(f"note: removed {leftover}, a checkpoint cut short")
    log_path = os.path.join(out_dir, "log.jsonl")
    if resume and os.path.exists(log_path):
        with open(log_path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        # rows after the checkpoint's step log again; a broken row (a kill) goes
        rows = [log_row(line) for line in lines]
        kept = [line for line, row in zip(lines, rows) if row and row["iter"] <= iter_num]
        broken = sum(row is None for row in rows)
        if len(kept) < len(lines):
            print(
                f"note: {log_path}: {len(lines) - len(kept) - broken} rows after step {iter_num}"
                " removed"
                + (f", and {broken} that are not whole JSON rows of a step" if broken else "")
            )
            atomic_write_text(log_path, "".join(kept))
    if not resume and earlier_run:
        for path in earlier_run:
            os.remove(path)
        print(
            "note: --overwrite=True removed the earlier run's"
            f" {', '.join(map(os.path.basename, earlier_run))}"
        )
    return log_path


def log_row(line):
    """A line of log.jsonl as a dict with an integer "iter", or None where it is not one."""
    try:
        row = json.loads(line) if line.endswith("}\n") else None
    except ValueError:
        return None
    ok = isinstance(row, dict) and type(row.get("iter")) is int
    return row if ok else None


def load_checkpoint(path, device="cpu", mmap=False):
    """A train.py checkpoint read as data only (it cannot run code); a bad file is a one-line error.
    mmap: tensors are mapped, not read (to look at its settings)."""
    try:
        check_regular(path)
        checkpoint = torch.load(path, map_location=device, weights_only=True, mmap=mmap)
    except Exception as e:
        # a file torch cannot map: what a plain load says of it
        if mmap:
            return load_checkpoint(path, device)
        detail = str(e).strip().splitlines()[0] if str(e).strip() else "no detail"
        # never torch's advice to load it unsafely
        if "weights_only" in str(e) or "Weights only" in detail:
            detail = "it holds Python objects, which could run code"
        raise SystemExit(
            f"error: {path} is not a readable checkpoint ({type(e).__name__}: {detail})"
        )
    kinds = {"model": dict, "model_args": dict, "text_tokens": list, "config": dict}
    if missing := [k for k in kinds if not isinstance(checkpoint, dict) or k not in checkpoint]:
        raise SystemExit(
            f"error: {path} is not a checkpoint written by train.py (no {', '.join(missing)})"
        )
    if wrong := [k for k, kind in kinds.items() if not isinstance(checkpoint[k], kind)]:
        raise SystemExit(f"error: {path}: {', '.join(wrong)} of the wrong kind")
    if not isinstance(checkpoint["model_args"].get("encoding"), str):
        raise SystemExit(f"error: {path}: its model_args have no encoding")
    if not all(isinstance(t, str) for t in checkpoint["text_tokens"]):
        raise SystemExit(f"error: {path}: text_tokens holds something other than strings")
    # a compiled or DDP-wrapped model's weights carry a prefix
    checkpoint["model"] = {
        re.sub(r"^(?:_orig_mod\.|module\.)+", "", k): v for k, v in checkpoint["model"].items()
    }
    return checkpoint


def trained_on(path):
    """For an error about the data on --resume: where the checkpoint's data was."""
    data_dir = os.path.exists(path) and load_checkpoint(path, mmap=True)["config"].get("data_dir")
    if not data_dir:
        return ""
    return f"; {path} was trained on {data_dir}: give --data_dir=DIR where that data is now"


def save_checkpoint(path, model, optimizer, iter_num, best_val_loss, meta):
    """Write weights, optimizer state, step and meta to path atomically, or stop saying why."""
    checkpoint = dict(model=model.state_dict(), optimizer=optimizer.state_dict(), **meta)
    checkpoint.update(iter_num=iter_num, best_val_loss=best_val_loss)
    try:
        with atomic_file(path) as tmp:
            torch.save(checkpoint, tmp)
    # a full disk reaches torch's zip writer as either
    except (OSError, RuntimeError) as e:
        out_dir = os.path.dirname(path)
        stop(
            f"error: writing {path} failed ({why_not_written(e, out_dir)}); --resume goes on from"
            f" {os.path.join(out_dir, 'ckpt_latest.pt')}, if any"
        )


def stop_unless_finite(values, names, step, ckpt_path, validation=False):
    """The values (floats, named) unless one is not finite: then every process stops, before the
    optimizer step (or, validation, the checkpoint) it would spoil."""
    what, before = "training", "the optimizer step"
    if validation:
        what, before = "validation", "writing a checkpoint"
    if bad := ", ".join(f"{n} {v}" for n, v in zip(names, values) if not math.isfinite(v)):
        last = "no checkpoint was written"
        if os.path.exists(ckpt_path):
            last = f"{ckpt_path} is untouched: fix the data or settings, and --resume from it"
        stop(f"error: step {step}: non-finite {what} loss ({bad}); stopped before {before}; {last}")
    return values


def resume_from(resume, path, model, optimizer, model_args, config, data_fingerprint, say=None):
    """(step, best validation loss, changed settings): afresh 0, inf, {}; on resume the checkpoint
    at path's, loaded into model and optimizer."""
    if not resume:
        return 0, float("inf"), {}
    if not os.path.exists(path):
        raise SystemExit(f"error: --resume but no checkpoint at {path}")
    checkpoint = load_checkpoint(path)
    if missing := [k for k in ("optimizer", "iter_num", "best_val_loss") if k not in checkpoint]:
        raise SystemExit(
            f"error: {path} has no {', '.join(missing)}: weights alone cannot be resumed"
        )
    step, best = checkpoint["iter_num"], checkpoint["best_val_loss"]
    if not (type(step) is int and step >= 0 and isinstance(best, float) and best == best):
        raise SystemExit(
            f"error: {path}: iter_num {step!r} or best_val_loss {best!r} is no step or loss"
        )
    # a model setting newer than the checkpoint has its default
    defaults = {k: f.default for k, f in GPTConfig.__dataclass_fields__.items()}
    if unknown := sorted(set(checkpoint["model_args"]) - set(defaults)):
        raise SystemExit(
            f"error: {path} has model settings this version does not know ({', '.join(unknown)})"
        )
    checkpoint["model_args"] = {**defaults, **checkpoint["model_args"]}
    changed = check_resume(checkpoint, path, model_args, config, data_fingerprint, say)
    try:
        model.load_state_dict(checkpoint["model"])
        hyper = [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
        optimizer.load_state_dict(checkpoint["optimizer"])
    except (RuntimeError, ValueError, KeyError) as e:
        lines = str(e).strip().splitlines()
        raise SystemExit(
            f"error: {path}: its weights or optimizer state do not fit its model settings"
            f" ({lines[-1].strip() if lines else type(e).__name__})"
        )
    # this config's hyperparameters (weight_decay, betas; the same values if unchanged)
    for group, new in zip(optimizer.param_groups, hyper):
        group.update(new)
    return step, best, changed


def say_changes(changed, config, iter_num, get_lr):
    """Print the settings a resume changed and the learning rate then and now."""
    if changed:
        pairs = ", ".join(f"{name} {a!r} → {b!r}" for name, (a, b) in changed.items())
        print(f"resume: changed settings applied: {pairs}")
    if changed.keys() & {"max_iters", "learning_rate", "min_lr", "warmup_iters"}:
        saved = {**config, **{name: a for name, (a, b) in changed.items()}}
        print(
            f"resume: the learning rate schedule changed; at step {iter_num} the learning rate was "
            f"{get_lr(iter_num, saved):.2e} and now is {get_lr(iter_num, config):.2e}"
        )


def check_resume(checkpoint, path, model_args, config, data_fingerprint, say=None):
    """Refuse another model shape, sample stream or data (by content); returns the other changed
    settings, {key: (was, is)}."""
    for part, keys in RESUME_REFUSES.items():
        for key in keys:
            now = (model_args if part == "model_args" else config)[key]
            if key in checkpoint[part] and checkpoint[part][key] != now:
                raise SystemExit(
                    f"error: {path} was trained with {key}={checkpoint[part][key]!r}, the config"
                    f" asks for {now!r}"
                )
    recorded = checkpoint.get("data_fingerprint")
    if recorded is not None and recorded != data_fingerprint and not config["changed_data"]:
        now, then = config["data_dir"], checkpoint["config"]["data_dir"]
        if os.path.realpath(now) != os.path.realpath(then):
            raise SystemExit(
                f"error: {now} is not the data {path} was trained on ({then}): give"
                f" --data_dir={then}, or --overwrite=True to start afresh on {now}"
            )
        raise SystemExit(
            f"error: {now} is not the data {path} was trained on (prepared or tokenized again"
            " since); start afresh with --overwrite=True, or go on with --changed_data=True"
        )
    done = checkpoint["iter_num"]
    if config["max_iters"] < done:
        raise SystemExit(
            f"error: --max_iters={config['max_iters']} is below the {done} steps {path} has done"
        )
    if config["max_iters"] == done and say:
        say(f"note: {path} has done all {done} steps; nothing to train")
    saved = checkpoint["config"]
    run_keys = ("resume", "overwrite", "out_dir", "data_dir", "changed_data")
    return {
        k: (saved.get(k), v) for k, v in config.items() if k not in run_keys and saved.get(k) != v
    }


def finish(out_dir, data_dir, seconds):
    """Release out_dir, and say where the checkpoints are and how to predict with the best."""
    with open(os.path.join(data_dir, "meta.json")) as f:
        meta = json.load(f)
    release_lock(os.path.join(out_dir, "train.lock"))
    last, best = (os.path.join(out_dir, f"ckpt_{name}.pt") for name in ("latest", "best"))
    found = [f"{data_dir}/{s}.txt" for s in ("test", "val")]
    found = [path for path in found if os.path.exists(path)] + ["FILE"]
    which = f"{best} has the lowest validation loss, "
    if not os.path.exists(best):
        best, which = last, "no validation beat step 0; "
    mask = "--mask_last"
    if meta.get("dataset") == "text" and meta.get("scales"):
        mask = f"--mask_key={meta.get('mask_key') or next(iter(meta['scales']))}"
    predict = shell_line("python", "sample.py", f"--ckpt={best}", f"--input={found[0]}", mask)
    print(
        f"done in {format_duration(seconds)}: checkpoints in {out_dir}/ ({which}{last} the last"
        f" step); predict with:\n  {predict}"
    )
