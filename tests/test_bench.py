"""tools/bench.py on a tiny dataset: the numbers it reports are there (not how large they are)."""
import os
import re
import sys

import pytest
from conftest import ROOT, run
from helpers import TINY

sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench  # noqa: E402

NUMBER = r"[\d,]+\.\d"


@pytest.fixture(scope="module")
def lookup(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("data") / "lookup")  # 2-6 entries: samples of different lengths
    run("prepare/lookup.py", "--size=tiny", "--out", d, "--workers=1")
    run("tokenize_numbers.py", d, "--encoding=xval", "--workers=1")
    return [*TINY, "--block_size=64", f"--data_dir={d}", "--batch_size=16", "--micro_batch_size=8"]


@pytest.mark.slow
def test_compare_packing_reports_both_runs_the_ratio_and_whether_the_loader_keeps_up(lookup):
    r = run("tools/bench.py", *lookup, "--steps=3", "--warmup=1", "--compare=packing")
    for packing in ("False", "True"):
        rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and f"--packing={packing} |" in line]
        assert len(rows) == 2, r.stdout  # the trainer's row and the loader's
        # samples/s, tokens/s, ms/step and padding are numbers
        assert all(len(re.findall(rf"\| {NUMBER} ", row)) >= 4 for row in rows), rows
    assert len(re.findall(rf"loader alone: [\d,]+ samples/s on 1 CPU thread, {NUMBER}× the [\d,]+ samples/s "
                          "the trainer consumes", r.stdout)) == 2, r.stdout
    assert re.search(r"real tokens/s with --packing=True over --packing=False: trainer [\d.]+×, loader [\d.]+×",
                     r.stdout), r.stdout


@pytest.mark.slow
def test_the_loader_alone_times_one_process_share_without_training(lookup):
    r = run("tools/bench.py", *lookup, "--steps=3", "--warmup=1", "--loader", "--nproc=2")
    assert "system:" not in r.stdout  # train.py did not run
    rows = [line for line in r.stdout.splitlines() if "loader alone, 1 CPU thread, process 0 of 2" in line]
    assert len(rows) == 1 and len(re.findall(rf"\| {NUMBER} ", rows[0])) >= 4, r.stdout


@pytest.mark.parametrize("args,message", [
    (["--compare=speed"], "--compare expects one of packing, got 'speed'"),
    (["--compare=packing", "--packing=True"], "--compare=packing sets --packing itself"),
    (["--loader=yes"], "--loader expects True or False, got 'yes'"),
    (["--steps=5", "--warmup=5"], "--steps (5) must exceed --warmup (5)"),
    (["--nproc=two"], "--nproc expects int, got 'two'"),
])
def test_bad_flags_are_clear_errors(args, message):
    with pytest.raises(SystemExit, match=re.escape(message)):
        bench.parse(args)
