"""prepare/era5_synthetic.py: a CDS-like field and mask, the same bytes for a seed, read by prepare/era5.py."""
import json
import os

import netCDF4
import numpy as np
import pytest
from helpers import common, era5_layout

import era5
import era5_synthetic

SMALL = ["--days", "6", "--resolution", "10"]  # 19 x 36 grid, 144 hourly steps
SIZES = (50, 10, 10)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    out = tmp_path_factory.mktemp("era5_synthetic")
    era5_synthetic.main(["--out", str(out), *SMALL])
    with pytest.MonkeyPatch.context() as m:
        m.setitem(common.SIZES, "tiny", SIZES)
        yield out


def prepare(out, synthetic, *extra):
    """{split: [(record, ocean label)]}, meta.json."""
    meta = era5.main([str(synthetic / "t2m.nc"), "--land-sea-mask", str(synthetic / "lsm.nc"), "--out", str(out),
                      "--size", "tiny", "--workers", "1", *extra])
    return {split: list(zip(map(json.loads, open(out / f"{split}.txt")),
                            map(int, open(out / f"{split}.ocean.txt")), strict=True))
            for split in ("train", "val", "test")}, meta


def test_the_old_cds_layout_and_a_plausible_field(synthetic):
    with netCDF4.Dataset(synthetic / "t2m.nc") as ds, netCDF4.Dataset(synthetic / "lsm.nc") as mask:
        t2m, lsm = ds["t2m"], mask["lsm"][0]
        assert t2m.dimensions == ("time", "latitude", "longitude") and t2m.dtype == np.int16
        assert hasattr(t2m, "scale_factor") and hasattr(t2m, "add_offset") and t2m.units == "K"
        assert ds["time"].units.startswith("hours since 1900-01-01") and np.all(np.diff(ds["time"][:]) == 1)
        lat, values = ds["latitude"][:], t2m[:]
    assert lat[0] == 90 and lat[-1] == -90 and values.shape == (144, 19, 36)
    assert 200 < values.min() and values.max() < 330
    zonal = values.mean(axis=(0, 2))
    assert zonal[9] > zonal[0] + 20 and zonal[9] > zonal[-1] + 20, "warm equator, cold poles"
    assert lsm.shape == (19, 36) and lsm.min() >= 0 and lsm.max() <= 1 + 1e-6
    daily = values.reshape(6, 24, 19, 36).mean(0)  # mean day at every point
    swing = (daily.max(0) - daily.min(0))[6:13]  # within 30° of the equator
    land, ocean = lsm[6:13] > 0.9, lsm[6:13] < 0.1
    assert land.any() and ocean.any() and swing[land].mean() > 2 * swing[ocean].mean(), "land swings more"


@pytest.mark.parametrize("flags, stations, steps", [((), (60, 89), (8, 15)),
                                                    (("--stations", "10,19", "--steps", "8,10"), (10, 19), (8, 10))])
def test_era5_reads_it(synthetic, tmp_path, flags, stations, steps):
    splits, meta = prepare(tmp_path / "out", synthetic, *flags)
    assert meta["stations"] == list(stations) and meta["steps"] == list(steps) and meta["grid"] == [19, 36]
    assert [len(splits[split]) for split in ("train", "val", "test")] == list(SIZES)
    pairs = [pair for split in splits.values() for pair in split]
    sizes, lengths = era5_layout([r for r, _ in pairs], stations, steps)
    assert len(sizes) > 5 and lengths == set(range(steps[0], steps[1] + 1))
    assert {label for _, label in pairs} == {0, 1}
    assert 0.2 < np.mean([label for _, label in splits["train"]]) < 0.9, "both classes, neither rare"


def test_the_seed_fixes_the_bytes(synthetic, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    era5_synthetic.main(["--out", str(a), *SMALL])
    era5_synthetic.main(["--out", str(b), *SMALL, "--seed", "7"])
    for name in ("t2m.nc", "lsm.nc"):
        assert (a / name).read_bytes() == (synthetic / name).read_bytes()
    assert (b / "t2m.nc").read_bytes() != (synthetic / "t2m.nc").read_bytes()
    assert (b / "lsm.nc").read_bytes() == (synthetic / "lsm.nc").read_bytes(), "continents are fixed"
    assert not [f for f in os.listdir(a) if ".tmp" in f]
    with pytest.raises(SystemExit, match="--force"):
        era5_synthetic.main(["--out", str(a), *SMALL])
    era5_synthetic.main(["--out", str(a), *SMALL, "--seed", "7", "--force"])
    assert (a / "t2m.nc").read_bytes() == (b / "t2m.nc").read_bytes()


@pytest.mark.parametrize("flag, value, expected", [("--stations", "10", "expected MIN,MAX"),
                                                   ("--stations", "19,10", "expected 1 <= MIN <= MAX"),
                                                   ("--steps", "0,3", "expected 1 <= MIN <= MAX")])
def test_a_bad_range_is_refused_naming_the_flag(synthetic, tmp_path, capsys, flag, value, expected):
    with pytest.raises(SystemExit) as e:
        prepare(tmp_path / "out", synthetic, flag, value)
    assert e.value.code == 2 and f"argument {flag}: {expected}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
