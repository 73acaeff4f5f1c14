r"""
Load a checkpoint and predict numbers. An MLM model fills in every [?] of a line (all tokens of a
number) in one forward pass. --mask_last or --mask_key mask true numbers instead and show each
prediction beside the truth (eval.py scores them: MSE, R², original units, baselines). A causal
model continues each line until [EOS], a new [NUM] fed back with the number head's value; masked
numbers it generates from the text before them. A line that cannot be predicted is reported and
skipped, and the run exits non-zero.

    echo '0.123*0.456=[?]' | python sample.py --ckpt=out/quickstart/ckpt_best.pt
    python sample.py --ckpt=out/quickstart/ckpt_best.pt --mask_last \
        --input=data/arithmetic_mult3/test.txt
    python sample.py --ckpt=out/own/ckpt_best.pt --input=data/own/test.txt --mask_key=t
"""

import math
import os
import re
import sys
from contextlib import nullcontext

import numpy as np
import torch

from batching import collate, fill_in_example, to_device
from configurator import configure
from dataset import KeyAbsent, masked_numbers, read_lines
from mixture import mixture_mean, mixture_quantile, mixture_sample, mixture_std
from model import GPT, GPTConfig
from tokenize_numbers import (
    ASK,
    EOS_ID,
    TOKENS_PER_NUMBER,
    TextError,
    Vocab,
    encode_pieces,
    number_spans,
    split_text,
)
from util import format_number, load_checkpoint, pick_device, run_main, shell_line

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
# -- end config
# ranges of the settings above (setting_checks.py)
RANGES = dict(
    show="[0, inf)",
    max_lines="[0, inf)",
    batch_size="[1, inf)",
    max_new_tokens="[1, inf)",
    temperature="[0, inf)",
    seed="[0, 4294967295]",
    device="auto | cpu | mps | cuda | cuda:N",
    spread="std | quantiles | none",
    gmm_generate="sample | mean",
)


def load_model(path, device="cpu"):
    """The model (eval mode) and vocabulary of a train.py checkpoint."""
    checkpoint = load_checkpoint(path, device)
    model = GPT(GPTConfig(**checkpoint["model_args"]))
    model.load_state_dict(checkpoint["model"])
    model.to(device).eval()
    vocab = Vocab(checkpoint["text_tokens"], checkpoint["model_args"]["encoding"])
    vocab.unknown = (
        "the model knows only the tokens it was trained on: write it as a number or as one of those"
    )
    return model, vocab, checkpoint["config"]


@torch.no_grad()
def generate(
    model,
    ids,
    values,
    max_new_tokens,
    temperature=0.0,
    generator=None,
    gmm_generate="sample",
    stop=EOS_ID,
):
    """Append up to max_new_tokens tokens (greedy, or sampled at temperature) until the token stop
    (None: never). A new [NUM] takes the number head's value (GMM: a draw, or the mean with
    gmm_generate="mean"), others 1. Returns ids, values, the number head's values and a GMM head's
    outputs (1, 3K) at the new tokens."""
    ids, values, nums, mixtures = list(ids), list(values), [], []
    dev = next(model.parameters()).device
    for _ in range(max_new_tokens):
        x = torch.tensor([ids[-model.cfg.block_size :]], device=dev)
        v = torch.tensor([values[-model.cfg.block_size :]], dtype=torch.float32, device=dev)
        # the last position: (1, V) and (1,), (1, 3K) or None
        logits, num = model.heads(model.trunk(x, v)[0, -1:])
        logits = logits[0].float()
        token = int(
            torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator)
            if temperature > 0
            else logits.argmax()
        )
        if token == stop:
            break
        if num is not None and num.dim() == 2:
            mixtures.append(num.float().cpu())
            num = mixture_sample(num, generator) if gmm_generate == "sample" else mixture_mean(num)
        nums += [float(num[0])] if num is not None else []
        ids.append(token)
        values.append(nums[-1] if num is not None and token == model.cfg.num_id else 1.0)
    return ids, values, nums, mixtures


def predict_masked(model, chunk, device):
    """MLM, one pass: per sample the token ids, values and GMM outputs predicted at its asked
    tokens."""
    batch = to_device(collate([fill_in_example(*s) for s in chunk]), device)
    h = model.trunk(batch["ids"], batch["values"], pos=batch["pos"], doc=batch["doc"])
    # only where something is asked: (N, V), (N,) or (N, 3K)
    logits, num = model.heads(h.flatten(0, 1)[batch["pred"]])
    raw = num.float().cpu() if num is not None and num.dim() == 2 else None
    num = (mixture_mean(num) if raw is not None else num).float().cpu() if num is not None else None
    sizes = [int(np.count_nonzero(ask)) for _, _, ask in chunk]
    split = lambda t: t.split(sizes) if t is not None else [None] * len(chunk)
    return zip(logits.argmax(-1).cpu().split(sizes), split(num), split(raw))


def predict_causal(model, vocab, chunk):
    """A causal model generates each asked number greedily from the text before it: the true text,
    and the asked numbers before it as generated (never their truth). Same yields as predict_masked.
    """
    width = TOKENS_PER_NUMBER[vocab.encoding]
    for ids, values, ask in chunk:
        starts, ids, values = np.flatnonzero(ask)[::width], list(ids), list(values)
        if len(starts) and starts[0] == 0:
            raise ValueError(
                "a causal model cannot predict a number at the very start of a sample (no prompt)"
            )
        tokens, nums, raws = [], [], []
        for s in starts:
            out = generate(model, ids[:s], values[:s], width, gmm_generate="mean", stop=None)
            ids[s : s + width], values[s : s + width] = out[0][s:], out[1][s:]
            tokens, nums, raws = tokens + out[0][s:], nums + out[2], raws + out[3]
        yield (
            torch.tensor(tokens),
            torch.tensor(nums) if nums else None,
            torch.cat(raws) if raws else None,
        )


@torch.no_grad()
def fill_in(model, vocab, samples, device="cpu", batch_size=64, mixtures=None):
    """The numbers asked in samples ((ids, values, ask) from encode()): a list of values per sample
    and counts of 'numbers', 'invalid' (text encodings: NaN, not a number) and 'not_num' (xVal: the
    token head's argmax is not [NUM]; the number head's value is kept). GMM: the mixture mean;
    mixtures receives each sample's (n, 3K)."""
    predictions, counts = [], {"numbers": 0, "invalid": 0, "not_num": 0}
    width = TOKENS_PER_NUMBER[vocab.encoding]
    for start in range(0, len(samples), batch_size):
        chunk = samples[start : start + batch_size]
        for tokens, nums, raw in (
            predict_causal(model, vocab, chunk)
            if model.cfg.causal
            else predict_masked(model, chunk, device)
        ):
            if nums is None:
                values = [
                    vocab.decode_number(tokens[s : s + width].numpy())
                    for s in range(0, len(tokens), width)
                ]
                counts["invalid"] += sum(map(math.isnan, values))
            else:  # xVal: the number head's value, whatever the token head says
                values = nums.tolist()
                counts["not_num"] += int((tokens != vocab.num_id).sum())
            counts["numbers"] += len(values)
            predictions.append(values)
            if raw is not None and mixtures is not None:
                mixtures.append(raw)
    return predictions, counts


def detokenize(ids, values, vocab):
    """Token ids back to text (whitespace is not kept); numbers as 6 significant digits."""
    out, i, width = [], 0, TOKENS_PER_NUMBER[vocab.encoding]
    starts = set(s for s, _ in number_spans(ids, vocab))
    while i < len(ids):
        if i in starts:
            value = (
                values[i] if vocab.encoding == "xval" else vocab.decode_number(ids[i : i + width])
            )
            # the implied comma
            out.append(("," if i - width in starts else "") + format_number(value))
            i += width
        else:
            token = vocab.itos[ids[i]]
            # a stray number token
            out.append(token if not vocab.is_number([ids[i]])[0] else f"<{token}>")
            i += 1
    return "".join(out)


def encode_line(line, where, vocab, block_size, causal=False):
    """(ids, values, ask, truths, text with [?]) of one input line; a TextError naming the line if
    the model cannot predict it."""
    spaced = re.search(r"\[\s*\?\s*\]", line.replace(ASK, ""))
    if spaced:
        raise TextError(
            f"{where}: {spaced.group()!r} looks like the marker {ASK}; write {ASK} without spaces"
        )
    truths, spans = [], []
    if mask_last or mask_key:  # the chosen numbers become [?], in the pieces and in the text shown
        pieces = split_text(line, where, spans=spans)
        groups = masked_numbers(line, pieces, where, [mask_key] if mask_key else [], mask_all)
        if not next(iter(groups.values())):
            raise KeyAbsent(
                f"{where}: no number under key {mask_key!r} (--mask_key names a top-level key)"
            )
        numbers = [j for j, (kind, _) in enumerate(pieces) if kind == "num"]
        for j in reversed([numbers[i] for i in next(iter(groups.values()))]):
            truths.insert(0, pieces[j][1])
            pieces[j], line = ("ask", None), line[: spans[j][0]] + ASK + line[spans[j][1] :]
    else:
        pieces = split_text(line, where, not causal)
    ids, values, ask = encode_pieces(pieces, vocab, where)
    if not causal and not ask.any():
        raise TextError(
            f"{where}: no {ASK} in the line: write {ASK} where a number is to be predicted (or use"
            " --mask_last or --mask_key)"
        )
    if len(ids) > block_size:
        raise TextError(
            f"{where}: {len(ids)} tokens, more than the model's block_size {block_size}"
        )
    return ids, values, ask, truths, line


def main():
    configure(globals(), __file__)
    for path in (ckpt, input):
        if path != "-" and not os.path.exists(path):
            raise SystemExit(f"error: {path} not found")
    if mask_all and not mask_key:
        raise SystemExit(
            "error: --mask_all=True needs --mask_key=KEY (the key whose numbers are all masked)"
        )
    name = "stdin" if input == "-" else input
    try:
        with open(input, "rb") if input != "-" else nullcontext(sys.stdin.buffer) as f:
            lines = [(i + 1, l) for i, l in enumerate(read_lines(f, name)) if l.strip()][
                : max_lines or None
            ]
    except (TextError, IsADirectoryError) as e:
        raise SystemExit(f"error: {e}")
    if not lines:
        raise SystemExit(
            f"error: {name}: no lines to predict; expected one sample per line, e.g."
            f" 0.123*0.456={ASK}"
        )
    dev = pick_device(device)
    torch.manual_seed(seed)
    model, vocab, _ = load_model(ckpt, dev)
    causal = model.cfg.causal and not (mask_last or mask_key)
    lines = lines[:show] if causal else lines  # generation: only the lines shown
    samples, truths, texts, failed, absent = [], [], [], 0, []
    for number, line in lines:
        try:
            ids, values, ask, truth, text = encode_line(
                line, f"{name}:{number}", vocab, model.cfg.block_size, causal
            )
        except KeyAbsent as e:
            absent.append(str(e))
            continue
        except TextError as e:  # this line is reported and counted; the others are still predicted
            print(f"error: {e}", file=sys.stderr)
            failed += 1
            continue
        samples.append((ids, values, ask))
        truths.append(truth)
        texts.append(text)
    generator = torch.Generator(device=dev).manual_seed(seed)
    for ids, values, _ in samples if causal else []:
        print(
            detokenize(
                *generate(model, ids, values, max_new_tokens, temperature, generator, gmm_generate)[
                    :2
                ],
                vocab,
            )
        )
    if samples and not causal:
        mixtures = []
        predictions, counts = fill_in(model, vocab, samples, dev, batch_size, mixtures)
        for i, (text, values) in enumerate(list(zip(texts, predictions))[:show]):
            shown = list(map(format_number, values))
            # a GMM head: the mixture's mean±std, or [5%|50%|95%] quantiles
            if mixtures and spread == "std":
                shown = [
                    f"{format_number(m)}±{format_number(s)}"
                    for m, s in zip(
                        mixture_mean(mixtures[i]).tolist(), mixture_std(mixtures[i]).tolist()
                    )
                ]
            if mixtures and spread == "quantiles":
                shown = [
                    "["
                    + "|".join(
                        format_number(float(mixture_quantile(num[None], p)))
                        for p in (0.05, 0.5, 0.95)
                    )
                    + "]"
                    for num in mixtures[i]
                ]
            # [?][?]: two numbers, not one
            text = re.sub(re.escape(ASK) + f"(?={re.escape(ASK)})", ASK + ",", text)
            for v in shown:
                text = text.replace(ASK, v, 1)
            print(
                text
                + (f"  (true: {', '.join(map(format_number, truths[i]))})" if truths[i] else "")
            )
        share = counts["invalid" if vocab.encoding != "xval" else "not_num"] / max(
            1, counts["numbers"]
        )
        what = (
            f"{counts['invalid']} invalid"
            if vocab.encoding != "xval"
            else f"token head not [NUM] at {counts['not_num']}"
        )
        print(f"{counts['numbers']} numbers predicted, {what} ({share:.2%})")
        if mask_last or mask_key:  # scoring is eval.py's, with baselines and original units
            print(
                "score a dataset's test split: "
                + shell_line(
                    "python",
                    "eval.py",
                    f"--ckpt={ckpt}",
                    *([f"--mask_key={mask_key}"] if mask_key else []),
                )
            )
    if absent:  # with every line absent, the key is not a key of the records
        print(
            f"{'error' if not samples else 'note'}: {len(absent)} of {len(lines)} lines have no"
            f" number under key {mask_key!r}, left out (the first: {absent[0]})",
            file=sys.stderr,
        )
    if failed or not samples:
        raise SystemExit(
            f"error: {failed or len(absent)} of {len(lines)} lines could not be predicted (reported"
            " above)"
        )


if __name__ == "__main__":
    run_main(main)
