"""The compiled path on the CPU: eager mode's losses and gradients, few recompilations."""
import numpy as np
import pytest
import torch
import torch._dynamo.utils
from helpers import V, Samples, forward, loss_and_grads, random_batch, tiny

from batching import step_batches
from model import loss_from

pytestmark = pytest.mark.slow


def model(encoding="xval", **kw):
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    return tiny(encoding, block_size=64, n_layer=1, **kw).train()


def batch(rng, packed, causal):
    return random_batch(rng, rng.integers(5, 40, 4), packed, causal, spread=2.0)


def assert_same(eager, compiled, b):
    (loss, grads), (closs, cgrads) = loss_and_grads(eager, b), loss_and_grads(compiled, b)
    torch.testing.assert_close(closs, loss, rtol=1e-4, atol=1e-5)
    for g, cg in zip(grads, cgrads):
        torch.testing.assert_close(cg, g, rtol=1e-3, atol=1e-5)


def test_compiled_equals_eager_and_recompiles_little_over_shapes():
    eager = model()
    compiled = torch.compile(eager)
    rng = np.random.default_rng(0)
    for step in range(20):  # padded and packed batches of other shapes
        assert_same(eager, compiled, batch(rng, packed=step % 2 == 1, causal=False))
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    # static, dynamic lengths, dynamic rows (packing)
    assert graphs <= 3, f"{graphs} graphs compiled over 20 batches"
    for encoding, k, causal, packed in (("xval", 2, True, True), ("p10", 0, False, False)):
        eager = model(encoding, k=k, causal=causal)
        assert_same(eager, torch.compile(eager), batch(np.random.default_rng(1), packed, causal))


@torch.no_grad()  # the forward graphs decide the recompilations
def test_packed_steps_compile_at_most_twice_and_give_the_padded_losses():
    # one static graph, then one of a dynamic number of predicted positions
    eager = model()
    compiled = torch.compile(eager)
    rng = np.random.default_rng(2)
    split = Samples((rng.integers(4, V, n), np.where(rng.random(n) < 0.3, rng.standard_normal(n), 1.0).astype(np.float32))
                    for n in rng.integers(20, 64, 200))
    for step in range(6):
        losses = []
        for packing in (False, True):
            batches = step_batches(split, step, seed=0, batch_size=16, micro_batch_size=4, packing=packing, pack_length=128)
            sums = [forward(compiled if packing else eager, b) for b in batches]
            losses.append(loss_from({k: sum(s[k] for s in sums) for k in sums[0]}, 1.0)[0])
            assert not packing or {tuple(b["ids"].shape) for b in batches} == {(1, 128)}
        torch.testing.assert_close(losses[1], losses[0], rtol=1e-4, atol=1e-5)
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert graphs <= 2 and not torch._dynamo.utils.counters["graph_break"], f"{graphs} graphs over 6 packed steps"
