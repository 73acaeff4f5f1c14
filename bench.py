"""
Training throughput of any config: runs the real training loop (train.py, data path included)
for a few steps, logging every step, and reports medians after a warm-up: tokens/s counting real
tokens only, ms/step, MFU against the detected GPU's bf16 peak, the padded fraction of positions
and peak GPU memory.

    python bench.py config/quickstart.py
    python bench.py config/era5_xval.py --steps=50 --warmup=10 --compile=True
    python bench.py config/era5_xval.py --nproc=4          # through torchrun
    python bench.py config/quickstart.py --record=results/bench.md   # append the row to a table

Every other --key=value goes to train.py unchanged (see python train.py --help).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    own = {"steps": 30, "warmup": 10, "nproc": 1, "record": ""}
    train_args = []
    for arg in argv:
        key, _, value = arg[2:].partition("=")
        if arg.startswith("--") and key in own:
            try:
                own[key] = type(own[key])(value)
            except ValueError:
                raise SystemExit(f"error: --{key} expects {type(own[key]).__name__}, got {value!r}")
        elif arg in ("-h", "--help"):
            print(__doc__)
            return
        else:
            train_args.append(arg)
    if own["steps"] <= own["warmup"]:
        raise SystemExit(f"error: --steps ({own['steps']}) must exceed --warmup ({own['warmup']})")
    with tempfile.TemporaryDirectory() as out_dir:
        launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={own['nproc']}"]
                    if own["nproc"] > 1 else [sys.executable])
        cmd = launcher + ["train.py", *train_args, f"--out_dir={out_dir}", f"--max_iters={own['steps']}",
                          "--log_interval=1", "--eval_interval=1000000000", "--eval_batches=1"]
        t0 = time.time()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"error: train.py failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        with open(os.path.join(out_dir, "log.jsonl")) as f:
            steps = [rec for rec in map(json.loads, f) if "tokens_per_s" in rec and rec["iter"] > own["warmup"]]
    header = [line for line in r.stdout.splitlines() if line.startswith(("data:", "model:", "batch:", "system:"))]
    print("\n".join(header))

    def median(key, scale=1.0):
        values = [rec[key] for rec in steps if rec.get(key) is not None]
        return statistics.median(values) * scale if values else None

    row = {
        "config": " ".join(train_args), "steps timed": len(steps),
        "tokens/s": median("tokens_per_s"), "ms/step": median("ms_per_step"),
        "MFU %": median("mfu", 100), "padding %": median("padding", 100),
        "peak GiB": median("peak_memory_gib"),
        "system": header[-1].removeprefix("system: ") if header else "",
    }
    cells = [f"{v:,.1f}" if isinstance(v, float) else ("n/a" if v is None else str(v)) for v in row.values()]
    print(f"\nmedian over steps {own['warmup'] + 1}..{own['steps']} ({time.time() - t0:.0f} s in all):")
    print("| " + " | ".join(row) + " |\n|" + "---|" * len(row) + "\n| " + " | ".join(cells) + " |")
    if own["record"]:
        new = not os.path.exists(own["record"])
        os.makedirs(os.path.dirname(own["record"]) or ".", exist_ok=True)
        with open(own["record"], "a") as f:
            if new:
                f.write("| " + " | ".join(row) + " |\n|" + "---|" * len(row) + "\n")
            f.write("| " + " | ".join(cells) + " |\n")


if __name__ == "__main__":
    main(sys.argv[1:])
