"""Properties of the network: padding, causality, continuity, initialisation, tying, the loss."""
import math

import numpy as np
import pytest
import torch
from helpers import NUM, V, forward, sample, tiny
from torch.testing import assert_close

from batching import collate, mlm_mask, pack
from dataset import MASK_ID
from model import IGNORE, flops_per_token, loss_from

CLOSE = {"atol": 1e-5, "rtol": 1e-5}


def example(ids, values):
    return ids.numpy(), values.numpy(), ids.numpy(), values.numpy()


def outputs(model, b):
    return model(b["ids"], b["values"], pos=b["pos"], doc=b["doc"])


@pytest.mark.parametrize("causal", [True, False])
def test_attention_stays_in_its_sample_and_only_a_bidirectional_model_looks_ahead(causal):
    model = tiny(causal=causal)
    ids, values = sample(12)
    later, later_values = ids.clone(), values.clone()
    later[8:] = 5 if causal else ids[8:]
    later_values[9] += 1.0  # position 9 is a number
    a, b = model(ids[None], values[None]), model(later[None], torch.where(later == NUM, later_values, 1.0)[None])
    if causal:
        assert_close(a[0][0, :8], b[0][0, :8])
        assert_close(a[1][0, :8], b[1][0, :8])
        assert not torch.allclose(a[0][0, 8:], b[0][0, 8:])
    else:
        assert not torch.allclose(a[1][0, :8], b[1][0, :8])
    # a packed row: the second sample's numbers change nothing of the first
    batch = pack([example(*sample(6, 1)), example(*sample(5, 2))], row_length=11)
    assert batch["ids"].shape == (1, 11) and batch["pos"][0].tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4]
    _, num = outputs(model, batch)
    batch["values"][0, 6:] *= 3.0
    _, num2 = outputs(model, batch)
    assert_close(num[0, :6], num2[0, :6])
    assert not torch.allclose(num[0, 6:], num2[0, 6:])


@pytest.mark.parametrize("k", [0, 2])
def test_xval_output_is_continuous_in_an_input_value(k):
    model = tiny(k=k)
    ids, values = sample(12)
    outs = []
    for x in (0.5, 0.5 + 1e-4, 0.5 + 2e-4):
        values[3] = x
        outs.append(model(ids[None], values[None])[1][0, 6].item())
    d1, d2 = outs[1] - outs[0], outs[2] - outs[1]
    assert abs(d1) < 1e-3 and abs(d1 - d2) < 1e-5 + 0.1 * abs(d1)  # small, locally linear steps


def test_a_number_embeds_as_its_value_times_the_num_embedding_or_by_equation_1():
    model = tiny()
    emb = model.embed(torch.tensor([[NUM, 5]]), torch.tensor([[-2.5, 1.0]]))
    assert_close(emb[0, 0], -2.5 * model.wte.weight[NUM])
    assert_close(emb[0, 1], model.wte.weight[5])
    model = tiny(k=1)
    emb = model.embed(torch.tensor([[NUM]]), torch.tensor([[0.37]]))[0, 0]
    assert_close(emb, sum(math.tanh(0.37 * 10.0**i) * model.num_embed[i + 1] for i in (-1, 0, 1)))


def test_init_heads_tying_and_biases():
    model = tiny(n_layer=4, n_head=4, n_embd=256, block_size=8)
    mlp = model.blocks[0].mlp
    for weight, fan_in in ((mlp[0].weight, 256), (mlp[2].weight, 1024), (model.blocks[1].attn.qkv.weight, 256)):
        assert weight.std().item() == pytest.approx((2 * fan_in * 4) ** -0.5, rel=0.02)
    assert all(m.bias is None for m in model.blocks.modules() if isinstance(m, (torch.nn.Linear, torch.nn.LayerNorm)))
    # text encodings tie the token head; xVal's heads are MLPs, only the number head with biases
    model = tiny("fp15")
    assert model.token_head.weight is model.wte.weight
    assert model.num_params() == sum(p.numel() for p in model.parameters())  # counted once
    model = tiny("xval")
    assert [m.bias is None for m in model.token_head if isinstance(m, torch.nn.Linear)] == [True, True]
    assert [m.bias is None for m in model.num_head if isinstance(m, torch.nn.Linear)] == [False, False]


def test_loss_is_ce_plus_weighted_mse_over_masked_numbers_and_finite_without_them():
    model = tiny()
    ids, values = sample(12)
    targets = torch.full((1, 12), IGNORE)
    loss, _, _ = loss_from(model(ids[None], values[None], targets, values[None]), 1.0)
    assert loss.item() == 0.0
    targets[0, 4] = ids[4]  # a text token only
    loss, _, mse = loss_from(model(ids[None], values[None], targets, values[None]), 1.0)
    assert torch.isfinite(loss) and mse.item() == 0.0
    targets[0, [0, 3]] = NUM  # and two numbers
    inputs = torch.where(targets == IGNORE, ids, MASK_ID)
    loss, ce_, mse_ = loss_from(model(inputs, torch.ones(1, 12), targets, values[None]), 2.0)
    logits, num = model(inputs, torch.ones(1, 12))
    ce = torch.nn.functional.cross_entropy(logits[0, [0, 3, 4]], ids[[0, 3, 4]])
    mse = ((num[0, [0, 3]] - values[[0, 3]]) ** 2).mean()
    assert_close(ce_, ce, **CLOSE)
    assert_close(mse_, mse, **CLOSE)
    assert_close(loss, ce + 2.0 * mse, **CLOSE)
    # multi-scale: NMSE divides by the squared target
    model = tiny(k=1, nmse_eps=1e-3)
    targets = torch.full((1, 12), IGNORE)
    targets[0, 3] = NUM
    sums = model(ids[None], values[None], targets, values[None])
    num = model(ids[None], values[None])[1][0, 3]
    assert_close(sums["num_sum"], (num - values[3]) ** 2 / (values[3] ** 2 + 1e-3), atol=1e-6, rtol=1e-5)


def test_mlm_masking_masks_tokens_and_resets_number_values_to_one():
    ids = 4 + np.arange(2000) % (V - 4)  # never a special
    values = np.where(ids == NUM, 7.0, 1.0).astype(np.float32)
    inputs, input_values, targets, target_values = mlm_mask(ids, values, 0.2, np.random.default_rng(0))
    masked = inputs == MASK_ID
    assert 0.17 < masked.mean() < 0.23
    assert np.all(targets[masked] == ids[masked]) and np.all(targets[~masked] == IGNORE)
    assert np.all(input_values[masked] == 1.0) and np.all(input_values[~masked] == values[~masked])
    assert np.array_equal(target_values, values)


def test_flops_estimate_matches_6n_plus_attention_for_the_paper_model():
    model = tiny(vocab_size=40, n_layer=6, n_head=6, n_embd=768, block_size=1800)
    trunk = 6 * 12 * 768 * 768 + 6 * 2 * 768 + 768  # blocks: 12 d² weights + 2 norms each; final norm
    assert model.num_params(trunk_only=True) == trunk
    f = flops_per_token(model, 1250, 0.2)
    assert f == pytest.approx(6 * trunk + 6 * 0.2 * (2 * 768 * 768 + 768 * 41 + 768 + 1) + 12 * 6 * 768 * 1250)


def masked_examples(seed):
    rng = np.random.default_rng(seed)
    return [mlm_mask(*(t.numpy() for t in sample(n, seed=n)), 0.4, rng) for n in (9, 5, 3, 4, 12, 2)]


def packed_with_the_sums_of_padded(model, examples, row_length=None, pred=False):
    padded, packed = collate(examples), pack(examples, row_length)
    sums = [model(*(b[k] for k in ("ids", "values", "targets", "target_values", "pos", "doc")),
                  b["pred"] if pred else None) for b in (padded, packed)]
    for key in ("ce_sum", "num_sum", "n_tokens", "n_numbers"):
        assert_close(sums[1][key], sums[0][key], atol=1e-4, rtol=1e-5)
    return packed


@pytest.mark.parametrize("encoding,causal", [("xval", False), ("xval", True), ("p10", False)])
def test_padded_and_packed_rows_give_each_sample_the_outputs_and_loss_it_has_alone(encoding, causal):
    model = tiny(encoding, causal=causal)
    examples = masked_examples(seed=0)
    packed = packed_with_the_sums_of_padded(model, examples)
    assert packed["ids"].shape[0] < len(examples)
    for batch in (collate(examples), packed):
        logits, num = outputs(model, batch)
        rows = batch["ids"].shape
        for ids, values, _, _ in examples:  # found by its ids in its row
            alone_logits, alone_num = model(torch.from_numpy(ids)[None], torch.from_numpy(values)[None])
            n = len(ids)
            b, s = next((b, s) for b in range(rows[0]) for s in range(rows[1] - n + 1) if batch["pos"][b, s] == 0
                        and torch.equal(batch["ids"][b, s:s + n], torch.from_numpy(ids)))
            assert_close(logits[b, s:s + n], alone_logits[0], **CLOSE)
            if encoding == "xval":
                assert_close(num[b, s:s + n], alone_num[0], **CLOSE)
    # 35 tokens, block_size 32: one row longer than block_size
    packed = packed_with_the_sums_of_padded(model, masked_examples(seed=2), row_length=48, pred=True)
    assert packed["ids"].shape == (1, 35)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*flex_attention called without torch.compile")
@pytest.mark.parametrize("causal", [False, True])
@torch.no_grad()  # FlexAttention has no backward on CPU: a GPU checks gradients
def test_flex_attention_path_equals_the_dense_mask_path(causal):
    examples = masked_examples(seed=1)
    model = tiny(causal=causal)
    for batch in (collate(examples), pack(examples)):
        runs = []
        for flex in (False, True):
            model.flex_attention = flex
            runs.append((forward(model, batch), outputs(model, batch)))
        (dense, dense_out), (flex, flex_out) = runs
        for key in ("ce_sum", "num_sum"):
            assert_close(flex[key], dense[key], atol=1e-4, rtol=1e-5)
        real = batch["doc"] >= 0  # padding attends only to padding: not compared
        for a, b in zip(flex_out, dense_out):
            assert_close(a[real], b[real], **CLOSE)
