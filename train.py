"""
Train an xVal (or text-encoding) transformer on a tokenized dataset.

    python train.py config/quickstart.py                              # one process (CPU or GPU)
    python train.py config/own_small.py --data_dir=data/mine          # your own data, minutes on a laptop
    torchrun --standalone --max-restarts=3 --nproc_per_node=4 train.py config/era5_xval.py  # DDP on 4 GPUs; docs/multi_node.md
    python train.py config/quickstart.py --resume                     # continue a run exactly
    python train.py --help                                            # every setting

Batches and masks are a function of (seed, step) and dropout of (seed, rank, step), so N processes
give the losses of one with the same global batch, and a resume with unchanged settings continues
exactly."""

import atexit
import json
import math
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from batching import (
    VAL_STEP,
    accumulation_steps,
    choose_packing,
    collate,
    step_batches,
    step_samples,
    to_device,
    training_examples,
)
from configurator import configure
from dataset import Split, fingerprint, load_text_vocab
from model import GPT, GPTConfig, configure_optimizer, flops_per_token, loss_from
from tokenize_numbers import Vocab
from util import (
    atomic_file,
    atomic_write_text,
    check_attention_memory,
    check_resume,
    exit_on_ctrl_c,
    format_duration,
    load_checkpoint,
    note_sigterm,
    peak_flops,
    pick_compile,
    pick_device,
    release_lock,
    shell_line,
    take_lock,
    torchrun_launch,
    torchrun_store,
    why_not_written,
)

# -- config: defaults, overridden by config files and --key=value (python train.py --help)
out_dir = "out"  # checkpoints (ckpt_latest.pt, ckpt_best.pt) and log.jsonl
data_dir = "data/arithmetic_ops2"  # a dataset tokenized by tokenize_numbers.py
encoding = "xval"  # how numbers become tokens: xVal, or a text encoding of the paper
k = 0  # multi-scale xVal: 2k+1 number embeddings (paper eq. 1); 0 = plain xVal
# model
n_layer = 6
n_head = 6
n_embd = 768
block_size = 0  # max context in tokens (a longer sample is an error); 0 = the longest sample
dropout = 0.0
causal = False  # False: masked language modelling (the paper's choice); True: autoregressive
# objective
mlm_probability = 0.2  # chance that each token is masked (0.3 for look-up)
num_loss_weight = 1.0  # λ in CE + λ·MSE
nmse_eps = 1e-3  # ε in the NMSE loss of multi-scale xVal (k > 0)
num_head = "mse"  # xVal number head: mse (one value, λ·MSE) | gmm (a Gaussian mixture, λ·NLL)
n_components = 8  # gmm: mixture components
# optimisation
batch_size = 64  # samples per optimizer step, over all processes and accumulation steps
micro_batch_size = 64  # samples per forward pass per process
packing = False  # pack samples several to a row (attention stays within each), not pad
pack_length = 0  # tokens per packed row (≤ 4 × block_size); 0 = the length that pads least
max_iters = 500_000
learning_rate = 2e-4
min_lr = 2e-5  # reached at max_iters by the cosine schedule
warmup_iters = 2000
weight_decay = 0.1
beta1 = 0.9
beta2 = 0.95
grad_clip = 1.0  # clip the global gradient norm; 0 disables
# evaluation, logging, checkpoints
eval_interval = 1000  # steps between validations (and checkpoints)
keep_every = 0  # also keep ckpt_<iter>.pt every this many steps (learning curves); 0 = off
eval_batches = 20  # validation micro-batches per evaluation
log_interval = 10
resume = False  # continue from out_dir/ckpt_latest.pt
overwrite = False  # start afresh in an out_dir that holds a run, deleting its log and checkpoints
changed_data = False  # --resume on data prepared or tokenized again since the checkpoint
seed = 1337  # fixes the initialisation, sample order and masks
# system
device = "auto"  # auto | cpu | cuda | cuda:1 | mps
dtype = "auto"  # auto (bf16 on CUDA, else fp32) | bfloat16 | float32
threads = 0  # CPU threads; 0: $OMP_NUM_THREADS, else 1 (steady on a busy machine)
compile = "auto"  # torch.compile: auto (CUDA only) | True (CPU too, needs a C++ compiler) | False
flex_attention = True  # compiled on CUDA: FlexAttention (block-sparse), not a dense mask
# -- end config
# ranges of the settings above (setting_checks.py)
RANGES = dict(
    encoding="xval | p10 | p1000 | b1999 | fp15",
    k="[0, inf)",
    n_layer="[1, inf)",
    n_head="[1, inf)",
    n_embd="[1, inf) multiple of n_head",
    block_size="[0, inf)",
    dropout="[0, 1)",
    mlm_probability="(0, 1) unless causal",
    num_loss_weight="[0, inf)",
    nmse_eps="(0, inf)",
    num_head="mse | gmm",
    n_components="[1, inf)",
    batch_size="[1, inf)",
    micro_batch_size="[1, inf)",
    pack_length="[0, inf)",
    max_iters="[1, inf)",
    learning_rate="(0, inf)",
    min_lr="[0, learning_rate]",
    warmup_iters="[0, inf)",
    weight_decay="[0, inf)",
    beta1="[0, 1)",
    beta2="[0, 1)",
    grad_clip="[0, inf)",
    eval_interval="[1, inf)",
    keep_every="[0, inf)",
    eval_batches="[1, inf)",
    log_interval="[1, inf)",
    seed="[0, 4294967295]",
    device="auto | cpu | mps | cuda | cuda:N",
    dtype="auto | bfloat16 | float32",
    threads="[0, inf)",
)
config = configure(globals(), __file__)
exit_on_ctrl_c(
    lambda: (
        f" at step {globals().get('iter_num', 0)}: continue from the last checkpoint with --resume"
    )
)
sys.stdout.reconfigure(line_buffering=True)  # log lines appear at once, also when piped to a file
log_path, ckpt_path, best_path = (
    os.path.join(out_dir, f) for f in ("log.jsonl", "ckpt_latest.pt", "ckpt_best.pt")
)
# two runs in one out_dir would interleave its log and checkpoints
lock_path = os.path.join(out_dir, "train.lock")
# distributed setup -----------------------------------------------------------
ddp = "RANK" in os.environ  # started by torchrun
rank, local_rank, world_size = (
    int(os.environ.get(v, d)) for v, d in (("RANK", 0), ("LOCAL_RANK", 0), ("WORLD_SIZE", 1))
)
device = pick_device(device, threads)  # on the CPU: 1 thread unless asked (util.py says why)
if ddp and device.startswith("cuda"):
    device = f"cuda:{local_rank}"
    torch.cuda.set_device(device)
if ddp:
    dist.init_process_group(
        "nccl" if device.startswith("cuda") else "gloo",
        store=torchrun_store(rank),
        rank=rank,
        world_size=world_size,
    )
master, device_type = rank == 0, "cuda" if device.startswith("cuda") else device

loader = None  # the thread that builds the next step's batches (the training loop below)


def stop(message):
    """End the run with one message; every process stops at the same step, so none waits in a
    collective."""
    # the next step's batches may be reading the memory-mapped arrays: let it finish first
    if loader:
        loader.shutdown(wait=True, cancel_futures=True)
    if ddp:
        dist.destroy_process_group()
    # every process has the same message: one line per machine
    raise SystemExit(message if local_rank == 0 else 1)


# torchrun --max-restarts starts the group again with the same command line after a lost worker: it
# continues what this launch began (the lock names it) from the last checkpoint, never afresh; no
# other launch resumes by accident
launch = torchrun_launch()
restarted = [
    master
    and bool(launch)
    and os.path.exists(lock_path)
    and open(lock_path).read().split()[1:] == [launch]
]
if ddp:
    dist.broadcast_object_list(restarted)  # rank 0's reading: every process continues, or none
if restarted[0]:
    resume, overwrite = os.path.exists(ckpt_path), not os.path.exists(ckpt_path)
if resume and overwrite:
    raise SystemExit(
        "error: --resume continues the run in out_dir and --overwrite=True replaces it; pick one"
    )
if not out_dir:
    raise SystemExit("error: --out_dir is empty; name a folder for the checkpoints and log.jsonl")
# before the data and model load: a folder that cannot take a checkpoint fails now, not at the first
# save
try:
    os.makedirs(out_dir, exist_ok=True)
    tempfile.TemporaryFile(dir=out_dir).close()
except OSError as e:
    raise SystemExit(
        f"error: cannot write to out_dir {out_dir}: "
        + ("it is a file, not a folder" if os.path.isfile(out_dir) else e.strerror)
    )
earlier_run = [
    os.path.join(out_dir, f)
    for f in sorted(os.listdir(out_dir))
    if f == "log.jsonl"
    or re.fullmatch(
        # its log, checkpoints and eval.py's reports
        r"ckpt_(latest|best|\d+)\.pt|eval.*\.(json|md|png)",
        f,
    )
]
if earlier_run and not (resume or overwrite):
    raise SystemExit(
        f"error: {out_dir} holds a run ({', '.join(map(os.path.basename, earlier_run))}); continue"
        " it with --resume, delete it and start afresh with --overwrite=True, or choose another"
        " --out_dir"
    )
if master and (holder := take_lock(lock_path, text=f"{os.getpid()} {launch}")) not in (
    None,
    os.getpid(),
):
    raise SystemExit(
        f"error: {out_dir} is in use by another train.py run (pid {holder}); wait for it to end "
        # os.getpid(): an earlier run in this process (tests run in-process)
        "or choose another --out_dir"
    )
# released however the run ends; under torchrun it stays for a restart of the launch to read
if master and not launch:
    atexit.register(release_lock, lock_path)


def get_lr(it, s):
    """Linear warm-up, then cosine decay to min_lr at max_iters (s: a config, the one saved or this
    run's)."""
    if it < s["warmup_iters"]:
        return s["learning_rate"] * (it + 1) / s["warmup_iters"]
    progress = min(1.0, (it - s["warmup_iters"]) / max(1, s["max_iters"] - s["warmup_iters"]))
    return s["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * progress)) * (
        s["learning_rate"] - s["min_lr"]
    )


if dtype == "auto":
    dtype = "bfloat16" if device_type == "cuda" and torch.cuda.is_bf16_supported() else "float32"
autocast = (
    torch.autocast(device_type=device_type, dtype=torch.bfloat16)
    if dtype == "bfloat16"
    else nullcontext()
)
# auto: on for CUDA, off where it rarely pays
compile = pick_compile(compile, device_type, print if master else None)
accum = accumulation_steps(batch_size, micro_batch_size, world_size)
torch.manual_seed(seed)  # the same initialisation on every rank
# no TF32: its 10-bit mantissa rounds the float32 number head to ~1e-3
torch.set_float32_matmul_precision("highest")

# data ------------------------------------------------------------------------
try:
    vocab = Vocab(load_text_vocab(data_dir), encoding)
    train_data, val_data = Split(data_dir, "train", encoding), Split(data_dir, "val", encoding)
    data_fingerprint, meta = (
        fingerprint(data_dir, encoding),
        json.load(open(os.path.join(data_dir, "meta.json"))),
    )
except (FileNotFoundError, ValueError) as e:
    trained_on = (
        resume
        and os.path.exists(ckpt_path)
        and load_checkpoint(ckpt_path, mmap=True)["config"]["data_dir"]
    )
    raise SystemExit(
        f"error: {e}"
        + (
            f"; {ckpt_path} was trained on {trained_on}: resume with the config it was trained "
            "with, or --data_dir=DIR where that data is now"
            if trained_on
            else ""
        )
    )
longest = {
    name: int(split.lengths.max()) for name, split in (("train", train_data), ("val", val_data))
}
# AR appends [EOS] and shifts by one: as many inputs as tokens
block_size = block_size or max(longest.values())
if packing and pack_length > 4 * block_size:
    raise SystemExit(f"error: pack_length {pack_length} is longer than 4 × block_size {block_size}")
for name, split in (("train", train_data), ("val", val_data)):
    if longest[name] > block_size or (packing and longest[name] > (pack_length or longest[name])):
        raise SystemExit(
            f"error: {data_dir}/{encoding}/{name} has a sample of {longest[name]} tokens "
            f"(index {int(split.lengths.argmax())}) but block_size is {block_size}"
            + (f" and pack_length {pack_length}" if packing and pack_length else "")
        )
mean_length, n_val = (
    float(train_data.lengths.mean()),
    min(len(val_data), eval_batches * micro_batch_size),
)
# a dense mask: refuse what cannot fit, with the figure
if not (flex_attention and compile and device_type == "cuda"):
    check_attention_memory(max(block_size, pack_length), micro_batch_size, n_head, device)
# --packing=True alone: the micro-batches' one shape (one compiled graph) that pads least; pack_rows 0: from micro_batch_size
pack_length, pack_rows = (
    choose_packing(
        train_data,
        batch_size,
        micro_batch_size,
        world_size,
        seed,
        max(longest.values()),
        4 * block_size,
    )
    if packing and not pack_length
    else (pack_length, 0)
)

val_data.check_finite(range(n_val))  # what evaluate() reads; each step checks its training samples
if len(val_data) < 16 and master:  # the best checkpoint is chosen on these
    print(
        f"warning: {data_dir}/val.txt has {len(val_data)} sample(s): validation losses, and the"
        " choice of ckpt_best.pt, rest on them; a few dozen make them worth reading"
    )
# multi-scale xVal normalises it
num_loss_name = "NLL" if num_head == "gmm" else "NMSE" if k > 0 else "MSE"

# model and optimizer ---------------------------------------------------------
model_args = dict(
    vocab_size=len(vocab),
    num_id=vocab.num_id if vocab.num_id is not None else -1,
    block_size=block_size,
    n_layer=n_layer,
    n_head=n_head,
    n_embd=n_embd,
    dropout=dropout,
    encoding=encoding,
    k=k,
    causal=causal,
    nmse_eps=nmse_eps,
    num_head=num_head,
    n_components=n_components,
)
try:
    gptconf = GPTConfig(**model_args)
except ValueError as e:
    raise SystemExit(f"error: {e}")
model = raw_model = GPT(gptconf).to(device)
optimizer = configure_optimizer(model, weight_decay, learning_rate, (beta1, beta2), device_type)
# resumed_at: a step whose validation is logged and saved
iter_num, best_val_loss, resumed_at = 0, float("inf"), None
if resume:
    if not os.path.exists(ckpt_path):
        raise SystemExit(f"error: --resume but no checkpoint at {ckpt_path}")
    checkpoint = load_checkpoint(ckpt_path)
    # refused: another model shape, sample stream or data; applied (and said): the rest
    saved = checkpoint["config"]
    checkpoint["model_args"] = {
        **{k: f.default for k, f in GPTConfig.__dataclass_fields__.items()},
        **checkpoint["model_args"],
    }
    changed = check_resume(
        checkpoint, ckpt_path, model_args, config, data_fingerprint, print if master else None
    )
    model.load_state_dict(checkpoint["model"])
    hyper = [
        {name: v for name, v in group.items() if name != "params"}
        for group in optimizer.param_groups
    ]
    # its moments, and its saved hyperparameters ...
    optimizer.load_state_dict(checkpoint["optimizer"])
    for group, new in zip(optimizer.param_groups, hyper):
        # ... which this config's replace (weight_decay, betas; the same values if unchanged)
        group.update(new)
    iter_num, best_val_loss, resumed_at = (
        checkpoint["iter_num"],
        checkpoint["best_val_loss"],
        checkpoint["iter_num"],
    )
    del checkpoint
# FlexAttention is fast only when compiled and has no dropout; elsewhere SDPA takes a dense mask
model.flex_attention = flex_attention and compile and device_type == "cuda" and dropout == 0
# validation uses it too (never FlexAttention's slow eager path)
compiled = torch.compile(model) if compile else model
model = (
    DDP(compiled, device_ids=[local_rank] if device_type == "cuda" else None) if ddp else compiled
)
gpu = torch.cuda.get_device_name(device) if device_type == "cuda" else None
flops_tok, peak = (
    flops_per_token(raw_model, mean_length, mlm_probability if not causal else 1.0),
    gpu and peak_flops(gpu),
)

if master:
    for leftover in [
        os.path.join(out_dir, f) for f in sorted(os.listdir(out_dir)) if f.endswith(".tmp.pt")
    ]:
        os.remove(leftover)  # a checkpoint cut short by a run killed while writing it
        print(f"note: removed {leftover}, a checkpoint cut short by a run that was stopped")
    # keep the log's rows up to the checkpoint's step (later steps run and log again), none cut
    # short by a kill
    if resume:
        lines = open(log_path).readlines() if os.path.exists(log_path) else []
        kept = [
            line for line in lines if line.endswith("}\n") and json.loads(line)["iter"] <= iter_num
        ]
        if len(kept) < len(lines):
            print(
                f"note: {log_path}: {len(lines) - len(kept)} rows after step {iter_num} removed"
                " (they are logged again)"
            )
            atomic_write_text(log_path, "".join(kept))
    # a fresh run (--overwrite=True where out_dir held one) leaves nothing of an earlier run behind
    elif earlier_run:
        for path in earlier_run:
            os.remove(path)
        print(
            "note: --overwrite=True removed the earlier run's"
            f" {', '.join(map(os.path.basename, earlier_run))}"
        )
    # line-buffered: each JSON row reaches log.jsonl as it is written
    log = open(log_path, "a", buffering=1)
    print(
        f"data: {data_dir} ({encoding}): {len(train_data):,} train / {len(val_data):,} val samples,"
        f" {mean_length:.0f} tokens/sample (max {longest['train']}), vocab {len(vocab)}"
    )
    print(
        f"model: {raw_model.num_params() / 1e6:.2f}M parameters, {n_layer} layers × {n_head} heads"
        f" × {n_embd // n_head}, block_size"
        f" {block_size}{'' if config['block_size'] else ' (the longest sample)'},"
        f" {'causal' if causal else 'bidirectional (MLM p=%g)' % mlm_probability}, k={k}"
        + (
            f", number head {num_head}" + (f" (K={n_components})" if num_head == "gmm" else "")
            if encoding == "xval"
            else ""
        )
    )
    print(
        f"batch: {batch_size} samples/step = {micro_batch_size} × {world_size} processes × {accum} "
        f"accumulation steps, ~{batch_size * mean_length:,.0f} tokens/step"
        + (
            f", packed in rows of {pack_length} tokens, {pack_rows} a micro-batch (the least"
            " padding)"
            if pack_rows
            else ""
        )
    )
    print(
        f"system: {device}"
        f" ({gpu or device_type}{', %d threads' % torch.get_num_threads() if device_type == 'cpu' else ''}),"
        f" {dtype}, compile={compile}, attention {'flex' if raw_model.flex_attention else 'sdpa'},"
        f" world size {world_size},"
        f" {'resuming at step %d' % iter_num if resume else 'from scratch'}"
    )
    if resume and changed:
        print(
            "resume: changed settings applied: "
            + ", ".join(f"{name} {a!r} → {b!r}" for name, (a, b) in changed.items())
        )
    if resume and changed.keys() & {"max_iters", "learning_rate", "min_lr", "warmup_iters"}:
        print(
            f"resume: the learning rate schedule changed; at step {iter_num} the learning rate was "
            f"{get_lr(iter_num, saved):.2e} and now is {get_lr(iter_num, config):.2e}"
        )


def forward(m, batch):
    return m(
        batch["ids"],
        batch["values"],
        batch["targets"],
        batch["target_values"],
        batch["pos"],
        batch["doc"],
        batch["pred"],
    )


def micro_batches(step):
    """This process's micro-batches of one step, and the step's predicted tokens and numbers over
    all processes: each process checks and counts the whole step, so all reach the same counts (and
    stop on a bad sample) without a collective."""
    positions, indices = step_samples(len(train_data), batch_size, step, seed)
    train_data.check_finite(indices)
    batches = step_batches(
        train_data,
        step,
        seed,
        batch_size,
        micro_batch_size,
        rank,
        world_size,
        causal,
        mlm_probability,
        packing,
        pack_length,
        device_type == "cuda",
        pack_rows,
    )
    everyone = (
        batches
        if world_size == 1
        else [
            collate(
                training_examples(
                    train_data, indices, positions, step, seed, causal, mlm_probability
                )
            )
        ]
    )
    n_numbers = (
        sum(int((b["targets"] == vocab.num_id).sum()) for b in everyone)
        if vocab.num_id is not None
        else 0
    )
    return batches, sum(len(b["pred"]) for b in everyone), n_numbers


@torch.no_grad()
def evaluate():
    """Token CE and number MSE over masked positions of the first val samples (fixed masks)."""
    model.eval()
    keys = ("ce_sum", "n_tokens", "num_sum", "n_numbers")
    totals = torch.zeros(len(keys), dtype=torch.float64, device=device)
    for start in range(rank * micro_batch_size, n_val, micro_batch_size * world_size):
        idx = np.arange(start, min(start + micro_batch_size, n_val))
        batch = to_device(
            collate(training_examples(val_data, idx, idx, VAL_STEP, seed, causal, mlm_probability)),
            device,
        )
        with autocast:
            sums = forward(compiled, batch)
        totals += torch.stack([sums[k].double() for k in keys])
    if ddp:
        dist.all_reduce(totals)
    model.train()
    return dict(
        zip(("val_loss", "val_ce", "val_mse"), loss_from(dict(zip(keys, totals)), num_loss_weight))
    )


def stop_unless_finite(metrics, step, what, before):
    """Stop the run if a loss or gradient norm is NaN or infinite; returns them as floats (one copy
    to the host)."""
    values = torch.stack([v.detach().double() for v in metrics.values()]).tolist()
    if bad := ", ".join(f"{k} {v}" for k, v in zip(metrics, values) if not math.isfinite(v)):
        last = (
            f"{ckpt_path} is untouched: fix the data (then add --changed_data=True) or the"
            " settings, and --resume from it"
            if os.path.exists(ckpt_path)
            else "no checkpoint was written"
        )
        stop(f"error: step {step}: non-finite {what} ({bad}); stopped before {before}; {last}")
    return dict(zip(metrics, values))


def save_checkpoint(path):
    checkpoint = {
        "model": raw_model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "model_args": model_args,
        "config": config,
        "iter_num": iter_num,
        "best_val_loss": best_val_loss,
        "text_tokens": vocab.text_tokens,
        "data_dir": data_dir,
        "data_fingerprint": data_fingerprint,
    }
    try:
        with atomic_file(path) as tmp:  # a crash never leaves a half checkpoint
            torch.save(checkpoint, tmp)
    except (OSError, RuntimeError) as e:  # a full disk reaches torch's zip writer as either
        stop(
            f"error: writing {path} failed ({why_not_written(e, out_dir)}); then --resume (from the"
            f" last whole checkpoint, {ckpt_path}, if any)"
        )


# training loop --------------------------------------------------------------- a thread builds the
# next step's micro-batches while this one computes; the host waits for the device only on a checked
# step: a logged one, one before a checkpoint, and (one process) one after a SIGTERM
# upcoming: the next step's batches, a Future
loader, upcoming = ThreadPoolExecutor(max_workers=1), None
t_start, t_last, tokens_since, positions_since, steps_since, first_log = (
    time.time(),
    time.time(),
    0,
    0,
    0,
    True,
)
health, stopping, sigterm = torch.zeros(1, device=device), False, note_sigterm()
while True:
    if (iter_num % eval_interval == 0 or iter_num == max_iters) and iter_num != resumed_at:
        metrics = stop_unless_finite(
            evaluate(), iter_num, "validation loss", "writing a checkpoint"
        )
        if master:
            print(
                f"step {iter_num}: val loss {metrics['val_loss']:.4f} (CE {metrics['val_ce']:.4f}, "
                f"number {num_loss_name} {metrics['val_mse']:.4g})"
            )
            log.write(json.dumps({"iter": iter_num, **metrics}) + "\n")
            improved, best_val_loss = (
                metrics["val_loss"] < best_val_loss,
                min(best_val_loss, metrics["val_loss"]),
            )
            if iter_num > 0:
                for path in (best_path, ckpt_path) if improved else (ckpt_path,):
                    save_checkpoint(path)
        # validation is not training time
        t_last, tokens_since, positions_since, steps_since = time.time(), 0, 0, 0
    if master and keep_every and iter_num % keep_every == 0 and iter_num not in (0, resumed_at):
        save_checkpoint(os.path.join(out_dir, f"ckpt_{iter_num}.pt"))
    if iter_num >= max_iters:
        break
    # a SIGTERM (preemption): every process agreed at the last checked step to stop here
    if stopping:
        if master and iter_num % eval_interval:  # (an evaluation step has just saved it)
            save_checkpoint(ckpt_path)
        if ddp:
            dist.barrier()  # rank 0's checkpoint is whole before any process leaves
        stop(
            f"stopped by a SIGTERM after step {iter_num}, saved in {ckpt_path}: continue with the"
            " same command and --resume"
        )
    lr = get_lr(iter_num, config)
    for group in optimizer.param_groups:
        group["lr"] = lr
    # dropout: a resume repeats it
    torch.manual_seed(int(np.random.SeedSequence([seed, rank, iter_num]).generate_state(1)[0]))
    try:
        batches, n_tokens, n_numbers = (upcoming or loader.submit(micro_batches, iter_num)).result()
    except SystemExit as e:  # a bad sample: every process meets it at this step
        stop(e.code)
    upcoming = loader.submit(micro_batches, iter_num + 1) if iter_num + 1 < max_iters else None
    loss_sum = torch.zeros(3, device=device)
    for i, cpu_batch in enumerate(batches):
        with nullcontext() if (not ddp or i == len(batches) - 1) else model.no_sync(), autocast:
            loss, ce, mse = loss_from(
                forward(model, to_device(cpu_batch, device)), num_loss_weight, n_tokens, n_numbers
            )
        # DDP averages over processes: the average of world_size × shares is the global mean's
        (loss * world_size).backward()
        loss_sum += torch.stack([loss, ce, mse]).detach()
        tokens_since += cpu_batch["n_real"]
        positions_since += cpu_batch["ids"].numel()
    # inf: measured, not clipped
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip or math.inf)
    # on the device, no wait: 0 while all are finite, NaN for ever after (inf·0)
    health += (loss_sum.sum() + grad_norm) * 0
    logging = (iter_num + 1) % log_interval == 0 or iter_num + 1 == max_iters
    if (
        logging
        or (iter_num + 1) % eval_interval == 0
        or keep_every
        and (iter_num + 1) % keep_every == 0
        or sigterm
        and not ddp
    ):
        shared = torch.cat([loss_sum, health, torch.tensor([float(len(sigterm))], device=device)])
        # the global batch's loss (the sum of each process's share of its mean), any process's NaN,
        # and SIGTERMs
        if ddp:
            dist.all_reduce(shared)
        # before the optimizer writes this step's gradient into the weights, and before any
        # checkpoint: every process stops
        losses = dict(
            zip(
                (
                    "loss",
                    "CE",
                    num_loss_name,
                    "a loss or gradient norm since the last check",
                    "SIGTERMs",
                ),
                shared,
            )
        )
        checked = stop_unless_finite(losses, iter_num + 1, "training loss", "the optimizer step")
        loss_val, ce_val, mse_val, stopping = (
            checked["loss"],
            checked["CE"],
            checked[num_loss_name],
            checked["SIGTERMs"],
        )
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num, steps_since = iter_num + 1, steps_since + 1

    if logging:
        dt = time.time() - t_last
        # real tokens only: padding does not count
        step_s, tokens_per_s = dt / steps_since, tokens_since * world_size / dt
        mfu = flops_tok * tokens_per_s / (peak * world_size) if peak else None
        left = step_s * (max_iters - iter_num)  # training time only: validations add theirs
        if master:
            print(
                f"iter {iter_num}/{max_iters}: loss {loss_val:.4f} (CE {ce_val:.4f},"
                f" {num_loss_name} {mse_val:.4g}), lr {lr:.2e}, {step_s * 1000:.0f} ms/step,"
                f" {tokens_per_s:,.0f} tokens/s"
                + (f", MFU {mfu * 100:.1f}%" if mfu is not None else "")
                + f", ~{format_duration(left)} left"
            )
            if first_log and device_type == "cpu" and left > 86400:
                print(
                    f"warning: at {step_s:.2f} s/step this run of {max_iters:,} steps takes"
                    f" ~{format_duration(left)} on the CPU: a paper-scale run; for a CPU try"
                    " config/own_small.py (or config/*_small.py)"
                )
            log.write(
                json.dumps(
                    dict(
                        iter=iter_num,
                        loss=loss_val,
                        ce=ce_val,
                        mse=mse_val,
                        lr=lr,
                        ms_per_step=step_s * 1000,
                        tokens_per_s=tokens_per_s,
                        mfu=mfu,
                        padding=1 - tokens_since / positions_since,
                        peak_memory_gib=(
                            torch.cuda.max_memory_allocated(device) / 2**30 if gpu else None
                        ),
                    )
                )
                + "\n"
            )
        t_last, tokens_since, positions_since, steps_since, first_log = time.time(), 0, 0, 0, False

loader.shutdown()  # nothing is left to build: no step beyond max_iters is ever submitted
if master:  # what to run next: own data (prepare/text.py) names its keys in meta.json
    log.close()
    release_lock(lock_path)
    test = next(
        (f"{data_dir}/{s}.txt" for s in ("test", "val") if os.path.exists(f"{data_dir}/{s}.txt")),
        "FILE",
    )
    # none is best when no validation beat step 0
    best = best_path if os.path.exists(best_path) else ckpt_path
    print(
        f"done in {format_duration(time.time() - t_start)}: checkpoints in {out_dir}/ ("
        + (
            f"{best_path} has the lowest validation loss, "
            if best == best_path
            else "no validation beat step 0; "
        )
        + f"{ckpt_path} the last step); predict with:\n  "
        + shell_line(
            "python",
            "sample.py",
            f"--ckpt={best}",
            f"--input={test}",
            (
                f"--mask_key={meta.get('mask_key') or next(iter(meta['scales']))}"
                if meta.get("dataset") == "text" and meta.get("scales")
                else "--mask_last"
            ),
        )
    )
# wait for rank 0's last checkpoint: tearing gloo down while another process uses it can abort
if ddp:
    dist.barrier()
    dist.destroy_process_group()
    # and leave without the interpreter's teardown, in which gloo's threads,
    sys.stdout.flush(), sys.stderr.flush()
    # still held by DDP, can abort a finished run (exit code -6, about 1 run in 25 on a busy CPU)
    os._exit(0)
