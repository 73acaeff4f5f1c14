"""
The paper's look-up and planets claims on one GPU, in steps of at most 9 minutes (~20 minutes of
an H100 in all): trains and evaluates

  lookup_xval, lookup_p10, lookup_fp15   the look-up with the paper's 2-6 entries (dev/config/gpu_lookup.py)
  planets_xval, planets_b1999            planets Δt and a0 (dev/config/gpu_planets.py)

with the project's own scripts (prepare/*.py, tokenize_numbers.py, train.py, eval.py), and writes
under --out (default dev/results/gpu): lookup.md and planets.md (one row per encoding), runs.md (how
each training went), per run <run>/eval.{json,md} with eval.py's plots <run>/eval_<split>.png,
and README.md (a skeleton for the verdicts, written once, never replaced).

Each invocation does the next unfinished piece of work (data, training, evaluation) and stops
before --budget seconds: a training still running then is stopped (it keeps its last checkpoint,
every ~20 s) and the next invocation continues it with --resume; finished trainings and
evaluations are skipped. Data, checkpoints and logs live in --work (default out/gpu); results in
--out. A run is finished for good once <out>/<run>/eval.json exists.

On a GPU machine of your own, repeat until it prints "all done":

    python dev/gpu_claims.py                      # one step of at most 540 s
    python dev/gpu_claims.py --budget=3600        # or everything at once

On a machine that starts bare at each step (each step at most 10 minutes) and keeps its files
only while the next step follows at once: rebound (prepare/planets.py needs it) may be missing
there, so bring it as a wheel, made once in the repository root where pip reaches PyPI:

    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 -d .whl rebound==5.2.2      # one 0.9 MB wheel, no dependencies

then each step, with .whl/ and the results so far (dev/results/gpu) in the checkout it runs in:

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
    python3 dev/gpu_claims.py --budget=540; tar czf gpu.tgz dev/results/gpu

and unpack the gpu.tgz it leaves (`tar xzf gpu.tgz`) in the checkout of the next step: that step
skips every run whose results are there. Three steps should do it; a bare machine prepares the
data again (~1 minute), and a training stopped at a step's end continues only where its
checkpoint (out/gpu) is still there, else it starts again.

    python dev/gpu_claims.py --dry-run --out /tmp/gpu_dry    # the whole pipeline on a CPU, about a minute

The dry run uses tiny data (--size tiny), a 1 × 16 model and 4 steps; its tables say nothing
about the claims and it refuses to write into dev/results/gpu.
"""
import argparse
import glob
import json
import math
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the repository root: util
from util import atomic_write_text, format_number  # noqa: E402

LOOKUP, PLANETS = ("xval", "p10", "fp15"), ("xval", "b1999")
RUNS = [("lookup", e) for e in LOOKUP] + [("planets", e) for e in PLANETS]  # in the order they are done
CONFIG = {"lookup": "dev/config/gpu_lookup.py", "planets": "dev/config/gpu_planets.py"}
PREPARE = {"lookup": ["prepare/lookup.py", "--size", "paper", "--entries", "2,6"],  # the paper's 1M training samples
           "planets": ["prepare/planets.py", "--size", "small"]}  # 40,000 systems: ~15 s on 16 cores, as the CPU recipe
EVAL_SAMPLES = {"lookup": 5000, "planets": 1000}  # first samples of each test split (planets: 5 fill-in passes each)
MIN_START = 60  # seconds: a piece of work is not started with less than this left of the budget
MARGIN = 20  # seconds kept at the end of the budget: stopping a training (SIGINT, then SIGKILL) and the tables
LEARNED = 0.1  # the task's criterion: MSE at most 0.1 × the variance of the true values

# the dry run: tiny data and model on the CPU, every stage for real
DRY_PREPARE = ["--size", "tiny", "--workers", "1"]
DRY_TRAIN = ["--n_layer=1", "--n_head=2", "--n_embd=16", "--max_iters=4", "--batch_size=4", "--micro_batch_size=4",
             "--eval_interval=2", "--eval_batches=1", "--log_interval=1", "--warmup_iters=1", "--compile=False"]
DRY_EVAL_SAMPLES = 4

# the paper's look-up tables (App. C): MSE, accuracy at 3 s.f., OoD MSE, OoD accuracy at 3 s.f.
PAPER_LOOKUP = {"xval": ("3e-3", "6%", "3.5e-3", "1.5%"), "p10": ("2.1e-2", "91%", "0.38", "65.7%"),
                "fp15": ("7e-3", "99.9%", "0.09", "34.5%")}


class Plan:
    """Paths and commands of one invocation."""

    def __init__(self, args):
        self.dry, self.out, self.budget = args.dry_run, args.out, args.budget
        self.work = args.work or (os.path.join(args.out, "work") if args.dry_run else "out/gpu")
        self.device = "cpu" if args.dry_run else "cuda"
        self.start = time.time()

    def deadline(self):
        return self.start + self.budget - MARGIN

    def left(self):
        return self.deadline() - time.time()

    def data(self, task):
        return os.path.join(self.work, "data", task)

    def run_dir(self, task, enc):
        return os.path.join(self.work, f"{task}_{enc}")

    def result_dir(self, task, enc):
        return os.path.join(self.out, f"{task}_{enc}")

    def train_cmd(self, task, enc):
        return ([sys.executable, "train.py", CONFIG[task], f"--encoding={enc}", f"--data_dir={self.data(task)}",
                 f"--out_dir={self.run_dir(task, enc)}", f"--device={self.device}"] + (DRY_TRAIN if self.dry else []))

    def eval_cmd(self, task, enc):
        n = DRY_EVAL_SAMPLES if self.dry else EVAL_SAMPLES[task]
        return [sys.executable, "eval.py", f"--ckpt={self.run_dir(task, enc)}/ckpt_latest.pt", f"--max_samples={n}",
                "--plots=True", "--save_predictions=True", f"--out={self.run_dir(task, enc)}/eval", f"--device={self.device}"]

    def fingerprint(self):
        """What the results in --out depend on: a later invocation with other settings must not add to them."""
        configs = {path: {k: v for k, v in runpy.run_path(os.path.join(ROOT, path)).items() if not k.startswith("_")}
                   for path in CONFIG.values()}  # the settings, not the comments
        return {"dry_run": self.dry, "configs": configs, "train_overrides": DRY_TRAIN if self.dry else [],
                "prepare": PREPARE, "eval_samples": DRY_EVAL_SAMPLES if self.dry else EVAL_SAMPLES}


# ---------------------------------------------------------------- running the project's scripts

def run(cmd, log_path, deadline):
    """
    Run cmd in the repository root, its output to the console and appended to log_path, and stop it
    with SIGINT (then SIGKILL) at `deadline` (time.time()). True if it finished, False if stopped;
    a failure ends this script with the command and where its output is.
    """
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    print("$ " + " ".join(cmd[1:] if cmd[0] == sys.executable else cmd), flush=True)
    with open(log_path, "a") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        # its own process group: a stop reaches the workers of prepare/ and tokenize_numbers.py too
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, process_group=0)

        def copy():
            for line in proc.stdout:
                log.write(line)
                log.flush()
                sys.stdout.write("  " + line)
                sys.stdout.flush()
        reader = threading.Thread(target=copy, daemon=True)
        reader.start()
        try:
            while proc.poll() is None and time.time() < deadline:
                time.sleep(0.2)
        finally:  # the deadline, or this script interrupted: the command never outlives it
            stopped = proc.poll() is None
            if stopped:
                os.killpg(proc.pid, signal.SIGINT)  # Python unwinds: an atomic write in flight leaves no temporary file
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            reader.join()
        if stopped:
            log.write(f"# gpu_claims: stopped at the time budget (exit {proc.returncode})\n")
            return False
    if proc.returncode != 0:
        raise SystemExit(f"error: `{' '.join(cmd)}` failed (exit {proc.returncode}); its output is in {log_path}")
    return True


def mark(path):
    atomic_write_text(path, time.strftime("%Y-%m-%d %H:%M:%S\n"))


def prepared(plan, task, enc):
    """Prepare and tokenize the task's data for enc unless done; False if the budget ran out."""
    data = plan.data(task)
    steps = [(data + ".prepared", PREPARE[task] + ["--out", data, "--force"] + (DRY_PREPARE if plan.dry else [])),
             (f"{data}.{enc}.tokenized", ["tokenize_numbers.py", data, "--encoding", enc] + (["--workers", "1"] if plan.dry else []))]
    if not os.path.exists(steps[0][0]):  # to be prepared (again, with --force): every tokenization of it is stale
        for stale in glob.glob(data + ".*.tokenized"):
            os.remove(stale)
    for marker, args in steps:
        if os.path.exists(marker):
            continue
        if plan.left() < MIN_START or not run([sys.executable] + args, data + ".log", plan.deadline()):
            return False
        mark(marker)
    return True


def trained(plan, task, enc):
    """Train (or continue) one run unless done; False if the budget ran out first."""
    run_dir = plan.run_dir(task, enc)
    marker = os.path.join(run_dir, "trained")
    if os.path.exists(marker):
        return True
    if plan.left() < MIN_START:
        return False
    cmd = plan.train_cmd(task, enc)
    if os.path.exists(os.path.join(run_dir, "ckpt_latest.pt")):
        cmd.append("--resume")
    elif os.path.exists(os.path.join(run_dir, "log.jsonl")):
        print(f"note: {run_dir} holds a run stopped before its first checkpoint: it starts again")
        cmd.append("--overwrite=True")
    t0 = time.time()
    finished = run(cmd, os.path.join(run_dir, "train.log"), plan.deadline())
    with open(os.path.join(run_dir, "train.log"), "a") as log:
        log.write(f"# gpu_claims: {time.time() - t0:.1f} s in this sitting\n")
    if finished:
        mark(marker)
    return finished


def evaluated(plan, task, enc):
    """Evaluate a trained run and copy its report and figures to --out; False if the budget ran out."""
    result = plan.result_dir(task, enc)
    if os.path.exists(os.path.join(result, "eval.json")):
        return True
    if plan.left() < MIN_START:
        return False
    run_dir = plan.run_dir(task, enc)
    if not run(plan.eval_cmd(task, enc), os.path.join(run_dir, "eval.log"), plan.deadline()):
        return False
    shutil.copyfile(os.path.join(plan.data(task), "meta.json"), os.path.join(plan.out, f"data_{task}.json"))  # how it was made
    if task == "lookup":
        write_lookup_baseline(plan)
    os.makedirs(result, exist_ok=True)
    names = sorted(f for f in os.listdir(run_dir) if re.fullmatch(r"eval(_.*\.png|\.md)", f))
    for name in names + ["log.jsonl", "train.log", "eval.json"]:  # eval.json last: it marks the run finished
        shutil.copyfile(os.path.join(run_dir, name), os.path.join(result, name + ".tmp"))
        os.replace(os.path.join(result, name + ".tmp"), os.path.join(result, name))
    return True


def write_lookup_baseline(plan):
    """The answer MSE of predicting the mean of the sample's dictionary values (no key matching)."""
    n = DRY_EVAL_SAMPLES if plan.dry else EVAL_SAMPLES["lookup"]
    baseline = {}
    for split in ("test", "test_ood"):
        with open(os.path.join(plan.data("lookup"), f"{split}.txt")) as f:
            lines = [line.strip() for line in f if line.strip()][:n]
        truth, guess = [], []
        for line in lines:  # {d:1.53,e:-1.33}e=-1.33
            entries, answer = line[1:].split("}")
            truth.append(float(answer.split("=")[1]))
            values = [float(e.split(":")[1]) for e in entries.split(",")]
            guess.append(sum(values) / len(values))
        baseline[split] = {"n": len(truth), "mse": mean_sq(truth, guess), "variance": float(np.var(truth))}
    atomic_write_text(os.path.join(plan.out, "lookup_baseline.json"), json.dumps(baseline, indent=1) + "\n")


# ---------------------------------------------------------------- tables

def valid_pairs(y, p):
    """Truths and predictions where the prediction is a number (eval.py writes None for an invalid one)."""
    p = np.array([math.nan if v is None else v for v in p], float)
    keep = ~np.isnan(p)
    return np.asarray(y, float)[keep], p[keep]


def mean_sq(y, p):
    y, p = valid_pairs(y, p)
    return float(np.mean((y - p) ** 2)) if len(y) else math.nan


def correlation(y, p):
    y, p = valid_pairs(y, p)
    return float(np.corrcoef(y, p)[0, 1]) if len(y) > 1 and y.std() > 0 and p.std() > 0 else math.nan


def cell(x, digits=3):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format_number(x, digits)


def pct(x):
    return "—" if x is None or math.isnan(x) else f"{100 * x:.1f}%"


def load_report(plan, task, enc):
    path = os.path.join(plan.result_dir(task, enc), "eval.json")
    return json.load(open(path)) if os.path.exists(path) else None


def scored(report, split, quantity):
    """(MSE, MSE / variance, correlation, invalid rate, the quantity's entry) of one split and quantity."""
    r = report["splits"][split][quantity]
    mse, var = r["mean"]["mse"], float(np.var(r["truth"]))
    invalid = r["mean"]["not_num_rate" if report["encoding"] == "xval" else "invalid_rate"]
    return mse, mse / var if var > 0 else math.nan, correlation(r["truth"], r["median"]), invalid, r


def learned(ratio):
    return "yes" if ratio <= LEARNED else "no"  # NaN (no valid answer): no


def steps_of(report):
    return f"{report['config']['max_iters']:,}"


def lookup_table(plan):
    lines = ["# Look-up, the paper's 2-6 entries", "",
             "Written by `python dev/gpu_claims.py` from `<run>/eval.json`. The answer of the first "
             "samples of each split; learned means MSE ≤ 0.1 × the variance of the true answers. "
             "Invalid: text encodings' answers that are not a number; for xVal, the token head not "
             "predicting [NUM]. Paper: its App. C tables (MSE, acc @3 s.f.).", "",
             "| encoding | steps | n | MSE | MSE / var | learned | acc @3 s.f. | acc @2 s.f. | invalid | OoD MSE "
             "| OoD MSE / var | OoD acc @3 s.f. | OoD invalid | paper: MSE, acc, OoD MSE, OoD acc |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for enc in LOOKUP:
        report = load_report(plan, "lookup", enc)
        paper = ", ".join(PAPER_LOOKUP[enc])
        if report is None:
            lines.append(f"| {enc} | not run yet |" + "  |" * 12 + f" {paper} |")
            continue
        mse, ratio, _, invalid, r = scored(report, "test", "answer")
        o_mse, o_ratio, _, o_invalid, o = scored(report, "test_ood", "answer")
        lines.append(f"| {enc} | {steps_of(report)} | {r['n']} | {cell(mse)} | {cell(ratio)} | {learned(ratio)} | "
                     f"{pct(r['mean']['acc3'])} | "
                     f"{pct(r['mean']['acc2'])} | {pct(invalid)} | {cell(o_mse)} | {cell(o_ratio)} | "
                     f"{pct(o['mean']['acc3'])} | {pct(o_invalid)} | {paper} |")
    path = os.path.join(plan.out, "lookup_baseline.json")
    if os.path.exists(path):
        b = json.load(open(path))
        t, o = b["test"], b["test_ood"]
        lines.append(f"| the mean of the dictionary's values (no key matching) | — | {t['n']} | {cell(t['mse'])} | "
                     f"{cell(t['mse'] / t['variance'])} | — | — | — | — | {cell(o['mse'])} | {cell(o['mse'] / o['variance'])} | — | — | |")
    return "\n".join(lines) + "\n"


PLANET_QUANTITIES = (("dt", "Δt"), ("a0", "a0"), ("e0", "e0"), ("m0", "m0"), ("steps", "last 10 steps"))


def planets_table(plan):
    meta_path = os.path.join(plan.out, "data_planets.json")
    seen = json.load(open(meta_path))["train_stepsizes"] if os.path.exists(meta_path) else []
    head = ["# Planets: Δt and a0", "",
            "Written by `python dev/gpu_claims.py` from `<run>/eval.json`: MSE / variance of the true "
            "values (learned: ≤ 0.1) on the first samples of each split, in the text's units. "
            "Invalid: the largest rate over the quantities (text encodings: not a number; xVal: the "
            "token head not predicting [NUM]).", "",
            "## Test split", "",
            "| encoding | steps | n | " + " | ".join(name for _, name in PLANET_QUANTITIES) + " | Δt, a0 learned | invalid |",
            "|---|---|---|" + "---|" * len(PLANET_QUANTITIES) + "---|---|"]
    ood = ["", "## Out of distribution", "",
           f"Δt on step sizes never seen in training (training: {', '.join(map(str, seen)) or '—'}), a0 of an "
           "innermost planet in (1, 1.16) (training: exactly 1). At a seen step size: the share of Δt answers "
           "within 0.005 of a training step size (the paper: text encodings predict only values they saw).", "",
           "| encoding | Δt MSE | Δt MSE / var | Δt corr | Δt at a seen step size | a0 MSE | a0 MSE / var | a0 corr | invalid |",
           "|---|---|---|---|---|---|---|---|---|"]
    for enc in PLANETS:
        report = load_report(plan, "planets", enc)
        if report is None:
            head.append(f"| {enc} | not run yet |  |" + "  |" * len(PLANET_QUANTITIES) + "  |  |")
            ood.append(f"| {enc} | not run yet |  |  |  |  |  |  |  |")
            continue
        test = [scored(report, "test", q) for q, _ in PLANET_QUANTITIES]
        head.append(f"| {enc} | {steps_of(report)} | {test[0][4]['n']} | " + " | ".join(cell(s[1]) for s in test)
                    + f" | {learned(test[0][1])}, {learned(test[1][1])} | {pct(max(s[3] for s in test))} |")
        dt, a0 = scored(report, "test_ood_stepsize", "dt"), scored(report, "test_ood_a0", "a0")
        answers = [p for p in dt[4]["median"] if p is not None]
        at_seen = sum(min(abs(p - s) for s in seen) <= 0.005 for p in answers) / len(answers) if answers and seen else math.nan
        ood.append(f"| {enc} | {cell(dt[0])} | {cell(dt[1])} | {cell(dt[2], 2)} | {pct(at_seen)} | {cell(a0[0])} | {cell(a0[1])} | "
                   f"{cell(a0[2], 2)} | {pct(max(dt[3], a0[3]))} |")
    return "\n".join(head + ood) + "\n"


def runs_table(plan):
    """Per run: steps done, the last validation, median ms per step, the sittings' wall time, the system."""
    lines = ["# The trainings", "", "Written by `python dev/gpu_claims.py` from each run's `log.jsonl` and "
             "`train.log` (wall: the sum of the sittings of train.py, startup and compile included).", "",
             "| run | steps | last val loss | median ms/step | sittings | wall | system |", "|---|---|---|---|---|---|---|"]
    for task, enc in RUNS:
        folder = plan.result_dir(task, enc) if os.path.exists(os.path.join(plan.result_dir(task, enc), "train.log")) \
            else plan.run_dir(task, enc)
        log_path, text_path = os.path.join(folder, "log.jsonl"), os.path.join(folder, "train.log")
        if not os.path.exists(text_path):
            lines.append(f"| {task}_{enc} | not started |  |  |  |  |  |")
            continue
        rows = [json.loads(line) for line in open(log_path)] if os.path.exists(log_path) else []
        vals = [r for r in rows if "val_loss" in r]
        ms = sorted(r["ms_per_step"] for r in rows if "ms_per_step" in r)
        text = open(text_path).read()
        sittings = [float(s) for s in re.findall(r"# gpu_claims: ([\d.]+) s in this sitting", text)]
        system = re.findall(r"^system: (.*)$", text, re.M)
        lines.append(f"| {task}_{enc} | {max((r['iter'] for r in rows), default=0):,} | "
                     f"{cell(vals[-1]['val_loss'], 4) if vals else '—'} | {cell(ms[len(ms) // 2]) if ms else '—'} | "
                     f"{len(sittings)} | {sum(sittings):.0f} s | {system[-1] if system else '—'} |")
    return "\n".join(lines) + "\n"


README = """# The look-up and planets claims on one GPU

Written once by `python dev/gpu_claims.py` (it never replaces this file); the tables beside it
are rewritten at every invocation.

## How it was run

- Command: `python dev/gpu_claims.py --budget=540`, (fill in: how many times, on which GPU;
  [`runs.md`](runs.md) has each training's system line and wall time).
- Look-up: `dev/config/gpu_lookup.py` (6 × 768, batch 128, 15,000 steps, lr 3e-4 → 3e-5) on
  `prepare/lookup.py --size paper --entries 2,6`, for xVal, P10 and FP15.
- Planets: `dev/config/gpu_planets.py` (4 × 256, batch 64, 8,000 steps, lr 1e-3 → 1e-4) on
  `prepare/planets.py --size small`, for xVal and B1999.
- Evaluation: `eval.py --plots=True --save_predictions=True`, the first 5,000 look-up and 1,000
  planets samples of each split. The trainings: [`runs.md`](runs.md).

## Look-up, 2-6 entries (claims 4, 5)

[`lookup.md`](lookup.md); figures `lookup_<encoding>/eval_test.png`, `eval_test_ood.png`.

Verdict: (to be written: did any encoding leave the dictionary-mean plateau, MSE ≤ 0.1 × variance?)

## Planets Δt and a0 (claims 6, 7)

[`planets.md`](planets.md); figures `planets_<encoding>/eval_test_ood_stepsize.png` (training step
sizes marked), `eval_test_ood_a0.png`.

Verdict: (to be written: Δt and a0 learned? do B1999's OoD Δt answers stay at the training step sizes?)
"""


def advance(plan):
    """Data, training and evaluation of each run in turn; True once all are finished."""
    for task, enc in RUNS:
        if not os.path.exists(os.path.join(plan.result_dir(task, enc), "eval.json")):
            if not (prepared(plan, task, enc) and trained(plan, task, enc) and evaluated(plan, task, enc)):
                return False
            write_tables(plan)
    return True


def write_tables(plan):
    atomic_write_text(os.path.join(plan.out, "lookup.md"), lookup_table(plan))
    atomic_write_text(os.path.join(plan.out, "planets.md"), planets_table(plan))
    atomic_write_text(os.path.join(plan.out, "runs.md"), runs_table(plan))
    readme = os.path.join(plan.out, "README.md")
    if not os.path.exists(readme):
        atomic_write_text(readme, README)


# ---------------------------------------------------------------- main

def check_out(plan):
    """--out holds results of these settings only: a dry run never mixes with a GPU run, nor old configs with new."""
    path = os.path.join(plan.out, "plan.json")
    if os.path.exists(path):
        theirs = json.load(open(path))
        if theirs != plan.fingerprint():
            what = "a dry run" if theirs.get("dry_run") else "a GPU run"
            raise SystemExit(f"error: {plan.out} holds the results of {what} with other settings ({path}); "
                             "use another --out, or delete it to start over")


def main(argv=None):
    p = argparse.ArgumentParser(description="The look-up and planets claims on one GPU, resumable in time-boxed steps.")
    p.add_argument("--budget", type=float, default=540, help="seconds this invocation may take (default 540)")
    p.add_argument("--out", default=None, help="tables and figures (default dev/results/gpu; required with --dry-run)")
    p.add_argument("--work", default=None, help="data, checkpoints and logs (default out/gpu; dry run: <out>/work)")
    p.add_argument("--dry-run", action="store_true", help="tiny data and model on the CPU: checks the pipeline")
    args = p.parse_args(argv)
    if args.budget <= MARGIN + MIN_START:
        p.error(f"--budget must exceed {MARGIN + MIN_START} s (a piece needs {MIN_START} s, stopping {MARGIN} s)")
    if args.dry_run and args.out is None:
        p.error("--dry-run needs --out: its tiny-model tables must not land in dev/results/gpu")
    # paths given are from the current folder; the defaults and the scripts' own paths from the repository root
    args.out = os.path.abspath(args.out) if args.out else "dev/results/gpu"
    args.work = os.path.abspath(args.work) if args.work else None
    os.chdir(ROOT)
    plan = Plan(args)
    check_out(plan)
    if not plan.dry:
        import torch
        if not torch.cuda.is_available():
            raise SystemExit("error: no CUDA GPU here: this run is sized for one H100 (~20 minutes); "
                             "--dry-run --out DIR checks the pipeline on a CPU")
    os.makedirs(plan.out, exist_ok=True)
    if not os.path.exists(os.path.join(plan.out, "plan.json")):
        atomic_write_text(os.path.join(plan.out, "plan.json"), json.dumps(plan.fingerprint(), indent=1) + "\n")
    for task, enc in RUNS:
        if os.path.exists(os.path.join(plan.result_dir(task, enc), "eval.json")):
            print(f"{task}_{enc}: finished (skipped)")
    complete = advance(plan)
    write_tables(plan)
    if complete:
        print(f"all done: {plan.out}/lookup.md, planets.md, runs.md")
    else:
        print(f"stopped at the time budget ({time.time() - plan.start:.0f} s): run the same command again to continue")


if __name__ == "__main__":
    main()
