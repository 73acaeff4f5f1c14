"""Number extraction, the five encodings, the vocabulary and the arrays on disk."""
import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ROOT

from tokenize_oracle import round_number
from dataset import Split
from tokenize_numbers import (ENCODINGS, TOKENS_PER_NUMBER, TextError, Vocab, build_text_vocab, encode,
                              number_spans, number_vocab, split_text, tokens_to_number)

TEXT_ENCODINGS = [e for e in ENCODINGS if e != "xval"]


def extract_numbers(text):
    return [v for kind, v in split_text(text) if kind == "num"]


def number_to_tokens(x, encoding):
    """The tokens of one number, as the tokenizer spells its literal."""
    vocab = Vocab([], encoding)
    return [vocab.itos[i] for i in encode(repr(float(x)), vocab)[0]]


def test_paper_table_1_example():
    assert number_to_tokens(-60.2, "p10") == ["-", "6", "0", "2", "E-1"]
    assert number_to_tokens(-60.2, "p1000") == ["-", "602", "E-1"]
    assert number_to_tokens(-60.2, "b1999") == ["-602", "E-1"]
    assert number_to_tokens(-60.2, "fp15") == ["-602E-1"]
    assert number_to_tokens(-60.2, "xval") == ["[NUM]"]


def test_zero_has_as_many_tokens_as_any_number():
    assert number_to_tokens(0.0, "p10") == ["+", "0", "0", "0", "E0"]
    assert number_to_tokens(0.0, "p1000") == ["+", "000", "E0"]
    assert number_to_tokens(0.0, "b1999") == ["+000", "E0"]
    assert number_to_tokens(0.0, "fp15") == ["+000E0"]
    for enc in ENCODINGS:
        assert len(number_to_tokens(0.0, enc)) == len(number_to_tokens(-3.7e-4, enc)) == TOKENS_PER_NUMBER[enc]


def test_number_vocabulary_sizes_match_the_paper_plus_one_zero_token():
    assert len(number_vocab("p10")) == 28  # zero reuses the digit 0
    assert len(number_vocab("p1000")) == 918 + 1
    assert len(number_vocab("b1999")) == 1816 + 1
    assert len(number_vocab("fp15")) == 28800 + 1
    assert len(number_vocab("xval")) == 1


@pytest.mark.parametrize("encoding", TEXT_ENCODINGS)
@pytest.mark.parametrize("x", [-60.2, 60.2, 1.0, -1.0, 0.0, 1e-8, -9.99e7, 0.000123, 5.5, 123456.0, 0.0232])
def test_round_trip_at_three_significant_digits(encoding, x):
    assert tokens_to_number(number_to_tokens(x, encoding), encoding) == float(f"{x:.2e}")


@pytest.mark.parametrize("encoding", TEXT_ENCODINGS)
def test_every_number_token_sequence_decodes_to_its_value(encoding):
    rng = np.random.default_rng(0)
    signs = rng.choice([-1.0, 1.0], 300)
    for x in signs * rng.uniform(1.0, 9.99, 300) * 10.0 ** rng.integers(-8, 8, 300):  # the whole range
        assert math.isclose(tokens_to_number(number_to_tokens(x, encoding), encoding), float(f"{x:.2e}"))


def test_rounding_is_python_percent_2e():
    assert round_number(9.995e7)[3] == "clipped"  # %.2e rounds it up to 1.00e8, beyond the range
    assert number_to_tokens(9.995e7, "fp15") == ["+999E5"]
    assert number_to_tokens(1.2e9, "p1000") == ["+", "999", "E5"]
    assert round_number(1.2e9)[3] == "clipped"
    assert number_to_tokens(1e-9, "p10") == ["+", "0", "0", "0", "E0"]
    assert round_number(1e-9)[3] == "zero"
    assert number_to_tokens(2.675, "fp15") == ["+267E-2"]  # 2.675 is 2.67499999... in binary
    assert number_to_tokens(0.125, "fp15") == ["+125E-3"]
    assert number_to_tokens(1.005e3, "b1999") == ["+100", "E1"]  # exactly half: to even


def test_clipped_and_flushed_numbers_are_counted():
    vocab = Vocab(["[", "]", ","], "p10")
    counts = {}
    encode("[1.2e9,1e-9,-5e8,3.0]", vocab, counts=counts)
    assert counts == {"clipped": 2, "zero": 1}


@pytest.mark.parametrize("encoding,tokens", [
    ("p10", ["+", "6", "0", "2"]),  # too short
    ("p10", ["6", "+", "0", "2", "E-1"]),  # sign in the wrong place
    ("p10", ["+", "0", "6", "2", "E-1"]),  # leading zero
    ("p10", ["-", "0", "0", "0", "E0"]),  # zero has one spelling
    ("p10", ["+", "0", "0", "0", "E-3"]),
    ("p10", ["+", "6", "0", "2", "E9"]),  # exponent out of range
    ("p1000", ["+", "E-1", "602"]),
    ("p1000", ["+", "62", "E-1"]),
    ("b1999", ["602", "E-1"]),
    ("b1999", ["-602", "-602"]),
    ("fp15", ["-602E-11"]),
    ("fp15", ["-602", "E-1"]),
    ("fp15", ["+06E2"]),
])
def test_strict_decoding_rejects_malformed_token_runs(encoding, tokens):
    assert math.isnan(tokens_to_number(tokens, encoding))


def test_extraction_of_numbers_from_text():
    assert extract_numbers("planet0 t2m x1 'key9'") == []
    assert split_text("(1.42-8.20)") == [("text", "("), ("num", 1.42), ("text", "-"), ("num", 8.2), ("text", ")")]
    assert extract_numbers("[-2.6,-2.6]") == [-2.6, -2.6]
    assert extract_numbers("{d:1.53,e:-1.33,a:2.53,i:0.0232}e=-1.33") == [1.53, -1.33, 2.53, 0.0232, -1.33]
    assert extract_numbers(".25 12. 1.25 1e-5 2E+08,-3") == [0.25, 12.0, 1.25, 1e-5, 2e8, -3]
    assert extract_numbers('{"planet0":{"m":2.38,"a":1e-05}}') == [2.38, 1e-5]
    assert [p for p in split_text('"planet0":1') if p[0] == "text"] == [("text", '"planet0"'), ("text", ":")]


def test_a_sign_after_a_number_or_bracket_is_an_operator():
    assert split_text("(2)-3") == [("text", "("), ("num", 2.0), ("text", ")-"), ("num", 3.0)]
    assert split_text("2*-3") == [("num", 2.0), ("text", "*"), ("num", -3.0)]


@pytest.mark.parametrize("text,expected", [
    ("x=nan", "nan"), ("[inf,1]", "inf"), ("-Infinity", "Infinity"), ("1e999", "1e999"), ("1.5x", "1.5"),
])
def test_non_finite_and_malformed_literals_are_clear_errors(text, expected):
    with pytest.raises(TextError, match=expected) as e:
        split_text(text, "train.txt:7")
    assert "train.txt:7" in str(e.value)


def test_unknown_text_is_an_error_naming_the_sample():
    vocab = Vocab(build_text_vocab(["{a:1}"]), "xval")
    with pytest.raises(TextError, match=r"val.txt:3.*'b'"):
        encode("{b:1}", vocab, "val.txt:3")


def test_punctuation_runs_are_one_token_but_never_swallow_a_sign_or_a_quote():
    text = '{"data":[[[2.60,-0.75],[0.81,.42]]]}'
    assert [v for kind, v in split_text(text) if kind == "text"] == ["{", '"data"', ":[[[", "],[", "]]]}"]
    assert extract_numbers(text) == [2.6, -0.75, 0.81, 0.42]
    assert split_text("((1*2)+(3-4))=5")[4:7] == [("text", ")+("), ("num", 3.0), ("text", "-")]


def test_a_comma_between_two_numbers_costs_no_token():
    assert split_text("[1,-2]") == [("text", "["), ("num", 1.0), ("num", -2.0), ("text", "]")]
    assert split_text("{a:1,b:2}")[3:5] == [("num", 1.0), ("text", ",")]  # a comma before a key stays
    vocab = Vocab(build_text_vocab(["[1,2]"]), "p1000")
    ids, _, _ = encode("[1,-2,0]", vocab)
    assert len(ids) == 2 + 3 * 3 and len(number_spans(ids, vocab)) == 3


def test_operator_minus_and_sign_minus_are_different_tokens():
    vocab = Vocab(build_text_vocab(["(1-2)"]), "p10")
    ids, values, _ = encode("(1-2)", vocab)
    minus_operator = ids[6]  # ( + 1 0 0 E-2 - ...
    assert vocab.itos[minus_operator] == "-" and not vocab.is_number([minus_operator])[0]
    negative, _, _ = encode("(-1-2)", vocab)
    assert vocab.itos[negative[1]] == "-" and vocab.is_number([negative[1]])[0]


def test_xval_values_sit_at_number_tokens_and_are_one_elsewhere():
    vocab = Vocab(build_text_vocab(["{a:1,b:2}"]), "xval")
    ids, values, _ = encode("{a:-1.5,b:0.123456789}", vocab)
    is_num = ids == vocab.num_id
    assert is_num.sum() == 2
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


@pytest.mark.slow
def test_tokenize_command_writes_memory_mapped_arrays(tmp_path):
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    for enc in ("xval", "p1000"):
        subprocess.run([sys.executable, "tokenize_numbers.py", str(tmp_path), "--encoding", enc, "--workers", "1",
                        "--plain-text"], check=True, capture_output=True, cwd=ROOT)
    assert json.loads((tmp_path / "vocab.json").read_text())["text_tokens"] == [",", ":", "a", "b", "{", "}"]
    split = Split(str(tmp_path), "train", "xval")
    ids, values = split[1]
    assert len(split) == 2 and values.tolist() == [1, 1, 1, 3, 1, 1, 1, np.float32(4e-2), 1]
    summary = json.loads((tmp_path / "p1000" / "val.json").read_text())
    assert summary["samples"] == 1 and summary["tokens_per_sample_max"] == 4 + 3  # { b : + 500 E-3 }
    assert Split(str(tmp_path), "val", "p1000").lengths.tolist() == [7]


@pytest.mark.slow
def test_tokenize_command_reports_unknown_text_with_file_and_line(tmp_path):
    (tmp_path / "train.txt").write_text("{a:1}\n")
    (tmp_path / "val.txt").write_text("{a:1}\n{a:2}\n{c:3}\n")
    r = subprocess.run([sys.executable, "tokenize_numbers.py", str(tmp_path), "--workers", "1", "--plain-text"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0 and "val.txt:3" in r.stderr and "'c'" in r.stderr


@pytest.mark.slow
def test_arrays_tokenized_with_another_vocabulary_are_refused(tmp_path):
    (tmp_path / "train.txt").write_text("{a:1.5}\n")
    (tmp_path / "val.txt").write_text("{a:2}\n")
    subprocess.run([sys.executable, "tokenize_numbers.py", str(tmp_path), "--workers", "1", "--plain-text"],
                   check=True, capture_output=True, cwd=ROOT)
    (tmp_path / "train.txt").write_text("{a:1.5}\n[b:2]\n")
    subprocess.run([sys.executable, "tokenize_numbers.py", str(tmp_path), "--rebuild-vocab", "--encoding", "p10",
                    "--workers", "1"], check=True, capture_output=True, cwd=ROOT)
    with pytest.raises(ValueError, match="another vocab.json"):
        Split(str(tmp_path), "train", "xval")
    assert len(Split(str(tmp_path), "train", "p10")) == 2


# ---------------------------------------------------------------- the dataset command and careless use

import os  # noqa: E402

import tokenize_numbers  # noqa: E402


def tokenize(d, *flags):
    tokenize_numbers.main([str(d), "--workers=1", *flags])


def test_malformed_numbers_are_errors_but_json_lists_are_numbers():
    for bad, literal in (('{"a":1.2.3}', "1.2.3"), ('{"b":--5}', "--5"), ("[1,000,000]", "1,000"), ("v=5..5", "5..5")):
        with pytest.raises(TextError, match=f"data.txt:4: malformed number '{literal}'"):
            split_text(bad, "data.txt:4")
    assert extract_numbers("[1,2]") == [1, 2] and extract_numbers("[1,234,0]") == [1, 234, 0]
    assert extract_numbers("1--5") == [1, -5] and extract_numbers("[0,0.5,-0.25]") == [0, 0.5, -0.25]


def test_a_malformed_number_in_a_dataset_names_file_line_and_literal(tmp_path):
    (tmp_path / "train.txt").write_text('{"a":1,"b":-5}\n' * 3 + '{"a":1.2.3,"b":--5}\n')
    (tmp_path / "val.txt").write_text('{"a":1,"b":2}\n')
    with pytest.raises(SystemExit, match=r"train.txt:4: malformed number '1.2.3'"):
        tokenize(tmp_path, "--plain-text")


def test_val_is_tokenized_after_train_and_an_unseen_token_says_what_to_do(tmp_path, capsys):
    (tmp_path / "train.txt").write_text("{station:a,t:1.5}\n")
    (tmp_path / "val.txt").write_text("{station:a,t:2}\n{station:b,t:3}\n")
    (tmp_path / "test.txt").write_text("{station:a,t:1e-50}\n")
    with pytest.raises(SystemExit) as e:
        tokenize(tmp_path, "--plain-text")
    assert "val.txt:2: 'b' is not in the vocabulary" in str(e.value) and "--rebuild-vocab" in str(e.value)
    assert sorted(os.listdir(tmp_path)) == ["test.txt", "train.txt", "val.txt"]  # a failed run leaves nothing
    (tmp_path / "train.txt").write_text("{station:a,t:1.5}\n{station:b,t:-250}\n")
    capsys.readouterr()
    tokenize(tmp_path, "--plain-text")
    out = capsys.readouterr().out
    assert out.index("  train:") < out.index("  val:") and "largest |x| 250" in out
    assert "note: test: 1 numbers below 1.4e-45" in out  # float32 has no 1e-50
    assert json.loads((tmp_path / "xval" / "test.json").read_text())["flushed_to_zero"] == 1


def test_plain_text_splits_are_the_split_files_and_a_later_test_txt_is_tokenized(tmp_path, capsys):
    (tmp_path / "train.txt").write_text("{a:1}\n{a:2}\n")
    (tmp_path / "README.txt").write_text("my notes\n")
    with pytest.raises(SystemExit, match="no val.txt; train.py validates on it"):
        tokenize(tmp_path, "--plain-text")
    assert "README.txt not taken as splits" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path)) == ["README.txt", "train.txt"]
    (tmp_path / "val.txt").write_text("{a:3}\n")
    tokenize(tmp_path, "--plain-text")
    assert json.loads((tmp_path / "meta.json").read_text())["splits"] == ["train", "val"]
    (tmp_path / "test.txt").write_text("{a:4}\n")
    tokenize(tmp_path)  # no --plain-text needed the second time
    assert json.loads((tmp_path / "meta.json").read_text())["splits"] == ["test", "train", "val"]
    assert len(Split(str(tmp_path), "test", "xval")) == 1


def test_a_second_run_is_refused_while_the_first_holds_the_lock_and_a_dead_ones_lock_is_cleaned(tmp_path, capsys):
    (tmp_path / "train.txt").write_text("{a:1}\n{a:2}\n")
    (tmp_path / "val.txt").write_text("{a:3}\n")
    tokenize(tmp_path, "--plain-text")
    before = {f: (tmp_path / "xval" / f).read_bytes() for f in os.listdir(tmp_path / "xval")}
    (tmp_path / "tokenize.lock").write_text(str(os.getppid()))  # a live process holds it
    with pytest.raises(SystemExit, match=rf"tokenize.lock: another tokenize_numbers.py run \(pid {os.getppid()}\)"):
        tokenize(tmp_path, "--encoding=xval")
    assert {f: (tmp_path / "xval" / f).read_bytes() for f in os.listdir(tmp_path / "xval")} == before
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / "tokenize.lock").write_text(child.stdout.strip())  # a process that is gone
    (tmp_path / "xval" / f"train.ids.{child.stdout.strip()}.tmp.npy").write_bytes(b"half")
    capsys.readouterr()
    tokenize(tmp_path)
    assert f"removing {tmp_path / 'tokenize.lock'} of process {child.stdout.strip()}" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / "xval")) == sorted(before) and not (tmp_path / "tokenize.lock").exists()


@pytest.mark.slow
def test_two_concurrent_runs_never_mix_arrays(tmp_path):
    lines = [f'{{"a":[{i * 0.5},{-i}],"b":{i % 7}}}' for i in range(60_000)]
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "val.txt").write_text("\n".join(lines[:100]) + "\n")
    command = [sys.executable, "tokenize_numbers.py", str(tmp_path), "--workers=1", "--plain-text"]
    runs = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    results = [(r.wait(), r.stderr.read()) for r in runs]
    assert any(code == 0 for code, _ in results)
    for code, err in results:
        assert code == 0 or "another tokenize_numbers.py run" in err, err
    split = Split(str(tmp_path), "train", "xval")
    assert len(split) == 60_000 and split[59_999][1][3:5].tolist() == [29999.5, -59999]
    assert not [f for f in os.listdir(tmp_path / "xval") if ".tmp" in f]


@pytest.mark.slow
def test_the_speed_benchmark_runs_on_a_dataset_and_writes_nothing(tmp_path):
    (tmp_path / "train.txt").write_text("".join(f"{{a:[{i},{i / 3:.4g}],b:-{i}e-3}}\n" for i in range(50)))
    r = subprocess.run([sys.executable, "tools/bench_tokenize.py", str(tmp_path), "--lines", "20", "--repeats", "1"],
                       capture_output=True, text=True, cwd=ROOT, check=True)
    assert "20 lines, 3.0 numbers per line" in r.stdout and "| all five, one pass |" in r.stdout
    assert os.listdir(tmp_path) == ["train.txt"]


def test_a_full_disk_while_writing_arrays_is_one_line_and_leaves_the_old_arrays(tmp_path, monkeypatch):
    import errno
    import shutil
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    tokenize(tmp_path, "--plain-text")
    before = {f: (tmp_path / "xval" / f).read_bytes() for f in os.listdir(tmp_path / "xval")}
    (tmp_path / "val.txt").write_text("{b:0.25}\n{a:7}\n")

    def full(src, dst, length=0):  # half the bytes, then the disk is full
        dst.write(src.read(8))
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(shutil, "copyfileobj", full)
    with pytest.raises(SystemExit, match=r"writing the arrays of .* failed: the disk is full \([\d,]+ MiB free"):
        tokenize_numbers.main([str(tmp_path), "--workers=1"])
    assert {f: (tmp_path / "xval" / f).read_bytes() for f in os.listdir(tmp_path / "xval")} == before  # no temporaries
    assert not (tmp_path / "tokenize.lock").exists()

    def refused(src, dst, length=0):  # another OS error is said as it is, not blamed on the disk
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "xval"))
    monkeypatch.setattr(shutil, "copyfileobj", refused)
    with pytest.raises(SystemExit) as e:
        tokenize_numbers.main([str(tmp_path), "--workers=1"])
    assert "Permission denied" in str(e.value) and "disk is full" not in str(e.value) and "nothing was changed" in str(e.value)
    assert {f: (tmp_path / "xval" / f).read_bytes() for f in os.listdir(tmp_path / "xval")} == before


@pytest.mark.slow
def test_of_many_processes_taking_one_lock_at_once_exactly_one_holds_it(tmp_path):
    # the lock file is created whole (a hard link), so no process ever reads it empty and takes it as stale
    script = ("import sys, time; sys.path.insert(0, sys.argv[1]); from util import take_lock\n"
              "time.sleep(max(0, float(sys.argv[3]) - time.time()))\n"
              "print('held' if take_lock(sys.argv[2]) is None else 'refused'); time.sleep(1)")
    for round in range(3):
        path, start = str(tmp_path / f"x{round}.lock"), time.time() + 1
        procs = [subprocess.Popen([sys.executable, "-c", script, ROOT, path, str(start)], stdout=subprocess.PIPE, text=True)
                 for _ in range(6)]
        outcomes = sorted(p.communicate()[0].strip() for p in procs)
        assert outcomes == ["held"] + ["refused"] * 5


@pytest.mark.slow
def test_a_sigterm_while_tokenizing_leaves_the_old_arrays_and_no_temporaries(tmp_path):
    import signal
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    tokenize(tmp_path, "--plain-text")
    before = {f: (tmp_path / "xval" / f).read_bytes() for f in os.listdir(tmp_path / "xval")}
    (tmp_path / "train.txt").write_text("".join(f"{{a:{i * 0.5},b:{-i}}}\n" for i in range(1_000_000)))
    p = subprocess.Popen([sys.executable, "tokenize_numbers.py", str(tmp_path), "--plain-text", "--workers=1", "--encoding=all"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not any(".tmp" in f for d in ("xval", "p10") if (tmp_path / d).is_dir() for f in os.listdir(tmp_path / d)):
        assert time.time() < deadline and p.poll() is None, f"tokenizing never began writing: {p.poll() and p.communicate()}"
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == 143
    assert {f: (tmp_path / "xval" / f).read_bytes() for f in os.listdir(tmp_path / "xval")} == before
    assert not [f for d, _, fs in os.walk(tmp_path) for f in fs if ".tmp" in f] and not (tmp_path / "tokenize.lock").exists()
