"""prepare/planets.py: the files it writes, the priors they follow, and the physics behind them."""
import json
import math

import numpy as np
import pytest
from conftest import run
from helpers import common, read_split

import planets


def prepare(out, *flags, check=True):
    return run("prepare/planets.py", "--size=tiny", "--out", str(out), *flags, check=check)


def read_all(out):
    return {f.name: f.read_bytes() for f in out.glob("*.txt")}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("planets") / "data"
    prepare(out, "--seed=1", "--workers=2")
    return out


def planets_of(record):
    d = record["description"]
    assert list(d) == [f"planet{i}" for i in range(len(d) - 1)] + ["stepsize"]
    return [d[f"planet{i}"] for i in range(len(d) - 1)]


@pytest.mark.slow
def test_records_follow_the_priors_the_ood_gaps_and_their_orbits(dataset):
    records = {split: read_split(dataset, split) for split in planets.SPLITS}
    sizes = dict(zip(planets.SPLITS, common.SIZES["tiny"] + common.SIZES["tiny"][-1:] * 2))
    assert {split: len(recs) for split, recs in records.items()} == sizes
    meta = json.load(open(dataset / "meta.json"))
    assert meta["splits"] == sizes and meta["scales"] == {"m": 1e5, "e": 20.0}
    excess = []  # per train planet: how far it leaves [a(1 - e), a(1 + e)], relative to a
    for split, recs in records.items():
        for rec in recs:
            ps, stepsize, xy = planets_of(rec), rec["description"]["stepsize"], np.array(rec["data"])
            assert list(rec) == ["description", "data"] and 2 <= len(ps) <= 4
            assert xy.shape[1:] == (len(ps), 2) and 30 <= xy.shape[0] <= 59
            assert (stepsize in planets.TRAIN_STEPSIZES) != (split == "test_ood_stepsize")
            a = sorted(p["a"] for p in ps)  # evenly spaced, up to the 4 written digits
            assert np.allclose(np.diff(a), (a[-1] - a[0]) / (len(a) - 1), atol=2e-3)
            if split != "test_ood_a0":  # no planet in the gap (1, 1.16)
                assert a[0] == 1 and a[1] >= 1.1667 and a[-1] >= 1.5
            else:  # planet0 alone in it
                assert 1 < ps[0]["a"] < 1.16 and all(p["a"] > 1.16 for p in ps[1:])
            r = np.hypot(xy[..., 0], xy[..., 1])
            for i, p in enumerate(ps):
                assert list(p) == ["m", "a", "e"] and 1 <= p["m"] <= 5 and 0 <= p["e"] <= 2 and 1 <= p["a"] <= 3
                e = p["e"] / 20
                if split == "train":
                    excess.append(max(1 - e - r[:, i].min() / p["a"], r[:, i].max() / p["a"] - 1 - e))
    assert {planets_of(r)[0]["a"] == 1 for r in records["train"]} == {True, False}  # the order is shuffled
    steps = [r["description"]["stepsize"] for r in records["test_ood_stepsize"]]
    assert all(0.2 <= s <= 0.8 and min(abs(s - t) for t in planets.TRAIN_STEPSIZES) >= 0.02 for s in steps)
    assert len(set(steps)) > len(steps) // 2  # continuous, not a few values
    # others perturb an orbit by 1% at most; another planet's elements would miss by 5%
    assert max(excess) < 0.03 and np.median(excess) < 1e-3


def test_a_circular_orbit_closes():
    a, theta = 1.3, 0.4
    period = 2 * math.pi * a**1.5
    xy = planets.simulate([1e-5], [a], [0.0], [theta], period / 40, 41)  # (41, 1, 2)
    assert np.abs(np.hypot(xy[..., 0], xy[..., 1]) - a).max() < 1e-6
    assert np.allclose(xy[0, 0], [a * math.cos(theta), a * math.sin(theta)], atol=1e-12)
    assert np.abs(xy[-1] - xy[0]).max() < 1e-4  # the planet's mass shifts it ~1e-5


@pytest.mark.slow
def test_the_seed_fixes_the_files(dataset, tmp_path):
    prepare(tmp_path / "one", "--seed=1", "--workers=1")
    assert read_all(tmp_path / "one") == read_all(dataset)  # whatever the worker count
    out = tmp_path / "other"
    prepare(out, "--seed=2", "--workers=2")
    other = read_all(out)
    assert all(other[name] != data for name, data in read_all(dataset).items())
    r = prepare(out, "--seed=1", "--workers=2", check=False)
    assert r.returncode != 0 and "--force" in r.stderr and read_all(out) == other  # untouched
    prepare(out, "--seed=1", "--workers=2", "--force")
    assert read_all(out) == read_all(dataset)
