"""
Train an xVal (or text-encoding) transformer on a tokenized dataset.

    python train.py config/quickstart.py                              # one process (CPU or GPU)
    torchrun --nproc_per_node=4 train.py config/era5_xval.py          # DDP on 4 GPUs
    python train.py config/quickstart.py --max_iters=2000 --resume    # continue a run exactly
    python train.py --help                                            # every setting

Reads top to bottom: config, distributed setup, data, model, compile, loop (with eval and
checkpoints). Batches and masks are a function of (seed, step), so one process and N processes
with the same global batch see the same samples with the same masks and give the same losses.
"""
import json
import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from batching import VAL_STEP, accumulation_steps, collate, step_batches, step_samples, to_device, training_examples
from configurator import configure
from model import GPT, GPTConfig, configure_optimizer, flops_per_token, loss_from, peak_flops
from tokenize_numbers import ENCODINGS, Split, Vocab, load_text_vocab
from util import atomic_file, atomic_write_text, load_checkpoint, pick_device

# -- config: defaults, overridden by config files and --key=value (python train.py --help)
out_dir = "out"  # checkpoints (ckpt_latest.pt, ckpt_best.pt) and log.jsonl
data_dir = "data/arithmetic_ops2"  # a dataset tokenized by tokenize_numbers.py
encoding = "xval"  # xval | p10 | p1000 | b1999 | fp15
k = 0  # multi-scale xVal: 2k+1 number embeddings (paper eq. 1); 0 = plain xVal
# model
n_layer = 6
n_head = 6
n_embd = 768
block_size = 1024  # max context in tokens; a longer sample is an error
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
packing = False  # pack a micro-batch's samples several to a row (attention stays within each) instead of padding
pack_length = 0  # tokens per packed row, up to 4 × block_size: every micro-batch one shape; 0 = the micro-batch's longest sample
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
seed = 1337  # fixes the initialisation, sample order and masks
# system
device = "auto"  # auto | cpu | cuda | cuda:1 | mps
dtype = "auto"  # auto (bf16 on CUDA, else fp32) | bfloat16 | float32
compile = "auto"  # torch.compile: auto (on for CUDA, off elsewhere) | True (also on CPU, with a C++ compiler) | False
flex_attention = True  # with compile on CUDA: padded/packed rows attend block-sparsely (FlexAttention), not via a dense mask
# -- end config
config = configure(globals(), __file__)
sys.stdout.reconfigure(line_buffering=True)  # log lines appear at once, also when piped to a file
RUN_FILES = ("log.jsonl", "ckpt_latest.pt", "ckpt_best.pt")  # what a run leaves in out_dir
if resume and overwrite:
    raise SystemExit("error: --resume continues the run in out_dir and --overwrite=True replaces it; pick one")
if not (resume or overwrite) and (found := [f for f in RUN_FILES if os.path.exists(os.path.join(out_dir, f))]):
    raise SystemExit(f"error: {out_dir} holds a run ({', '.join(found)}); continue it with --resume "
                     "or delete it and start afresh with --overwrite=True")


def cut_log(path, step):
    """Keep the rows of log.jsonl up to a resumed checkpoint's step: the steps after it run (and are logged) again."""
    if not os.path.exists(path):
        return
    with open(path) as f:
        lines = f.readlines()
    kept = []
    for line in lines:
        try:
            if json.loads(line)["iter"] <= step:
                kept.append(line)
        except (json.JSONDecodeError, KeyError, TypeError):
            pass  # a row cut short by the kill that stopped the run
    if len(kept) < len(lines):
        print(f"note: {path}: {len(lines) - len(kept)} rows after step {step} removed (they are logged again)")
        atomic_write_text(path, "".join(kept))

# -----------------------------------------------------------------------------
# distributed setup
ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    rank, local_rank, world_size = (int(os.environ[v]) for v in ("RANK", "LOCAL_RANK", "WORLD_SIZE"))
else:
    rank, local_rank, world_size = 0, 0, 1
device = pick_device(device)
if ddp and device.startswith("cuda"):
    device = f"cuda:{local_rank}"
    torch.cuda.set_device(device)
if ddp:
    dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")
master = rank == 0
device_type = "cuda" if device.startswith("cuda") else device
if dtype == "auto":
    dtype = "bfloat16" if device_type == "cuda" and torch.cuda.is_bf16_supported() else "float32"
autocast = (torch.autocast(device_type=device_type, dtype=torch.bfloat16)
            if dtype == "bfloat16" else nullcontext())
if compile not in ("auto", True, False):
    raise SystemExit(f"error: compile expects 'auto', True or False, got {compile!r}")
if compile == "auto":  # off where it cannot work or rarely pays: CPU, MPS, Windows
    compile = device_type == "cuda" and os.name != "nt"
    if not compile and master:
        print(f"note: torch.compile is off on {device_type}{' (Windows)' if os.name == 'nt' else ''}; --compile=True forces it")
elif compile and device_type == "cpu":  # inductor's CPU code needs a C++ compiler
    from torch._inductor.cpp_builder import get_cpp_compiler
    try:
        get_cpp_compiler()
    except Exception as e:
        raise SystemExit(f"error: --compile=True on the CPU needs a C++ compiler (g++, or set CXX): {e}")
if encoding not in ENCODINGS:
    raise SystemExit(f"error: encoding {encoding!r} is not one of {', '.join(ENCODINGS)}")
accum = accumulation_steps(batch_size, micro_batch_size, world_size)
torch.manual_seed(seed)  # the same initialisation on every rank
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True

# -----------------------------------------------------------------------------
# data
try:
    vocab = Vocab(load_text_vocab(data_dir), encoding)
    train_data, val_data = Split(data_dir, "train", encoding), Split(data_dir, "val", encoding)
except (FileNotFoundError, ValueError) as e:
    raise SystemExit(f"error: {e}")
if packing and pack_length > 4 * block_size:
    raise SystemExit(f"error: pack_length {pack_length} is longer than 4 × block_size {block_size}")
for name, split in (("train", train_data), ("val", val_data)):
    longest = int(split.lengths.max())  # AR appends [EOS] and shifts by one: as many inputs as tokens
    if longest > block_size or (packing and longest > (pack_length or longest)):
        raise SystemExit(f"error: {data_dir}/{encoding}/{name} has a sample of {longest} tokens "
                         f"(index {int(split.lengths.argmax())}) but block_size is {block_size}"
                         + (f" and pack_length {pack_length}" if packing and pack_length else ""))
tokens_per_step = batch_size * float(train_data.lengths.mean())


def check_values(split, name, indices):
    """Refuse samples holding a non-finite number (an xVal literal beyond float32 is stored as inf)."""
    for i in map(int, indices):
        if not np.isfinite(split[i][1]).all():
            raise SystemExit(f"error: {data_dir}/{encoding}/{name}.values.npy: sample {i} (line {i + 1} of "
                             f"{name}.txt) holds a non-finite number; remove or rescale it and tokenize again")


check_values(val_data, "val", range(min(len(val_data), eval_batches * micro_batch_size)))  # what evaluate() reads
num_loss_name = "NLL" if num_head == "gmm" else "NMSE" if k > 0 else "MSE"  # multi-scale xVal normalises it

# -----------------------------------------------------------------------------
# model and optimizer
model_args = dict(vocab_size=len(vocab), num_id=vocab.num_id if vocab.num_id is not None else -1,
                  block_size=block_size, n_layer=n_layer, n_head=n_head, n_embd=n_embd, dropout=dropout,
                  encoding=encoding, k=k, causal=causal, nmse_eps=nmse_eps, num_head=num_head,
                  n_components=n_components)
try:
    GPTConfig(**model_args)
except ValueError as e:
    raise SystemExit(f"error: {e}")
ckpt_path = os.path.join(out_dir, "ckpt_latest.pt")
iter_num, best_val_loss, resumed_at = 0, float("inf"), None
if resume:
    if not os.path.exists(ckpt_path):
        raise SystemExit(f"error: --resume but no checkpoint at {ckpt_path}")
    checkpoint = load_checkpoint(ckpt_path)  # onto the CPU: the RNG state must stay a CPU tensor
    if checkpoint["text_tokens"] != vocab.text_tokens:
        raise SystemExit(f"error: {ckpt_path} was trained with another vocabulary than {data_dir}/vocab.json")
    for key in ("vocab_size", "n_layer", "n_head", "n_embd", "encoding", "k", "causal", "num_head", "n_components"):
        saved = checkpoint["model_args"].get(key, GPTConfig.__dataclass_fields__[key].default)  # older checkpoints lack some keys
        if saved != model_args[key]:
            raise SystemExit(f"error: {ckpt_path} has {key}={saved!r}, "
                             f"the config asks for {model_args[key]!r}")
    for key in ("data_dir", "batch_size", "seed", "mlm_probability", "causal"):  # they fix the data position restored
        if checkpoint["config"][key] != config[key]:
            raise SystemExit(f"error: {ckpt_path} was trained with {key}={checkpoint['config'][key]!r}, the config "
                             f"asks for {config[key]!r}; resuming would not continue the same sample stream")
    model_args = checkpoint["model_args"]
model = GPT(GPTConfig(**model_args)).to(device)
optimizer = configure_optimizer(model, weight_decay, learning_rate, (beta1, beta2), device_type)
if resume:
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    iter_num, best_val_loss = checkpoint["iter_num"], checkpoint["best_val_loss"]
    resumed_at = iter_num  # its validation is logged and saved already
    torch.set_rng_state(checkpoint["rng"]["torch"].cpu())
    if device_type == "cuda" and checkpoint["rng"]["cuda"] is not None:
        torch.cuda.set_rng_state(checkpoint["rng"]["cuda"].cpu())
    del checkpoint
raw_model = model
# FlexAttention is fast only when compiled and has no dropout; elsewhere SDPA takes a dense mask
model.flex_attention = flex_attention and compile and device_type == "cuda" and dropout == 0
compiled = torch.compile(model) if compile else model  # validation uses it too (never FlexAttention's slow eager path)
model = DDP(compiled, device_ids=[local_rank] if device_type == "cuda" else None) if ddp else compiled
flops_tok = flops_per_token(raw_model, float(train_data.lengths.mean()), mlm_probability if not causal else 1.0)
peak = peak_flops(torch.cuda.get_device_name(device)) if device_type == "cuda" else None

if master:
    os.makedirs(out_dir, exist_ok=True)
    if resume:
        cut_log(os.path.join(out_dir, "log.jsonl"), iter_num)
    else:  # a fresh run (--overwrite=True where out_dir held one) leaves nothing of an earlier run behind
        for name in RUN_FILES:
            if os.path.exists(os.path.join(out_dir, name)):
                os.remove(os.path.join(out_dir, name))
    print(f"data: {data_dir} ({encoding}): {len(train_data):,} train / {len(val_data):,} val samples, "
          f"{train_data.lengths.mean():.0f} tokens/sample (max {train_data.lengths.max()}), vocab {len(vocab)}")
    print(f"model: {raw_model.num_params() / 1e6:.2f}M parameters, {n_layer} layers × {n_head} heads × "
          f"{n_embd // n_head}, {'causal' if causal else 'bidirectional (MLM p=%g)' % mlm_probability}, k={k}"
          + (f", number head {num_head}" + (f" (K={n_components})" if num_head == "gmm" else "") if encoding == "xval" else ""))
    print(f"batch: {batch_size} samples/step = {micro_batch_size} × {world_size} processes × {accum} "
          f"accumulation steps, ~{tokens_per_step:,.0f} tokens/step")
    print(f"system: {device} ({torch.cuda.get_device_name(device) if device_type == 'cuda' else device_type}), "
          f"{dtype}, compile={compile}, attention {'flex' if raw_model.flex_attention else 'sdpa'}, world size {world_size}, "
          f"{'resuming at step %d' % iter_num if resume else 'from scratch'}")


def get_lr(it):
    """Linear warm-up, then cosine decay to min_lr at max_iters."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / warmup_iters
    progress = min(1.0, (it - warmup_iters) / max(1, max_iters - warmup_iters))
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (learning_rate - min_lr)


def micro_batches(step):
    """This process's micro-batches of one optimizer step: CPU work only (runs in the loader thread)."""
    batches = step_batches(train_data, step, seed, batch_size, micro_batch_size, rank, world_size, causal,
                           mlm_probability, packing, pack_length, pin=device_type == "cuda")
    if not all(bool(torch.isfinite(b["values"]).all()) for b in batches):
        check_values(train_data, "train", step_samples(len(train_data), batch_size, step, seed)[1])
    return batches


def target_counts(batches):
    """The step's numbers of predicted tokens and numbers, over all processes (python floats)."""
    counts = torch.tensor([sum(len(b["pred"]) for b in batches),
                           sum(int((b["targets"] == vocab.num_id).sum()) for b in batches)
                           if vocab.num_id is not None else 0], dtype=torch.float64, device=device)
    if ddp:  # the loss is a mean over the whole global batch, not a mean of per-process means
        dist.all_reduce(counts)  # on the device: NCCL reduces CUDA tensors only
    return counts.tolist()


@torch.no_grad()
def evaluate():
    """Token CE and number MSE over masked positions of the first val samples (fixed masks)."""
    model.eval()
    keys = ("ce_sum", "n_tokens", "num_sum", "n_numbers")
    totals = torch.zeros(len(keys), dtype=torch.float64, device=device)
    n = min(len(val_data), eval_batches * micro_batch_size)
    for start in range(rank * micro_batch_size, n, micro_batch_size * world_size):
        idx = np.arange(start, min(start + micro_batch_size, n))
        batch = to_device(collate(training_examples(val_data, idx, idx, VAL_STEP, seed, causal, mlm_probability)), device)
        with autocast:
            sums = compiled(batch["ids"], batch["values"], batch["targets"], batch["target_values"],
                            batch["pos"], batch["doc"], batch["pred"])
        totals += torch.stack([sums[k].double() for k in keys])
    if ddp:
        dist.all_reduce(totals)
    model.train()
    loss, ce, mse = loss_from(dict(zip(keys, totals)), num_loss_weight)
    return {"val_loss": loss.item(), "val_ce": ce.item(), "val_mse": mse.item()}


def stop_unless_finite(metrics, step, what, before):
    """Stop the run if a loss or gradient norm is NaN or infinite: one device-to-host copy."""
    values = list(metrics.values())
    if torch.is_tensor(values[0]):  # on the device: one copy to the host for all of them
        values = torch.stack([v.detach().float() for v in values]).tolist()
    if all(map(math.isfinite, values)):
        return
    bad = ", ".join(f"{k} {v}" for k, v in zip(metrics, values) if not math.isfinite(v))
    last = (f"{ckpt_path} is untouched: fix the data or the settings, then --resume from it"
            if os.path.exists(ckpt_path) else "no checkpoint was written")
    raise SystemExit(f"error: step {step}: non-finite {what} ({bad}); stopped before {before}; {last}")


def save_checkpoint(path):
    """Write to a temporary name, then rename: a crash never leaves a half checkpoint."""
    checkpoint = {
        "model": raw_model.state_dict(), "optimizer": optimizer.state_dict(), "model_args": model_args,
        "config": config, "iter_num": iter_num, "best_val_loss": best_val_loss,
        "text_tokens": vocab.text_tokens, "data_dir": data_dir,
        "rng": {"torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state(device) if device_type == "cuda" else None},
    }
    with atomic_file(path) as tmp:
        torch.save(checkpoint, tmp)


def log(record):
    if master:
        with open(os.path.join(out_dir, "log.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")


# -----------------------------------------------------------------------------
# training loop
# One background thread builds the next step's micro-batches (reading the memory-mapped arrays,
# masking, padding or packing, pinning) while this step computes, so the accelerator does not wait
# for the CPU. The batches are a pure function of (seed, step), so no loss changes and a resume
# starts at the right step. The thread does CPU work only: collectives (the all_reduce of the
# target counts) stay on the main thread, in the same order on every rank.
loader = ThreadPoolExecutor(max_workers=1)
upcoming = None  # the next step's batches, a Future
model.train()
t_last, tokens_since, positions_since, steps_since = time.time(), 0, 0, 0
while True:
    if (iter_num % eval_interval == 0 or iter_num == max_iters) and iter_num != resumed_at:
        metrics = evaluate()
        stop_unless_finite(metrics, iter_num, "validation loss", "writing a checkpoint")
        if master:
            print(f"step {iter_num}: val loss {metrics['val_loss']:.4f} (CE {metrics['val_ce']:.4f}, "
                  f"number {num_loss_name} {metrics['val_mse']:.4g})")
            log({"iter": iter_num, **metrics})
            if metrics["val_loss"] < best_val_loss:
                best_val_loss = metrics["val_loss"]
                if iter_num > 0:
                    save_checkpoint(os.path.join(out_dir, "ckpt_best.pt"))
            if iter_num > 0:
                save_checkpoint(ckpt_path)
        t_last, tokens_since, positions_since, steps_since = time.time(), 0, 0, 0  # validation is not training time
    if master and keep_every and iter_num % keep_every == 0 and iter_num not in (0, resumed_at):
        save_checkpoint(os.path.join(out_dir, f"ckpt_{iter_num}.pt"))
    if iter_num >= max_iters:
        break

    lr = get_lr(iter_num)
    for group in optimizer.param_groups:
        group["lr"] = lr
    batches = (upcoming or loader.submit(micro_batches, iter_num)).result()
    upcoming = loader.submit(micro_batches, iter_num + 1) if iter_num + 1 < max_iters else None
    n_tokens, n_numbers = target_counts(batches)
    loss_sum = torch.zeros(3, device=device)
    for i, cpu_batch in enumerate(batches):
        batch = to_device(cpu_batch, device)
        sync = nullcontext() if (not ddp or i == len(batches) - 1) else model.no_sync()
        with sync, autocast:
            sums = model(batch["ids"], batch["values"], batch["targets"], batch["target_values"],
                         batch["pos"], batch["doc"], batch["pred"])
            loss, ce, mse = loss_from(sums, num_loss_weight, n_tokens, n_numbers)
        # DDP averages gradients over processes; each process's share of the global mean is
        # scaled back up by world_size so the average is the gradient of the global mean
        (loss * world_size).backward()
        loss_sum += torch.stack([loss, ce, mse]).detach()
        tokens_since += cpu_batch["n_real"]
        positions_since += cpu_batch["ids"].numel()
    if grad_clip > 0:
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    else:
        grad_norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None])
    # a non-finite loss or gradient stops the run before the optimizer writes it into the weights
    # (and so before any checkpoint); loss_sum is finite up to this step, so this step is the culprit
    stop_unless_finite({"loss": loss_sum[0], "CE": loss_sum[1], num_loss_name: loss_sum[2],
                        "gradient norm": grad_norm}, iter_num + 1, "training loss", "the optimizer step")
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    steps_since += 1

    if iter_num % log_interval == 0 or iter_num == max_iters:
        if ddp:
            dist.all_reduce(loss_sum)
        loss_val, ce_val, mse_val = loss_sum.tolist()
        dt = time.time() - t_last
        tokens_per_s = tokens_since * world_size / dt  # real tokens only: padding does not count
        mfu = flops_tok * tokens_per_s / (peak * world_size) if peak else None
        memory = torch.cuda.max_memory_allocated(device) / 2**30 if device_type == "cuda" else None
        if master:
            print(f"iter {iter_num}: loss {loss_val:.4f} (CE {ce_val:.4f}, {num_loss_name} {mse_val:.4g}), lr {lr:.2e}, "
                  f"{dt / steps_since * 1000:.0f} ms/step, {tokens_per_s:,.0f} tokens/s"
                  + (f", MFU {mfu * 100:.1f}%" if mfu is not None else ""))
        log({"iter": iter_num, "loss": loss_val, "ce": ce_val, "mse": mse_val, "lr": lr,
             "ms_per_step": dt / steps_since * 1000, "tokens_per_s": tokens_per_s, "mfu": mfu,
             "padding": 1 - tokens_since / positions_since, "peak_memory_gib": memory})
        t_last, tokens_since, positions_since, steps_since = time.time(), 0, 0, 0

loader.shutdown()  # nothing is left to build: no step beyond max_iters is ever submitted
if ddp:
    # wait for rank 0 to finish its last checkpoint: a process that tears gloo down while
    # another still uses it can abort ("terminate called without an active exception")
    dist.barrier()
    dist.destroy_process_group()
