"""prepare/era5.py on small synthetic netCDF files in the CDS layouts (before 2024 and since 2024) and a
CMIP-like `tas` file: the samples hold the source values at the recorded coordinates, whatever the
layout, packing, latitude order or worker count; bad inputs stop with a message naming the problem."""
import datetime
import json
import os
import subprocess
import sys
import zipfile
from types import SimpleNamespace

import netCDF4
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "prepare"))
import era5  # noqa: E402
from helpers import LAT, LON, START, truth_field, write_old_layout  # noqa: E402

TOL = 5.1e-4                         # 4 significant digits of a standardised value below 10


def write_2024_layout(path, values, lat=LAT, lon=LON, number_dim=False, hour0=0):
    """CDS since 2024: netCDF4, float32 t2m(valid_time, latitude, longitude), valid_time in seconds since
    1970, expver a string coordinate along valid_time, number a scalar (or a size-1 leading dimension)."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("valid_time", len(values))
        ds.createDimension("latitude", len(lat))
        ds.createDimension("longitude", len(lon))
        t = ds.createVariable("valid_time", "i8", ("valid_time",))
        t.units, t.calendar, t.standard_name = "seconds since 1970-01-01", "proleptic_gregorian", "time"
        t[:] = netCDF4.date2num(START, t.units, t.calendar) + 3600 * (hour0 + np.arange(len(values)))
        ds.createVariable("latitude", "f8", ("latitude",))[:] = lat
        ds.createVariable("longitude", "f8", ("longitude",))[:] = lon
        ds.createVariable("expver", str, ("valid_time",))[:] = np.array(["0001"] * len(values), dtype=object)
        dims = ("valid_time", "latitude", "longitude")
        if number_dim:
            ds.createDimension("number", 1)
            dims = ("number",) + dims
            values = values[None]
        ds.createVariable("number", "i8", ("number",) if number_dim else ())[:] = 0
        v = ds.createVariable("t2m", "f4", dims, zlib=True, fill_value=np.float32(np.nan))
        v.units, v.coordinates = "K", "number valid_time latitude longitude expver"
        v[:] = values.astype(np.float32)
    return path


def write_cmip_tas(path, values, lat, lon):
    """CMIP-like tas(time, lat, lon), float32, time in days since 1850 on the noleap calendar, bounds."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        for name, n in (("time", None), ("lat", len(lat)), ("lon", len(lon)), ("bnds", 2)):
            ds.createDimension(name, n)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar, t.axis = "days since 1850-01-01", "noleap", "T"
        day0 = netCDF4.date2num(netCDF4.num2date(0, "days since 2021-03-01", "noleap"), t.units, "noleap")
        t[:] = day0 + np.arange(len(values)) / 24
        ds.createVariable("time_bnds", "f8", ("time", "bnds"))[:] = np.stack([t[:], t[:] + 1 / 24], 1)
        for name, axis, values_ in (("lat", "Y", lat), ("lon", "X", lon)):
            c = ds.createVariable(name, "f8", (name,))
            c.axis, c.standard_name = axis, {"Y": "latitude", "X": "longitude"}[axis]
            c[:] = values_
        ds.createVariable("height", "f8", ())[:] = 2.0
        v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=np.float32(1e20))
        v.standard_name, v.units = "air_temperature", "K"
        v[:] = values.astype(np.float32)
    return path


def prepare(out, *files, extra=()):
    return era5.main([*map(str, files), "--out", str(out), "--size", "tiny", "--workers", "1", *extra])


def error_of(*argv):
    with pytest.raises(SystemExit) as e:
        era5.main([str(a) for a in argv])
    assert e.value.code not in (0, None)
    return str(e.value.code)


def read_split(out, split):
    return [json.loads(line) for line in open(os.path.join(out, f"{split}.txt"))]


def source_values(record, meta, values, lat=LAT, lon=LON, stride=8):
    """The kelvin values the sample claims (un-normalised) and the source values at its decoded
    stations and start step: (claimed, source), both (stations, steps)."""
    coords = np.array(record["description"]["coords"])
    ilat = [np.argmin(np.abs(lat - np.degrees(np.arcsin(s)))) for s in coords[:, 0]]
    lon_deg = np.degrees(np.arctan2(coords[:, 1], coords[:, 2])) % 360
    ilon = [np.argmin(np.abs((lon - x + 180) % 360 - 180)) for x in lon_deg]
    hours = np.arange(len(values))
    doy = (START - datetime.datetime(START.year, 1, 1)).days + hours / 24
    phases = np.stack([np.sin(2 * np.pi * hours / 24), np.cos(2 * np.pi * hours / 24),
                       np.sin(2 * np.pi * doy / 365.25), np.cos(2 * np.pi * doy / 365.25)], 1)
    start = np.argmin(np.abs(phases - record["description"]["start"]).sum(1))
    n_steps = len(record["data"][0])
    steps = start + stride * np.arange(n_steps)
    source = values[steps][:, ilat, ilon].T
    claimed = np.array(record["data"]) * meta["normalisation"]["std"] + meta["normalisation"]["mean"]
    return claimed, source


@pytest.fixture(scope="module")
def old_layout(tmp_path_factory):
    """One dataset prepared from the pre-2024 layout (packed int16, descending latitude)."""
    tmp = tmp_path_factory.mktemp("era5_old")
    field = truth_field()
    path = write_old_layout(tmp / "era5_old.nc", field)
    meta = prepare(tmp / "out", path)
    return SimpleNamespace(tmp=tmp, path=path, values=field[0], out=tmp / "out", meta=meta)


def split_files(out):
    return {name: open(os.path.join(out, name), "rb").read() for name in ("train.txt", "val.txt", "test.txt")}


def test_samples_have_the_paper_layout(old_layout):
    counts = {}
    for split in ("train", "val", "test"):
        records = read_split(old_layout.out, split)
        counts[split] = len(records)
        for r in records:
            assert list(r) == ["description", "data"] and list(r["description"]) == ["coords", "start"]
            coords, data = r["description"]["coords"], r["data"]
            assert 60 <= len(coords) <= 89 and len(data) == len(coords)
            assert all(len(c) == 3 for c in coords) and len(r["description"]["start"]) == 4
            assert 8 <= len(data[0]) <= 15 and all(len(row) == len(data[0]) for row in data)
            assert len({tuple(c) for c in coords}) == len(coords), "stations are distinct"
    assert counts == old_layout.meta["splits"] == {"train": 400, "val": 50, "test": 50}
    assert os.path.exists(old_layout.out / "meta.json")
    assert not [f for f in os.listdir(old_layout.out) if ".tmp" in f]


def test_values_are_the_source_field_at_the_recorded_coordinates(old_layout):
    meta, std = old_layout.meta, old_layout.meta["normalisation"]["std"]
    for split in ("train", "val", "test"):
        for r in read_split(old_layout.out, split):
            claimed, source = source_values(r, meta, old_layout.values)
            # 4 significant digits of a value of order 1: within 5e-4 std
            np.testing.assert_allclose(claimed, source, rtol=0, atol=TOL * std)


def test_training_split_is_standardised_with_its_own_mean_and_std(old_layout):
    records = read_split(old_layout.out, "train")
    normalised = np.concatenate([np.ravel(r["data"]) for r in records])
    assert abs(normalised.mean()) < 1e-3 and abs(normalised.std() - 1) < 1e-3
    source = np.concatenate([source_values(r, old_layout.meta, old_layout.values)[1].ravel() for r in records])
    assert old_layout.meta["normalisation"]["mean"] == pytest.approx(source.mean(), rel=1e-9)
    assert old_layout.meta["normalisation"]["std"] == pytest.approx(source.std(), rel=1e-6)
    assert old_layout.meta["windows_skipped"] == {"train": 0, "val": 0, "test": 0}


def test_2024_layout_with_ascending_latitude_gives_identical_samples(old_layout, tmp_path):
    path = write_2024_layout(tmp_path / "era5_2024.nc", old_layout.values[:, ::-1], lat=LAT[::-1], number_dim=True)
    meta = prepare(tmp_path / "out", path)
    assert split_files(tmp_path / "out") == split_files(old_layout.out)
    assert meta["normalisation"] == old_layout.meta["normalisation"]


def test_expver_rows_are_merged_and_files_concatenated_in_time_order(old_layout, tmp_path):
    """ERA5 and ERA5T rows of one file, plus a second file holding the later steps, passed first."""
    values, (packed, scale, offset) = truth_field()
    first = write_old_layout(tmp_path / "a.nc", (values[:120], (packed[:120], scale, offset)), expver_from=70)
    later = write_2024_layout(tmp_path / "b.nc", values[120:], hour0=120)
    meta = prepare(tmp_path / "out", later, first)
    assert split_files(tmp_path / "out") == split_files(old_layout.out)
    assert [f["steps"] for f in meta["files"]] == [120, 80] and meta["time_gaps"] == 0


def test_cmip_tas_found_by_standard_name(tmp_path):
    lat, lon = np.linspace(-81, 81, 10), np.arange(20) * 18.0
    values = truth_field()[0][:, ::-1]  # ascending latitude
    path = write_cmip_tas(tmp_path / "tas.nc", values, lat, lon)
    meta = prepare(tmp_path / "out", path, extra=["--variable", "air_temperature"])
    assert meta["variable"] == "tas"
    for r in read_split(tmp_path / "out", "val"):
        claimed, source = source_values(r, meta, values.astype(np.float32), lat=lat, lon=lon)
        np.testing.assert_allclose(claimed, source, atol=TOL * meta["normalisation"]["std"])


def test_workers_do_not_change_the_output(old_layout, tmp_path, monkeypatch):
    monkeypatch.setattr(era5, "PLAN_CHUNK", 37)  # many small jobs, finishing in any order
    meta = era5.main([str(old_layout.path), "--out", str(tmp_path / "out"), "--size", "tiny", "--workers", "2"])
    assert split_files(tmp_path / "out") == split_files(old_layout.out)
    assert meta["normalisation"] == old_layout.meta["normalisation"]


def test_windows_with_missing_values_are_redrawn_and_counted(tmp_path):
    field = truth_field()
    missing = (slice(60, 80), slice(3, 4), slice(5, 7))  # 2 stations fill-valued for 20 hours
    path = write_old_layout(tmp_path / "holes.nc", field, missing=missing)
    meta = prepare(tmp_path / "out", path)
    assert meta["windows_skipped"]["train"] > 0
    values = field[0].copy()
    values[missing] = np.nan
    for split in ("train", "val", "test"):
        text = open(tmp_path / "out" / f"{split}.txt").read()
        assert "nan" not in text.lower() and "inf" not in text.lower()
        for r in read_split(tmp_path / "out", split):
            claimed, source = source_values(r, meta, values)
            assert np.isfinite(source).all()
            np.testing.assert_allclose(claimed, source, atol=TOL * meta["normalisation"]["std"])


def test_land_sea_mask_labels_the_first_station(old_layout, tmp_path):
    lsm = np.where(LON[None, :] < 180, 0.3, 0.7) * np.ones((len(LAT), 1))  # west half ocean (< 0.5)
    with netCDF4.Dataset(tmp_path / "lsm.nc", "w") as ds:  # 2024 layout, one time step
        ds.createDimension("valid_time", 1)
        ds.createDimension("latitude", len(LAT))
        ds.createDimension("longitude", len(LON))
        t = ds.createVariable("valid_time", "i8", ("valid_time",))
        t.units = "seconds since 1970-01-01"
        t[:] = 0
        ds.createVariable("latitude", "f8", ("latitude",))[:] = LAT
        ds.createVariable("longitude", "f8", ("longitude",))[:] = LON
        ds.createVariable("lsm", "f4", ("valid_time", "latitude", "longitude"))[:] = lsm[None]
    meta = prepare(tmp_path / "out", old_layout.path, extra=["--land-sea-mask", str(tmp_path / "lsm.nc")])
    assert split_files(tmp_path / "out") == split_files(old_layout.out)
    for split in ("train", "val", "test"):
        labels = [int(x) for x in open(tmp_path / "out" / f"{split}.ocean.txt")]
        records = read_split(tmp_path / "out", split)
        first_lon = [np.degrees(np.arctan2(*r["description"]["coords"][0][1:])) % 360 for r in records]
        assert labels == [int(x < 171) for x in first_lon]  # ocean: 0..162°, land: 180..342°
        assert meta["ocean_fraction"][split] == pytest.approx(np.mean(labels), abs=1e-4)
    # a mask on another grid is refused
    with netCDF4.Dataset(tmp_path / "lsm_coarse.nc", "w") as ds:
        ds.createDimension("latitude", 5)
        ds.createDimension("longitude", 10)
        ds.createVariable("latitude", "f8", ("latitude",))[:] = np.linspace(80, -80, 5)
        ds.createVariable("longitude", "f8", ("longitude",))[:] = np.arange(10) * 36.0
        ds.createVariable("lsm", "f4", ("latitude", "longitude"))[:] = 0
    message = error_of(old_layout.path, "--out", tmp_path / "out2", "--land-sea-mask", tmp_path / "lsm_coarse.nc")
    assert "lsm_coarse.nc" in message and "expected the same grid" in message


def test_bad_inputs_are_refused_with_a_clear_message(old_layout, tmp_path):
    out = tmp_path / "out"
    with zipfile.ZipFile(tmp_path / "download.nc", "w") as z:
        z.write(old_layout.path, "data_stream-oper.nc")
    assert "unzip it first" in error_of(tmp_path / "download.nc", "--out", out)
    (tmp_path / "notes.txt").write_text("not netCDF\n")
    message = error_of(tmp_path / "notes.txt", "--out", out)
    assert "notes.txt" in message and "not a netCDF file" in message
    message = error_of(old_layout.path, "--variable", "tp", "--out", out)
    assert "no variable 'tp'" in message and "t2m(time, latitude, longitude)" in message

    with netCDF4.Dataset(tmp_path / "no_lon.nc", "w") as ds:  # t2m without a longitude dimension
        ds.createDimension("time", 200)
        ds.createDimension("latitude", 100)
        ds.createVariable("t2m", "f4", ("time", "latitude"))[:] = 280
    message = error_of(tmp_path / "no_lon.nc", "--out", out)
    assert "no_lon.nc" in message and "expected one time" in message and "(time, latitude)" in message
    with netCDF4.Dataset(tmp_path / "stations.nc", "w") as ds:  # station series, not a grid
        ds.createDimension("time", 200)
        ds.createDimension("station", 100)
        ds.createVariable("t2m", "f4", ("time", "station"))[:] = 280
    message = error_of(tmp_path / "stations.nc", "--out", out)
    assert "stations.nc" in message and "dimension 'station' of size 100" in message

    small = write_old_layout(tmp_path / "small.nc", truth_field(n_lat=5, n_lon=10), lat=np.linspace(80, -80, 5),
                             lon=np.arange(10) * 36.0)
    assert "up to 89 distinct grid points" in error_of(small, "--out", out)
    short = write_old_layout(tmp_path / "short.nc", truth_field(n_steps=100))
    assert "needs 113 evenly spaced time steps" in error_of(short, "--out", out)
    other = write_2024_layout(tmp_path / "shifted.nc", old_layout.values, lon=LON + 1)
    message = error_of(old_layout.path, other, "--out", out)
    assert "shifted.nc" in message and "share one grid" in message
    assert not out.exists(), "nothing is written for refused inputs"

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert "cannot write to output directory" in error_of(old_layout.path, "--out", blocker / "sub")
    assert "--force" in error_of(old_layout.path, "--out", old_layout.out)


@pytest.mark.slow
def test_command_line_exits_nonzero_naming_the_file(tmp_path):
    (tmp_path / "x.zip").write_bytes(b"PK\x03\x04rest of a zip")
    run = subprocess.run([sys.executable, os.path.join(ROOT, "prepare", "era5.py"), str(tmp_path / "x.zip"),
                          "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert run.returncode != 0 and "x.zip" in run.stderr and "unzip it first" in run.stderr
