"""From tokenized samples to model inputs: MLM masks or AR targets, padded or packed; what is
random depends on (seed, step, sample position) alone."""

import functools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from dataset import EOS_ID, MASK_ID, PAD_ID
from model import IGNORE

# the "step" whose masks validation uses: fixed, and never a training step
VAL_STEP = 2**40


# a step spans at most two epochs
@functools.lru_cache(maxsize=2)
def epoch_order(n, seed, epoch):
    order = np.random.default_rng([seed, epoch]).permutation(n)
    order.flags.writeable = False
    return order


def step_samples(n, batch_size, step, seed):
    """(stream positions, sample indices) of one optimizer step."""
    g = np.arange(step * batch_size, (step + 1) * batch_size)
    epochs, within = np.divmod(g, n)
    idx = np.empty_like(g)
    for e in np.unique(epochs):
        idx[epochs == e] = epoch_order(n, seed, int(e))[within[epochs == e]]
    return g, idx


def fill_in_example(ids, values, ask):
    """Mask the tokens marked `ask`: (inputs, input values, targets, target values)."""
    inputs, input_values = np.where(ask, MASK_ID, ids), np.where(ask, 1.0, values)
    return inputs, input_values.astype(np.float32), np.where(ask, ids, IGNORE), values


def mlm_mask(ids, values, probability, rng):
    """Mask each token independently with `probability` (paper §2)."""
    return fill_in_example(ids, values, rng.random(len(ids)) < probability)


def ar_example(ids, values):
    """Next-token prediction: the sample followed by [EOS], shifted by one."""
    ids, values = np.append(ids, EOS_ID), np.append(values, np.float32(1.0))
    return ids[:-1], values[:-1], ids[1:], values[1:]


def collate(examples):
    """Pad examples one to a row: a dict of (B, T) tensors."""
    return _rows([[e] for e in examples])


def fill_rows(lengths, row_length):
    """Samples in rows of row_length tokens: the longest left, then the subset filling it best."""
    left, rows = sorted(range(len(lengths)), key=lambda i: -lengths[i]), []
    while left:
        row, rest, room = [left[0]], left[1:], row_length - lengths[left[0]]
        # reach[k, n]: some of rest[:k] sum to n
        reach = np.arange(room + 1) == np.zeros((len(rest) + 1, 1), int)
        for k, i in enumerate(rest):
            reach[k + 1] = reach[k]
            reach[k + 1, lengths[i] :] |= reach[k, : max(room + 1 - lengths[i], 0)]
        n = int(np.flatnonzero(reach[-1])[-1])
        # walking back: rest[k - 1] is needed where n is out of reach without it
        for k in range(len(rest), 0, -1):
            if not reach[k - 1, n]:
                row, n = row + [rest[k - 1]], n - lengths[rest[k - 1]]
        rows.append(row)
        left = [i for i in rest if i not in row]
    return rows


def pack(examples, row_length=None):
    """Pack examples several to a row of row_length tokens (default: the longest)."""
    rows = fill_rows([len(e[0]) for e in examples], row_length or max(len(e[0]) for e in examples))
    return _rows([[examples[i] for i in row] for row in rows])


def _rows(rows, shape=None):
    """Rows of examples as (B, T) tensors, with pred and n_real (tokens not padding)."""
    lengths = [sum(len(e[0]) for e in row) for row in rows]
    B, T = shape or (len(rows), max(lengths))
    ids, targets = np.full((B, T), PAD_ID, np.int64), np.full((B, T), IGNORE, np.int64)
    values, target_values = np.ones((B, T), np.float32), np.ones((B, T), np.float32)
    # doc -1: padding
    pos, doc = np.zeros((B, T), np.int64), np.full((B, T), -1, np.int64)
    for b, row in enumerate(rows):
        ends = np.cumsum([len(e[0]) for e in row], dtype=int)
        for d, ((i, v, t, tv), end) in enumerate(zip(row, ends)):
            span = slice(end - len(i), end)
            ids[b, span], values[b, span], targets[b, span], target_values[b, span] = i, v, t, tv
            pos[b, span], doc[b, span] = np.arange(len(i)), d
    # one sample a row, no padding
    simple = B == len(rows) and all(len(row) == 1 for row in rows) and min(lengths) == T
    batch = dict(ids=ids, values=values, targets=targets, target_values=target_values, pos=pos)
    batch = {k: torch.from_numpy(v) for k, v in batch.items()}
    batch["pred"] = torch.from_numpy(np.flatnonzero(targets != IGNORE))
    batch["doc"] = None if simple else torch.from_numpy(doc)
    batch["n_real"] = sum(lengths)
    return batch


def training_examples(split, indices, positions, step, seed, causal, mlm_probability):
    """The masked (MLM) or shifted (AR) examples of samples at one step."""
    samples = [split[int(i)] for i in indices]
    if causal:
        return [ar_example(*s) for s in samples]
    rngs = [np.random.default_rng([seed, step, int(g)]) for g in positions]
    return [mlm_mask(*s, mlm_probability, rng) for s, rng in zip(samples, rngs)]


def choose_packing(
    split, batch_size, micro_batch_size, world_size, seed, shortest, longest, pack_length=0
):
    """(pack_length, rows a micro-batch) that pad the first 20 steps least (or of pack_length)."""
    if pack_length:
        return pack_length, packed_rows(split, micro_batch_size, pack_length)
    lengths, mean, cost = np.asarray(split.lengths), float(np.mean(split.lengths)), {}
    steps = [lengths[step_samples(len(split), batch_size, s, seed)[1]] for s in range(20)]
    for n in range(-(-shortest // 64) * 64, longest + 1, 64):
        counts = [len(fill_rows(step.tolist(), n)) for step in steps]
        for r in range(1, max(1, int(micro_batch_size * mean // n)) + 1):
            cost[n, r] = sum(-(-c // (r * world_size)) * r * n for c in counts), -r * n
    return min(cost, key=cost.get, default=(longest, 1))


def packed_rows(split, micro_batch_size, pack_length):
    """Rows a packed micro-batch holds: those micro_batch_size mean samples fill."""
    return max(1, round(micro_batch_size * float(np.mean(split.lengths)) / pack_length))


def step_batches(
    split,
    step,
    seed,
    batch_size,
    micro_batch_size,
    rank=0,
    world_size=1,
    causal=False,
    mlm_probability=0.2,
    packing=False,
    pack_length=0,
    pin=False,
    pack_rows=0,
):
    """One process's micro-batches of a step, padded or packed; pin: page-locked."""
    positions, indices = step_samples(len(split), batch_size, step, seed)
    lengths = np.asarray(split.lengths)[indices]
    fixed = packing and pack_length
    if fixed:
        R = pack_rows or packed_rows(split, micro_batch_size, pack_length)
        rows = fill_rows(lengths.tolist(), pack_length)
        # micro-batches per process; mine[m::M] spreads the padding rows
        M = -(-len(rows) // (R * world_size))
        mine = rows[rank::world_size]
        j = [i for row in mine for i in row]
        mine += [[]] * (M * R - len(mine))
    else:
        j = np.argsort(lengths, kind="stable")[rank::world_size]
    examples = training_examples(
        split, indices[j], positions[j], step, seed, causal, mlm_probability
    )
    if fixed:
        examples = dict(zip(j, examples))
        batches = [
            _rows([[examples[i] for i in row] for row in mine[m::M]], (R, pack_length))
            for m in range(M)
        ]
    else:
        starts = range(0, len(examples), micro_batch_size)
        chunks = [examples[i : i + micro_batch_size] for i in starts]
        batches = [pack(c) if packing else collate(c) for c in chunks]
    return [
        {k: v.pin_memory() if pin and isinstance(v, torch.Tensor) else v for k, v in b.items()}
        for b in batches
    ]


def prefetched(make, first, end):
    """make(first), ..., make(end - 1), each built on a thread as the one before is used."""
    with ThreadPoolExecutor(max_workers=1) as loader:
        upcoming = loader.submit(make, first) if first < end else None
        for step in range(first + 1, end + 1):
            ready = upcoming.result()
            upcoming = loader.submit(make, step) if step < end else None
            yield ready


def to_device(batch, device):
    """The batch on `device` (to CUDA: page-locked, copied asynchronously)."""
    cuda = torch.device(device).type == "cuda"

    def move(v):
        return v.pin_memory().to(device, non_blocking=True) if cuda else v.to(device)

    return {k: move(v) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
