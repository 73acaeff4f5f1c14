"""tokenize_arrays.py and round_numbers give the oracle's bytes and errors (tests/tokenize_oracle.py)."""
import functools
import os
import random

import numpy as np
import pytest
import tokenize_oracle as oracle
from helpers import (BRACKETS, DECIMALS, EDGES, EXPONENTS, MALFORMED, NEAR_LIMITS, SIGNS, SPACES, TIES,
                     UNICODE, WORDS, generated, number_lines, temperatures)
from tokenize_oracle import round_number, text_vocab

import tokenize_arrays
from dataset import ENCODINGS, Vocab
from tokenize_arrays import build_text_vocab, encode_lines, encode_split
from tokenize_line import FLOAT32_OVERFLOW, encode_pieces, round_numbers, split_text
from util import TextError

import arithmetic
import lookup
import planets

# encode_lines a line at a time through tokenize_line.py
line_at_a_time = functools.partial(oracle.encode_lines, split=split_text, encode=encode_pieces)


def outcome(encoder, lines, text_tokens, encodings=ENCODINGS, path="data.txt", first_line=0):
    """An encoder's arrays as bytes, or its error message."""
    try:
        out = encoder(lines, text_tokens, list(encodings), path, first_line)
    except TextError as e:
        return str(e)
    return {enc: [(a.dtype.str, a.shape, a.tobytes()) for a in out[enc][:4]] + [out[enc][4]] for enc in out}


def assert_same_as_reference(*args, **kw):
    fast = outcome(encode_lines, *args, **kw)
    assert fast == outcome(oracle.encode_lines, *args, **kw)
    return fast


def accepted(line, encode=lambda line: oracle.encode_lines([line], text_vocab([line]), ["xval"])):
    try:
        return encode(line) is not None
    except TextError:
        return False


def assert_agrees(lines, alone):
    """The oracle's bytes and vocabulary for the lines it reads, together and (`alone`) one by one;
    its error for each it refuses. The count read."""
    good = [line for line in lines if accepted(line)]
    text_tokens = build_text_vocab(good)
    assert text_tokens == text_vocab(good)
    assert not isinstance(assert_same_as_reference(good, text_tokens), str)
    for line in good if alone else []:
        assert_same_as_reference([line], text_tokens, ["xval", "p10"])
    for line in set(lines) - set(good):
        assert_same_as_reference([line], [], ["xval"])
    return len(good)


@pytest.mark.parametrize("make,splits,n", [(functools.partial(arithmetic.make_sample, variant=v), ("train", "val", "test"), 50)
                                           for v in sorted(arithmetic.VARIANTS)]
                         + [(lookup.make_sample, lookup.SPLITS, 50), (planets.make_sample, planets.SPLITS, 4), (None, None, 0)])
def test_prepared_datasets_give_the_reference_bytes(make, splits, n, tmp_path, monkeypatch):
    splits = temperatures(tmp_path, monkeypatch) if make is None else generated(make, splits, n)
    text_tokens = build_text_vocab(splits["train"])
    assert text_tokens == text_vocab(splits["train"])
    for split, lines in splits.items():
        assert not isinstance(assert_same_as_reference(lines, text_tokens, path=f"{split}.txt"), str), split


def test_two_workers_write_the_reference_arrays(tmp_path):
    lines = generated(functools.partial(arithmetic.make_sample, variant="ops3"), ("train",), 300)["train"]
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "meta.json").write_text('{"dataset": "arithmetic", "splits": ["train"]}')
    text_tokens = build_text_vocab(lines)
    vocabs = {enc: Vocab(text_tokens, enc) for enc in ENCODINGS}
    summaries, moves = encode_split(str(tmp_path), "train", text_tokens, vocabs, workers=2, chunk=40)  # 8 chunks
    for temporary, final in moves:
        os.replace(temporary, final)
    reference = oracle.encode_lines(lines, text_tokens, ENCODINGS, "train.txt")
    for enc, summary in zip(ENCODINGS, summaries):
        ids, values, lengths, numbers, counts = reference[enc]
        for name, want in (("ids", ids), ("values", values), ("offsets", np.r_[0, np.cumsum(lengths)])):
            got = np.load(tmp_path / enc / f"train.{name}.npy")
            assert got.dtype == want.dtype or name == "offsets"
            assert np.array_equal(got, want) and got.tobytes() == want.astype(got.dtype).tobytes(), (enc, name)
        assert summary["clipped"] == counts["clipped"] and summary["numbers_per_sample_max"] == numbers.max()


@pytest.mark.parametrize("lines", [SIGNS, EXPONENTS, DECIMALS, WORDS, BRACKETS, SPACES, EDGES, UNICODE, TIES,
                                   NEAR_LIMITS])
def test_adversarial_lines(lines):
    assert assert_agrees(lines, alone=True) == len(lines)


@pytest.mark.slow
def test_random_lines():
    rng = random.Random(0)
    alphabet = "0123456789" * 3 + ".eE+-,,,:()[]{}=*/^<>xa_ '\"\t"
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(3000)]
    assert assert_agrees([line for line in lines if line.strip()], alone=False) > 1000


# the errors split_text gives, as encode_lines gives them
BAD = [("x=nan", "'nan' is not a finite number"), ("[inf,1]", "inf"), ("-Infinity", "Infinity"),
       ("[1,1e999]", "number literal '1e999' overflows float64"),
       ("{a:1.5x}", "'1.5' runs into"), ("{a:.5x}", "'.5' runs into"), ("5.x", "'5.' runs into"), ("1.e", "'1.' runs"),
       ("{a:-2.5_}", "'2.5' runs into"), ("1.5µ", "'1.5' runs into"), ("{a:1.2.3}", "malformed number '1.2.3'"),
       ("{b:--5}", "malformed number '--5'"), ("[1,000,000]", "malformed number '1,000'"), ("x=+-5", "'+-5'"),
       ("(--5)", "'--5'"), ("5..5", "'5..5'"), ("[2,-05]", "'2,-05'"), ("1e5.5", "'1e5.5'")] + [(m, "malformed") for m in MALFORMED]


@pytest.mark.parametrize("bad,expected", BAD)
def test_errors_name_file_and_line(bad, expected):
    good = ["{a:1,b:-2}", "[0.5,3]", "{a:7}"]
    lines = good + [bad] + good + ["x=nan"]  # the first error is said
    text_tokens = build_text_vocab(good)
    error = assert_same_as_reference(lines, text_tokens, path="train.txt", first_line=40)
    assert isinstance(error, str) and error.startswith("train.txt:44: ") and expected in error
    with pytest.raises(TextError) as vocab_error:
        build_text_vocab(lines, "train.txt", 40)
    assert str(vocab_error.value) == error


def test_unknown_tokens_and_numbers_beyond_float32():
    text_tokens = build_text_vocab(["{a:1,a:2}"])
    error = assert_same_as_reference(["{a:1}", "{a:-2,b:3}"], text_tokens, path="val.txt")
    assert isinstance(error, str) and error.startswith("val.txt:2: 'b' is not in the vocabulary")
    lines = ["{a:3.4e38}", "{a:-3.5e38}"]  # float32's largest, rounded; beyond it
    error = assert_same_as_reference(lines, text_tokens, ["p10", "xval"], path="test.txt")
    assert isinstance(error, str) and error.startswith("test.txt:2: the number -3.5e+38 overflows float32")
    lines += ["{a:1e300}", "{a:-1.7976931348623157e308}"]
    assert assert_same_as_reference(lines, text_tokens, ["p10", "fp15"])["p10"][4] == {"clipped": 4, "zero": 0}
    with np.errstate(over="ignore"):
        assert np.float32(FLOAT32_OVERFLOW) == np.inf and np.float32(np.nextafter(FLOAT32_OVERFLOW, 0)) < np.inf


def test_round_numbers_is_percent_2e():
    rng = np.random.default_rng(0)
    x = rng.choice([-1.0, 1.0], 20000) * rng.uniform(1, 10, 20000) * 10.0 ** rng.integers(-12, 11, 20000)
    ties = np.array([(m + 0.5) * 10.0**e for m in range(100, 1000, 7) for e in range(-12, 8)])  # m.5·10^e
    literals = TIES + NEAR_LIMITS + ["1e-12", "1e-13", "1e10", "1e11", "9.99999999999e2", "1e3", "99.95", "0.09995"]
    x = np.concatenate([x, ties, -ties, [float(s) for s in literals], [0.0, -0.0, 5e-324, 1.7976931348623157e308]])
    negative, mantissa, exponent, status = round_numbers(x)
    names = np.array(["ok", "zero", "clipped"])[status]
    signs = np.where(negative, "-", "+")
    assert [(s, int(m), int(e), n) for s, m, e, n in zip(signs, mantissa, exponent, names)] == list(map(round_number, x))


def test_the_split_cache_stays_bounded(monkeypatch):
    monkeypatch.setattr(tokenize_arrays, "_TABLE_MAX", 50)
    lines = [f'{{"key{i}":1.5}}' for i in range(400)]
    for chunk in (lines[start:start + 20] for start in range(0, 400, 20)):
        assert build_text_vocab(chunk) == text_vocab(chunk) and len(tokenize_arrays._TABLE) <= 70
        encode_lines(chunk, text_vocab(chunk), ["xval"])
        assert len(tokenize_arrays._TABLE) <= 70


@pytest.mark.parametrize("seed", [4, 5])
def test_vectorised_equals_tokenize_line(seed):
    lines = number_lines(1000, seed)
    good = [line for line in lines if accepted(line, split_text)]
    tokens = text_vocab(good, split_text)
    assert build_text_vocab(good) == tokens
    # the lines the vectorised path takes, in chunks it takes whole
    vectorised = [line for line in good if tokenize_arrays._split_lines([line])[1]]
    assert len(vectorised) > 500
    for start in range(0, len(vectorised), 200):
        chunk = vectorised[start:start + 200]
        assert tokenize_arrays._split_lines(chunk)[1] is not None and build_text_vocab(chunk) == text_vocab(chunk, split_text)
        assert outcome(encode_lines, chunk, tokens) == outcome(line_at_a_time, chunk, tokens)
    # every line: the same arrays or the same first error
    for start in range(0, len(lines), 100):
        chunk = lines[start:start + 100]
        assert outcome(encode_lines, chunk, tokens, ["xval"]) == outcome(line_at_a_time, chunk, tokens, ["xval"])
