"""The number grammar is written once, in tokenize_line.py, and every reader of numbers is built from it: the
public NUMBER reads exactly what prepare/text.py's own pattern read, xval_encode (copied as the README says) reads
the numbers split_text reads, and the vectorised many-lines path gives what the line-at-a-time path gives."""
import inspect
import random
import re

import numpy as np
import pytest

import tokenize_fast
import tokenize_line
import tokenize_numbers
from dataset import ENCODINGS, Vocab
from tokenize_fast import build_text_vocab, encode_lines
from tokenize_line import NUMBER, encode, split_text, xval_encode
from util import TextError

# prepare/text.py's pattern before it imported NUMBER
OLD_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

ADVERSARIAL = ["", " ", ".", "+", "-", "+-1", "--1", "++1", "1", "-1", "+1", "01", "1.", ".5", "-.5", "+.5e-3", "1.5",
               "1.2.3", "1..2", "..5", "1e5", "1E+05", "1e-05", "1e", "1e+", "1e-", "e5", ".e5", "1.e5", "1e5.5",
               "1e5e5", "1ee5", " 1", "1 ", "1_000", "1,000", "0x10", "inf", "-inf", "nan", "NaN", "Infinity", "١٢",
               "1٢", "²", "1²", "１", "9" * 400, "9" * 400 + "e", "." + "0" * 300 + "1", "1e" + "9" * 50, "+" * 3 + "1"]


def random_strings(n, alphabet, longest, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(n)]


@pytest.mark.parametrize("strings", [ADVERSARIAL, random_strings(50_000, "0123456789.eE+-", 8, 1),
                                     random_strings(50_000, "01.eE+- x_,١", 12, 2)])
def test_number_matches_exactly_what_prepare_texts_old_pattern_matched(strings):
    for s in strings:
        assert bool(NUMBER.fullmatch(s)) == bool(OLD_NUMBER.fullmatch(s)), s
        old, new = OLD_NUMBER.match(s), NUMBER.match(s)
        assert (old and old.span()) == (new and new.span()), s


def test_the_grammar_is_written_once_and_every_pattern_is_built_from_it():
    line = tokenize_line
    source = "".join(inspect.getsource(m) for m in (tokenize_line, tokenize_fast, tokenize_numbers))
    for piece in (line._MANTISSA, line._EXPONENT, line._UNARY_AFTER):
        assert source.count(piece) == 1, piece
    run = tokenize_fast._RUN.pattern
    for pattern in (NUMBER.pattern, line._XVAL_NUMBER.pattern, line._LITERAL.pattern, run):
        assert line._MANTISSA in pattern and line._EXPONENT in pattern, pattern
    for pattern in (line._XVAL_NUMBER.pattern, line._PUNCT_END, run):
        assert re.escape(line._UNARY_AFTER) in pattern, pattern


def copied_xval_encode():
    """xval_encode as the README says to copy it: `import re` and the lines of tokenize_line.py from
    _UNARY_AFTER to the end of xval_encode, run in a namespace of their own."""
    source = inspect.getsource(tokenize_line)
    start = source.index("_UNARY_AFTER = ")
    body = source.index("\n\n\n", source.index("def xval_encode"))
    namespace = {}
    exec(compile("import re\n" + source[start:body], "copied", "exec"), namespace)
    return namespace["xval_encode"]


def split_numbers(line):
    """The numbers split_text reads in a line, in order (None if it refuses the line)."""
    try:
        return [v for kind, v in split_text(line) if kind == "num"]
    except TextError:
        return None


NUMBERS = ["0", "7", "12", "-3", "+4", "1.5", "-0.25", ".5", "-.5", "5.", "1e5", "-2.5E-3", "+6e+2", "1.e3", ".5e1",
           "1e308", "1e-320", "99999999999", "007"]
GLUE = [",", ", ", "],[", "]],[[", " ", "  ", "(", ")", "=", " = ", "-", " - ", "+", "*", "/", "^", "<", ">", ":",
        "[", "]", "{", "}", '"t":', "x", "t2m", " x ", "_", "\t", "'k':", "e", "E"]


def random_lines(n, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(NUMBERS if k % 2 else GLUE) for k in range(rng.randint(1, 14))) for _ in range(n)]


def test_the_copied_xval_encode_reads_the_numbers_split_text_reads():
    copied = copied_xval_encode()
    checked = 0
    for line in ADVERSARIAL + random_lines(4000, 3):
        expected = split_numbers(line)
        ids, values = copied(line, lambda s: [0] * len(s.split()), -1)
        assert (ids, values) == xval_encode(line, lambda s: [0] * len(s.split()), -1), line
        numbers = [v for i, v in zip(ids, values) if i == -1]
        if expected is not None:
            checked += 1
            assert numbers == expected, line
        for m in tokenize_line._XVAL_NUMBER.finditer(line):
            assert NUMBER.fullmatch(m[m.lastindex]), (line, m[m.lastindex])
    assert checked > 2000


def line_at_a_time(lines, text_tokens, encodings, path):
    """encode_lines' answer from encode(), one line at a time: the arrays as bytes, or the first error."""
    vocabs = {enc: Vocab(text_tokens, enc) for enc in encodings}
    out = {enc: ([], [], [], [], {"clipped": 0, "zero": 0}) for enc in encodings}
    try:
        for j, line in enumerate(lines, 1):
            for enc, (ids, values, lengths, numbers, counts) in out.items():
                i, v, _ = encode(line, vocabs[enc], f"{path}:{j}", counts=counts)
                ids.append(i.astype(np.uint16 if len(vocabs[enc]) < 2**16 else np.int32))
                values.append(v)
                lengths.append(len(i))
                numbers.append(sum(kind == "num" for kind, _ in split_text(line)))
    except TextError as e:
        return str(e)
    return {enc: [(a.dtype.str, a.tobytes()) for a in (np.concatenate(o[0]), np.concatenate(o[1]), np.array(o[2]),
                                                        np.array(o[3]))] + [o[4]] for enc, o in out.items()}


def many_at_once(lines, text_tokens, encodings, path):
    try:
        out = encode_lines(lines, text_tokens, encodings, path)
    except TextError as e:
        return str(e)
    return {enc: [(a.dtype.str, a.tobytes()) for a in o[:4]] + [o[4]] for enc, o in out.items()}


@pytest.mark.parametrize("seed", [4, 5])
def test_the_vectorised_path_gives_what_split_text_gives_a_line_at_a_time(seed):
    lines = random_lines(3000, seed)
    good = [line for line in lines if split_numbers(line) is not None]
    text_tokens = sorted({t for line in good for kind, t in split_text(line) if kind == "text"})
    assert build_text_vocab(good) == text_tokens
    # the lines the vectorised path takes on (the others go a line at a time), in chunks it takes whole
    vectorised = [line for line in good if tokenize_fast._split_lines([line])[1]]
    assert len(vectorised) > 1500
    encodings = list(ENCODINGS)
    for start in range(0, len(vectorised), 200):
        chunk = vectorised[start:start + 200]
        assert tokenize_fast._split_lines(chunk)[1] is not None
        assert build_text_vocab(chunk) == sorted({t for line in chunk for kind, t in split_text(line) if kind == "text"})
        assert many_at_once(chunk, text_tokens, encodings, "d.txt") == line_at_a_time(chunk, text_tokens, encodings,
                                                                                       "d.txt")
    # every line, refused ones included: the same arrays or the same first error, naming the same line
    for start in range(0, len(lines), 100):
        chunk = lines[start:start + 100]
        assert many_at_once(chunk, text_tokens, ["xval"], "d.txt") == line_at_a_time(chunk, text_tokens, ["xval"],
                                                                                      "d.txt")
