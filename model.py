"""
The whole network of the xVal paper (App. B): a GPT-2 style pre-LayerNorm transformer without
biases, the xVal number embedding (a [NUM] token scaled by its value, or the multi-scale sum of
eq. 1 for k > 0), a token head and, for xVal, a number head; the loss (cross-entropy plus λ·MSE on
masked numbers), the optimizer groups and a FLOPs estimate for MFU.

The number head can instead predict a Gaussian mixture (num_head="gmm", the paper's §4 future
work): K weights, means and standard deviations per number, trained by its negative
log-likelihood. The mixture_* functions below are the one place that reads its outputs.

The model reads ids and values only; it knows nothing of files or text.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

from tokenize_numbers import IGNORE

NUM_HEADS = ("mse", "gmm")


@dataclass
class GPTConfig:
    vocab_size: int
    num_id: int = -1  # id of [NUM] for xVal; -1 for text encodings
    block_size: int = 1024  # longest sample (tokens) the position embedding covers
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 768
    dropout: float = 0.0
    encoding: str = "xval"  # xval | p10 | p1000 | b1999 | fp15
    k: int = 0  # multi-scale xVal: 2k+1 number embeddings at scales 10^-k..10^k (paper eq. 1)
    causal: bool = False  # False: bidirectional (MLM), True: autoregressive
    nmse_eps: float = 1e-3  # ε of the NMSE loss used for k > 0
    num_head: str = "mse"  # xVal number head: mse (one value, λ·MSE) | gmm (a Gaussian mixture, λ·NLL)
    n_components: int = 8  # gmm: mixture components K

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if self.encoding == "xval" and self.num_id < 0:
            raise ValueError("an xval model needs num_id, the id of the [NUM] token")
        if self.k < 0:
            raise ValueError(f"k must be >= 0, got {self.k}")
        if self.num_head not in NUM_HEADS:
            raise ValueError(f"num_head must be one of {', '.join(NUM_HEADS)}, got {self.num_head!r}")
        if self.num_head == "gmm" and self.encoding != "xval":
            raise ValueError(f"num_head 'gmm' needs the xval encoding (a text encoding has no number head), got {self.encoding!r}")
        if self.n_components < 1:
            raise ValueError(f"n_components must be >= 1, got {self.n_components}")


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head, self.dropout = cfg.n_head, cfg.dropout
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x, mask, causal):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        if isinstance(mask, BlockMask):  # FlexAttention: blocks with no allowed pair are skipped
            y = flex_attention(q, k, v, block_mask=mask)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None,
                                               dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=False)
        self.attn = SelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=False)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=False), nn.GELU(),
            nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=False))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, mask, causal):
        x = x + self.drop(self.attn(self.ln_1(x), mask, causal))
        return x + self.drop(self.mlp(self.ln_2(x)))


@torch.compiler.disable  # built eagerly (its own compiled kernel on CUDA), outside the model's graph
def sample_block_mask(doc, causal):
    """
    FlexAttention's block-sparse form of the per-sample mask: a token attends to the tokens of its
    own sample (doc id) and, if causal, only to earlier ones. 128×128 blocks with no allowed pair
    (other packed samples, padding) cost nothing.
    """
    def allowed(b, h, q, k):
        same = doc[b, q] == doc[b, k]
        return same & (q >= k) if causal else same
    B, T = doc.shape
    return create_block_mask(allowed, B, None, T, T, device=doc.device, _compile=doc.is_cuda)


def float32(t):
    """
    Autocast switched off on t's device: the number path (multi-scale embedding, number head and
    its loss) runs in float32 under bf16 training, so predicted and embedded values keep float32
    precision. It is cheap: the heads run only at predicted positions.
    """
    return torch.autocast(t.device.type, enabled=False)


def mlp_head(n_embd, n_out, bias):
    """The xVal heads: an MLP with one hidden layer of width n_embd."""
    return nn.Sequential(nn.Linear(n_embd, n_embd, bias=bias), nn.GELU(), nn.Linear(n_embd, n_out, bias=bias))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.xval = cfg.encoding == "xval"
        # attention over packed or padded rows: False = SDPA with a dense (B, 1, T, T) mask (any
        # device); True = FlexAttention's block-sparse kernel (train.py sets it on CUDA with compile)
        self.flex_attention = False
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        if self.xval and cfg.k > 0:  # paper eq. 1: sum_i tanh(x·10^i)·[NUM_i], i = -k..k
            self.num_embed = nn.Parameter(torch.empty(2 * cfg.k + 1, cfg.n_embd))
            self.register_buffer("num_scales", 10.0 ** torch.arange(-cfg.k, cfg.k + 1), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=False)
        if self.xval:  # two MLP heads; only the number head has biases (paper App. B)
            self.token_head = mlp_head(cfg.n_embd, cfg.vocab_size, bias=False)
            # gmm: K mixture logits, K means and K raw log standard deviations (mixture_of)
            self.num_head = mlp_head(cfg.n_embd, 3 * cfg.n_components if cfg.num_head == "gmm" else 1, bias=True)
        else:  # one linear token head tied to the input embedding, as in GPT-2
            self.token_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
            self.token_head.weight = self.wte.weight
        self._init_weights()

    def _init_weights(self):
        # paper App. B: every weight ~ N(0, σ²), σ = (2·fan_in·n_layer)^-1/2, against the growth
        # of the residual stream; embeddings N(0, 0.02²) as in GPT-2; biases zero
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear) and module.weight is not self.wte.weight:
                std = (2 * module.in_features * self.cfg.n_layer) ** -0.5
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        nn.init.normal_(self.wte.weight, mean=0.0, std=0.02)
        nn.init.normal_(self.wpe.weight, mean=0.0, std=0.02)
        if hasattr(self, "num_embed"):
            nn.init.normal_(self.num_embed, mean=0.0, std=0.02)

    def num_params(self, trunk_only=False):
        """Parameters, counted once (tied weights); trunk_only: the blocks and final norm."""
        params = {id(p): p for p in self.parameters()}
        if trunk_only:
            params = {id(p): p for p in [*self.blocks.parameters(), *self.ln_f.parameters()]}
        return sum(p.numel() for p in params.values())

    # -------------------------------------------------------------------------

    def embed(self, ids, values):
        """Token embedding with the numbers' values applied. ids, values: (B, T)."""
        x = self.wte(ids)  # (B, T, C)
        if not self.xval:
            return x
        values = values.float()
        if self.cfg.k == 0:
            # values are 1.0 except at [NUM] tokens, so this scales exactly the number embeddings
            return x * values.unsqueeze(-1)
        with float32(ids):  # a bf16 matmul here would keep only 2-3 digits of each input value
            multi = torch.tanh(values.unsqueeze(-1) * self.num_scales) @ self.num_embed.float()  # (B, T, 2k+1) @ (2k+1, C)
        return torch.where((ids == self.cfg.num_id).unsqueeze(-1), multi, x)

    def trunk(self, ids, values=None, pos=None, doc=None):
        """
        The hidden states after the final LayerNorm, (B, T, C).
        pos: (B, T) positions (default 0..T-1); doc: (B, T) sample index of each token, so that
        tokens attend only within their own sample (padding gets its own index, -1). With doc=None
        every row is one sample with no padding.
        """
        B, T = ids.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence of {T} tokens is longer than block_size {self.cfg.block_size}")
        if values is None:
            values = torch.ones(ids.shape, device=ids.device)
        if pos is None:
            pos = torch.arange(T, device=ids.device).expand(B, T)
        x = self.drop(self.embed(ids, values) + self.wpe(pos))  # positions added after the number scaling
        mask = None
        if doc is not None and self.flex_attention:
            mask = sample_block_mask(doc, self.cfg.causal)
        elif doc is not None:
            mask = (doc.unsqueeze(2) == doc.unsqueeze(1)).unsqueeze(1)  # (B, 1, T, T): same sample
            if self.cfg.causal:
                mask = mask & torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
        for block in self.blocks:
            x = block(x, mask, self.cfg.causal)
        return self.ln_f(x)

    def heads(self, h):
        """
        Token logits (..., V) and, for xVal, the number prediction of hidden states h: a value (...)
        or, for num_head="gmm", the mixture's raw outputs (..., 3K) that mixture_of() reads.
        """
        logits = self.token_head(h)
        if not self.xval:
            return logits, None
        with float32(h):  # under bf16 autocast the number head would round 1.557 to 1.5547
            num = self.num_head(h.float())
        return logits, num if self.cfg.num_head == "gmm" else num.squeeze(-1)

    def forward(self, ids, values=None, targets=None, target_values=None, pos=None, doc=None, pred=None):
        """
        Without targets: (logits (B, T, V), num (B, T) or None).
        With targets (B, T), IGNORE where nothing is predicted, and target_values (B, T): a dict of
        loss sums and counts (ce_sum, n_tokens, num_sum, n_numbers), so that a caller can take
        means over a whole distributed batch; loss_from() turns them into CE + λ·(N)MSE.
        The heads run only where there is a target (20% of tokens under MLM). pred: (N,) flat
        indices into the B·T positions of those targets; the data loader passes them, so that a
        compiled model has no shape that depends on tensor values (default: found here).
        """
        h = self.trunk(ids, values, pos, doc)
        if targets is None:
            return self.heads(h)
        if pred is None:
            pred = (targets.flatten() != IGNORE).nonzero().squeeze(1)
        logits, num = self.heads(h.flatten(0, 1)[pred])  # (N, V), (N,)
        t = targets.flatten()[pred]  # (N,)
        sums = {"ce_sum": F.cross_entropy(logits.float(), t, reduction="sum"),
                "n_tokens": torch.ones_like(t).sum()}  # N, as a tensor
        if self.xval:
            # MSE at predicted positions whose true token is [NUM]; NMSE for multi-scale (k > 0)
            is_num = t == self.cfg.num_id
            y = target_values.flatten()[pred].float()  # at every predicted position: no graph break
            if self.cfg.num_head == "gmm":
                with float32(y):
                    err = mixture_nll(num, y)
                    if self.cfg.k > 0:
                        # the NLL of y/s, s = sqrt(y²+ε), as the NMSE is the MSE of y/s: it adds
                        # log s, which has no gradient (the NLL is already scale-free where σ
                        # follows the scale) but makes the reported loss comparable across scales
                        err = err + 0.5 * torch.log(y ** 2 + self.cfg.nmse_eps)
            else:
                err = (num - y) ** 2
                if self.cfg.k > 0:
                    err = err / (y ** 2 + self.cfg.nmse_eps)
            sums.update(num_sum=torch.where(is_num, err, 0.0).sum(), n_numbers=is_num.sum())
        else:
            zero = sums["ce_sum"].new_zeros(())
            sums.update(num_sum=zero, n_numbers=zero.long())
        return sums


# ---------------------------------------------------------------------------
# the Gaussian-mixture number head: num (..., 3K) = K logits, K means, K raw log standard deviations

MIN_STD = 1e-3  # σ floor of every component (values are of order 1): the NLL stays finite


def mixture_of(num):
    """
    The mixture that a GMM head's outputs num (..., 3K) describe: log weights, means and log
    standard deviations, each (..., K). log σ = log(exp(raw) + MIN_STD) approaches the raw
    output above the floor and log(MIN_STD) below it, smoothly, so gradients never vanish or blow up.
    """
    logits, means, raw = (num if num.dtype == torch.float64 else num.float()).chunk(3, dim=-1)
    return torch.log_softmax(logits, -1), means, torch.logaddexp(raw, raw.new_tensor(math.log(MIN_STD)))


def mixture_nll(num, y):
    """−log p(y) under the mixture, (...): a log-sum-exp over the components."""
    log_w, mu, log_std = mixture_of(num)
    z = (y.unsqueeze(-1) - mu) * torch.exp(-log_std)
    log_p = log_w - log_std - 0.5 * z ** 2 - 0.5 * math.log(2 * math.pi)
    return -torch.logsumexp(log_p, -1)


def mixture_mean(num):
    """The mixture's mean Σ w_i μ_i, (...): the point prediction wherever one value is needed."""
    log_w, mu, _ = mixture_of(num)
    return (log_w.exp() * mu).sum(-1)


def mixture_std(num):
    """The mixture's standard deviation, (...): sqrt(Σ w_i (σ_i² + μ_i²) − mean²)."""
    log_w, mu, log_std = mixture_of(num)
    w = log_w.exp()
    mean = (w * mu).sum(-1, keepdim=True)
    return (w * (torch.exp(2 * log_std) + (mu - mean) ** 2)).sum(-1).sqrt()


def mixture_mode(num):
    """The mixture's mode, (...), taken as the component mean where the mixture density is highest."""
    mu = mixture_of(num)[1]
    nll = mixture_nll(num.unsqueeze(-2), mu)  # (..., K): the density at each component mean
    return mu.gather(-1, nll.argmin(-1, keepdim=True)).squeeze(-1)


def mixture_sample(num, generator=None):
    """One draw from each mixture, (...): a component by its weight, then its Gaussian."""
    log_w, mu, log_std = mixture_of(num)
    flat = log_w.exp().reshape(-1, log_w.shape[-1])
    i = torch.multinomial(flat, 1, generator=generator).view(*log_w.shape[:-1], 1)
    noise = torch.randn(i.shape, generator=generator, device=num.device)
    return (mu.gather(-1, i) + log_std.exp().gather(-1, i) * noise).squeeze(-1)


def mixture_cdf(num, y):
    """P(Y ≤ y) under the mixture, (...): also the PIT value of a truth y."""
    log_w, mu, log_std = mixture_of(num)
    return (log_w.exp() * torch.special.ndtr((y.unsqueeze(-1) - mu) * torch.exp(-log_std))).sum(-1)


def mixture_quantile(num, q, steps=60):
    """The q-quantile of each mixture, (...), by bisection of the CDF (q a float in (0, 1))."""
    _, mu, log_std = mixture_of(num)
    lo, hi = (mu - 10 * log_std.exp()).amin(-1), (mu + 10 * log_std.exp()).amax(-1)
    for _ in range(steps):  # 60 halvings: far below float precision
        mid = (lo + hi) / 2
        below = mixture_cdf(num, mid) < q
        lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
    return (lo + hi) / 2


def mixture_crps(num, y):
    """
    The continuous ranked probability score E|X − y| − ½E|X − X'| of the mixture at truth y, (...),
    in closed form: Σ_i w_i A(y − μ_i, σ_i²) − ½ Σ_ij w_i w_j A(μ_i − μ_j, σ_i² + σ_j²), where
    A(m, s²) = E|N(m, s²)| = m(2Φ(m/s) − 1) + 2s φ(m/s).
    """
    def abs_mean(m, var):
        s = var.sqrt()
        return m * (2 * torch.special.ndtr(m / s) - 1) + 2 * s * torch.exp(-0.5 * (m / s) ** 2) / math.sqrt(2 * math.pi)
    log_w, mu, log_std = mixture_of(num)
    w, var = log_w.exp(), torch.exp(2 * log_std)
    to_truth = (w * abs_mean(y.unsqueeze(-1) - mu, var)).sum(-1)
    pairs = w.unsqueeze(-1) * w.unsqueeze(-2) * abs_mean(mu.unsqueeze(-1) - mu.unsqueeze(-2), var.unsqueeze(-1) + var.unsqueeze(-2))
    return to_truth - 0.5 * pairs.sum((-2, -1))


def loss_from(sums, num_loss_weight, n_tokens=None, n_numbers=None):
    """
    CE over predicted tokens + λ·(N)MSE over predicted numbers, each a mean over n_tokens and
    n_numbers (default: this batch's counts). A batch with no masked number adds 0, not NaN.
    """
    n_tokens = sums["n_tokens"] if n_tokens is None else n_tokens
    n_numbers = sums["n_numbers"] if n_numbers is None else n_numbers
    ce = sums["ce_sum"] / max(int(n_tokens), 1)
    num = sums["num_sum"] / max(int(n_numbers), 1)
    return ce + num_loss_weight * num, ce, num


def configure_optimizer(model, weight_decay, learning_rate, betas, device_type):
    """AdamW with weight decay on matrices and embeddings (dim >= 2) only; fused on CUDA."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, fused=device_type == "cuda")


def flops_per_token(model, attended_tokens, predicted_fraction):
    """
    Training FLOPs (forward + backward) per token: 6 per trunk weight, 6 per head weight at the
    predicted fraction of positions (the heads run only there), and 12·n_layer·n_embd per
    attended token for the attention scores and their weighted sum.
    """
    cfg = model.cfg
    trunk = model.num_params(trunk_only=True)
    head = sum(p.numel() for p in model.token_head.parameters())
    if model.xval:
        head += sum(p.numel() for p in model.num_head.parameters())
    return 6 * trunk + 6 * head * predicted_fraction + 12 * cfg.n_layer * cfg.n_embd * attended_tokens


# peak dense bf16 FLOP/s by GPU name, for MFU; the first name found in the device's name counts,
# so the PCIe and NVL boards of a chip come before its SXM board
PEAK_FLOPS = {"H100 PCIe": 756e12, "H100 NVL": 835e12, "H100": 989e12, "H200": 989e12, "GH200": 989e12,
              "A100": 312e12, "L40S": 362e12, "A10G": 70e12, "RTX 4090": 165e12, "RTX 3090": 71e12}


def peak_flops(device_name):
    """The bf16 dense peak of a GPU from its name (torch.cuda.get_device_name), else None."""
    return next((value for key, value in PEAK_FLOPS.items() if key in device_name), None)
