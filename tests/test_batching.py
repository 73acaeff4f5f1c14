"""Which samples each step sees, and how they are laid out in rows."""
import numpy as np
import pytest
import torch
from helpers import Samples, forward, tiny

from batching import _rows, choose_packing, epoch_order, mlm_mask, pack, prefetched, step_batches, step_samples


def samples_in(batch):
    """(sample index, tokens) of each sample in a batch whose values are their sample's index."""
    doc = batch["doc"] if batch["doc"] is not None else torch.zeros_like(batch["ids"])
    return [(int(batch["target_values"][b][doc[b] == d][0]), int((doc[b] == d).sum()))
            for b in range(doc.shape[0]) for d in doc[b].unique().tolist() if d >= 0]


@pytest.mark.parametrize("packing,pack_length", [(False, 0), (True, 0), (True, 24)])
def test_over_an_epoch_the_ranks_load_each_sample_once(packing, pack_length):
    lengths = [3 + i % 7 for i in range(48)]
    split = Samples((np.full(n, 9), np.full(n, float(i), np.float32)) for i, n in enumerate(lengths))
    seen = []
    layout = dict(seed=3, batch_size=8, micro_batch_size=2, packing=packing, pack_length=pack_length)
    for step in range(48 // 8):  # one epoch
        counts = []
        for rank in range(2):
            batches = step_batches(split, step, rank=rank, world_size=2, **layout)
            seen += [s for batch in batches for s in samples_in(batch)]
            counts.append(predicted(batches))
        # the ranks' predicted tokens and numbers add up to the step's
        assert tuple(map(sum, zip(*counts))) == predicted(step_batches(split, step, **layout))
    assert sorted(seen) == list(enumerate(lengths))  # each sample once, and whole


def test_the_samples_of_a_step_depend_only_on_seed_and_step():
    a = step_samples(100, 16, 7, seed=1)[1]
    assert np.array_equal(a, step_samples(100, 16, 7, seed=1)[1])
    assert not np.array_equal(a, step_samples(100, 16, 7, seed=2)[1])
    assert not np.array_equal(a, step_samples(100, 16, 8, seed=1)[1])
    # a cached epoch order is the one drawn afresh, and cannot be changed
    order = epoch_order(1000, 5, 2)
    assert np.array_equal(order, np.random.default_rng([5, 2]).permutation(1000))
    assert epoch_order(1000, 5, 2) is order
    with pytest.raises(ValueError):
        order[0] = 1


def test_packing_fills_rows_of_the_longest_sample():
    examples = [(np.arange(n), np.ones(n, np.float32), np.arange(n), np.ones(n, np.float32))
                for n in (10, 7, 3, 6, 4, 2, 8)]
    batch = pack(examples)
    assert batch["ids"].shape[1] == 10 and batch["n_real"] == 40
    assert batch["ids"].shape[0] == 4  # 40 tokens in rows of 10: 10 | 8+2 | 7+3 | 6+4
    assert ((batch["doc"] >= 0).sum(1) == 10).all()  # no padding left


# samples of 800-1800 tokens, as ERA5's 60-89 stations × 8-15 steps in xVal (block_size 1798)
ERA5_LIKE = Samples((np.full(n, 5), np.ones(n, np.float32)) for n in np.random.default_rng(0).integers(800, 1799, 256))


def era5_step(step, micro_batch_size=16, **layout):
    """A step of 64 ERA5_LIKE samples (seed 1)."""
    return step_batches(ERA5_LIKE, step, 1, 64, micro_batch_size, **layout)


def predicted(batches):
    """The tokens and numbers ([NUM] is 9 here) that micro-batches predict."""
    return sum(len(b["pred"]) for b in batches), sum(int((b["targets"] == 9).sum()) for b in batches)


def padded_fraction(batches):
    return 1 - sum(b["n_real"] for b in batches) / sum(b["ids"].numel() for b in batches)


@pytest.mark.parametrize("world_size", [1, 4])
def test_packed_steps_have_one_shape_and_little_padding(world_size):
    shapes, every = set(), []
    for step in range(8):
        counts = set()
        for rank in range(world_size):
            batches = era5_step(step, 8, rank=rank, world_size=world_size, packing=True, pack_length=4 * 1798)
            shapes |= {tuple(b["ids"].shape) for b in batches}
            counts.add(len(batches))
            every += batches
            # one process: padding rows are spread, so no micro-batch is padding only
            assert world_size > 1 or all(b["n_real"] > 0 for b in batches)
        assert len(counts) == 1  # every process runs as many micro-batches
    assert shapes == {(1, 4 * 1798)}  # the rows 8 samples of mean length (~1300 tokens) fill
    assert padded_fraction(every) < (0.05 if world_size == 1 else 0.10)


def test_the_step_is_sorted_before_it_is_cut_and_shared():
    one = era5_step(3)
    assert padded_fraction(one) < 0.10  # micro-batches of the shortest 16, the next 16, ...
    longest = [int((b["doc"] >= 0).sum(1).max()) if b["doc"] is not None else b["ids"].shape[1] for b in one]
    assert longest == sorted(longest)
    # four processes: each gets every fourth sample by length, so as much work
    four = [era5_step(3, rank=r, world_size=4)[0] for r in range(4)]
    work = [b["n_real"] for b in four]
    assert max(work) < 1.1 * min(work)


def test_a_packed_sample_longer_than_block_size_is_refused_and_padding_adds_nothing():
    model = tiny(block_size=8, n_layer=1, n_embd=16)
    rng = np.random.default_rng(0)
    examples = [mlm_mask(rng.integers(3, 12, n), np.ones(n, np.float32), 0.5, rng) for n in (8, 7, 5, 9)]
    with pytest.raises(RuntimeError, match="a sample is longer than block_size 8"):
        forward(model, pack(examples, row_length=20))
    sums = forward(model, _rows([[]], (1, 20)))  # a micro-batch of padding only
    assert [float(sums[k].detach()) for k in ("ce_sum", "n_tokens", "num_sum", "n_numbers")] == [0.0] * 4


def test_prefetched_builds_each_step_once_and_none_past_the_last():
    built = []

    def make(step):
        built.append(step)
        return step
    assert list(prefetched(make, 3, 6)) == [3, 4, 5] and built == [3, 4, 5]
    assert list(prefetched(make, 6, 6)) == [] and built == [3, 4, 5]


@pytest.mark.slow
def test_packing_chooses_the_shape_that_pads_least():
    # era5_xval's batch: the shape chosen on steps 0-19 pads steps 20-59 less than 4 × block_size
    n, r = choose_packing(ERA5_LIKE, 64, 16, 1, seed=1, shortest=1798, longest=4 * 1798)

    def padding(pack_length, pack_rows):
        layout = dict(packing=True, pack_length=pack_length, pack_rows=pack_rows)
        batches = [b for step in range(20, 60) for b in era5_step(step, **layout)]
        assert {tuple(b["ids"].shape) for b in batches} == {(pack_rows or 3, pack_length)}  # one shape
        return padded_fraction(batches)
    assert n % 64 == 0 and r * n <= 16 * ERA5_LIKE.lengths.mean()  # no more tokens a micro-batch than 16 samples
    assert padding(n, r) < 0.05 and padding(n, r) < padding(4 * 1798, 0) - 0.01, (n, r, padding(n, r), padding(4 * 1798, 0))
