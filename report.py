"""What a training run prints at start-up, at each validation and logged step, and logs."""

import json
import os
import time

import torch

from batching import step_batches
from util import format_duration

# peak dense bf16 FLOP/s for MFU; the first key in the device's name counts
PEAK_FLOPS = {
    "H100 PCIe": 756e12,
    "H100 NVL": 835e12,
    "H100": 989e12,
    "H200": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "A10G": 70e12,
    "RTX 4090": 165e12,
    "RTX 3090": 71e12,
}


def peak_flops(device_name):
    return next((value for key, value in PEAK_FLOPS.items() if key in device_name), None)


def describe(config, used, resumed_at, train_data, val_data, vocab, model):
    """Print the start-up facts: the settings as given (config) and as used."""
    mean_length = float(train_data.lengths.mean())
    print(
        f"data: {config['data_dir']} ({config['encoding']}): {len(train_data):,} train /"
        f" {len(val_data):,} val samples, {mean_length:.0f} tokens/sample (max"
        f" {int(train_data.lengths.max())}), vocab {len(vocab)}"
    )
    cfg = model.cfg
    heads = f", number head {cfg.num_head}" if cfg.encoding == "xval" else ""
    heads += f" (K={cfg.n_components})" if cfg.num_head == "gmm" else ""
    objective = "causal" if cfg.causal else f"bidirectional (MLM p={config['mlm_probability']:g})"
    from_data = "" if config["block_size"] else " (the longest sample)"
    print(
        f"model: {model.num_params() / 1e6:.2f}M parameters, {cfg.n_layer} layers × {cfg.n_head}"
        f" heads × {cfg.n_embd // cfg.n_head}, block_size {cfg.block_size}{from_data},"
        f" {objective}, k={cfg.k}{heads}"
    )
    batch, micro, world = config["batch_size"], used["micro_batch_size"], used["world_size"]
    tokens = f"~{batch * mean_length:,.0f} tokens/step"
    accum = batch // (micro * world)
    steps = f"{micro} × {world} processes × {accum} accumulation steps, {tokens}"
    if config["packing"]:
        length, rows = used["pack_length"], used["pack_rows"]
        layout = dict(world_size=world, packing=True, pack_length=length, pack_rows=rows)
        first = step_batches(train_data, 0, config["seed"], batch, micro, **layout)
        least = "" if config["pack_length"] else " (the least padding)"
        steps = (
            f"{tokens}, packed in rows of {length} tokens, {rows} a micro-batch{least};"
            f" {len(first)} micro-batches × {world} processes at step 0"
        )
    print(f"batch: {batch} samples/step = {steps}")
    device, device_type = used["device"], torch.device(used["device"]).type
    gpu = torch.cuda.get_device_name(device) if device_type == "cuda" else device_type
    threads = f", {torch.get_num_threads()} threads" if device_type == "cpu" else ""
    start = "from scratch" if resumed_at is None else f"resuming at step {resumed_at}"
    print(
        f"system: {device} ({gpu}{threads}), {used['dtype']}, compile={used['compile']}, attention"
        f" {'flex' if model.flex_attention else 'sdpa'}, world size {world}, {start}"
    )


def append_row(log, row):
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def say_validation(log, step, val, num_loss_name):
    print(
        f"step {step}: val loss {val['val_loss']:.4f} (CE {val['val_ce']:.4f}, number"
        f" {num_loss_name} {val['val_mse']:.4g})"
    )
    append_row(log, {"iter": step, **val})


class Progress:
    """The speed between logged steps, and what a logged step prints and logs (log None: silent)."""

    def __init__(self, log, step, max_iters, world_size, device, flops_per_token):
        if log and os.path.islink(log):
            raise SystemExit(f"error: {log} is a symbolic link; remove it")
        self.log = log
        self.max_iters = max_iters
        self.world_size = world_size
        self.device = device
        self.flops_per_token = flops_per_token
        self.cuda = device.startswith("cuda")
        self.peak = peak_flops(torch.cuda.get_device_name(device)) if self.cuda else None
        self.first = True
        self.restart(step)

    def restart(self, step):
        self.start = step
        self.time = time.time()
        self.tokens = self.positions = 0

    def count(self, batch):
        self.tokens += batch["n_real"]
        self.positions += batch["ids"].numel()

    def log_step(self, step, lr, losses, num_loss_name):
        """Print and log a step; at the first on a CPU, warn if the run takes over a day."""
        dt = time.time() - self.time
        step_s = dt / (step - self.start)
        tokens_per_s = self.tokens * self.world_size / dt
        mfu = self.peak and self.flops_per_token * tokens_per_s / (self.peak * self.world_size)
        memory = torch.cuda.max_memory_allocated(self.device) / 2**30 if self.cuda else None
        loss, ce, num = losses
        row = dict(iter=step, loss=loss, ce=ce, mse=num, lr=lr, ms_per_step=step_s * 1000)
        row.update(tokens_per_s=tokens_per_s, mfu=mfu, padding=1 - self.tokens / self.positions)
        left = step_s * (self.max_iters - step)
        if self.log:
            mfu_text = "" if mfu is None else f", MFU {mfu * 100:.1f}%"
            print(
                f"iter {step}/{self.max_iters}: loss {loss:.4f} (CE {ce:.4f}, {num_loss_name}"
                f" {num:.4g}), lr {lr:.2e}, {step_s * 1000:.0f} ms/step, {tokens_per_s:,.0f}"
                f" tokens/s{mfu_text}, ~{format_duration(left)} left"
            )
            if self.first and self.device == "cpu" and left > 86400:
                print(
                    f"warning: this run of {self.max_iters:,} steps takes ~{format_duration(left)}"
                    " on the CPU; try config/own_small.py (or config/*_small.py)"
                )
            append_row(self.log, {**row, "peak_memory_gib": memory})
        self.first = False
        self.restart(step)
