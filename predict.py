"""A checkpoint's predictions for sample.py and eval.py: numbers masked and filled in."""

import json
import math
import os
import re
import sys

import numpy as np
import torch

from batching import collate, fill_in_example, to_device
from checkpoint import load_checkpoint
from dataset import ASK, EOS_ID, MAX_VALUE, TOKENS_PER_NUMBER, Vocab, data_changed, read_meta
from dataset import record_level
from mixture import mixture_mean, mixture_quantile, mixture_sample, mixture_std
from model import GPT, GPTConfig
from tokenize_line import encode_pieces, number_spans, split_text, split_text_spans
from util import TextError, format_number

PLANET_STEPS = 10  # planets: the last steps, masked at once
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def is_json_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_paths(obj, path=()):
    """The path of every number of a JSON value, in written order."""
    if isinstance(obj, (dict, list)):
        for key, v in obj.items() if isinstance(obj, dict) else enumerate(obj):
            yield from json_paths(v, path + (key,))
    elif is_json_number(obj):
        yield path


def number_paths(line, pieces, where):
    """The JSON path of each number (and [?]) of a line's pieces."""
    n_numbers = sum(kind != "text" for kind, _ in pieces)
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise TextError(f"{where}: expected a JSON record ({e})")
    paths = list(json_paths(record))
    if len(paths) != n_numbers:
        for text in map(json.loads, JSON_STRING.findall(line)):
            if any(kind != "text" for kind, _ in split_text(json.dumps(text), where)):
                raise TextError(
                    f"{where}: the tokenizer reads a number in the JSON string {text[:60]!r};"
                    " write a number as a JSON number, and text without one"
                )
        raise TextError(
            f"{where}: JSON holds {len(paths)} numbers but the tokenizer reads {n_numbers}"
        )
    return paths


def masked_numbers(line, pieces, where, keys=(), every=False):
    """{quantity: indices masked together}: the last number under each key (a top-level key, or a
    path: meta.t; every: True all, H the last H), or the line's last number."""
    n_numbers = sum(kind == "num" for kind, _ in pieces)
    if not keys:
        if not n_numbers:
            raise TextError(f"{where}: the line has no number to predict")
        return {"last": [n_numbers - 1]}
    paths = number_paths(line, pieces, where)
    # each number's keys
    names = [[k for k in p if isinstance(k, str)] for p in paths]
    groups = {}
    for key in keys:
        top = [i for i, n in enumerate(names) if n[:1] == [key]]
        path = key.split(".")
        nested = [i for i, n in enumerate(names) if len(path) > 1 and n[: len(path)] == path]
        if top and nested:
            raise TextError(f"{where}: {key!r} names a top-level key and a path to a nested one")
        found = sorted({".".join(n[: n.index(key) + 1]) for n in names if key in n})
        if not top + nested and found:
            raise TextError(
                f"{where}: no number under key {key!r} (--mask_key names a top-level key); a nested"
                f" key is named by its path: {', '.join(found)}"
            )
        groups[key] = top + nested
    if every is True:
        return groups
    groups = {key: found[-(every or 1) :] for key, found in groups.items()}
    for key, found in groups.items():
        # --horizon: the last items of the key's own list
        if len(found) > 1 and {paths[i][:-1] for i in found} - {(key,), tuple(key.split("."))}:
            raise TextError(f"{where}: --horizon needs {key!r} to hold one list of numbers")
    return groups


def masked_groups(task, line, where, keys=(), every=False):
    """(pieces, {quantity: indices masked together}) of a sample of the task."""
    pieces = split_text(line, where)
    if task in ("arithmetic", "lookup", "text"):
        groups = masked_numbers(line, pieces, where, keys, every)
        return pieces, groups if task == "text" else {"answer": groups["last"]}
    paths = number_paths(line, pieces, where)
    if task == "era5":
        # data[station][step]: each station's last step
        last = {p[1]: i for i, p in enumerate(paths) if p[0] == "data"}
        return pieces, {"t+1": sorted(last.values())}
    # planets: data[step][planet][x or y]
    last = max(p[1] for p in paths if p[0] == "data") + 1 - PLANET_STEPS
    find = {p: i for i, p in enumerate(paths)}
    groups = {"dt": [find[("description", "stepsize")]]}
    groups.update({f"{q}0": [find[("description", "planet0", q)]] for q in "aem"})
    groups["steps"] = [i for i, p in enumerate(paths) if p[0] == "data" and p[1] >= last]
    return pieces, groups


class KeyAbsent(TextError):
    """A record without the --mask_key."""


def load_model(path, device="cpu"):
    """The model (eval mode) and vocabulary of a train.py checkpoint."""
    checkpoint = load_checkpoint(path, device)
    try:
        model = GPT(GPTConfig(**checkpoint["model_args"]))
        model.load_state_dict(checkpoint["model"])
        vocab = Vocab(checkpoint["text_tokens"], model.cfg.encoding)
        if len(vocab) != model.cfg.vocab_size:
            raise ValueError(f"a vocabulary of {len(vocab)}, a model of {model.cfg.vocab_size}")
    except (TypeError, ValueError, RuntimeError) as e:
        raise SystemExit(f"error: {path}: an edited checkpoint? {str(e).strip().splitlines()[-1]}")
    model.to(device).eval()
    vocab.unknown = "the model knows only numbers and its training tokens (a space splits one)"
    return model, vocab, checkpoint["config"]


@torch.no_grad()
def generate(
    model, ids, values, max_new_tokens, temperature=0.0, generator=None, gmm="sample", stop=EOS_ID
):
    """ids and values with tokens appended until stop (greedy, or sampled at temperature), the
    head's values and GMM outputs (1, 3K)."""
    ids, values, nums, mixtures = list(ids), list(values), [], []
    dev = next(model.parameters()).device
    for _ in range(max_new_tokens):
        x = torch.tensor([ids[-model.cfg.block_size :]], device=dev)
        v = torch.tensor([values[-model.cfg.block_size :]], dtype=torch.float32, device=dev)
        # the last position: (1, V) and (1,), (1, 3K) or None
        logits, num = model.heads(model.trunk(x, v)[0, -1:])
        logits = logits[0].float()
        if temperature > 0:
            probs = torch.softmax(logits / temperature, -1)
            token = int(torch.multinomial(probs, 1, generator=generator))
        else:
            token = int(logits.argmax())
        if token == stop:
            break
        if num is not None and num.dim() == 2:
            mixtures.append(num.float().cpu())
            num = mixture_sample(num, generator) if gmm == "sample" else mixture_mean(num)
        nums += [float(num[0])] if num is not None else []
        ids.append(token)
        values.append(nums[-1] if num is not None and token == model.cfg.num_id else 1.0)
    return ids, values, nums, mixtures


def predict_masked(model, chunk, device):
    """MLM, one pass: each sample's token ids, values and GMM outputs where asked."""
    batch = to_device(collate([fill_in_example(*s) for s in chunk]), device)
    h = model.trunk(batch["ids"], batch["values"], pos=batch["pos"], doc=batch["doc"])
    # only where something is asked: (N, V), (N,) or (N, 3K)
    logits, num = model.heads(h.flatten(0, 1)[batch["pred"]])
    sizes = [int(np.count_nonzero(ask)) for _, _, ask in chunk]
    nums = raws = [None] * len(chunk)
    if num is not None and num.dim() == 2:
        raws, num = num.float().cpu().split(sizes), mixture_mean(num)
    if num is not None:
        nums = num.float().cpu().split(sizes)
    return zip(logits.argmax(-1).cpu().split(sizes), nums, raws)


def predict_causal(model, vocab, chunk):
    """Causal: each asked number generated greedily from the text before it."""
    width = TOKENS_PER_NUMBER[vocab.encoding]
    for ids, values, ask in chunk:
        starts, ids, values = np.flatnonzero(ask)[::width], list(ids), list(values)
        if len(starts) and starts[0] == 0:
            raise ValueError("a causal model cannot predict a sample's first number")
        tokens, nums, raws = [], [], []
        for s in starts:
            out = generate(model, ids[:s], values[:s], width, gmm="mean", stop=None)
            ids[s : s + width], values[s : s + width] = out[0][s:], out[1][s:]
            tokens, nums, raws = tokens + out[0][s:], nums + out[2], raws + out[3]
        nums = torch.tensor(nums) if nums else None
        yield torch.tensor(tokens), nums, torch.cat(raws) if raws else None


@torch.no_grad()
def fill_in(model, vocab, samples, device="cpu", batch_size=64):
    """The numbers asked in each sample (ids, values, ask), their counts and (GMM) mixtures."""
    predictions, mixtures, counts = [], [], {"numbers": 0, "invalid": 0, "not_num": 0}
    width = TOKENS_PER_NUMBER[vocab.encoding]
    # similar lengths share a batch
    order = np.argsort([len(s[0]) for s in samples], kind="stable")
    for start in range(0, len(samples), batch_size):
        chunk = [samples[i] for i in order[start : start + batch_size]]
        if model.cfg.causal:
            predicted = predict_causal(model, vocab, chunk)
        else:
            predicted = predict_masked(model, chunk, device)
        for tokens, nums, raw in predicted:
            if nums is None:
                values = [vocab.decode_number(t.numpy()) for t in tokens.split(width)]
            # xVal: the number head's value, whatever the token head says
            else:
                values = nums.tolist()
                counts["not_num"] += int((tokens != vocab.num_id).sum())
            counts["invalid"] += sum(not math.isfinite(v) for v in values)
            counts["numbers"] += len(values)
            predictions.append(values)
            if raw is not None:
                mixtures.append(raw)
    back = np.argsort(order)
    return [predictions[i] for i in back], counts, [mixtures[i] for i in back] if mixtures else []


def detokenize(ids, values, vocab):
    """Token ids back to text, numbers to 6 significant digits."""
    ends = dict(number_spans(ids, vocab))
    out, i, end = [], 0, None
    while i < len(ids):
        if i in ends:
            value = values[i] if vocab.encoding == "xval" else vocab.decode_number(ids[i : ends[i]])
            # the implied comma
            out.append(("," if i == end else "") + format_number(value))
            i = end = ends[i]
        else:
            token = vocab.itos[ids[i]]
            # a stray number token
            out.append(token if not vocab.is_number([ids[i]])[0] else f"<{token}>")
            i += 1
    return "".join(out)


def ask_numbers(pieces, indices):
    """pieces with the numbers at indices asked; their values; their positions."""
    numbers = [j for j, (kind, _) in enumerate(pieces) if kind == "num"]
    at = [numbers[i] for i in indices]
    asked = list(pieces)
    for j in at:
        asked[j] = ("ask", None)
    return asked, [pieces[j][1] for j in at], at


def encode_line(
    line, where, vocab, block_size, causal=False, mask=None, mask_all=False, units=None
):
    """((ids, values, ask), truths, text with [?], scales) of a line. mask: None predicts its [?],
    "" masks its last number, a key the last under it (mask_all: all); units: units_of's."""
    # a record as prepare/text.py writes it: no spaces outside strings, renamed keys renamed
    if units:
        line = re.sub(rf"({JSON_STRING.pattern})|\s+", lambda m: m.group(1) or "", line)
        for old, new in (units.get("renamed") or {}).items():
            key = re.escape(json.dumps(old, ensure_ascii=False)) + "(?=:)"
            line = re.sub(key, lambda _, new=new: json.dumps(new, ensure_ascii=False), line)
    if spaced := re.search(r"\[\s*\?\s*\]", line.replace(ASK, "")):
        raise TextError(
            f"{where}: {spaced.group()!r} looks like the marker {ASK}; write {ASK} without spaces"
        )
    if len(line) > 1000 * block_size:
        raise TextError(f"{where}: {len(line):,} characters, too many for block_size {block_size}")
    truths, scales = [], []
    pieces, spans = split_text_spans(line, where, mask is None and not causal)
    if mask is not None:
        (masked,) = masked_numbers(line, pieces, where, [mask] if mask else [], mask_all).values()
        if not masked:
            raise KeyAbsent(f"{where}: no number under key {mask!r}")
        pieces, truths, at = ask_numbers(pieces, masked)
        for j in reversed(at):
            line = line[: spans[j][0]] + ASK + line[spans[j][1] :]
    if units:
        pieces, scales = to_model_units(line, pieces, where, units)
        if "split" in units:
            truths = [t * s + c for t, (c, s) in zip(truths, scales)]
            line = in_own_units(line, where, units)
    ids, values, ask = encoded(pieces, vocab, where, block_size)
    if not causal and not ask.any():
        raise TextError(f"{where}: no {ASK} in the line (or use --mask_last or --mask_key)")
    return (ids, values, ask), truths, line, scales


def encoded(pieces, vocab, where, block_size):
    """encode_pieces' (ids, values, ask), refused past block_size or xVal's range."""
    ids, values, ask = encode_pieces(pieces, vocab, where)
    if vocab.encoding == "xval" and (far := np.abs(values).max(initial=0)) > MAX_VALUE:
        raise TextError(f"{where}: the number {far:g} is beyond ±{MAX_VALUE:g}: scale it")
    if len(ids) > block_size:
        raise TextError(
            f"{where}: {len(ids)} tokens, more than the model's block_size {block_size}"
        )
    return ids, values, ask


def masked_samples(task, numbered, vocab, where, block_size, keys=(), every=False):
    """{quantity: (fill_in's samples, truths)} of the (line number, line) pairs, and each line's
    groups."""
    jobs, masked = {}, []
    for number, line in numbered:
        at = f"{where}:{number}"
        pieces, groups = masked_groups(task, line, at, keys, every)
        masked.append(groups)
        # a record without the key: left out
        for quantity, indices in ((q, i) for q, i in groups.items() if i):
            asked, values, _ = ask_numbers(pieces, indices)
            samples, truths = jobs.setdefault(quantity, ([], []))
            samples.append(encoded(asked, vocab, at, block_size))
            truths.extend(values)
    if missing := [k for k in keys if k not in jobs]:
        raise TextError(f"{where}: no record has a number under key {missing[0]!r}")
    n = len(numbered)
    absent = [f"{q} {n - len(s)}" for q, (s, _) in jobs.items() if len(s) < n]
    if absent and every is not True:
        print(f"note: {where}: records without the key are not scored: " + ", ".join(absent))
    return jobs, masked


def filled(text, values, mixture=None, spread="none", scales=()):
    """text with each [?] replaced by its value (GMM: its mixture's mean), as mean±std or
    [5%|50%|95%] (spread) of mixture (n, 3K); scales: each value's (center, spread)."""
    scales = scales or [(0.0, 1.0)] * len(values)
    # a std is only stretched, not shifted
    own = lambda xs, shift=1: [x * s + c * shift for x, (c, s) in zip(xs, scales)]
    shown = list(map(format_number, own(values)))
    if mixture is not None and spread == "std":
        stds = own(mixture_std(mixture).tolist(), 0)
        shown = [f"{mean}±{format_number(s)}" for mean, s in zip(shown, stds)]
    if mixture is not None and spread == "quantiles":
        quantiles = [own(mixture_quantile(mixture, p).tolist()) for p in (0.05, 0.5, 0.95)]
        shown = ["[" + "|".join(map(format_number, qs)) + "]" for qs in zip(*quantiles)]
    # [?][?]: two numbers, not one
    text = re.sub(re.escape(ASK) + f"(?={re.escape(ASK)})", ASK + ",", text)
    for value in shown:
        text = text.replace(ASK, value, 1)
    return text


# your own data in its units
def check_meta(meta, path, mask_key, masks=""):
    """Refuse a mask_key that prepare/text.py renamed, "ranges" not {key: [least, largest]}, and
    masks (flags) that would mask numbers --scale record takes a record's levels from."""
    if meta.get("scale") == "record" and masks:
        said = f"{masks} would mask what its levels are from"
        raise SystemExit(f"error: {path}: --scale record: {said}")
    renamed, ranges = meta.get("renamed") or {}, meta.get("ranges") or {}
    if isinstance(renamed, dict) and (new := renamed.get(mask_key)):
        said = f'prepare/text.py renamed this key {new!r} ({path} "renamed")'
        raise SystemExit(f"error: --mask_key={mask_key}: {said}; use --mask_key={new}")
    for key, pair in ranges.items() if isinstance(ranges, dict) else [("", ranges)]:
        ok = key and isinstance(pair, list) and len(pair) == 2
        ok = ok and all(is_json_number(x) and math.isfinite(x) for x in pair)
        if not (ok and pair[0] <= pair[1]):
            found = f"{key!r}: " * bool(key) + json.dumps(pair)[:50]
            expected = "{key: [least, largest]} of finite numbers; prepare the dataset again"
            raise SystemExit(f'error: {path}: "ranges" holds {found}; expected {expected}')


def units_of(path, data_dir, scaled=False, input="-", mask_key="", mask_all=False):
    """meta.json, whose scales take the file's units to the model's ("split": the input is a split,
    written scaled), or None."""
    try:
        meta = read_meta(data_dir)
    except (OSError, ValueError) as e:
        print(f"note: numbers as the model was trained on them: {e} (--data_dir)", file=sys.stderr)
        return None
    check_meta(meta, os.path.join(data_dir, "meta.json"), mask_key, "--mask_all" * mask_all)
    if meta.get("dataset") != "text" or not meta.get("scales"):
        return None
    if scaled:
        print(f"units: as written in {data_dir}'s text files, scaled (--scaled)", file=sys.stderr)
        return None
    name = os.path.basename(input)
    split = name.endswith(".txt") and name[:-4] in meta["splits"]
    if split and os.path.samefile(os.path.dirname(os.path.abspath(input)), data_dir):
        said = f"{input} is written scaled: read as written, printed"
        print(f"units: {said} in the file's own (--scaled: not)", file=sys.stderr)
        return dict(meta, split=input, levels=read_levels(input, meta))
    print(f"units: the file's own, scaled by {data_dir}/meta.json (--scaled: not)", file=sys.stderr)
    recorded = load_checkpoint(path, mmap=True).get("data_fingerprint") or {}
    if recorded.get("meta") and (changed := data_changed(recorded, data_dir, path, "xval")):
        print(f"warning: {changed}", file=sys.stderr)
    return meta


def read_levels(split, meta):
    """Each record's {key: level} of a split (its path) written with --scale record, or None."""
    if meta.get("scale") != "record":
        return None
    path = split[:-4] + ".levels.txt"
    count = meta["splits"][os.path.basename(split)[:-4]]
    try:
        with open(path) as f:
            levels = [json.loads(line) for line in f]
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {path}: {e}; prepare the dataset again")
    if len(levels) != count:
        raise SystemExit(f"error: {path}: {len(levels)} lines, meta.json counts {count} records")
    return levels


def number_keys(line, pieces, where, units):
    """The (center, spread) of each number and [?] of a record by its top-level key (--scale
    record: center 0, spread the record's level); the keys."""
    paths = number_paths(line.replace(ASK, "0"), pieces, where)
    keys = [p[0] if p and isinstance(p[0], str) else None for p in paths]
    scales = units["scales"]
    if missing := [k for k in keys if k not in scales]:
        what = f"key {missing[0]!r}" if missing[0] else "no key"
        what += f", which the training data has no scale for (its number keys: {', '.join(scales)})"
        raise TextError(f"{where}: a number under {what}")
    if units.get("scale") == "record" and not (levels := units.get("level")):
        # a record typed in the file's units: its own levels, those asked left out
        found = {}
        for (kind, x), key in zip([p for p in pieces if p[0] != "text"], keys):
            found.setdefault(key, []).append(x if kind == "num" else math.nan)
        levels = {key: float(record_level(np.array([xs]))[0]) for key, xs in found.items()}
    if units.get("scale") == "record":
        return [(0.0, levels[k]) for k in keys], keys
    return [(scales[k]["center"], scales[k]["spread"]) for k in keys], keys


def to_model_units(line, pieces, where, units):
    """A record's pieces as the model reads them, and each asked number's (center, spread)."""
    scales, keys = number_keys(line, pieces, where, units)
    # a split's records are written scaled: neither checked nor scaled
    split = "split" in units
    ranges = {} if split or units.get("scale") == "record" else units.get("ranges") or {}
    out, asked, i = [], [], 0
    for kind, x in pieces:
        if kind == "ask":
            asked.append(scales[i])
        if kind == "num" and (known := ranges.get(keys[i])):
            low, high = known
            width = high - low
            if not low - width <= x <= high + width:
                say = f"{x:g} is far outside its training range [{low:g}, {high:g}]"
                print(f"warning: {where}: key {keys[i]!r}: {say}", file=sys.stderr)
        if kind == "num" and not split:
            x = (x - scales[i][0]) / scales[i][1]
        i += kind != "text"
        out.append((kind, x))
    return out, asked


def in_own_units(text, where, units):
    """A record (its [?] kept) in the file's units (said where it is no complete record)."""
    if units.get("scale") == "record" and "level" not in units:
        return text + "  (scaled by the record's level)"
    pieces, spans = split_text_spans(text, where, allow_ask=True)
    try:
        scales, _ = number_keys(text, pieces, where, units)
    except TextError:
        return text + "  (scaled: not a complete record)"
    numbers = [(span, x) for (kind, x), span in zip(pieces, spans) if kind != "text"]
    for ((start, end), x), (c, s) in reversed(list(zip(numbers, scales))):
        if x is not None:
            text = text[:start] + format_number(x * s + c) + text[end:]
    return text
