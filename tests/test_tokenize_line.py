"""tokenize_line.py and the vocabulary: numbers read from text, the five encodings, decoding."""
import functools
import math

import numpy as np
import pytest
from tokenize_oracle import round_number

from dataset import ENCODINGS, TOKENS_PER_NUMBER, Vocab, number_vocab, tokens_to_number
from tokenize_arrays import build_text_vocab, encode_lines
from tokenize_line import encode, number_spans, split_text


@functools.cache
def vocab_of(encoding, *texts):
    return Vocab(build_text_vocab(texts), encoding)


def number_to_tokens(x, encoding):
    vocab = vocab_of(encoding)
    return [vocab.itos[i] for i in encode(repr(float(x)), vocab)[0]]


@pytest.mark.parametrize("encoding,minus_60_2,zero,n_tokens", [
    ("p10", ["-", "6", "0", "2", "E-1"], ["+", "0", "0", "0", "E0"], 28),  # zero reuses the digit 0
    ("p1000", ["-", "602", "E-1"], ["+", "000", "E0"], 918 + 1),
    ("b1999", ["-602", "E-1"], ["+000", "E0"], 1816 + 1),
    ("fp15", ["-602E-1"], ["+000E0"], 28800 + 1),
    ("xval", ["[NUM]"], ["[NUM]"], 1),
])
def test_paper_table_1_vocabulary_sizes_and_round_trips(encoding, minus_60_2, zero, n_tokens):
    assert number_to_tokens(-60.2, encoding) == minus_60_2 and number_to_tokens(0.0, encoding) == zero
    assert len(number_to_tokens(-3.7e-4, encoding)) == len(zero) == TOKENS_PER_NUMBER[encoding]
    assert len(number_vocab(encoding)) == n_tokens
    if encoding == "xval":
        return
    # at three significant digits
    for x in [-60.2, 60.2, 1.0, -1.0, 0.0, 1e-8, -9.99e7, 0.000123, 5.5, 123456.0, 0.0232]:
        assert tokens_to_number(number_to_tokens(x, encoding), encoding) == float(f"{x:.2e}")
    rng = np.random.default_rng(0)
    for x in rng.choice([-1.0, 1.0], 300) * rng.uniform(1.0, 9.99, 300) * 10.0 ** rng.integers(-8, 8, 300):
        assert math.isclose(tokens_to_number(number_to_tokens(x, encoding), encoding), float(f"{x:.2e}"))


def test_rounding_is_python_percent_2e_and_clipped_and_flushed_numbers_are_counted():
    assert round_number(9.995e7)[3] == round_number(1.2e9)[3] == "clipped"  # %.2e: 9.995e7 is 1.00e8
    assert number_to_tokens(9.995e7, "fp15") == ["+999E5"] and number_to_tokens(1.2e9, "p1000") == ["+", "999", "E5"]
    assert number_to_tokens(1e-9, "p10") == ["+", "0", "0", "0", "E0"] and round_number(1e-9)[3] == "zero"
    assert number_to_tokens(2.675, "fp15") == ["+267E-2"]  # 2.675 is 2.67499999... in binary
    assert number_to_tokens(0.125, "fp15") == ["+125E-3"]
    assert number_to_tokens(1.005e3, "b1999") == ["+100", "E1"]  # exactly half: to even
    counts = encode_lines(["[1.2e9,1e-9,-5e8,3.0]"], ["[", "]", ","], ["p10"])["p10"][4]
    assert counts == {"clipped": 2, "zero": 1}


# too short, a sign misplaced, a leading zero, zero's other spellings, an exponent out of range
@pytest.mark.parametrize("encoding,runs", [
    ("p10", [["+", "6", "0", "2"], ["6", "+", "0", "2", "E-1"], ["+", "0", "6", "2", "E-1"], ["-", "0", "0", "0", "E0"],
             ["+", "0", "0", "0", "E-3"], ["+", "6", "0", "2", "E9"]]),
    ("p1000", [["+", "E-1", "602"], ["+", "62", "E-1"]]), ("b1999", [["602", "E-1"], ["-602", "-602"]]),
    ("fp15", [["-602E-11"], ["-602", "E-1"], ["+06E2"]]),
])
def test_strict_decoding_rejects_malformed_token_runs(encoding, runs):
    assert all(math.isnan(tokens_to_number(tokens, encoding)) for tokens in runs)


@pytest.mark.parametrize("text,pieces", [
    ("planet0 t2m x1 'key9'", ["planet0", "t2m", "x1", "'key9'"]), ("[-2.6,-2.6]", [-2.6, -2.6]), ('{"planet0":{"m":2.38,"a":1e-05}}', [2.38, 1e-5]),
    ("{d:1.53,e:-1.33,a:2.53,i:0.0232}e=-1.33", [1.53, -1.33, 2.53, 0.0232, -1.33]),
    (".25 12. 1.25 1e-5 2E+08,-3", [0.25, 12.0, 1.25, 1e-5, 2e8, -3]), ("[1,2]", [1, 2]),
    ("[1,234,0]", [1, 234, 0]), ("1--5", [1, -5]), ("[0,0.5,-0.25]", [0, 0.5, -0.25]),
    ("(1.42-8.20)", ["(", 1.42, "-", 8.2, ")"]), ('"planet0":1', ['"planet0"', ":", 1.0]),
    ("(2)-3", ["(", 2.0, ")-", 3.0]), ("2*-3", [2.0, "*", -3.0]),  # after a number or a bracket: an operator
    # a run of punctuation is one token, but never swallows a sign or a quote
    ('{"data":[[[2.60,-0.75],[0.81,.42]]]}', ["{", '"data"', ":[[[", 2.6, -0.75, "],[", 0.81, 0.42, "]]]}"]),
    ("((1*2)+(3-4))=5", ["((", 1.0, "*", 2.0, ")+(", 3.0, "-", 4.0, "))=", 5.0]),
    # a comma between two numbers costs no token; one before a key stays
    ("[1,-2]", ["[", 1.0, -2.0, "]"]), ("{a:1,b:2}", ["{", "a", ":", 1.0, ",", "b", ":", 2.0, "}"]),
])
def test_numbers_signs_quoted_keys_punctuation_runs_and_commas_between_numbers(text, pieces):
    # pieces: every piece, or the numbers alone where none is text
    numbers_only = not any(isinstance(p, str) for p in pieces)
    assert [v for kind, v in split_text(text) if kind == "num" or not numbers_only] == pieces


def test_a_sign_is_no_operator():
    vocab = vocab_of("p10", "(1-2)")
    minus_operator = encode("(1-2)", vocab)[0][6]  # ( + 1 0 0 E-2 - ...
    assert vocab.itos[minus_operator] == "-" and not vocab.is_number([minus_operator])[0]
    negative = encode("(-1-2)", vocab)[0]
    assert vocab.itos[negative[1]] == "-" and vocab.is_number([negative[1]])[0]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_numbers_cost_their_tokens_commas_between_none_and_are_found_from_ids(encoding):
    vocab = vocab_of(encoding, "[1,2]")
    ids, values, _ = encode("[0,-4.5,1e-3,0.123456789]", vocab)
    spans = number_spans(ids, vocab)
    assert len(ids) == 2 + 4 * TOKENS_PER_NUMBER[encoding]
    assert len(spans) == 4 and all(b - a == TOKENS_PER_NUMBER[encoding] for a, b in spans)
    if encoding != "xval":
        assert [vocab.decode_number(ids[a:b]) for a, b in spans] == [0.0, -4.5, 1e-3, 0.123]
    else:  # full float32, not 3 digits; 1.0 elsewhere
        is_num = ids == vocab.num_id
        assert values[is_num].tolist() == np.float32([0, -4.5, 1e-3, 0.123456789]).tolist()
        assert np.all(values[~is_num] == 1.0)
