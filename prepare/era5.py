"""The temperature dataset of the xVal paper (§3.1, App. C) from ERA5 netCDF files: pass 1 cuts
the windows into a scratch file, pass 2 writes them as text standardised by train's statistics."""

import functools
import itertools
import math
import os
import re
import time
from multiprocessing import Pool
from types import SimpleNamespace

import netCDF4
import numpy as np

from common import SIZES, at_least, base_parser, command, dumps, fail, int_range, progress
from common import one_line_errors, staged_dataset, write_meta
from util import atomic_write_text, worker_signals

MAX_ATTEMPTS = 100
SPLITS = ("train", "val", "test")
WRITES = [f"{s}{ext}" for s in SPLITS for ext in (".txt", ".ocean.txt")] + ["meta.json"]
PLAN_CHUNK = 4096
# a worker's field and settings
CTX = None


def open_netcdf(path):
    """A netCDF file; netCDF4's OSError names a file of another kind."""
    with open(path, "rb") as f:
        if f.read(4) == b"PK\x03\x04":
            fail(f"{path} is a zip archive: unzip it first")
    ds = netCDF4.Dataset(path, "r")
    # masked arithmetic is slow
    ds.set_always_mask(False)
    return ds


# a worker's files, opened in the worker: netCDF handles do not survive a fork
opened = functools.cache(open_netcdf)


def find_variable(ds, path, wanted):
    """The variable named `wanted`, or the only one of that CF standard_name."""
    if wanted in ds.variables:
        return wanted
    named = [n for n, v in ds.variables.items() if getattr(v, "standard_name", None) == wanted]
    if len(named) == 1:
        return named[0]
    present = ", ".join(f"{n}({', '.join(v.dimensions)})" for n, v in ds.variables.items())
    fail(f"{path} has no variable '{wanted}' (--variable), only {present}")


def axis_of(ds, dim):
    """A dimension's kind: 'time', 'lat', 'lon' or None."""
    coord = ds.variables.get(dim)
    standard, axis, units = (
        str(getattr(coord, k, "")).lower() for k in ("standard_name", "axis", "units")
    )
    for kind, names, letter, known_units in (
        ("time", ("time", "valid_time"), "t", " since " in units),
        ("lat", ("latitude", "lat"), "y", re.fullmatch("degrees?_n(orth)?", units)),
        ("lon", ("longitude", "lon"), "x", re.fullmatch("degrees?_e(ast)?", units)),
    ):
        if dim in names or standard == names[0] or not standard and (axis == letter or known_units):
            return kind
    return None


def locate_dims(ds, path, name, need_time=True):
    """{kind: dimension} of variable `name`."""
    var = ds.variables[name]
    found = {"time": [], "lat": [], "lon": [], "expver": []}
    for dim in var.dimensions:
        kind = "expver" if dim == "expver" else axis_of(ds, dim)
        size = len(ds.dimensions[dim])
        if kind:
            found[kind].append(dim)
        elif size != 1:
            fail(f"{path}: '{name}' has a dimension '{dim}' of size {size}; expected size 1")
    needed = ("time", "lat", "lon") if need_time else ("lat", "lon")
    if any(not found[k] for k in needed) or any(len(v) > 1 for v in found.values()):
        dims = ", ".join(var.dimensions)
        fail(f"{path}: '{name}' has dimensions ({dims}); expected one time, latitude and longitude")
    return {k: v[0] if v else None for k, v in found.items()}


def coordinate(ds, path, dim):
    if dim not in ds.variables:
        fail(f"{path}: dimension '{dim}' has no coordinate variable")
    values = np.ma.filled(np.ma.asarray(ds.variables[dim][:], dtype=np.float64), np.nan)
    step = np.diff(values)
    if values.ndim != 1 or not (np.all(step > 0) or np.all(step < 0)):
        fail(f"{path}: coordinate '{dim}' is not a monotonic 1-d axis")
    return values


def describe_grid(grid):
    lat, lon = grid
    return f"{len(lat)}x{len(lon)} (lat {lat[0]:g}..{lat[-1]:g}, lon {lon[0]:g}..{lon[-1]:g})"


def check_grid(src, first):
    pairs = zip(src.grid, first.grid)
    if not all(len(a) == len(b) and np.allclose(a, b, atol=1e-4) for a, b in pairs):
        grids = f"{describe_grid(src.grid)}; {first.path} has {describe_grid(first.grid)}"
        fail(f"{src.path} has grid {grids}; expected the same grid")


def read_source(ds, src, t0, t1):
    """Steps [t0, t1) of a file on the ascending grid, NaN where missing."""
    var = ds.variables[src.variable]
    axes = {d: k for k, d in src.dims.items() if d}
    index = tuple(
        slice(t0, t1) if d == src.dims["time"] else slice(None) if d in axes else 0
        for d in var.dimensions
    )
    x = var[index]
    x = np.ma.filled(x.astype(np.result_type(x.dtype, np.float32)), np.nan)
    kept = [axes[d] for d in var.dimensions if d in axes]
    x = np.transpose(x, [kept.index(k) for k in ("expver", "time", "lat", "lon") if k in kept])
    # ERA5 and ERA5T rows each fill part of the time: keep the first non-missing
    rows = x.reshape(src.expvers, -1, *x.shape[-2:])
    x = rows[0]
    for row in rows[1:]:
        x = np.where(np.isnan(x), row, x)
    return x[..., :: src.lat_step, :: src.lon_step]


def read_times(ds, path, dim):
    """A file's dates, seconds since 1970 and calendar."""
    tvar = ds.variables.get(dim)
    units = getattr(tvar, "units", "")
    if " since " not in units:
        fail(f"{path}: time '{dim}' has units '{units}'; expected 'hours since <date>'")
    calendar = getattr(tvar, "calendar", "standard").lower()
    if calendar in ("gregorian", "proleptic_gregorian"):
        calendar = "standard"
    try:
        dates = netCDF4.num2date(np.asarray(tvar[:]), units, calendar)
    except ValueError as e:
        fail(f"{path}: cannot decode time '{dim}' ({e})")
    seconds = netCDF4.date2num(dates, "seconds since 1970-01-01", calendar)
    seconds = np.round(seconds).astype(np.int64)
    if len(seconds) == 0 or np.any(np.diff(seconds) <= 0):
        fail(f"{path}: the times of '{dim}' do not increase")
    return dates, seconds, calendar


def open_source(path, wanted, need_time=True):
    """One file's grid, times, and how to read `wanted`."""
    ds = open_netcdf(path)
    name = find_variable(ds, path, wanted)
    dims = locate_dims(ds, path, name, need_time)
    lat, lon = coordinate(ds, path, dims["lat"]), coordinate(ds, path, dims["lon"])
    src = SimpleNamespace(path=path, variable=name, dims=dims, grid=(np.sort(lat), np.sort(lon)))
    # read_source's step along each axis: the grid ascending
    src.lat_step, src.lon_step = (1 if x[0] <= x[-1] else -1 for x in (lat, lon))
    src.units = getattr(ds.variables[name], "units", "?")
    src.expvers = len(ds.dimensions[dims["expver"]]) if dims["expver"] else 1
    if need_time:
        dates, src.seconds, src.calendar = read_times(ds, path, dims["time"])
        # 86,400 s a day in every calendar
        src.tod = src.seconds % 86400 / 86400
        src.toy = (np.array([d.dayofyr - 1 for d in dates]) + src.tod) / 365.25
        src.steps, src.first, src.last = len(dates), str(dates[0]), str(dates[-1])
    ds.close()
    return src


def open_field(paths, wanted):
    """The files' grid, times and phases."""
    sources = [open_source(path, wanted) for path in paths]
    first = sources[0]
    for src in sources[1:]:
        check_grid(src, first)
        if src.calendar != first.calendar:
            fail(f"{src.path} and {first.path} use calendars {src.calendar} and {first.calendar}")
    sources.sort(key=lambda s: s.seconds[0])
    for a, b in itertools.pairwise(sources):
        if b.seconds[0] <= a.seconds[-1]:
            times = f"{a.first} .. {a.last} and {b.first} .. {b.last}"
            fail(f"{a.path} and {b.path} overlap in time ({times})")
    field = SimpleNamespace(sources=sources, grid=first.grid, lat=first.grid[0], lon=first.grid[1])
    field.units, field.variable = first.units, first.variable
    field.points = len(field.lat) * len(field.lon)
    field.first_step = np.cumsum([0] + [s.steps for s in sources[:-1]]).tolist()
    for key in ("seconds", "tod", "toy"):
        setattr(field, key, np.concatenate([getattr(s, key) for s in sources]))
    return field


def read_land_sea_mask(path, field):
    """ERA5 `lsm`, the land fraction, at each grid point."""
    src = open_source(path, "lsm", need_time=False)
    check_grid(src, field.sources[0])
    with open_netcdf(path) as ds:
        x = read_source(ds, src, 0, 1).ravel()
    if np.nanmax(x) > 1 + 1e-6 or np.nanmin(x) < -1e-6:
        fail(f"land-sea mask {path}: '{src.variable}' is not a fraction 0..1")
    return x


def window_starts(seconds, stride, steps):
    """For each step count n, the starts whose n steps span no gap; the step in hours; the gaps."""
    diffs = np.diff(seconds)
    values, counts = np.unique(diffs, return_counts=True)
    step = values[np.argmax(counts)] if len(diffs) else 0
    # uneven steps before step i
    gaps_before = np.concatenate([[0], np.cumsum(diffs != step)])
    starts = {}
    for n in range(steps[0], steps[1] + 1):
        span = (n - 1) * stride
        s = np.arange(max(len(seconds) - span, 0), dtype=np.int32)
        starts[n] = s[gaps_before[s + span] == gaps_before[s]]
    return starts, int(step) / 3600, int(gaps_before[-1])


def init_worker(ctx, pool=False):
    global CTX
    CTX = ctx
    if pool:
        worker_signals()


def draw_window(sample, attempt):
    """(steps, start, stations) of a sample's attempt: a redraw needs nothing stored."""
    args, starts = CTX.args, CTX.starts
    rng = np.random.default_rng([args.seed, int(CTX.codes[sample]), int(CTX.indices[sample])])
    n_stations = int(rng.integers(args.stations[0], args.stations[1] + 1))
    n_steps = int(rng.integers(args.steps[0], args.steps[1] + 1))
    for _ in range(attempt + 1):
        start = int(starts[n_steps][rng.integers(len(starts[n_steps]))])
        stations = rng.choice(CTX.field.points, n_stations, replace=False)
    return n_steps, start, stations


def draw_plan(sample):
    """Worker: (stations, steps, start) of a sample's first window."""
    n_steps, start, stations = draw_window(sample, 0)
    return len(stations), n_steps, start


def extract_block(job):
    """Worker: each sample's part of steps [b0, b1), read from the files in pieces of ~16 MB."""
    b0, b1, ids, attempts = job
    f, stride = CTX.field, CTX.args.stride
    block = np.empty((b1 - b0, len(f.lat), len(f.lon)), np.float32)
    for src, first in zip(f.sources, f.first_step):
        ds = opened(src.path)
        piece = max(1, (16 << 20) // (8 * src.expvers * f.points))
        for a in range(max(b0, first), min(b1, first + src.steps), piece):
            b = min(a + piece, b1, first + src.steps)
            block[a - b0 : b - b0] = read_source(ds, src, a - first, b - first)
    # (steps, grid points)
    block = block.reshape(b1 - b0, -1)
    out = []
    for sample, attempt in zip(ids, attempts):
        n_steps, start, stations = draw_window(sample, int(attempt))
        # the sample's steps in [b0, b1)
        k0 = max(0, -(-(b0 - start) // stride))
        k1 = min(n_steps, -(-(b1 - start) // stride))
        steps = start + stride * np.arange(k0, k1) - b0
        values = block[steps[:, None], stations]
        out.append((int(sample), k0, values.T.copy()))
    return out


def format_samples(job):
    """Worker: the lines (and ocean labels) of samples [s0, s1)."""
    s0, s1, attempts, offsets, mean, std = job
    f, raw = CTX.field, np.load(CTX.raw_path, mmap_mode="r")
    lines, labels = [], []
    for k, sample in enumerate(range(s0, s1)):
        n_steps, start, stations = draw_window(sample, int(attempts[k]))
        values = raw[offsets[k] : offsets[k + 1]].reshape(len(stations), n_steps)
        ilat, ilon = np.divmod(stations, len(f.lon))
        lat, lon = np.radians(f.lat[ilat]), np.radians(f.lon[ilon])
        coords = np.round(np.stack([np.sin(lat), np.sin(lon), np.cos(lon)], axis=1), 4)
        tod, toy = 2 * np.pi * f.tod[start], 2 * np.pi * f.toy[start]
        phases = np.round([np.sin(tod), np.cos(tod), np.sin(toy), np.cos(toy)], 4)
        data = (values.astype(np.float64) - mean) / std
        description = {"coords": coords.tolist(), "start": phases.tolist()}
        lines.append(dumps({"description": description, "data": data.tolist()}) + "\n")
        # the probe's label (App. C): the first station is over ocean
        if CTX.land_sea_mask is not None:
            labels.append(int(CTX.land_sea_mask[stations[0]] < 0.5))
    return "".join(lines), labels


def extract_windows(pool, splits):
    """Pass 1, every split at once: the windows into a float32 file, redrawing those with a gap."""
    n_times, stride, block = len(CTX.field.seconds), CTX.args.stride, CTX.args.block_steps
    samples = np.arange(len(CTX.codes))
    attempts = np.zeros(len(samples), np.int64)
    rows = pool.imap(draw_plan, range(len(samples)), PLAN_CHUNK)
    plan = np.fromiter(itertools.chain.from_iterable(rows), np.int64).reshape(-1, 3)
    n_stations, n_steps, starts = plan.T
    offsets = np.concatenate([[0], np.cumsum(n_stations * n_steps)])
    raw = np.lib.format.open_memmap(CTX.raw_path, "w+", np.float32, (int(offsets[-1]),))
    todo, skipped = samples, np.zeros(len(splits), np.int64)
    while len(todo):
        first, last = starts[todo], starts[todo] + (n_steps[todo] - 1) * stride
        jobs = []
        for b0 in range(0, n_times, block):
            hit = todo[(first < b0 + block) & (last >= b0)]
            if len(hit):
                jobs.append((b0, min(b0 + block, n_times), hit, attempts[hit]))
        bad = np.zeros(len(samples), bool)
        bar = {"total": len(jobs), "desc": "read", "unit": "job", "leave": False}
        # results may come back in any order
        for cuts in progress(pool.imap_unordered(extract_block, jobs), **bar):
            for sample, k0, values in cuts:
                window = raw[offsets[sample] : offsets[sample + 1]].reshape(n_stations[sample], -1)
                window[:, k0 : k0 + values.shape[1]] = values
                bad[sample] |= not np.isfinite(values).all()
        todo = np.flatnonzero(bad)
        skipped += np.bincount(CTX.codes[todo], minlength=len(splits))
        attempts[todo] += 1
        if attempts.max() > MAX_ATTEMPTS:
            worst = int(np.argmax(attempts))
            where = f"{splits[CTX.codes[worst]]} sample {CTX.indices[worst]}"
            fail(f"{where}: {MAX_ATTEMPTS} windows hold missing '{CTX.field.variable}' values")
        starts[todo] = [draw_window(s, int(attempts[s]))[1] for s in todo]
    raw.flush()
    skipped = dict(zip(splits, skipped.tolist()))
    return SimpleNamespace(offsets=offsets, attempts=attempts, skipped=skipped)


def train_statistics(raw_path, n_values):
    """Mean and std of the first n_values (train), in two passes: no cancellation."""
    raw = np.load(raw_path, mmap_mode="r")[:n_values]
    chunks = lambda: (raw[i : i + 2**24].astype(np.float64) for i in range(0, n_values, 2**24))
    mean = sum(float(c.sum()) for c in chunks()) / n_values
    var = sum(float(np.square(c - mean).sum()) for c in chunks()) / n_values
    return mean, math.sqrt(var)


def write_era5_split(pmap, stage, split, samples, windows):
    """Pass 2: a split's samples to <split>.txt (and <split>.ocean.txt); the fraction labelled
    ocean."""
    jobs = []
    for s0 in samples[::256]:
        s1 = min(s0 + 256, samples[-1] + 1)
        attempts, offsets = windows.attempts[s0:s1], windows.offsets[s0 : s1 + 1]
        jobs.append((s0, s1, attempts, offsets, windows.mean, windows.std))
    path, labels = os.path.join(stage, f"{split}.txt"), []
    bar = {"total": len(jobs), "desc": f"write {split}", "unit": "job", "leave": False}
    with open(path, "w", encoding="utf-8") as f:
        for text, chunk_labels in progress(pmap(format_samples, jobs), **bar):
            f.write(text)
            labels.extend(chunk_labels)
    if CTX.land_sea_mask is not None:
        text = "".join(f"{v}\n" for v in labels)
        atomic_write_text(os.path.join(stage, f"{split}.ocean.txt"), text)
        return round(float(np.mean(labels)), 4)


def both_passes(ctx, counts, stage):
    """The windows of every split, their train mean and std, the ocean fraction of each split."""
    ctx.codes = np.repeat(np.arange(len(counts)), list(counts.values()))
    ctx.indices = np.concatenate([np.arange(n) for n in counts.values()])
    ctx.raw_path = os.path.join(stage, ".raw.npy.tmp")
    init_worker(ctx)
    with Pool(ctx.args.workers, init_worker, (ctx, True)) as pool:
        windows = extract_windows(pool, list(counts))
        windows.t_read = time.time()
        train = int(windows.offsets[counts["train"]])
        windows.mean, windows.std = train_statistics(ctx.raw_path, train)
        if not windows.std > 0:
            fail(f"the training values of '{ctx.field.variable}' have zero spread")
        windows.ocean = {}
        for code, split in enumerate(counts):
            samples = np.flatnonzero(ctx.codes == code)
            windows.ocean[split] = write_era5_split(pool.imap, stage, split, samples, windows)
    os.remove(ctx.raw_path)
    return windows


def parse_args(argv):
    p = base_parser("The temperature dataset from ERA5 netCDF files.", default_out="data/era5")
    add = p.add_argument
    add("files", nargs="+", help="ERA5 netCDF files, concatenated along time")
    add("--variable", default="t2m", help="variable name or CF standard_name (default t2m)")
    stride = "file time steps between sample steps (default 8)"
    add("--stride", type=at_least(1), default=8, help=stride)
    block = "time steps a worker holds at once (default 32)"
    add("--block-steps", type=at_least(1), default=32, help=block)
    mask = "ERA5 lsm file: also write <split>.ocean.txt labels"
    add("--land-sea-mask", metavar="FILE", help=mask)
    min_max = {"type": int_range(), "metavar": "MIN,MAX"}
    stations = "grid points per sample, inclusive (default 60,89)"
    add("--stations", default=(60, 89), help=stations, **min_max)
    add("--steps", default=(8, 15), help="steps per sample, inclusive (default 8,15)", **min_max)
    return p.parse_args(argv)


def check_windows_fit(args, field, starts, gaps):
    lo, hi = args.stations
    if hi > field.points:
        need = f"--stations {lo},{hi} needs up to {hi} distinct grid points"
        fail(f"{args.files[0]}: {need}; found {field.points}")
    lo, hi = args.steps
    if len(starts[hi]) == 0:
        need = f"--steps {lo},{hi} at --stride {args.stride} needs {(hi - 1) * args.stride + 1}"
        found = f"found {len(field.seconds)} with {gaps} gap(s)"
        fail(f"{args.files[0]}: {need} evenly spaced time steps; {found}")


def print_plan(args, field, hours, gaps):
    print(
        f"{field.variable} [{field.units}]: {len(field.sources)} file(s),"
        f" {len(field.seconds)} steps of {hours:g} h from {field.sources[0].first} to"
        f" {field.sources[-1].last} ({gaps} gap(s)), grid {describe_grid(field.grid)}"
    )
    print(
        f"sample steps every {args.stride * hours:g} h; {args.workers} worker(s), each holding"
        f" {args.block_steps} steps ({args.block_steps * field.points * 4 / 2**20:.0f} MiB)"
        " of the field at a time"
    )


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    field = open_field(args.files, args.variable)
    lsm = read_land_sea_mask(args.land_sea_mask, field) if args.land_sea_mask else None
    starts, hours, gaps = window_starts(field.seconds, args.stride, args.steps)
    check_windows_fit(args, field, starts, gaps)
    counts = dict(zip(SPLITS, SIZES[args.size]))
    ctx = SimpleNamespace(args=args, field=field, starts=starts, land_sea_mask=lsm)
    with staged_dataset(args.out, args.force, WRITES) as stage:
        print_plan(args, field, hours, gaps)
        windows = both_passes(ctx, counts, stage)
        mean, std = windows.mean, windows.std
        meta = {
            "seed": args.seed,
            "size": args.size,
            "splits": counts,
            "command": command("prepare/era5.py", argv),
            "variable": field.variable,
            "units": field.units,
            "normalisation": {"mean": mean, "std": std, "units": field.units, "from": "train"},
            "stride": args.stride,
            "time_step_hours": hours,
            "sample_interval_hours": args.stride * hours,
            "files": [
                {"path": s.path, "first": s.first, "last": s.last, "steps": s.steps}
                for s in field.sources
            ],
            "grid": [len(field.lat), len(field.lon)],
            "time_gaps": gaps,
            "windows_skipped": windows.skipped,
            "stations": list(args.stations),
            "steps": list(args.steps),
            "split": "random windows of the same files",
            "phases": (
                "ToD = UTC hour of day / 24; ToY = (day of year - 1 + hour / 24) / 365.25; of the"
                " first step"
            ),
            "digits": "data: 4 significant digits; coords and start: 4 decimals",
            "land_sea_mask": args.land_sea_mask,
            "ocean_fraction": windows.ocean if args.land_sea_mask else None,
        }
        write_meta(stage, meta)
    seconds, total = time.time() - t_start, sum(counts.values())
    print(f"train mean {mean:.3f} std {std:.3f} {field.units}; skipped windows {windows.skipped}")
    print(
        f"wrote {total} samples to {args.out} in {seconds:.1f} s ({total / seconds:.0f} samples/s; "
        f"reading {windows.t_read - t_start:.1f} s, writing {time.time() - windows.t_read:.1f} s)"
    )
    return meta


if __name__ == "__main__":
    one_line_errors()
    main()
