"""tokenize_numbers.py's many lines at once, byte for byte (tests/test_tokenize_fast.py): a regex
finds runs of numbers (joined by ',' or '],['), the text between is split once per distinct string,
numbers are read, rounded and laid out with numpy. A chunk with a rare case (odd spaces, a malformed
number, an unknown token) goes a line at a time, naming the line."""

import collections
import functools
import re
import warnings

import numpy as np

from util import TextError

# handed in by tokenize_numbers.py: data flows one way
PlainTokenizer = collections.namedtuple(
    "PlainTokenizer", "split_text encode_pieces number_ids round_numbers make_vocab grammar"
)

_LITERALS_ONLY = str.maketrans({"[": None, "]": None, ";": ","})
# spaces the look-behinds of _run cannot see through
_ODD_SPACE = re.compile(r"[^\S \n]|  ")
_WORD_CHAR = re.compile(r"\w")


@functools.cache
def _run(grammar):
    """A run of numbers joined by ',' or '],[', the first where split_text reads one; its first
    character comes before the look-behinds, for a fast search."""
    unary_after, mantissa, exponent = grammar
    u = re.escape(unary_after)
    first = (
        rf"[0-9.+-](?:(?<=[0-9])(?<![\w.][0-9])(?:{mantissa}|\.)?+|(?<=\.)[0-9]++"
        rf"|(?:(?<=[\n{u}][+-])|(?<=[\n{u}] [+-]))[+-]?+{mantissa}){exponent}(?!\w)"
    )
    # a word touching a later number starts the next text (_Segments)
    return re.compile(rf"({first}(?:(?:,|\]++,\[++)[+-]?+{mantissa}{exponent})*+)")


def _bracket_count(chars, at, step, byte):
    """How many `byte`s follow (step 1) or precede (step -1) each position of `at`."""
    count, going = np.zeros(len(at), np.int64), np.ones(len(at), bool)
    while going.any():
        going &= chars[at + step * (count + 1)] == byte
        count += going
    return count


class _Segments(dict):
    """Texts between runs -> their index, each split once: its tokens (indices in token_index; a
    line end -1) and whether its lines need split_text (`unsure`)."""

    def __init__(self, split_text):
        super().__init__()
        self.split_text, self.tokens, self.unsure, self.token_index = split_text, [], [], {"\n": -1}
        # token_index's tokens in order
        self.names = []

    def __missing__(self, segment):
        # odd spaces, or a word touching the number before (1,2x)
        unsure = _ODD_SPACE.search(segment) is not None or _WORD_CHAR.match(segment) is not None
        tokens = []
        for part in segment.split("\n"):
            try:
                pieces = self.split_text(part)
            # nan, 1.5x: split_text says it again, naming the line
            except TextError:
                pieces, unsure = [], True
            unsure |= any(kind != "text" for kind, _ in pieces)
            tokens += [t for _, t in pieces] + ["\n"]
        # a lone comma lies between two numbers
        tokens = [] if tokens == [",", "\n"] else tokens[:-1]
        self.tokens.append([self.index(t) for t in tokens])
        self.unsure.append(unsure)
        self[segment] = len(self.tokens) - 1
        return self[segment]

    def index(self, token):
        if token not in self.token_index:
            self.token_index[token] = len(self.names)
            self.names.append(token)
        return self.token_index[token]


def _split_lines(plain, lines):
    """The segments' cache (emptied at _TABLE_MAX: bounded whatever the text) and the lines'
    pieces, None if a line needs split_text: pieces (P,), a text token's index in token_index or
    -2 - i for number i; values (N,); text and numbers (L,), each line's pieces."""
    global _TABLE
    if len(_TABLE) >= _TABLE_MAX or _TABLE.split_text is not plain.split_text:
        _TABLE = _Segments(plain.split_text)
    table, chunk = _TABLE, "\n" + "\n".join(lines) + "\n"
    # text, run, text, run, ..., text; a run never spans lines
    parts = _run(plain.grammar).split(chunk)
    segments, runs = parts[0::2], parts[1::2]
    # a line end in a line; 1.2.3
    if chunk.count("\n") != len(lines) + 1 or "" in segments:
        return table, None
    segment = np.fromiter(map(table.__getitem__, segments), np.int64, len(segments))
    joined = ";".join(runs)
    # parsed by float()'s own routine: a malformed literal (--5) stops it
    try:
        with warnings.catch_warnings():
            # numpy < 2.3 warns where later ones raise
            warnings.simplefilter("error", DeprecationWarning)
            values = np.fromstring(joined.translate(_LITERALS_ONLY), sep=",")
    except (ValueError, DeprecationWarning):
        return table, None
    chars = np.frombuffer(f"{joined};".encode(), np.uint8)
    commas, ends = np.flatnonzero(chars == ord(",")), np.flatnonzero(chars == ord(";"))[: len(runs)]
    per_run = np.diff(np.searchsorted(commas, ends), prepend=0) + 1
    # past a sign: 1,000 and 1,-05 are malformed
    zero = commas + 1 + np.isin(chars[commas + 1], (43, 45))
    if (
        len(values) != len(commas) + len(runs)
        or not np.isfinite(values).all()
        or any(table.unsure[i] for i in np.unique(segment))
        or ((chars[zero] == 48) & (chars[zero + 1] >= 48) & (chars[zero + 1] <= 57)).any()
    ):
        return table, None
    # the numbers in order (-2 - i), a bracket token inserted after the number before its comma,
    # each text's tokens before the run after it
    at = commas[chars[commas - 1] == ord("]")]
    closing, opening = (_bracket_count(chars, at, step, byte) for step, byte in ((-1, 93), (1, 91)))
    shapes, which = np.unique(closing * 1024 + opening, return_inverse=True)
    brackets = [table.index("]" * (s // 1024) + "," + "[" * (s % 1024)) for s in shapes]
    brackets = np.array(brackets, np.int64)[which]
    # of each bracket token
    run = np.searchsorted(ends, at)
    pieces = np.insert(-2 - np.arange(len(values)), np.searchsorted(commas, at) + run + 1, brackets)
    # the tokens of the texts this chunk holds (not of the whole table: it grows)
    used, segment = np.unique(segment, return_inverse=True)
    tokens = [table.tokens[i] for i in used]
    lengths = np.array([len(t) for t in tokens], np.int64)
    n_tokens, offsets = lengths[segment], np.cumsum(lengths) - lengths
    flat = np.array([t for ts in tokens for t in ts], np.int64)
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
    return table, (pieces[pieces != -1], values, np.diff(line_end) - 1 - numbers, numbers)


_TABLE, _TABLE_MAX = _Segments(None), 100_000


_LAST = [None, None, None]


@functools.lru_cache(maxsize=4)
def _vocabs(make_vocab, text_tokens, encodings):
    vocabs = {enc: make_vocab(text_tokens, enc) for enc in encodings}
    return vocabs, {t: i for i, t in enumerate(text_tokens)}


def encode_lines(plain, lines, text_tokens, encodings, path="text", first_line=0):
    """Lines in each encoding, split once: {encoding: (ids, values, lengths, numbers, counts)}: ids
    (uint16 if the vocabulary allows, else int32) and float32 values of all lines end to end, tokens
    and numbers per line, numbers clipped or zeroed. Errors name path:line, from first_line + 1."""
    # the same list as the chunk before: no hash of a large vocabulary per chunk
    if _LAST[0] is not text_tokens or _LAST[1] != tuple(encodings):
        found = _vocabs(plain.make_vocab, tuple(text_tokens), tuple(encodings))
        _LAST[:] = text_tokens, tuple(encodings), found
    vocabs, position = _LAST[2]
    table, split = _split_lines(plain, lines)
    if split is not None:
        pieces, values, text, numbers = split
        is_num = pieces <= -2
        # the vocabulary's index of each distinct text token in the chunk (-1: unknown)
        used, where = np.unique(pieces[~is_num], return_inverse=True)
        text_index = np.array([position.get(table.names[i], -1) for i in used], np.int64)[where]
        # beyond float32: xVal's error
        with np.errstate(over="ignore"):
            too_large = "xval" in vocabs and np.isinf(values.astype(np.float32)).any()
    if split is None or (text_index < 0).any() or too_large:
        # a line at a time
        out = {enc: ([], [], [], [], {"clipped": 0, "zero": 0}) for enc in vocabs}
        for j, line in enumerate(lines, first_line + 1):
            pieces = plain.split_text(line, where := f"{path}:{j}")
            for enc, (ids, values, lengths, numbers, counts) in out.items():
                i, v, _ = plain.encode_pieces(pieces, vocabs[enc], where, counts)
                ids.append(i.astype(np.uint16 if len(vocabs[enc]) < 2**16 else np.int32))
                values.append(v)
                lengths.append(len(i))
                numbers.append(sum(kind == "num" for kind, _ in pieces))
        return {
            enc: (np.concatenate(o[0]), np.concatenate(o[1]), np.array(o[2]), np.array(o[3]), o[4])
            for enc, o in out.items()
        }
    rounded = plain.round_numbers(values) if set(vocabs) - {"xval"} else None
    out = {}
    for enc, vocab in vocabs.items():
        counts = {"clipped": 0, "zero": 0}
        number_ids, values32 = plain.number_ids(values, vocab, counts, rounded)
        text_ids = vocab.first_text_id + text_index
        ids, vals, _ = lay_out(is_num, text_ids, number_ids, values32, len(vocab))
        out[enc] = (ids, vals, text + number_ids.shape[1] * numbers, numbers, counts)
    return out


def lay_out(is_num, text_ids, number_ids, values, vocab_size):
    """Ids and float32 values of pieces (is_num (P,)): text_ids, or a number's k ids (number_ids
    (N, k)) and value; and each piece's token count."""
    ids = np.zeros(len(is_num), np.uint16 if vocab_size < 2**16 else np.int32)
    vals = np.ones(len(is_num), np.float32)
    ids[~is_num], vals[is_num] = text_ids, values
    reps, numeric = 1, is_num
    # a number's k tokens
    if (k := number_ids.shape[1]) > 1:
        reps = np.where(is_num, k, 1)
        ids, vals, numeric = (np.repeat(a, reps) for a in (ids, vals, is_num))
    ids[numeric] = number_ids.ravel() if k > 1 else number_ids[:, 0]
    return ids, vals, reps


def build_text_vocab(plain, lines, where="train", first_line=0):
    """The sorted text tokens of some lines (numbers excluded); first_line numbers errors."""
    table, split = _split_lines(plain, lines)
    if split is None:
        numbered = enumerate(lines, first_line + 1)
        pieces = [p for j, line in numbered for p in plain.split_text(line, f"{where}:{j}")]
        return sorted({t for kind, t in pieces if kind == "text"})
    tokens = list(table.token_index)[1:]
    return sorted(tokens[i] for i in np.unique(split[0][split[0] >= 0]))


# 10^k, k = -16..12, exactly rounded
_POW10 = np.array([float(f"1e{k}") for k in range(-16, 13)])


def round3(x):
    """|x| as '%.2e' rounds it: (mantissa, exponent). The scaled value is off by under 1e-12; near
    a tie or a decade, Python's formatting rounds."""
    if not np.isfinite(x).all():
        raise ValueError(f"cannot encode the non-finite number {x[~np.isfinite(x)][0]!r}")
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
    near = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-9
    for i in np.flatnonzero(near | (scaled < 100 + 1e-9) | (scaled > 1000 - 1e-9)):
        digits, exp10 = f"{a[i]:.2e}".split("e")
        mantissa[i], exponent[i] = int(digits.replace(".", "")), int(exp10) - 2
    return mantissa, exponent
