"""The xVal paper's network (App. B): a GPT-2 style transformer without biases, its loss,
optimizer groups and FLOPs. To copy: `xval_embedding` and `NumberHead`."""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

from mixture import MixtureHead

IGNORE = -100  # the target id of positions that are not predicted (cross-entropy's ignore_index)


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
    # xVal number head: mse (one value, λ·MSE) | gmm (a Gaussian mixture, λ·NLL)
    num_head: str = "mse"
    n_components: int = 8  # gmm: mixture components K

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if self.encoding == "xval" and self.num_id < 0:
            raise ValueError("an xval model needs num_id, the id of the [NUM] token")
        if self.num_head not in ("mse", "gmm"):
            raise ValueError(f"num_head must be one of mse, gmm, got {self.num_head!r}")
        if self.num_head == "gmm" and self.encoding != "xval":
            raise ValueError(f"num_head 'gmm' needs the xval encoding, got {self.encoding!r}")


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head, self.dropout = cfg.n_head, cfg.dropout
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x, mask, causal):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, nh, T, hs)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        # FlexAttention skips the blocks with no allowed pair
        if isinstance(mask, BlockMask):
            y = flex_attention(q, k, v, block_mask=mask)
        else:
            dropout = self.dropout if self.training else 0.0
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=causal and mask is None
            )
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))  # (B, T, C)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg.n_embd
        self.ln_1 = nn.LayerNorm(C, bias=False)
        self.attn = SelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(C, bias=False)
        self.mlp = nn.Sequential(
            nn.Linear(C, 4 * C, bias=False), nn.GELU(), nn.Linear(4 * C, C, bias=False)
        )
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, mask, causal):
        x = x + self.drop(self.attn(self.ln_1(x), mask, causal))
        return x + self.drop(self.mlp(self.ln_2(x)))


# built outside the model's graph
@torch.compiler.disable
def sample_block_mask(doc, causal):
    """FlexAttention's mask: each token attends within its sample."""

    def allowed(b, h, q, k):
        return (doc[b, q] == doc[b, k]) & (q >= k) if causal else doc[b, q] == doc[b, k]

    B, T = doc.shape
    return create_block_mask(allowed, B, None, T, T, device=doc.device, _compile=doc.is_cuda)


def xval_embedding(tok_emb, values, is_num=None, num_embed=None):
    """xVal's number embedding (paper §2), in tok_emb's dtype for values of any dtype. tok_emb
    (B, T, C); values (B, T): a [NUM]'s value, 1.0 elsewhere. k = 0 (num_embed None): x·e_[NUM].
    Multi-scale (eq. 1): where is_num (bool, (B, T)), sum_i tanh(x·10^i)·U_i, i = -k..k, U =
    num_embed, an nn.Parameter (2k+1, C) initialised N(0, 0.02²): values far from 1 told apart."""
    values = values.float().unsqueeze(-1)  # (B, T, 1)
    if num_embed is None:
        return tok_emb * values.to(tok_emb.dtype)
    k = num_embed.shape[0] // 2
    scales = 10.0 ** torch.arange(-k, k + 1, device=values.device)  # (2k+1,)
    # float32: bf16 would keep 2-3 digits of each value
    with torch.autocast(values.device.type, enabled=False):
        multi = torch.tanh(values * scales) @ num_embed.float()  # (B, T, 2k+1) @ (2k+1, C)
    return torch.where(is_num.unsqueeze(-1), multi.to(tok_emb.dtype), tok_emb)


class NumberHead(nn.Sequential):
    """xVal's number head (paper §2, App. B): an MLP with biases, (..., C) -> values (...), float32
    under any autocast. loss: per position, the squared error, or multi-scale (nmse_eps given)
    (num - y)² / (y² + ε); its mean over the positions whose target is [NUM] (causal: whose NEXT
    token is [NUM]) times λ (default 1.0) is added to the cross-entropy."""

    def __init__(self, n_embd):
        super().__init__(nn.Linear(n_embd, n_embd), nn.GELU(), nn.Linear(n_embd, 1))

    def forward(self, h):
        # bf16 would round 1.557 to 1.5547
        with torch.autocast(h.device.type, enabled=False):
            return super().forward(h.to(self[0].weight.dtype)).squeeze(-1)

    @staticmethod
    def loss(num, y, nmse_eps=None):
        err = (num - y.float()) ** 2
        return err if nmse_eps is None else err / (y.float() ** 2 + nmse_eps)


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.xval = cfg.encoding == "xval"
        C = cfg.n_embd
        self.flex_attention = False
        self.wte = nn.Embedding(cfg.vocab_size, C)
        self.wpe = nn.Embedding(cfg.block_size, C)
        # paper eq. 1: the 2k+1 vectors U_i of xval_embedding
        if self.xval and cfg.k > 0:
            self.num_embed = nn.Parameter(torch.empty(2 * cfg.k + 1, C))
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(C, bias=False)
        if self.xval:  # two MLP heads; only the number head has biases (paper App. B)
            self.token_head = nn.Sequential(
                nn.Linear(C, C, bias=False), nn.GELU(), nn.Linear(C, cfg.vocab_size, bias=False)
            )
            gmm = cfg.num_head == "gmm"
            self.num_head = MixtureHead(C, cfg.n_components) if gmm else NumberHead(C)
        else:  # one linear token head tied to the input embedding, as in GPT-2
            self.token_head = nn.Linear(C, cfg.vocab_size, bias=False)
            self.token_head.weight = self.wte.weight
        # paper App. B: weights ~ N(0, (2·fan_in·n_layer)^-1), embeddings N(0, 0.02²)
        for module in self.modules():
            if isinstance(module, nn.Linear) and module.weight is not self.wte.weight:
                std = (2 * module.in_features * cfg.n_layer) ** -0.5
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        for p in self.wte.weight, self.wpe.weight, getattr(self, "num_embed", None):
            if p is not None:
                nn.init.normal_(p, mean=0.0, std=0.02)

    def num_params(self, trunk_only=False):
        modules = [self.blocks, self.ln_f] if trunk_only else [self]
        return sum(p.numel() for m in modules for p in m.parameters())

    def embed(self, ids, values):
        x = self.wte(ids)  # (B, T, C)
        if not self.xval:
            return x
        return xval_embedding(x, values, ids == self.cfg.num_id, getattr(self, "num_embed", None))

    def trunk(self, ids, values=None, pos=None, doc=None):
        """Hidden states (B, T, C). pos: positions in each sample; doc: each token's sample."""
        B, T = ids.shape
        if pos is None:
            pos = torch.arange(T, device=ids.device).expand(B, T)
        # checked on the device: no host sync, no graph break
        too_long = f"a sample is longer than block_size {self.cfg.block_size}"
        torch._assert_async(pos.max() < self.cfg.block_size, too_long)
        values = torch.ones(ids.shape, device=ids.device) if values is None else values
        x = self.drop(self.embed(ids, values) + self.wpe(pos))
        mask = None
        if doc is not None and self.flex_attention:
            mask = sample_block_mask(doc, self.cfg.causal)
        elif doc is not None:
            # (B, 1, T, T): the same sample (causal: and not later)
            mask = (doc.unsqueeze(2) == doc.unsqueeze(1)).unsqueeze(1)
            if self.cfg.causal:
                mask = mask & torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
        for block in self.blocks:
            x = block(x, mask, self.cfg.causal)
        return self.ln_f(x)

    def heads(self, h):
        """Token logits and, for xVal, the number head's output."""
        logits = self.token_head(h)
        if not self.xval:
            return logits, None
        # the number path stays float32
        with torch.autocast(h.device.type, enabled=False):
            return logits, self.num_head(h.float())

    def forward(
        self, ids, values=None, targets=None, target_values=None, pos=None, doc=None, pred=None
    ):
        """Without targets: (logits, num or None). With targets: sums and counts for loss_from,
        the heads run at pred (flat indices) only."""
        h = self.trunk(ids, values, pos, doc)
        if targets is None:
            return self.heads(h)
        if pred is None:
            pred = (targets.flatten() != IGNORE).nonzero().squeeze(1)
        logits, num = self.heads(h.flatten(0, 1)[pred])  # (N, V), (N,)
        t = targets.flatten()[pred]  # (N,)
        ce_sum = F.cross_entropy(logits.float(), t, reduction="sum")
        sums = {"ce_sum": ce_sum, "n_tokens": torch.ones_like(t).sum()}
        if not self.xval:
            zero = ce_sum.new_zeros(())
            return {**sums, "num_sum": zero, "n_numbers": zero.long()}
        is_num = t == self.cfg.num_id
        y = target_values.flatten()[pred].float()
        err = self.num_head.loss(num, y, self.cfg.nmse_eps if self.cfg.k > 0 else None)
        return {**sums, "num_sum": torch.where(is_num, err, 0.0).sum(), "n_numbers": is_num.sum()}


def loss_from(sums, num_loss_weight, n_tokens=None, n_numbers=None):
    """CE + λ·(N)MSE, means over n_tokens and n_numbers (default: this batch's)."""

    def mean(total, n):
        return total / (n.clamp(min=1) if torch.is_tensor(n) else max(int(n), 1))

    ce = mean(sums["ce_sum"], sums["n_tokens"] if n_tokens is None else n_tokens)
    num = mean(sums["num_sum"], sums["n_numbers"] if n_numbers is None else n_numbers)
    return ce + num_loss_weight * num, ce, num


def configure_optimizer(model, weight_decay, learning_rate, betas, device_type):
    """AdamW, weight decay on matrices and embeddings only."""
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, fused=device_type == "cuda")


def flops_per_token(model, attended_tokens, predicted_fraction):
    """Training FLOPs per token: 6 per weight (heads at the predicted fraction), and attention."""
    heads = [model.token_head, model.num_head] if model.xval else [model.token_head]
    head = sum(p.numel() for h in heads for p in h.parameters())
    return (
        6 * model.num_params(trunk_only=True)
        + 6 * head * predicted_fraction
        + 12 * model.cfg.n_layer * model.cfg.n_embd * attended_tokens
    )
