"""dataset.py: a folder is tokenized only when it is a whole dataset (or declared plain text), text that
is empty, not UTF-8 or split by carriage returns is refused naming the line, and arrays are read only
while they match their text and each other."""
import json
import os
import shutil

import pytest
from conftest import run
from helpers import one_line_error

import tokenize_numbers
from dataset import Split


def test_a_folder_without_meta_json_is_refused_unless_declared_plain_text(tmp_path):
    d = str(tmp_path)
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    with pytest.raises(SystemExit, match="meta.json not found.*--plain-text"):
        tokenize_numbers.main([d, "--workers=1"])
    assert sorted(os.listdir(d)) == ["train.txt", "val.txt"]
    tokenize_numbers.main([d, "--workers=1", "--plain-text"])
    assert json.load(open(tmp_path / "meta.json"))["splits"] == ["train", "val"]
    assert len(Split(d, "val", "xval")) == 1
    os.remove(tmp_path / "meta.json")  # as a prepare run that stopped before its end leaves it
    with pytest.raises(SystemExit, match="meta.json not found"):
        tokenize_numbers.main([d, "--workers=1", "--rebuild-vocab"])
    with pytest.raises(FileNotFoundError, match="not a complete dataset"):
        Split(d, "train", "xval")


@pytest.mark.parametrize("empty", ["train", "val"])
def test_an_empty_split_is_refused_and_leaves_nothing_behind(tmp_path, empty):
    for split in ("train", "val"):
        (tmp_path / f"{split}.txt").write_text("" if split == empty else "{a:1}\n")
    with pytest.raises(SystemExit, match=f"{empty}.txt:1: empty file"):
        tokenize_numbers.main([str(tmp_path), "--workers=1", "--plain-text"])
    assert sorted(os.listdir(tmp_path)) == ["train.txt", "val.txt"]  # no meta.json, vocab.json or arrays


def test_arrays_whose_offsets_belong_to_another_split_are_refused(tmp_path):
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    tokenize_numbers.main([str(tmp_path), "--workers=1", "--plain-text"])
    shutil.copy(tmp_path / "xval" / "val.offsets.npy", tmp_path / "xval" / "train.offsets.npy")
    with pytest.raises(ValueError, match="come from different runs"):
        Split(str(tmp_path), "train", "xval")


def test_text_edited_after_tokenizing_is_refused_until_tokenized_again(tmp_path):
    (tmp_path / "train.txt").write_text("{a:1.5,b:-2}\n{a:3,b:4e-2}\n")
    (tmp_path / "val.txt").write_text("{b:0.5}\n")
    tokenize_numbers.main([str(tmp_path), "--workers=1", "--plain-text"])
    with open(tmp_path / "train.txt", "a") as f:
        f.write("{a:7,b:8}\n")
    with pytest.raises(ValueError, match=r"train.txt has changed since it was tokenized \(36 bytes, 26 then\)"):
        Split(str(tmp_path), "train", "xval")
    assert len(Split(str(tmp_path), "val", "xval")) == 1  # an untouched split still loads
    tokenize_numbers.main([str(tmp_path), "--workers=1"])
    assert len(Split(str(tmp_path), "train", "xval")) == 3


def test_text_that_is_not_utf8_is_an_error_naming_file_and_line(tmp_path):
    (tmp_path / "train.txt").write_bytes(b"{a:1}\n{b:2}\n{\xe9:3}\n")
    with pytest.raises(SystemExit, match=r"train.txt:3: not UTF-8 text \(byte 0xe9 at column 2\)"):
        tokenize_numbers.main([str(tmp_path), "--workers=1", "--plain-text"])


def test_plain_text_with_carriage_return_line_ends_is_refused_naming_the_line(tmp_path):
    (tmp_path / "train.txt").write_bytes(b"{a:1.5}\r{a:2}\r{a:3}\r")
    (tmp_path / "val.txt").write_text("{a:1}\n")
    error = one_line_error(run("tokenize_numbers.py", str(tmp_path), "--plain-text", "--workers=1", check=False))
    assert "train.txt:1: a carriage return inside the line" in error and not (tmp_path / "xval").exists()
