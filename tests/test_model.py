"""Properties of the network: padding, causality, continuity, initialisation, tying, the loss."""
import math

import numpy as np
import pytest
import torch
from helpers import NUM, V, sample, tiny

from batching import collate, mlm_mask
from model import GPT, IGNORE, GPTConfig, flops_per_token, loss_from
from dataset import MASK_ID


@pytest.mark.parametrize("encoding,causal", [("xval", False), ("xval", True), ("p10", False)])
def test_padding_does_not_change_the_outputs_at_real_positions(encoding, causal):
    model = tiny(encoding, causal=causal)
    a, b = sample(9, 1), sample(5, 2)
    batch = collate([(i.numpy(), v.numpy(), i.numpy(), v.numpy()) for i, v in (a, b)])
    logits, num = model(batch["ids"], batch["values"], pos=batch["pos"], doc=batch["doc"])
    alone_logits, alone_num = model(b[0][None], b[1][None])
    torch.testing.assert_close(logits[1, :5], alone_logits[0], atol=1e-5, rtol=1e-5)
    if encoding == "xval":
        torch.testing.assert_close(num[1, :5], alone_num[0], atol=1e-5, rtol=1e-5)


def test_causal_mode_does_not_look_ahead():
    model = tiny(causal=True)
    ids, values = sample(12)
    logits, num = model(ids[None], values[None])
    ids2, values2 = ids.clone(), values.clone()
    ids2[8:] = 5
    values2[8:] = 1.0
    logits2, num2 = model(ids2[None], values2[None])
    torch.testing.assert_close(logits[0, :8], logits2[0, :8])
    torch.testing.assert_close(num[0, :8], num2[0, :8])
    assert not torch.allclose(logits[0, 8:], logits2[0, 8:])


def test_bidirectional_mode_does_look_ahead():
    model = tiny(causal=False)
    ids, values = sample(12)
    values2 = values.clone()
    values2[9] += 1.0  # position 9 is a number
    assert not torch.allclose(model(ids[None], values[None])[1][0, :8], model(ids[None], values2[None])[1][0, :8])


@pytest.mark.parametrize("k", [0, 2])
def test_xval_output_is_continuous_in_an_input_value(k):
    model = tiny(k=k)
    ids, values = sample(12)
    outs = []
    for x in (0.5, 0.5 + 1e-4, 0.5 + 2e-4):
        v = values.clone()
        v[3] = x
        outs.append(model(ids[None], v[None])[1][0, 6].item())
    d1, d2 = outs[1] - outs[0], outs[2] - outs[1]
    assert abs(d1) < 1e-3 and abs(d1 - d2) < 1e-5 + 0.1 * abs(d1)  # small and locally linear steps


def test_number_embedding_is_the_value_times_the_num_embedding():
    model = tiny()
    ids = torch.tensor([[NUM, 5]])
    emb = model.embed(ids, torch.tensor([[-2.5, 1.0]]))
    torch.testing.assert_close(emb[0, 0], -2.5 * model.wte.weight[NUM])
    torch.testing.assert_close(emb[0, 1], model.wte.weight[5])


def test_multiscale_embedding_follows_paper_equation_1():
    model = tiny(k=1)
    x = 0.37
    emb = model.embed(torch.tensor([[NUM]]), torch.tensor([[x]]))[0, 0]
    expected = sum(math.tanh(x * 10.0**i) * model.num_embed[i + 1] for i in (-1, 0, 1))
    torch.testing.assert_close(emb, expected)


def test_trunk_init_std_is_inverse_sqrt_of_two_fan_in_layers():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=V, num_id=NUM, n_layer=4, n_head=4, n_embd=256, block_size=8))
    fc, proj = model.blocks[0].mlp[0].weight, model.blocks[0].mlp[2].weight
    assert fc.std().item() == pytest.approx((2 * 256 * 4) ** -0.5, rel=0.02)
    assert proj.std().item() == pytest.approx((2 * 1024 * 4) ** -0.5, rel=0.02)
    assert model.blocks[1].attn.qkv.weight.std().item() == pytest.approx((2 * 256 * 4) ** -0.5, rel=0.02)
    assert all(m.bias is None for b in model.blocks for m in b.modules() if isinstance(m, torch.nn.Linear))
    assert all(m.bias is None for b in model.blocks for m in b.modules() if isinstance(m, torch.nn.LayerNorm))


def test_text_encodings_tie_the_token_head_to_the_embedding():
    model = tiny("fp15")
    assert model.token_head.weight is model.wte.weight
    assert model.num_params() == sum(p.numel() for p in model.parameters())  # counted once


def test_xval_has_mlp_heads_and_only_the_number_head_has_biases():
    model = tiny("xval")
    assert [m.bias is None for m in model.token_head if isinstance(m, torch.nn.Linear)] == [True, True]
    assert [m.bias is None for m in model.num_head if isinstance(m, torch.nn.Linear)] == [False, False]


def test_loss_is_ce_plus_weighted_mse_over_masked_numbers():
    model = tiny()
    ids, values = sample(12)
    targets = torch.full((1, 12), IGNORE)
    targets[0, [0, 3, 4]] = ids[[0, 3, 4]]  # two numbers and one text token
    inputs = ids.clone()
    inputs[[0, 3, 4]] = MASK_ID
    sums = model(inputs[None], torch.ones(1, 12), targets, values[None])
    logits, num = model(inputs[None], torch.ones(1, 12))
    ce = torch.nn.functional.cross_entropy(logits[0, [0, 3, 4]], ids[[0, 3, 4]])
    mse = ((num[0, [0, 3]] - values[[0, 3]]) ** 2).mean()
    loss, ce_, mse_ = loss_from(sums, 2.0)
    torch.testing.assert_close(ce_, ce, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mse_, mse, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(loss, ce + 2.0 * mse, atol=1e-5, rtol=1e-5)


def test_nmse_for_multiscale_divides_by_the_squared_target():
    model = tiny(k=1, nmse_eps=1e-3)
    ids, values = sample(6)
    targets = torch.full((1, 6), IGNORE)
    targets[0, 3] = NUM
    sums = model(ids[None], values[None], targets, values[None])
    _, num = model(ids[None], values[None])
    expected = (num[0, 3] - values[3]) ** 2 / (values[3] ** 2 + 1e-3)
    torch.testing.assert_close(sums["num_sum"], expected, atol=1e-6, rtol=1e-5)


def test_a_batch_without_masked_numbers_gives_a_finite_loss():
    model = tiny()
    ids, values = sample(12)
    targets = torch.full((1, 12), IGNORE)
    targets[0, 4] = ids[4]  # a text token only
    loss, _, mse = loss_from(model(ids[None], values[None], targets, values[None]), 1.0)
    assert torch.isfinite(loss) and mse.item() == 0.0
    loss, _, _ = loss_from(model(ids[None], values[None], torch.full((1, 12), IGNORE), values[None]), 1.0)
    assert torch.isfinite(loss) and loss.item() == 0.0


def test_mlm_masking_masks_tokens_and_resets_number_values_to_one():
    ids = 4 + np.arange(2000) % (V - 4)  # text and number tokens, never a special
    values = np.where(ids == NUM, 7.0, 1.0).astype(np.float32)
    inputs, input_values, targets, target_values = mlm_mask(ids, values, 0.2, np.random.default_rng(0))
    masked = inputs == MASK_ID
    assert 0.17 < masked.mean() < 0.23
    assert np.all(targets[masked] == ids[masked]) and np.all(targets[~masked] == IGNORE)
    assert np.all(input_values[masked] == 1.0) and np.all(input_values[~masked] == values[~masked])
    assert np.array_equal(target_values, values)


def test_flops_estimate_matches_6n_plus_attention_for_the_paper_model():
    model = GPT(GPTConfig(vocab_size=40, num_id=3, n_layer=6, n_head=6, n_embd=768, block_size=1800))
    trunk = 6 * 12 * 768 * 768 + 6 * 2 * 768 + 768  # blocks: 12 d² weights + 2 norms each; final norm
    assert model.num_params(trunk_only=True) == trunk
    f = flops_per_token(model, 1250, 0.2)
    assert f == pytest.approx(6 * trunk + 6 * 0.2 * (2 * 768 * 768 + 768 * 41 + 768 + 1) + 12 * 6 * 768 * 1250)


def packed_and_padded(examples, causal=False, encoding="xval"):
    from batching import pack
    model = tiny(encoding, causal=causal)
    padded, packed = collate(examples), pack(examples)
    assert packed["ids"].shape[0] < len(examples)  # several samples share a row
    return model, padded, packed


def masked_examples(seed):
    """Six MLM-masked samples of different lengths."""
    rng = np.random.default_rng(seed)
    return [mlm_mask(*(t.numpy() for t in sample(n, seed=n)), 0.4, rng) for n in (9, 5, 3, 4, 12, 2)]


def test_packed_rows_give_each_sample_the_outputs_and_loss_it_has_alone():
    examples = masked_examples(seed=0)
    for causal in (False, True):
        model, padded, packed = packed_and_padded(examples, causal)
        for batch in (padded, packed):
            batch["sums"] = model(batch["ids"], batch["values"], batch["targets"], batch["target_values"],
                                  batch["pos"], batch["doc"])
        for key in ("ce_sum", "num_sum", "n_tokens", "n_numbers"):
            torch.testing.assert_close(packed["sums"][key], padded["sums"][key], atol=1e-4, rtol=1e-5)
        # each sample's outputs, found by its ids in its packed row
        logits, num = model(packed["ids"], packed["values"], pos=packed["pos"], doc=packed["doc"])
        for (ids, values, _, _) in examples:
            alone_logits, alone_num = model(torch.from_numpy(ids)[None], torch.from_numpy(values)[None])
            n = len(ids)
            where = [(b, s) for b in range(packed["ids"].shape[0]) for s in range(packed["ids"].shape[1] - n + 1)
                     if torch.equal(packed["ids"][b, s:s + n], torch.from_numpy(ids)) and packed["pos"][b, s] == 0]
            b, s = where[0]
            torch.testing.assert_close(logits[b, s:s + n], alone_logits[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(num[b, s:s + n], alone_num[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_rows_longer_than_block_size_give_the_losses_of_padded_rows(causal):
    from batching import pack
    examples = masked_examples(seed=2)  # 35 tokens in all, block_size 32
    model = tiny(causal=causal)
    padded, packed = collate(examples), pack(examples, row_length=48)
    assert packed["ids"].shape == (1, 35)  # one row, longer than block_size
    sums = [model(b["ids"], b["values"], b["targets"], b["target_values"], b["pos"], b["doc"], b["pred"]) for b in (padded, packed)]
    for key in ("ce_sum", "num_sum", "n_tokens", "n_numbers"):
        torch.testing.assert_close(sums[1][key], sums[0][key], atol=1e-4, rtol=1e-5)


def test_no_attention_crosses_a_sample_boundary_in_a_packed_row():
    from batching import pack
    model = tiny()
    a, b = sample(6, 1), sample(5, 2)
    batch = pack([(a[0].numpy(), a[1].numpy(), a[0].numpy(), a[1].numpy()),
                  (b[0].numpy(), b[1].numpy(), b[0].numpy(), b[1].numpy())], row_length=11)
    assert batch["ids"].shape == (1, 11) and batch["pos"][0].tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4]
    _, num = model(batch["ids"], batch["values"], pos=batch["pos"], doc=batch["doc"])
    values = batch["values"].clone()
    values[0, 6:] = values[0, 6:] * 3.0  # change every number of the second sample
    _, num2 = model(batch["ids"], values, pos=batch["pos"], doc=batch["doc"])
    torch.testing.assert_close(num[0, :6], num2[0, :6])  # the first sample does not see it
    assert not torch.allclose(num[0, 6:], num2[0, 6:])


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*flex_attention called without torch.compile")
@torch.no_grad()  # FlexAttention has no backward on CPU: gradients are checked on a GPU only
def test_flex_attention_path_equals_the_dense_mask_path():
    # the CUDA path (FlexAttention's block-sparse kernel) run here unfused: the same losses and
    # outputs as SDPA with a dense mask, for packed and padded rows, bidirectional and causal
    examples = masked_examples(seed=1)
    for causal in (False, True):
        model, padded, packed = packed_and_padded(examples, causal)
        for batch in (padded, packed):
            args = (batch["ids"], batch["values"], batch["targets"], batch["target_values"], batch["pos"], batch["doc"])
            model.flex_attention = False
            dense, dense_out = model(*args), model(*args[:2], pos=batch["pos"], doc=batch["doc"])
            model.flex_attention = True
            flex, flex_out = model(*args), model(*args[:2], pos=batch["pos"], doc=batch["doc"])
            for key in ("ce_sum", "num_sum"):
                torch.testing.assert_close(flex[key], dense[key], atol=1e-4, rtol=1e-5)
            real = batch["doc"] >= 0  # padding positions attend only to padding: not compared
            for a, b in zip(flex_out, dense_out):
                torch.testing.assert_close(a[real], b[real], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("k", [0, 2])
def test_the_number_path_stays_float32_under_bf16_autocast(k):
    # bf16 would round a prediction of 1.557 to 1.5547 and a multi-scale input value to 2-3 digits
    model = tiny(k=k)
    ids, values = sample(9)
    values = values * 1.2345678
    h = model.trunk(ids[None], values[None])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, num = model.heads(h)
        embedded = model.embed(ids[None], values[None])
    assert num.dtype == torch.float32 and embedded.dtype == torch.float32
    torch.testing.assert_close(num, model.heads(h)[1], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(embedded, model.embed(ids[None], values[None]), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- causal models are evaluated by generation

@pytest.mark.parametrize("encoding", ["xval", "p10"])
def test_a_causal_model_fills_in_by_generating_each_number_from_the_text_before_it(encoding):
    from predict import fill_in
    from dataset import Vocab
    from tokenize_line import encode
    vocab = Vocab(["(", "+", ")="], encoding)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=len(vocab), num_id=vocab.num_id if vocab.num_id is not None else -1,
                          block_size=64, n_layer=1, n_head=2, n_embd=16, encoding=encoding, causal=True)).eval()
    ids, values, _ = encode("(0.5+0.25)=0.75", vocab)
    ask = np.zeros(len(ids), bool)
    ask[-len(encode("0.75", vocab)[0]):] = True  # the answer's tokens
    (predicted,), counts, _ = fill_in(model, vocab, [(ids, values, ask)])
    # by hand: greedy tokens from the prompt, the number head at the last position of the prompt
    prompt = int(np.flatnonzero(ask)[0])
    x, v = torch.tensor(ids[None, :prompt]), torch.tensor(values[None, :prompt])
    with torch.no_grad():
        if encoding == "xval":
            logits, num = model(x, v)
            expected = float(num[0, -1])
            assert counts["not_num"] == int(logits[0, -1].argmax() != vocab.num_id)
        else:
            for _ in ask[prompt:]:
                logits, _ = model(x, v)
                x = torch.cat([x, logits[:, -1:].argmax(-1)], 1)
                v = torch.cat([v, torch.ones(1, 1)], 1)
            expected = vocab.decode_number(x[0, prompt:].numpy())
    assert counts["numbers"] == 1
    assert predicted == [pytest.approx(expected, rel=1e-5, nan_ok=True)]
    assert counts["invalid"] == (encoding != "xval" and math.isnan(expected))
    # the true answer is never seen: changing it changes nothing
    other_ids, other_values, _ = encode("(0.5+0.25)=9.99", vocab)
    assert fill_in(model, vocab, [(other_ids, other_values, ask)])[0] == [predicted] or math.isnan(predicted[0])
