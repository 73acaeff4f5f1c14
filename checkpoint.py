"""A run's folder: claiming and tidying out_dir, saving, loading and resuming checkpoints."""

import atexit
import json
import math
import os
import re
import shlex
import tempfile
import warnings

import torch
import torch.distributed as dist

from dataset import read_meta, vocab_digest
from distributed import print0, stop, torchrun_launch
from model import GPTConfig
from util import atomic_file, atomic_write_text, check_regular, format_duration, release_lock
from util import take_lock, why_not_written

SHAPE = "vocab_size block_size n_layer n_head n_embd encoding k causal num_head n_components"
RESUME_REFUSES = {"model_args": SHAPE.split(), "config": ["batch_size", "seed", "mlm_probability"]}


def claim_out_dir(out_dir, resume, overwrite, master):
    """Lock out_dir for this run (rank 0): (resume, the earlier run's files)."""
    lock_path = os.path.join(out_dir, "train.lock")
    # a torchrun restart continues its launch (the lock names it)
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
    if os.path.islink(out_dir):
        raise SystemExit(f"error: out_dir {out_dir} is a link; give {os.path.realpath(out_dir)}")
    try:
        os.makedirs(out_dir, exist_ok=True)
        tempfile.TemporaryFile(dir=out_dir).close()
    except OSError as e:
        why = "it is a file, not a folder" if os.path.isfile(out_dir) else e.strerror
        raise SystemExit(f"error: cannot write to out_dir {out_dir}: {why}")
    earlier_run = run_files(out_dir)
    if earlier_run and not (resume or overwrite):
        raise SystemExit(
            f"error: {out_dir} holds a run ({', '.join(earlier_run)}); continue it with --resume,"
            " replace it with --overwrite=True or choose another --out_dir"
        )
    if master:
        holder = take_lock(lock_path, text=f"{os.getpid()} {launch}")
        if holder is not None:
            why = f"in use by another train.py run (pid {holder}); wait for it to end"
            raise SystemExit(f"error: {out_dir} is {why} (if it is none, delete {lock_path})")
        # under torchrun it stays for a restart to read
        if not launch:
            atexit.register(release_lock, lock_path)
    return resume, earlier_run


def run_files(out_dir):
    """The names of what train.py and eval.py wrote in out_dir."""
    names = set(os.listdir(out_dir))
    ours = {n for n in names if re.fullmatch(r"log\.jsonl|ckpt_(latest|best|\d+)\.pt", n)}
    for name in [n for n in names if re.fullmatch(r"eval[\w.-]*\.json", n)]:
        try:
            with open(os.path.join(out_dir, name)) as f:
                report = json.load(f)
            splits = list(report["splits"]) if "task" in report else None
        except (OSError, ValueError, TypeError, KeyError):
            continue
        if splits is not None:
            prefix = name[:-5]
            plots = [f"{prefix}_{s}{kind}.png" for s in splits for kind in ("", "_density")]
            ours |= {name, f"{prefix}.md", *plots} & names
    return sorted(ours)


def tidy_out_dir(out_dir, resume, iter_num, earlier_run):
    """Remove what a killed or earlier run left; on resume, cut the log back to iter_num."""
    for name in sorted(os.listdir(out_dir)):
        if re.fullmatch(r"ckpt_(latest|best|\d+)(\.\w+)?\.tmp\.pt", name):
            leftover = os.path.join(out_dir, name)
            os.remove(leftover)
            print(f"note: removed {leftover}, a checkpoint cut short")
    log_path = os.path.join(out_dir, "log.jsonl")
    if resume and os.path.exists(log_path):
        with open(log_path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        rows = [log_row(line) for line in lines]
        kept = [line for line, row in zip(lines, rows) if row and row["iter"] <= iter_num]
        broken = rows.count(None)
        if len(kept) < len(lines):
            note = f"note: {log_path}: {len(lines) - len(kept) - broken} rows after step {iter_num}"
            print(note + (f" and {broken} broken rows" if broken else "") + " removed")
            atomic_write_text(log_path, "".join(kept))
    if not resume and earlier_run:
        for name in earlier_run:
            os.remove(os.path.join(out_dir, name))
        print(f"note: --overwrite=True removed {', '.join(earlier_run)}")
    return log_path


def log_row(line):
    """A log.jsonl line as a dict with an integer "iter", else None."""
    try:
        row = json.loads(line) if line.endswith("}\n") else None
    except ValueError:
        return None
    ok = isinstance(row, dict) and type(row.get("iter")) is int
    return row if ok else None


def load_checkpoint(path, device="cpu", mmap=False):
    """A train.py checkpoint read as data only (no code runs); mmap: tensors mapped."""
    try:
        check_regular(path)
        # the refusal below says why a file is no checkpoint
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            checkpoint = torch.load(path, map_location=device, weights_only=True, mmap=mmap)
    except Exception as e:
        if mmap:
            return load_checkpoint(path, device)
        detail = str(e).strip().splitlines()[0] if str(e).strip() else "no detail"
        # never torch's advice to load it unsafely
        if "weights_only" in str(e) or "Weights only" in detail:
            detail = "it holds Python objects, which could run code"
        raise SystemExit(f"error: {path} is not a readable checkpoint ({detail})")
    kinds = {"model": dict, "model_args": dict, "text_tokens": list, "config": dict}
    checkpoint = checkpoint if isinstance(checkpoint, dict) else {}
    bad = [k for k, kind in kinds.items() if not isinstance(checkpoint.get(k), kind)]
    if bad or not isinstance(checkpoint["model_args"].get("encoding"), str):
        bad = ", ".join(bad or ["model_args' encoding"])
        raise SystemExit(f"error: {path} is not a train.py checkpoint ({bad} missing or wrong)")
    # strings in their saved order
    tokens = checkpoint["text_tokens"]
    digest = all(isinstance(t, str) for t in tokens) and vocab_digest(tokens)
    if not digest or checkpoint.get("vocab_digest", digest) != digest:
        raise SystemExit(f"error: {path}: text_tokens are not the strings it was saved with")
    # a model setting newer than the checkpoint has its default
    defaults = {k: f.default for k, f in GPTConfig.__dataclass_fields__.items()}
    if unknown := sorted(set(checkpoint["model_args"]) - set(defaults)):
        why = f"settings this version does not know ({', '.join(unknown)})"
        raise SystemExit(f"error: {path}: {why}; use the version that wrote it")
    checkpoint["model_args"] = defaults | checkpoint["model_args"]
    # a compiled or DDP-wrapped model's weights carry a prefix
    checkpoint["model"] = {
        re.sub(r"^(?:_orig_mod\.|module\.)+", "", k): v for k, v in checkpoint["model"].items()
    }
    return checkpoint


def trained_on(path):
    data_dir = os.path.exists(path) and load_checkpoint(path, mmap=True)["config"].get("data_dir")
    return f"; {path} was trained on {data_dir}" if data_dir else ""


def save_checkpoint(path, model, optimizer, iter_num, best_val_loss, meta):
    digest = vocab_digest(meta["text_tokens"])
    checkpoint = dict(model=model.state_dict(), optimizer=optimizer.state_dict(), **meta)
    checkpoint.update(iter_num=iter_num, best_val_loss=best_val_loss, vocab_digest=digest)
    try:
        with atomic_file(path) as tmp:
            torch.save(checkpoint, tmp)
    # a full disk reaches torch's zip writer as either
    except (OSError, RuntimeError) as e:
        why = why_not_written(e, os.path.dirname(path))
        stop(f"error: writing {path} failed ({why}); --resume goes on from ckpt_latest.pt")


def stop_unless_finite(values, names, step, ckpt_path, validation=False):
    """The values, unless one is not finite: then every process stops."""
    what, before = "training", "the optimizer step"
    if validation:
        what, before = "validation", "writing a checkpoint"
    if bad := ", ".join(f"{n} {v}" for n, v in zip(names, values) if not math.isfinite(v)):
        last = f"; {ckpt_path} is untouched: --resume from it" if os.path.exists(ckpt_path) else ""
        stop(f"error: step {step}: non-finite {what} loss ({bad}) before {before}{last}")
    return values


def resume_from(resume, path, model, optimizer, model_args, config, data_fingerprint):
    """(step, best validation loss, changed settings); loads model and optimizer."""
    if not resume:
        return 0, float("inf"), {}
    checkpoint = load_checkpoint(path)
    if "optimizer" not in checkpoint:
        raise SystemExit(f"error: {path} has no optimizer")
    step, best = checkpoint.get("iter_num"), checkpoint.get("best_val_loss")
    if not (type(step) is int and step >= 0 and isinstance(best, float) and best == best):
        values = f"iter_num {step!r} or best_val_loss {best!r}"
        raise SystemExit(f"error: {path}: {values} is no step or loss")
    changed = check_resume(checkpoint, path, model_args, config, data_fingerprint)
    try:
        model.load_state_dict(checkpoint["model"])
        hyper = [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
        optimizer.load_state_dict(checkpoint["optimizer"])
    except (RuntimeError, ValueError, KeyError) as e:
        lines = str(e).strip().splitlines()
        detail = lines[-1].strip() if lines else type(e).__name__
        raise SystemExit(f"error: {path}: weights or optimizer state do not fit ({detail})")
    # this config's weight_decay and betas
    for group, new in zip(optimizer.param_groups, hyper):
        group.update(new)
    return step, best, changed


def say_changes(changed, config, iter_num, get_lr):
    if changed:
        pairs = ", ".join(f"{name} {a!r} → {b!r}" for name, (a, b) in changed.items())
        print(f"resume: changed settings applied: {pairs}")
    if changed.keys() & {"max_iters", "learning_rate", "min_lr", "warmup_iters"}:
        saved = config | {name: a for name, (a, b) in changed.items()}
        was, now = get_lr(iter_num, saved), get_lr(iter_num, config)
        print(f"resume: the learning rate at step {iter_num} was {was:.2e}, now {now:.2e}")


def check_resume(checkpoint, path, model_args, config, data_fingerprint):
    """Refuse another model, sample stream or data; {changed key: (was, is)}."""
    for part, keys in RESUME_REFUSES.items():
        for key in keys:
            now = (model_args if part == "model_args" else config)[key]
            if key in checkpoint[part] and checkpoint[part][key] != now:
                was = checkpoint[part][key]
                raise SystemExit(f"error: {path} was trained with {key}={was!r}, not {now!r}")
    recorded = checkpoint.get("data_fingerprint")
    # a fingerprint may lack "dataset"
    changed = recorded and any(data_fingerprint.get(k) != v for k, v in recorded.items())
    if changed and not config["changed_data"]:
        now, then = config["data_dir"], checkpoint["config"]["data_dir"]
        why, fix = "it changed since", "--changed_data=True goes on"
        if os.path.realpath(now) != os.path.realpath(then):
            why, fix = then, f"give --data_dir={then}"
        why = f"is not the data {path} was trained on ({why})"
        raise SystemExit(f"error: {now} {why}: {fix}, or --overwrite=True starts afresh")
    done, max_iters = checkpoint["iter_num"], config["max_iters"]
    if max_iters < done:
        why = f"is below the {done} steps in {path}: raise it"
        raise SystemExit(f"error: --max_iters={max_iters} {why}")
    if max_iters == done:
        print0(f"note: {path} has done all {done} steps; nothing to train")
    saved = checkpoint["config"]
    run_keys = ("resume", "overwrite", "out_dir", "data_dir", "changed_data")
    return {
        k: (saved.get(k), v) for k, v in config.items() if k not in run_keys and saved.get(k) != v
    }


def finish(out_dir, data_dir, seconds):
    """Release out_dir; say where the checkpoints are and how to predict."""
    meta = read_meta(data_dir)
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
    predict = shlex.join(["python", "sample.py", f"--ckpt={best}", f"--input={found[0]}", mask])
    print(
        f"done in {format_duration(seconds)}: checkpoints in {out_dir}/ ({which}{last} the last"
        f" step); predict with:\n  {predict}"
    )
