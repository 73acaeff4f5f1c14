"""
The MLP baselines of the temperature-forecasting task (paper App. C, "Non-transformer baselines",
table "Temperature forecast MLP baselines"), trained and tested on the transformers' own splits.

Samples hold 60-89 stations and 8-15 steps, so, as in the paper, every sample is cut to its first
`n_stations` stations and first `n_steps` steps (60 and 8, the fewest any sample has) and the last
of those steps is predicted from the earlier ones. A sample with fewer stations or steps cannot be
cut and is left out; how many is printed and written for every split.

  all_stations    one MLP sees a whole cut sample: every station's coordinates (sin lat, sin lon,
                  cos lon), the start phases (sin/cos ToD, sin/cos ToY) and every station's earlier
                  temperatures; it predicts all the stations' last temperatures at once
  single          one station at a time (each station of each cut sample is an example): its
                  earlier temperatures, its coordinates and the start phases -> its last temperature
  temp_only       the same without coordinates or phases
  temp_coord      temperatures and coordinates
  temp_toy        temperatures and the time of year of the first step (sin/cos ToY)

All of them predict the same test numbers, so their MSEs compare directly; persistence (the last
earlier step) and the training mean are printed beside them for scale. MSE is reported in the
standardised units of the samples and in K² (× std² from meta.json); the paper's table, headed
"MSE Loss (C)", we read as °C² = K²: All Stations 2.31, Single Station 1.57, Temp only 1.79,
Temp + Coord 1.65, Temp + ToY 1.74. Readings where the paper is silent: "Single Station" gets both
start phases (ToD and ToY), GELU activations, AdamW at a constant learning rate, and the step with
the lowest validation MSE is the one tested.

    python tools/baselines.py --data_dir=data/era5 --out=out/baselines
"""

import copy
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# the repository root
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from configurator import configure  # noqa: E402
from util import atomic_write_text  # noqa: E402

# -- config: python tools/baselines.py --help
data_dir = "data/era5"  # a temperature dataset from prepare/era5.py (train/val/test.txt, meta.json)
out = "out/baselines"  # results are written to <out>.json and <out>.md
n_stations = 60  # the first stations of each sample are used (paper: 60, the fewest in any sample)
n_steps = 8  # the first steps of each sample; the last of them is predicted (paper: 8)
variants = "all_stations,single,temp_only,temp_coord,temp_toy"  # the MLPs to train (docstring)
all_width = 512  # hidden width of the all-stations MLP (paper: 256-8192 tried, results similar)
all_layers = 3  # its hidden layers (paper: up to 5 tried)
single_width = 256  # hidden width of the single-station MLPs (paper: 256)
single_layers = 3  # their hidden layers (paper: 3)
max_iters = 2000  # AdamW steps per MLP
eval_interval = 200  # steps between validations; the step with the lowest val MSE is tested
batch_size = 256  # stations per step of the single-station MLPs
all_batch_size = 64  # samples per step of the all-stations MLP
learning_rate = 1e-3  # AdamW, constant; the step with the best validation is kept
weight_decay = 0.01  # AdamW weight decay (all parameters)
max_samples = 0  # read at most this many lines of each split; 0 = all
seed = 1337  # fixes initialisation and batches: the same seed gives the same losses
# -- end config
# the settings' ranges (setting_checks.py); a number not named here: [0, inf)
RANGES = dict(
    n_stations="[1, inf)",
    n_steps="[2, inf)",
    all_width="[1, inf)",
    single_width="[1, inf)",
    max_iters="[1, inf)",
    eval_interval="[1, inf)",
    batch_size="[1, inf)",
    all_batch_size="[1, inf)",
    learning_rate="(0, inf)",
    seed="[0, 4294967295]",
)

# what each variant sees besides temperatures; the names of the paper's table
INPUTS = {
    "all_stations": ("All Stations", ("coords", "tod", "toy")),
    "single": ("Single Station", ("coords", "tod", "toy")),
    "temp_only": ("Single Station - Temp only", ()),
    "temp_coord": ("Single Station - Temp + Coord", ("coords",)),
    "temp_toy": ("Single Station - Temp + ToY", ("toy",)),
}


def read_split(path, n_stations, n_steps, max_samples=0):
    """
    The samples of one split cut to their first n_stations stations and n_steps steps: a dict of
    coords (N, S, 3), start (N, 4), temps (N, S, K), and 'excluded', the number of samples with too
    few stations or steps to cut.
    """
    coords, start, temps, excluded = [], [], [], 0
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if max_samples and number > max_samples:
                break
            try:
                record = json.loads(line)
                c = np.array(record["description"]["coords"], np.float32)
                s = np.array(record["description"]["start"], np.float32)
                t = np.array(record["data"], np.float32)  # (stations, steps); ragged rows raise
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(
                    f"error: {path}:{number}: not a temperature sample "
                    f'{{"description":{{"coords","start"}},"data"}} ({e})'
                )
            if t.ndim != 2 or c.shape != (len(t), 3) or s.shape != (4,):
                raise SystemExit(
                    f"error: {path}:{number}: expected coords (stations, 3), start (4,) and "
                    f"data (stations, steps); found {c.shape}, {s.shape} and {t.shape}"
                )
            if t.shape[0] < n_stations or t.shape[1] < n_steps:
                excluded += 1
                continue
            coords.append(c[:n_stations])
            start.append(s)
            temps.append(t[:n_stations, :n_steps])
    if not temps:
        raise SystemExit(
            f"error: {path}: no sample has {n_stations} stations and {n_steps} steps "
            f"({excluded} excluded); lower --n_stations or --n_steps"
        )
    return {
        "coords": np.stack(coords),
        "start": np.stack(start),
        "temps": np.stack(temps),
        "excluded": excluded,
    }


def features(split, variant):
    """(inputs, targets) of one variant: rows are samples (all_stations) or stations (the
    others)."""
    # (N, S, 3), (N, 4), (N, S, K)
    coords, start, temps = split["coords"], split["start"], split["temps"]
    past, last = temps[..., :-1], temps[..., -1]  # (N, S, K-1), (N, S)
    N, S = last.shape
    if variant == "all_stations":
        return np.concatenate([coords.reshape(N, -1), start, past.reshape(N, -1)], axis=1), last
    extras = {"coords": coords, "tod": start[:, None, :2], "toy": start[:, None, 2:]}
    parts = [past] + [
        np.broadcast_to(extras[name], (N, S, extras[name].shape[-1])) for name in INPUTS[variant][1]
    ]
    return np.concatenate(parts, axis=2).reshape(N * S, -1), last.reshape(N * S, 1)


def mlp(n_in, width, layers, n_out):
    """`layers` hidden layers of `width` units with GELU, then a linear output."""
    dims = [n_in] + [width] * layers
    hidden = [m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.GELU())]
    return nn.Sequential(*hidden, nn.Linear(dims[-1], n_out))


@torch.no_grad()
def mse(model, x, y, chunk=65536):
    """Mean squared error over every predicted number."""
    total = sum(
        F.mse_loss(model(x[i : i + chunk]), y[i : i + chunk], reduction="sum").item()
        for i in range(0, len(x), chunk)
    )
    return total / y.numel()


def train_mlp(variant, splits):
    """Train one variant with AdamW on train; return its scores at the step with the lowest val
    MSE."""
    train, val, test = (
        [torch.from_numpy(np.ascontiguousarray(a)) for a in features(splits[s], variant)]
        for s in ("train", "val", "test")
    )
    width, layers, batch = (
        (all_width, all_layers, all_batch_size)
        if variant == "all_stations"
        else (single_width, single_layers, batch_size)
    )
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = mlp(train[0].shape[1], width, layers, train[1].shape[1])
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    best = {"val_mse": float("inf")}
    for step in range(1, max_iters + 1):
        idx = torch.randint(len(train[0]), (batch,), generator=generator)
        loss = F.mse_loss(model(train[0][idx]), train[1][idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % eval_interval == 0 or step == max_iters:
            val_mse = mse(model, *val)
            if val_mse < best["val_mse"]:
                best = {
                    "val_mse": val_mse,
                    "step": step,
                    "state": copy.deepcopy(model.state_dict()),
                }
    model.load_state_dict(best.pop("state"))
    return {
        **best,
        "test_mse": mse(model, *test),
        "inputs": train[0].shape[1],
        "params": sum(p.numel() for p in model.parameters()),
    }


def main():
    config = configure(globals(), __file__)
    chosen = [v for v in variants.split(",") if v]
    for v in chosen:
        if v not in INPUTS:
            raise SystemExit(
                f"error: unknown variant {v!r} in --variants; expected some of {', '.join(INPUTS)}"
            )
    if n_steps < 2 or n_stations < 1:
        raise SystemExit(
            f"error: need n_steps >= 2 and n_stations >= 1, got {n_steps} and {n_stations}"
        )
    meta_path = os.path.join(data_dir, "meta.json")
    if not os.path.exists(meta_path):
        raise SystemExit(f"error: {meta_path} not found; prepare the data with prepare/era5.py")
    with open(meta_path) as f:
        norm = json.load(f)["normalisation"]  # the std turns standardised MSE back into K²
    t0 = time.time()
    splits = {}
    for s in ("train", "val", "test"):
        splits[s] = read_split(os.path.join(data_dir, f"{s}.txt"), n_stations, n_steps, max_samples)
        n = len(splits[s]["temps"])
        print(
            f"{s}: {n} samples used, {splits[s]['excluded']} excluded (fewer than {n_stations} "
            f"stations or {n_steps} steps); {n * n_stations} numbers to predict"
        )
    print(f"read in {time.time() - t0:.1f} s; std {norm['std']:.4g} {norm['units']}")

    # the same test numbers for every row: reference predictions, then the MLPs
    y_test, y_train = splits["test"]["temps"][..., -1], splits["train"]["temps"][..., -1]
    rows = [
        {
            "method": "Training mean",
            "variant": "mean",
            "test_mse": float(np.mean((y_test - y_train.mean()) ** 2)),
        },
        {
            "method": "Persistence (last earlier step)",
            "variant": "persistence",
            "test_mse": float(np.mean((y_test - splits["test"]["temps"][..., -2]) ** 2)),
        },
    ]
    for v in chosen:
        t1 = time.time()
        rows.append(
            {
                "method": INPUTS[v][0],
                "variant": v,
                **train_mlp(v, splits),
                "seconds": round(time.time() - t1, 1),
            }
        )
        print(
            f"{v}: val {rows[-1]['val_mse']:.4g} at step {rows[-1]['step']}, test"
            f" {rows[-1]['test_mse']:.4g} ({rows[-1]['params']:,} parameters,"
            f" {rows[-1]['seconds']} s)"
        )
    for r in rows:
        r["test_mse_K2"] = r["test_mse"] * norm["std"] ** 2

    lines = [
        (
            f"MLP baselines on {data_dir}: first {n_stations} stations, step {n_steps} predicted"
            f" from steps 1-{n_steps - 1}; {len(y_test)} test samples"
        ),
        "",
        (
            "| method | inputs | test MSE (standardised) "
            f"| test MSE ({norm['units']}²) | val MSE | best step |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        selection = f"{r['val_mse']:.4g} | {r['step']}" if "step" in r else " | "  # MLPs only
        lines.append(
            f"| {r['method']} | {r.get('inputs', '')} | {r['test_mse']:.4g} |"
            f" {r['test_mse_K2']:.4g} | {selection} |"
        )
    print("\n".join(lines))
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    result = {
        "config": config,
        "normalisation": norm,
        "results": rows,
        "seconds": round(time.time() - t0, 1),
        "samples": {
            s: {"used": len(splits[s]["temps"]), "excluded": splits[s]["excluded"]} for s in splits
        },
    }
    atomic_write_text(out + ".json", json.dumps(result, indent=1) + "\n")
    atomic_write_text(out + ".md", "\n".join(lines) + "\n")
    print(f"wrote {out}.json and {out}.md in {result['seconds']} s")


if __name__ == "__main__":
    main()
