"""Which samples each step sees, and how they are laid out in rows."""
import numpy as np
import pytest
import torch

from batching import pack, step_batches, step_samples


def samples_in(batch):
    """(sample index, tokens) of every sample in a batch whose values are each its sample's index."""
    doc = batch["doc"] if batch["doc"] is not None else torch.zeros_like(batch["ids"])
    return [(int(batch["target_values"][b][doc[b] == d][0]), int((doc[b] == d).sum()))
            for b in range(doc.shape[0]) for d in doc[b].unique().tolist() if d >= 0]


@pytest.mark.parametrize("packing,pack_length", [(False, 0), (True, 0), (True, 24)])
def test_over_an_epoch_the_ranks_load_every_sample_exactly_once(packing, pack_length):
    lengths = [3 + i % 7 for i in range(48)]
    split = [(np.full(n, 9), np.full(n, float(i), np.float32)) for i, n in enumerate(lengths)]
    seen = []
    for step in range(48 // 8):  # one epoch of steps of 8 samples, 4 per rank in micro-batches of 2
        for rank in range(2):
            for batch in step_batches(split, step, seed=3, batch_size=8, micro_batch_size=2, rank=rank,
                                      world_size=2, packing=packing, pack_length=pack_length):
                seen += samples_in(batch)
    assert sorted(seen) == list(enumerate(lengths))  # each sample once, and whole


def test_the_samples_of_a_step_depend_only_on_seed_and_step():
    a = step_samples(100, 16, 7, seed=1)[1]
    assert np.array_equal(a, step_samples(100, 16, 7, seed=1)[1])
    assert not np.array_equal(a, step_samples(100, 16, 7, seed=2)[1])
    assert not np.array_equal(a, step_samples(100, 16, 8, seed=1)[1])


def test_packing_fills_rows_no_longer_than_the_longest_sample():
    examples = [(np.arange(n), np.ones(n, np.float32), np.arange(n), np.ones(n, np.float32))
                for n in (10, 7, 3, 6, 4, 2, 8)]
    batch = pack(examples)
    assert batch["ids"].shape[1] == 10 and batch["n_real"] == 40
    assert batch["ids"].shape[0] == 4  # 40 tokens in rows of 10: 10 | 8+2 | 7+3 | 6+4
    assert ((batch["doc"] >= 0).sum(1) == 10).all()  # no padding left


def test_a_cached_epoch_order_is_the_one_drawn_afresh_and_cannot_be_changed():
    from batching import epoch_order
    order = epoch_order(1000, 5, 2)
    assert np.array_equal(order, np.random.default_rng([5, 2]).permutation(1000))
    assert epoch_order(1000, 5, 2) is order  # drawn once, not every step
    with pytest.raises(ValueError):
        order[0] = 1
