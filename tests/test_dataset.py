"""dataset.Split reads arrays only while they match their text, vocabulary and each other."""
import json

import numpy as np
import pytest
from helpers import tokenize, write

from dataset import Split, check_trained_on, fingerprint


def test_arrays_of_another_vocabulary_are_refused(tmp_path):
    write(tmp_path)
    for enc in ("xval", "p1000"):
        tokenize(tmp_path, "--encoding", enc, "--plain-text")
    assert json.loads((tmp_path / "vocab.json").read_text())["text_tokens"] == [",", ":", "a", "b", "{", "}"]
    split = Split(str(tmp_path), "train", "xval")
    assert len(split) == 2 and split[1][1].tolist() == [1, 1, 1, 3, 1, 1, 1, np.float32(4e-2), 1]
    summary = json.loads((tmp_path / "p1000" / "val.json").read_text())
    assert summary["samples"] == 1 and summary["tokens_per_sample_max"] == 4 + 3  # { b : + 500 E-3 }
    assert Split(str(tmp_path), "val", "p1000").lengths.tolist() == [7]
    write(tmp_path, "{a:1.5}\n[b:2]\n", "{a:2}\n")
    tokenize(tmp_path, "--rebuild-vocab", "--encoding", "p10")
    with pytest.raises(ValueError, match="another vocab.json"):
        Split(str(tmp_path), "train", "xval")
    assert len(Split(str(tmp_path), "train", "p10")) == 2


@pytest.mark.parametrize("name, edit, says", [
    ("offsets", lambda o: o[[0, 2, 1]], r"train.offsets.npy: not increasing at index 2;"),  # two swapped
    ("offsets", lambda o: o + 1, "train.offsets.npy: expected integers from 0, 1-D"),
    ("offsets", lambda o: o[:2], r"train: .json counts 2 samples, .offsets.npy 1 of \d+ tokens"),  # another split's
    ("ids", lambda a: a[:-1], r"train: .* .ids.npy and .values.npy (\d+) and (?!\1)\d+ tokens: files of different"),
])
def test_tampered_arrays_are_refused_naming_the_fault(tokenized, name, edit, says):
    path = tokenized / "xval" / f"train.{name}.npy"
    np.save(path, edit(np.load(path)))
    with pytest.raises(ValueError, match=says):
        Split(str(tokenized), "train", "xval")


@pytest.mark.parametrize("meta, kind, says", [
    ({"seed": 2}, True, "prepared again since"),
    ({"dataset": "arithmetic"}, True, "holds another dataset than the one ckpt.pt was trained on"),
    ({"dataset": "arithmetic"}, False, "prepared again since"),  # a fingerprint that records no kind
])
def test_a_checkpoint_says_if_its_data_was_prepared_again_or_replaced(tokenized, capsys, meta, kind, says):
    checkpoint = {"data_fingerprint": fingerprint(str(tokenized), "xval"), "model_args": {"encoding": "xval"}}
    if not kind:
        del checkpoint["data_fingerprint"]["dataset"]
    check_trained_on(checkpoint, "ckpt.pt", str(tokenized))  # unchanged: no word
    (tokenized / "meta.json").write_text(json.dumps(json.loads((tokenized / "meta.json").read_text()) | meta))
    with pytest.raises(ValueError, match=f"{says}.*--changed_data=True"):
        check_trained_on(checkpoint, "ckpt.pt", str(tokenized))
    check_trained_on(checkpoint, "ckpt.pt", str(tokenized), changed_data=True)
    assert says in capsys.readouterr().out


def test_edited_text_is_refused(tokenized):
    (tokenized / "train.txt").write_text((tokenized / "train.txt").read_text() + "{a:7,b:8}\n")
    with pytest.raises(ValueError, match=r"train.txt has changed since it was tokenized \(36 bytes, 26 then\)"):
        Split(str(tokenized), "train", "xval")
    assert len(Split(str(tokenized), "val", "xval")) == 1  # an untouched split still loads
    tokenize(tokenized)
    assert len(Split(str(tokenized), "train", "xval")) == 3
