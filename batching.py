"""
From tokenized samples to model inputs: which samples form each batch, MLM masking (paper §2,
docs/decisions.md#masking), autoregressive targets, and padding (one sample per row) or packing (several samples
per row, attention kept within each) into (B, T) arrays.

Everything random here is a pure function of (seed, step, sample position), so a batch does not
depend on the number of processes, on gradient accumulation, or on a resume: sample g of the
training stream always lands in step g // batch_size with the same mask.
"""
import functools

import numpy as np
import torch

from model import IGNORE
from tokenize_numbers import EOS_ID, MASK_ID, PAD_ID


VAL_STEP = 2**40  # the "step" whose masks validation uses: fixed, and never a training step


@functools.lru_cache(maxsize=2)  # a step spans at most two epochs; rebuilding costs ~58 ms per 1M samples
def epoch_order(n, seed, epoch):
    """The order of the n training samples in one epoch (read-only: it is shared between steps)."""
    order = np.random.default_rng([seed, epoch]).permutation(n)
    order.flags.writeable = False
    return order


def step_samples(n, batch_size, step, seed):
    """(positions in the infinite training stream, sample indices) of one optimizer step."""
    g = np.arange(step * batch_size, (step + 1) * batch_size)
    epochs, within = np.divmod(g, n)
    idx = np.empty_like(g)
    for e in np.unique(epochs):
        order = epoch_order(n, seed, int(e))
        idx[epochs == e] = order[within[epochs == e]]
    return g, idx


def mlm_mask(ids, values, probability, rng):
    """
    Mask each token independently with `probability`: it becomes [MASK] and, if it was a number,
    its value input becomes 1. Returns (inputs, input values, targets, target values); targets are
    IGNORE where nothing is predicted.
    """
    masked = rng.random(len(ids)) < probability
    inputs = np.where(masked, MASK_ID, ids)
    input_values = np.where(masked, 1.0, values).astype(np.float32)
    targets = np.where(masked, ids, IGNORE)
    return inputs, input_values, targets, values


def ar_example(ids, values):
    """Next-token prediction: the sample followed by [EOS], shifted by one."""
    ids = np.append(ids, EOS_ID)
    values = np.append(values, np.float32(1.0))
    return ids[:-1], values[:-1], ids[1:], values[1:]


def fill_in_example(ids, values, ask):
    """Mask exactly the tokens marked `ask` (all tokens of each number to predict)."""
    inputs = np.where(ask, MASK_ID, ids)
    input_values = np.where(ask, 1.0, values).astype(np.float32)
    return inputs, input_values, np.where(ask, ids, IGNORE), values


def collate(examples):
    """
    Pad (inputs, values, targets, target values) examples into a dict of (B, T) tensors, one
    sample per row. 'doc' is None when no row is padded, so attention takes its unmasked path.
    """
    return _rows([[e] for e in examples])


def pack(examples, row_length=None):
    """
    Pack examples into as few rows as fit (first fit, longest first), several samples per row,
    instead of padding each: rows of row_length tokens (default: the longest example, so no row
    is longer than an unpacked batch's). 'doc' numbers the samples of a row so attention stays
    within each sample, and positions restart at every sample.
    """
    row_length = row_length or max(len(e[0]) for e in examples)
    rows, free = [], []
    for e in sorted(examples, key=lambda e: -len(e[0])):
        n = len(e[0])
        if n > row_length:
            raise ValueError(f"a sample of {n} tokens does not fit a row of {row_length}")
        r = next((r for r, f in enumerate(free) if f >= n), None)
        if r is None:
            rows.append([])
            free.append(row_length)
            r = len(rows) - 1
        rows[r].append(e)
        free[r] -= n
    return _rows(rows)


def _rows(rows):
    """Lay out rows of examples as (B, T) tensors: ids, values, targets, target_values, pos, doc."""
    lengths = [sum(len(e[0]) for e in row) for row in rows]
    B, T = len(rows), max(lengths)
    ids = np.full((B, T), PAD_ID, np.int64)
    values = np.ones((B, T), np.float32)
    targets = np.full((B, T), IGNORE, np.int64)
    target_values = np.ones((B, T), np.float32)
    pos = np.zeros((B, T), np.int64)
    doc = np.full((B, T), -1, np.int64)  # -1: padding
    for b, row in enumerate(rows):
        start = 0
        for d, (i, v, t, tv) in enumerate(row):
            span = slice(start, start + len(i))
            ids[b, span], values[b, span], targets[b, span], target_values[b, span] = i, v, t, tv
            pos[b, span], doc[b, span] = np.arange(len(i)), d
            start += len(i)
    simple = all(len(row) == 1 for row in rows) and min(lengths) == T  # one sample per row, no padding
    batch = {"ids": ids, "values": values, "targets": targets, "target_values": target_values,
             "pos": pos, "doc": None if simple else doc,
             "pred": np.flatnonzero(targets != IGNORE)}  # the predicted positions, flat: model.forward's pred
    batch = {k: (torch.from_numpy(v) if v is not None else None) for k, v in batch.items()}
    batch["n_real"] = sum(lengths)  # tokens that are not padding
    return batch


def training_examples(split, indices, positions, step, seed, causal, mlm_probability):
    """The masked (MLM) or shifted (AR) examples of the given samples at one step."""
    examples = []
    for i, g in zip(indices, positions):
        ids, values = split[int(i)]
        if causal:
            examples.append(ar_example(ids, values))
        else:
            rng = np.random.default_rng([seed, step, int(g)])  # this sample's mask at this step
            examples.append(mlm_mask(ids, values, mlm_probability, rng))
    return examples


def accumulation_steps(batch_size, micro_batch_size, world_size):
    """Micro-batches per process per step; an error unless they divide the global batch exactly."""
    accum, rem = divmod(batch_size, micro_batch_size * world_size)
    if rem or accum == 0:
        raise SystemExit(f"error: batch_size {batch_size} must be a multiple of micro_batch_size "
                         f"{micro_batch_size} × {world_size} processes")
    return accum


def step_batches(split, step, seed, batch_size, micro_batch_size, rank=0, world_size=1, causal=False,
                 mlm_probability=0.2, packing=False, pack_length=0, pin=False):
    """
    One process's micro-batches of one optimizer step (what train.py feeds the model): its share
    of the step's samples, masked (MLM) or shifted (AR), sorted by length, cut into micro-batches
    of micro_batch_size samples, then padded one sample per row or packed. pin: in page-locked
    memory, for asynchronous copies to a GPU. CPU work only, so it can run in a background thread.
    """
    positions, indices = step_samples(len(split), batch_size, step, seed)
    per_rank = batch_size // world_size
    mine = slice(rank * per_rank, (rank + 1) * per_rank)
    examples = training_examples(split, indices[mine], positions[mine], step, seed, causal, mlm_probability)
    # samples of similar length share a micro-batch, so less is padded; the loss is a mean over the
    # whole step's batch, so the grouping does not change the gradient
    examples.sort(key=lambda e: len(e[0]))
    chunks = [examples[i:i + micro_batch_size] for i in range(0, per_rank, micro_batch_size)]
    batches = [pack(c, pack_length or None) if packing else collate(c) for c in chunks]
    if pin:
        batches = [{k: v.pin_memory() if isinstance(v, torch.Tensor) else v for k, v in b.items()} for b in batches]
    return batches


def to_device(batch, device):
    """Move a batch to the device; pinned (if it is not yet), non-blocking copies on CUDA."""
    out, cuda = {}, torch.device(device).type == "cuda"
    for k, v in batch.items():
        if isinstance(v, torch.Tensor):
            if cuda:
                v = v.pin_memory().to(device, non_blocking=True)
            else:
                v = v.to(device)
        out[k] = v
    return out
