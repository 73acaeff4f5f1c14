"""tokenize_line.py and the vocabulary: numbers read from text, the five encodings, decoding. The number
grammar is written once and every reader of numbers is built from it: NUMBER reads exactly what
prepare/text.py's own pattern read, and xval_encode, copied as the README says, reads every text the
tokenizer accepts as the tokenizer does (adversarial and random lines, JSON as json.dumps writes it,
arithmetic with spaces, every prepare script's output)."""
import functools
import inspect
import json
import math
import os
import random
import re
import sys

import numpy as np
import pytest
from conftest import ROOT
from helpers import (BRACKETS, DECIMALS, EDGES, EXPONENTS, NEAR_LIMITS, SIGNS, SPACES, TIES, UNICODE, WORDS,
                     generated, number_lines)
from tokenize_oracle import round_number

import tokenize_arrays
import tokenize_line
import tokenize_numbers
from dataset import ENCODINGS, TOKENS_PER_NUMBER, Vocab, number_vocab, tokens_to_number
from tokenize_arrays import build_text_vocab, encode_lines
from tokenize_line import NUMBER, encode, number_spans, split_text, xval_encode
from util import TextError

sys.path.insert(0, os.path.join(ROOT, "prepare"))
import era5  # noqa: E402
import era5_synthetic  # noqa: E402


TEXT_ENCODINGS = [e for e in ENCODINGS if e != "xval"]


def numbers(text):
    return [v for kind, v in split_text(text) if kind == "num"]


def number_to_tokens(x, encoding):
    """The tokens of one number, as the tokenizer spells its literal."""
    vocab = Vocab([], encoding)
    return [vocab.itos[i] for i in encode(repr(float(x)), vocab)[0]]


@pytest.mark.parametrize("encoding,minus_60_2,zero,n_tokens", [
    ("p10", ["-", "6", "0", "2", "E-1"], ["+", "0", "0", "0", "E0"], 28),  # zero reuses the digit 0
    ("p1000", ["-", "602", "E-1"], ["+", "000", "E0"], 918 + 1),
    ("b1999", ["-602", "E-1"], ["+000", "E0"], 1816 + 1),
    ("fp15", ["-602E-1"], ["+000E0"], 28800 + 1),
    ("xval", ["[NUM]"], ["[NUM]"], 1),
])
def test_paper_table_1_and_its_vocabulary_sizes_plus_one_zero_token(encoding, minus_60_2, zero, n_tokens):
    assert number_to_tokens(-60.2, encoding) == minus_60_2 and number_to_tokens(0.0, encoding) == zero
    assert len(number_to_tokens(-3.7e-4, encoding)) == len(zero) == TOKENS_PER_NUMBER[encoding]
    assert len(number_vocab(encoding)) == n_tokens


@pytest.mark.parametrize("encoding", TEXT_ENCODINGS)
def test_every_number_round_trips_at_three_significant_digits(encoding):
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


@pytest.mark.parametrize("encoding,tokens", [
    ("p10", ["+", "6", "0", "2"]), ("p10", ["6", "+", "0", "2", "E-1"]), ("p10", ["+", "0", "6", "2", "E-1"]),
    ("p10", ["-", "0", "0", "0", "E0"]), ("p10", ["+", "0", "0", "0", "E-3"]), ("p10", ["+", "6", "0", "2", "E9"]),
    ("p1000", ["+", "E-1", "602"]), ("p1000", ["+", "62", "E-1"]), ("b1999", ["602", "E-1"]),
    ("b1999", ["-602", "-602"]), ("fp15", ["-602E-11"]), ("fp15", ["-602", "E-1"]), ("fp15", ["+06E2"]),
])  # too short, a sign misplaced, a leading zero, zero's other spellings, an exponent out of range
def test_strict_decoding_rejects_malformed_token_runs(encoding, tokens):
    assert math.isnan(tokens_to_number(tokens, encoding))


@pytest.mark.parametrize("text,expected", [
    ("planet0 t2m x1 'key9'", []), ("[-2.6,-2.6]", [-2.6, -2.6]), ('{"planet0":{"m":2.38,"a":1e-05}}', [2.38, 1e-5]),
    ("{d:1.53,e:-1.33,a:2.53,i:0.0232}e=-1.33", [1.53, -1.33, 2.53, 0.0232, -1.33]),
    (".25 12. 1.25 1e-5 2E+08,-3", [0.25, 12.0, 1.25, 1e-5, 2e8, -3]), ("[1,2]", [1, 2]),
    ("[1,234,0]", [1, 234, 0]), ("1--5", [1, -5]), ("[0,0.5,-0.25]", [0, 0.5, -0.25]),
])
def test_numbers_read_from_text(text, expected):
    assert numbers(text) == expected


def test_signs_quoted_keys_punctuation_runs_and_commas_between_numbers():
    assert split_text("(1.42-8.20)") == [("text", "("), ("num", 1.42), ("text", "-"), ("num", 8.2), ("text", ")")]
    assert [p for p in split_text('"planet0":1') if p[0] == "text"] == [("text", '"planet0"'), ("text", ":")]
    # a sign after a number or a bracket is an operator
    assert split_text("(2)-3") == [("text", "("), ("num", 2.0), ("text", ")-"), ("num", 3.0)]
    assert split_text("2*-3") == [("num", 2.0), ("text", "*"), ("num", -3.0)]
    # a run of punctuation is one token, but never swallows a sign or a quote
    text = '{"data":[[[2.60,-0.75],[0.81,.42]]]}'
    assert [v for kind, v in split_text(text) if kind == "text"] == ["{", '"data"', ":[[[", "],[", "]]]}"]
    assert numbers(text) == [2.6, -0.75, 0.81, 0.42]
    assert split_text("((1*2)+(3-4))=5")[4:7] == [("text", ")+("), ("num", 3.0), ("text", "-")]
    # a comma between two numbers costs no token; one before a key stays
    assert split_text("[1,-2]") == [("text", "["), ("num", 1.0), ("num", -2.0), ("text", "]")]
    assert split_text("{a:1,b:2}")[3:5] == [("num", 1.0), ("text", ",")]
    vocab = Vocab(build_text_vocab(["[1,2]"]), "p1000")
    ids, _, _ = encode("[1,-2,0]", vocab)
    assert len(ids) == 2 + 3 * 3 and len(number_spans(ids, vocab)) == 3


def test_operator_minus_and_sign_minus_are_different_tokens():
    vocab = Vocab(build_text_vocab(["(1-2)"]), "p10")
    minus_operator = encode("(1-2)", vocab)[0][6]  # ( + 1 0 0 E-2 - ...
    assert vocab.itos[minus_operator] == "-" and not vocab.is_number([minus_operator])[0]
    negative = encode("(-1-2)", vocab)[0]
    assert vocab.itos[negative[1]] == "-" and vocab.is_number([negative[1]])[0]


def test_xval_values_sit_at_number_tokens_and_are_one_elsewhere():
    vocab = Vocab(build_text_vocab(["{a:1,b:2}"]), "xval")
    ids, values, _ = encode("{a:-1.5,b:0.123456789}", vocab)
    is_num = ids == vocab.num_id
    assert values[is_num].tolist() == [np.float32(-1.5), np.float32(0.123456789)]  # full float32, not 3 digits
    assert np.all(values[~is_num] == 1.0)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_number_spans_are_found_again_from_ids(encoding):
    vocab = Vocab(build_text_vocab(["[1,2]"]), encoding)
    ids, _, _ = encode("[0,-4.5,1e-3]", vocab)
    spans = number_spans(ids, vocab)
    assert len(spans) == 3 and all(b - a == TOKENS_PER_NUMBER[encoding] for a, b in spans)
    if encoding != "xval":
        assert [vocab.decode_number(ids[a:b]) for a, b in spans] == [0.0, -4.5, 1e-3]


# prepare/text.py's pattern before it imported NUMBER
OLD_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
LITERALS = ["", " ", ".", "+", "-", "+-1", "--1", "++1", "1", "-1", "+1", "01", "1.", ".5", "-.5", "+.5e-3", "1.5",
            "1.2.3", "1..2", "..5", "1e5", "1E+05", "1e-05", "1e", "1e+", "1e-", "e5", ".e5", "1.e5", "1e5.5",
            "1e5e5", "1ee5", " 1", "1 ", "1_000", "1,000", "0x10", "inf", "-inf", "nan", "NaN", "Infinity", "١٢",
            "1٢", "²", "1²", "１", "9" * 400, "9" * 400 + "e", "." + "0" * 300 + "1", "1e" + "9" * 50, "+" * 3 + "1"]


def random_strings(n, alphabet, longest, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(n)]


@pytest.mark.parametrize("strings", [LITERALS, random_strings(50_000, "0123456789.eE+-", 8, 1),
                                     random_strings(50_000, "01.eE+- x_,١", 12, 2)])
def test_number_matches_exactly_what_prepare_texts_old_pattern_matched(strings):
    for s in strings:
        old, new = OLD_NUMBER.match(s), NUMBER.match(s)
        assert bool(NUMBER.fullmatch(s)) == bool(OLD_NUMBER.fullmatch(s)) and (old and old.span()) == (new and new.span()), s


def test_the_grammar_is_written_once_and_every_pattern_is_built_from_it():
    line = tokenize_line
    source = "".join(inspect.getsource(m) for m in (tokenize_line, tokenize_arrays, tokenize_numbers))
    for piece in (line._MANTISSA, line._EXPONENT, line._UNARY_AFTER):
        assert source.count(piece) == 1, piece
    for pattern in (NUMBER.pattern, line._XVAL_NUMBER.pattern, line._LITERAL.pattern, tokenize_arrays._RUN.pattern):
        assert line._MANTISSA in pattern and line._EXPONENT in pattern, pattern
    for pattern in (line._XVAL_NUMBER.pattern, line._PUNCT_END, tokenize_arrays._RUN.pattern):
        assert re.escape(line._UNARY_AFTER) in pattern, pattern


def copied_xval_encode():
    """xval_encode as the README says to copy it: `import re` and the lines of tokenize_line.py from
    _UNARY_AFTER to the end of xval_encode, run in a namespace of their own."""
    source = inspect.getsource(tokenize_line)
    start, end = source.index("_UNARY_AFTER = "), source.index("\n\n\n", source.index("def xval_encode"))
    namespace = {}
    exec(compile("import re\n" + source[start:end], "copied", "exec"), namespace)
    return namespace["xval_encode"]


COPIED = copied_xval_encode()


def as_tokenizer_reads(line):
    """split_text's pieces, neighbouring text pieces joined: [("text", "{t:["), ("num", -1.5), ...]."""
    out = []
    for kind, v in split_text(line):
        if kind == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + v)
        else:
            out.append((kind, v))
    return out


def as_xval_encode_reads(line):
    """The copy's numbers and the text between them, whitespace dropped as the tokenizer drops it; the copy
    gives what tokenize_line.xval_encode gives."""
    texts, again = [], []
    ids, values = COPIED(line, lambda s: texts.append(s) or [len(texts) - 1], -1)
    assert (ids, values) == xval_encode(line, lambda s: again.append(s) or [len(again) - 1], -1), line
    out = []
    for i, v in zip(ids, values):
        if i < 0:
            out.append(("num", v))
        elif text := re.sub(r"\s", "", texts[i]):
            out.append(("text", text))
    return out


def assert_agrees(lines):
    """How many lines the copy reads as the tokenizer does (every line the tokenizer accepts)."""
    read = 0
    for line in lines:
        got = as_xval_encode_reads(line)
        for m in tokenize_line._XVAL_NUMBER.finditer(line):
            assert NUMBER.fullmatch(m[1]), (line, m[1])
        try:
            want = as_tokenizer_reads(line)
        except TextError:
            continue  # the tokenizer refuses it: no promise
        assert [(k, repr(v)) for k, v in got] == [(k, repr(v)) for k, v in want], line  # repr: -0.0 is not 0.0
        read += 1
    return read


ADVERSARIAL = SIGNS + EXPONENTS + DECIMALS + WORDS + BRACKETS + SPACES + EDGES + UNICODE + TIES + NEAR_LIMITS


def test_adversarial_and_random_lines():
    assert assert_agrees(ADVERSARIAL) > 200
    assert assert_agrees(LITERALS + number_lines(4000, 3)) > 2000
    alphabet = "0123456789" * 3 + ".eE+-,,,:()[]{}=*/^<>xa_ '\"\t"
    assert assert_agrees(random_strings(5000, alphabet, 24, 0)) > 1500


def random_value(rng, depth=0):
    kind = rng.random()
    if depth < 2 and kind < 0.2:
        return {rng.choice(["t", "t2m", "x", "pm2.5", "room 12", "a_b"]): random_value(rng, depth + 1) for _ in range(3)}
    if depth < 2 and kind < 0.35:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind < 0.45:
        return rng.choice(["dry", "rain", "2021-03-04", "room 12", "-x", "", "1e5x", True, None])
    if kind < 0.55:
        return rng.randint(-10**6, 10**6)
    return rng.choice([1, -1]) * rng.random() * 10 ** rng.randint(-12, 12)


def test_json_as_json_dumps_writes_it_and_arithmetic_with_spaces():
    rng = random.Random(1)
    records = [json.dumps({"t": [1.5, -2.25], "id": rng.randint(0, 99), "v": random_value(rng)}) for _ in range(300)]
    records += [json.dumps({"a": -0.0, "b": [-1e-07, 2.5e+30]}, indent=1).replace("\n", " ")]
    assert assert_agrees(records) == len(records)
    for record in records[:50]:  # every number of the record, sign included
        assert [v for k, v in as_xval_encode_reads(record) if k == "num"][:2] == [1.5, -2.25]
    lines = ["x = -3", "(1.5 - -2) * 3 = 7.5", "2 - 3", "a -3", "[1, -2, +3]", "y: -.5e-3", "f(-1, 2) = - 4", " -7"]
    assert assert_agrees(lines) == len(lines)
    assert [v for k, v in as_xval_encode_reads("(1.5 - -2) * 3 = 7.5") if k == "num"] == [1.5, -2.0, 3.0, 7.5]


@pytest.mark.parametrize("dataset", ["arithmetic", "lookup", "planets", "era5",
                                     pytest.param("text", marks=pytest.mark.slow)])
def test_every_prepare_scripts_output(dataset, tmp_path):
    import arithmetic
    import lookup
    import planets
    from conftest import run
    if dataset == "arithmetic":
        lines = [line for variant in sorted(arithmetic.VARIANTS) for lines in
                 generated(functools.partial(arithmetic.make_sample, variant=variant), ("train", "test"),
                           50).values() for line in lines]
    elif dataset in ("lookup", "planets"):
        module = lookup if dataset == "lookup" else planets
        splits = generated(module.make_sample, module.SPLITS, 50 if dataset == "lookup" else 4)
        lines = [line for lines in splits.values() for line in lines]
    elif dataset == "era5":
        era5_synthetic.main(["--out", str(tmp_path), "--days", "6", "--resolution", "10"])
        era5.main([str(tmp_path / "t2m.nc"), "--out", str(tmp_path / "out"), "--size", "tiny", "--workers", "1"])
        lines = (tmp_path / "out" / "test.txt").read_text().splitlines()[:10]
    else:
        rows = ["day,temp,sky,pressure"] + [f"{d},{math.sin(d) * 20:.2f},{'dry' if d % 3 else 'rain'},{1000 + d}"
                                            for d in range(60)]
        (tmp_path / "w.csv").write_text("\n".join(rows) + "\n")
        run("prepare/text.py", str(tmp_path / "w.csv"), "--window", "4", "--out", str(tmp_path / "w"))
        lines = (tmp_path / "w" / "train.txt").read_text().splitlines()
    assert assert_agrees(lines) == len(lines) > 0


def test_xval_encode_gives_the_tokenizers_ids_and_values():
    lines = ['{"description":{"m":4.786,"e":0.3875},"data":[[[1.896,-0.5563],[1.296,-0.7366]]]}',
             "((0.0235*0.695)+(0.782-0.561))=0.2373325", "{d:1.53,e:-1.33,a:2.53}e=-1.33", "x=-3,y:[1,-2]",
             '{"t": [1.5, -2.25], "x": -3}']
    vocab = Vocab(build_text_vocab(lines), "xval")
    for line in lines:
        ids, values, _ = encode(line, vocab)
        got = xval_encode(line, lambda s: [vocab.text_id(t) for _, t in split_text(s)], vocab.num_id)
        assert got[0] == ids.tolist() and np.float32(got[1]).tolist() == values.tolist()  # the arrays are float32
    assert xval_encode("2-3", lambda s: [ord(c) for c in s], 0) == ([0, 45, 0], [2.0, 1.0, 3.0])
