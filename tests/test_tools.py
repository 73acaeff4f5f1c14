"""tools/ on tiny data: the numbers each promises; a bad flag or file, one line naming it."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import conftest
from conftest import ROOT
from helpers import TINY, failed, one_line_error, prepared, sample_line, tiny, tokenize, train
from dataset import Vocab
from tokenize_arrays import build_text_vocab
from tokenize_line import encode

sys.path.insert(0, os.path.join(ROOT, "tools"))
import baselines
import bench
import gpu_check
import probe

NUMBER = r"[\d,]+\.\d"
STD = 2.0  # meta.json's: MSE in K² = standardised MSE × 4


def run(*args, check=True):  # in a new process of one thread
    return conftest.run(*args, check=check, env={**os.environ, "OMP_NUM_THREADS": "1"})


def numbers_in(row):
    return len(re.findall(rf"\| {NUMBER} ", row))


def write_temperatures(d, sizes, short=None):
    """Samples of 3-4 stations × 4-5 steps, `short` ones of 2 stations or 3 steps, their ocean labels
    (1 where the first station's sin lat < 0), and meta.json."""
    rng = np.random.default_rng(0)
    d.mkdir()
    for split, n in sizes.items():
        few_stations, few_steps = (short or {}).get(split, (0, 0))
        shapes = [(2, 5)] * few_stations + [(4, 3)] * few_steps + [
            (int(rng.integers(3, 5)), int(rng.integers(4, 6))) for _ in range(n - few_stations - few_steps)]
        lines = [sample_line(rng, *shapes[i]) for i in rng.permutation(n)]
        (d / f"{split}.txt").write_text("".join(line + "\n" for line in lines))
        ocean = [int(json.loads(line)["description"]["coords"][0][0] < 0) for line in lines]
        (d / f"{split}.ocean.txt").write_text("".join(f"{v}\n" for v in ocean))
    normalisation = {"mean": 280.0, "std": STD, "units": "K", "from": "train"}
    (d / "meta.json").write_text(json.dumps({"splits": sizes, "normalisation": normalisation}))
    return str(d)


@pytest.mark.slow
def test_every_baseline_mlp_beats_the_mean_the_same_seed_again(tmp_path):
    sizes = {"train": 200, "val": 40, "test": 40}
    short = {"train": (5, 4), "val": (0, 1), "test": (1, 0)}  # too few stations, too few steps
    data = write_temperatures(tmp_path / "temperature", sizes, short)

    def results(out):
        r = run("tools/baselines.py", f"--data_dir={data}", f"--out={tmp_path / out}", "--n_stations=3",
                "--n_steps=4", "--all_width=64", "--single_width=64", "--max_iters=200",
                "--eval_interval=50")
        assert "train: 191 samples used, 9 excluded (fewer than 3 stations or 4 steps)" in r.stdout
        assert "| All Stations |" in r.stdout and (tmp_path / f"{out}.md").exists()
        return json.loads((tmp_path / f"{out}.json").read_text())
    result = results("baselines")
    rows = {r["variant"]: r for r in result["results"]}
    assert set(rows) == {"mean", "persistence", *baselines.INPUTS}
    for variant in baselines.INPUTS:
        assert rows[variant]["test_mse"] < 0.3 * rows["mean"]["test_mse"], (variant, rows)
        assert rows[variant]["test_mse_K2"] == pytest.approx(rows[variant]["test_mse"] * STD ** 2)
    # coordinates, start and 3 earlier steps
    inputs = dict(all_stations=3 * 3 + 4 + 3 * 3, single=3 + 3 + 4, temp_only=3, temp_coord=3 + 3, temp_toy=3 + 2)
    assert {variant: rows[variant]["inputs"] for variant in inputs} == inputs
    for split, few in short.items():
        assert result["samples"][split] == {"used": sizes[split] - sum(few), "excluded": sum(few)}
    again = results("again")
    for key in ("test_mse", "val_mse"):
        assert [r.get(key) for r in again["results"]] == [r.get(key) for r in result["results"]]


def test_a_bad_line_is_an_error_naming_file_and_line(tmp_path):
    good = sample_line(np.random.default_rng(0), 3, 4)
    for bad in ('{"description":{"coords":[[0,0,1]]}', good.replace('"data":[[', '"data":[[1,')):
        path = tmp_path / "train.txt"
        path.write_text(good + "\n" + bad + "\n")
        with pytest.raises(SystemExit, match=f"{path}:2"):
            baselines.read_split(str(path), 3, 4)


@pytest.mark.slow
def test_bench_compares_packing_and_whether_the_loader_keeps_up(tmp_path_factory):
    d = prepared(tmp_path_factory, "lookup", "prepare/lookup.py")  # samples of many lengths
    lookup = [*TINY, "--block_size=64", f"--data_dir={d}", "--batch_size=16",
              "--micro_batch_size=8", "--steps=3", "--warmup=1"]
    out = conftest.run("tools/bench.py", *lookup, "--compare=packing").stdout
    for packing in ("False", "True"):
        # the trainer's row and the loader's: samples/s, tokens/s, ms/step and padding
        rows = [r for r in out.splitlines() if "| " in r and f"--packing={packing} |" in r]
        assert len(rows) == 2 and all(numbers_in(row) >= 4 for row in rows), out
    keeps_up = (rf"loader alone: [\d,]+ samples/s on 1 CPU thread, {NUMBER}× the [\d,]+ samples/s "
                "the trainer consumes")
    assert len(re.findall(keeps_up, out)) == 2, out
    ratio = r"real tokens/s with --packing=True over --packing=False: trainer [\d.]+×, loader [\d.]+×"
    assert re.search(ratio, out), out
    out = conftest.run("tools/bench.py", *lookup, "--loader", "--nproc=2").stdout
    assert "system:" not in out  # train.py did not run
    rows = [r for r in out.splitlines() if "loader alone, 1 CPU thread, process 0 of 2" in r]
    assert len(rows) == 1 and numbers_in(rows[0]) >= 4, out


@pytest.mark.parametrize("args,message", [
    (["--compare=speed"], "--compare expects one of packing, got 'speed'"),
    (["--compare=packing", "--packing=True"], "--compare=packing sets --packing itself"),
    (["--loader=yes"], "--loader expects True or False, got 'yes'"),
    (["--steps=5", "--warmup=5"], "--steps (5) must exceed --warmup (5)"),
    (["--nproc=two"], "--nproc expects int, got 'two'"),
])
def test_bench_refuses_bad_flags(args, message):
    with pytest.raises(SystemExit, match=re.escape(message)):
        bench.parse(args)


@pytest.mark.slow
def test_curves_score_every_kept_checkpoint_at_its_step_and_flops(data, tmp_path):
    out_dir, prefix = tmp_path / "run", str(tmp_path / "curves")
    train(data, out_dir, "--k=4", "--max_iters=6", "--eval_interval=6", "--keep_every=3")

    def curves(*args, runs=out_dir, check=True):
        return conftest.run("tools/curves.py", f"--runs={runs}", f"--out={prefix}", *args, check=check)
    curves()
    with open(prefix + ".json") as f:
        (curve,) = json.load(f)["curves"]
    steps, flops = [p["step"] for p in curve["points"]], [p["flops"] for p in curve["points"]]
    assert steps == [3, 6] and flops[1] == 2 * flops[0] > 0
    assert all(p["nmse"] > 0 and p["invalid_rate"] == 0 for p in curve["points"])
    assert os.path.exists(prefix + ".png") and (out_dir / "eval_6.json").exists()
    curves("--max_samples=5")
    kept = json.loads((out_dir / "eval_6.json").read_text())
    assert kept["max_samples"] == 5 and kept["splits"]["test"]["answer"]["n"] == 5
    curves("--split=val")
    assert (out_dir / "eval_6_val.json").exists()
    r = curves(runs=tmp_path, check=False)
    failed(r, "holds no ckpt_<step>.pt")


@pytest.mark.slow
def test_the_gpu_check_dry_run_passes_and_writes_its_table(tmp_path):
    table = tmp_path / "gpu_check.md"
    out = run("tools/gpu_check.py", "--device=cpu", "--tiny=True", f"--record={table}",
              f"--data_dir={tmp_path / 'data'}", "--encodings=xval p10", "--steps=4",
              "--warmup=2").stdout
    for said in ("== GPU check passed", "resuming at step 10", "== 2 processes (gloo)",
                 "2 processes give the losses of one process at steps 1-10"):
        assert said in out
    rows = [line for line in table.read_text().splitlines() if line.startswith(("| xval", "| p10"))]
    # the configs' batches (64 in micro-batches of 16) over two processes, a projected wall time
    assert len(rows) == 2 and all("| 64 = 16 × 2 × 2 |" in row and "h |" in row for row in rows)
    r = run("tools/gpu_check.py", "--device=cpu", "--stages=data bnech", check=False)
    failed(r, "unknown stage 'bnech'")
    r = run("tools/gpu_check.py", "--device=cpu", "--stages=ddp", f"--data_dir={tmp_path}", check=False)
    failed(r, '--stages="data ddp" makes it first')


def test_n_processes_must_log_the_losses_of_one():
    one = {1: 2.0, 2: 1.5, 3: 1.25}
    same = gpu_check.same_losses(one, {1: 2.0, 2: 1.5001, 3: 1.25}, 2, 3, 1e-3)
    assert same == pytest.approx(1e-4 / 1.5)
    with pytest.raises(SystemExit, match=r"4 processes log other losses .* \{2: \(1.5, 1.6\)\}"):
        gpu_check.same_losses(one, {1: 2.0, 2: 1.6, 3: 1.25}, 4, 3, 1e-3)
    with pytest.raises(SystemExit, match=r"no training loss logged at steps \[3\]"):
        gpu_check.same_losses(one, {1: 2.0, 2: 1.5}, 2, 3, 1e-3)


LOG = [{"iter": 0, "val_loss": 3.0, "val_ce": 2.0, "val_mse": 1.0},
       *({"iter": i, "loss": 3.0 / i, "ce": 2.0 / i, "mse": 1.0 / i, "lr": 1e-3} for i in range(1, 11)),
       {"iter": 10, "val_loss": 0.5, "val_ce": 0.3, "val_mse": 0.2}]


@pytest.mark.slow
@pytest.mark.parametrize("log,message", [
    ("".join(json.dumps(r) + "\n" for r in LOG), "(10 logged steps, 2 evaluations)"),
    (None, "cannot read"),
    ('{"iter": 1, "loss": 2}\nnot json\n', "log.jsonl:2: not a row of train.py's log"),
    ('{"iter": 1, "lr": 0.1}\n', "holds no loss yet"),
])
def test_a_log_becomes_a_png_and_a_broken_one_a_one_line_error(tmp_path, log, message):
    if log is not None:
        (tmp_path / "log.jsonl").write_text(log)
    r = run("tools/plot_log.py", str(tmp_path), check=False)
    png = tmp_path / "loss.png"
    if "logged steps" in message:
        assert f"wrote {png} {message}" in r.stdout
        assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 5000
        assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl", "loss.png"]
    else:
        assert r.returncode == 1 and message in one_line_error(r)
        assert not png.exists()


@pytest.mark.parametrize("labels,scores,auc", [
    ([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.75),  # 3 of the 4 (positive, negative) pairs ordered
    ([0, 1, 0, 1], [0.5, 0.5, 0.2, 0.9], 0.875),  # the tied pair counts one half: 3.5 / 4
    ([0, 0, 1, 1, 1], [1, 2, 3, 4, 5], 1.0),
    ([1, 1, 0, 0], [1, 2, 3, 4], 0.0),
    ([1, 0, 1, 0], [7, 7, 7, 7], 0.5),
])
def test_roc_auc_by_hand(labels, scores, auc):
    assert probe.roc_auc(labels, scores) == pytest.approx(auc)
    with pytest.raises(ValueError, match="both classes"):
        probe.roc_auc([1, 1, 1], [0.1, 0.2, 0.3])


def test_logistic_regression_separates_reaches_the_minimum_and_l2_shrinks_it():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    x = x[np.abs(x.sum(1)) > 0.3]  # a margin around the boundary x0 + x1 = 0
    y = (x.sum(1) > 0).astype(int)
    w, b = probe.fit_logistic(x, y, l2=1e-3)
    assert np.all(((x @ w + b) > 0) == y) and probe.roc_auc(y, x @ w + b) == 1.0
    assert np.linalg.norm(probe.fit_logistic(x, y, l2=10.0)[0]) < 0.2 * np.linalg.norm(w)
    x = np.random.default_rng(1).normal(size=(300, 4))
    y = (x[:, 0] - x[:, 1] + np.random.default_rng(2).normal(size=300) > 0).astype(int)  # overlap
    w, b = probe.fit_logistic(x, y, l2=0.1)
    p = 1 / (1 + np.exp(-(x @ w + b)))
    assert np.abs(x.T @ (p - y) / len(y) + 0.1 * w).max() < 1e-8  # zero gradient
    assert abs(np.mean(p - y)) < 1e-8


def test_probe_features_are_the_last_block_output_averaged_over_real_tokens():
    texts = ("{x=[1.5,2,-3]}", "x=0.25", "[1,2,3,4,5,6,7,8]")
    vocab = Vocab(build_text_vocab(texts), "xval")
    model = tiny(vocab_size=len(vocab), num_id=vocab.num_id, n_embd=16)
    samples = [encode(text, vocab)[:2] for text in texts]
    batched = probe.embed_samples(model, samples, "cpu", batch_size=3)  # padded to the longest
    for (ids, values), row in zip(samples, batched):
        ids, values = torch.from_numpy(ids)[None], torch.from_numpy(values)[None]
        x = model.embed(ids, values) + model.wpe(torch.arange(ids.shape[1]))
        for block in model.blocks:
            x = block(x, None, False)
        # no final LayerNorm, no padding
        assert row == pytest.approx(x[0].mean(0).detach().numpy(), abs=1e-5)


@pytest.mark.slow
def test_probe_end_to_end_and_without_labels(tmp_path):
    data = write_temperatures(tmp_path / "temperature", {"train": 60, "val": 10, "test": 20})
    tokenize(data)
    train(data, tmp_path / "run", "--block_size=64", "--max_iters=3", "--eval_interval=3")
    probing = ["tools/probe.py", f"--ckpt={tmp_path / 'run/ckpt_best.pt'}", f"--out={tmp_path / 'p'}", "--n_train=40"]
    r = run(*probing, f"--data_dir={data}", "--l2_grid=[0.01, 1.0]", "--folds=2")
    assert "note: the test split has only 20 samples (n_test = 5000)" in r.stdout
    result = json.loads((tmp_path / "p.json").read_text())
    assert 0.0 <= result["test_auc"] <= 1.0 and result["l2"] in (0.01, 1.0)
    assert (result["n_train"], result["n_test"], result["encoding"]) == (40, 20, "xval")
    assert "| xval | 40 | 20 |" in (tmp_path / "p.md").read_text()
    r = run(*probing, f"--data_dir={data}", "--n_test=10", "--l2_grid=[0.1]")
    assert json.loads((tmp_path / "p.json").read_text())["n_test"] == 10 and "note:" not in r.stdout
    bare = shutil.copytree(data, tmp_path / "bare", ignore=shutil.ignore_patterns("*.ocean.txt"))
    r = run(*probing, f"--data_dir={bare}", check=False)
    failed(r, "train.ocean.txt not found", "--land-sea-mask")


@pytest.mark.slow
def test_the_slurm_script_starts_one_torchrun_agent_per_node_with_the_job_as_launch(tmp_path):
    # 50 runs from elsewhere, as sbatch runs a copy (a race fails some), under stand-ins
    assert subprocess.run(["bash", "-n", "tools/slurm.sh"], cwd=ROOT).returncode == 0
    for name, body in (("srun", 'while [[ $1 == --* ]]; do shift; done; exec "$@"'),
                       ("scontrol", 'printf "gpu07\\ngpu08\\n"'), ("torchrun", 'echo "torchrun $*"')):
        (tmp_path / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (tmp_path / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "SLURM_NNODES": "2",
           "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_JOB_ID": "4242", "SLURM_GPUS_ON_NODE": "4",
           "SLURM_SUBMIT_DIR": ROOT}
    line = ("torchrun --nnodes=2 --nproc_per_node=4 --max-restarts=3 --rdzv_backend=c10d "
            "--rdzv_endpoint=gpu07:29500 --rdzv_id=4242 train.py config/era5_xval.py --resume")
    runs = [subprocess.run(["bash", os.path.join(ROOT, "tools/slurm.sh"), "config/era5_xval.py",
                            "--resume"], cwd=str(tmp_path), env=env, capture_output=True, text=True)
            for _ in range(50)]
    failed = [r for r in runs if r.returncode != 0 or r.stdout.strip() != line]
    assert not failed, f"{len(failed)} of 50 failed; the first: {failed[0].stderr}"
