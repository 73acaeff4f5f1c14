"""
Training throughput of any config: runs the real training loop (train.py, data path included)
for a few steps, logging every step, and reports medians after a warm-up: samples/s, tokens/s
counting real tokens only, ms/step, MFU against the detected GPU's bf16 peak, the padded fraction
of positions and peak GPU memory. Then it times the loader alone for the same steps (what
train.py's loader thread runs: batching.step_batches, on one CPU thread) and says how many
times over it could feed the trainer.

    python tools/bench.py config/quickstart.py
    python tools/bench.py config/quickstart.py --compare=packing   # padded, then packed, ratio
    python tools/bench.py config/planets_small.py --loader         # the loader alone, no training
    python tools/bench.py config/era5_xval.py --steps=50 --warmup=10 --compile=True
    python tools/bench.py config/era5_xval.py --nproc=4            # through torchrun
    python tools/bench.py config/quickstart.py --record=out/bench.md   # append the rows to a table

Every other --key=value goes to train.py unchanged (see python train.py --help).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the core modules
from batching import choose_packing, step_batches  # noqa: E402
from configurator import configure, defaults  # noqa: E402
from dataset import Split  # noqa: E402
from preflight import fit_micro_batch  # noqa: E402

TRAIN = os.path.join(ROOT, "train.py")
OWN = {"steps": 30, "warmup": 10, "nproc": 1, "record": "", "loader": False, "compare": ""}
COMPARE = {"packing": ["--packing=False", "--packing=True"]}  # what --compare can set, and how


def parse(argv):
    """bench.py's own flags (OWN), and the arguments that go to train.py."""
    own, train_args = dict(OWN), []
    for arg in argv:
        key, _, value = arg[2:].partition("=")
        if arg in ("-h", "--help"):
            print(__doc__)
            raise SystemExit(0)
        if not (arg.startswith("--") and key in own):
            train_args.append(arg)
        elif isinstance(own[key], bool):  # --loader, --loader=True, --loader=False
            if value not in ("", "True", "False"):
                raise SystemExit(f"error: --{key} expects True or False, got {value!r}")
            own[key] = value != "False"
        else:
            try:
                own[key] = type(own[key])(value)
            except ValueError:
                raise SystemExit(f"error: --{key} expects {type(own[key]).__name__}, got {value!r}")
    if own["warmup"] < 0:
        raise SystemExit(f"error: --warmup must be at least 0, got {own['warmup']}")
    if own["steps"] <= own["warmup"]:
        raise SystemExit(f"error: --steps ({own['steps']}) must exceed --warmup ({own['warmup']})")
    if own["nproc"] < 1:
        raise SystemExit(f"error: --nproc must be at least 1, got {own['nproc']}")
    if own["compare"] and own["compare"] not in COMPARE:
        raise SystemExit(
            f"error: --compare expects one of {', '.join(COMPARE)}, got {own['compare']!r}"
        )
    if own["compare"] and any(a.startswith(f"--{own['compare']}=") for a in train_args):
        raise SystemExit(
            f"error: --compare={own['compare']} sets --{own['compare']} itself; leave it out"
        )
    return own, train_args


def bench_trainer(train_args, own, batch_size):
    """Run train.py for own['steps'] steps, logging each; medians of the steps after the warm-up."""
    with tempfile.TemporaryDirectory() as out_dir:
        launcher = (
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                f"--nproc_per_node={own['nproc']}",
            ]
            if own["nproc"] > 1
            else [sys.executable]
        )
        cmd = launcher + [
            TRAIN,
            *train_args,
            f"--out_dir={out_dir}",
            f"--max_iters={own['steps']}",
            "--log_interval=1",
            "--eval_interval=1000000000",
            "--eval_batches=1",
        ]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"error: train.py failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        with open(os.path.join(out_dir, "log.jsonl")) as f:
            steps = [
                rec
                for rec in map(json.loads, f)
                if "tokens_per_s" in rec and rec["iter"] > own["warmup"]
            ]
    header = [
        line
        for line in r.stdout.splitlines()
        if line.startswith(("data:", "model:", "batch:", "system:"))
    ]

    def median(key, scale=1.0):
        values = [rec[key] for rec in steps if rec.get(key) is not None]
        return statistics.median(values) * scale if values else None

    ms = median("ms_per_step")
    return header, {
        "config": " ".join(train_args),
        "steps timed": len(steps),
        "samples/s": batch_size * 1000 / ms,
        "tokens/s": median("tokens_per_s"),
        "ms/step": ms,
        "MFU %": median("mfu", 100),
        "padding %": median("padding", 100),
        "peak GiB": median("peak_memory_gib"),
        "system": header[-1].removeprefix("system: ") if header else "",
    }


def bench_loader(train_args, cfg, own):
    """Time batching.step_batches alone on one CPU thread: process 0's batches of each step."""
    torch.set_num_threads(1)
    world = own["nproc"]
    # as train.py: the largest micro-batch that fits where micro × processes exceeds the batch
    cfg["micro_batch_size"] = fit_micro_batch(
        cfg["batch_size"], cfg["micro_batch_size"], world, print
    )
    try:
        split = Split(cfg["data_dir"], "train", cfg["encoding"])
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}")
    pin = cfg["device"].startswith("cuda") or (
        cfg["device"] == "auto" and torch.cuda.is_available()
    )
    pack_length, pack_rows = cfg["pack_length"], 0
    if cfg["packing"] and not pack_length:  # the shape train.py chooses (its val samples aside)
        longest = int(split.lengths.max())
        pack_length, pack_rows = choose_packing(
            split,
            cfg["batch_size"],
            cfg["micro_batch_size"],
            world,
            cfg["seed"],
            longest,
            4 * (cfg["block_size"] or longest),
        )
    per_step = []  # (seconds, real tokens, positions)
    for step in range(own["steps"]):
        t0 = time.perf_counter()
        batches = step_batches(
            split,
            step,
            cfg["seed"],
            cfg["batch_size"],
            cfg["micro_batch_size"],
            0,
            world,
            cfg["causal"],
            cfg["mlm_probability"],
            cfg["packing"],
            pack_length,
            pin,
            pack_rows,
        )
        dt = time.perf_counter() - t0
        if step >= own["warmup"]:  # the trainer's timed steps
            per_step.append(
                (dt, sum(b["n_real"] for b in batches), sum(b["ids"].numel() for b in batches))
            )
    per_rank = cfg["batch_size"] // world
    return {
        "config": " ".join(train_args),
        "steps timed": len(per_step),
        "samples/s": statistics.median(per_rank / dt for dt, _, _ in per_step),
        "tokens/s": statistics.median(n / dt for dt, n, _ in per_step),
        "ms/step": statistics.median(dt * 1000 for dt, _, _ in per_step),
        "MFU %": None,
        "padding %": statistics.median(100 * (1 - n / p) for _, n, p in per_step),
        "peak GiB": None,
        "system": (
            "loader alone, 1 CPU thread"
            + (f", process 0 of {world}" if world > 1 else "")
            + (", pinned" if pin else "")
        ),
    }


def table(rows):
    """Markdown table lines: a header, then one line per row."""
    lines = [list(rows[0]), ["---"] * len(rows[0])]
    lines += [
        [
            f"{v:,.1f}" if isinstance(v, float) else ("n/a" if v is None else str(v))
            for v in row.values()
        ]
        for row in rows
    ]
    return ["| " + " | ".join(cells) + " |" for cells in lines]


def main(argv):
    own, train_args = parse(argv)
    t0 = time.time()
    trainer, loader = [], []  # rows, one per variant
    for args in (
        [train_args + [flag] for flag in COMPARE[own["compare"]]]
        if own["compare"]
        else [train_args]
    ):
        # train.py's settings: a bad key fails here, at once
        cfg = configure(defaults(TRAIN), TRAIN, args)
        if not own["loader"]:
            header, row = bench_trainer(args, own, cfg["batch_size"])
            if not trainer:
                print("\n".join(header))
            trainer.append(row)
        loader.append(bench_loader(args, cfg, own))
    rows = trainer + loader
    print(
        f"\nmedian over steps {own['warmup'] + 1}..{own['steps']} ({time.time() - t0:.0f} s in"
        " all):"
    )
    print("\n".join(table(rows)))
    for trained, loaded in zip(trainer, loader):
        # by each process, each with its own loader thread
        consumed = trained["samples/s"] / own["nproc"]
        print(
            f"loader alone: {loaded['samples/s']:,.0f} samples/s on 1 CPU thread,"
            f" {loaded['samples/s'] / consumed:,.1f}× the {consumed:,.0f} samples/s the trainer"
            " consumes"
            + (" per process" if own["nproc"] > 1 else "")
            + (f" ({loaded['config']})" if own["compare"] else "")
        )
    if own["compare"]:
        off, on = COMPARE[own["compare"]]
        ratios = [
            f"{name} {pair[1]['tokens/s'] / pair[0]['tokens/s']:.2f}×"
            for name, pair in (("trainer", trainer), ("loader", loader))
            if pair
        ]
        print(f"real tokens/s with {on} over {off}: " + ", ".join(ratios))
    if own["record"]:
        new = not os.path.exists(own["record"])
        os.makedirs(os.path.dirname(own["record"]) or ".", exist_ok=True)
        with open(own["record"], "a") as f:
            f.write("\n".join(table(rows)[0 if new else 2 :]) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
