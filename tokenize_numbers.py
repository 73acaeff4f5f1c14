"""
Everything between text and arrays: number extraction, the five number encodings of the paper
(P10, P1000, B1999, FP15 and xVal), the text vocabulary, and the command that turns a prepared
dataset into memory-mapped arrays.

    python tokenize_numbers.py data/arithmetic_ops2 --encoding xval   # one encoding
    python tokenize_numbers.py data/arithmetic_ops2 --encoding all    # all five
    python tokenize_numbers.py data/planets --stats                   # token statistics table
    python tokenize_numbers.py data/planets --bench                   # tokenizer speed (writes nothing)

A sample is one line of text. It is split into pieces: numbers (a float each) and text tokens
(runs of punctuation such as '],[', quoted keys, words). Whitespace is not significant and is
dropped, and so is a comma between two numbers (their adjacency already separates them). Each number then
becomes tokens of the chosen encoding; for -60.2:

    p10    -  6  0  2  E-1        5 tokens per number, 28 number tokens
    p1000  -  602  E-1            3 tokens per number, 918 (+1 for 000)
    b1999  -602  E-1              2 tokens per number, 1816 (+1 for +000)
    fp15   -602E-1                1 token per number, 28800 (+1 for +000E0)
    xval   [NUM]                  1 token per number, its value goes in a parallel float array

The text encodings keep 3 significant digits: value = ±m·10^E with m in 100..999 and E in -10..5.
"""
import argparse
import functools
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import sys
import time
from multiprocessing import Pool

import numpy as np

from util import atomic_file, atomic_write_text, format_number

ENCODINGS = ("xval", "p10", "p1000", "b1999", "fp15")
TOKENS_PER_NUMBER = {"xval": 1, "p10": 5, "p1000": 3, "b1999": 2, "fp15": 1}
CONTROL_TOKENS = ("[PAD]", "[MASK]", "[EOS]")  # ids 0, 1, 2 in every vocabulary
PAD_ID, MASK_ID, EOS_ID = 0, 1, 2
IGNORE = -100  # the target id of positions that are not predicted (cross-entropy's ignore_index)
NUM = "[NUM]"
ASK = "[?]"  # marks a number to predict in sample.py's input

# 3 significant digits: the exponent E applies to the integer mantissa m in 100..999
MIN_EXP, MAX_EXP = -10, 5
EXPONENTS = [f"E{e}" for e in range(MIN_EXP, MAX_EXP + 1)]  # E-10 ... E0 ... E5 (16 tokens)
LARGEST = 999 * 10.0**MAX_EXP  # 9.99e7
SMALLEST = 100 * 10.0**MIN_EXP  # 1.00e-8
FLOAT32_OVERFLOW = 2.0**128 - 2.0**103  # the smallest magnitude float32 rounds to inf (xVal's values are float32)

# -----------------------------------------------------------------------------
# number extraction

# A number literal: digits with an optional decimal point, or .digits; optional exponent.
_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WORD = re.compile(r"\w+")  # letters, digits, underscore (so planet0, t2m, x1 are words)
_QUOTED_KEY = re.compile(r"""(["'])[^\W\d]\w*\1""")  # "description", 'planet0'
# after these a sign is unary (part of the number); after anything else it is an operator
_UNARY_AFTER = set("([{,:=+-*/^<>")


class TextError(ValueError):
    """Bad input text; the message names the sample and what was expected."""


def split_text(text, where="text", allow_ask=False, spans=None):
    """
    Split one sample into pieces: ("num", float) for numbers, ("text", str) for everything else,
    and ("ask", None) for the marker [?] when allow_ask. `where` names the sample in errors.
    If `spans` is a list, the (start, end) character range of each piece is appended to it.

    >>> split_text("(1.42-8.20)")
    [('text', '('), ('num', 1.42), ('text', '-'), ('num', 8.2), ('text', ')')]
    """
    pieces = []
    i, n = 0, len(text)
    prev = None  # previous non-space piece, to tell a unary sign from a binary operator
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if allow_ask and text.startswith(ASK, i):
            pieces.append(("ask", None))
            if spans is not None:
                spans.append((i, i + len(ASK)))
            prev, i = ("num", None), i + len(ASK)
            continue
        # a sign belongs to the number only where it cannot be an operator
        unary = prev is None or (prev[0] == "text" and prev[1][-1] in _UNARY_AFTER)
        start = i + 1 if c in "+-" and unary else i
        m = _NUMBER.match(text, start) if start < n and (text[start].isdigit() or text[start] == ".") else None
        if m and not (m.end() < n and (text[m.end()].isalnum() or text[m.end()] == "_")):
            literal = text[i:m.end()]
            value = float(literal)
            if not math.isfinite(value):
                raise TextError(f"{where}: number literal {literal!r} overflows float64")
            pieces.append(("num", value))
            if spans is not None:
                spans.append((i, m.end()))
            prev, i = pieces[-1], m.end()
            continue
        if m and text[start:m.end()].replace(".", "").isdigit() and "." in text[start:m.end()]:
            # "1.5x": a decimal number running into a word is neither a number nor a word
            raise TextError(f"{where}: number {text[start:m.end()]!r} runs into the word "
                            f"starting at column {m.end()}; separate them")
        q = _QUOTED_KEY.match(text, i)
        w = q or _WORD.match(text, i)
        token = w.group() if w else _punctuation_run(text, i, allow_ask)
        if not q and token.lower() in ("nan", "inf", "infinity"):
            raise TextError(f"{where}: {token!r} is not a finite number; nan and inf are not allowed")
        pieces.append(("text", token))
        if spans is not None:
            spans.append((i, i + len(token)))
        prev, i = pieces[-1], i + len(token)
    # A comma between two numbers costs no token: every number has a fixed number of tokens, so
    # adjacency already separates them ([[1,2,3],[4,5,6]] -> [[ N N N ],[ N N N ]]). This is
    # what the paper's context lengths imply (temperature: 1606 numbers + 192 text tokens).
    keep = [not (piece == ("text", ",") and 0 < j < len(pieces) - 1
                 and pieces[j - 1][0] != "text" and pieces[j + 1][0] != "text")
            for j, piece in enumerate(pieces)]
    if spans is not None:
        spans[:] = [span for span, k in zip(spans, keep) if k]
    return [piece for piece, k in zip(pieces, keep) if k]


def _punctuation_run(text, i, allow_ask):
    """
    The run of punctuation starting at i, as one token ('],[' or ')+(' rather than three): JSON
    and expressions repeat a few such runs, and one token each halves the length of a sample.
    A run stops at a quote, a space, a letter or digit, the start of a number (a '.' before a
    digit, a unary sign) and the [?] marker.
    """
    j, n = i + 1, len(text)
    if text[i] in "\"'":
        return text[i]
    while j < n:
        c = text[j]
        if c.isalnum() or c == "_" or c.isspace() or c in "\"'" or (allow_ask and text.startswith(ASK, j)):
            break
        follows = text[j + 1] if j + 1 < n else ""
        if c == "." and follows.isdigit():
            break
        if c in "+-" and text[j - 1] in _UNARY_AFTER and (follows.isdigit() or follows == "."):
            break
        j += 1
    return text[i:j]


def extract_numbers(text):
    """All the numbers of a text, in order: extract_numbers('e=-1.33,x1:.25') == [-1.33, 0.25]."""
    return [v for kind, v in split_text(text) if kind == "num"]


# -----------------------------------------------------------------------------
# the five encodings


def number_vocab(encoding):
    """The number tokens of an encoding, in id order (zero's extra token last)."""
    signs = ["+", "-"]
    mantissas = [str(m) for m in range(100, 1000)]
    if encoding == "xval":
        return [NUM]
    if encoding == "p10":
        return signs + [str(d) for d in range(10)] + EXPONENTS
    if encoding == "p1000":
        return signs + mantissas + EXPONENTS + ["000"]
    if encoding == "b1999":
        return [s + m for s in signs for m in mantissas] + EXPONENTS + ["+000"]
    if encoding == "fp15":
        return [s + m + e for s in signs for m in mantissas for e in EXPONENTS] + ["+000E0"]
    raise ValueError(f"unknown encoding {encoding!r}; expected one of {', '.join(ENCODINGS)}")


def round_number(x):
    """
    (sign, mantissa, exponent, status) with x ≈ sign·mantissa·10^exponent, 3 significant digits,
    rounded like Python's '%.2e'. status is 'ok', 'zero' (|x| < 1e-8 flushed to zero) or
    'clipped' (|x| > 9.99e7 clipped to ±9.99e7).
    """
    if not math.isfinite(x):
        raise ValueError(f"cannot encode the non-finite number {x!r}")
    sign = "-" if x < 0 else "+"
    digits, exp10 = f"{abs(x):.2e}".split("e")  # '6.02', '+01'
    mantissa, exponent = int(digits.replace(".", "")), int(exp10) - 2
    if x == 0 or exponent < MIN_EXP:
        return "+", 0, 0, ("ok" if x == 0 else "zero")
    if exponent > MAX_EXP:
        return sign, 999, MAX_EXP, "clipped"
    return sign, mantissa, exponent, "ok"


def number_to_tokens(x, encoding, counts=None):
    """
    The tokens of one number: number_to_tokens(-60.2, "p10") == ["-", "6", "0", "2", "E-1"].
    Out-of-range values are flushed to zero or clipped, and counted in the dict `counts` if given.
    """
    if encoding == "xval":
        return [NUM]
    sign, m, e, status = round_number(x)
    if counts is not None and status != "ok":
        counts[status] = counts.get(status, 0) + 1
    return _spell(sign, m, e, encoding)


def _spell(sign, mantissa, exponent, encoding):
    """The tokens of ±mantissa·10^exponent in a text encoding: _spell("-", 602, -1, "b1999") == ["-602", "E-1"]."""
    mant = f"{mantissa:03d}"
    if encoding == "p10":
        return [sign, *mant, f"E{exponent}"]
    if encoding == "p1000":
        return [sign, mant, f"E{exponent}"]
    if encoding == "b1999":
        return [sign + mant, f"E{exponent}"]
    if encoding == "fp15":
        return [f"{sign}{mant}E{exponent}"]
    raise ValueError(f"unknown encoding {encoding!r}; expected one of {', '.join(ENCODINGS)}")


_EXP_RE = r"E(-?[0-9]+)"
_STRICT = {  # the exact token pattern of each text encoding, joined by spaces
    "p10": re.compile(r"([+-]) ([0-9]) ([0-9]) ([0-9]) " + _EXP_RE),
    "p1000": re.compile(r"([+-]) ([0-9]{3}) " + _EXP_RE),
    "b1999": re.compile(r"([+-])([0-9]{3}) " + _EXP_RE),
    "fp15": re.compile(r"([+-])([0-9]{3})" + _EXP_RE),
}


def tokens_to_number(tokens, encoding):
    """
    The value of one number's tokens, or NaN if they are not exactly a valid number of that
    encoding: tokens_to_number(["-602E-1"], "fp15") == -60.2. xVal's value is not in its tokens
    (it comes from the number head), so "xval" is an error here.
    """
    if encoding == "xval":
        raise ValueError("xval numbers carry their value in the values array, not in tokens")
    if encoding not in _STRICT:
        raise ValueError(f"unknown encoding {encoding!r}; expected one of {', '.join(ENCODINGS)}")
    if len(tokens) != TOKENS_PER_NUMBER[encoding] or not all(isinstance(t, str) for t in tokens):
        return float("nan")
    m = _STRICT[encoding].fullmatch(" ".join(tokens))
    if m is None:
        return float("nan")
    sign, *mant, exp = m.groups()
    mant, exp = "".join(mant), int(exp)
    if mant == "000":  # zero has exactly one spelling
        return 0.0 if (sign, exp) == ("+", 0) else float("nan")
    if mant[0] == "0" or not MIN_EXP <= exp <= MAX_EXP or f"E{exp}" not in EXPONENTS:
        return float("nan")
    return float(f"{sign}{mant}e{exp}")


# -----------------------------------------------------------------------------
# vocabulary: specials, then the encoding's number tokens, then the dataset's text tokens


class Vocab:
    """Token strings <-> ids for one encoding. Number tokens and text tokens never share an id,
    so the operator '-' and the sign '-' are different tokens."""

    def __init__(self, text_tokens, encoding):
        self.encoding = encoding
        self.text_tokens = list(text_tokens)
        self.number_tokens = number_vocab(encoding)
        self.itos = list(CONTROL_TOKENS) + self.number_tokens + self.text_tokens
        self.first_number_id = len(CONTROL_TOKENS)
        self.first_text_id = len(CONTROL_TOKENS) + len(self.number_tokens)
        self.num_id = self.first_number_id if encoding == "xval" else None
        self._number_ids = {t: i + self.first_number_id for i, t in enumerate(self.number_tokens)}
        self._text_ids = {t: i + self.first_text_id for i, t in enumerate(self.text_tokens)}
        # a number's first token carries its sign; that is how spans are found again in arrays
        firsts = [t for t in self.number_tokens if t[0] in "+-" or t == NUM]
        self.number_start_ids = np.array(sorted(self._number_ids[t] for t in firsts))

    def __len__(self):
        return len(self.itos)

    def text_id(self, token, where="text"):
        if token not in self._text_ids:
            raise TextError(f"{where}: {token!r} is not in the vocabulary built from the training "
                            f"split ({len(self.text_tokens)} text tokens)")
        return self._text_ids[token]

    def number_ids(self, tokens):
        return [self._number_ids[t] for t in tokens]

    def is_number(self, ids):
        ids = np.asarray(ids)
        return (ids >= self.first_number_id) & (ids < self.first_text_id)

    def decode_number(self, ids):
        """Strict decoding of a text-encoded number from ids (NaN unless a valid pattern)."""
        ids = [int(i) for i in ids]
        if not all(self.first_number_id <= i < self.first_text_id for i in ids):
            return float("nan")
        return tokens_to_number([self.itos[i] for i in ids], self.encoding)


def encode(text, vocab, where="text", allow_ask=False, counts=None):
    """
    One sample -> (ids, values, ask): int64 token ids, float32 values (the number at every token
    of a number, 1.0 elsewhere) and a bool array marking the tokens of [?] numbers to predict.
    counts (a dict) accumulates how many numbers were clipped or flushed to zero.
    """
    return encode_pieces(split_text(text, where, allow_ask), vocab, where, counts)


def encode_pieces(pieces, vocab, where="text", counts=None):
    """encode() for text already split by split_text."""
    ids, values, ask = [], [], []
    enc = vocab.encoding
    for kind, v in pieces:
        if kind == "text":
            ids.append(vocab.text_id(v, where))
            values.append(1.0)
            ask.append(False)
            continue
        value = 1.0 if kind == "ask" else v
        if enc == "xval" and abs(value) >= FLOAT32_OVERFLOW:
            raise TextError(f"{where}: the number {value!r} overflows float32, the dtype of xVal's values "
                            f"(at most {np.finfo(np.float32).max:.7g} in magnitude)")
        toks = number_to_tokens(value, enc, counts if kind == "num" else None)
        ids += vocab.number_ids(toks)
        values += [value] * len(toks)
        ask += [kind == "ask"] * len(toks)
    with np.errstate(over="ignore"):  # a text encoding's value beyond float32 becomes inf (unused; xVal refuses it)
        values = np.array(values, np.float32)
    return np.array(ids, np.int64), values, np.array(ask, bool)


def number_spans(ids, vocab):
    """(start, end) token ranges of the numbers in one sample's ids."""
    ids = np.asarray(ids)
    starts = np.flatnonzero(np.isin(ids, vocab.number_start_ids))
    width = TOKENS_PER_NUMBER[vocab.encoding]
    return [(int(s), int(s) + width) for s in starts]


# -----------------------------------------------------------------------------
# the fast path: many lines split at once and encoded in every encoding
#
# split_text is the definition of the split, one character at a time as the rules read. It stays the
# tokenizer of single lines (sample.py and eval.py need [?] and character spans) and the reference the
# fast path is tested against, byte for byte (tests/test_tokenize_fast.py). Datasets go through
# encode_lines: one compiled regular expression over a whole chunk of lines finds the numbers, a run of
# them per match (joined by commas, which cost no token between two numbers, or by JSON's '],['); the
# text between two runs is split by split_text once per distinct string; numbers are read, rounded and
# looked up with numpy, once for all encodings. A line the fast path cannot vouch for (a number running
# into a word, non-ASCII text, whitespace other than single spaces, a non-finite number, an unknown text
# token, an xVal value beyond float32) goes through split_text and encode_pieces instead, which encode
# it or raise the error naming its file and line.

_UNSIGNED = r"(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)"  # _NUMBER without its exponent
_EXPONENT = r"(?:[eE][+-]?+[0-9]++)?+"
_U = re.escape("".join(sorted(_UNARY_AFTER)))
# Where split_text reads a number: at a digit that is not inside a word (no letter, digit, _ or '.'
# before it), at a '.' followed by a digit, or at a sign it calls unary: one of _UNARY_AFTER before it,
# perhaps with one space between, or the start of the line. The first character is consumed before the
# look-behinds test it, so that the regex engine can skip to candidates; possessive quantifiers (++, *+)
# take what _NUMBER's greedy match takes, without keeping backtracking state.
_FIRST = (rf"[0-9.+-](?:(?<=[0-9])(?<![\w.][0-9])[0-9]*+(?:\.[0-9]*+)?+|(?<=\.)[0-9]++"
          rf"|(?:(?<=[{_U}][+-])|(?<=[{_U}] [+-])|(?<=^[+-])|(?<=^ [+-])){_UNSIGNED}){_EXPONENT}")
# numbers joined by a comma, alone or in a JSON bracket token ('],[', ']],[['): few and long matches
_NUMBER_RUN = re.compile(rf"({_FIRST}(?:(?:,|\]++,\[++)[+-]?+{_UNSIGNED}{_EXPONENT})*+)", re.M)
_ODD_SPACE = re.compile(r"[^\S ]|  ")  # whitespace the look-behinds above cannot see through


class _Segments(dict):
    """
    The distinct texts between numbers -> their id, each split once by split_text. A text may span
    line ends ('\n'); it is split line by line. Per text: its token ids (in `tokens`), where each line
    end falls among them, and whether its lines must go through split_text instead (`unsure`).
    """

    def __init__(self):
        super().__init__()
        self.tokens, self.token_ids = [], {}  # the distinct text tokens
        self.pieces = []  # per text: the ids of its tokens, all its lines end to end
        self.line_ends = []  # per text: how many of its tokens come before each of its line ends
        self.unsure = []  # per text: a line it touches must go through split_text
        self.word_first = []  # per text: it starts with a word character (after a number: they touch)

    def __missing__(self, segment):
        ids, ends, unsure = [], [], False
        for part in segment.split("\n"):
            try:
                pieces = split_text(part)
                unsure = unsure or any(kind != "text" for kind, _ in pieces)
            except TextError:  # nan or inf: split_text raises it again with the line
                pieces, unsure = [], True
            unsure = unsure or not part.isascii() or _ODD_SPACE.search(part) is not None
            ids += [self.token_id(token) for _, token in pieces]
            ends.append(len(ids))
        self.pieces.append(ids)
        self.line_ends.append(ends[:-1])
        self.unsure.append(unsure)
        self.word_first.append(_WORD.match(segment) is not None)
        self[segment] = len(self.pieces) - 1
        return self[segment]

    def token_id(self, token):
        if token not in self.token_ids:
            self.token_ids[token] = len(self.tokens)
            self.tokens.append(token)
        return self.token_ids[token]


class _SplitLines:
    """
    The pieces of many lines, as split_text gives them, in flat arrays: is_num (P,) marks the number
    pieces, text (T,) holds the text pieces' indices in `tokens`, values (N,) the numbers in order,
    text_per_line and numbers_per_line (L,) count them, and `unsure` (L,) marks the lines whose
    pieces must come from split_text instead.
    """

    def __init__(self, lines):
        n_lines = len(lines)
        self.unsure = np.zeros(n_lines, bool)
        chunk = "\n".join(lines)
        if chunk.count("\n") != n_lines - 1:  # a line holding a line end: split_text judges it
            self.unsure[[i for i, line in enumerate(lines) if "\n" in line]] = True
            chunk = "\n".join("" if "\n" in line else line for line in lines)
        parts = _NUMBER_RUN.split(chunk)  # text, run, text, run, ..., text; a run never spans lines
        segments, runs = parts[0::2], parts[1::2]
        table = _Segments()

        # the numbers of all runs end to end; inside a run, one comma between two numbers, alone or
        # within a bracket token such as '],[' (after number after[i], token bracket[i])
        per_run, self.values = np.zeros(0, np.int64), np.zeros(0)
        brackets_per_run, after, bracket = np.zeros(len(runs), np.int64), np.zeros(0, np.int64), []
        if runs:
            joined = ";".join(runs)
            chars = np.frombuffer(joined.encode("ascii"), np.uint8)
            commas, semicolons = np.flatnonzero(chars == ord(",")), np.flatnonzero(chars == ord(";"))
            per_run = np.diff(np.searchsorted(commas, semicolons), prepend=0, append=len(commas)) + 1
            # float() of every literal without a string each: numpy parses with float()'s own routine
            # (PyOS_string_to_double), so the values are float()'s to the bit
            self.values = np.fromstring(joined.translate(_LITERALS_ONLY), sep=",")
            if len(self.values) != per_run.sum():  # cannot happen for what _NUMBER_RUN matches
                raise AssertionError("numpy read another count of numbers than _NUMBER_RUN matched")
            at = commas[chars[commas - 1] == ord("]")]
            if len(at):
                run = np.searchsorted(semicolons, at)
                brackets_per_run = np.bincount(run, minlength=len(runs))
                after = np.searchsorted(commas, at) + run  # numbers before the comma, less one
                closing, opening = _bracket_run(chars, at, -1, ord("]")), _bracket_run(chars, at, 1, ord("["))
                base = int(opening.max()) + 1
                shapes, which = np.unique(closing * base + opening, return_inverse=True)
                bracket = np.array([table.token_id("]" * (s // base) + "," + "[" * (s % base)) for s in shapes])[which]

        # the texts between runs, split once per distinct string
        segment = np.fromiter(map(table.__getitem__, segments), np.int64, len(segments))
        self.tokens = table.tokens
        line_ends = np.array([len(e) for e in table.line_ends], np.int64)[segment]
        text_line = np.cumsum(line_ends) - line_ends  # the line each text starts on
        run_line = text_line[1:]  # run h follows text h, on the line text h ends on
        suspects = np.array(table.unsure)[segment]
        suspects[1:] |= np.array(table.word_first)[segment[1:]]  # a number running into a word ('1.5x', '2e')
        for g in np.flatnonzero(suspects):
            self.unsure[text_line[g]:text_line[g] + line_ends[g] + 1] = True
        finite = np.isfinite(self.values)
        if not finite.all():
            self.unsure[np.repeat(run_line, per_run)[~finite]] = True

        # the pieces: text g, then run g (numbers and bracket tokens), for every g; a comma alone
        # between two numbers costs no token
        lengths = np.array([len(p) for p in table.pieces], np.int64)
        comma = [table.token_ids.get(",")]
        lone_comma = np.array([p == comma for p in table.pieces])[segment] & (line_ends == 0)
        lone_comma[[0, -1]] = False  # the chunk's first and last texts are a line's first and last
        n_text = np.where(lone_comma, 0, lengths[segment])
        size = np.empty(len(segments) + len(runs), np.int64)
        size[0::2], size[1::2] = n_text, per_run + brackets_per_run
        start = np.cumsum(size) - size
        n_numbers = len(self.values)
        brackets_before = np.zeros(n_numbers, np.int64)  # bracket tokens before each number
        brackets_before[after + 1] = 1  # at most one after each number
        brackets_before = np.cumsum(brackets_before)
        first_number = np.cumsum(per_run) - per_run
        number_piece = (np.repeat(start[1::2] - first_number - brackets_before[first_number], per_run)
                        + np.arange(n_numbers) + brackets_before)
        self.is_num = np.zeros(int(size.sum()), bool)
        self.is_num[number_piece] = True
        text = np.empty(len(self.is_num), np.int64)
        within = np.arange(int(n_text.sum())) - np.repeat(np.cumsum(n_text) - n_text, n_text)
        flat = np.array([t for p in table.pieces for t in p], np.int64)
        text[np.repeat(start[0::2], n_text) + within] = flat[np.repeat((np.cumsum(lengths) - lengths)[segment], n_text) + within]
        text[number_piece[after] + 1] = bracket
        self.text = text[~self.is_num]

        # the first piece of every line after the first: inside a text, after its tokens before the line end
        crossing = np.flatnonzero(line_ends)
        ends_flat = np.array([e for ends in table.line_ends for e in ends], np.int64)
        ends_offsets = np.cumsum([len(e) for e in table.line_ends]) - [len(e) for e in table.line_ends]
        k = np.repeat(crossing, line_ends[crossing])
        within = np.arange(len(k)) - np.repeat(np.cumsum(line_ends[crossing]) - line_ends[crossing], line_ends[crossing])
        line_start = np.concatenate([[0], start[2 * k] + ends_flat[ends_offsets[segment[k]] + within], [len(self.is_num)]])
        self.numbers_per_line = np.diff(np.concatenate([[0], np.cumsum(self.is_num)])[line_start])
        self.text_per_line = np.diff(line_start) - self.numbers_per_line


_LITERALS_ONLY = str.maketrans({"[": None, "]": None, ";": ","})  # numbers joined by single commas


def _bracket_run(chars, at, step, bracket):
    """How many `bracket` characters follow (step 1) or precede (step -1) each position `at`."""
    count, going, k = np.zeros(len(at), np.int64), np.ones(len(at), bool), 1
    while going.any():
        near = np.clip(at + step * k, 0, len(chars) - 1)
        going &= (chars[near] == bracket) & (near == at + step * k)
        count += going
        k += 1
    return count


_POW10 = np.array([float(f"1e{k}") for k in range(-16, 13)])  # 10^k exactly rounded, k = -16..12


def round_numbers(x):
    """
    round_number for an array, with numpy: (negative, mantissa, exponent, status) arrays, status 0
    for 'ok', 1 for 'zero' and 2 for 'clipped'. Exactly Python's '%.2e': the scaled value is off by
    less than 1e-12, so its rounding is certain unless it lies within 1e-9 of a tie or of a decade;
    those few go through Python's formatting.
    """
    x = np.asarray(x, np.float64)
    if not np.isfinite(x).all():
        raise ValueError(f"cannot encode the non-finite number {x[~np.isfinite(x)][0]!r}")
    a = np.clip(np.abs(x), 1e-12, 1e10)  # beyond these, zero or clipped whatever the rounding
    exponent = np.floor(np.log10(a)).astype(np.int64) - 2  # of a 3-digit mantissa
    scaled = a / _POW10[exponent + 16]
    exponent += (scaled >= 1000).astype(np.int64) - (scaled < 100)  # log10 can miss a decade
    scaled = a / _POW10[exponent + 16]
    mantissa = np.rint(scaled).astype(np.int64)
    up = mantissa == 1000  # 999.5 and above round to 1.00 of the next decade
    mantissa[up], exponent[up] = 100, exponent[up] + 1
    unsure = (np.abs(scaled - np.floor(scaled) - 0.5) < 1e-9) | (scaled < 100 + 1e-9) | (scaled > 1000 - 1e-9)
    for i in np.flatnonzero(unsure):
        digits, exp10 = f"{a[i]:.2e}".split("e")
        mantissa[i], exponent[i] = int(digits.replace(".", "")), int(exp10) - 2
    status = np.where(exponent < MIN_EXP, 1, np.where(exponent > MAX_EXP, 2, 0))
    status[x == 0] = 0
    negative = (x < 0) & (status != 1)
    mantissa[status == 2], exponent[status == 2] = 999, MAX_EXP
    mantissa[(status == 1) | (x == 0)], exponent[(status == 1) | (x == 0)] = 0, 0
    return negative, mantissa, exponent, status


@functools.lru_cache(maxsize=None)
def _number_id_table(encoding):
    """The ids of every number of a text encoding: table[negative, mantissa, exponent - MIN_EXP] (k,)."""
    vocab = Vocab([], encoding)  # number ids do not depend on the text tokens
    table = np.zeros((2, 1000, MAX_EXP - MIN_EXP + 1, TOKENS_PER_NUMBER[encoding]), np.int64)
    for negative, sign in enumerate("+-"):
        for m in range(100, 1000):
            for e in range(MIN_EXP, MAX_EXP + 1):
                table[negative, m, e - MIN_EXP] = vocab.number_ids(_spell(sign, m, e, encoding))
    table[0, 0, -MIN_EXP] = vocab.number_ids(_spell("+", 0, 0, encoding))
    return table


def _encode_split_lines(split, text_index, vocabs):
    """encode_lines' result for lines split by _SplitLines, none of them unsure; text_index (T,):
    the vocabulary index of each text piece."""
    is_num, n = split.is_num, len(split.values)
    with np.errstate(over="ignore"):  # as encode_pieces: inf beyond float32 in a text encoding's values
        values32 = split.values.astype(np.float32)
    if any(enc != "xval" for enc in vocabs):
        negative, mantissa, exponent, status = round_numbers(split.values)
    out = {}
    for enc, vocab in vocabs.items():
        k = TOKENS_PER_NUMBER[enc]
        counts = {"clipped": 0, "zero": 0}
        if enc == "xval":
            number_ids = np.full((n, 1), vocab.num_id)
        else:
            number_ids = _number_id_table(enc)[negative.astype(np.int64), mantissa, exponent - MIN_EXP]  # (N, k)
            counts = {"clipped": int((status == 2).sum()), "zero": int((status == 1).sum())}
        if k == 1:  # one token per piece
            ids = np.empty(len(is_num), np.int64)
            ids[~is_num], ids[is_num] = vocab.first_text_id + text_index, number_ids[:, 0]
            values = np.ones(len(is_num), np.float32)
            values[is_num] = values32
        else:  # (P, k): a text piece fills column 0, a number all k
            ids = np.zeros((len(is_num), k), np.int64)
            ids[~is_num, 0] = vocab.first_text_id + text_index
            ids[is_num] = number_ids
            values = np.ones((len(is_num), k), np.float32)
            values[is_num] = values32[:, None]
            keep = np.zeros((len(is_num), k), bool)
            keep[:, 0] = keep[is_num] = True
            ids, values = ids[keep], values[keep]
        dtype = np.uint16 if len(vocab) < 2**16 else np.int32
        out[enc] = (ids.astype(dtype), values, split.text_per_line + k * split.numbers_per_line,
                    split.numbers_per_line.copy(), counts)
    return out


@functools.lru_cache(maxsize=16)
def _cached_vocab(text_tokens, encoding):
    """Vocab(text_tokens, encoding), built once per process (FP15's takes milliseconds)."""
    return Vocab(text_tokens, encoding)


def _text_index(split, position):
    """The index in the vocabulary of each text piece, -1 where unknown; position: token -> index."""
    return np.array([position.get(t, -1) for t in split.tokens], np.int64)[split.text]


def encode_lines(lines, text_tokens, encodings, path="text", first_line=0):
    """
    Encode lines in each of `encodings`, splitting every line once: {encoding: (ids, values,
    lengths, numbers, counts)}, with the ids (uint16 where the vocabulary allows, else int32) and
    float32 values of all lines end to end, tokens and numbers per line, and how many numbers were
    clipped or flushed to zero. Errors name path:line, counting from first_line + 1. The arrays are
    encode_lines_reference's, byte for byte.
    """
    vocabs = {enc: _cached_vocab(tuple(text_tokens), enc) for enc in encodings}
    position = {token: i for i, token in enumerate(text_tokens)}
    split = _SplitLines(lines)
    text_index = _text_index(split, position)
    slow = split.unsure.copy()
    unknown = text_index < 0
    if unknown.any():
        slow[np.repeat(np.arange(len(lines)), split.text_per_line)[unknown]] = True
    beyond = np.abs(split.values) >= FLOAT32_OVERFLOW
    if "xval" in vocabs and beyond.any():  # xVal's values are float32
        slow[np.repeat(np.arange(len(lines)), split.numbers_per_line)[beyond]] = True
    if not slow.any():
        return _encode_split_lines(split, text_index, vocabs)
    # the lines that need split_text, one at a time and in order (the first error is raised), the rest at once
    slow_rows = np.flatnonzero(slow)
    reference = [_encode_lines_reference([lines[j]], vocabs, path, first_line + j) for j in slow_rows]
    rest = [line for line, s in zip(lines, slow) if not s]
    if rest:
        split = _SplitLines(rest)
        fast = _encode_split_lines(split, _text_index(split, position), vocabs)
    out = {}
    for enc in vocabs:
        per_line = [None] * len(lines)  # (ids, values, length, numbers) of each line
        for j, r in zip(slow_rows, reference):
            per_line[j] = (r[enc][0], r[enc][1], r[enc][2], r[enc][3])
        counts = {k: sum(r[enc][4][k] for r in reference) for k in ("clipped", "zero")}
        if rest:
            ids, values, lengths, numbers, fast_counts = fast[enc]
            cuts = np.cumsum(lengths)[:-1]
            rows = np.flatnonzero(~slow)
            for j, i, v, length, number in zip(rows, np.split(ids, cuts), np.split(values, cuts),
                                                lengths[:, None], numbers[:, None]):
                per_line[j] = (i, v, length, number)
            counts = {k: counts[k] + fast_counts[k] for k in counts}
        out[enc] = tuple(np.concatenate([p[field] for p in per_line]) for field in range(4)) + (counts,)
    return out


def build_text_vocab(lines, where="train", first_line=0):
    """The sorted set of text tokens of some lines (numbers excluded), as split_text splits them;
    first_line numbers errors."""
    if not lines:
        return []
    split = _SplitLines(lines)
    tokens = set()
    for j in np.flatnonzero(split.unsure):  # in order, so that the first error is raised
        tokens.update(v for kind, v in split_text(lines[j], f"{where}:{first_line + j + 1}") if kind == "text")
    sure = ~split.unsure[np.repeat(np.arange(len(lines)), split.text_per_line)]
    tokens.update(split.tokens[i] for i in np.unique(split.text[sure]))
    return sorted(tokens)


def encode_lines_reference(lines, text_tokens, encodings, path="text", first_line=0):
    """encode_lines one line at a time through split_text and encode_pieces: the reference."""
    return _encode_lines_reference(lines, {enc: Vocab(text_tokens, enc) for enc in encodings}, path, first_line)


def _encode_lines_reference(lines, vocabs, path, first_line):
    out = {enc: {"ids": [], "values": [], "lengths": [], "numbers": [], "counts": {"clipped": 0, "zero": 0}}
           for enc in vocabs}
    for j, line in enumerate(lines):
        where = f"{path}:{first_line + j + 1}"
        pieces = split_text(line, where)
        n_numbers = sum(kind == "num" for kind, _ in pieces)
        for enc, o in out.items():
            ids, values, _ = encode_pieces(pieces, vocabs[enc], where, o["counts"])
            o["ids"].append(ids.astype(np.uint16 if len(vocabs[enc]) < 2**16 else np.int32))
            o["values"].append(values)
            o["lengths"].append(len(ids))
            o["numbers"].append(n_numbers)
    return {enc: (np.concatenate(o["ids"]), np.concatenate(o["values"]), np.array(o["lengths"]),
                  np.array(o["numbers"]), o["counts"]) for enc, o in out.items()}


# -----------------------------------------------------------------------------
# datasets on disk: <dir>/<split>.txt -> <dir>/vocab.json and <dir>/<encoding>/<split>.*.npy


def _line_chunks(path, chunk, per_wave):
    """Waves of per_wave (first line index, lines) chunks of a text file, read lazily."""
    wave, lines, first = [], [], 0
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.rstrip("\n")
            if not line.strip():
                raise TextError(f"{path}:{i + 1}: empty line; expected one sample per line")
            lines.append(line)
            if len(lines) == chunk:
                wave.append((first, lines))
                lines, first = [], i + 1
                if len(wave) == per_wave:
                    yield wave
                    wave = []
    if lines:
        wave.append((first, lines))
    if wave:
        yield wave


def read_lines(f, where):
    """The lines of a binary file object, decoded as UTF-8 without their line ends; a line that is
    not UTF-8 (Latin-1 text, say) is a TextError naming where:line."""
    lines = []
    for i, raw in enumerate(f, 1):
        try:
            lines.append(raw.decode("utf-8").rstrip("\r\n"))
        except UnicodeDecodeError as e:
            raise TextError(f"{where}:{i}: not UTF-8 text (byte {raw[e.start]:#04x} at column {e.start + 1})") from None
    return lines


def require_dataset(data_dir):
    """
    A dataset is complete when it has meta.json, which prepare/ scripts write last and remove first:
    a folder without one is refused (a prepare run that did not finish, or text files of your own,
    which `tokenize_numbers.py DIR --plain-text` declares a dataset). Returns meta.json's path.
    """
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(f"{data_dir} is not a directory; expected a dataset written by a prepare/ script")
    meta = os.path.join(data_dir, "meta.json")
    if not os.path.exists(meta):
        raise FileNotFoundError(f"{meta} not found: {data_dir} is not a complete dataset (did a prepare/ run stop "
                                f"early? run it again); for text files of your own: python tokenize_numbers.py "
                                f"{data_dir} --plain-text")
    return meta


def dataset_splits(data_dir, plain_text=False):
    """
    The split names of a dataset, from its meta.json. With plain_text, a folder of <split>.txt files
    without meta.json (train.txt among them) becomes a dataset: a meta.json naming every split is
    written once every split is found to hold a sample.
    """
    meta = os.path.join(data_dir, "meta.json")
    declare = plain_text and os.path.isdir(data_dir) and not os.path.exists(meta)
    if declare:
        splits = sorted(f[:-4] for f in os.listdir(data_dir) if f.endswith(".txt") and "." not in f[:-4])
        if "train" not in splits:
            raise FileNotFoundError(f"{data_dir}: no train.txt; --plain-text expects <split>.txt files, "
                                    "train among them")
    else:
        with open(require_dataset(data_dir)) as f:
            try:
                splits = list(json.load(f)["splits"])
            except (ValueError, KeyError, TypeError) as e:
                raise TextError(f"{meta}: not a dataset's meta.json ({type(e).__name__}: {e})")
    for split in splits:  # every split has a sample before anything is written: a failure leaves nothing behind
        path = os.path.join(data_dir, f"{split}.txt")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} not found, but {meta} lists split {split!r}")
        with open(path, encoding="utf-8", errors="replace") as f:
            if not f.readline().strip():
                raise TextError(f"{path}:1: {'empty file' if os.path.getsize(path) == 0 else 'empty line'}; "
                                "expected one sample per line")
    if declare:
        _atomic_write_json(meta, {"dataset": "plain text", "splits": splits,
                                  "command": " ".join(["python"] + sys.argv)})
    return splits


def load_text_vocab(data_dir):
    require_dataset(data_dir)
    path = os.path.join(data_dir, "vocab.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found; run: python tokenize_numbers.py {data_dir}")
    with open(path) as f:
        return json.load(f)["text_tokens"]


def vocab_digest(text_tokens):
    """A short fingerprint of a text vocabulary, to catch arrays tokenized with another one."""
    return hashlib.sha1(json.dumps(text_tokens).encode()).hexdigest()[:12]


def _atomic_write_json(path, obj):
    atomic_write_text(path, json.dumps(obj, indent=1))


def _atomic_save(path, array):
    with atomic_file(path) as tmp:
        np.save(tmp, array)


def _encode_chunk(job):
    """encode_lines for a worker process: job = (lines, first line index, path, text tokens, encodings)."""
    lines, first_line, path, text_tokens, encodings = job
    return encode_lines(lines, text_tokens, encodings, path, first_line)


def _encode_chunk_reference(job):
    """_encode_chunk through encode_lines_reference (for the benchmark)."""
    lines, first_line, path, text_tokens, encodings = job
    return encode_lines_reference(lines, text_tokens, encodings, path, first_line)


class _ArrayWriter:
    """Appends one encoding's chunks to raw temporary files, so a split of any size is written
    with bounded memory, then turns them into .npy files under their final names."""

    def __init__(self, out_dir, split):
        os.makedirs(out_dir, exist_ok=True)
        self.base = os.path.join(out_dir, split)
        self.raw = {name: open(f"{self.base}.{name}.raw.tmp", "wb") for name in ("ids", "values")}
        self.dtype, self.lengths, self.numbers = None, [], []
        self.counts = {"clipped": 0, "zero": 0}

    def add(self, ids, values, lengths, numbers, counts):
        self.dtype = ids.dtype
        self.raw["ids"].write(ids.tobytes())
        self.raw["values"].write(values.tobytes())
        self.lengths.append(lengths)
        self.numbers.append(numbers)
        for k in self.counts:
            self.counts[k] += counts[k]

    def discard(self):
        for name, f in self.raw.items():
            f.close()
            os.remove(f"{self.base}.{name}.raw.tmp")

    def finish(self):
        lengths, numbers = np.concatenate(self.lengths), np.concatenate(self.numbers)
        total = int(lengths.sum())
        for name, dtype in (("ids", self.dtype), ("values", np.dtype(np.float32))):
            self.raw[name].close()
            raw = f"{self.base}.{name}.raw.tmp"
            with atomic_file(f"{self.base}.{name}.npy") as tmp, open(tmp, "wb") as out, open(raw, "rb") as data:
                header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (total,)}
                np.lib.format.write_array_header_1_0(out, header)  # an .npy header, then the bytes
                shutil.copyfileobj(data, out, 1 << 24)
            os.remove(raw)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # sample i: [o[i], o[i+1])
        _atomic_save(f"{self.base}.offsets.npy", offsets)
        return lengths, numbers


def encode_split(data_dir, split, encodings, workers=1, chunk=1000):
    """
    Encode <split>.txt into <encoding>/<split>.{ids,values,offsets}.npy and a JSON summary for
    each of `encodings`, a chunk of lines at a time; returns the summaries.
    """
    path = os.path.join(data_dir, f"{split}.txt")
    text_tokens = load_text_vocab(data_dir)
    writers = {enc: _ArrayWriter(os.path.join(data_dir, enc), split) for enc in encodings}
    pool = Pool(workers) if workers > 1 else None
    try:
        # waves of `workers` chunks: the text is read as it is encoded, never all at once
        for wave in _line_chunks(path, chunk, workers):
            jobs = [(lines, first, path, text_tokens, encodings) for first, lines in wave]
            for result in (pool.imap(_encode_chunk, jobs) if pool else map(_encode_chunk, jobs)):  # in order: the first error
                for enc, writer in writers.items():
                    writer.add(*result[enc])
        if not writers[encodings[0]].lengths:
            raise TextError(f"{path} holds no samples")
    except BaseException:
        for writer in writers.values():
            writer.discard()
        raise
    finally:
        if pool:
            pool.terminate()
    summaries = []
    for enc, writer in writers.items():
        lengths, n_numbers = writer.finish()
        counts = writer.counts
        summary = dict(
            split=split, encoding=enc, samples=len(lengths), tokens=int(lengths.sum()),
            tokens_per_sample_mean=round(float(lengths.mean()), 2), tokens_per_sample_max=int(lengths.max()),
            numbers_per_sample_mean=round(float(n_numbers.mean()), 2), numbers_per_sample_max=int(n_numbers.max()),
            clipped=counts["clipped"], flushed_to_zero=counts["zero"], vocab_size=len(Vocab(text_tokens, enc)),
            vocab_digest=vocab_digest(text_tokens),
        )
        _atomic_write_json(os.path.join(data_dir, enc, f"{split}.json"), summary)
        if counts["clipped"]:
            print(f"warning: {split}: {counts['clipped']} numbers beyond ±9.99e7 were clipped ({enc})")
        if counts["zero"]:
            print(f"note: {split}: {counts['zero']} numbers below 1e-8 in magnitude became 0 ({enc})")
        summaries.append(summary)
    return summaries


def build_vocab_file(data_dir, force=False):
    """Build vocab.json from the training split (once; it is shared by all encodings)."""
    path = os.path.join(data_dir, "vocab.json")
    if os.path.exists(path) and not force:
        return load_text_vocab(data_dir)
    train, tokens = os.path.join(data_dir, "train.txt"), set()
    for wave in _line_chunks(train, 10_000, 1):  # a chunk at a time: the split may not fit in memory
        for first, lines in wave:
            tokens.update(build_text_vocab(lines, train, first))
    tokens = sorted(tokens)
    _atomic_write_json(path, {"built_from": "train.txt", "text_tokens": tokens})
    return tokens


class Split:
    """A tokenized split, memory-mapped: sample i is ids[offsets[i]:offsets[i+1]] (and values)."""

    def __init__(self, data_dir, split, encoding):
        base = os.path.join(data_dir, encoding, split)
        if not os.path.exists(base + ".ids.npy"):
            raise FileNotFoundError(f"{base}.ids.npy not found; run: python tokenize_numbers.py "
                                    f"{data_dir} --encoding {encoding}")
        again = f"run again: python tokenize_numbers.py {data_dir} --encoding {encoding}"
        try:
            with open(base + ".json") as f:
                summary = json.load(f)
            self.ids = np.load(base + ".ids.npy", mmap_mode="r")
            self.values = np.load(base + ".values.npy", mmap_mode="r")
            self.offsets = np.load(base + ".offsets.npy")
        except (OSError, ValueError, EOFError) as e:  # missing, truncated or not an array
            raise ValueError(f"{base}: unreadable arrays ({type(e).__name__}: {e}); {again}")
        if summary.get("vocab_digest") != vocab_digest(load_text_vocab(data_dir)):  # absent in older arrays
            raise ValueError(f"{base}.ids.npy was tokenized with another vocab.json; {again}")
        # the four files of a split are written together: offsets that do not span exactly the ids
        # and values, or a sample count other than the summary's, are arrays of different runs
        o = self.offsets
        if (summary.get("split"), summary.get("encoding")) != (split, encoding):
            raise ValueError(f"{base}.json describes split {summary.get('split')!r} of {summary.get('encoding')!r}, "
                             f"not {split!r} of {encoding!r}; {again}")
        samples = summary.get("samples")
        if not (o.ndim == 1 and isinstance(samples, int) and samples >= 1 and len(o) == samples + 1 and o[0] == 0
                and np.all(o[1:] >= o[:-1]) and o[-1] == len(self.ids) == len(self.values)):
            raise ValueError(f"{base}.offsets.npy ({len(o) - 1} samples, {int(o[-1]) if len(o) else 0} tokens) "
                             f"does not match {base}.json ({samples} samples) and .ids.npy ({len(self.ids)} "
                             f"tokens): the files come from different runs; {again}")
        self.lengths = np.diff(self.offsets)

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        a, b = self.offsets[i], self.offsets[i + 1]
        return np.asarray(self.ids[a:b], np.int64), np.asarray(self.values[a:b], np.float32)


def bench(data_dir, n_lines=1000, workers=1, repeats=3):
    """
    Time the tokenizer on the first n_lines of <data_dir>/train.txt, writing nothing: the reference
    (split_text and encode_pieces, a line at a time) and the fast path (encode_lines), one after the
    other in each repeat so that both meet the same machine, for each encoding and for all five in one
    pass. One core: CPU seconds of this process; all cores: wall seconds of `workers` processes, each
    encoding a share of the lines. Prints medians over the repeats.
    """
    path = os.path.join(data_dir, "train.txt")
    lines = next(_line_chunks(path, n_lines, 1))[0][1]
    text_tokens = build_text_vocab(lines, path)
    numbers = int(encode_lines(lines, text_tokens, ENCODINGS, path)["xval"][3].sum())  # also warms the caches
    print(f"{path}: {len(lines)} lines, {numbers / len(lines):.1f} numbers per line; medians of {repeats} "
          f"repeats, reference and fast path in turn")
    print("\n| encodings | reference lines/s | fast lines/s | speed-up | fast numbers/s |\n|---|---|---|---|---|")
    for encodings in [[enc] for enc in ENCODINGS] + [list(ENCODINGS)]:
        seconds = {encode_lines_reference: [], encode_lines: []}
        for _ in range(repeats):
            for encoder, times in seconds.items():
                t0 = time.process_time()
                encoder(lines, text_tokens, encodings, path)
                times.append(time.process_time() - t0)
        reference, fast = (statistics.median(times) for times in seconds.values())
        name = "all five, one pass" if len(encodings) > 1 else encodings[0]
        print(f"| {name} | {len(lines) / reference:,.0f} | {len(lines) / fast:,.0f} | {reference / fast:.1f}× | "
              f"{numbers / fast:,.0f} |")
    print("(one core: lines per CPU second of this process)")
    if workers > 1:
        share = -(-len(lines) // workers)
        jobs = [(lines[i:i + share], i, path, text_tokens, list(ENCODINGS)) for i in range(0, len(lines), share)]
        seconds = {_encode_chunk_reference: [], _encode_chunk: []}
        with Pool(workers) as pool:
            pool.map(_encode_chunk, jobs)  # warm each worker's caches
            for _ in range(repeats):
                for encoder, times in seconds.items():
                    t0 = time.perf_counter()
                    pool.map(encoder, jobs)
                    times.append(time.perf_counter() - t0)
        reference, fast = (statistics.median(times) for times in seconds.values())
        print(f"all five in one pass on {workers} processes (wall time): reference {len(lines) / reference:,.0f} "
              f"lines/s, fast {len(lines) / fast:,.0f} lines/s ({reference / fast:.1f}×), "
              f"{numbers / fast:,.0f} numbers/s")


def main(argv=None):
    p = argparse.ArgumentParser(description="Tokenize a prepared dataset into arrays, or print its token statistics.")
    p.add_argument("data_dir", help="a folder written by a prepare/ script (train.txt, val.txt, ...)")
    p.add_argument("--encoding", default="xval", help=f"one of {', '.join(ENCODINGS)}, or 'all'")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--stats", action="store_true", help="print tokens/sample per encoding (tokenizes every encoding)")
    p.add_argument("--rebuild-vocab", action="store_true", help="rebuild vocab.json from train.txt")
    p.add_argument("--bench", action="store_true", help="time the tokenizer (reference and fast path, each "
                   "encoding and all five) on the first --bench-lines lines of train.txt; writes nothing")
    p.add_argument("--bench-lines", type=int, default=1000, help="lines --bench times (default 1000)")
    p.add_argument("--plain-text", action="store_true",
                   help="DIR holds <split>.txt files of your own, no meta.json: write one naming them and tokenize")
    args = p.parse_args(argv)
    if args.bench:
        try:
            return bench(args.data_dir, args.bench_lines, args.workers)
        except (TextError, FileNotFoundError) as e:
            sys.exit(f"error: {e}")
    encodings = ENCODINGS if args.encoding == "all" or args.stats else [args.encoding]
    for e in encodings:
        if e not in ENCODINGS:
            p.error(f"unknown encoding {e!r}; expected one of {', '.join(ENCODINGS)} or 'all'")
    t0 = time.time()
    reading = os.path.join(args.data_dir, "train.txt")  # the file being read, for an error that is not UTF-8
    try:
        splits = dataset_splits(args.data_dir, args.plain_text)
        text_tokens = build_vocab_file(args.data_dir, args.rebuild_vocab)
        print(f"{args.data_dir}: {len(text_tokens)} text tokens in vocab.json")
        table = []
        for split in splits:
            reading = os.path.join(args.data_dir, f"{split}.txt")
            for s in encode_split(args.data_dir, split, list(encodings), args.workers):
                table.append(s)
                enc = s["encoding"]
                print(f"{enc:>6} {split:>18}: {s['samples']} samples, tokens/sample mean "
                      f"{s['tokens_per_sample_mean']} max {s['tokens_per_sample_max']}, numbers/sample "
                      f"{s['numbers_per_sample_mean']}, vocab {s['vocab_size']}")
    except (TextError, FileNotFoundError) as e:
        sys.exit(f"error: {e}")
    except UnicodeDecodeError:
        with open(reading, "rb") as f:
            try:
                read_lines(f, reading)
            except TextError as e:
                sys.exit(f"error: {e}")
        raise
    if args.stats:
        print("\n| encoding | tokens/sample mean | max | numbers/sample mean | max |")
        print("|---|---|---|---|---|")
        for s in table:
            if s["split"] == "train":
                print(f"| {s['encoding']} | {s['tokens_per_sample_mean']} | {s['tokens_per_sample_max']} | "
                      f"{s['numbers_per_sample_mean']} | {s['numbers_per_sample_max']} |")
    print(f"done in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
