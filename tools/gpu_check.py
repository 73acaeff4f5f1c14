"""
The GPU check: the first thing to run on a machine with a GPU. It proves the paper-scale path
(CUDA, bf16 autocast, torch.compile, FlexAttention, NCCL, resume) and measures it, in under ten
minutes on one H100, data preparation included:

  data   a synthetic ERA5-like field (prepare/era5_synthetic.py) cut into the paper's temperature
         samples, 60-89 stations × 8-15 steps (prepare/era5.py), tokenized for each encoding
  tests  the whole test suite on this machine, the CUDA-only tests included (tests/test_cuda.py:
         FlexAttention forward and backward against SDPA, bf16 against fp32, the number path in
         float32 under autocast, resume on CUDA)
  ddp    one `torchrun --nproc_per_node=1` training over NCCL, compiled, with an evaluation and a
         checkpoint, then resumed from that checkpoint
  bench  bench.py on the paper's temperature model (6 × 768, global batch 64, bf16, compile,
         FlexAttention) for each encoding: real tokens/s, MFU, peak memory, the padded fraction
         and the projected wall time of the paper's 500k steps on this one GPU, as a table in
         results/gpu_check.md

    python tools/gpu_check.py                                  # everything, on the GPU
    python tools/gpu_check.py --stages="bench" --encodings="xval"
    python tools/gpu_check.py --device=cpu --tiny=True         # a dry run of every stage on the CPU, tiny sizes
"""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the core modules
from bench import bench_trainer  # noqa: E402
from configurator import configure  # noqa: E402
from util import atomic_write_text  # noqa: E402

# -- config: python tools/gpu_check.py --help
stages = "data tests ddp bench"  # which stages to run, in this order
encodings = "xval fp15 p10"  # encodings benchmarked (config/era5_<encoding>.py)
device = "cuda"  # cuda | cpu (a dry run)
tiny = False  # tiny data and models: a dry run of every stage in a minute or two on a CPU
data_dir = "data/gpu_check"  # the synthetic field and the tokenized samples
record = "results/gpu_check.md"  # the table is written here (replaced)
steps = 30  # bench: training steps per encoding, of which the first `warmup` are not timed
warmup = 10
micro_batch_size = 0  # bench: samples per forward pass; 0 = the per-encoding default below
packing = False  # bench: pack samples several to a row (FlexAttention keeps them apart) instead of padding
# -- end config

PAPER_STEPS = 500_000
# per encoding: micro-batch (samples per forward pass) that fits one 80 GB GPU at the paper's
# sizes (P10 samples are ~5x longer than xVal's), and block_size (the configs' paper contexts)
MICRO_BATCH = {"xval": 64, "fp15": 64, "b1999": 32, "p1000": 32, "p10": 16}


def sh(*cmd, env=None):
    """Run a command from the repository root, echoing it; stop the check if it fails."""
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        raise SystemExit(f"error: the GPU check failed at: {' '.join(cmd)} (exit {r.returncode})")


def make_data(tiny):
    """The paper's temperature samples (60-89 stations × 8-15 steps) of a synthetic field, tokenized."""
    field = os.path.join(data_dir, "field")
    samples = os.path.join(data_dir, "era5")
    if not os.path.exists(os.path.join(field, "t2m.nc")):
        sh(sys.executable, "prepare/era5_synthetic.py", "--out", field, "--days", "3" if tiny else "12",
           "--resolution", "10" if tiny else "2.5")
    sh(sys.executable, "prepare/era5.py", os.path.join(field, "t2m.nc"), "--size", "tiny", "--out", samples,
       "--force", *(["--stations", "4,9", "--steps", "3,5"] if tiny else []))
    for enc in encodings.split():
        sh(sys.executable, "tokenize_numbers.py", samples, "--encoding", enc)
    return samples


def model_args(tiny):
    return ["--n_layer=1", "--n_head=2", "--n_embd=32", "--block_size=2048"] if tiny else []


def run_tests(tiny):
    if tiny:  # the dry run only checks that the CUDA-only tests are collected (they skip on the CPU)
        sh(sys.executable, "-m", "pytest", "-q", "tests/test_cuda.py")
        return
    sh(sys.executable, "-m", "pytest", "-q", "-x", "tests")


def run_ddp(samples, tiny):
    """A short compiled training through torchrun over NCCL, then resumed from its checkpoint."""
    out = os.path.join(data_dir, "ddp_out")
    common = [*model_args(tiny), f"--device={device}", f"--data_dir={samples}", f"--out_dir={out}",
              "--encoding=xval", "--batch_size=16", "--micro_batch_size=8", "--eval_interval=10",
              "--eval_batches=2", "--log_interval=5", "--warmup_iters=5", "--compile=" + str(not tiny)]
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1", "train.py",
              "config/era5_small.py"]
    if os.path.exists(out):
        import shutil
        shutil.rmtree(out)
    sh(*launch, *common, "--max_iters=10")
    sh(*launch, *common, "--max_iters=20", "--resume")


def run_bench(samples, tiny):
    """bench.py's trainer measurements per encoding at the paper's sizes, as one markdown table."""
    rows = []
    for enc in encodings.split():
        args = [f"config/era5_{enc}.py", f"--data_dir={samples}", f"--device={device}",
                f"--micro_batch_size={4 if tiny else micro_batch_size or MICRO_BATCH[enc]}", f"--packing={packing}", *model_args(tiny)]
        print(f"$ python tools/bench.py {' '.join(args)} --steps={steps} --warmup={warmup}", flush=True)
        header, row = bench_trainer(args, {"steps": steps, "warmup": warmup, "nproc": 1}, 64)
        print("\n".join(header), flush=True)
        hours = row["ms/step"] * PAPER_STEPS / 3.6e6
        rows.append([enc, f"{row['tokens/s']:,.0f}", "n/a" if row["MFU %"] is None else f"{row['MFU %']:.1f}",
                     f"{row['ms/step']:,.0f}", f"{row['padding %']:.1f}",
                     "n/a" if row["peak GiB"] is None else f"{row['peak GiB']:.1f}", f"{hours:,.1f} h",
                     row["system"]])
        print(f"{enc}: {rows[-1]}", flush=True)
    lines = ["| encoding | real tokens/s | MFU % | ms/step | padded % | peak GiB | 500k steps | system |",
             "|---|---|---|---|---|---|---|---|"] + ["| " + " | ".join(r) + " |" for r in rows]
    text = ("Written by `python tools/gpu_check.py`: the paper's temperature model (6 × 768, global batch 64, "
            "60-89 stations × 8-15 steps), bench.py medians of steps "
            f"{warmup + 1}..{steps}; MFU counts real tokens only; the last column projects "
            f"{PAPER_STEPS:,} steps on this one GPU.\n\n" + "\n".join(lines) + "\n")
    os.makedirs(os.path.dirname(record) or ".", exist_ok=True)
    atomic_write_text(record, text)
    print("\n" + text)


def main():
    configure(globals(), __file__)
    for stage in stages.split():
        if stage not in ("data", "tests", "ddp", "bench"):
            raise SystemExit(f"error: unknown stage {stage!r} in --stages; expected data, tests, ddp, bench")
    if device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            raise SystemExit("error: no CUDA device here; for a dry run on the CPU pass --device=cpu --tiny=True")
    samples = os.path.join(data_dir, "era5")
    t0 = time.time()
    for stage in stages.split():
        t = time.time()
        if stage == "data":
            samples = make_data(tiny)
        elif stage == "tests":
            run_tests(tiny)
        elif stage == "ddp":
            run_ddp(samples, tiny)
        else:
            run_bench(samples, tiny)
        print(f"== stage {stage}: ok, {time.time() - t:.0f} s", flush=True)
    print(f"== GPU check passed: {stages} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
