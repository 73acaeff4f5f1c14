"""
Planetary orbits (paper §3.2 and App. "Planetary motion"), simulated with REBOUND's IAS15.

Each sample is one planetary system around a star of mass 1 (G = 1), followed for 30-59 time
steps. Priors, all uniform:
- 2-4 planets; mass m in [1e-5, 5e-5]; eccentricity e in [0, 0.1]; all orbits in the x-y plane
- semimajor axes evenly spaced from 1 to a_f in [1.5, 3] (3 planets, a_f = 1.8 -> 1, 1.4, 1.8)
- starting angle 0 for every planet with probability 0.3, else each planet's own in [-pi/6, pi/6]
- step size dt from {0.2, 0.3, 0.5, 0.8}; positions recorded at t = 0, dt, ..., (n_steps - 1) dt
- the planets are written in a random order, so planet0 is not always the innermost one

One line per sample (compact JSON, numbers to 4 significant digits):
    {"description":{"planet0":{"m":2.381,"a":1.4,"e":1.73},"planet1":{...},...,"stepsize":0.2},
     "data":[[[x,y] per planet] per step]}
m is written times 1e5 (-> [1, 5]) and e times 20 (-> [0, 2]) so every number is of order 1 as
xVal expects; meta.json records these scales. a, stepsize and the positions are unscaled.

Modelling choices (the paper leaves these open):
- The starting angle is the planet's true longitude theta (= Omega + omega + f): with coplanar
  orbits it is exactly the polar angle of its starting position. Pericentres all lie on the +x axis
  (omega = Omega = 0), so an angle of 0 starts a planet at its pericentre on the +x axis.
- Orbital elements are heliocentric (relative to the star) and the positions written are the
  planets' positions relative to the star, so an orbit of eccentricity e stays between a(1 - e)
  and a(1 + e) up to the tiny planet-planet perturbations. The integration runs in the
  centre-of-mass frame.
- Every parameter is rounded to the 4 significant digits it is written with *before* simulating,
  so the text describes the simulation exactly.

Out-of-distribution test sets (same priors except):
- test_ood_stepsize: dt uniform in [0.2, 0.8], redrawn while it lies within OOD_STEPSIZE_MARGIN
  (0.02) of a training step size, so it is in [0.22, 0.28], [0.32, 0.48] or [0.52, 0.78].
- test_ood_a0: in training the innermost planet has a = 1 and every other planet
  a >= 1 + 0.5 / 3 = 1.1667 (4 planets, a_f = 1.5), so no training planet has a in (1, 1.16).
  Here the innermost planet's a is drawn uniformly in (1, 1.16) (open: the endpoints are
  redrawn) and the axes are evenly spaced from it to a_f in [1.5, 3]; that planet is written
  first as planet0, the others follow in random order. The other planets stay in [1.1667, 3].

Generation uses all cores by default (--workers); the output does not depend on the worker count.

    python prepare/planets.py --size small            # 40k/5k/5k (+5k per OoD set), minutes
    python prepare/planets.py --size paper --out data/planets_paper   # 1M/125k/125k
"""

import math

import numpy as np
import rebound

from common import base_parser, dumps, one_line_errors, write_dataset

DIGITS = 4  # significant digits of every number in the text
SCALES = {"m": 1e5, "e": 20.0}  # text value = physical value * scale
TRAIN_STEPSIZES = (0.2, 0.3, 0.5, 0.8)
OOD_STEPSIZE_MARGIN = 0.02  # an OoD step size is at least this far from every training one
OOD_A0_RANGE = (1.0, 1.16)  # open interval of planet0's a in test_ood_a0
SPLITS = ("train", "val", "test", "test_ood_stepsize", "test_ood_a0")


def round_sig(x, digits=DIGITS):
    """x rounded to the significant digits it will be written with."""
    return float(f"{x:.{digits}g}")


def simulate(masses, semimajor_axes, eccentricities, angles, stepsize, n_steps):
    """
    Integrate one coplanar system with IAS15 and return the planets' positions relative to the
    star at t = 0, stepsize, ..., (n_steps - 1) * stepsize: array (n_steps, n_planets, 2).
    Masses are in units of the star's mass; angles are true longitudes in radians.
    """
    sim = rebound.Simulation()
    sim.G = 1.0
    sim.integrator = "ias15"
    sim.add(m=1.0)
    for m, a, e, theta in zip(masses, semimajor_axes, eccentricities, angles):
        # heliocentric elements (REBOUND's default primary would be the centre of mass of all
        # bodies added so far, i.e. Jacobi elements)
        sim.add(m=m, a=a, e=e, theta=theta, primary=sim.particles[0])
    sim.move_to_com()
    xyz = np.empty((n_steps, sim.N, 3))  # (step, body, xyz)
    for k in range(n_steps):
        sim.integrate(k * stepsize)  # exact_finish_time (default on): land on the output time
        sim.serialize_particle_data(xyz=xyz[k])  # all positions in one call, no Python loop
    return xyz[:, 1:, :2] - xyz[:, :1, :2]  # (n_steps, n_planets, 2), relative to the star


def draw_stepsize(rng, split):
    if split != "test_ood_stepsize":
        return float(rng.choice(TRAIN_STEPSIZES))
    while True:  # redraw until clear of every training value (4 draws in 5 are kept)
        dt = round_sig(rng.uniform(0.2, 0.8))
        if min(abs(dt - s) for s in TRAIN_STEPSIZES) >= OOD_STEPSIZE_MARGIN:
            return dt


def draw_innermost_a(rng, split):
    if split != "test_ood_a0":
        return 1.0
    lo, hi = OOD_A0_RANGE
    while True:  # open interval: redraw a value that rounds onto an endpoint
        a0 = round_sig(rng.uniform(lo, hi))
        if lo < a0 < hi:
            return a0


def make_sample(rng, split):
    """One system as one line of text (see the module docstring)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    n = int(rng.integers(2, 5))  # 2..4 planets
    m_text = [round_sig(rng.uniform(1, 5)) for _ in range(n)]  # m * 1e5
    e_text = [round_sig(rng.uniform(0, 2)) for _ in range(n)]  # e * 20
    a_in, a_f = draw_innermost_a(rng, split), rng.uniform(1.5, 3)
    a = [round_sig(a_in + (a_f - a_in) * i / (n - 1)) for i in range(n)]  # innermost first
    same_start = rng.random() < 0.3
    angles = np.zeros(n) if same_start else rng.uniform(-math.pi / 6, math.pi / 6, size=n)
    stepsize = draw_stepsize(rng, split)
    n_steps = int(rng.integers(30, 60))  # 30..59
    # the written order: random, except that test_ood_a0 writes the innermost planet first
    if split == "test_ood_a0":
        order = [0] + [1 + int(i) for i in rng.permutation(n - 1)]
    else:
        order = [int(i) for i in rng.permutation(n)]

    positions = simulate(
        [m / SCALES["m"] for m in m_text],
        a,
        [e / SCALES["e"] for e in e_text],
        angles,
        stepsize,
        n_steps,
    )
    description = {
        f"planet{j}": {"m": m_text[i], "a": a[i], "e": e_text[i]} for j, i in enumerate(order)
    }
    description["stepsize"] = stepsize
    return dumps({"description": description, "data": positions[:, order].tolist()}, DIGITS)


if __name__ == "__main__":
    one_line_errors()
    parser = base_parser("Planetary orbits simulated with REBOUND (IAS15).", "data/planets")
    args = parser.parse_args()
    meta = {
        "dataset": "planets",
        "scales": SCALES,  # text value = physical value * scale; a, stepsize, x, y unscaled
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
    write_dataset(args, make_sample, extra_splits=SPLITS[3:], meta=meta)
