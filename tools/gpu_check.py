"""
The GPU check: the first thing to run on a machine with a GPU. It proves the paper-scale path
(CUDA, bf16 autocast, torch.compile, FlexAttention, NCCL, resume) and measures it, in under ten
minutes on one H100, data preparation included:

  data   a synthetic ERA5-like field (prepare/era5_synthetic.py) cut into the paper's temperature
         samples, 60-89 stations × 8-15 steps (prepare/era5.py), tokenized for each encoding
  tests  the whole test suite on this machine, the CUDA-only tests included (tests/test_cuda.py:
         FlexAttention forward and backward against SDPA, bf16 against fp32, the number path in
         float32 under autocast, resume on CUDA)
  ddp    a compiled training through torchrun, one process per visible GPU (NCCL), with an
         evaluation and a checkpoint, then resumed from that checkpoint; with two or more GPUs the
         same steps on one process must log the same losses (DDP splits the work, not the sums)
  bench  tools/bench.py on the paper's temperature model as users run it (config/era5_<encoding>.py:
         6 × 768, global batch 64 in the config's micro-batches of 16, sorted by length, bf16,
         compile, FlexAttention; one process per visible GPU) for each encoding: real tokens/s,
         MFU, peak memory, the padded fraction and the projected wall time of the paper's 500k
         steps on this machine's GPUs, as a table in out/gpu_check.md (the one the docs cite:
         --record=results/gpu_check.md)

    python tools/gpu_check.py                                  # everything, on the GPU
    python tools/gpu_check.py --stages="bench" --encodings="xval"
    # a dry run of every stage on the CPU, tiny sizes, 2 processes
    python tools/gpu_check.py --device=cpu --tiny=True
"""

import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the core modules
from preflight import fit_micro_batch  # noqa: E402
from bench import bench_trainer  # noqa: E402
from configurator import configure, defaults  # noqa: E402
from util import atomic_write_text  # noqa: E402

# -- config: python tools/gpu_check.py --help
stages = "data tests ddp bench"  # which stages to run, in this order
encodings = "xval fp15 p10"  # encodings benchmarked (config/era5_<encoding>.py)
device = "cuda"  # cuda | cpu (a dry run)
tiny = False  # tiny data and models: a dry run of every stage in a minute or two on a CPU
data_dir = "data/gpu_check"  # the synthetic field and the tokenized samples
record = "out/gpu_check.md"  # the table is written here (replaced)
steps = 30  # bench: training steps per encoding, of which the first `warmup` are not timed
warmup = 10
nproc = 0  # processes (ddp, bench): 0 = one per visible GPU; on a --device=cpu dry run 2, over gloo
micro_batch_size = 0  # bench: samples per forward pass per process; 0 = the config's own (16)
packing = False  # bench: pack samples several to a row (kept apart by FlexAttention), not pad
# -- end config

PAPER_STEPS = 500_000
TRAIN = os.path.join(ROOT, "train.py")


def sh(*cmd, env=None):
    """Run a command from the repository root, echoing it; stop the check if it fails."""
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        raise SystemExit(f"error: the GPU check failed at: {' '.join(cmd)} (exit {r.returncode})")


def make_data(tiny):
    """The paper's temperature samples (60-89 stations × 8-15 steps) of a synthetic field,
    tokenized."""
    field = os.path.join(data_dir, "field")
    samples = os.path.join(data_dir, "era5")
    if not os.path.exists(os.path.join(field, "t2m.nc")):
        sh(
            sys.executable,
            "prepare/era5_synthetic.py",
            "--out",
            field,
            "--days",
            "3" if tiny else "12",
            "--resolution",
            "10" if tiny else "2.5",
        )
    sh(
        sys.executable,
        "prepare/era5.py",
        os.path.join(field, "t2m.nc"),
        "--size",
        "tiny",
        "--out",
        samples,
        "--force",
        *(["--stations", "4,9", "--steps", "3,5"] if tiny else []),
    )
    for enc in encodings.split():
        sh(sys.executable, "tokenize_numbers.py", samples, "--encoding", enc)
    return samples


def model_args(tiny):
    return ["--n_layer=1", "--n_head=2", "--n_embd=32", "--block_size=2048"] if tiny else []


def run_tests(tiny):
    # the dry run only checks that the CUDA-only tests are collected (they skip on the CPU)
    if tiny:
        sh(sys.executable, "-m", "pytest", "-q", "tests/test_cuda.py")
        return
    sh(sys.executable, "-m", "pytest", "-q", "-x", "tests")


def losses(out_dir):
    """step -> training loss, from a run's log.jsonl."""
    with open(os.path.join(out_dir, "log.jsonl")) as f:
        return {r["iter"]: r["loss"] for r in map(json.loads, f) if "loss" in r}


def same_losses(one, many, n, last, tolerance):
    """The largest relative difference of the losses of steps 1..last; an error if any is above
    tolerance."""
    steps = list(range(1, last + 1))
    missing = [i for i in steps if i not in one or i not in many]
    if missing:
        raise SystemExit(f"error: the GPU check failed: no training loss logged at steps {missing}")
    apart = {i: (one[i], many[i]) for i in steps if abs(many[i] - one[i]) > tolerance * abs(one[i])}
    if apart:
        raise SystemExit(
            f"error: the GPU check failed: {n} processes log other losses than one process with the"
            f" same global batch (step: (one process, {n})): {apart}"
        )
    return max(abs(many[i] - one[i]) / abs(one[i]) for i in steps)


def run_ddp(samples, tiny, n):
    """
    A short compiled training on n processes, then resumed from its checkpoint. With n >= 2 the
    first 10 steps again on one process, accumulating the same global batch: the loss is a mean
    over the whole global batch, so every step's loss must agree (to bf16 rounding on the GPU).
    """
    out, one = os.path.join(data_dir, "ddp_out"), os.path.join(data_dir, "ddp_one")
    micro = 4
    common = [
        *model_args(tiny),
        f"--device={device}",
        f"--data_dir={samples}",
        "--encoding=xval",
        f"--batch_size={2 * micro * n}",
        f"--micro_batch_size={micro}",
        "--eval_interval=10",
        "--eval_batches=2",
        "--log_interval=1",
        "--warmup_iters=5",
        "--compile=" + str(not tiny),
    ]
    launch = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={n}",
        "train.py",
        "config/era5_small.py",
    ]
    for d in (out, one):
        if os.path.exists(d):
            shutil.rmtree(d)
    env = {"OMP_NUM_THREADS": "1"} if device == "cpu" else None  # n processes share the cores
    sh(*launch, *common, f"--out_dir={out}", "--max_iters=10", env=env)
    if n >= 2:
        sh(
            sys.executable,
            "train.py",
            "config/era5_small.py",
            *common,
            f"--out_dir={one}",
            "--max_iters=10",
        )
        tolerance = 1e-4 if device == "cpu" else 2e-2  # float32 / bf16 autocast
        worst = same_losses(losses(one), losses(out), n, 10, tolerance)
        print(
            f"{n} processes give the losses of one process at steps 1-10 (largest relative"
            f" difference {worst:.1e})",
            flush=True,
        )
    else:
        print(
            "one process: the comparison of N processes with one needs two or more GPUs", flush=True
        )
    sh(*launch, *common, f"--out_dir={out}", "--max_iters=20", "--resume", env=env)


def run_bench(samples, tiny, n):
    """tools/bench.py's trainer measurements per encoding, the configs' own batches, as one markdown
    table."""
    rows = []
    for enc in encodings.split():
        config = f"config/era5_{enc}.py"
        args = [
            config,
            f"--data_dir={samples}",
            f"--device={device}",
            f"--packing={packing}",
            *model_args(tiny),
            *([f"--micro_batch_size={micro_batch_size}"] if micro_batch_size else []),
        ]
        cfg = configure(defaults(TRAIN), TRAIN, args)
        # as train.py: the largest micro-batch that fits, or a clear error if none does
        micro = fit_micro_batch(cfg["batch_size"], cfg["micro_batch_size"], n)
        accum = cfg["batch_size"] // (micro * n)
        print(
            f"$ python tools/bench.py {' '.join(args)} --steps={steps} --warmup={warmup}"
            f" --nproc={n}",
            flush=True,
        )
        header, row = bench_trainer(
            args, {"steps": steps, "warmup": warmup, "nproc": n}, cfg["batch_size"]
        )
        print("\n".join(header), flush=True)
        hours = row["ms/step"] * PAPER_STEPS / 3.6e6
        rows.append(
            [
                enc,
                f"{cfg['batch_size']} = {micro} × {n} × {accum}",
                f"{row['tokens/s']:,.0f}",
                "n/a" if row["MFU %"] is None else f"{row['MFU %']:.1f}",
                f"{row['ms/step']:,.0f}",
                f"{row['padding %']:.1f}",
                "n/a" if row["peak GiB"] is None else f"{row['peak GiB']:.1f}",
                f"{hours:,.1f} h",
                row["system"],
            ]
        )
        print(f"{enc}: {rows[-1]}", flush=True)
    lines = [
        (
            "| encoding | batch = micro × processes × accumulation | real tokens/s | MFU % |"
            " ms/step | padded % | peak GiB | 500k steps | system |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ] + ["| " + " | ".join(r) + " |" for r in rows]
    model = (
        "a tiny dry run (1 × 32, 4-9 stations × 3-5 steps"
        if tiny
        else (
            "the paper's temperature model as config/era5_<encoding>.py sets it (6 × 768, 60-89"
            " stations × 8-15 steps"
        )
    )
    text = (
        f"Written by `python tools/gpu_check.py`: {model}, each process's micro-batches sorted by"
        f" length{', packed' if packing else ''}), {n} process{'es' if n > 1 else ''},"
        f" tools/bench.py medians of steps {warmup + 1}..{steps}; MFU counts real tokens only; the"
        f" last column projects {PAPER_STEPS:,} steps on this machine.\n\n"
        + "\n".join(lines)
        + "\n"
    )
    os.makedirs(os.path.dirname(record) or ".", exist_ok=True)
    atomic_write_text(record, text)
    print("\n" + text)


def main():
    configure(globals(), __file__)
    for stage in stages.split():
        if stage not in ("data", "tests", "ddp", "bench"):
            raise SystemExit(
                f"error: unknown stage {stage!r} in --stages; expected data, tests, ddp, bench"
            )
    if nproc < 0:
        raise SystemExit(f"error: --nproc must be 0 (one per visible GPU) or more, got {nproc}")
    samples = os.path.join(data_dir, "era5")
    trains = [s for s in stages.split() if s in ("ddp", "bench")]
    if trains and "data" not in stages.split() and not os.path.isdir(samples):
        raise SystemExit(
            f"error: {samples} is not prepared, and the {trains[0]} stage trains on it;"
            f' --stages="data {stages}" makes it first'
        )
    n = nproc
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise SystemExit(
                "error: no CUDA device here; for a dry run on the CPU pass --device=cpu --tiny=True"
            )
        visible = torch.cuda.device_count()
        if n > visible:
            raise SystemExit(f"error: --nproc={n} but {visible} GPU(s) are visible")
        n = n or visible
    n = n or 2  # the CPU dry run: two gloo processes check the multi-process path
    print(
        f"== {n} process{'es' if n > 1 else ''}"
        f" ({'NCCL' if device.startswith('cuda') else 'gloo'})",
        flush=True,
    )
    t0 = time.time()
    for stage in stages.split():
        t = time.time()
        if stage == "data":
            samples = make_data(tiny)
        elif stage == "tests":
            run_tests(tiny)
        elif stage == "ddp":
            run_ddp(samples, tiny, n)
        else:
            run_bench(samples, tiny, n)
        print(f"== stage {stage}: ok, {time.time() - t:.0f} s", flush=True)
    print(f"== GPU check passed: {stages} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
