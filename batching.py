"""
From tokenized samples to model inputs: which samples form each batch, MLM masking (paper §2,
SPEC §4), autoregressive targets, and padding into (B, T) arrays.

Everything random here is a pure function of (seed, step, sample position), so a batch does not
depend on the number of processes, on gradient accumulation, or on a resume: sample g of the
training stream always lands in step g // batch_size with the same mask.
"""
import numpy as np
import torch

from model import IGNORE
from tokenize_numbers import EOS_ID, MASK_ID, PAD_ID


VAL_STEP = 2**40  # the "step" whose masks validation uses: fixed, and never a training step


def epoch_order(n, seed, epoch):
    """The order of the n training samples in one epoch."""
    return np.random.default_rng([seed, epoch]).permutation(n)


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
    Pad (inputs, values, targets, target values) examples into a dict of (B, T) tensors.
    'doc' marks each token's sample (0) and padding (-1) for the attention mask; it is None when
    no row is padded, which lets attention take its unmasked fast path.
    """
    lengths = [len(e[0]) for e in examples]
    B, T = len(examples), max(lengths)
    ids = np.full((B, T), PAD_ID, np.int64)
    values = np.ones((B, T), np.float32)
    targets = np.full((B, T), IGNORE, np.int64)
    target_values = np.ones((B, T), np.float32)
    doc = np.full((B, T), -1, np.int64)
    for b, (i, v, t, tv) in enumerate(examples):
        n = len(i)
        ids[b, :n], values[b, :n], targets[b, :n], target_values[b, :n], doc[b, :n] = i, v, t, tv, 0
    batch = {"ids": ids, "values": values, "targets": targets, "target_values": target_values,
             "pos": np.broadcast_to(np.arange(T), (B, T)).copy(),
             "doc": doc if min(lengths) < T else None}
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


def to_device(batch, device):
    """Move a batch to the device; pinned, non-blocking copies on CUDA."""
    out, cuda = {}, torch.device(device).type == "cuda"
    for k, v in batch.items():
        if isinstance(v, torch.Tensor):
            if cuda:
                v = v.pin_memory().to(device, non_blocking=True)
            else:
                v = v.to(device)
        out[k] = v
    return out
