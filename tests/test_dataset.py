"""dataset.Split reads arrays only while they match their text, vocabulary and each other."""
import json
import shutil

import numpy as np
import pytest
from conftest import run
from helpers import tokenize, write

from dataset import Split


def test_arrays_of_another_vocabulary_are_refused(tmp_path):
    write(tmp_path)
    for enc in ("xval", "p1000"):
        run("tokenize_numbers.py", str(tmp_path), "--encoding", enc, "--workers", "1", "--plain-text")
    assert json.loads((tmp_path / "vocab.json").read_text())["text_tokens"] == [",", ":", "a", "b", "{", "}"]
    split = Split(str(tmp_path), "train", "xval")
    assert len(split) == 2 and split[1][1].tolist() == [1, 1, 1, 3, 1, 1, 1, np.float32(4e-2), 1]
    summary = json.loads((tmp_path / "p1000" / "val.json").read_text())
    assert summary["samples"] == 1 and summary["tokens_per_sample_max"] == 4 + 3  # { b : + 500 E-3 }
    assert Split(str(tmp_path), "val", "p1000").lengths.tolist() == [7]
    (tmp_path / "train.txt").write_text("{a:1.5}\n[b:2]\n")
    (tmp_path / "val.txt").write_text("{a:2}\n")
    run("tokenize_numbers.py", str(tmp_path), "--rebuild-vocab", "--encoding", "p10", "--workers", "1")
    with pytest.raises(ValueError, match="another vocab.json"):
        Split(str(tmp_path), "train", "xval")
    assert len(Split(str(tmp_path), "train", "p10")) == 2


def test_another_split_or_edited_text_is_refused(tmp_path):
    write(tmp_path)
    tokenize(tmp_path, "--plain-text")
    offsets = tmp_path / "xval" / "train.offsets.npy"
    kept = offsets.read_bytes()
    shutil.copy(tmp_path / "xval" / "val.offsets.npy", offsets)
    with pytest.raises(ValueError, match="come from different runs"):
        Split(str(tmp_path), "train", "xval")
    offsets.write_bytes(kept)
    (tmp_path / "train.txt").write_text((tmp_path / "train.txt").read_text() + "{a:7,b:8}\n")
    with pytest.raises(ValueError, match=r"train.txt has changed since it was tokenized \(36 bytes, 26 then\)"):
        Split(str(tmp_path), "train", "xval")
    assert len(Split(str(tmp_path), "val", "xval")) == 1  # an untouched split still loads
    tokenize(tmp_path)
    assert len(Split(str(tmp_path), "train", "xval")) == 3
