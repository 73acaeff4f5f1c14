"""Text to token ids: numbers in text, the paper's five number encodings and the text
vocabulary. A sample (one line) splits into numbers and text tokens (punctuation runs such
as '],[', quoted keys, words); whitespace is dropped, and so is a comma between two numbers.
-60.2 becomes: P10 - 6 0 2 E-1, P1000 - 602 E-1, B1999 -602 E-1, FP15 -602E-1 (3 significant
digits, ±m·10^E, m in 100..999, E in -10..5), xVal [NUM] with -60.2 in a parallel float
array. xval_encode is xVal's alone, to copy; tokenize_fast.py encodes many lines at once.

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
CONTROL_TOKENS = ("[PAD]", "[MASK]", "[EOS]")
PAD_ID, MASK_ID, EOS_ID = 0, 1, 2
# ASK: a number for sample.py to predict
NUM, ASK = "[NUM]", "[?]"
# of the integer mantissa m in 100..999
MIN_EXP, MAX_EXP = -10, 5
EXPONENTS = [f"E{e}" for e in range(MIN_EXP, MAX_EXP + 1)]
# the least magnitude float32 (xVal's values) rounds to inf
FLOAT32_OVERFLOW = 2.0**128 - 2.0**103

# numbers in text (docs/decisions.md#numbers-in-text)

# The number grammar, written once: digits, a point at most (12, 12., 1.5, .5), maybe an
# exponent (1e-3); a sign first or after _UNARY_AFTER is the number's, else an operator (2-3)
_UNARY_AFTER = "([{,:=+-*/^<>"
_MANTISSA = r"(?:[0-9]++\.?+[0-9]*+|\.[0-9]++)"
_EXPONENT = r"(?:[eE][+-]?+[0-9]++)?+"
_UNSIGNED = _MANTISSA + _EXPONENT
# a string that is one number (a CSV cell)
NUMBER = re.compile(rf"[+-]?+{_UNSIGNED}")
# xVal's numbers: signed where a sign is theirs, else not touching a word (x.5 is x, .5)
_XVAL_NUMBER = re.compile(
    rf"(?:^|(?<=[{re.escape(_UNARY_AFTER)}]))\s*+([+-]{_UNSIGNED})(?!\w)"
    rf"|(?:(?<!\w)|(?=\.))({_UNSIGNED})(?!\w)"
)


def xval_encode(text, text_ids, num_id):
    """xVal's tokenizer on its own (copy it with `import re` and the lines from _UNARY_AFTER):
    each number becomes the token num_id, its value in a parallel list (1.0 at other tokens); the
    text between goes to text_ids(str) -> ids, any tokenizer. x = -3 holds -3, 2-3 holds 2 and 3,
    t2m none; a comma between numbers costs no token. Embed token i as values[i] * wte[ids[i]].

    >>> xval_encode("[-1.5, 20]", lambda s: [ord(c) for c in s if c != " "], 0)
    ([91, 0, 0, 93], [1.0, -1.5, 20.0, 1.0])
    """
    ids, values, at, numbers = [], [], 0, list(_XVAL_NUMBER.finditer(text))
    for k, m in enumerate(numbers + [None]):
        between = text[at : m.start(m.lastindex) if m else len(text)]
        if between and not (0 < k < len(numbers) and between.strip() == ","):
            ids += (new := text_ids(between))
            values += [1.0] * len(new)
        if m:
            ids.append(num_id)
            values.append(float(m[m.lastindex]))
            at = m.end()
    return ids, values


# split_text's pieces: numbers (two signs read, to name --5 malformed), words, punctuation
_LITERAL = re.compile(rf"([+-]{{0,2}})({_UNSIGNED})")
# a quoted key ("planet0") or a word (t2m)
_WORD = re.compile(r"""(["'])[^\W\d]\w*\1|\w+""")
# a run of punctuation ('],[') stops before a number's sign or point
_PUNCT_END = rf"""[\w"']|\.[0-9]|(?<=[{re.escape(_UNARY_AFTER)}])[+-][0-9.]"""
_PUNCT = [
    re.compile(rf"""["']|\S(?:(?!{_PUNCT_END})\S)*"""),
    re.compile(rf"""["']|\S(?:(?!{_PUNCT_END}|{re.escape(ASK)})\S)*"""),
]
_SPACE, _WORD_CHAR = re.compile(r"\s*"), re.compile(r"\w")


def shown(text, most=60):
    """Text for an error message: quoted, cut short if long (a 10 MB word)."""
    return repr(text) if len(text) <= most else f"{text[:most]!r}… ({len(text):,} characters)"


def split_text(text, where="text", allow_ask=False, spans=None):
    """One sample's pieces: ("num", float), ("text", str), and ("ask", None) for [?] if allow_ask.
    `where` names the sample in errors; a list `spans` gains each piece's (start, end).

    >>> split_text("(1.42-8.20)")
    [('text', '('), ('num', 1.42), ('text', '-'), ('num', 8.2), ('text', ')')]
    """
    # num_at: the last number's span
    pieces, at, i, num_at = [], [], _SPACE.match(text).end(), (-9, -9)
    while i < len(text):
        unary = not pieces or (pieces[-1][0] == "text" and pieces[-1][1][-1] in _UNARY_AFTER)
        m = _LITERAL.match(text, i)
        m = m if m and (unary or not m[1]) else None
        if allow_ask and text.startswith(ASK, i):
            piece, end = ("ask", None), i + len(ASK)
        elif m and not _WORD_CHAR.match(text, m.end()):
            # malformed: --5 (or (--5, the first sign apart), 1.2.3 (two touch), 1,000
            signs = m[1] and i and text[i - 1] in "+-" and (i == 1 or text[i - 2] in _UNARY_AFTER)
            touch = num_at[1] == i or (
                num_at[1] == i - 1 and pieces[-1] == ("text", ",") and re.match("0[0-9]", m[2])
            )
            if len(m[1]) == 2 or signs or touch:
                bad = shown(text[i if len(m[1]) == 2 else i - 1 if signs else num_at[0] : m.end()])
                raise TextError(
                    f"{where}: malformed number {bad} (two points, two signs or a thousands comma);"
                    " write one plain number"
                )
            if abs(value := float(m.group())) == float("inf"):
                raise TextError(f"{where}: number literal {shown(m.group())} overflows float64")
            piece, end, num_at = ("num", value), m.end(), (i, m.end())
        elif m and "." in m[2] and not re.search("[eE]", m[2]):
            raise TextError(
                f"{where}: number {shown(m[2])} runs into the word starting at column {m.end()};"
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
    # a comma between numbers costs no token ([[1,2],[3,4]] -> [[ N N ],[ N N ]]), as the
    # paper's context lengths imply
    kinds = ["text", *(kind for kind, _ in pieces), "text"]
    keep = [p != ("text", ",") or "text" in (kinds[j], kinds[j + 2]) for j, p in enumerate(pieces)]
    if spans is not None:
        spans += itertools.compress(at, keep)
    return list(itertools.compress(pieces, keep))


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


def round_numbers(x):
    """Numbers rounded as '%.2e' rounds them (tokenize_fast.round3): (negative, mantissa, exponent,
    status) arrays, x ≈ ±mantissa·10^exponent; status 0 ok, 1 zero (|x| < 1e-8: +0) or 2 clipped
    (|x| > 9.99e7: ±9.99e7)."""
    x = np.asarray(x, np.float64)
    mantissa, exponent = tokenize_fast.round3(x)
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
    """A text encoding's numbers: ids table[negative, mantissa, exponent - MIN_EXP] and
    {tokens: value}."""
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
    """One number's value, NaN unless its tokens are exactly one of the encoding's:
    tokens_to_number(["-602E-1"], "fp15") == -60.2."""
    if encoding == "xval":
        raise ValueError("xval numbers carry their value in the values array, not in tokens")
    tokens = tuple(t if isinstance(t, str) else None for t in tokens)
    return _numbers(encoding)[1].get(tokens, float("nan"))


# vocabulary


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
        # sample.py sets a trained model's own
        self.unknown = (
            "add a sample with it to train.txt and tokenize with --rebuild-vocab, or write it as a"
            " number or a token the vocabulary has"
        )
        # a number's first token, with its sign: how spans are found in arrays
        starts = enumerate(self.number_tokens, self.first_number_id)
        self.number_start_ids = np.array([i for i, t in starts if t[0] in "+-" or t == NUM])

    def __len__(self):
        return len(self.itos)

    def text_id(self, token, where="text"):
        if token not in self._text_ids:
            raise TextError(
                f"{where}: {shown(token)} is not in the vocabulary built from the training split "
                f"({len(self.text_tokens)} text tokens); {self.unknown}"
            )
        return self._text_ids[token]

    def is_number(self, ids):
        ids = np.asarray(ids)
        return (ids >= self.first_number_id) & (ids < self.first_text_id)

    def decode_number(self, ids):
        """A text-encoded number's value from its ids, NaN unless exactly a number."""
        ids = [int(i) for i in ids]
        if not all(self.first_number_id <= i < self.first_text_id for i in ids):
            return float("nan")
        return tokens_to_number([self.itos[i] for i in ids], self.encoding)


def encode(text, vocab, where="text", allow_ask=False, counts=None):
    """One sample -> (ids, values, ask): int64 ids, float32 values (a number's at its tokens, 1.0
    elsewhere), and True at [?]'s tokens. counts (a dict) gains the numbers clipped or zeroed."""
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
    spelled = _number_ids(np.array(values, np.float64), vocab, {} if counts is None else counts)
    ids, values, reps = tokenize_fast.lay_out(is_num, text_ids, *spelled, len(vocab))
    ask = np.repeat([kind == "ask" for kind, _ in pieces], reps).astype(bool)
    return ids.astype(np.int64), values, ask


def _number_ids(values, vocab, counts, rounded=None):
    """The ids (N, k) and float32 values (N,) of numbers (rounded: round_numbers(values) if known);
    counts as in encode."""
    # beyond float32: inf, unused by the text encodings
    with np.errstate(over="ignore", under="ignore"):
        values32 = values.astype(np.float32)
    if vocab.encoding == "xval":
        # xVal's zero: below float32's least
        status = (values32 == 0) & (values != 0)
        ids = np.broadcast_to(vocab.num_id, (len(values), 1))
    else:
        negative, mantissa, exponent, status = round_numbers(values) if rounded is None else rounded
        ids = _numbers(vocab.encoding)[0][negative.astype(np.int64), mantissa, exponent - MIN_EXP]
    for key, code in (("zero", 1), ("clipped", 2)):
        counts[key] = counts.get(key, 0) + int(np.count_nonzero(status == code))
    return ids, values32


def number_spans(ids, vocab):
    """(start, end) token ranges of the numbers in one sample's ids."""
    width = TOKENS_PER_NUMBER[vocab.encoding]
    starts = np.flatnonzero(np.isin(np.asarray(ids), vocab.number_start_ids))
    return [(int(s), int(s) + width) for s in starts]


# many lines at once: tokenize_fast.py, handed the functions above

_GRAMMAR = (_UNARY_AFTER, _MANTISSA, _EXPONENT)
_PLAIN = tokenize_fast.PlainTokenizer(
    split_text, encode_pieces, _number_ids, round_numbers, Vocab, _GRAMMAR
)
encode_lines = functools.partial(tokenize_fast.encode_lines, _PLAIN)
build_text_vocab = functools.partial(tokenize_fast.build_text_vocab, _PLAIN)


def main(argv=None):
    """The command line: a dataset's arrays, or its token statistics (dataset.py)."""
    command(argv, ENCODINGS, encode_lines, build_text_vocab, Vocab)


if __name__ == "__main__":
    main()
