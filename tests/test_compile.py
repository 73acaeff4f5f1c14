"""The compiled path on the CPU: eager mode's losses and gradients, and few recompilations."""
import numpy as np
import pytest
import torch
import torch._dynamo.utils

from helpers import V, Samples, random_examples, tiny

from batching import collate, pack, step_batches
from model import loss_from

def model(encoding="xval", **kw):
    return tiny(encoding, block_size=64, n_layer=1, **kw).train()


def batch(rng, packed, causal, n=4):
    examples = random_examples(rng, rng.integers(5, 40, n), causal, spread=2.0)
    return pack(examples) if packed else collate(examples)


def loss_and_grads(net, b, params):
    sums = net(b["ids"], b["values"], b["targets"], b["target_values"], b["pos"], b["doc"], b["pred"])
    loss = sums["ce_sum"] / sums["n_tokens"] + sums["num_sum"] / sums["n_numbers"].clamp(min=1)
    grads = torch.autograd.grad(loss, params)
    return loss.detach(), grads


def assert_same(eager, compiled, b):
    params = list(eager.parameters())
    (loss, grads), (closs, cgrads) = loss_and_grads(eager, b, params), loss_and_grads(compiled, b, params)
    torch.testing.assert_close(closs, loss, rtol=1e-4, atol=1e-5)
    for g, cg in zip(grads, cgrads):
        torch.testing.assert_close(cg, g, rtol=1e-3, atol=1e-5)


@pytest.mark.slow
def test_compiled_equals_eager_and_recompiles_a_bounded_number_of_times_over_varying_shapes():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    eager = model()
    compiled = torch.compile(eager)
    rng = np.random.default_rng(0)
    for step in range(20):  # padded and packed batches, every one of another shape
        assert_same(eager, compiled, batch(rng, packed=step % 2 == 1, causal=False))
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    # one static graph, one with dynamic lengths, one with a dynamic number of rows (packing):
    # after that every shape reuses the dynamic graph (and there is no graph break)
    assert graphs <= 3, f"{graphs} graphs compiled over 20 batches"


@pytest.mark.slow
@pytest.mark.parametrize("encoding,k,causal,packed", [("xval", 2, True, True), ("p10", 0, False, False)])
def test_compiled_equals_eager(encoding, k, causal, packed):
    torch._dynamo.reset()
    eager = model(encoding, k=k, causal=causal)
    assert_same(eager, torch.compile(eager), batch(np.random.default_rng(1), packed, causal))


@pytest.mark.slow
@torch.no_grad()  # the forward graphs decide the recompilations; compiling no backward keeps this quick
def test_packed_steps_compile_at_most_twice_and_give_the_padded_steps_losses():
    # every packed micro-batch has one shape, so only the number of predicted positions varies:
    # one static graph, then one where that number is dynamic, and no more
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    eager = model()
    compiled = torch.compile(eager)
    rng = np.random.default_rng(2)
    split = Samples((rng.integers(4, V, n), np.where(rng.random(n) < 0.3, rng.standard_normal(n), 1.0).astype(np.float32))
                    for n in rng.integers(20, 64, 200))
    for step in range(6):
        losses = []
        for packing in (False, True):
            batches = step_batches(split, step, seed=0, batch_size=16, micro_batch_size=4, packing=packing, pack_length=128)
            sums = [(compiled if packing else eager)(b["ids"], b["values"], b["targets"], b["target_values"],
                                                     b["pos"], b["doc"], b["pred"]) for b in batches]
            total = {k: sum(s[k] for s in sums) for k in sums[0]}
            losses.append(loss_from(total, 1.0)[0])
            if packing:
                assert {tuple(b["ids"].shape) for b in batches} == {(1, 128)}
        torch.testing.assert_close(losses[1], losses[0], rtol=1e-4, atol=1e-5)
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert graphs <= 2 and not torch._dynamo.utils.counters["graph_break"], f"{graphs} graphs over 6 packed steps"
