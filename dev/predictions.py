"""The predictions an eval.py report keeps (--save_predictions=True), read for the study's scripts."""
import json
import os

import numpy as np


def saved_predictions(path, task, quantity, split="test"):
    """(report, truths, predictions) of one quantity of an eval.py report written with
    --save_predictions=True (task None: a report of any task); errors name the file."""
    if not os.path.isfile(path):
        raise SystemExit(
            f"error: {path}: no such report; write one with eval.py --save_predictions=True"
        )
    try:
        with open(path) as f:
            report = json.load(f)
    except ValueError as e:
        raise SystemExit(f"error: {path}: not an eval.py report ({e})")
    if not isinstance(report, dict):
        raise SystemExit(f"error: {path}: not an eval.py report (a JSON object is expected)")
    r = report.get("splits", {}).get(split, {}).get(quantity)
    if task not in (None, report.get("task")) or r is None:
        what = f"a {task} {split} split" if task else f"a {split} split"
        raise SystemExit(
            f"error: {path}: expected an eval.py report of {what} with {quantity!r}, "
            f"got task {report.get('task')!r} with splits {', '.join(report.get('splits', {}))}"
        )
    if "truth" not in r:
        raise SystemExit(
            f"error: {path} has no predictions; run eval.py with --save_predictions=True"
        )
    return report, np.array(r["truth"], dtype=float), np.array(r["median"], dtype=float)
