"""
Train an xVal (or text-encoding) transformer on a tokenized dataset (--help lists the settings).

    python train.py config/quickstart.py
    torchrun --standalone --nproc_per_node=4 train.py config/era5_xval.py
"""

import math
import os
import sys
import time
from contextlib import nullcontext

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import checkpoint
import distributed
import preflight
import report
from batching import (
    VAL_STEP,
    choose_packing,
    collate,
    prefetched,
    step_batches,
    to_device,
    training_examples,
)
from configurator import configure
from dataset import Split, Vocab, fingerprint, load_text_vocab
from distributed import exit_on_ctrl_c, print0
from model import GPT, GPTConfig, configure_optimizer, flops_per_token, loss_from

# -- config
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
causal = False  # True: autoregressive; False: masked language modelling (the paper's)
# objective
mlm_probability = 0.2  # chance that each token is masked (0.3 for look-up)
num_loss_weight = 1.0  # λ in CE + λ·MSE
nmse_eps = 1e-3  # ε in the NMSE loss of multi-scale xVal (k > 0)
num_head = "mse"  # xVal number head: mse (one value, λ·MSE) | gmm (a Gaussian mixture, λ·NLL)
n_components = 8  # gmm: mixture components
# optimisation
batch_size = 64  # samples per optimizer step, over all processes and micro-batches
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
eval_batches = 20  # validation batches (of batch_size samples) per evaluation
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
# a number not named: [0, inf)
# fmt: off
RANGES = dict(
    encoding="xval | p10 | p1000 | b1999 | fp15", k="[0, 38]", n_layer="[1, inf)",
    n_head="[1, inf)", n_embd="[1, inf) multiple of n_head", dropout="[0, 1)",
    mlm_probability="(0, 1) unless causal", nmse_eps="(0, inf)", num_head="mse | gmm",
    n_components="[1, inf)", batch_size="[1, inf)", micro_batch_size="[1, inf)",
    max_iters="[1, inf)", learning_rate="(0, inf)", min_lr="[0, learning_rate]", beta1="[0, 1)",
    beta2="[0, 1)", eval_interval="[1, inf)", eval_batches="[1, inf)", log_interval="[1, inf)",
    seed="[0, 4294967295]", device="auto | cpu | mps | cuda | cuda:N",
    dtype="auto | bfloat16 | float32", compile="auto | True | False",
)
# fmt: on
config = configure(globals(), __file__)
iter_num = 0
exit_on_ctrl_c(lambda: f" at step {iter_num}: continue from the last checkpoint with --resume")
sys.stdout.reconfigure(line_buffering=True)

# -- set-up
ddp, rank, local_rank, world_size, device = distributed.init_processes(device, threads)
master = rank == 0
device_type = "cuda" if device.startswith("cuda") else device
resume, earlier_run = checkpoint.claim_out_dir(out_dir, resume, overwrite, master)
ckpt_path = os.path.join(out_dir, "ckpt_latest.pt")
dtype, autocast = preflight.pick_precision(dtype, device_type)
compile = preflight.pick_compile(compile, device_type)
# FlexAttention where it is fast, else a dense mask
flex = flex_attention and compile and device_type == "cuda" and dropout == 0
micro_batch_size = preflight.fit_micro_batch(batch_size, micro_batch_size, world_size, print0)
torch.manual_seed(seed)
# no TF32: it rounds the number head to ~1e-3
torch.set_float32_matmul_precision("highest")

# -- data
try:
    vocab = Vocab(load_text_vocab(data_dir), encoding)
    train_data = Split(data_dir, "train", encoding, vocab)
    val_data = Split(data_dir, "val", encoding, vocab)
    data_fingerprint = fingerprint(data_dir, encoding)
except (FileNotFoundError, ValueError) as e:
    lost = resume and isinstance(e, FileNotFoundError)
    distributed.stop(f"error: {e}" + (checkpoint.trained_on(ckpt_path) if lost else ""))
longest = max(int(split.lengths.max()) for split in (train_data, val_data))
block_size = block_size or longest
preflight.check_splits(data_dir, train_data, val_data, block_size, packing, pack_length)
pack_rows = 0
if packing:
    args = (train_data, batch_size, micro_batch_size, world_size, seed, longest, 4 * block_size)
    pack_length, pack_rows = choose_packing(*args, pack_length=pack_length)
# a dense mask: refuse what cannot fit
if not flex:
    shapes = [(micro_batch_size, block_size), (pack_rows, pack_length)]
    preflight.check_attention_memory(shapes, n_head, device)
n_val = min(len(val_data), eval_batches * batch_size)
num_loss_name = "NLL" if num_head == "gmm" else "NMSE" if k > 0 else "MSE"

# -- model and optimizer
model_args = {key: config[key] for key in GPTConfig.__dataclass_fields__ if key in config}
model_args.update(block_size=block_size, vocab_size=len(vocab))
model_args.update(num_id=-1 if vocab.num_id is None else vocab.num_id)
try:
    gptconf = GPTConfig(**model_args)
except ValueError as e:
    raise SystemExit(f"error: {e}")
model = raw_model = GPT(gptconf).to(device)
optimizer = configure_optimizer(model, weight_decay, learning_rate, (beta1, beta2), device_type)
# --resume: weights, optimizer, step
args = (ckpt_path, model, optimizer, model_args, config, data_fingerprint)
iter_num, best_val_loss, changed = checkpoint.resume_from(resume, *args)
resumed_at = iter_num if resume else None
model.flex_attention = flex
compiled = torch.compile(model) if compile else model
gpus = [local_rank] if device_type == "cuda" else None
model = DDP(compiled, device_ids=gpus) if ddp else compiled
# for MFU
mean_length = float(train_data.lengths.mean())
flops_tok = flops_per_token(raw_model, mean_length, mlm_probability if not causal else 1.0)


def get_lr(it, s):
    """Linear warm-up, then cosine decay to min_lr at max_iters (s: the settings)."""
    if it < s["warmup_iters"]:
        return s["learning_rate"] * (it + 1) / s["warmup_iters"]
    progress = min(1.0, (it - s["warmup_iters"]) / max(1, s["max_iters"] - s["warmup_iters"]))
    coeff = 0.5 * (1.0 + math.cos(math.pi * progress))
    return s["min_lr"] + coeff * (s["learning_rate"] - s["min_lr"])


log = checkpoint.tidy_out_dir(out_dir, resume, iter_num, earlier_run) if master else None
if master:
    used = dict(micro_batch_size=micro_batch_size, world_size=world_size, pack_length=pack_length)
    used.update(pack_rows=pack_rows, device=device, dtype=dtype, compile=compile)
    report.describe(config, used, resumed_at, train_data, val_data, vocab, raw_model)
    checkpoint.say_changes(changed, config, iter_num, get_lr)


def forward(m, b):
    return m(b["ids"], b["values"], b["targets"], b["target_values"], b["pos"], b["doc"], b["pred"])


def micro_batches(step):
    """This process's micro-batches of a step, and the tokens and numbers they predict."""
    how = (rank, world_size, causal, mlm_probability, packing, pack_length, device_type == "cuda")
    batches = step_batches(train_data, step, seed, batch_size, micro_batch_size, *how, pack_rows)
    numbers = sum(int((b["targets"] == gptconf.num_id).sum()) for b in batches)
    return batches, (sum(len(b["pred"]) for b in batches), numbers)


def step_counts(counts):
    if not ddp:
        return counts
    counts = torch.tensor(counts, device=device)
    dist.all_reduce(counts)
    return counts


SUMS = ("ce_sum", "n_tokens", "num_sum", "n_numbers")
VAL = ("val_loss", "val_ce", "val_mse")
CHECKED = ("loss", "CE", num_loss_name, "a loss or gradient norm since the last check")


@torch.no_grad()
def evaluate():
    """Loss, CE and number loss of the first n_val validation samples."""
    model.eval()
    sums = torch.zeros(len(SUMS), dtype=torch.float64, device=device)
    for start in range(rank * micro_batch_size, n_val, micro_batch_size * world_size):
        idx = np.arange(start, min(start + micro_batch_size, n_val))
        examples = training_examples(val_data, idx, idx, VAL_STEP, seed, causal, mlm_probability)
        with autocast:
            out = forward(compiled, to_device(collate(examples), device))
        sums += torch.stack([out[key].double() for key in SUMS])
    if ddp:
        dist.all_reduce(sums)
    model.train()
    losses = torch.stack(loss_from(dict(zip(SUMS, sums)), num_loss_weight)).tolist()
    losses = checkpoint.stop_unless_finite(losses, VAL, iter_num, ckpt_path, validation=True)
    return dict(zip(VAL, losses))


def save(name):
    extra = dict(model_args=model_args, config=config, text_tokens=vocab.text_tokens)
    extra.update(data_dir=data_dir, data_fingerprint=data_fingerprint)
    path = os.path.join(out_dir, name)
    checkpoint.save_checkpoint(path, raw_model, optimizer, iter_num, best_val_loss, extra)


# -- training loop
t_start = time.time()
progress = report.Progress(log, iter_num, max_iters, world_size, device, flops_tok)
stopping = False
# non-finite losses and gradient norms since the last check
nonfinite = torch.zeros(1, dtype=torch.int64, device=device)
sigterm = distributed.note_sigterm()
steps = prefetched(micro_batches, iter_num, max_iters)
while True:
    # determine and set the learning rate
    lr = get_lr(iter_num, config)
    for group in optimizer.param_groups:
        group["lr"] = lr
    # evaluate, and write the latest and best checkpoints
    if (iter_num % eval_interval == 0 or iter_num == max_iters) and iter_num != resumed_at:
        val = evaluate()
        if master:
            report.say_validation(log, iter_num, val, num_loss_name)
            if val["val_loss"] < best_val_loss:
                best_val_loss = val["val_loss"]
                if iter_num > 0:
                    save("ckpt_best.pt")
            if iter_num > 0:
                save("ckpt_latest.pt")
        progress.restart(iter_num)
    if master and keep_every and iter_num % keep_every == 0 and iter_num not in (0, resumed_at):
        save(f"ckpt_{iter_num}.pt")
    if iter_num >= max_iters:
        break
    # after a SIGTERM
    if stopping:
        if master and iter_num % eval_interval:
            save("ckpt_latest.pt")
        distributed.stop_after_sigterm(iter_num, ckpt_path)
    # dropout follows (seed, rank, step): a resume repeats it
    torch.manual_seed(int(np.random.SeedSequence([seed, rank, iter_num]).generate_state(1)[0]))
    batches, counts = next(steps)
    n_tokens, n_numbers = step_counts(counts)
    # forward and backward
    loss_sum = torch.zeros(3, device=device)
    for i, cpu_batch in enumerate(batches):
        with model.no_sync() if ddp and i < len(batches) - 1 else nullcontext(), autocast:
            sums = forward(model, to_device(cpu_batch, device))
            loss, ce, num = loss_from(sums, num_loss_weight, n_tokens, n_numbers)
        # DDP averages: world_size × each share is the global mean
        (loss * world_size).backward()
        loss_sum += torch.stack([loss, ce, num]).detach()
        progress.count(cpu_batch)
    # clip the gradient (grad_clip 0: measured only)
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip or math.inf)
    nonfinite += (~torch.cat([loss_sum, grad_norm.view(1)]).isfinite()).sum()
    done = iter_num + 1
    logging = done % log_interval == 0 or done == max_iters
    checking = logging or done % eval_interval == 0 or (keep_every and done % keep_every == 0)
    # a SIGTERM noted by any process: all stop after this step
    if checking or not ddp:
        stopping = distributed.sigterm_noted(sigterm, device)
    # a non-finite loss stops every process before the optimizer step
    if checking or stopping:
        losses = distributed.sum_over_processes(torch.cat([loss_sum, nonfinite]))
        # a count above 0 reads as nan
        losses[3] = math.nan if losses[3] else 0.0
        checkpoint.stop_unless_finite(losses, CHECKED, done, ckpt_path)
        nonfinite.zero_()
        # timing and logging
        if logging:
            progress.log_step(done, lr, losses[:3], num_loss_name)
    # step the optimizer, and flush the gradients
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1

# -- the end
if master:
    checkpoint.finish(out_dir, data_dir, time.time() - t_start)
distributed.end_processes()
