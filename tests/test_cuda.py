"""What only a GPU shows: FlexAttention against SDPA, bf16 against fp32, a resume on CUDA."""
import numpy as np
import pytest
import torch
from helpers import forward, loss_and_grads, random_batch, resumed_losses_match, tiny

from batching import to_device
from model import loss_from

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def model(causal=False, k=0):
    return tiny(block_size=512, n_head=4, n_embd=128, causal=causal, k=k).train().cuda()


def batch(seed, packed, causal):
    rng = np.random.default_rng(seed)
    return to_device(random_batch(rng, rng.integers(20, 300, 6), packed, causal, 512, 0.2), "cuda")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_compiled_flex_attention_equals_sdpa(causal, packed):
    net, b = model(causal), batch(1, packed, causal)
    net.flex_attention = False
    loss, grads = loss_and_grads(net, b)
    net.flex_attention = True
    flex_loss, flex_grads = loss_and_grads(torch.compile(net), b)
    torch.testing.assert_close(flex_loss, loss, rtol=1e-4, atol=1e-5)
    for g, f in zip(grads, flex_grads):
        torch.testing.assert_close(f, g, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("k", [0, 2])
def test_bf16_loss_is_near_fp32_and_the_number_path_stays_fp32(k):
    net, b = model(k=k), batch(2, False, False)
    fp32 = loss_from(forward(net, b), 1.0)[0]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        bf16 = loss_from(forward(net, b), 1.0)[0]
        logits, num = net.heads(net.trunk(b["ids"], b["values"], b["pos"], b["doc"]))
    assert logits.dtype == torch.bfloat16 and num.dtype == torch.float32
    assert abs(bf16.item() - fp32.item()) < 0.02 * fp32.item()


def test_resume_on_cuda_gives_the_same_next_losses(data, tmp_path):
    resumed_losses_match(data, tmp_path, device="cuda", rel=1e-4, abs=1e-6)
