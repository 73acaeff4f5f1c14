"""
Tokenizer speed: lines per CPU second of one process (one core) on the first --lines lines of
<data_dir>/train.txt, medians of --repeats, for xVal, each text encoding and all five in one pass;
with --official, the official xVal tokenizer (PolymathicAI/xVal: xval/preprocess.py's tokenize_fnc
with its tokenizer.json, through transformers) on the same lines, timed in turn with ours.

    python tools/bench_tokenize.py data/planets --lines 400
    # beside the official tokenizer (needs transformers)
    python tools/bench_tokenize.py data/planets --lines 400 --official /path/to/xVal
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dataset import line_chunks  # noqa: E402
from tokenize_numbers import ENCODINGS, build_text_vocab, encode_lines  # noqa: E402


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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("data_dir", help="a dataset folder with train.txt")
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
