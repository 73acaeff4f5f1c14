"""What the test files share: tiny runs of train.py, a tiny model, hand-written datasets, the
tokenizer's hardest lines."""
import argparse
import datetime
import json
import math
import os
import random
import shutil
from unittest import mock

import netCDF4
import numpy as np
import pytest
import torch
from conftest import run

import common
import era5
import era5_synthetic
import tokenize_numbers
from batching import ar_example, collate, mlm_mask, pack
from model import GPT, GPTConfig, loss_from


# -- train.py's runs
TINY = ["--n_layer=2", "--n_head=2", "--n_embd=32", "--block_size=32", "--device=cpu", "--compile=False",
        "--warmup_iters=0", "--log_interval=1"]


def losses(out_dir, key="loss"):
    """step -> the value of `key` in each log.jsonl row that has it."""
    with open(os.path.join(out_dir, "log.jsonl")) as f:
        return {r["iter"]: r[key] for r in map(json.loads, f) if key in r}


def failed(r, *said):
    """r, a command that failed saying each of `said` on stderr."""
    assert r.returncode != 0 and all(s in r.stderr for s in said), r.stderr
    return r


def one_line_error(r):
    """The one `error: ` line on stderr of a command that failed."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def train_args(data_dir, out, *args):
    """train.py's flags for a tiny run of 2 steps of 8 samples; args override them."""
    return [*TINY, f"--data_dir={data_dir}", f"--out_dir={out}", "--batch_size=8", "--micro_batch_size=8",
            "--max_iters=2", "--eval_interval=2", "--eval_batches=1", "--learning_rate=1e-3", "--min_lr=1e-3",
            *args]


def train(data_dir, out, *args, check=True):
    return run("train.py", *train_args(data_dir, out, *args), check=check)


def torchrun(n, *args, check=True):
    """train.py args on n processes (gloo, one thread each) under torchrun --standalone."""
    return run("-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}", "train.py", *args,
               env={**os.environ, "OMP_NUM_THREADS": "1"}, check=check)


def resumed_losses_match(data, tmp_path, *flags, device="cpu", rel=1e-6, abs=1e-7):
    """Steps 4-6 resumed from step 3's checkpoint and the whole log (rows past step 3 to cut) log
    an uninterrupted run's losses; that run."""
    flags = [f"--device={device}", "--micro_batch_size=4", "--eval_interval=3", "--min_lr=1e-4", "--dropout=0.1",
             "--max_iters=6", "--keep_every=3", *flags]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    r = train(data, straight, *flags)
    os.makedirs(resumed)
    shutil.copy(straight / "ckpt_3.pt", resumed / "ckpt_latest.pt")
    shutil.copy(straight / "log.jsonl", resumed / "log.jsonl")
    out = train(data, resumed, *flags, "--resume").stdout
    assert "resuming at step 3" in out and "changed" not in out
    a, b = losses(straight), losses(resumed)
    for i in (4, 5, 6):
        assert b[i] == pytest.approx(a[i], rel=rel, abs=abs)
    return r


# -- eval.py's runs
EVAL_TINY = ["--n_layer=1", "--n_head=2", "--n_embd=16", "--device=cpu", "--compile=False", "--warmup_iters=0",
             "--log_interval=1", "--max_iters=3", "--eval_interval=3", "--batch_size=4", "--micro_batch_size=4"]


def prepared(tmp_path_factory, name, script, *args, encodings=("xval",)):
    d = str(tmp_path_factory.mktemp(name) / "data")
    run(script, "--size=tiny", "--out", d, "--workers=1", *args)
    for enc in encodings:
        tokenize(d, f"--encoding={enc}")
    return d


def evaluated(*ckpts, extra=()):
    prefix = os.path.join(os.path.dirname(ckpts[0]), "report")
    r = run("eval.py", f"--ckpt={' '.join(ckpts)}", f"--out={prefix}", "--save_predictions=True", *extra)
    with open(prefix + ".json") as f:
        return json.load(f), r.stdout, prefix


# -- a tiny model
V, NUM = 12, 3  # a tiny vocabulary: specials 0..2, [NUM] 3, text tokens 4..11


def tiny(encoding="xval", **kw):
    """The tests' tiny model (2 layers, width 32, vocabulary V; kw: GPTConfig's), in eval mode."""
    torch.manual_seed(0)
    settings = dict(vocab_size=V, num_id=NUM if encoding == "xval" else -1, block_size=32, n_layer=2, n_head=2,
                    n_embd=32, encoding=encoding)
    return GPT(GPTConfig(**{**settings, **kw})).eval()


def random_batch(rng, lengths, packed, causal, row_length=None, mlm_probability=0.3, spread=1.0):
    """A packed or padded batch of AR or MLM examples of random tokens, every third a [NUM] of
    value ~ N(0, spread²)."""
    examples = []
    for n in lengths:
        ids = rng.integers(4, V, int(n))
        ids[::3] = NUM
        values = np.where(ids == NUM, rng.standard_normal(len(ids)) * spread, 1.0).astype(np.float32)
        examples.append(ar_example(ids, values) if causal else mlm_mask(ids, values, mlm_probability, rng))
    return pack(examples, row_length) if packed else collate(examples)


def forward(net, b):
    """The loss sums of a model on a batch as batching lays it out."""
    return net(b["ids"], b["values"], b["targets"], b["target_values"], b["pos"], b["doc"], b["pred"])


def loss_and_grads(net, b):
    loss = loss_from(forward(net, b), 1.0)[0]
    return loss.detach(), torch.autograd.grad(loss, list(net.parameters()))


def sample(T, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, V, (T,), generator=g)
    ids[::3] = NUM
    values = torch.where(ids == NUM, torch.randn(T, generator=g), torch.ones(T))
    return ids, values


# -- samples in memory
class Samples(list):
    """A split in memory: (ids, values) samples, with a Split's lengths."""
    @property
    def lengths(self):
        return np.array([len(s[0]) for s in self])


# -- datasets written by hand
def read_split(folder, split="test"):
    return [json.loads(line) for line in open(f"{folder}/{split}.txt")]


def dataset_bytes(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(folder) for f in files}


# ERA5's grid: latitudes descending, 18° apart so that sin(lat) decodes unambiguously
LAT = np.linspace(81.0, -81.0, 10)
LON = np.arange(20) * 18.0
START = datetime.datetime(2021, 3, 1)


def truth_field():
    """(200 hourly steps, lat, lon) kelvin: a latitude gradient, a daily cycle and noise, as CDS's
    int16 packing leaves it; and that packing."""
    rng = np.random.default_rng(0)
    hours = np.arange(200)[:, None, None]
    lat, lon = LAT[None, :, None], LON[None, None, :]
    t = 250 + 40 * np.cos(np.radians(lat)) + 6 * np.sin(2 * np.pi * hours / 24 + np.radians(lon))
    t = t + rng.normal(0, 2, t.shape)
    scale, offset = (t.max() - t.min()) / 65000, (t.max() + t.min()) / 2
    packed = np.round((t - offset) / scale).astype(np.int16)
    return packed.astype(np.float64) * scale + offset, (packed, scale, offset)


def write_old_layout(path, field, missing=None, expver_from=None):
    """CDS before 2024: netCDF3, int16 t2m(time[, expver], latitude, longitude); `missing` slices
    are fill values; expver_from=k: ERA5 holds steps < k, ERA5T the rest."""
    values, (packed, scale, offset) = field
    packed = packed.copy()
    if missing is not None:
        packed[missing] = -32767
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        for name, axis, units in (("longitude", LON, "degrees_east"), ("latitude", LAT, "degrees_north")):
            ds.createDimension(name, len(axis))
            ds.createVariable(name, "f4", (name,))[:] = axis
            ds[name].units = units
        ds.createDimension("time", None)
        t = ds.createVariable("time", "i4", ("time",))
        t.units, t.calendar = "hours since 1900-01-01 00:00:00.0", "gregorian"
        t[:] = netCDF4.date2num(START, t.units, t.calendar) + np.arange(len(packed))
        dims = ("time", "latitude", "longitude")
        if expver_from is not None:
            ds.createDimension("expver", 2)
            ds.createVariable("expver", "i4", ("expver",))[:] = [1, 5]
            dims = ("time", "expver", "latitude", "longitude")
            rows = np.full((len(packed), 2) + packed.shape[1:], -32767, np.int16)
            rows[:expver_from, 0], rows[expver_from:, 1] = packed[:expver_from], packed[expver_from:]
            packed = rows
        v = ds.createVariable("t2m", "i2", dims, fill_value=-32767)
        v.scale_factor, v.add_offset, v.missing_value = scale, offset, np.int16(-32767)
        v.units, v.long_name = "K", "2 metre temperature"
        v.set_auto_maskandscale(False)
        v[:] = packed
    return path


def sample_line(rng, n_stations, n_steps):
    """One sample as prepare/era5.py writes it: each station warms or cools linearly, plus noise."""
    lat = rng.uniform(-math.pi / 2, math.pi / 2, n_stations)
    lon = rng.uniform(0, 2 * math.pi, n_stations)
    coords = np.round(np.stack([np.sin(lat), np.sin(lon), np.cos(lon)], 1), 4)
    tod, toy = rng.uniform(0, 2 * math.pi, 2)
    start = np.round([math.sin(tod), math.cos(tod), math.sin(toy), math.cos(toy)], 4)
    base, slope = rng.normal(0, 1, (n_stations, 1)), rng.normal(0, 0.4, (n_stations, 1))
    data = base + slope * np.arange(n_steps) + rng.normal(0, 0.02, (n_stations, n_steps))
    record = {"description": {"coords": coords.tolist(), "start": start.tolist()},
              "data": [[float(f"{v:.4g}") for v in row] for row in data]}
    return json.dumps(record, separators=(",", ":"))


def temperatures(tmp_path, monkeypatch):
    monkeypatch.setitem(common.SIZES, "tiny", (2, 2, 2))
    era5_synthetic.main(["--out", str(tmp_path), "--days", "6", "--resolution", "10"])
    era5.main([str(tmp_path / "t2m.nc"), "--out", str(tmp_path / "out"), "--size", "tiny", "--workers", "1"])
    return {s: (tmp_path / "out" / f"{s}.txt").read_text().splitlines() for s in ("train", "val", "test")}


# -- the tokenizer's hardest lines
def generated(make_sample, splits, n):
    """The first n lines of each split as the prepare script writes them."""
    return {split: common.generate_split(make_sample, split, code, n, 1337, 1) for code, split in enumerate(splits)}


UNARY_AFTER = "([{,:=+-*/^<>"
SIGNS = ([f"1{c}-2{c}+3" for c in UNARY_AFTER + ")]}!;|&%?"]  # a sign after every operator and bracket
         + [f"{c}-.5{c}+4e1" for c in UNARY_AFTER + ")]}!"] + [f"{c} -6,{c} +.7" for c in UNARY_AFTER + ")]"]
         + ["-5", "+5", " -5", "1--5", "1+-2", "(2)-3", "2*-3", "x-1", "x -1", "1 -5", "[1, -2]",
            "(- 5)", "(-x)", "(-.x)", "[-.5e-3,+.25E+2]", "((0.0235*0.695)+(0.782-0.561))=0.2373325"])
EXPONENTS = ["1e5", "1E+05", "2.5e-3", "-3e0", ".5e2", "5.e3", "1e", "1e+", "x1e5", "1e5,2e-5",
             "[1e-5,-2E+3]", "1e-0", "7e22", "7e23", "123456789e-30", "1e5x", "-1.5e3x", "(-5x)", "1e5_"]
DECIMALS = [".5", "5.", "..5", "-.5", "+.5", "(.5)", "(-.5)", "a.5", "a1.5", "x..5", "].5", "]-5",
            "[.5,5.,-5.]", "0.", "00012.50", "1234567890123456789.5", "0.1234567890123456789"]
WORDS = ["planet0", "t2m", "x1:2", "'key9':1", '{"planet0":{"m":2.38,"a":1e-05}}', "2m", "1_000", "_5", "a_1 2",
         "'a'", '"b":1', "'9x'", '"a"b"', "'a b'", "abc", "{}", "[?]", "nanx:1", "'nan':1", '"inf"', "x=infinity2",
         "],[", ")+(", "((1*2)+(3-4))=5", "{a:-1.5,b:0.123456789}", "{d:1.53,e:-1.33,a:2.53,i:0.0232}e=-1.33"]
SPACES = ["1 2", "a b", "[1 ,2]", "[1,\t-2]", "(\t-4)", "(  -4)", "  -4", "\t-4", "1  2", "x\x0b-1", "( 1 )",
          "a\n-5", "(\n-5", "1\n2"]
BRACKETS = ["[[1,2],[3,4]]", "[[1,2]],[[-3]]", "[1],[x]", "[1],[-.5]", "[1]],[[2,3]]]", "[1],[ 2]", "1],[", "],[5",
            "[1] ,[2]", "[1],[2e5],[.5]", "[1],[-2],[+3]", "[1],[[-x]]", "[1],,[2]", "[1],[2]x", "[1]],[[[2]]],[3",
            '{"data":[[[1.896,-0.5563],[1.296,-0.7366]],[[1.974,0.01111],[1.485,-0.1105]]]}', "[1],[2],[3]"]
EDGES = [",", "1,2", ",", ",", "5", "1,", ",1", "x", "", "y", ",", "-1,-2", "[1,2]", "", ""]  # lines without numbers

# malformed numbers are errors: test_tokenize_arrays.py checks them apart
MALFORMED = ["+-.5++4e1", "--.5-+4e1", "(--5", "-+5", "1e5.5", "5..5", "1.2.3"]
SIGNS = [s for s in SIGNS if s not in MALFORMED]

UNICODE = ["λ:1.5", "é 2", "x²:2", ".²", "٣:4", "1.5 µ", "²3"]
TIES = ["1.235", "9.995", "999.5e-10", "0.125", "2.675", "1.005e3", "9.995e7", "9.9949e7", "9.995e-9", "9.994e-9",
        "0.0", "-0.0", "-0", "+0", "0e5", "-0.0e-3", "1e-8", "9.99e7", "1e-9", "1.2e9", "-5e8", "99950000",
        "3.4e38", "3.4028235e38", "1e-320", "5e-324"]
NEAR_LIMITS = [repr(float(np.nextafter(x, toward))) for x in (1e-8, 9.99e7, 9.995e-9, 9.995e7, 9.5e-9)
               for toward in (0.0, np.inf)]


def diverging_after(steps):
    """An in-process run whose optimizer, from its `steps`-th step on, leaves NaN in every weight."""
    original, calls = torch.optim.AdamW.step, []

    def step(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls.append(1)
        if len(calls) >= steps:
            with torch.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        p.fill_(float("nan"))
        return result
    return mock.patch.object(torch.optim.AdamW, "step", step)


# numbers joined by text
NUMBERS = ["0", "7", "12", "-3", "+4", "1.5", "-0.25", ".5", "-.5", "5.", "1e5", "-2.5E-3", "+6e+2", "1.e3", ".5e1",
           "1e308", "1e-320", "99999999999", "007"]
GLUE = [",", ", ", "],[", "]],[[", " ", "  ", "(", ")", "=", " = ", "-", " - ", "+", "*", "/", "^", "<", ">", ":",
        "[", "]", "{", "}", '"t":', "x", "t2m", " x ", "_", "\t", "'k':", "e", "E"]


def number_lines(n, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(NUMBERS if k % 2 else GLUE) for k in range(rng.randint(1, 14))) for _ in range(n)]


# -- prepare/text.py's steps
def own_table(tmp_path, content, name="d.csv", **flags):
    """prepare/reading.py's Table of `content`, read with text.py's defaults or `flags`."""
    import reading
    (tmp_path / name).write_text(content)
    settings = {"columns": None, "text": set(), "delimiter": None, "decimal_comma": False}
    return reading.read_files([str(tmp_path / name)], argparse.Namespace(**{**settings, **flags}))


def tokenize(d, *flags):
    """tokenize_numbers.py's command on folder d, in this process."""
    tokenize_numbers.main([str(d), "--workers=1", *flags])


def write(d, train="{a:1.5,b:-2}\n{a:3,b:4e-2}\n", val="{b:0.5}\n"):
    (d / "train.txt").write_text(train)
    (d / "val.txt").write_text(val)


def era5_layout(records, stations=(60, 89), steps=(8, 15)):
    """Every record has the paper's layout (App. C) within the bounds; the station counts and
    lengths."""
    sizes, lengths = set(), set()
    for r in records:
        assert list(r) == ["description", "data"] and list(r["description"]) == ["coords", "start"]
        coords, data = r["description"]["coords"], r["data"]
        assert len(data) == len(coords) == len({tuple(c) for c in coords}) and len(r["description"]["start"]) == 4
        assert all(len(c) == 3 for c in coords) and all(len(row) == len(data[0]) for row in data)
        sizes.add(len(data))
        lengths.add(len(data[0]))
    assert stations[0] <= min(sizes) <= max(sizes) <= stations[1] and steps[0] <= min(lengths) <= max(lengths) <= steps[1]
    return sizes, lengths


# -- tiny models for eval.py and sample.py
def eval_model(data, out, *flags):
    """The best checkpoint of a tiny model (EVAL_TINY, flags override) trained on data."""
    run("train.py", *EVAL_TINY, f"--data_dir={data}", f"--out_dir={out}", *flags)
    return os.path.join(out, "ckpt_best.pt")


def own_model(folder, name, content, *flags, train=("--block_size=128",)):
    """(dataset, checkpoint): content written to folder/name, prepared by prepare/text.py (flags),
    tokenized in xVal, and a tiny model trained on it (train: its flags)."""
    import text
    (folder / name).write_text(content)
    data = str(folder / "data")
    text.main([str(folder / name), "--out", data, *flags])
    tokenize(data)
    return data, eval_model(data, str(folder / "run"), *train)


@pytest.fixture(scope="session")
def own_run(tmp_path_factory):
    """(dataset, checkpoint): scaled JSON records and meta.json as prepare/text.py writes them, and
    a tiny model trained on them."""
    base = tmp_path_factory.mktemp("own")
    rng = np.random.default_rng(0)
    data = os.path.join(base, "data")
    os.makedirs(data)
    for split, count in (("train", 40), ("val", 12), ("test", 12)):
        records = []
        for _ in range(count):
            t = np.cumsum(rng.normal(0, 0.3, 3)).round(2).tolist()
            records.append({"station": str(rng.choice(["a", "b"])), "t": t, "p": round(float(rng.normal()), 2)})
        with open(os.path.join(data, f"{split}.txt"), "w") as f:
            f.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    scales = {"t": {"center": 280.0, "spread": 5.0}, "p": {"center": 1013.0, "spread": 4.0}}
    with open(os.path.join(data, "meta.json"), "w") as f:
        json.dump({"dataset": "text", "splits": ["train", "val", "test"], "scales": scales, "window": 3,
                   "text_keys": ["station"]}, f)
    tokenize(data)
    return data, eval_model(data, os.path.join(base, "run"), "--block_size=64")


def edited(checkpoint, path, change):
    """checkpoint saved at path after change(c) edited it in place."""
    c = torch.load(checkpoint, weights_only=True)
    change(c)
    torch.save(c, path)
    return str(path)


def diverged(checkpoint, path):
    """checkpoint saved at path with NaN in every weight of its number head."""
    return edited(checkpoint, path, lambda c: c["model"].update(
        {k: v.fill_(math.nan) for k, v in c["model"].items() if k.startswith("num_head.")}))
