"""preflight.py: what train.py refuses or fits before it builds anything large."""
import os

import pytest
from conftest import ROOT
from helpers import losses, one_line_error, train

import preflight
from batching import choose_packing, step_batches
from configurator import configure, defaults
from dataset import Split

PAPER_CONFIGS = sorted(f for f in os.listdir(os.path.join(ROOT, "config"))
                       if f.startswith(("arithmetic_", "era5_", "lookup_", "planets_")) and not f.endswith("_small.py"))


def longest(data):
    return max(int(Split(data, split, "xval").lengths.max()) for split in ("train", "val"))


@pytest.mark.parametrize("flags, said", [
    ("--block_size=4", ["block_size is 4"]),
    ("--packing=True --pack_length=160", ["pack_length 160 > 4 × block_size 32"]),
    ("--block_size=2000000", ["a context of 2,000,000 tokens needs", "GiB", "--window"])])
def test_a_context_shorter_than_a_sample_or_too_long_for_the_machine_is_refused(data, tmp_path, flags, said):
    error = one_line_error(train(data, tmp_path, *flags.split(), check=False))
    assert all(s in error for s in said), error


def test_a_causal_sample_of_block_size_fits(data, tmp_path):
    # AR appends [EOS] and shifts by one
    train(data, tmp_path, f"--block_size={longest(data)}", "--causal=True", "--max_iters=1")


@pytest.mark.parametrize("config", PAPER_CONFIGS)
def test_the_paper_configs_fit_1_to_16_processes(config):
    train_py = os.path.join(ROOT, "train.py")
    cfg = configure(defaults(train_py), train_py, [os.path.join(ROOT, "config", config)])
    for world in (1, 2, 4, 8, 16):
        said = []
        micro = preflight.fit_micro_batch(cfg["batch_size"], cfg["micro_batch_size"], world, said.append)
        accum = cfg["batch_size"] // (micro * world)
        assert micro * world * accum == cfg["batch_size"] and micro <= cfg["micro_batch_size"]
        assert bool(said) == (cfg["micro_batch_size"] * world > cfg["batch_size"]), said


def test_the_largest_micro_batch_that_fits_is_taken_and_said_else_an_error():
    said = []
    assert preflight.fit_micro_batch(64, 16, 8, said.append) == 8
    assert said == ["note: micro_batch_size 16 × 8 processes exceeds batch_size 64: micro-batches of 8 samples"]
    assert preflight.fit_micro_batch(64, 16, 16) == 4
    assert preflight.fit_micro_batch(64, 16, 4, said.append) == 16 and len(said) == 1  # fits: unsaid
    for batch, micro, world in ((64, 16, 3), (64, 16, 128), (64, 24, 1)):  # nothing fits
        with pytest.raises(SystemExit, match=f"batch_size {batch} must be a multiple of micro_batch_size"):
            preflight.fit_micro_batch(batch, micro, world)


def test_attention_memory_is_checked_on_the_rows_used(data, tmp_path, monkeypatch):
    checked = []
    real = preflight.check_attention_memory
    monkeypatch.setattr(preflight, "check_attention_memory", lambda shapes, *a: checked.extend(shapes) or real(shapes, *a))
    train(data, tmp_path, "--block_size=0", "--packing=True", "--batch_size=64", "--micro_batch_size=64", "--max_iters=1")
    split, n = Split(data, "train", "xval"), longest(data)
    length, rows = choose_packing(split, 64, 64, 1, 1337, n, 4 * n)
    first = step_batches(split, 0, 1337, 64, 64, packing=True, pack_length=length, pack_rows=rows)
    assert {tuple(b["ids"].shape) for b in first} == {(rows, length)}
    assert (rows, length) in checked and (64, n) in checked and length > n  # packed, and validation's padded


@pytest.mark.slow
def test_compile_on_the_cpu_gives_the_eager_losses(data, tmp_path):
    train(data, tmp_path / "eager", "--n_layer=1")
    assert "compile=True" in train(data, tmp_path / "compiled", "--n_layer=1", "--compile=True").stdout
    assert losses(tmp_path / "compiled") == pytest.approx(losses(tmp_path / "eager"), rel=1e-4)
