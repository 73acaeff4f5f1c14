"""Tokenize a prepared dataset into arrays of the paper's five number encodings, or its statistics.

    python tokenize_numbers.py data/arithmetic_ops2 --encoding xval   # a dataset's arrays
    python tokenize_numbers.py data/planets --stats                   # token statistics table

tokenize_line.py tokenizes one sample, tokenize_arrays.py many; dataset.py holds the vocabulary.
"""

import argparse
import os
import sys
import time

from dataset import ENCODINGS
from tokenize_arrays import write_arrays
from util import TextError


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data_dir", help="a folder written by a prepare/ script")
    p.add_argument("--encoding", default="xval", choices=[*ENCODINGS, "all"])
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--stats", action="store_true", help="print tokens/sample of every encoding")
    p.add_argument("--rebuild-vocab", action="store_true", help="rebuild vocab.json from train.txt")
    plain = "DIR holds <split>.txt files of your own: write its meta.json and tokenize"
    p.add_argument("--plain-text", action="store_true", help=plain)
    args = p.parse_args(argv)
    encodings = list(ENCODINGS) if args.encoding == "all" or args.stats else [args.encoding]
    t0 = time.time()
    try:
        table = write_arrays(
            args.data_dir, encodings, args.workers, args.rebuild_vocab, args.plain_text
        )
    except (TextError, OSError) as e:
        sys.exit(f"error: {getattr(e, 'strerror', None) or e}")
    # Ctrl-C: one line, and the exit code shells expect
    except KeyboardInterrupt:
        print(f"interrupted: {args.data_dir} is as it was before this run", file=sys.stderr)
        sys.exit(130)
    if args.stats:
        print("\n| encoding | tokens/sample mean | max | numbers/sample mean | max |")
        print("|---|---|---|---|---|")
        for s in (s for s in table if s["split"] == "train"):
            print(
                f"| {s['encoding']} | {s['tokens_per_sample_mean']} | {s['tokens_per_sample_max']}"
                f" | {s['numbers_per_sample_mean']} | {s['numbers_per_sample_max']} |"
            )
    print(f"done in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
