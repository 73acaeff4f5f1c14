"""
Load a checkpoint and predict numbers.

Fill-in (MLM models, paper §2.2): write [?] where a number should be predicted; every [?] of a
line is masked at once (all of its tokens, for text encodings) and predicted in one forward pass.

    echo '0.123*0.456=[?]' | python sample.py --ckpt=out/quickstart/ckpt_best.pt
    python sample.py --ckpt=out/quickstart/ckpt_best.pt --input=data/arithmetic_mult3/test.txt --mask_last

--mask_last masks the last number of each line instead (the answer of an arithmetic or look-up
sample), keeps the true value, and reports MSE and R² over the file. A causal model is not given
a mask: with --mask_last it generates the last number from the text before it.

A line that cannot be predicted (a token the model never saw, more tokens than its block_size, a
number beyond float32 for xVal) is reported with its line number and skipped; the rest are
predicted, and the command ends with the count of such lines and a non-zero exit status.

Generation (causal models): each line is a prompt; tokens are generated greedily (or sampled with
--temperature) until [EOS]; a generated [NUM] takes the number head's value and is fed back.

A Gaussian-mixture number head (train.py --num_head=gmm) predicts a distribution: fill-in prints
each number as mean±std (--spread=std) or as its 5%, 50% and 95% quantiles (--spread=quantiles);
--mask_last scores the mixture mean. Generation feeds back a draw from the mixture
(--gmm_generate=sample, seeded) or its mean (--gmm_generate=mean).
"""
import math
import os
import sys
from contextlib import nullcontext

import numpy as np
import torch

from batching import collate, fill_in_example, to_device
from configurator import configure
from model import GPT, GPTConfig, mixture_mean, mixture_quantile, mixture_sample, mixture_std
from tokenize_numbers import (ASK, EOS_ID, TOKENS_PER_NUMBER, TextError, Vocab, encode, encode_pieces,
                              number_spans, read_lines, split_text)
from util import format_number, load_checkpoint, mse, pick_device, r_squared

# -- config: python sample.py --help
ckpt = "out/quickstart/ckpt_best.pt"  # checkpoint written by train.py
input = "-"  # a text file with one sample per line, or - for standard input
mask_last = False  # predict the last number of every line and report errors against it
show = 10  # lines to print (all predictions still count towards the metrics)
max_lines = 0  # read at most this many lines; 0 = all
batch_size = 64
max_new_tokens = 2000  # generation (causal models) stops here if no [EOS] came
temperature = 0.0  # generation: 0 = greedy
seed = 1337
device = "auto"
spread = "std"  # GMM models: print a number as mean±std (std), as [5%|50%|95%] quantiles (quantiles) or the mean alone (none)
gmm_generate = "sample"  # GMM models, generation: feed back a draw from the mixture (sample) or its mean (mean)
# -- end config


def load_model(path, device="cpu"):
    """The model (eval mode) and vocabulary of a train.py checkpoint."""
    checkpoint = load_checkpoint(path, device)
    model = GPT(GPTConfig(**checkpoint["model_args"]))
    model.load_state_dict(checkpoint["model"])
    model.to(device).eval()
    vocab = Vocab(checkpoint["text_tokens"], checkpoint["model_args"]["encoding"])
    return model, vocab, checkpoint["config"]


@torch.no_grad()
def fill_in(model, vocab, samples, device="cpu", batch_size=64, mixtures=None):
    """
    Predict the numbers marked in each sample. samples: (ids, values, ask) triples from encode().
    Returns one list of predicted values per sample (in order of the marked numbers) and counts:
    'numbers', 'invalid' (text encodings: token runs that are not a number, predicted as NaN) and
    'not_num' (xVal: the token head's argmax is not [NUM]; the number head's value is kept).
    A GMM head's value is its mixture mean; a list given as mixtures receives each sample's raw
    mixture outputs, a (numbers, 3K) tensor, for the distribution (model.mixture_*).
    """
    if model.cfg.causal:
        return fill_in_causal(model, vocab, samples, device, mixtures)
    predictions, counts = [], {"numbers": 0, "invalid": 0, "not_num": 0}
    width = TOKENS_PER_NUMBER[vocab.encoding]
    for start in range(0, len(samples), batch_size):
        chunk = samples[start:start + batch_size]
        batch = to_device(collate([fill_in_example(*s) for s in chunk]), device)
        h = model.trunk(batch["ids"], batch["values"], pos=batch["pos"], doc=batch["doc"])
        asked = torch.zeros(batch["ids"].shape, dtype=torch.bool)
        for b, (_, _, ask) in enumerate(chunk):
            asked[b, :len(ask)] = torch.from_numpy(np.asarray(ask, bool))
        logits, num = model.heads(h[asked.to(h.device)])  # the heads only where something is asked
        gmm = num is not None and num.dim() == 2  # (N, 3K) mixture outputs
        if gmm:
            raw = torch.zeros(*asked.shape, num.shape[-1])
            raw[asked] = num.float().cpu()
            num = mixture_mean(num)
        tokens = torch.full(asked.shape, -1, dtype=torch.long)
        tokens[asked] = logits.argmax(-1).cpu()
        values_out = torch.zeros(asked.shape)
        if num is not None:
            values_out[asked] = num.float().cpu()
        for b, (ids, _, ask) in enumerate(chunk):
            starts = [s for s, _ in number_spans(ids, vocab) if ask[s]]
            values = []
            for s in starts:
                if num is not None:
                    values.append(float(values_out[b, s]))
                    counts["not_num"] += int(tokens[b, s] != vocab.num_id)
                else:
                    values.append(vocab.decode_number(tokens[b, s:s + width].numpy()))
                    counts["invalid"] += int(math.isnan(values[-1]))
            counts["numbers"] += len(starts)
            predictions.append(values)
            if gmm and mixtures is not None:
                mixtures.append(raw[b, starts])
    return predictions, counts


@torch.no_grad()
def fill_in_causal(model, vocab, samples, device="cpu", mixtures=None):
    """
    fill_in for a causal model, by generation: each asked number is generated greedily from the
    text before it (token by token for text encodings; for xVal the token head's argmax and the
    number head's value at the last position). The text between asked numbers is the true text,
    and an asked number generated earlier in the sample is fed back as generated, so no asked
    number is ever seen by the model before it is predicted. Same returns as fill_in.
    """
    predictions, counts = [], {"numbers": 0, "invalid": 0, "not_num": 0}
    width = TOKENS_PER_NUMBER[vocab.encoding]
    for ids, values, ask in samples:
        ids, values = torch.tensor(ids, dtype=torch.long), torch.tensor(values, dtype=torch.float32)
        starts = [s for s, _ in number_spans(ids.numpy(), vocab) if ask[s]]
        if starts and starts[0] == 0:
            raise ValueError("a causal model cannot predict a number at the very start of a sample (no prompt)")
        predicted, raws = [], []
        for s in starts:
            for p in range(s, s + width):  # predict token p from tokens < p, then feed it back
                h = model.trunk(ids[None, :p].to(device), values[None, :p].to(device))
                logits, num = model.heads(h[0, -1:])
                ids[p] = int(logits.argmax(-1))
                if num is not None and num.dim() == 2:  # a GMM head: (1, 3K) mixture outputs
                    raws.append(num.float().cpu())
                    num = mixture_mean(num)
                if num is not None:
                    values[p] = float(num[0]) if ids[p] == vocab.num_id else 1.0
            if vocab.encoding == "xval":
                predicted.append(float(num[0]))  # the number head's value, whatever the token head says
                counts["not_num"] += int(ids[s] != vocab.num_id)
            else:
                predicted.append(vocab.decode_number(ids[s:s + width].numpy()))
                counts["invalid"] += int(math.isnan(predicted[-1]))
        counts["numbers"] += len(starts)
        predictions.append(predicted)
        if raws and mixtures is not None:
            mixtures.append(torch.cat(raws))
    return predictions, counts


@torch.no_grad()
def generate(model, vocab, ids, values, max_new_tokens, temperature=0.0, generator=None, gmm_generate="sample"):
    """
    Autoregressive generation: append tokens until [EOS]; [NUM] takes the number head's value
    (a GMM head's: a draw from its mixture with gmm_generate="sample", else its mean).
    """
    ids, values = list(ids), list(values)
    device = next(model.parameters()).device
    for _ in range(max_new_tokens):
        window = slice(-model.cfg.block_size, None)
        x = torch.tensor([ids[window]], device=device)
        v = torch.tensor([values[window]], dtype=torch.float32, device=device)
        logits, num = model(x, v)
        logits = logits[0, -1].float()
        if temperature > 0:
            token = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator))
        else:
            token = int(logits.argmax())
        if token == EOS_ID:
            break
        ids.append(token)
        if num is not None and num.dim() == 3:  # a GMM head: (1, T, 3K), read at the last position only
            num = num[:, -1:]
            num = mixture_sample(num, generator) if gmm_generate == "sample" else mixture_mean(num)
        values.append(float(num[0, -1]) if (num is not None and token == vocab.num_id) else 1.0)
    return ids, values


def detokenize(ids, values, vocab):
    """Token ids back to text (whitespace is not kept); numbers as 6 significant digits."""
    out, i, width = [], 0, TOKENS_PER_NUMBER[vocab.encoding]
    starts = set(s for s, _ in number_spans(ids, vocab))
    while i < len(ids):
        if i in starts:
            value = values[i] if vocab.encoding == "xval" else vocab.decode_number(ids[i:i + width])
            out.append(("," if i - width in starts else "") + format_number(value))  # the implied comma
            i += width
            continue
        token = vocab.itos[ids[i]]
        out.append(token if not vocab.is_number([ids[i]])[0] else f"<{token}>")  # a stray number token
        i += 1
    return "".join(out)


def mask_last_number(line, where):
    """The line's pieces with its last number replaced by [?], the true value, and the text with [?]."""
    spans = []
    pieces = split_text(line, where, spans=spans)
    nums = [j for j, (kind, _) in enumerate(pieces) if kind == "num"]
    if not nums:
        raise TextError(f"{where}: --mask_last but the line has no number")
    j = nums[-1]
    truth = pieces[j][1]
    pieces[j] = ("ask", None)
    a, b = spans[j]
    return pieces, truth, line[:a] + ASK + line[b:]


def encode_line(line, where, vocab, block_size, causal=False):
    """
    (ids, values, ask, truth, text with [?]) of one input line, with --mask_last's masking; a
    TextError naming the line if the model cannot predict it.
    """
    truth, text = None, line
    if mask_last:
        pieces, truth, text = mask_last_number(line, where)
        ids, values, ask = encode_pieces(pieces, vocab, where)
    else:
        ids, values, ask = encode(line, vocab, where, allow_ask=not causal)
    if len(ids) > block_size:
        raise TextError(f"{where}: {len(ids)} tokens, more than the model's block_size {block_size}")
    return ids, values, ask, truth, text


def format_spread(num, spread):
    """A GMM head's predictions num (n, 3K) as text: 'mean±std' or '[q5%|median|q95%]' each."""
    if spread == "std":
        return [f"{format_number(m)}±{format_number(s)}" for m, s in zip(mixture_mean(num).tolist(), mixture_std(num).tolist())]
    q = torch.stack([mixture_quantile(num, p) for p in (0.05, 0.5, 0.95)], -1).tolist()
    return ["[" + "|".join(format_number(v) for v in row) + "]" for row in q]


def main():
    configure(globals(), __file__)
    dev = pick_device(device)
    torch.manual_seed(seed)
    for path in (ckpt, input):
        if path != "-" and not os.path.exists(path):
            raise SystemExit(f"error: {path} not found")
    model, vocab, _ = load_model(ckpt, dev)
    name = "stdin" if input == "-" else input
    try:
        with open(input, "rb") if input != "-" else nullcontext(sys.stdin.buffer) as f:
            text_lines = read_lines(f, name)
    except (TextError, IsADirectoryError) as e:
        raise SystemExit(f"error: {e}")
    lines = [(i + 1, l) for i, l in enumerate(text_lines) if l.strip()][: max_lines or None]
    causal = model.cfg.causal and not mask_last
    if causal:  # generation: only the lines shown
        lines = lines[:show]
    truths, texts, samples, failed = [], [], [], 0
    for number, line in lines:
        try:
            ids, values, ask, truth, text = encode_line(line, f"{name}:{number}", vocab, model.cfg.block_size, causal)
        except TextError as e:  # this line is reported and counted; the others are still predicted
            print(f"error: {e}", file=sys.stderr)
            failed += 1
            continue
        samples.append((ids, values, ask))
        truths.append(truth)
        texts.append(text)
    if causal:
        generator = torch.Generator(device=dev).manual_seed(seed)
        for ids, values, _ in samples[:show]:
            ids, values = generate(model, vocab, ids, values, max_new_tokens, temperature, generator, gmm_generate)
            print(detokenize(ids, values, vocab))
    elif samples:
        predict(model, vocab, samples, truths, texts, dev)
    if failed:
        raise SystemExit(f"error: {failed} of {len(lines)} lines could not be predicted (reported above)")


def predict(model, vocab, samples, truths, texts, dev):
    """Fill in the asked numbers of every sample, print the first `show` lines and the counts (and
    with --mask_last the errors against the true values)."""
    mixtures = []
    predictions, counts = fill_in(model, vocab, samples, dev, batch_size, mixtures)
    for i, (text, values) in enumerate(list(zip(texts, predictions))[:show]):
        shown = [format_number(v) for v in values]
        if mixtures and spread != "none":
            shown = format_spread(mixtures[i], spread)
        for v in shown:
            text = text.replace(ASK, v, 1)
        print(text)
    print(f"{counts['numbers']} numbers predicted"
          + (f", {counts['invalid']} invalid ({counts['invalid'] / max(1, counts['numbers']):.2%})"
             if vocab.encoding != "xval" else
             f", token head not [NUM] at {counts['not_num']} ({counts['not_num'] / max(1, counts['numbers']):.2%})"))
    if mask_last:
        yhat = [p[0] for p in predictions]
        print(f"held-out ({sum(not math.isnan(p) for p in yhat)} valid of {len(yhat)}): "
              f"MSE {mse(truths, yhat):.4g}, R² {r_squared(truths, yhat):.5f}")


if __name__ == "__main__":
    main()
