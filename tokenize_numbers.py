"""Text to token ids: numbers in text, the paper's five number encodings and the text
vocabulary. A sample (one line) splits into numbers and text tokens (punctuation runs such
as '],[', quoted keys, words); whitespace is dropped, and so is a comma between two numbers.
-60.2 becomes: P10 - 6 0 2 E-1, P1000 - 602 E-1, B1999 -602 E-1, FP15 -602E-1 (3 significant
digits, ±m·10^E, m in 100..999, E in -10..5), xVal [NUM] with -60.2 in a parallel float
array. xval_encode is xVal's alone, to copy. Many lines at once go through tokenize_fast.py.

    python tokenize_numbers.py data/arithmetic_ops2 --encoding xval   # a dataset's arrays
    python tokenize_numbers.py data/planets --stats                   # token statistics table
"""

import functools
import itertools
import re

import numpy as np

import tokenize_fast
from dataset import command
from util import TextError

ENCODINGS = ("xval", "p10", "p1000", "b1999", "fp15")
TOKENS_PER_NUMBER = {"xval": 1, "p10": 5, "p1000": 3, "b1999": 2, "fp15": 1}
# ids 0, 1, 2 in every vocabulary
CONTROL_TOKENS = ("[PAD]", "[MASK]", "[EOS]")
PAD_ID, MASK_ID, EOS_ID = 0, 1, 2
# the target id of positions that are not predicted (cross-entropy's ignore_index)
IGNORE = -100
# ASK marks a number to predict in sample.py's input
NUM, ASK = "[NUM]", "[?]"
# of the integer mantissa m in 100..999
MIN_EXP, MAX_EXP = -10, 5
EXPONENTS = [f"E{e}" for e in range(MIN_EXP, MAX_EXP + 1)]
# the smallest magnitude float32 rounds to inf (xVal's values are float32)
FLOAT32_OVERFLOW = 2.0**128 - 2.0**103

# -----------------------------------------------------------------------------
# numbers in text (docs/decisions.md#numbers-in-text)

# The number grammar, written once: every pattern that finds numbers is built from it. A number is
# digits with at most one point (12, 12., 1.5, .5), then maybe an exponent (1e-3). A sign belongs
# to it at the start and after one of _UNARY_AFTER; anywhere else it is an operator (2-3: 2 - 3).
_UNARY_AFTER = "([{,:=+-*/^<>"
# what may follow a number's first digits; apart for tokenize_fast.py, which starts after one digit
_AFTER_DIGITS = r"\.?+[0-9]*+"
_MANTISSA = rf"(?:[0-9]++{_AFTER_DIGITS}|\.[0-9]++)"
_EXPONENT = r"(?:[eE][+-]?+[0-9]++)?+"
# a whole string that is one number, such as a CSV cell
NUMBER = re.compile(rf"[+-]?+{_MANTISSA}{_EXPONENT}")
# a number in text for xval_encode: signed where a sign belongs to it, else not touching a word
# (x.5 is x, .5)
_XVAL_NUMBER = re.compile(
    rf"(?:^|(?<=[{re.escape(_UNARY_AFTER)}]))\s*+([+-]{_MANTISSA}{_EXPONENT})(?!\w)"
    rf"|(?:(?<!\w)|(?=\.))({_MANTISSA}{_EXPONENT})(?!\w)"
)


def xval_encode(text, text_ids, num_id):
    """xVal's tokenizer on its own (copy it with `import re` and the lines above it from
    _UNARY_AFTER): every number of `text` becomes the one token num_id and its value goes into a
    parallel list, where every other token has 1.0. The text between numbers goes to
    text_ids(str) -> list of ids, any tokenizer you like. A sign belongs to the number at the start
    and after ( [ { , : = + - * / ^ < > (spaces between allowed: x = -3 holds -3, 2-3 holds 2 and
    3); a number touching a word is part of it (t2m, 1e5x); a comma between two numbers costs no
    token. The model embeds token i as values[i] * wte[ids[i]].

    >>> xval_encode("[-1.5, 20]", lambda s: [ord(c) for c in s if c != " "], 0)
    ([91, 0, 0, 93], [1.0, -1.5, 20.0, 1.0])
    """
    ids, values, at, numbers = [], [], 0, list(_XVAL_NUMBER.finditer(text))
    for k, m in enumerate(numbers + [None]):
        # the text before this number
        between = text[at : m.start(m.lastindex) if m else len(text)]
        if between and not (0 < k < len(numbers) and between.strip() == ","):
            new = text_ids(between)
            ids, values = ids + new, values + [1.0] * len(new)
        if m:
            ids.append(num_id)
            values.append(float(m[m.lastindex]))
            at = m.end()
    return ids, values


# the tokenizer's split: numbers (two signs kept, to name the malformed --5), words, punctuation
_LITERAL = re.compile(rf"([+-]{{0,2}})({_MANTISSA}{_EXPONENT})")
# a quoted key ("planet0") or a word (t2m)
_WORD = re.compile(r"""(["'])[^\W\d]\w*\1|\w+""")
# a run of punctuation ('],[') stops before a number's sign or point
_PUNCT_END = rf"""[\w"']|\.[0-9]|(?<=[{re.escape(_UNARY_AFTER)}])[+-][0-9.]"""
_PUNCT = {
    False: re.compile(rf"""["']|\S(?:(?!{_PUNCT_END})\S)*"""),
    True: re.compile(rf"""["']|\S(?:(?!{_PUNCT_END}|{re.escape(ASK)})\S)*"""),
}
_SPACE, _WORD_CHAR = re.compile(r"\s*"), re.compile(r"\w")


def split_text(text, where="text", allow_ask=False, spans=None):
    """
    Split one sample into pieces: ("num", float) for numbers, ("text", str) for everything else,
    and ("ask", None) for the marker [?] when allow_ask. `where` names the sample in errors.
    If `spans` is a list, the (start, end) character range of each piece is appended to it.

    >>> split_text("(1.42-8.20)")
    [('text', '('), ('num', 1.42), ('text', '-'), ('num', 8.2), ('text', ')')]
    """
    # num_at: the last number's span
    pieces, at, i, num_at = [], [], _SPACE.match(text).end(), (-9, -9)
    while i < len(text):
        unary = not pieces or (pieces[-1][0] == "text" and pieces[-1][1][-1] in _UNARY_AFTER)
        m = _LITERAL.match(text, i)
        # a sign that is not unary is an operator
        m = m if m and (unary or not m[1]) else None
        if allow_ask and text.startswith(ASK, i):
            piece, end = ("ask", None), i + len(ASK)
        elif m and not _WORD_CHAR.match(text, m.end()):
            # malformed: --5 (or (--5, the first sign a piece of its own), 1.2.3 (two numbers
            # touch), 1,000
            signs = m[1] and i and text[i - 1] in "+-" and (i == 1 or text[i - 2] in _UNARY_AFTER)
            touch = num_at[1] == i or (
                num_at[1] == i - 1 and pieces[-1] == ("text", ",") and re.match("0[0-9]", m[2])
            )
            if len(m[1]) == 2 or signs or touch:
                first = i if len(m[1]) == 2 else i - 1 if signs else num_at[0]
                raise TextError(
                    f"{where}: malformed number {text[first : m.end()]!r} (two points, two signs or"
                    " a thousands comma); write one plain number"
                )
            if abs(value := float(m.group())) == float("inf"):
                raise TextError(f"{where}: number literal {m.group()!r} overflows float64")
            piece, end, num_at = ("num", value), m.end(), (i, m.end())
        elif m and "." in m[2] and not re.search("[eE]", m[2]):
            raise TextError(
                f"{where}: number {m[2]!r} runs into the word starting at column {m.end()};"
                " separate them"
            )
        else:
            w = _WORD.match(text, i)
            token = w.group() if w else _PUNCT[allow_ask].match(text, i).group()
            if not (w and w[1]) and token.lower() in ("nan", "inf", "infinity"):
                raise TextError(
                    f"{where}: {token!r} is not a finite number; nan and inf are not allowed"
                )
            piece, end = ("text", token), i + len(token)
        pieces.append(piece)
        at.append((i, end))
        i = _SPACE.match(text, end).end()
    # a comma between two numbers costs no token: a number has a fixed count of tokens, so adjacency
    # already separates them ([[1,2,3],[4,5,6]] -> [[ N N N ],[ N N N ]]), as the paper's context
    # lengths imply
    kinds = ["text", *(kind for kind, _ in pieces), "text"]
    keep = [p != ("text", ",") or "text" in (kinds[j], kinds[j + 2]) for j, p in enumerate(pieces)]
    if spans is not None:
        spans += itertools.compress(at, keep)
    return list(itertools.compress(pieces, keep))


# -----------------------------------------------------------------------------
# the five encodings


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
    if encoding not in tokens:
        raise ValueError(f"unknown encoding {encoding!r}; expected one of {', '.join(ENCODINGS)}")
    return tokens[encoding]


# 10^k exactly rounded, k = -16..12
_POW10 = np.array([float(f"1e{k}") for k in range(-16, 13)])


def round_numbers(x):
    """Numbers rounded to 3 significant digits as Python's '%.2e' rounds them: (negative,
    mantissa, exponent, status) arrays with x ≈ ±mantissa·10^exponent; status 0 'ok', 1
    'zero' (|x| < 1e-8 flushed to +0) or 2 'clipped' (|x| > 9.99e7 clipped to ±9.99e7). The
    scaled value is off by less than 1e-12, so its rounding is certain unless within 1e-9 of
    a tie or a decade: those few go through Python's formatting."""
    x = np.asarray(x, np.float64)
    if not np.isfinite(x).all():
        raise ValueError(f"cannot encode the non-finite number {x[~np.isfinite(x)][0]!r}")
    # beyond these, zero or clipped whatever the rounding
    a = np.clip(np.abs(x), 1e-12, 1e10)
    # scaled into [100, 1000): log10 can miss a decade, corrected after
    exponent = np.floor(np.log10(a)).astype(np.int64) - 2
    scaled = a / _POW10[exponent + 16]
    exponent += (scaled >= 1000).astype(np.int64) - (scaled < 100)
    scaled = a / _POW10[exponent + 16]
    mantissa = np.rint(scaled).astype(np.int64)
    # 999.5 and above round to 1.00 of the next decade
    up = mantissa == 1000
    mantissa[up], exponent[up] = 100, exponent[up] + 1
    near = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-9
    for i in np.flatnonzero(near | (scaled < 100 + 1e-9) | (scaled > 1000 - 1e-9)):
        digits, exp10 = f"{a[i]:.2e}".split("e")
        mantissa[i], exponent[i] = int(digits.replace(".", "")), int(exp10) - 2
    status = np.select([x == 0, exponent < MIN_EXP, exponent > MAX_EXP], [0, 1, 2], 0)
    mantissa[status == 2], exponent[status == 2] = 999, MAX_EXP
    zero = (status == 1) | (x == 0)
    mantissa[zero], exponent[zero] = 0, 0
    return (x < 0) & (status != 1), mantissa, exponent, status


def _tokens(negative, mantissa, exponent, encoding):
    """The tokens of ±mantissa·10^exponent: _tokens(True, 602, -1, "b1999") == ["-602", "E-1"]."""
    sign, mant, e = "-" if negative else "+", f"{mantissa:03d}", f"E{exponent}"
    return {
        "p10": [sign, *mant, e],
        "p1000": [sign, mant, e],
        "b1999": [sign + mant, e],
        "fp15": [sign + mant + e],
    }[encoding]


@functools.cache
def _numbers(encoding):
    """Every number of a text encoding: its ids as table[negative, mantissa, exponent - MIN_EXP]
    (k,), and {its tokens: its value}."""
    ids = dict(zip(number_vocab(encoding), itertools.count(len(CONTROL_TOKENS))))
    shape = (2, 1000, MAX_EXP - MIN_EXP + 1, TOKENS_PER_NUMBER[encoding])
    table, values = np.zeros(shape, np.int64), {}
    every = itertools.product((0, 1), range(100, 1000), range(MIN_EXP, MAX_EXP + 1))
    for n, m, e in [(0, 0, 0), *every]:
        tokens = _tokens(n, m, e, encoding)
        values[tuple(tokens)] = float(f"{'-' * n}{m}e{e}")
        table[n, m, e - MIN_EXP] = [ids[t] for t in tokens]
    return table, values


def tokens_to_number(tokens, encoding):
    """
    The value of one number's tokens, or NaN if they are not exactly a valid number of that
    encoding: tokens_to_number(["-602E-1"], "fp15") == -60.2. xVal's value is not in its tokens
    (it comes from the number head), so "xval" is an error here.
    """
    if encoding == "xval":
        raise ValueError("xval numbers carry their value in the values array, not in tokens")
    # an unknown encoding is an error
    number_vocab(encoding)
    tokens = tuple(t if isinstance(t, str) else None for t in tokens)
    return _numbers(encoding)[1].get(tokens, float("nan"))


# -----------------------------------------------------------------------------
# vocabulary: specials, then the encoding's number tokens, then the dataset's text tokens


class Vocab:
    """Token strings <-> ids for one encoding. Number tokens and text tokens never share an id,
    so the operator '-' and the sign '-' are different tokens."""

    def __init__(self, text_tokens, encoding):
        self.encoding, self.text_tokens = encoding, list(text_tokens)
        self.number_tokens = number_vocab(encoding)
        self.itos = [*CONTROL_TOKENS, *self.number_tokens, *self.text_tokens]
        self.first_number_id = len(CONTROL_TOKENS)
        self.first_text_id = len(CONTROL_TOKENS) + len(self.number_tokens)
        self.num_id = self.first_number_id if encoding == "xval" else None
        self._text_ids = {t: i for i, t in enumerate(self.text_tokens, self.first_text_id)}
        # sample.py sets a trained model's own
        self.unknown = (
            "add a sample with it to train.txt and tokenize with --rebuild-vocab, or write it as a"
            " number or a token the vocabulary has"
        )
        # a number's first token carries its sign; that is how spans are found again in arrays
        starts = enumerate(self.number_tokens, self.first_number_id)
        self.number_start_ids = np.array([i for i, t in starts if t[0] in "+-" or t == NUM])

    def __len__(self):
        return len(self.itos)

    def text_id(self, token, where="text"):
        if token not in self._text_ids:
            raise TextError(
                f"{where}: {token!r} is not in the vocabulary built from the training split "
                f"({len(self.text_tokens)} text tokens); {self.unknown}"
            )
        return self._text_ids[token]

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
    text_ids = []
    # in order, so that the first error is raised
    for kind, v in pieces:
        if kind == "text":
            text_ids.append(vocab.text_id(v, where))
        elif vocab.encoding == "xval" and kind == "num" and abs(v) >= FLOAT32_OVERFLOW:
            raise TextError(
                f"{where}: the number {v!r} overflows float32, the dtype of xVal's values "
                f"(at most {np.finfo(np.float32).max:.7g} in magnitude)"
            )
    is_num = np.array([kind != "text" for kind, _ in pieces], bool)
    values = [1.0 if kind == "ask" else v for kind, v in pieces if kind != "text"]
    counts = {} if counts is None else counts
    ids, values, reps = _spell(is_num, text_ids, np.array(values, np.float64), vocab, counts)
    ask = np.repeat([kind == "ask" for kind, _ in pieces], reps).astype(bool)
    return ids.astype(np.int64), values, ask


def _spell(is_num, text_ids, values, vocab, counts, rounded=None):
    """The ids and float32 values of pieces (is_num (P,)): text_ids where ~is_num, each number's
    tokens where is_num (values (N,)); and each piece's count of tokens. counts gains the numbers
    flushed to zero (xVal: below float32's least) or clipped; rounded is round_numbers(values) if
    known."""
    # a text encoding's value beyond float32 is inf (unused)
    with np.errstate(over="ignore", under="ignore"):
        values32 = values.astype(np.float32)
    if vocab.encoding == "xval":
        number_ids, zero, clipped = vocab.num_id, ((values != 0) & (values32 == 0)).sum(), 0
    else:
        negative, mantissa, exponent, status = round_numbers(values) if rounded is None else rounded
        table = _numbers(vocab.encoding)[0]
        number_ids = table[negative.astype(np.int64), mantissa, exponent - MIN_EXP].ravel()
        zero, clipped = (status == 1).sum(), (status == 2).sum()
    counts["zero"] = counts.get("zero", 0) + int(zero)
    counts["clipped"] = counts.get("clipped", 0) + int(clipped)
    ids = np.zeros(len(is_num), np.uint16 if len(vocab) < 2**16 else np.int32)
    vals = np.ones(len(is_num), np.float32)
    ids[~is_num], vals[is_num] = text_ids, values32
    reps, numeric = 1, is_num
    # a number's k tokens
    if (k := TOKENS_PER_NUMBER[vocab.encoding]) > 1:
        reps = np.where(is_num, k, 1)
        ids, vals, numeric = (np.repeat(a, reps) for a in (ids, vals, is_num))
    ids[numeric] = number_ids
    return ids, vals, reps


def number_spans(ids, vocab):
    """(start, end) token ranges of the numbers in one sample's ids."""
    width = TOKENS_PER_NUMBER[vocab.encoding]
    starts = np.flatnonzero(np.isin(np.asarray(ids), vocab.number_start_ids))
    return [(int(s), int(s) + width) for s in starts]


# -----------------------------------------------------------------------------
# many lines at once: tokenize_fast.py, handed the functions above, gives byte for byte what they
# give a line at a time, many times faster; the dataset command runs it

_PLAIN = tokenize_fast.PlainTokenizer(
    split_text,
    encode_pieces,
    _spell,
    round_numbers,
    Vocab,
    TOKENS_PER_NUMBER,
    (_UNARY_AFTER, _AFTER_DIGITS, _MANTISSA, _EXPONENT),
)
encode_lines = functools.partial(tokenize_fast.encode_lines, _PLAIN)
build_text_vocab = functools.partial(tokenize_fast.build_text_vocab, _PLAIN)


def main(argv=None):
    """python tokenize_numbers.py DATA_DIR [--encoding=E|all] [--stats] ...: the arrays of a dataset
    (dataset.py)."""
    command(argv, ENCODINGS, encode_lines, build_text_vocab, Vocab)


if __name__ == "__main__":
    main()
