"""Files from someone else (a downloaded dataset, a hand-edited meta.json or checkpoint) never
make a run write outside their folder or through a planted link, or train on arrays the tokenizer
could not have written: each is refused in one line naming it."""
import json
import os
import shutil
import stat

import numpy as np
import pytest

from conftest import run, run_in_process
from dataset import Split, Vocab, load_text_vocab, read_samples
from helpers import EVAL_TINY, dataset_bytes, edited, eval_model, failed, one_line_error, own_model, train
from helpers import train_args
from util import atomic_file, atomic_write_text, open_new, take_lock


def tokenize(data):
    return run("tokenize_numbers.py", str(data), "--encoding=xval", "--workers=1", check=False)


def test_meta_json_naming_no_split_one_twice_or_one_outside_is_refused(tmp_path):
    data, victim = tmp_path / "data", tmp_path / "victim"
    data.mkdir(), victim.mkdir()
    (data / "train.txt").write_text("(1+2)=3\n")
    (victim / "settings.txt").write_text("(1+2)=3\n")
    (victim / "settings.json").write_text("precious")
    outside = ["train", "../victim/settings"]
    twice = "none, or one named twice"
    for splits, error in (([], twice), (["train"] * 2, twice), (outside, "'../victim/settings' is not a plain name")):
        (data / "meta.json").write_text(json.dumps({"dataset": "arithmetic", "splits": splits}))
        failed(tokenize(data), error, "meta.json")
        assert sorted(os.listdir(victim)) == ["settings.json", "settings.txt"]
        assert (victim / "settings.json").read_text() == "precious"
    for split, encoding in (("../ops2/train", "xval"), ("train", "../xval")):
        with pytest.raises(ValueError, match="not a plain name"):
            Split(data, split, encoding)


def test_a_link_planted_at_a_temporary_name_is_never_written_through(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    os.symlink(target, tmp_path / "eval_first5.tmp.json")
    atomic_write_text(str(tmp_path / "eval_first5.json"), "{}")
    lock = tmp_path / "train.lock"
    os.symlink(target, f"{lock}.{os.getpid()}.tmp")
    assert take_lock(str(lock)) is None
    tmp = tmp_path / f"train.ids.{os.getpid()}.tmp"
    os.symlink(target, tmp)
    with open_new(str(tmp)) as f:
        f.write(b"ids")
    assert target.read_text() == "precious" and (tmp_path / "eval_first5.json").read_text() == "{}"
    assert not os.path.islink(tmp)
    # a lock holding garbage is taken over
    garbage = tmp_path / "x.lock"
    garbage.write_text("99999999999999999999")
    assert take_lock(str(garbage)) is None and garbage.read_text() == str(os.getpid())


def test_two_writes_of_one_file_use_different_temporaries_and_keep_its_permissions(tmp_path):
    path = str(tmp_path / "ckpt_latest.pt")
    with atomic_file(path) as a, atomic_file(path) as b:
        assert a != b and a.endswith(".tmp.pt") and b.endswith(".tmp.pt")
        for tmp in (a, b):
            open(tmp, "w").write(tmp)
    assert open(path).read() == a  # the last rename wins, whole
    os.chmod(path, 0o600)
    atomic_write_text(path, "two")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and open(path).read() == "two"


def put(a, index, value):
    a = a.copy()
    a[index] = value
    return a


def at(split, line):
    return rf"sample {line - 1} \(line {line} of {split}.txt\) holds"


# what: (split, array, edit (array, offsets, positions of text tokens), error)
ARRAYS = {
    "a token id beyond the vocabulary": ("train", "ids", lambda a, o, t: put(a, o[5] + 1, 10_000),
                                         at("train", 6) + " token id 10000"),
    "3.4e38": ("val", "values", lambda a, o, t: put(a, o[3], 3.4e38), at("val", 4) + r" 3.4e\+38"),
    "inf": ("val", "values", lambda a, o, t: put(a, o[3], np.inf), at("val", 4)),
    "nan": ("val", "values", lambda a, o, t: put(a, o[3], np.nan), at("val", 4)),
    "float64 values": ("train", "values", lambda a, o, t: a.astype(np.float64),
                       "expected integer ids and float32 values"),
    "an empty sample": ("train", "offsets", lambda a, o, t: put(a, 5, a[4]), "offsets.npy: not increasing at index 5"),
    "a value at a text token": ("train", "values", lambda a, o, t: put(a, t[3], 1e6),
                                r"holds 1e\+06 at a token that is no number"),
}


@pytest.mark.parametrize("what", ARRAYS)
def test_arrays_the_tokenizer_could_not_have_written_are_refused_at_open(own_data, what):
    split, name, edit, match = ARRAYS[what]
    vocab = Vocab(load_text_vocab(own_data), "xval")
    ids = np.load(os.path.join(own_data, "xval", f"{split}.ids.npy"))
    text = np.flatnonzero(ids != vocab.num_id)
    path = os.path.join(own_data, "xval", f"{split}.{name}.npy")
    np.save(path, edit(np.load(path), Split(own_data, split, "xval").offsets, text))
    with pytest.raises(ValueError, match=match):
        Split(own_data, split, "xval", vocab if what == "a value at a text token" else None)
    if name == "ids":
        r = train(own_data, os.path.join(own_data, "out"), check=False)
        assert "Traceback" not in failed(r, "outside the vocabulary").stderr


@pytest.mark.parametrize("name, content", [
    *[(n, c) for n in ("meta.json", "vocab.json", "xval/train.json") for c in ('{"spl', "[1, 2]", "{}")],
    *[(n, None) for n in ("meta.json", "vocab.json", "xval/train.values.npy")]])
def test_a_broken_json_file_or_a_fifo_of_a_dataset_is_refused_naming_it(own_data, name, content):
    path = os.path.join(own_data, name)
    if content is None:  # a FIFO, failed, not waited on
        os.remove(path)
        os.mkfifo(path)
    else:
        open(path, "w").write(content)
    r = train(own_data, os.path.join(own_data, "out"), check=False)
    if content:
        assert name in one_line_error(r)
    else:
        failed(r, "FIFO, device or socket; expected a file")


def test_an_empty_data_dir_or_a_split_to_evaluate_that_names_a_path_is_refused(checkpoint):
    failed(run("train.py", "--data_dir=", "--out_dir=out/never", check=False), "data_dir is empty")
    r = run("eval.py", f"--ckpt={checkpoint}", "--splits=../x/test", check=False)
    failed(r, "not a plain name")


def sample(ckpt, text="(0.5+0.25)=[?]\n", check=True):
    return run("sample.py", f"--ckpt={ckpt}", input=text, check=check)


@pytest.mark.parametrize("prefix", ["_orig_mod.", "module.", "module._orig_mod."])
def test_the_weights_of_a_compiled_or_ddp_model_load(checkpoint, tmp_path, prefix):
    path = edited(checkpoint, tmp_path / "edited.pt",
                  lambda c: c.update(model={prefix + k: v for k, v in c["model"].items()}))
    assert sample(path).stdout == sample(checkpoint).stdout


EDITS = {
    "weights not a dict": lambda c: c.update(model=[1]),
    "model settings not a dict": lambda c: c.update(model_args="x"),
    "a token not a string": lambda c: c.update(text_tokens=[1]),
    "a setting of a newer version": lambda c: c["model_args"].update(rotary=True),
    "a token list longer than the vocabulary": lambda c: c["text_tokens"].append("zz"),
    "weights of another shape": lambda c: c["model"].update(
        {k: v[:1] for k, v in c["model"].items() if k.startswith("wte")}),
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edited_checkpoint_is_one_line_naming_it(checkpoint, tmp_path, edit):
    path = edited(checkpoint, tmp_path / "edited.pt", EDITS[edit])
    assert path in one_line_error(sample(path, check=False))


def test_a_checkpoint_that_is_a_fifo_or_has_a_nan_best_loss_is_refused(checkpoint, data, tmp_path):
    os.mkfifo(tmp_path / "ckpt.pt")
    failed(sample(tmp_path / "ckpt.pt", check=False), "FIFO")
    (tmp_path / "run").mkdir()
    edited(checkpoint, tmp_path / "run" / "ckpt_latest.pt", lambda c: c.update(best_val_loss=float("nan")))
    r = train(data, tmp_path / "run", "--resume", "--max_iters=4", check=False)
    failed(r, "best_val_loss nan is no step or loss")


def test_sample_refuses_a_number_no_model_can_take_and_a_line_of_megabytes_at_once(checkpoint):
    failed(sample(checkpoint, "(1e25+0.25)=[?]\n", check=False), "beyond ±1e+18", "stdin:1")
    r = sample(checkpoint, "(0.5+" + "1" * 5_000_000 + ")=[?]\n", check=False)
    assert len(failed(r, "5,000,010 characters").stderr) < 1000


def test_a_byte_order_mark_is_no_token_and_a_nul_byte_is_refused(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes("\ufeff(1+2)=3\n(2+2)=4\n".encode())
    assert [line for _, line in read_samples(str(path))] == ["(1+2)=3", "(2+2)=4"]
    path.write_bytes(b"(1+2)=3\n(2+\x002)=4\n")
    with pytest.raises(ValueError, match=r"train.txt:2: a NUL byte at column 4"):
        read_samples(str(path))


def cut(path, keep):
    lines = open(path).read().splitlines(True)
    open(path, "w").writelines(keep(lines))


def test_a_text_cut_short_is_not_tokenized_nor_evaluated(checkpoint, own_data):
    cut(os.path.join(own_data, "test.txt"), lambda lines: lines[:-3] + [lines[-3][:5]])
    r = run("eval.py", f"--ckpt={checkpoint}", f"--data_dir={own_data}", check=False)
    failed(r, "a copy cut short?", "test.txt has")
    cut(os.path.join(own_data, "train.txt"), lambda lines: lines[: len(lines) // 2])
    failed(tokenize(own_data), "its meta.json", "a copy cut short?")


def test_a_resume_keeps_a_users_file_that_only_looks_like_a_temporary(data, tmp_path):
    out = tmp_path / "run"
    train(data, out)
    (out / "finetune.tmp.pt").write_text("mine")
    (out / "ckpt_latest.x1y2.tmp.pt").write_text("cut short")
    train(data, out, "--max_iters=4", "--resume")
    assert (out / "finetune.tmp.pt").read_text() == "mine"
    assert not (out / "ckpt_latest.x1y2.tmp.pt").exists()


@pytest.mark.parametrize("tokens", [["a", "a"], ["a", ""], ["a", "[NUM]"]])
def test_a_vocabulary_the_tokenizer_could_not_have_written_is_refused(own_data, tokens):
    json.dump({"text_tokens": tokens}, open(os.path.join(own_data, "vocab.json"), "w"))
    with pytest.raises(ValueError, match="text_tokens holds a token twice, an empty one or a"):
        load_text_vocab(own_data)


# a link at each name written
CSV = "a,b\n" + "".join(f"{i % 7 * 1.5},{i % 5 - 2.25}\n" for i in range(60))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A CSV of keys a and b, its dataset in xVal, tiny runs on it (gmm: with a GMM head)."""
    folder = tmp_path_factory.mktemp("made")
    data, ckpt = own_model(folder, "d.csv", CSV)
    gmm = eval_model(data, str(folder / "gmm"), "--block_size=128", "--num_head=gmm")
    return {"csv": str(folder / "d.csv"), "data": data, "run": os.path.dirname(ckpt), "gmm": os.path.dirname(gmm)}


def copy(source, to):
    return shutil.copytree(source, to, symlinks=True)


def fresh_data(made, tmp):
    data = copy(made["data"], tmp / "data")
    shutil.rmtree(os.path.join(data, "xval"))
    os.remove(os.path.join(data, "vocab.json"))
    return data


def resumed(made, tmp, *flags):
    data, out = made["data"], copy(made["run"], tmp / "run")
    return ["train.py", *EVAL_TINY, f"--data_dir={data}", f"--out_dir={out}", "--block_size=128",
            "--max_iters=4", "--keep_every=4", *flags]


def evaluate(run, tmp, *flags):
    ckpt = os.path.join(copy(run, tmp / "run"), "ckpt_best.pt")
    return ["eval.py", f"--ckpt={ckpt}", "--plots=True", "--device=cpu", *flags]


PREPARED = ["out/", "out/train.txt", "out/val.txt", "out/test.txt", "out/meta.json",
            "out/prepare.lock", "out/tokenize.lock", "out/prepare.lock.{pid}.tmp",
            "out/.prepare-{pid}.tmp/", "out/ (empty)"]
WRITTEN = [f"xval/{s}.{k}" for s in ("train", "val") for k in ("ids.npy", "values.npy", "offsets.npy", "json")]
# command: (names it writes, in tmp; its arguments from the fixture `made` and tmp). A name
# ending in / is a folder (" (empty)": an empty one); {pid} is the command's process, this one
# (run_in_process)
COMMANDS = {
    "prepare/arithmetic.py": (PREPARED, lambda made, tmp: [
        "prepare/arithmetic.py", "--size=tiny", "--workers=1", "--out", tmp / "out"]),
    "prepare/text.py": (PREPARED, lambda made, tmp: ["prepare/text.py", made["csv"], "--out", tmp / "out"]),
    "prepare/text.py --force": (
        [f"data/{n}" for n in ("train.txt", "meta.json", "vocab.json", "xval/", "p10/", "xval/train.json",
                               "xval/val.ids.npy", "prepare.lock", ".prepare-{pid}.tmp/")],
        lambda made, tmp: ["prepare/text.py", made["csv"], "--force", "--out", copy(made["data"], tmp / "data")]),
    "tokenize_numbers.py": (
        [f"data/{n}" for n in ("vocab.json", "xval/", "tokenize.lock", "tokenize.lock.{pid}.tmp",
                               "xval/train.ids.{pid}.tmp", *WRITTEN)],
        lambda made, tmp: ["tokenize_numbers.py", fresh_data(made, tmp), "--encoding=xval", "--workers=1"]),
    "train.py": (
        [f"run/{n}" for n in ("", " (empty)", "ckpt_latest.pt", "ckpt_best.pt", "log.jsonl",
                              "train.lock", "train.lock.{pid}.tmp")],
        lambda made, tmp: ["train.py", *train_args(made["data"], tmp / "run", "--block_size=128")]),
    "train.py --resume": (
        ["run/ckpt_latest.pt", "run/ckpt_best.pt", "run/ckpt_4.pt", "run/log.jsonl", "run/train.lock"],
        lambda made, tmp: resumed(made, tmp, "--resume")),
    "train.py --overwrite=True": (["run/ckpt_best.pt", "run/log.jsonl"],
                                  lambda made, tmp: resumed(made, tmp, "--overwrite=True")),
    "eval.py --plots=True": (["run/eval.json", "run/eval.md", "run/eval_test.png"],
                             lambda made, tmp: evaluate(made["run"], tmp)),
    "eval.py --plots=True --mask_key=b": (
        ["run/eval_b.json", "run/eval_b.md", "run/eval_b_test.png"],
        lambda made, tmp: evaluate(made["run"], tmp, "--mask_key=b")),
    "eval.py --plots=True, a GMM head": (["run/eval_test.png", "run/eval_test_density.png"],
                                         lambda made, tmp: evaluate(made["gmm"], tmp)),
}


@pytest.mark.slow
@pytest.mark.parametrize("command, name", [(c, n) for c, (names, _) in COMMANDS.items() for n in names])
def test_a_link_at_a_name_a_command_writes_is_refused_or_replaced_never_written_through(made, tmp_path, command, name):
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "file").write_bytes(b'{"iter": 0}\n')  # a row log.jsonl would keep
    (outside / "folder" / "train.json").write_bytes(b'{"mine": 1}')
    (outside / "folder" / "val.ids.npy").write_bytes(b"mine")
    (outside / "empty").mkdir()
    name, empty, _ = name.partition(" (empty)")
    before = dataset_bytes(outside)
    args = [str(a) for a in COMMANDS[command][1](made, tmp_path)]
    link = str(tmp_path / name.format(pid=os.getpid())).rstrip("/")
    if os.path.isdir(link):
        shutil.rmtree(link)
    elif os.path.exists(link):
        os.remove(link)
    os.makedirs(os.path.dirname(link), exist_ok=True)
    os.symlink(outside / ("empty" if empty else "folder" if name.endswith("/") else "file"), link)
    r = run_in_process(args, None)
    assert dataset_bytes(outside) == before, r.stderr
    if r.returncode:
        assert os.path.basename(link) in one_line_error(r)
    elif os.path.islink(link):  # a folder of the user's, left alone with a note
        assert "left alone" in r.stdout and os.path.basename(link) in r.stdout
    # else the command replaced the link by its own file
