"""The Gaussian-mixture head against hand and Monte-Carlo figures, and a tiny GMM model end to end."""
import math
import os

import pytest
import torch

import eval as ev
from conftest import run
from helpers import NUM, V, eval_model, evaluated, failed, prepared, resumed_losses_match, sample, tiny, train
from mixture import (MIN_STD, MixtureHead, mixture_cdf, mixture_crps, mixture_mean, mixture_nll, mixture_of,
                     mixture_quantile, mixture_sample, mixture_std)
from model import IGNORE, GPTConfig

TWO = ([0.3, 0.7], [0.0, 2.0], [1.0, 0.5])  # weights, means, standard deviations


def outputs(weights, means, stds):
    """The head outputs (3K,) of a mixture."""
    return torch.cat([scalar(weights).log(), scalar(means), (scalar(stds) - MIN_STD).log()])


def normal_pdf(y, mu, s):
    return math.exp(-0.5 * ((y - mu) / s) ** 2) / (s * math.sqrt(2 * math.pi))


def draws(num, n, seed=0):
    return mixture_sample(num.expand(n, -1), torch.Generator().manual_seed(seed))


def scalar(y):
    return torch.tensor(y, dtype=torch.float64)


def test_nll_and_crps_by_hand_and_with_one_component_the_gaussians():
    log_w, _, log_std = mixture_of(outputs(*TWO))
    torch.testing.assert_close(log_w.exp(), scalar(TWO[0]))
    torch.testing.assert_close(log_std.exp(), scalar(TWO[2]))
    for y in (-1.0, 0.7, 2.2, 6.0):
        hand = -math.log(0.3 * normal_pdf(y, 0.0, 1.0) + 0.7 * normal_pdf(y, 2.0, 0.5))
        assert float(mixture_nll(outputs(*TWO), scalar(y))) == pytest.approx(hand, rel=1e-9)
    y = torch.linspace(-3, 3, 7, dtype=torch.float64)
    gaussian = -torch.distributions.Normal(0.4, 0.8).log_prob(y)
    torch.testing.assert_close(mixture_nll(outputs([1.0], [0.4], [0.8]).expand(7, -1), y), gaussian)
    # CRPS of one component: s[z(2Φ(z) − 1) + 2φ(z) − 1/√π], z = (y − μ)/s
    mu, s, y = 0.3, 0.7, 1.5
    z = (y - mu) / s
    gaussian = s * (z * math.erf(z / math.sqrt(2)) + 2 * normal_pdf(z, 0, 1) - math.pi ** -0.5)
    assert float(mixture_crps(outputs([1.0], [mu], [s]), scalar(y))) == pytest.approx(gaussian, rel=1e-9)


@pytest.mark.parametrize("raw_std,target", [(-60.0, 0.5), (-60.0, 1e4), (0.0, 1e6), (30.0, 0.1)])
def test_gradients_stay_finite_at_the_std_floor_and_far_off(raw_std, target):
    num = torch.tensor([0.0, 1.0, 0.0, 0.5, raw_std, raw_std], requires_grad=True)  # K = 2, float32
    loss = mixture_nll(num, torch.tensor(target))
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(num.grad).all()
    assert mixture_of(num)[2].exp().min() >= MIN_STD * (1 - 1e-6)


def test_mean_std_samples_cdf_crps_and_quantiles_match_the_mixture():
    num = outputs([0.3, 0.5, 0.2], [-1.0, 0.5, 3.0], [0.4, 1.0, 0.2])
    mean = 0.3 * -1 + 0.5 * 0.5 + 0.2 * 3
    std = math.sqrt(0.3 * (0.16 + 1) + 0.5 * (1 + 0.25) + 0.2 * (0.04 + 9) - mean ** 2)
    assert float(mixture_mean(num)) == pytest.approx(mean) and float(mixture_std(num)) == pytest.approx(std)
    x, x2 = draws(num, 400_000), draws(num, 400_000, seed=1)
    assert torch.equal(x, draws(num, 400_000)) and not torch.equal(x, x2)
    assert float(x.mean()) == pytest.approx(mean, abs=0.02) and float(x.std()) == pytest.approx(std, rel=0.01)
    for y in (-1.2, 0.0, 0.8, 2.95, 3.1, 4.0):
        below = float((x <= y).double().mean())
        assert below == pytest.approx(float(mixture_cdf(num, torch.tensor(y))), abs=0.005)
        mc = float((x - y).abs().mean() - 0.5 * (x - x2).abs().mean())  # E|X − y| − ½E|X − X'|
        assert float(mixture_crps(num, scalar(y))) == pytest.approx(mc, abs=0.01)
    for q in (0.05, 0.25, 0.5, 0.9):
        assert float(mixture_cdf(num, mixture_quantile(num, q))) == pytest.approx(q, abs=1e-9)


def test_truths_drawn_from_the_mixture_are_calibrated():
    num = outputs(*TWO).expand(20_000, -1)
    y = draws(outputs(*TWO), 20_000, seed=3)
    m = ev.distribution_metrics(y.numpy(), num.numpy())
    assert m["cover50"] == pytest.approx(0.5, abs=0.01)
    assert m["cover90"] == pytest.approx(0.9, abs=0.01)
    assert m["nll"] == pytest.approx(float(mixture_nll(num, y).mean()))
    assert m["crps"] == pytest.approx(float(mixture_crps(num, y).mean()))
    wide = outputs([1.0], [1.4], [5.0]).expand(20_000, -1)
    wide = ev.distribution_metrics(y.numpy(), wide.numpy())
    assert wide["cover50"] > 0.9 and wide["nll"] > m["nll"]  # too wide: over-covers, scores worse


def test_the_gmm_heads_outputs_loss_dtype_and_settings():
    model = tiny(num_head="gmm", n_components=3)
    ids, values = sample(9)
    targets = torch.full((9,), IGNORE)
    targets[[0, 1, 3]] = ids[[0, 1, 3]]  # numbers at 0 and 3, a text token at 1
    num = model(ids[None], values[None])[1]
    assert num.shape == (1, 9, 9)
    sums = model(ids[None], values[None], targets[None], values[None])
    assert int(sums["n_numbers"]) == 2
    torch.testing.assert_close(sums["num_sum"], mixture_nll(num[0, [0, 3]], values[[0, 3]]).sum())
    h = model.trunk(ids[None], values[None] * 1.2345678)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, num = model.heads(h)
        nll = mixture_nll(num, torch.full(num.shape[:-1], 1.557))
    assert num.dtype == nll.dtype == torch.float32
    torch.testing.assert_close(num, model.heads(h)[1], rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="needs the xval encoding"):
        GPTConfig(vocab_size=V, num_head="gmm", encoding="p10")
    with pytest.raises(ValueError, match="num_head must be one of mse, gmm"):
        GPTConfig(vocab_size=V, num_id=NUM, num_head="gauss")
    model = tiny(num_head="gmm", k=2)  # multiscale: the NLL of y/s, that of y minus log s
    values = values * 7
    targets = torch.where(ids == NUM, ids, torch.full((9,), IGNORE))
    num = model(ids[None], values[None])[1][0, ids == NUM]
    y = values[ids == NUM]
    expected = (mixture_nll(num, y) - torch.log(torch.sqrt(y ** 2 + model.cfg.nmse_eps))).sum()
    sums = model(ids[None], values[None], targets[None], values[None])
    torch.testing.assert_close(sums["num_sum"], expected)


@pytest.mark.parametrize("eps", [1e-3, 0.0])
def test_the_multiscale_gmm_loss_is_the_same_at_every_scale(eps):
    def mixture(c):
        return outputs([0.3, 0.7], [0.8 * c, 1.1 * c], [0.2 * c, 0.4 * c])

    def loss(c):
        return float(MixtureHead.loss(mixture(c), scalar(c), eps))
    assert loss(100.0) == pytest.approx(loss(1.0), abs=1e-3 if eps else 1e-9)
    if not eps:
        assert loss(1e-2) == pytest.approx(loss(1.0), abs=1e-9)
    closed_form = float(mixture_nll(mixture(3.0), scalar(3.0))) - 0.5 * math.log(9 + eps)
    assert loss(3.0) == pytest.approx(closed_form, rel=1e-12)  # NLL(y) − ½ log(y² + ε)


@pytest.mark.slow
def test_a_tiny_gmm_model_trains_resumes_samples_and_evaluates(data, tmp_path):
    gmm = ["--learning_rate=3e-3", "--min_lr=3e-3", "--num_head=gmm", "--n_components=4"]
    r = resumed_losses_match(data, tmp_path, *gmm)
    assert "number head gmm (K=4)" in r.stdout and "NLL" in r.stdout
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    r = train(data, resumed, *gmm, "--max_iters=7", "--resume", "--n_components=8", check=False)
    failed(r, "n_components=4")
    ckpt = f"--ckpt={straight}/ckpt_latest.pt"
    r = run("sample.py", ckpt, f"--input={data}/test.txt", "--mask_last")
    assert "50 numbers predicted" in r.stdout and "(true: " in r.stdout
    r = run("sample.py", ckpt, "--spread=box", input="(0.5+0.25)=[?]\n", check=False)
    failed(r, "spread = 'box' (from --spread) is not one of std | quantiles | none")
    report, stdout, prefix = evaluated(str(straight / "ckpt_latest.pt"), extra=["--plots"])
    m = report["splits"]["test"]["answer"]["per_seed"][0]
    assert {"nll", "crps", "cover50", "cover90"} <= set(m) and "CRPS" in stdout
    assert 0 <= m["cover50"] <= m["cover90"] <= 1 and math.isfinite(m["nll"]) and m["crps"] > 0
    assert os.path.getsize(f"{prefix}_test_density.png") > 1000


def test_an_older_checkpoint_without_head_settings_loads_as_mse(data, checkpoint, tmp_path):
    from predict import load_model
    c = torch.load(checkpoint, weights_only=True)
    for key in ("num_head", "n_components"):
        del c["model_args"][key]
    torch.save(c, tmp_path / "ckpt_latest.pt")
    model = load_model(str(tmp_path / "ckpt_latest.pt"))[0]
    assert model.cfg.num_head == "mse" and model.num_head[-1].out_features == 1
    train(data, tmp_path, "--max_iters=3", "--resume")


@pytest.mark.slow
def test_planets_gmm_evaluation_draws_m0_densities(tmp_path_factory, tmp_path):
    data = prepared(tmp_path_factory, "planets", "prepare/planets.py")
    ckpt = eval_model(data, str(tmp_path), "--block_size=1024", "--num_head=gmm")
    report, _, prefix = evaluated(ckpt, extra=["--plots", "--splits=test"])
    assert set(report["splits"]["test"]["m0"]["mean"]) >= {"mse", "nll", "crps", "cover50", "cover90"}
    assert os.path.getsize(f"{prefix}_test_density.png") > 1000
