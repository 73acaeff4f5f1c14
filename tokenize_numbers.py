"""Text to token ids: numbers in text, the paper's five number encodings and the text
vocabulary. A sample (one line) splits into numbers and text tokens (punctuation runs such
as '],[', quoted keys, words); whitespace is dropped, and so is a comma between two numbers.
-60.2 becomes: P10 - 6 0 2 E-1, P1000 - 602 E-1, B1999 -602 E-1, FP15 -602E-1 (3 significant
digits, ±m·10^E, m in 100..999, E in -10..5), xVal [NUM] with -60.2 in a parallel float
array. xval_encode is xVal's alone, to copy.

    python tokenize_numbers.py data/arithmetic_ops2 --encoding xval   # a dataset's arrays
    python tokenize_numbers.py data/planets --stats                   # token statistics table
"""

import functools
import itertools
import re
import warnings

import numpy as np

from dataset import command
from util import TextError

ENCODINGS = ("xval", "p10", "p1000", "b1999", "fp15")
TOKENS_PER_NUMBER = {"xval": 1, "p10": 5, "p1000": 3, "b1999": 2, "fp15": 1}
CONTROL_TOKENS = ("[PAD]", "[MASK]", "[EOS]")  # ids 0, 1, 2 in every vocabulary
PAD_ID, MASK_ID, EOS_ID = 0, 1, 2
IGNORE = -100  # the target id of positions that are not predicted (cross-entropy's ignore_index)
NUM, ASK = "[NUM]", "[?]"  # ASK marks a number to predict in sample.py's input
MIN_EXP, MAX_EXP = -10, 5  # of the integer mantissa m in 100..999
EXPONENTS = [f"E{e}" for e in range(MIN_EXP, MAX_EXP + 1)]
# the smallest magnitude float32 rounds to inf (xVal's values are float32)
FLOAT32_OVERFLOW = 2.0**128 - 2.0**103

# -----------------------------------------------------------------------------
# numbers in text (docs/decisions.md#numbers-in-text)

# after these a sign belongs to the number; after anything else it is an operator
_UNARY_AFTER = "([{,:=+-*/^<>"
_U = re.escape(_UNARY_AFTER)
_MANT, _EXP = r"(?:[0-9]++\.?+[0-9]*+|\.[0-9]++)", r"(?:[eE][+-]?+[0-9]++)?+"
_LITERAL = re.compile(rf"([+-]{{0,2}})({_MANT}{_EXP})")
_WORD = re.compile(r"""(["'])[^\W\d]\w*\1|\w+""")  # a quoted key ("planet0") or a word (t2m)
# a run of punctuation ('],[') stops before a number's sign or point
_PUNCT = {
    ask: re.compile(
        rf"""["']|\S(?:(?![\w"']|\.[0-9]|(?<=[{_U}])[+-][0-9.]"""
        + (f"|{re.escape(ASK)}" if ask else "")
        + r""")\S)*"""
    )
    for ask in (False, True)
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
        m = m if m and (unary or not m[1]) else None  # a sign that is not unary is an operator
        if allow_ask and text.startswith(ASK, i):
            piece, end = ("ask", None), i + len(ASK)
        elif m and not _WORD_CHAR.match(text, m.end()):
            # malformed: --5 (or (--5, the first sign a piece of its own), 1.2.3 (two numbers
            # touch), 1,000
            first = (
                i
                if len(m[1]) == 2
                else (
                    i - 1
                    if m[1]
                    and text[i - 1 : i] in ("+", "-")
                    and (i == 1 or text[i - 2] in _UNARY_AFTER)
                    else (
                        num_at[0]
                        if num_at[1] == i
                        or (
                            num_at[1] == i - 1
                            and pieces[-1] == ("text", ",")
                            and re.match("0[0-9]", m[2])
                        )
                        else None
                    )
                )
            )
            if first is not None:
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
    keep = [
        not (
            p == ("text", ",")
            and 0 < j < len(pieces) - 1
            and pieces[j - 1][0] != "text"
            and pieces[j + 1][0] != "text"
        )
        for j, p in enumerate(pieces)
    ]
    if spans is not None:
        spans += [s for s, k in zip(at, keep) if k]
    return [p for p, k in zip(pieces, keep) if k]


_XVAL_NUMBER = re.compile(
    # a number: signed where a sign belongs to it, or not touching a word (x.5 is x, .5)
    r"""
    (?:^|(?<=[-([{,:=+*/^<>]))\s*+
        ([+-] (?:[0-9]++\.?+[0-9]*+|\.[0-9]++) (?:[eE][+-]?+[0-9]++)?+) (?!\w)
  | (?:(?<!\w)|(?=\.))
        (     (?:[0-9]++\.?+[0-9]*+|\.[0-9]++) (?:[eE][+-]?+[0-9]++)?+) (?!\w)""",
    re.VERBOSE,
)


def xval_encode(text, text_ids, num_id):
    """xVal's tokenizer on its own (copy it with _XVAL_NUMBER and `import re`): every number of
    `text` becomes the one token num_id and its value goes into a parallel list, where every other
    token has 1.0. The text between numbers goes to text_ids(str) -> list of ids, any tokenizer you
    like. A sign belongs to the number at the start and after ( [ { , : = + - * / ^ < > (spaces
    between allowed: x = -3 holds -3, 2-3 holds 2 and 3); a number touching a word is part of it
    (t2m, 1e5x); a comma between two numbers costs no token. The model embeds token i as values[i] *
    wte[ids[i]].

    >>> xval_encode('{"t": [-1.5, 20]}', lambda s: [ord(c) for c in s.replace(" ", "")], 3) ([123,
    34, 116, 34, 58, 91, 3, 3, 93, 125], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.5, 20.0, 1.0, 1.0])"""
    ids, values, at, numbers = [], [], 0, list(_XVAL_NUMBER.finditer(text))
    for k, m in enumerate(numbers + [None]):
        between = text[at : m.start(m.lastindex) if m else len(text)]
        # the text before this number
        if between and not (0 < k < len(numbers) and between.strip() == ","):
            new = text_ids(between)
            ids, values = ids + new, values + [1.0] * len(new)
        if m:
            ids.append(num_id)
            values.append(float(m[m.lastindex]))
            at = m.end()
    return ids, values


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


_POW10 = np.array([float(f"1e{k}") for k in range(-16, 13)])  # 10^k exactly rounded, k = -16..12


def round_numbers(x):
    """Numbers rounded to 3 significant digits as Python's '%.2e' rounds them: (negative,
    mantissa, exponent, status) arrays with x ≈ ±mantissa·10^exponent; status 0 'ok', 1
    'zero' (|x| < 1e-8 flushed to +0) or 2 'clipped' (|x| > 9.99e7 clipped to ±9.99e7). The
    scaled value is off by less than 1e-12, so its rounding is certain unless within 1e-9 of
    a tie or a decade: those few go through Python's formatting."""
    x = np.asarray(x, np.float64)
    if not np.isfinite(x).all():
        raise ValueError(f"cannot encode the non-finite number {x[~np.isfinite(x)][0]!r}")
    a = np.clip(np.abs(x), 1e-12, 1e10)  # beyond these, zero or clipped whatever the rounding
    exponent = np.floor(np.log10(a)).astype(np.int64) - 2
    exponent += (a / _POW10[exponent + 16] >= 1000).astype(np.int64) - (
        a / _POW10[exponent + 16] < 100
    )
    scaled = a / _POW10[exponent + 16]  # in [100, 1000): log10 can miss a decade, corrected above
    mantissa = np.rint(scaled).astype(np.int64)
    up = mantissa == 1000  # 999.5 and above round to 1.00 of the next decade
    mantissa[up], exponent[up] = 100, exponent[up] + 1
    for i in np.flatnonzero(
        (np.abs(scaled - np.floor(scaled) - 0.5) < 1e-9)
        | (scaled < 100 + 1e-9)
        | (scaled > 1000 - 1e-9)
    ):
        digits, exp10 = f"{a[i]:.2e}".split("e")
        mantissa[i], exponent[i] = int(digits.replace(".", "")), int(exp10) - 2
    status = np.where(
        x == 0, 0, np.where(exponent < MIN_EXP, 1, np.where(exponent > MAX_EXP, 2, 0))
    )
    mantissa[status == 2], exponent[status == 2] = 999, MAX_EXP
    mantissa[(status == 1) | (x == 0)], exponent[(status == 1) | (x == 0)] = 0, 0
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


@functools.lru_cache(maxsize=None)
def _numbers(encoding):
    """Every number of a text encoding: its ids as table[negative, mantissa, exponent - MIN_EXP]
    (k,), and {its tokens: its value}."""
    ids = dict(zip(number_vocab(encoding), itertools.count(len(CONTROL_TOKENS))))
    table, values = (
        np.zeros((2, 1000, MAX_EXP - MIN_EXP + 1, TOKENS_PER_NUMBER[encoding]), np.int64),
        {},
    )
    for n, m, e in [(0, 0, 0)] + list(
        itertools.product((0, 1), range(100, 1000), range(MIN_EXP, MAX_EXP + 1))
    ):
        values[tuple(tokens := _tokens(n, m, e, encoding))] = float(f"{'-' * n}{m}e{e}")
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
    number_vocab(encoding)  # an unknown encoding is an error
    return _numbers(encoding)[1].get(
        tuple(t if isinstance(t, str) else None for t in tokens), float("nan")
    )


# -----------------------------------------------------------------------------
# vocabulary: specials, then the encoding's number tokens, then the dataset's text tokens


class Vocab:
    """Token strings <-> ids for one encoding. Number tokens and text tokens never share an id,
    so the operator '-' and the sign '-' are different tokens."""

    def __init__(self, text_tokens, encoding):
        self.encoding, self.text_tokens, self.number_tokens = (
            encoding,
            list(text_tokens),
            number_vocab(encoding),
        )
        self.itos = list(CONTROL_TOKENS) + self.number_tokens + self.text_tokens
        self.first_number_id = len(CONTROL_TOKENS)
        self.first_text_id = len(CONTROL_TOKENS) + len(self.number_tokens)
        self.num_id = self.first_number_id if encoding == "xval" else None
        self._text_ids = {t: i + self.first_text_id for i, t in enumerate(self.text_tokens)}
        self.unknown = (  # sample.py sets a trained model's own
            "add a sample with it to train.txt and tokenize with --rebuild-vocab, or write it as a"
            " number or a token the vocabulary has"
        )
        # a number's first token carries its sign; that is how spans are found again in arrays
        self.number_start_ids = np.array(
            [
                i
                for i, t in enumerate(self.number_tokens, self.first_number_id)
                if t[0] in "+-" or t == NUM
            ]
        )

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
    for kind, v in pieces:  # in order, so that the first error is raised
        if kind == "text":
            text_ids.append(vocab.text_id(v, where))
        elif vocab.encoding == "xval" and kind == "num" and abs(v) >= FLOAT32_OVERFLOW:
            raise TextError(
                f"{where}: the number {v!r} overflows float32, the dtype of xVal's values "
                f"(at most {np.finfo(np.float32).max:.7g} in magnitude)"
            )
    is_num = np.array([kind != "text" for kind, _ in pieces], bool)
    values = np.array(
        [1.0 if kind == "ask" else v for kind, v in pieces if kind != "text"], np.float64
    )
    ids, values, reps = _spell(is_num, text_ids, values, vocab, {} if counts is None else counts)
    return (
        ids.astype(np.int64),
        values,
        np.repeat([kind == "ask" for kind, _ in pieces], reps).astype(bool),
    )


def _spell(is_num, text_ids, values, vocab, counts, rounded=None):
    """The ids and float32 values of pieces (is_num (P,)): text_ids where ~is_num, each number's
    tokens where is_num (values (N,)); and each piece's count of tokens. counts gains the numbers
    flushed to zero (xVal: below float32's least) or clipped; rounded is round_numbers(values) if
    known."""
    # a text encoding's value beyond float32 is inf (unused)
    with np.errstate(over="ignore", under="ignore"):
        values32 = values.astype(np.float32)
    k = TOKENS_PER_NUMBER[vocab.encoding]
    if k == 1 and vocab.encoding == "xval":
        number_ids, zero, clipped = vocab.num_id, ((values != 0) & (values32 == 0)).sum(), 0
    else:
        negative, mantissa, exponent, status = round_numbers(values) if rounded is None else rounded
        number_ids = _numbers(vocab.encoding)[0][
            negative.astype(np.int64), mantissa, exponent - MIN_EXP
        ].ravel()
        zero, clipped = (status == 1).sum(), (status == 2).sum()
    counts["zero"], counts["clipped"] = (
        counts.get("zero", 0) + int(zero),
        counts.get("clipped", 0) + int(clipped),
    )
    ids, vals = (
        np.zeros(len(is_num), np.uint16 if len(vocab) < 2**16 else np.int32),
        np.ones(len(is_num), np.float32),
    )
    ids[~is_num], vals[is_num], reps, numeric = (
        text_ids,
        values32,
        np.where(is_num, k, 1) if k > 1 else 1,
        is_num,
    )
    if k > 1:  # a number's k tokens
        ids, vals, numeric = (np.repeat(a, reps) for a in (ids, vals, is_num))
    ids[numeric] = number_ids
    return ids, vals, reps


def number_spans(ids, vocab):
    """(start, end) token ranges of the numbers in one sample's ids."""
    width = TOKENS_PER_NUMBER[vocab.encoding]
    return [
        (int(s), int(s) + width)
        for s in np.flatnonzero(np.isin(np.asarray(ids), vocab.number_start_ids))
    ]


# -----------------------------------------------------------------------------
# many lines at once, byte for byte what split_text and encode_pieces give a line at a time (the
# oracle: tests/test_tokenize_fast.py): one regex finds runs of numbers (joined by ',' or '],['),
# the text between runs is split once per distinct string, numbers are read, rounded and spelled
# with numpy; a chunk with a rare case (odd whitespace, a malformed number, an unknown token) goes a
# line at a time, naming the line. _FIRST: where split_text reads a number (a digit not in a word, a
# point before a digit, a sign after a line start or _UNARY_AFTER); its first character is consumed
# before the look-behinds, to skip fast
_FIRST = (
    rf"[0-9.+-](?:(?<=[0-9])(?<![\w.][0-9])[0-9]*+(?:\.[0-9]*+)?+|(?<=\.)[0-9]++"
    rf"|(?:(?<=[\n{_U}][+-])|(?<=[\n{_U}] [+-]))[+-]?+{_MANT}){_EXP}(?!\w)"
)
# the text after it tells a word touching it
_RUN = re.compile(rf"({_FIRST}(?:(?:,|\]++,\[++)[+-]?+{_MANT}{_EXP})*+)")
_LITERALS_ONLY = str.maketrans({"[": None, "]": None, ";": ","})
_ODD_SPACE = re.compile(r"[^\S \n]|  ")  # whitespace the look-behinds above cannot see through


def _bracket_count(chars, at, step, byte):
    """How many `byte` characters follow (step 1) or precede (step -1) each position of `at`."""
    count, going = np.zeros(len(at), np.int64), np.ones(len(at), bool)
    while going.any():
        going &= chars[at + step * (count + 1)] == byte
        count += going
    return count


class _Segments(dict):
    """The distinct texts between runs -> their index, each split once: its tokens (as indices in
    token_index; a line end is -1) and whether its lines must go through split_text (`unsure`)."""

    def __init__(self):
        super().__init__()
        self.tokens, self.unsure, self.token_index = [], [], {"\n": -1}

    def __missing__(self, segment):
        # 1,2x
        tokens, unsure = (
            [],
            _ODD_SPACE.search(segment) is not None or _WORD_CHAR.match(segment) is not None,
        )
        for part in segment.split("\n"):
            try:
                pieces = split_text(part)
            except TextError:  # nan, 1.5x: split_text says it again with the line
                pieces, unsure = [], True
            unsure |= any(kind != "text" for kind, _ in pieces)
            tokens += [t for _, t in pieces] + ["\n"]
        # a lone comma lies between two numbers
        tokens = [] if tokens == [",", "\n"] else tokens[:-1]
        self.tokens.append(
            [self.token_index.setdefault(t, len(self.token_index) - 1) for t in tokens]
        )
        self.unsure.append(unsure)
        self[segment] = len(self.tokens) - 1
        return self[segment]


def _split_lines(lines, table):
    """
    The pieces of many lines as flat arrays, or None if a line needs split_text: pieces (P,) holds
    a text token's index in table.token_index, or -2 - i for number i; values (N,) the numbers;
    text and numbers (L,) count the pieces of each line.
    """
    chunk = "\n" + "\n".join(lines) + "\n"
    parts = _RUN.split(chunk)  # text, run, text, run, ..., text; a run never spans lines
    segments, runs = parts[0::2], parts[1::2]
    if chunk.count("\n") != len(lines) + 1 or "" in segments:  # a line end inside a line; 1.2.3
        return None
    segment = np.fromiter(map(table.__getitem__, segments), np.int64, len(segments))
    joined = ";".join(runs)
    try:  # numpy parses with float()'s own routine; a malformed literal (--5) stops it
        with warnings.catch_warnings():
            # numpy < 2.3 warns where later ones raise
            warnings.simplefilter("error", DeprecationWarning)
            values = np.fromstring(joined.translate(_LITERALS_ONLY), sep=",")
    except (ValueError, DeprecationWarning):
        return None
    chars = np.frombuffer(f"{joined};".encode(), np.uint8)
    commas, ends = np.flatnonzero(chars == ord(",")), np.flatnonzero(chars == ord(";"))[: len(runs)]
    per_run = np.diff(np.searchsorted(commas, ends), prepend=0) + 1
    # past a sign: 1,000 and 1,-05 are malformed
    zero = commas + 1 + np.isin(chars[commas + 1], (43, 45))
    if (
        len(values) != len(commas) + len(runs)
        or not np.isfinite(values).all()
        or np.array(table.unsure)[segment].any()
        or ((chars[zero] == 48) & (chars[zero + 1] >= 48) & (chars[zero + 1] <= 57)).any()
    ):
        return None
    # the pieces: the numbers in order (-2 - i), a bracket token inserted after the number before
    # its comma, then each text's tokens inserted before the run that follows it
    at = commas[chars[commas - 1] == ord("]")]
    closing, opening = (_bracket_count(chars, at, step, byte) for step, byte in ((-1, 93), (1, 91)))
    shapes, which = np.unique(closing * 1024 + opening, return_inverse=True)
    brackets = np.array(
        [
            table.token_index.setdefault(
                "]" * (s // 1024) + "," + "[" * (s % 1024), len(table.token_index) - 1
            )
            for s in shapes
        ],
        np.int64,
    )[which]
    run = np.searchsorted(ends, at)  # of each bracket token
    pieces = np.insert(-2 - np.arange(len(values)), np.searchsorted(commas, at) + run + 1, brackets)
    n_tokens = np.array([len(t) for t in table.tokens], np.int64)[segment]
    flat = np.array([t for tokens in table.tokens for t in tokens], np.int64)
    offsets = np.cumsum([len(t) for t in table.tokens]) - [len(t) for t in table.tokens]
    within = np.arange(n_tokens.sum()) - np.repeat(np.cumsum(n_tokens) - n_tokens, n_tokens)
    # of each text
    items_before = np.r_[0, np.cumsum(per_run + np.bincount(run, minlength=len(runs)))]
    pieces = np.insert(
        pieces,
        np.repeat(items_before, n_tokens),
        flat[np.repeat(offsets[segment], n_tokens) + within],
    )
    line_end = np.flatnonzero(pieces == -1)
    numbers = np.diff(np.cumsum(pieces <= -2)[line_end])
    return pieces[pieces != -1], values, np.diff(line_end) - 1 - numbers, numbers


_TABLE, _TABLE_MAX = _Segments(), 100_000


def _table():
    """The cache of split segments, emptied when it holds _TABLE_MAX: bounded, whatever the text."""
    global _TABLE
    _TABLE = _TABLE if len(_TABLE) < _TABLE_MAX else _Segments()
    return _TABLE


@functools.lru_cache(maxsize=4)
def _vocabs(text_tokens, encodings):
    return {enc: Vocab(text_tokens, enc) for enc in encodings}, {
        t: i for i, t in enumerate(text_tokens)
    }


def encode_lines(lines, text_tokens, encodings, path="text", first_line=0):
    """
    Encode lines in each of `encodings`, splitting every line once: {encoding: (ids, values,
    lengths, numbers, counts)}, with the ids (uint16 where the vocabulary allows, else int32) and
    float32 values of all lines end to end, tokens and numbers per line, and how many numbers were
    clipped or flushed to zero. Errors name path:line, counting from first_line + 1.
    """
    vocabs, position, table = *_vocabs(tuple(text_tokens), tuple(encodings)), _table()
    split = _split_lines(lines, table)
    if split is not None:
        pieces, values, text, numbers = split
        is_num = pieces <= -2
        text_index = np.array([position.get(t, -1) for t in list(table.token_index)[1:]], np.int64)[
            pieces[~is_num]
        ]
    if (
        split is None
        or (text_index < 0).any()
        or ("xval" in vocabs and (np.abs(values) >= FLOAT32_OVERFLOW).any())
    ):
        # a line at a time
        out = {enc: ([], [], [], [], {"clipped": 0, "zero": 0}) for enc in vocabs}
        for j, line in enumerate(lines):
            pieces = split_text(line, where := f"{path}:{first_line + j + 1}")
            for enc, (ids, values, lengths, numbers, counts) in out.items():
                i, v, _ = encode_pieces(pieces, vocabs[enc], where, counts)
                ids.append(i.astype(np.uint16 if len(vocabs[enc]) < 2**16 else np.int32))
                values.append(v)
                lengths.append(len(i))
                numbers.append(sum(kind == "num" for kind, _ in pieces))
        return {
            enc: (np.concatenate(o[0]), np.concatenate(o[1]), np.array(o[2]), np.array(o[3]), o[4])
            for enc, o in out.items()
        }
    rounded = round_numbers(values) if set(vocabs) - {"xval"} else None
    out = {}
    for enc, vocab in vocabs.items():
        counts = {"clipped": 0, "zero": 0}
        ids, vals, _ = _spell(
            is_num, vocab.first_text_id + text_index, values, vocab, counts, rounded
        )
        out[enc] = (ids, vals, text + TOKENS_PER_NUMBER[enc] * numbers, numbers, counts)
    return out


def build_text_vocab(lines, where="train", first_line=0):
    """The sorted set of text tokens of some lines (numbers excluded); first_line numbers errors."""
    table = _table()
    split = _split_lines(lines, table)
    if split is None:
        return sorted(
            {
                t
                for j, line in enumerate(lines)
                for kind, t in split_text(line, f"{where}:{first_line + j + 1}")
                if kind == "text"
            }
        )
    tokens = list(table.token_index)[1:]
    return sorted(tokens[i] for i in np.unique(split[0][split[0] >= 0]))


def main(argv=None):
    """python tokenize_numbers.py DATA_DIR [--encoding=E|all] [--stats] ...: the arrays of a dataset
    (dataset.py)."""
    command(argv, ENCODINGS, encode_lines, build_text_vocab, Vocab)


if __name__ == "__main__":
    main()
