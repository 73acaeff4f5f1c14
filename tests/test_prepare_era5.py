"""prepare/era5.py: samples hold the source values whatever the layout (CDS old and 2024, CMIP `tas`),
packing, latitude order or workers; bad inputs are refused."""
import datetime
import os
import zipfile
from types import SimpleNamespace

import netCDF4
import numpy as np
import pytest
from helpers import LAT, LON, START, era5_layout, read_split, truth_field, write_old_layout

import common
import era5

TOL = 5.1e-4  # 4 significant digits of a standardised value below 10
SPLITS = ("train", "val", "test")
SIZES = (50, 10, 10)


@pytest.fixture(scope="module", autouse=True)
def fewer_samples():
    with pytest.MonkeyPatch.context() as m:
        m.setitem(common.SIZES, "tiny", SIZES)
        yield


def write_nc(path, **variables):
    """variables: name=(dimensions, values, attributes)."""
    with netCDF4.Dataset(path, "w") as ds:
        for name, (dims, values, attrs) in variables.items():
            values = np.asarray(values)
            for dim, n in zip(dims, values.shape):
                if dim not in ds.dimensions:
                    ds.createDimension(dim, n)
            dtype = str if values.dtype == object else values.dtype
            v = ds.createVariable(name, dtype, dims, fill_value=attrs.pop("_FillValue", None))
            v.setncatts(attrs)
            v[:] = values
    return path


def grid(lat=LAT, lon=LON):
    return {"latitude": (("latitude",), lat, {}), "longitude": (("longitude",), lon, {})}


def write_2024_layout(path, values, lat=LAT, lon=LON, number_dim=False, hour0=0):
    """float32 t2m(valid_time, latitude, longitude), expver a string, number a scalar or dimension."""
    units, calendar, n = "seconds since 1970-01-01", "proleptic_gregorian", len(values)
    t = netCDF4.date2num(START, units, calendar) + 3600 * (hour0 + np.arange(n))
    dims = ("number",) * number_dim + ("valid_time", "latitude", "longitude")
    time = {"units": units, "calendar": calendar, "standard_name": "time"}
    t2m = {"_FillValue": np.float32(np.nan), "units": "K", "coordinates": "number valid_time latitude longitude expver"}
    return write_nc(path, valid_time=(("valid_time",), t.astype(np.int64), time), **grid(lat, lon),
                    expver=(("valid_time",), np.array(["0001"] * n, dtype=object), {}),
                    number=(dims[:number_dim], np.zeros((1,) * number_dim, np.int64), {}),
                    t2m=(dims, values.astype(np.float32)[(None,) * number_dim], t2m))


def prepare(out, *files, extra=(), workers=1):
    return era5.main([*map(str, files), "--out", str(out), "--size", "tiny", "--workers", str(workers), *extra])


def error_of(*argv):
    with pytest.raises((SystemExit, OSError)) as e:
        era5.main([str(a) for a in argv])
    return str(e.value)


def split_files(out):
    return {split: (out / f"{split}.txt").read_bytes() for split in SPLITS}


def assert_source_values(out, meta, values, lat=LAT, splits=SPLITS):
    """Each sample's values, un-normalised, are the source's at its stations and start."""
    hours = np.arange(len(values))
    doy = (START - datetime.datetime(START.year, 1, 1)).days + hours / 24
    day, year = 2 * np.pi * hours / 24, 2 * np.pi * doy / 365.25
    phases = np.stack([np.sin(day), np.cos(day), np.sin(year), np.cos(year)], 1)
    mean, std = meta["normalisation"]["mean"], meta["normalisation"]["std"]
    sources = []
    for r in [r for split in splits for r in read_split(out, split)]:
        coords = np.array(r["description"]["coords"])
        ilat = [np.argmin(np.abs(lat - np.degrees(np.arcsin(s)))) for s in coords[:, 0]]
        lon_deg = np.degrees(np.arctan2(coords[:, 1], coords[:, 2])) % 360
        ilon = [np.argmin(np.abs((LON - x + 180) % 360 - 180)) for x in lon_deg]
        start = np.argmin(np.abs(phases - r["description"]["start"]).sum(1))
        source = values[start + 8 * np.arange(len(r["data"][0]))][:, ilat, ilon].T
        assert np.isfinite(source).all()
        np.testing.assert_allclose(np.array(r["data"]) * std + mean, source, rtol=0, atol=TOL * std)
        sources.append(source.ravel())
    return np.concatenate(sources)


@pytest.fixture(scope="module")
def old_layout(tmp_path_factory):
    """The pre-2024 layout: packed int16, descending latitude."""
    tmp = tmp_path_factory.mktemp("era5_old")
    field = truth_field()
    path = write_old_layout(tmp / "era5_old.nc", field)
    return SimpleNamespace(path=path, values=field[0], out=tmp / "out", meta=prepare(tmp / "out", path))


def test_samples_hold_the_standardised_source(old_layout):
    out, meta = old_layout.out, old_layout.meta
    records = {split: read_split(out, split) for split in SPLITS}
    era5_layout([r for split in SPLITS for r in records[split]])
    assert {split: len(records[split]) for split in SPLITS} == meta["splits"] == dict(zip(SPLITS, SIZES))
    assert not [f for f in os.listdir(out) if ".tmp" in f] and (out / "meta.json").exists()
    assert_source_values(out, meta, old_layout.values, splits=SPLITS[1:])
    normalised = np.concatenate([np.ravel(r["data"]) for r in records["train"]])
    assert abs(normalised.mean()) < 1e-3 and abs(normalised.std() - 1) < 1e-3
    source = assert_source_values(out, meta, old_layout.values, splits=["train"])
    assert meta["normalisation"]["mean"] == pytest.approx(source.mean(), rel=1e-9)
    assert meta["normalisation"]["std"] == pytest.approx(source.std(), rel=1e-6)
    assert meta["windows_skipped"] == {"train": 0, "val": 0, "test": 0}


def test_layouts_orders_workers_and_a_land_sea_mask_agree(old_layout, tmp_path, monkeypatch):
    """The 2024 layout, ascending latitude; ERA5 and ERA5T rows, a later file first; two workers."""
    path = write_2024_layout(tmp_path / "era5_2024.nc", old_layout.values[:, ::-1], lat=LAT[::-1], number_dim=True)
    values, (packed, scale, offset) = truth_field()
    first = write_old_layout(tmp_path / "a.nc", (values[:120], (packed[:120], scale, offset)), expver_from=70)
    later = write_2024_layout(tmp_path / "b.nc", values[120:], hour0=120)
    # a land-sea mask labels each sample's first station: the west half ocean (< 0.5)
    lsm = np.where(LON[None, :] < 180, 0.3, 0.7) * np.ones((len(LAT), 1))
    write_nc(tmp_path / "lsm.nc", valid_time=(("valid_time",), [0], {"units": "seconds since 1970-01-01"}),
             **grid(), lsm=(("valid_time", "latitude", "longitude"), lsm[None].astype(np.float32), {}))
    monkeypatch.setattr(era5, "PLAN_CHUNK", 37)
    old, mask, metas = [old_layout.path], ["--land-sea-mask", tmp_path / "lsm.nc"], {}
    for name, args, workers in (("2024", [path], 1), ("two", [later, first], 1),
                                ("workers", old, 2), ("mask", [*old, *mask], 1)):
        metas[name] = prepare(tmp_path / name, *args, workers=workers)
        assert split_files(tmp_path / name) == split_files(old_layout.out), name
        assert metas[name]["normalisation"] == old_layout.meta["normalisation"]
    assert [f["steps"] for f in metas["two"]["files"]] == [120, 80]
    assert metas["two"]["time_gaps"] == 0
    for split in SPLITS:
        labels = list(map(int, open(tmp_path / "mask" / f"{split}.ocean.txt")))
        first = [r["description"]["coords"][0] for r in read_split(tmp_path / "mask", split)]
        first_lon = [np.degrees(np.arctan2(*c[1:])) % 360 for c in first]
        assert labels == [int(x < 171) for x in first_lon]  # ocean: 0..162°, land: 180..342°
        assert metas["mask"]["ocean_fraction"][split] == pytest.approx(np.mean(labels), abs=1e-4)


def test_cmip_tas_found_by_standard_name(tmp_path):
    values = truth_field()[0][:, ::-1].astype(np.float32)  # ascending latitude
    day0 = netCDF4.date2num(netCDF4.num2date(0, "days since 2021-03-01", "noleap"), "days since 1850-01-01", "noleap")
    t = day0 + np.arange(len(values)) / 24
    tas = {"_FillValue": np.float32(1e20), "standard_name": "air_temperature", "units": "K"}
    path = write_nc(tmp_path / "tas.nc",
                    time=(("time",), t, {"units": "days since 1850-01-01", "calendar": "noleap", "axis": "T"}),
                    time_bnds=(("time", "bnds"), np.stack([t, t + 1 / 24], 1), {}),
                    lat=(("lat",), LAT[::-1], {"axis": "Y", "standard_name": "latitude"}),
                    lon=(("lon",), LON, {"axis": "X", "standard_name": "longitude"}),
                    height=((), 2.0, {}), tas=(("time", "lat", "lon"), values, tas))
    meta = prepare(tmp_path / "out", path, extra=["--variable", "air_temperature"])
    assert meta["variable"] == "tas"
    assert_source_values(tmp_path / "out", meta, values, lat=LAT[::-1], splits=["val"])


def test_windows_with_gaps_are_redrawn(tmp_path):
    field = truth_field()
    missing = (slice(60, 80), slice(3, 4), slice(5, 7))  # 2 stations fill-valued for 20 hours
    meta = prepare(tmp_path / "out", write_old_layout(tmp_path / "holes.nc", field, missing=missing))
    assert meta["windows_skipped"]["train"] > 0
    text = b"".join(split_files(tmp_path / "out").values()).lower()
    assert b"nan" not in text and b"inf" not in text
    values = field[0].copy()
    values[missing] = np.nan
    assert_source_values(tmp_path / "out", meta, values)


def test_bad_inputs_are_refused(old_layout, tmp_path):
    out = tmp_path / "out"
    with zipfile.ZipFile(tmp_path / "download.nc", "w") as z:
        z.write(old_layout.path, "data_stream-oper.nc")
    (tmp_path / "notes.txt").write_text("not netCDF\n")
    flat = np.full((200, 100), 280, np.float32)
    no_lon = write_nc(tmp_path / "no_lon.nc", t2m=(("time", "latitude"), flat, {}))
    stations = write_nc(tmp_path / "stations.nc", t2m=(("time", "station"), flat, {}))  # series, not a grid
    shifted = write_2024_layout(tmp_path / "shifted.nc", old_layout.values, lon=LON + 1)
    coarse = write_nc(tmp_path / "lsm_coarse.nc", **grid(np.linspace(80, -80, 5), np.arange(10) * 36.0),
                      lsm=(("latitude", "longitude"), np.zeros((5, 10), np.float32), {}))
    for argv, expected in [
        ([tmp_path / "download.nc"], ["unzip it first"]),
        ([tmp_path / "notes.txt"], ["notes.txt", "Unknown file format"]),
        ([old_layout.path, "--variable", "tp"], ["no variable 'tp'", "t2m(time, latitude, longitude)"]),
        ([no_lon], ["no_lon.nc", "expected one time", "(time, latitude)"]),
        ([stations], ["stations.nc", "dimension 'station' of size 100"]),
        ([old_layout.path, "--stations", "10,201"], ["--stations 10,201", "up to 201 distinct grid points"]),
        ([old_layout.path, "--steps", "8,30"], ["--steps 8,30", "needs 233 evenly spaced time steps"]),
        ([old_layout.path, shifted], ["shifted.nc", "expected the same grid"]),
        ([old_layout.path, "--land-sea-mask", coarse], ["lsm_coarse.nc", "expected the same grid"]),
    ]:
        message = error_of(*argv, "--out", out)
        assert all(e in message for e in expected), (expected, message)
    assert not out.exists(), "nothing is written for refused inputs"
    (tmp_path / "a_file").write_text("")
    assert "cannot write to output directory" in error_of(old_layout.path, "--out", tmp_path / "a_file" / "sub")
    assert "--force" in error_of(old_layout.path, "--out", old_layout.out)
