"""
How long runs trained: each train.py --out_dir's steps and training time, read from its log.jsonl,
and the total. The time of a logged row is its ms/step times the steps since the row before it, so
validations between logs count and steps redone after a resume count once (train.py keeps a log's
rows only up to the checkpoint it resumes from).

    python dev/train_time.py out/arith/mult3_xval out/arith/mult3_p10
    python dev/train_time.py out/arith/*/          # every run under a folder
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository root
from util import format_duration  # noqa: E402


def train_time(out_dir):
    """(steps, seconds) of a run: the last logged step and the sum of ms/step × steps over its rows."""
    path = os.path.join(out_dir, "log.jsonl")
    steps, seconds = 0, 0.0
    try:
        with open(path) as f:
            for i, line in enumerate(f, 1):
                try:
                    row = json.loads(line)
                    if "ms_per_step" in row:
                        seconds += row["ms_per_step"] / 1000 * (row["iter"] - steps)
                        steps = row["iter"]
                except (ValueError, KeyError, TypeError):
                    sys.exit(f"error: {path}:{i}: not a row of train.py's log (a JSON object with 'iter' and 'ms_per_step')")
    except OSError as e:
        sys.exit(f"error: cannot read {path}: {e.strerror} (is {out_dir} a train.py --out_dir?)")
    return steps, seconds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dirs", nargs="+", help="train.py --out_dir folders, each holding log.jsonl")
    args = p.parse_args(argv)
    total = 0.0
    for out_dir in args.out_dirs:
        steps, seconds = train_time(out_dir)
        total += seconds
        print(f"{out_dir}: {steps:,} steps, {format_duration(seconds)} ({seconds / 3600:.2f} h)")
    print(f"total: {len(args.out_dirs)} runs, {total / 3600:.1f} h of training")


if __name__ == "__main__":
    main()
