"""One sample's text to token ids: numbers and text tokens (words, quoted keys, punctuation runs
such as '],['); whitespace is dropped, and so is a comma between two numbers."""

import re

import numpy as np

from dataset import ASK, MAX_EXP, MIN_EXP, TOKENS_PER_NUMBER, number_table, shown
from util import TextError

# -- xVal's tokenizer, to copy: from here to the end of xval_encode, with `import re` --
# The number grammar (docs/decisions.md#numbers-in-text): digits, a point at most (12., .5), maybe
# an exponent (1e-3); a sign first or after _UNARY_AFTER is the number's, else an operator (2-3)
_UNARY_AFTER = "([{,:=+-*/^<>"
_MANTISSA = r"(?:[0-9]++\.?+[0-9]*+|\.[0-9]++)"
_EXPONENT = r"(?:[eE][+-]?+[0-9]++)?+"
_UNSIGNED = _MANTISSA + _EXPONENT
# a string that is one number (a CSV cell)
NUMBER = re.compile(rf"[+-]?+{_UNSIGNED}")
# a number: signed first or after _UNARY_AFTER (--5 read, to refuse it), else not in a word
# (x.5 is x, .5); or a decimal running into a word (1.5x)
_XVAL_NUMBER = re.compile(
    rf"(?:(?:^|(?<=[{re.escape(_UNARY_AFTER)}]))\s*+(?=[+-])|(?<!\w)(?![+-])|(?=\.))"
    rf"(?:([+-]{{0,2}}+{_UNSIGNED})(?!\w)"
    rf"|([+-]{{0,2}}+(?=[0-9]*+\.){_MANTISSA}(?![eE][+-]?+[0-9])\w))"
)
# the least magnitude float32 (xVal's values) rounds to inf
FLOAT32_OVERFLOW = 2.0**128 - 2.0**103


def touches(text, end, start, literal):
    """A number at start glued to the one ending at end: 12.5.6, 1,000 (a comma, a leading 0)."""
    comma = end == start - 1 and text[end] == ","
    return end == start or (comma and re.match("[+-]?0[0-9]", literal) is not None)


def xval_encode(text, text_ids, num_id, keep_malformed=False):
    """xVal's tokenizer alone: each number becomes num_id, its value in a parallel list (1.0
    elsewhere); text_ids(str) -> ids tokenizes the text between. Embed token i as
    values[i] * wte[ids[i]]. A malformed number (--5, 12.5.6, 1,000, 1.5x) or one beyond float32
    raises ValueError; keep_malformed=True leaves it text.

    >>> xval_encode("[-1.5, 20]", lambda s: [ord(c) for c in s if c != " "], 0)
    ([91, 0, 0, 93], [1.0, -1.5, 20.0, 1.0])
    """
    numbers = []  # (start, end, value)
    last = (-9, -9)  # the last number's span
    for m in _XVAL_NUMBER.finditer(text):
        literal, (start, end) = m[m.lastindex], m.span(m.lastindex)
        glued = touches(text, last[1], start, literal)
        # 12.5.6 or 1,000; 1.5x; --5
        malformed = glued or m[2] or literal[1:2] in ("+", "-")
        too_big = not malformed and abs(float(literal)) >= FLOAT32_OVERFLOW
        if (malformed or too_big) and not keep_malformed:
            why = "overflows float32" if too_big else "is malformed"
            raise ValueError(f"the number {text[last[0] if glued else start : end]!r} {why}")
        if glued and numbers and numbers[-1][:2] == last:
            numbers.pop()
        last = (start, end)
        if not (malformed or too_big):
            numbers.append((start, end, float(literal)))
    ids = []
    values = []
    at = 0
    for k, (start, end, value) in enumerate(numbers + [(len(text), len(text), None)]):
        between = text[at:start]
        if between and not (0 < k < len(numbers) and between.strip() == ","):
            ids += (new := text_ids(between))
            values += [1.0] * len(new)
        if value is not None:
            ids.append(num_id)
            values.append(value)
            at = end
    return ids, values


# a number (two signs read, to name --5 malformed)
_LITERAL = re.compile(rf"([+-]{{0,2}})({_UNSIGNED})")
# a quoted key ("planet0") or a word (t2m)
_WORD = re.compile(r"""(["'])[^\W\d]\w*\1|\w+""")
# a run of punctuation ('],[') stops before a number's sign or point
_PUNCT_END = rf"""[\w"']|\.[0-9]|(?<=[{re.escape(_UNARY_AFTER)}])[+-][0-9.]"""
_PUNCT = [
    re.compile(rf"""["']|\S(?:(?!{_PUNCT_END})\S)*"""),
    re.compile(rf"""["']|\S(?:(?!{_PUNCT_END}|{re.escape(ASK)})\S)*"""),
]
_SPACE = re.compile(r"\s*")
_WORD_CHAR = re.compile(r"\w")


def split_text(text, where="text", allow_ask=False):
    """One sample's pieces: ("num", float), ("text", str), ("ask", None) for [?] if allow_ask.

    >>> split_text("(1.42-8.20)")
    [('text', '('), ('num', 1.42), ('text', '-'), ('num', 8.2), ('text', ')')]
    """
    return split_text_spans(text, where, allow_ask)[0]


def split_text_spans(text, where="text", allow_ask=False):
    """split_text's pieces, and each piece's (start, end) in the text."""
    pieces = []
    at = []
    i = _SPACE.match(text).end()
    num_at = (-9, -9)  # the last number's span
    while i < len(text):
        unary = not pieces or (pieces[-1][0] == "text" and pieces[-1][1][-1] in _UNARY_AFTER)
        m = _LITERAL.match(text, i)
        m = m if m and (unary or not m[1]) else None
        if allow_ask and text.startswith(ASK, i):
            piece, end = ("ask", None), i + len(ASK)
        elif m and not _WORD_CHAR.match(text, m.end()):
            # malformed: --5 (or (--5, the first sign apart), 1.2.3 (two touch), 1,000
            signs = m[1] and i and text[i - 1] in "+-" and (i == 1 or text[i - 2] in _UNARY_AFTER)
            touch = touches(text, num_at[1], i, m.group())
            if len(m[1]) == 2 or signs or touch:
                bad = shown(text[i if len(m[1]) == 2 else i - 1 if signs else num_at[0] : m.end()])
                raise TextError(f"{where}: malformed number {bad}; write one plain number")
            if abs(value := float(m.group())) == float("inf"):
                raise TextError(f"{where}: number literal {shown(m.group())} overflows float64")
            piece, end, num_at = ("num", value), m.end(), (i, m.end())
        elif m and "." in m[2] and not re.search("[eE]", m[2]):
            why = f"runs into the word at column {m.end()}; separate them"
            raise TextError(f"{where}: number {shown(m[2])} {why}")
        else:
            w = _WORD.match(text, i)
            token = w.group() if w else _PUNCT[allow_ask].match(text, i).group()
            if not (w and w[1]) and token.lower() in ("nan", "inf", "infinity"):
                raise TextError(f"{where}: {token!r} is not a finite number")
            piece, end = ("text", token), i + len(token)
        pieces.append(piece)
        at.append((i, end))
        i = _SPACE.match(text, end).end()
    # a comma between numbers costs no token, as the paper's context lengths imply
    kinds = ["text", *(kind for kind, _ in pieces), "text"]
    kept = [
        j for j, p in enumerate(pieces) if p != ("text", ",") or "text" in (kinds[j], kinds[j + 2])
    ]
    return [pieces[j] for j in kept], [at[j] for j in kept]


# 10^k, k = -16..12, exactly rounded
_POW10 = np.array([float(f"1e{k}") for k in range(-16, 13)])


def round_numbers(x):
    """Numbers rounded as '%.2e' rounds them: (negative, mantissa, exponent, status) arrays,
    x ≈ ±mantissa·10^exponent; status 0 ok, 1 zero (|x| < 1e-8) or 2 clipped (|x| > 9.99e7)."""
    # beyond these, zero or clipped anyway
    a = np.clip(np.abs(x), 1e-12, 1e10)
    # scaled into [100, 1000): log10 can miss a decade
    exponent = np.floor(np.log10(a)).astype(np.int64) - 2
    scaled = a / _POW10[exponent + 16]
    exponent += (scaled >= 1000).astype(np.int64) - (scaled < 100)
    scaled = a / _POW10[exponent + 16]
    mantissa = np.rint(scaled).astype(np.int64)
    # 999.5 and above round to 1.00 of the next decade
    up = mantissa == 1000
    mantissa[up], exponent[up] = 100, exponent[up] + 1
    # near a tie or a decade, Python's formatting rounds
    near = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-9
    for i in np.flatnonzero(near | (scaled < 100 + 1e-9) | (scaled > 1000 - 1e-9)):
        digits, exp10 = f"{a[i]:.2e}".split("e")
        mantissa[i], exponent[i] = int(digits.replace(".", "")), int(exp10) - 2
    status = np.select([x == 0, exponent < MIN_EXP, exponent > MAX_EXP], [0, 1, 2], 0)
    mantissa[status == 2], exponent[status == 2] = 999, MAX_EXP
    zero = (status == 1) | (x == 0)
    mantissa[zero], exponent[zero] = 0, 0
    return (x < 0) & (status != 1), mantissa, exponent, status


def lay_out(is_num, text_ids, spelled, values, vocab_size):
    """Ids and float32 values of pieces: text_ids, or a number's k ids (spelled (N, k)) and
    value; and each piece's token count."""
    ids = np.zeros(len(is_num), np.uint16 if vocab_size < 2**16 else np.int32)
    vals = np.ones(len(is_num), np.float32)
    ids[~is_num], vals[is_num] = text_ids, values
    reps, numeric = 1, is_num
    if (k := spelled.shape[1]) > 1:
        reps = np.where(is_num, k, 1)
        ids, vals, numeric = (np.repeat(a, reps) for a in (ids, vals, is_num))
    ids[numeric] = spelled.ravel()
    return ids, vals, reps


def encode(text, vocab, where="text", allow_ask=False):
    """One sample -> (ids, values, ask): int64 ids, float32 values (a number's at its tokens, 1.0
    elsewhere), and True at [?]'s tokens."""
    return encode_pieces(split_text(text, where, allow_ask), vocab, where)


def encode_pieces(pieces, vocab, where="text"):
    """encode() of split_text's pieces."""
    text_ids = []
    # in order, so that the first error is raised
    for kind, v in pieces:
        if kind == "text":
            text_ids.append(vocab.text_id(v, where))
        elif vocab.encoding == "xval" and kind == "num" and abs(v) >= FLOAT32_OVERFLOW:
            raise TextError(f"{where}: the number {v!r} overflows float32, xVal's values")
    is_num = np.array([kind != "text" for kind, _ in pieces], bool)
    values = [1.0 if kind == "ask" else v for kind, v in pieces if kind != "text"]
    spelled, values32, _ = number_ids(np.array(values, np.float64), vocab)
    ids, values, reps = lay_out(is_num, text_ids, spelled, values32, len(vocab))
    ask = np.repeat([kind == "ask" for kind, _ in pieces], reps).astype(bool)
    return ids.astype(np.int64), values, ask


def number_ids(values, vocab, rounded=None):
    """The ids (N, k) and float32 values (N,) of numbers (rounded: round_numbers(values) if known),
    and how many were clipped or zeroed."""
    # beyond float32: inf, unused by the text encodings
    with np.errstate(over="ignore", under="ignore"):
        values32 = values.astype(np.float32)
    if vocab.encoding == "xval":
        # xVal's zero: below float32's least
        status = (values32 == 0) & (values != 0)
        ids = np.broadcast_to(vocab.num_id, (len(values), 1))
    else:
        negative, mantissa, exponent, status = round_numbers(values) if rounded is None else rounded
        table = number_table(vocab.encoding)[0]
        ids = table[negative.astype(np.int64), mantissa, exponent - MIN_EXP]
    return ids, values32, {"clipped": int((status == 2).sum()), "zero": int((status == 1).sum())}


def number_spans(ids, vocab):
    """(start, end) token ranges of the numbers in one sample's ids."""
    width = TOKENS_PER_NUMBER[vocab.encoding]
    starts = np.flatnonzero(np.isin(np.asarray(ids), vocab.number_start_ids))
    return [(int(s), int(s) + width) for s in starts]
