"""Planetary orbits (paper §3.2) simulated with REBOUND's IAS15: 2-4 coplanar planets around a star
of mass 1 (prepare/README.md#planetary-orbits-planetspy)."""

import math

import numpy as np
import rebound

from common import base_parser, dumps, one_line_errors, write_dataset

# significant digits in the text
DIGITS = 4
# text value = physical value * scale
SCALES = {"m": 1e5, "e": 20.0}
TRAIN_STEPSIZES = (0.2, 0.3, 0.5, 0.8)
# an OoD step size is at least this far from every training one
OOD_STEPSIZE_MARGIN = 0.02
# the open interval of planet0's a in test_ood_a0
OOD_A0_RANGE = (1.0, 1.16)
SPLITS = ("train", "val", "test", "test_ood_stepsize", "test_ood_a0")


def round_sig(x):
    return float(f"{x:.{DIGITS}g}")


def simulate(masses, semimajor_axes, eccentricities, angles, stepsize, n_steps):
    """The planets' (x, y) relative to the star every stepsize, (n_steps, n_planets, 2)."""
    sim = rebound.Simulation()
    sim.G = 1.0
    sim.integrator = "ias15"
    sim.add(m=1.0)
    for m, a, e, theta in zip(masses, semimajor_axes, eccentricities, angles):
        # heliocentric elements (REBOUND's default would be Jacobi elements)
        sim.add(m=m, a=a, e=e, theta=theta, primary=sim.particles[0])
    sim.move_to_com()
    xyz = np.empty((n_steps, sim.N, 3))
    for k in range(n_steps):
        sim.integrate(k * stepsize)
        sim.serialize_particle_data(xyz=xyz[k])
    return xyz[:, 1:, :2] - xyz[:, :1, :2]


def draw_stepsize(rng, split):
    if split != "test_ood_stepsize":
        return float(rng.choice(TRAIN_STEPSIZES))
    # redrawn until clear of every training value
    while True:
        dt = round_sig(rng.uniform(0.2, 0.8))
        if min(abs(dt - s) for s in TRAIN_STEPSIZES) >= OOD_STEPSIZE_MARGIN:
            return dt


def draw_innermost_a(rng, split):
    if split != "test_ood_a0":
        return 1.0
    lo, hi = OOD_A0_RANGE
    # an open interval: a value that rounds onto an endpoint is redrawn
    while True:
        a0 = round_sig(rng.uniform(lo, hi))
        if lo < a0 < hi:
            return a0


def make_sample(rng, split):
    n = int(rng.integers(2, 5))
    # rounded as written
    m_text = [round_sig(rng.uniform(1, 5)) for _ in range(n)]
    e_text = [round_sig(rng.uniform(0, 2)) for _ in range(n)]
    a_in, a_f = draw_innermost_a(rng, split), rng.uniform(1.5, 3)
    # innermost first
    a = [round_sig(a_in + (a_f - a_in) * i / (n - 1)) for i in range(n)]
    same_start = rng.random() < 0.3
    angles = np.zeros(n) if same_start else rng.uniform(-math.pi / 6, math.pi / 6, size=n)
    stepsize = draw_stepsize(rng, split)
    n_steps = int(rng.integers(30, 60))
    # random, but test_ood_a0 writes the innermost planet first
    if split == "test_ood_a0":
        order = [0] + [1 + int(i) for i in rng.permutation(n - 1)]
    else:
        order = [int(i) for i in rng.permutation(n)]

    masses, eccentricities = [m / SCALES["m"] for m in m_text], [e / SCALES["e"] for e in e_text]
    positions = simulate(masses, a, eccentricities, angles, stepsize, n_steps)
    description = {
        f"planet{j}": {"m": m_text[i], "a": a[i], "e": e_text[i]} for j, i in enumerate(order)
    }
    description["stepsize"] = stepsize
    return dumps({"description": description, "data": positions[:, order].tolist()})


if __name__ == "__main__":
    one_line_errors()
    parser = base_parser("Planetary orbits simulated with REBOUND (IAS15).", "data/planets")
    args = parser.parse_args()
    meta = {
        "dataset": "planets",
        "scales": SCALES,
        "digits": DIGITS,
        "train_stepsizes": TRAIN_STEPSIZES,
        "ood": {
            "test_ood_stepsize": (
                f"stepsize uniform in [0.2, 0.8], at least {OOD_STEPSIZE_MARGIN} "
                "from every training step size"
            ),
            "test_ood_a0": (
                "planet0 is the innermost planet with a uniform in the open interval "
                f"{OOD_A0_RANGE}; axes evenly spaced from it to a_f in [1.5, 3]"
            ),
        },
    }
    write_dataset(args, make_sample, meta, extra_splits=SPLITS[3:])
