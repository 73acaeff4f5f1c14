"""A synthetic ERA5-like 2 m temperature file and land-sea mask for prepare/era5.py, to try it
without a CDS account. NOT data for science: climatology, seasonal and diurnal cycles (larger over
smooth "continents"), AR(1) weather modes drifting east, and noise."""

import argparse
import datetime
import os

import netCDF4
import numpy as np

from common import at_least, fail, one_line_errors
from util import atomic_file

TIME_UNITS = "hours since 1900-01-01 00:00:00.0"
FILL = -32767
HOUR0 = int(netCDF4.date2num(datetime.datetime(2021, 1, 1), TIME_UNITS, "gregorian"))
# (lat, lon, radius) in degrees: caps of land
CONTINENTS = [(50, 80, 35), (45, 20, 18), (5, 20, 25), (45, 260, 25), (-15, 300, 18)]
CONTINENTS += [(-25, 135, 14), (-90, 0, 25), (72, 318, 10)]
# (zonal wavenumber, power of sin lat)
MODES = [(0, 1), (0, 2)] + [(m, k) for m in range(1, 5) for k in range(3)]
# the weather modes' AR(1) time scale; the kelvin std of a mode's amplitude and of the noise
CORRELATION_HOURS = 72
WEATHER_K = 2.5
NOISE_K = 0.3


def land_fraction(lat, lon):
    phi, lam = np.radians(lat)[:, None], np.radians(lon)[None, :]
    land = np.zeros((len(lat), len(lon)))
    for clat, clon, radius in CONTINENTS:
        clat, clon = np.radians(clat), np.radians(clon)
        cos_d = np.sin(phi) * np.sin(clat) + np.cos(phi) * np.cos(clat) * np.cos(lam - clon)
        distance = np.degrees(np.arccos(np.clip(cos_d, -1, 1)))
        land += 1 / (1 + np.exp((distance - radius) / 2))
    return np.minimum(land, 1)


def packed_variable(ds, name, scale, offset, long_name, units):
    v = ds.createVariable(name, "i2", ("time", "latitude", "longitude"), fill_value=FILL)
    v.scale_factor, v.add_offset, v.missing_value = scale, offset, np.int16(FILL)
    v.units, v.long_name = units, long_name
    # pack_int16() packs, the same on every platform
    v.set_auto_maskandscale(False)
    return v


def pack_int16(values, scale, offset):
    return np.clip(np.round((values - offset) / scale), -32766, 32767).astype(np.int16)


def create(path, lat, lon):
    ds = netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET")
    ds.Conventions = "CF-1.6"
    ds.history = "synthetic ERA5-like field from prepare/era5_synthetic.py (not data for science)"
    for name, values, units in (
        ("longitude", lon, "degrees_east"),
        ("latitude", lat, "degrees_north"),
    ):
        ds.createDimension(name, len(values))
        ds.createVariable(name, "f4", (name,))[:] = values
        ds[name].units, ds[name].long_name = units, name
    ds.createDimension("time", None)
    t = ds.createVariable("time", "i4", ("time",))
    t.units, t.long_name, t.calendar = TIME_UNITS, "time", "gregorian"
    return ds


def write_t2m(path, lat, lon, lsm, days, seed):
    rng = np.random.default_rng(seed)
    phi, lam = np.radians(lat)[:, None], np.radians(lon)[None, :]
    sin2 = np.sin(phi) ** 2
    climate = 300 - 50 * sin2 - 15 * lsm * sin2  # (lat, lon)
    seasonal_amp = (3 + 12 * lsm) * np.sin(phi)  # opposite sign north and south
    diurnal_amp = (0.5 + 5 * lsm) * np.cos(phi)
    weather_amp = (0.5 + np.abs(np.sin(phi))) * (1 + 0.5 * lsm)
    # (M, lat, lon)
    modes = np.stack([np.cos(phi) ** m * np.sin(phi) ** k * np.exp(1j * m * lam) for m, k in MODES])
    rho = np.exp(-1 / CORRELATION_HOURS)
    # decay, and drift east ~8°/day × m
    turn = rho * np.exp(-1j * np.radians([8 * m / 24 for m, _ in MODES]))
    gauss = lambda *shape: (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / 2**0.5
    z = WEATHER_K * gauss(len(MODES))
    with create(path, lat, lon) as ds:
        t2m = packed_variable(ds, "t2m", 0.0025, 260.0, "2 metre temperature", "K")
        for day in range(days):  # one day in memory at a time
            hours = 24 * day + np.arange(24)
            shocks = WEATHER_K * np.sqrt(1 - rho**2) * gauss(24, len(MODES))
            z_day = []
            for shock in shocks:
                z = turn * z + shock
                z_day.append(z)
            weather = np.real(np.einsum("tm,mab->tab", np.array(z_day), modes))  # (24, lat, lon)
            local_hour = (hours[:, None, None] + lon[None, None, :] / 15) % 24  # (24, 1, lon)
            # warmest NH on day 196
            season = np.cos(2 * np.pi * (hours[:, None, None] / 24 - 196) / 365.25)
            field = (
                climate
                + seasonal_amp * season
                + diurnal_amp * np.cos(2 * np.pi * (local_hour - 15) / 24)
                + weather_amp * weather
                + NOISE_K * rng.standard_normal(weather.shape)
            )
            ds["time"][hours] = HOUR0 + hours
            t2m[hours] = pack_int16(field, 0.0025, 260.0)


def main(argv=None):
    p = argparse.ArgumentParser(
        description="A synthetic ERA5-like t2m.nc and lsm.nc for prepare/era5.py (not data)"
    )
    add = p.add_argument
    add("--out", required=True, help="directory for t2m.nc and lsm.nc")
    add("--days", type=at_least(1), default=60, help="days of hourly data (default 60)")
    add("--resolution", type=float, default=2.5, help="grid spacing in degrees (default 2.5)")
    add("--seed", type=at_least(0), default=1337, help="fixes the weather and noise (default 1337)")
    add("--force", action="store_true", help="overwrite existing t2m.nc/lsm.nc in --out")
    args = p.parse_args(argv)
    if not (0 < args.resolution <= 90 and (180 / args.resolution) % 1 < 1e-9):
        p.error(f"--resolution must divide 180 degrees; found {args.resolution:g}")
    paths = {name: os.path.join(args.out, f"{name}.nc") for name in ("t2m", "lsm")}
    existing = [path for path in paths.values() if os.path.exists(path)]
    if existing and not args.force:
        fail(f"{', '.join(existing)} already exist(s); pass --force to overwrite")
    os.makedirs(args.out, exist_ok=True)
    lat = 90 - args.resolution * np.arange(round(180 / args.resolution) + 1)
    lon = args.resolution * np.arange(round(360 / args.resolution))
    lsm = land_fraction(lat, lon)
    with atomic_file(paths["t2m"]) as tmp:
        write_t2m(tmp, lat, lon, lsm, args.days, args.seed)
    with atomic_file(paths["lsm"]) as tmp, create(tmp, lat, lon) as ds:
        ds["time"][0] = HOUR0
        v = packed_variable(ds, "lsm", 1 / 65000, 0.5, "Land-sea mask", "(0 - 1)")
        v[0] = pack_int16(lsm, 1 / 65000, 0.5)
    print(
        f"wrote {paths['t2m']} ({args.days * 24} hourly steps, grid {len(lat)}x{len(lon)}) and"
        f" {paths['lsm']} (land fraction {lsm.mean():.2f} of grid points); synthetic, not data for"
        " science"
    )


if __name__ == "__main__":
    one_line_errors()
    main()
