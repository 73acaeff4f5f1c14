"""
Load a checkpoint and predict numbers: an MLM model fills in every [?] of a line at once, a causal
one continues each line until [EOS]; --mask_last or --mask_key mask true numbers and show each
prediction beside the truth. Your own data is in its file's units (prepare/README.md).

    echo '0.123*0.456=[?]' | python sample.py --ckpt=out/quickstart/ckpt_best.pt
    python sample.py --ckpt=out/own/ckpt_best.pt --input=data/own/test.txt --mask_key=t
"""

import shlex
import sys
from contextlib import nullcontext

import torch

from configurator import configure
from dataset import decoded_lines
from predict import detokenize, encode_line, fill_in, filled, generate, in_own_units, load_model
from predict import KeyAbsent, units_of
from util import TextError, format_number, pick_device, run_main

# -- config: python sample.py --help
ckpt = "out/quickstart/ckpt_best.pt"  # checkpoint written by train.py
input = "-"  # a text file with one sample per line, or - for standard input
mask_last = False  # predict the last number of every line and report errors against it
mask_key = ""  # predict the last number under this JSON key of every record, with its error
mask_all = False  # with mask_key: predict every number under the key (at once), not only the last
show = 10  # lines to print (all predictions still count towards the metrics)
max_lines = 0  # read at most this many lines; 0 = all
batch_size = 64
max_new_tokens = 2000  # generation (causal models) stops here if no [EOS] came
temperature = 0.0  # generation: 0 = greedy
seed = 1337
device = "auto"
spread = "std"  # GMM models print mean±std (std), [5%|50%|95%] (quantiles) or the mean (none)
gmm_generate = "sample"  # GMM models, generation: feed back a draw (sample) or the mean (mean)
scaled = False  # your own data: numbers in and out as its text files write them, not in its units
data_dir = ""  # your own data: the dataset whose meta.json scales the numbers; default: the model's
# -- end config
RANGES = dict(
    batch_size="[1, inf)",
    max_new_tokens="[1, inf)",
    seed="[0, 4294967295]",
    device="auto | cpu | mps | cuda | cuda:N",
    spread="std | quantiles | none",
    gmm_generate="sample | mean",
)


def print_filled(model, vocab, done, dev, mask):
    """Print each line with its [?] filled in, and how many numbers were predicted."""
    samples = [sample for sample, *_ in done]
    predictions, counts, mixtures = fill_in(model, vocab, samples, dev, batch_size)
    for i, (_, truths, text, scales) in enumerate(done[:show]):
        text = filled(text, predictions[i], mixtures[i] if mixtures else None, spread, scales)
        true = ", ".join(map(format_number, truths))
        print(text + (f"  (true: {true})" if truths else ""))
    invalid, not_num = counts["invalid"], counts["not_num"]
    what = f"{invalid} invalid"
    if vocab.encoding == "xval":
        what = f"token head not [NUM] at {not_num}" + f", {invalid} not finite" * bool(invalid)
    share = (invalid + not_num) / max(1, counts["numbers"])
    print(f"{counts['numbers']} numbers predicted, {what} ({share:.2%})")
    if mask is not None:
        keyed = [f"--mask_key={mask_key}"] if mask_key else []
        hint = shlex.join(["python", "eval.py", f"--ckpt={ckpt}", *keyed])
        print(f"score a dataset's test split: {hint}")


def main():
    configure(globals(), __file__)
    if mask_all and not mask_key:
        raise SystemExit("error: --mask_all=True needs --mask_key=KEY")
    dev = pick_device(device)
    model, vocab, config = load_model(ckpt, dev)
    name = "stdin" if input == "-" else input
    try:
        with open(input, "rb") if input != "-" else nullcontext(sys.stdin.buffer) as f:
            lines = [(i, line) for i, line in enumerate(decoded_lines(f, name), 1) if line.strip()]
    except (TextError, OSError) as e:
        raise SystemExit(f"error: {e}")
    if not lines:
        raise SystemExit(f"error: {name}: no lines to predict; expected one sample per line")
    lines = lines[: max_lines or None]
    units = units_of(
        ckpt, data_dir or str(config.get("data_dir")), scaled, input, mask_key, mask_all
    )
    # None: predict the [?] of each line; "": mask its last number; a key: the last under it
    mask = mask_key or ("" if mask_last else None)
    causal = model.cfg.causal and mask is None
    # generation: only the lines shown
    lines = lines[:show] if causal else lines
    size = model.cfg.block_size
    # encode_line's answer per line; the lines without the key; how many failed
    done, absent, failed = [], [], 0
    for k, (number, line) in enumerate(lines):
        where = f"{name}:{number}"
        if units and units.get("levels"):
            units = dict(units, level=units["levels"][k])
        try:
            done.append(encode_line(line, where, vocab, size, causal, mask, mask_all, units))
        except KeyAbsent as e:
            absent.append(str(e))
        except TextError as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
    generator = torch.Generator(device=dev).manual_seed(seed)
    for (ids, values, _), *_ in done if causal else []:
        out = generate(model, ids, values, max_new_tokens, temperature, generator, gmm_generate)
        text = detokenize(out[0], out[1], vocab)
        print(in_own_units(text, name, units) if units else text)
    if done and not causal:
        print_filled(model, vocab, done, dev, mask)
    if absent:
        print(
            f"{'note' if done else 'error'}: {len(absent)} of {len(lines)} lines have no"
            f" number under key {mask_key!r}, left out (the first: {absent[0]})",
            file=sys.stderr,
        )
    if failed or not done:
        failed = failed or len(absent)
        raise SystemExit(f"error: {failed} of {len(lines)} lines could not be predicted (above)")


if __name__ == "__main__":
    run_main(main)
