"""A tokenized dataset as train.py, sample.py and eval.py read it: the vocabulary, prepare/'s
<split>.txt and meta.json, tokenize_numbers.py's vocab.json and <encoding>/<split> arrays."""

import functools
import hashlib
import itertools
import json
import math
import os
import re
import warnings

import numpy as np

from util import TextError, check_regular

TOKENS_PER_NUMBER = {"xval": 1, "p10": 5, "p1000": 3, "b1999": 2, "fp15": 1}
ENCODINGS = tuple(TOKENS_PER_NUMBER)
CONTROL_TOKENS = ("[PAD]", "[MASK]", "[EOS]")
PAD_ID, MASK_ID, EOS_ID = 0, 1, 2
# ASK: a number for sample.py to predict
NUM, ASK = "[NUM]", "[?]"
# of the integer mantissa m in 100..999
MIN_EXP, MAX_EXP = -10, 5
EXPONENTS = [f"E{e}" for e in range(MIN_EXP, MAX_EXP + 1)]
# the largest |number| trained on: float32 squares (the loss, layer norm) overflow past ~1.8e19
MAX_VALUE = 1e18


def shown(text):
    """Text for an error message: quoted, cut short if long."""
    return repr(text) if len(text) <= 60 else f"{text[:60]!r}… ({len(text):,} characters)"


@functools.cache
def number_vocab(encoding):
    """The number tokens of an encoding, in id order (zero's extra token last)."""
    signs, mantissas = ["+", "-"], [str(m) for m in range(100, 1000)]
    tokens = {
        "xval": [NUM],
        "p10": signs + [str(d) for d in range(10)] + EXPONENTS,
        "p1000": signs + mantissas + EXPONENTS + ["000"],
        "b1999": [s + m for s in signs for m in mantissas] + EXPONENTS + ["+000"],
        "fp15": [s + m + e for s in signs for m in mantissas for e in EXPONENTS] + ["+000E0"],
    }
    return tokens[encoding]


def number_tokens(negative, mantissa, exponent, encoding):
    """The tokens of ±mantissa·10^exponent: (True, 602, -1, "b1999") -> ["-602", "E-1"]."""
    sign, mant, e = "-" if negative else "+", f"{mantissa:03d}", f"E{exponent}"
    return {
        "p10": [sign, *mant, e],
        "p1000": [sign, mant, e],
        "b1999": [sign + mant, e],
        "fp15": [sign + mant + e],
    }[encoding]


@functools.cache
def number_table(encoding):
    """ids[negative, mantissa, exponent - MIN_EXP] and {tokens: value} of a text encoding."""
    ids = dict(zip(number_vocab(encoding), itertools.count(len(CONTROL_TOKENS))))
    shape = (2, 1000, MAX_EXP - MIN_EXP + 1, TOKENS_PER_NUMBER[encoding])
    table, values = np.zeros(shape, np.int64), {}
    every = itertools.product((0, 1), range(100, 1000), range(MIN_EXP, MAX_EXP + 1))
    for n, m, e in [(0, 0, 0), *every]:
        tokens = number_tokens(n, m, e, encoding)
        values[tuple(tokens)] = float(f"{'-' * n}{m}e{e}")
        table[n, m, e - MIN_EXP] = [ids[t] for t in tokens]
    return table, values


def tokens_to_number(tokens, encoding):
    """A number's value, NaN unless its tokens spell one: (["-602E-1"], "fp15") -> -60.2."""
    return number_table(encoding)[1].get(tuple(tokens), float("nan"))


class Vocab:
    """Token strings <-> ids for one encoding: specials, number tokens, the dataset's text tokens.
    Number and text tokens never share an id: the operator '-' is not the sign '-'."""

    def __init__(self, text_tokens, encoding):
        self.encoding, self.text_tokens = encoding, list(text_tokens)
        self.number_tokens = number_vocab(encoding)
        self.itos = [*CONTROL_TOKENS, *self.number_tokens, *self.text_tokens]
        self.first_number_id = len(CONTROL_TOKENS)
        self.first_text_id = self.first_number_id + len(self.number_tokens)
        self.num_id = self.first_number_id if encoding == "xval" else None
        self._text_ids = {t: i for i, t in enumerate(self.text_tokens, self.first_text_id)}
        # the fix for an unknown token; load_model sets a trained model's own
        self.unknown = "add a sample with it to train.txt and tokenize with --rebuild-vocab"
        # a number's first token, with its sign: how spans are found in arrays
        starts = enumerate(self.number_tokens, self.first_number_id)
        self.number_start_ids = np.array([i for i, t in starts if t[0] in "+-" or t == NUM])

    def __len__(self):
        return len(self.itos)

    def text_id(self, token, where="text"):
        if token not in self._text_ids:
            raise TextError(f"{where}: {shown(token)} is not in the vocabulary; {self.unknown}")
        return self._text_ids[token]

    def is_number(self, ids):
        ids = np.asarray(ids)
        return (ids >= self.first_number_id) & (ids < self.first_text_id)

    def decode_number(self, ids):
        """A text-encoded number's value from its ids, NaN unless exactly a number."""
        if not self.is_number(ids).all():
            return float("nan")
        return tokens_to_number([self.itos[int(i)] for i in ids], self.encoding)


def first_index(n, bad, chunk=1 << 22):
    """The first index below n where bad(a slice) holds, or None."""
    for start in range(0, n, chunk):
        hits = np.flatnonzero(bad(slice(start, start + chunk)))
        if len(hits):
            return start + int(hits[0])
    return None


def decoded_lines(f, where):
    """The lines of a binary file object, decoded as UTF-8."""
    for i, raw in enumerate(f, 1):
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as e:
            raise TextError(
                f"{where}:{i}: not UTF-8 text (byte {raw[e.start]:#04x} at column {e.start + 1})"
            ) from None
        # a spreadsheet's byte order mark
        if i == 1:
            line = line.removeprefix("\ufeff")
        if "\0" in line:
            raise TextError(f"{where}:{i}: a NUL byte at column {line.index(chr(0)) + 1}")
        # a file whose lines end in \r alone would be read as one sample
        if "\r" in line:
            raise TextError(f"{where}:{i}: a carriage return inside the line; end lines with \\n")
        yield line


def read_samples(path, required=True):
    """(line number, line) of a file's lines that are not blank; required: at least one."""
    with open(path, "rb") as f:
        lines = [(i, line) for i, line in enumerate(decoded_lines(f, path), 1) if line.strip()]
    if required and not lines:
        empty = "an empty file" if os.path.getsize(path) == 0 else "blank lines only"
        raise TextError(f"{path}: no sample ({empty}); expected one sample per line")
    return lines


def check_name(name, what):
    """A name that becomes part of a path stays inside its folder."""
    if not (isinstance(name, str) and re.fullmatch(r"\w[\w.-]*", name) and ".." not in name):
        raise TextError(f"{what} {name!r} is not a plain name (letters, digits, _ . - and no '..')")


def require_dataset(data_dir):
    """meta.json's path: prepare/ writes it last."""
    if not data_dir:
        raise FileNotFoundError("data_dir is empty; name a prepared dataset's folder")
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(f"{data_dir} is not a directory; expected a prepared dataset")
    meta = os.path.join(data_dir, "meta.json")
    if not os.path.exists(meta):
        raise FileNotFoundError(
            f"{meta} not found: {data_dir} is not a complete dataset (prepare it again); for text"
            f" files of your own: python tokenize_numbers.py {data_dir} --plain-text"
        )
    return meta


def read_json_object(path, keys=(), again=""):
    """A JSON object from a file, with each of `keys`, else a TextError naming the file."""
    check_regular(path)
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise TextError(f"{path}: not readable JSON ({e}){again}")
    if not isinstance(obj, dict):
        raise TextError(f"{path}: a JSON {type(obj).__name__}, expected an object{again}")
    if missing := [k for k in keys if k not in obj]:
        raise TextError(f"{path}: no {', '.join(map(repr, missing))} key{again}")
    return obj


def record_level(x):
    """--scale record: each row's level, the mean |x| of its numbers (NaN: none) but the last, the
    one predicted; 1 where that is 0 or there are none."""
    with warnings.catch_warnings(action="ignore"):
        level = np.nanmean(np.abs(x[:, :-1]), axis=1)
    return np.where(level > 0, level, 1.0)


def read_meta(data_dir):
    return read_json_object(require_dataset(data_dir), ("splits",), "; prepare the dataset again")


def load_text_vocab(data_dir):
    require_dataset(data_dir)
    path = os.path.join(data_dir, "vocab.json")
    again = f"; run: python tokenize_numbers.py {data_dir} --rebuild-vocab"
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found; run: python tokenize_numbers.py {data_dir}")
    tokens = read_json_object(path, ("text_tokens",), again)["text_tokens"]
    if not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
        raise TextError(f"{path}: text_tokens is not a list of strings{again}")
    named = [t for t in tokens if re.fullmatch(r"\[\w+\]", t)]
    if len(set(tokens)) < len(tokens) or "" in tokens or named:
        raise TextError(f"{path}: text_tokens holds a token twice, an empty one or a [NAME]{again}")
    return tokens


def fingerprint(data_dir, encoding):
    """The dataset's kind, and digests of meta.json less its command, and of vocab.json and the
    ends of the train and val arrays (None: not written)."""
    meta = {k: v for k, v in read_meta(data_dir).items() if k != "command"}
    digests = {"meta": hashlib.sha1(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]}
    digests["dataset"] = [meta.get(k) for k in ("dataset", "variant", "keys")]
    try:
        with open(os.path.join(data_dir, "vocab.json"), "rb") as f:
            arrays = hashlib.sha1(f.read())
        for split, kind in itertools.product(("train", "val"), ("ids", "values", "offsets")):
            with open(os.path.join(data_dir, encoding, f"{split}.{kind}.npy"), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                arrays.update(str(size).encode() + f.read(1 << 20))
                f.seek(max(0, size - (1 << 20)))
                arrays.update(f.read())
    except FileNotFoundError:
        return digests | {"arrays": None}
    return digests | {"arrays": arrays.hexdigest()[:16]}


def data_changed(recorded, data_dir, path, encoding):
    """How data_dir differs from the dataset whose fingerprint `path` recorded, or None."""
    now = fingerprint(data_dir, encoding)
    if now["meta"] == recorded["meta"]:
        return None
    if recorded.get("dataset", now["dataset"]) != now["dataset"]:
        return f"{data_dir} holds another dataset than the one {path} was trained on"
    return f"{data_dir} has been prepared again since {path} was trained on it"


def check_trained_on(checkpoint, path, data_dir, changed_data=False):
    """Refuse to score a checkpoint on its own dataset prepared again since, unless changed_data."""
    if not os.path.exists(os.path.join(data_dir, "meta.json")):
        raise FileNotFoundError(
            f"{data_dir}/meta.json not found: {path} was trained on {data_dir}, the folder it "
            "names; if the dataset has moved, name it with --data_dir=FOLDER"
        )
    recorded = checkpoint.get("data_fingerprint")
    if recorded is None:
        print(f"note: {path} records no data fingerprint; {data_dir} is not checked")
        return
    if what := data_changed(recorded, data_dir, path, checkpoint["model_args"]["encoding"]):
        if not changed_data:
            raise ValueError(f"{what}; evaluate anyway with --changed_data=True, or train again")
        print(f"warning: {what}; evaluating anyway (--changed_data=True)")


def vocab_digest(text_tokens):
    return hashlib.sha1(json.dumps(text_tokens).encode()).hexdigest()[:12]


class Split:
    """A tokenized split, memory-mapped: sample i is ids[offsets[i]:offsets[i+1]] (and values)."""

    def __init__(self, data_dir, split, encoding, vocab=None):
        check_name(split, "split")
        check_name(encoding, "encoding")
        self.base = base = os.path.join(data_dir, encoding, split)
        self.split = split
        command = f"python tokenize_numbers.py {data_dir} --encoding {encoding}"
        if not os.path.exists(base + ".ids.npy"):
            raise FileNotFoundError(f"{base}.ids.npy not found; run: {command}")
        again = f"run again: {command}"
        keys = ("split", "encoding", "samples", "vocab_digest", "text_bytes")
        summary = read_json_object(base + ".json", keys, f"; {again}")
        try:
            for name in ("ids", "values", "offsets"):
                check_regular(f"{base}.{name}.npy")
                mmap = None if name == "offsets" else "r"
                setattr(self, name, np.load(f"{base}.{name}.npy", mmap_mode=mmap))
        except (OSError, ValueError, EOFError) as e:
            raise ValueError(f"{base}: unreadable arrays ({e}); {again}")
        vocab = vocab or Vocab(load_text_vocab(data_dir), encoding)
        if summary["vocab_digest"] != vocab_digest(vocab.text_tokens):
            raise ValueError(f"{base}.ids.npy was tokenized with another vocab.json; {again}")
        if (summary["split"], summary["encoding"]) != (split, encoding):
            raise ValueError(f"{base}.json describes another split or encoding; {again}")
        # the four files are written together
        o, samples = self.offsets, summary["samples"]
        if not (o.ndim == 1 and o.dtype.kind in "iu" and len(o) > 1 and o[0] == 0):
            raise ValueError(f"{base}.offsets.npy: expected integers from 0, 1-D; {again}")
        if len(falls := np.flatnonzero(o[1:] <= o[:-1])):
            raise ValueError(f"{base}.offsets.npy: not increasing at index {falls[0] + 1}; {again}")
        if samples != len(o) - 1 or not o[-1] == len(self.ids) == len(self.values):
            sizes = f".json counts {samples!r} samples, .offsets.npy {len(o) - 1} of {o[-1]} tokens"
            sizes += f", .ids.npy and .values.npy {len(self.ids)} and {len(self.values)} tokens"
            raise ValueError(f"{base}: {sizes}: files of different runs; {again}")
        text = os.path.join(data_dir, f"{split}.txt")
        size = os.path.getsize(text) if os.path.exists(text) else summary["text_bytes"]
        if summary["text_bytes"] != size:
            raise ValueError(
                f"{text} has changed since it was tokenized ({size} bytes, {summary['text_bytes']}"
                f" then); {again}"
            )
        self.lengths = np.diff(self.offsets)
        self.check_arrays(len(vocab), vocab.num_id, again)

    def at(self, position):
        """The sample holding token `position`."""
        i = int(np.searchsorted(self.offsets, position, side="right")) - 1
        return f"sample {i} (line {i + 1} of {self.split}.txt)"

    def check_arrays(self, vocab_size, num_id, again):
        """Refuse ids outside the vocabulary and numbers beyond ±MAX_VALUE now, not hours in."""
        ids, values, where = self.ids, self.values, self.base
        if ids.ndim != 1 or ids.dtype.kind not in "iu" or values.ndim != 1 or values.dtype != "f4":
            raise ValueError(f"{where}: expected integer ids and float32 values, 1-D; {again}")
        bad = first_index(len(ids), lambda s: (ids[s] < 0) | (ids[s] >= vocab_size))
        if bad is not None:
            raise ValueError(
                f"{where}.ids.npy: {self.at(bad)} holds token id {int(ids[bad])}, outside the"
                f" vocabulary of {vocab_size}; {again}"
            )
        bad = first_index(len(values), lambda s: ~(np.abs(values[s]) <= MAX_VALUE))
        if bad is not None:
            x = float(values[bad])
            what = f"{x:.4g}, beyond ±{MAX_VALUE:g}" if math.isfinite(x) else "a non-finite number"
            raise ValueError(
                f"{where}.values.npy: {self.at(bad)} holds {what}; remove or rescale it and"
                " tokenize again"
            )
        # xVal multiplies every embedding by its value: 1.0 but at [NUM]
        if num_id is not None:
            bad = first_index(len(ids), lambda s: (ids[s] != num_id) & (values[s] != 1))
            if bad is not None:
                raise ValueError(
                    f"{where}.values.npy: {self.at(bad)} holds {float(values[bad]):g} at a token"
                    f" that is no number; {again}"
                )

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        a, b = self.offsets[i], self.offsets[i + 1]
        return np.asarray(self.ids[a:b], np.int64), np.asarray(self.values[a:b], np.float32)
