"""The oracle tokenize_line.py and tokenize_arrays.py match exactly (pieces, tokens, errors,
arrays): docs/decisions.md#numbers-in-text a character at a time, and scalar rounding."""
import functools
import math
import re

import numpy as np

from dataset import MAX_EXP, MIN_EXP, Vocab, number_tokens
from tokenize_line import FLOAT32_OVERFLOW
from util import TextError

_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WORD = re.compile(r"\w+")
_QUOTED_KEY = re.compile(r"""(["'])[^\W\d]\w*\1""")
# after these a sign is unary (part of the number), else an operator
_UNARY_AFTER = set("([{,:=+-*/^<>")
DIGITS = "0123456789"


def split_text(text, where="text"):
    """The pieces of one sample, as tokenize_line.split_text gives them."""
    pieces, i, n = [], 0, len(text)
    prev, last_number = None, (-9, -9)  # the last non-space piece; the last number's span
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        # a sign belongs to the number only where it cannot be an operator
        unary = prev is None or (prev[0] == "text" and prev[1][-1] in _UNARY_AFTER)
        start = i + 1 if c in "+-" and unary else i
        double = start == i + 1 and start < n and text[start] in "+-"  # --5
        start += double
        m = _NUMBER.match(text, start) if start < n and (text[start] in DIGITS or text[start] == ".") else None
        if m and not (m.end() < n and (text[m.end()].isalnum() or text[m.end()] == "_")):
            # malformed: two signs (--5, (--5), touching numbers (1.2.3, 5..5), a thousands comma (1,000)
            first = None
            if double:
                first = i
            elif start == i + 1 and i >= 1 and text[i - 1] in "+-" and (i == 1 or text[i - 2] in _UNARY_AFTER):
                first = i - 1
            elif last_number[1] == i:
                first = last_number[0]
            elif (last_number[1] == i - 1 and pieces[-1] == ("text", ",") and text[start] == "0"
                  and start + 1 < n and text[start + 1] in DIGITS):
                first = last_number[0]
            if first is not None:
                raise TextError(f"{where}: malformed number {text[first:m.end()]!r}; write one plain number")
            if not math.isfinite(value := float(text[i:m.end()])):
                raise TextError(f"{where}: number literal {text[i:m.end()]!r} overflows float64")
            pieces.append(("num", value))
            prev, i, last_number = pieces[-1], m.end(), (i, m.end())
            continue
        if m and text[start:m.end()].replace(".", "").isdigit() and "." in text[start:m.end()]:
            # 1.5x
            raise TextError(f"{where}: number {text[start:m.end()]!r} runs into the word at column {m.end()}; separate them")
        q = _QUOTED_KEY.match(text, i)
        w = q or _WORD.match(text, i)
        token = w.group() if w else _punctuation_run(text, i)
        if not q and token.lower() in ("nan", "inf", "infinity"):
            raise TextError(f"{where}: {token!r} is not a finite number")
        pieces.append(("text", token))
        prev, i = pieces[-1], i + len(token)
    # a comma between two numbers costs no token
    keep = [not (piece == ("text", ",") and 0 < j < len(pieces) - 1
                 and pieces[j - 1][0] != "text" and pieces[j + 1][0] != "text")
            for j, piece in enumerate(pieces)]
    return [piece for piece, k in zip(pieces, keep) if k]


def _punctuation_run(text, i):
    """The punctuation from i as one token ('],['), up to a quote, space, word or number."""
    j, n = i + 1, len(text)
    if text[i] in "\"'":
        return text[i]
    while j < n:
        c = text[j]
        if c.isalnum() or c == "_" or c.isspace() or c in "\"'":
            break
        follows = text[j + 1] if j + 1 < n else ""
        if c == "." and follows != "" and follows in DIGITS:
            break
        if c in "+-" and text[j - 1] in _UNARY_AFTER and follows != "" and follows in DIGITS + ".":
            break
        j += 1
    return text[i:j]


def round_number(x):
    """(sign, mantissa, exponent, 'ok'|'zero'|'clipped'): x ≈ sign·mantissa·10^exponent as '%.2e'
    rounds; below 1e-8 zero, beyond 9.99e7 clipped."""
    sign = "-" if x < 0 else "+"
    digits, exp10 = f"{abs(x):.2e}".split("e")  # '6.02', '+01'
    mantissa, exponent = int(digits.replace(".", "")), int(exp10) - 2
    if x == 0 or exponent < MIN_EXP:
        return "+", 0, 0, ("ok" if x == 0 else "zero")
    if exponent > MAX_EXP:
        return sign, 999, MAX_EXP, "clipped"
    return sign, mantissa, exponent, "ok"


@functools.cache
def number_ids(encoding):
    return {t: i for i, t in enumerate(Vocab([], encoding).itos)}


def number_counts(numbers, encoding):
    if encoding == "xval":  # below float32's least
        return {"clipped": 0, "zero": sum(v != 0 and np.float32(v) == 0 for v in numbers)}
    status = [round_number(v)[3] for v in numbers]
    return {"clipped": status.count("clipped"), "zero": status.count("zero")}


def encode_pieces(pieces, vocab, where="text"):
    """(ids, values) of pieces, a piece at a time."""
    ids, values = [], []
    for kind, value in pieces:
        if kind == "text":
            toks, value = [vocab.text_id(value, where)], 1.0
        elif vocab.encoding == "xval" and abs(value) >= FLOAT32_OVERFLOW:
            raise TextError(f"{where}: the number {value!r} overflows float32, xVal's values")
        elif vocab.encoding == "xval":
            toks = [vocab.num_id]
        else:
            sign, m, e, _ = round_number(value)
            toks = [number_ids(vocab.encoding)[t] for t in number_tokens(sign == "-", m, e, vocab.encoding)]
        ids += toks
        values += [value] * len(toks)
    with np.errstate(over="ignore"):
        return np.array(ids, np.int64), np.array(values, np.float32)


def encode_lines(lines, text_tokens, encodings, path="text", first_line=0, split=split_text, encode=encode_pieces):
    """tokenize_arrays.encode_lines a line at a time through the oracle's split and encoding."""
    vocabs = [Vocab(text_tokens, enc) for enc in encodings]
    rows = {enc: [] for enc in encodings}
    for j, line in enumerate(lines, first_line + 1):
        pieces = split(line, f"{path}:{j}")
        for vocab in vocabs:
            ids = encode(pieces, vocab, f"{path}:{j}")[:2]
            rows[vocab.encoding].append((*ids, [v for kind, v in pieces if kind == "num"]))
    out = {}
    for vocab in vocabs:
        ids, values, numbers = zip(*rows[vocab.encoding])
        dtype = np.uint16 if len(vocab) < 2**16 else np.int32
        out[vocab.encoding] = (np.concatenate(ids).astype(dtype), np.concatenate(values), np.array(list(map(len, ids))),
                               np.array(list(map(len, numbers))), number_counts(sum(numbers, []), vocab.encoding))
    return out


def text_vocab(lines, split=split_text):
    return sorted({v for line in lines for kind, v in split(line) if kind == "text"})
