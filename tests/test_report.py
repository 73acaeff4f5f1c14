"""report.py: what a run prints and logs."""

import torch
from helpers import diverging_after, train

from batching import step_batches
from dataset import Split
from report import peak_flops


def test_mfu_uses_the_peak_of_the_board_in_hand():
    peaks = {"NVIDIA H100 80GB HBM3": 989e12, "NVIDIA H100 PCIe": 756e12, "NVIDIA H200": 989e12,
             "NVIDIA A100-SXM4-80GB": 312e12, "Tesla T4": None}
    assert {name: peak_flops(name) for name in peaks} == peaks


def test_block_size_from_the_data_progress_the_batch_line_and_what_next(data, tmp_path):
    longest = max(int(Split(data, split, "xval").lengths.max()) for split in ("train", "val"))
    r = train(data, tmp_path, "--block_size=0", "--max_iters=4", "--log_interval=2",
              "--eval_interval=4", "--packing=True", "--pack_length=16", "--batch_size=64",
              "--micro_batch_size=16")
    assert f"block_size {longest} (the longest sample)" in r.stdout
    assert torch.load(tmp_path / "ckpt_best.pt", weights_only=True)["model_args"]["block_size"] == longest
    lines = [line for line in r.stdout.splitlines() if line.startswith("iter ")]
    assert [line.split(":")[0] for line in lines] == ["iter 2/4", "iter 4/4"] and all(" left" in x for x in lines)
    assert f"checkpoints in {tmp_path}/" in r.stdout
    assert f"python sample.py --ckpt={tmp_path}/ckpt_best.pt --input={data}/test.txt --mask_last" in r.stdout
    line = next(line for line in r.stdout.splitlines() if line.startswith("batch:"))
    first = step_batches(Split(data, "train", "xval"), 0, 1337, 64, 16, packing=True, pack_length=16)
    assert "accumulation steps" not in line and "least padding" not in line and len(first) != 64 // 16
    rows = f"{len(first[0]['ids'])} a micro-batch; {len(first)} micro-batches"
    assert f"packed in rows of 16 tokens, {rows}" in line


def test_a_run_that_would_take_days_on_a_cpu_says_so(data, tmp_path):
    with diverging_after(2):  # NaN at step 3 ends it
        r = train(data, tmp_path, "--max_iters=100000000", "--eval_interval=1000", "--log_interval=1", check=False)
    warnings = [line for line in r.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "days on the CPU" in warnings[0] and "config/own_small.py" in warnings[0], r.stdout
