"""The Gaussian-mixture number head (num_head="gmm", the paper's §4 extension) and what reads its
outputs num (..., 3K): K logits, K means and K raw log standard deviations."""

import math

import torch
import torch.nn as nn

# σ floor of every component (values are of order 1): the NLL stays finite
MIN_STD = 1e-3


class MixtureHead(nn.Sequential):
    """num_head="gmm": NumberHead's MLP with 3K outputs (mixture_of), trained by their NLL."""

    def __init__(self, n_embd, n_components):
        super().__init__(nn.Linear(n_embd, n_embd), nn.GELU(), nn.Linear(n_embd, 3 * n_components))

    @staticmethod
    def loss(num, y, nmse_eps=None):
        # multi-scale: NLL of y/s, s = sqrt(y² + ε), as NMSE is the MSE of y/s
        nll = mixture_nll(num, y)
        return nll if nmse_eps is None else nll - 0.5 * torch.log(y**2 + nmse_eps)


def mixture_of(num):
    """Log weights, means and log σ (..., K); log σ = log(exp(raw) + MIN_STD) is smooth."""
    logits, means, raw = (num if num.dtype == torch.float64 else num.float()).chunk(3, dim=-1)
    log_std = torch.logaddexp(raw, raw.new_tensor(math.log(MIN_STD)))
    return torch.log_softmax(logits, -1), means, log_std


def mixture_nll(num, y):
    """−log p(y) under the mixture, (...): a log-sum-exp over the components."""
    log_w, mu, log_std = mixture_of(num)
    z = (y.unsqueeze(-1) - mu) * torch.exp(-log_std)
    return -torch.logsumexp(log_w - log_std - 0.5 * z**2 - 0.5 * math.log(2 * math.pi), -1)


def mixture_mean(num):
    """The mixture's mean Σ w_i μ_i, (...): the point prediction wherever one value is needed."""
    log_w, mu, _ = mixture_of(num)
    return (log_w.exp() * mu).sum(-1)


def mixture_std(num):
    """The mixture's standard deviation, (...): sqrt(Σ w_i (σ_i² + (μ_i − mean)²))."""
    log_w, mu, log_std = mixture_of(num)
    spread = torch.exp(2 * log_std) + (mu - mixture_mean(num).unsqueeze(-1)) ** 2
    return (log_w.exp() * spread).sum(-1).sqrt()


def mixture_sample(num, generator=None):
    """One draw from each mixture, (...): a component by its weight, then its Gaussian."""
    log_w, mu, log_std = mixture_of(num)
    w = log_w.exp().reshape(-1, log_w.shape[-1])
    i = torch.multinomial(w, 1, generator=generator).view(*log_w.shape[:-1], 1)
    noise = torch.randn(i.shape, generator=generator, device=num.device)
    return (mu.gather(-1, i) + log_std.exp().gather(-1, i) * noise).squeeze(-1)


def mixture_cdf(num, y):
    """P(Y ≤ y) under the mixture, (...): also the PIT value of a truth y."""
    log_w, mu, log_std = mixture_of(num)
    return (log_w.exp() * torch.special.ndtr((y.unsqueeze(-1) - mu) * torch.exp(-log_std))).sum(-1)


def mixture_quantile(num, q):
    """The q-quantile of each mixture, (...), by 60 bisections of the CDF (q a float in (0, 1))."""
    _, mu, log_std = mixture_of(num)
    lo, hi = (mu - 10 * log_std.exp()).amin(-1), (mu + 10 * log_std.exp()).amax(-1)
    for _ in range(60):
        mid = (lo + hi) / 2
        below = mixture_cdf(num, mid) < q
        lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
    return (lo + hi) / 2


def mixture_crps(num, y):
    """The CRPS E|X − y| − ½E|X − X'| of GMM outputs num at truth y."""

    def abs_mean(m, var):
        s = var.sqrt()
        phi = torch.exp(-0.5 * (m / s) ** 2) / math.sqrt(2 * math.pi)
        return m * (2 * torch.special.ndtr(m / s) - 1) + 2 * s * phi

    log_w, mu, log_std = mixture_of(num)
    w, var = log_w.exp(), torch.exp(2 * log_std)
    to_truth = (w * abs_mean(y.unsqueeze(-1) - mu, var)).sum(-1)
    # every pair of components i, j: (..., K, K)
    (wi, wj), (mi, mj), (vi, vj) = ((t.unsqueeze(-1), t.unsqueeze(-2)) for t in (w, mu, var))
    return to_truth - 0.5 * (wi * wj * abs_mean(mi - mj, vi + vj)).sum((-2, -1))


def distribution_metrics(y, num):
    """NLL, CRPS and central 50% and 90% coverage of mixtures num (n, 3K) at truths y (n,)."""
    y, num = torch.as_tensor(y, dtype=torch.float64), torch.as_tensor(num, dtype=torch.float64)
    pit = mixture_cdf(num, y)
    return {
        "nll": float(mixture_nll(num, y).mean()),
        "crps": float(mixture_crps(num, y).mean()),
        "cover50": float(((pit >= 0.25) & (pit <= 0.75)).double().mean()),
        "cover90": float(((pit >= 0.05) & (pit <= 0.95)).double().mean()),
    }
