"""
Tokenizer speed: lines per CPU second of one process (one core) on the first --lines lines of
<data_dir>/train.txt, medians of --repeats, for xVal, each text encoding and all five in one pass;
with --official, the official xVal tokenizer (PolymathicAI/xVal: xval/preprocess.py's tokenize_fnc
with its tokenizer.json, through transformers) on the same lines, timed in turn with ours.

    python tools/bench_tokenize.py data/planets --lines 400
    # beside the official tokenizer (needs transformers)
    python tools/bench_tokenize.py data/planets --lines 400 --official /path/to/xVal

With --own-csv ROWS, your own data at scale: prepare/text.py, then tokenize_numbers.py, on a
generated CSV of ROWS hourly rows (a station name and five numbers, seeded), beside pandas'
read_csv + to_json(lines=True) of the same file (needs pandas); wall seconds and peak memory of
each process, and with --repeats the medians; --window N prepares windows of N rows.

    python tools/bench_tokenize.py --own-csv 1000000 --repeats 3
    python tools/bench_tokenize.py --own-csv 1000000 --window 8
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tokenize_arrays import build_text_vocab, encode_lines, line_chunks  # noqa: E402
from dataset import ENCODINGS  # noqa: E402


def cpu_seconds(fn):
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def official_tokenizer(checkout):
    """tokenize_fnc of the official repository and its tokenizer, as its README loads them."""
    sys.path.insert(0, checkout)
    from transformers import PreTrainedTokenizerFast
    from xval.preprocess import tokenize_fnc

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=os.path.join(checkout, "tokenizer.json"),
        bos_token="[END]",
        eos_token="[END]",
        mask_token="[MASK]",
        pad_token="[PAD]",
    )
    return lambda lines: [tokenize_fnc(line, tokenizer) for line in lines]


def write_stations(path, rows, seed=0):
    """A CSV of hourly rows: station, hour, temp, pressure, humidity, wind."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        f.write("station,hour,temp,pressure,humidity,wind\n")
        for start in range(0, rows, 1_000_000):
            n = min(rows, start + 1_000_000) - start
            hour = (start + np.arange(n)) % 24
            columns = [
                np.array(["north", "coast", "valley", "hill"])[rng.integers(0, 4, n)],
                hour,
                np.round(10 + 6 * np.sin(hour / 24 * 2 * np.pi) + rng.normal(0, 2, n), 1),
                np.round(1013 + rng.normal(0, 5, n), 1),
                rng.integers(20, 100, n),
                np.round(np.abs(rng.normal(3, 2, n)), 2),
            ]
            f.write("".join(map("{},{},{},{},{},{}\n".format, *(c.tolist() for c in columns))))


PANDAS = (
    "import pandas, sys;"
    " pandas.read_csv(sys.argv[1]).to_json(sys.argv[2], orient='records', lines=True)"
)


# runs a command and prints its wall seconds and peak memory (KB): a small process of its own, so
# that the peak is the command's, not that of this one, which forked it
MEASURE = (
    "import resource, subprocess, sys, time; t = time.perf_counter();"
    " r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL);"
    " print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);"
    " sys.exit(r.returncode)"
)


def timed(command):
    """(wall seconds, peak memory in MB) of a command run as its own process."""
    r = subprocess.run([sys.executable, "-c", MEASURE, *command], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"error: {' '.join(command)} failed: {r.stderr[-300:]}")
    wall, peak = r.stdout.split()
    return float(wall), int(peak) / 1024


def own_csv(rows, window, repeats):
    """prepare/text.py and tokenize_numbers.py on ROWS generated rows, beside pandas."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as folder:
        csv, out = os.path.join(folder, "stations.csv"), os.path.join(folder, "out")
        write_stations(csv, rows)
        flags = ["--window", str(window)] if window > 1 else []
        runs = {
            "pandas read_csv + to_json": [sys.executable, "-c", PANDAS, csv, csv + ".jsonl"],
            "prepare/text.py": [
                sys.executable,
                f"{root}/prepare/text.py",
                csv,
                "--out",
                out,
                "--force",
                *flags,
            ],
            "tokenize_numbers.py": [
                sys.executable,
                f"{root}/tokenize_numbers.py",
                out,
                "--encoding",
                "xval",
                "--workers",
                "1",
            ],
        }
        results = {name: [] for name in runs}
        for _ in range(repeats):
            for name, command in runs.items():
                results[name].append(timed(command))
        size = os.path.getsize(csv) / 1e6
    print(
        f"{rows:,} rows ({size:.0f} MB){f', --window {window}' if window > 1 else ''};"
        f" medians of {repeats}\n\n| step | wall | peak memory | × pandas |\n|---|---|---|---|"
    )
    base = statistics.median(t for t, _ in results["pandas read_csv + to_json"])
    for name, runs in results.items():
        wall, peak = (statistics.median(v) for v in zip(*runs))
        print(f"| {name} | {wall:.1f} s | {peak:.0f} MB | {wall / base:.1f} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("data_dir", nargs="?", help="a dataset folder with train.txt")
    p.add_argument("--own-csv", type=int, metavar="ROWS", help="time prepare/text.py on ROWS rows")
    p.add_argument("--window", type=int, default=1, help="with --own-csv: windows of N rows")
    p.add_argument(
        "--lines", type=int, default=400, help="lines of train.txt to time (default 400)"
    )
    p.add_argument(
        "--repeats", type=int, default=3, help="timed repeats; medians are printed (default 3)"
    )
    p.add_argument(
        "--official",
        metavar="DIR",
        help="a checkout of PolymathicAI/xVal (xval/preprocess.py, tokenizer.json)",
    )
    args = p.parse_args(argv)
    if args.own_csv:
        return own_csv(args.own_csv, args.window, args.repeats)
    if not args.data_dir:
        p.error("a data_dir, or --own-csv ROWS")
    path = os.path.join(args.data_dir, "train.txt")
    lines = next(line_chunks(path, args.lines))[1]
    text_tokens = build_text_vocab(lines, path)
    numbers = int(encode_lines(lines, text_tokens, ["xval"], path)["xval"][3].sum())
    runs = {
        enc: lambda encs=[enc]: encode_lines(lines, text_tokens, encs, path) for enc in ENCODINGS
    }
    runs["all five, one pass"] = lambda: encode_lines(lines, text_tokens, list(ENCODINGS), path)
    if args.official:
        official = official_tokenizer(args.official)
        runs["official xVal"] = lambda: official(lines)
    for fn in runs.values():  # warm: the tables of each encoding are built once per process
        fn()
    seconds = {name: [] for name in runs}
    for _ in range(args.repeats):  # in turn, so that every tokenizer meets the same machine
        for name, fn in runs.items():
            seconds[name].append(cpu_seconds(fn))
    rate = {name: len(lines) / statistics.median(s) for name, s in seconds.items()}
    print(
        f"{path}: {len(lines)} lines, {numbers / len(lines):.1f} numbers per line; lines per CPU"
        f" second, medians of {args.repeats}"
    )
    print(
        "\n| tokenizer | lines/s | numbers/s |"
        + (" × official |" if args.official else "")
        + "\n|---|---|---|"
        + ("---|" if args.official else "")
    )
    for name, r in rate.items():
        print(
            f"| {name} | {r:,.0f} | {r * numbers / len(lines):,.0f} |"
            + (f" {r / rate['official xVal']:.1f}× |" if args.official else "")
        )


if __name__ == "__main__":
    main()
