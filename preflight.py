"""What train.py checks and fits to the machine before it builds anything large."""

import os
from contextlib import nullcontext

import torch

from distributed import print0


def check_splits(data_dir, train, val, block_size, packing, pack_length):
    """Refuse a sample longer than block_size (or pack_length); warn of a small val split."""
    if packing and pack_length > 4 * block_size:
        raise SystemExit(f"error: pack_length {pack_length} > 4 × block_size {block_size}")
    for split in (train, val):
        n = int(split.lengths.max())
        if n > block_size or (packing and pack_length and n > pack_length):
            raise SystemExit(
                f"error: {split.base} has a sample of {n} tokens "
                f"(index {int(split.lengths.argmax())}) but block_size is {block_size}"
                + (f" and pack_length {pack_length}" if packing and pack_length else "")
            )
    if len(val) < 16:
        print0(f"warning: {data_dir}/val.txt has {len(val)} sample(s): few for ckpt_best.pt")


def fit_micro_batch(batch_size, micro_batch_size, world_size, say=None):
    """micro_batch_size, or the largest that shares batch_size out over world_size."""
    fits = [m for m in range(1, micro_batch_size) if batch_size % (m * world_size) == 0]
    if micro_batch_size * world_size > batch_size and fits:
        if say:
            say(
                f"note: micro_batch_size {micro_batch_size} × {world_size} processes exceeds"
                f" batch_size {batch_size}: micro-batches of {fits[-1]} samples"
            )
        micro_batch_size = fits[-1]
    if batch_size % (micro_batch_size * world_size):
        why = f"must be a multiple of micro_batch_size {micro_batch_size} × {world_size} processes"
        raise SystemExit(f"error: batch_size {batch_size} {why}")
    return micro_batch_size


def check_attention_memory(shapes, n_head, device):
    """Refuse (rows, context) shapes whose dense attention scores do not fit in memory."""
    have = None
    if device.startswith("cuda"):
        have = torch.cuda.get_device_properties(device).total_memory
    elif hasattr(os, "sysconf"):
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for rows, context in shapes:
        need = rows * n_head * context**2 * 4
        if have and need > have:
            gib = f"{need / 2**30:,.0f} GiB of attention scores, more than {device} has"
            shorter = "shorten the samples (--window) or lower block_size or micro_batch_size"
            raise SystemExit(f"error: a context of {context:,} tokens needs {gib}: {shorter}")


def pick_precision(dtype, device_type):
    """(dtype, autocast context): auto is bf16 on CUDA, else float32."""
    if dtype == "auto":
        bf16 = device_type == "cuda" and torch.cuda.is_bf16_supported()
        dtype = "bfloat16" if bf16 else "float32"
    if dtype == "bfloat16":
        return dtype, torch.autocast(device_type, torch.bfloat16)
    return dtype, nullcontext()


def pick_compile(compile, device_type):
    """'auto' is on for CUDA, off elsewhere; True on the CPU needs a C++ compiler."""
    if compile == "auto":
        compile = device_type == "cuda" and os.name != "nt"
        if not compile:
            print0(f"note: torch.compile is off on {device_type}; --compile=True forces it")
    elif compile and device_type == "cpu":
        from torch._inductor.cpp_builder import get_cpp_compiler

        try:
            get_cpp_compiler()
        except Exception as e:
            why = f"needs a C++ compiler (g++, or set CXX): {e}"
            raise SystemExit(f"error: --compile=True on the CPU {why}")
    return compile
