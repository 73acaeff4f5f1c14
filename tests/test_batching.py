"""Which samples each step sees, and how they are laid out in rows."""
import numpy as np

from batching import pack, step_samples


def test_every_sample_is_seen_exactly_once_per_epoch_across_ranks():
    n, batch_size, world = 48, 8, 2
    seen = []
    for step in range(n // batch_size):  # one epoch
        positions, indices = step_samples(n, batch_size, step, seed=3)
        per_rank = batch_size // world
        for rank in range(world):
            seen += indices[rank * per_rank:(rank + 1) * per_rank].tolist()
    assert sorted(seen) == list(range(n))


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
