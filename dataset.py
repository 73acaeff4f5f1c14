"""
A dataset on disk: the <split>.txt files a prepare/ script writes (meta.json last), and what
tokenize_numbers.py makes of them: vocab.json and <encoding>/<split>.{ids,values,offsets}.npy with a
JSON summary each, which Split reads for train.py. The tokenizer is handed in: data flows one way.
"""

import argparse
import errno
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
from multiprocessing import Pool

import numpy as np
from tqdm import tqdm

from util import TextError, atomic_write_text, check_regular, open_new, take_lock, worker_signals

_SPLIT_FILE = re.compile(r"(train|val|test|test_ood\w*)\.txt")
# the largest |number| trained on: float32 squares (the loss, layer norm) overflow past ~1.8e19
MAX_VALUE = 1e18


def first_index(n, bad, chunk=1 << 22):
    """The first index below n where bad(a slice) holds, or None, a chunk at a time (memory-mapped
    arrays stay on disk)."""
    for start in range(0, n, chunk):
        hits = np.flatnonzero(bad(slice(start, start + chunk)))
        if len(hits):
            return start + int(hits[0])
    return None


def _decoded(f, where):
    for i, raw in enumerate(f, 1):
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as e:
            raise TextError(
                f"{where}:{i}: not UTF-8 text (byte {raw[e.start]:#04x} at column {e.start + 1})"
            ) from None
        # a byte order mark (a spreadsheet's UTF-8 export) marks the encoding: it is no text
        if i == 1 and line.startswith("\ufeff"):
            line = line[1:]
        if "\0" in line:
            raise TextError(
                f"{where}:{i}: a NUL byte at column {line.index(chr(0)) + 1}; expected text, not a"
                " binary file"
            )
        # a file whose lines end in \r alone would be read as one sample
        if "\r" in line:
            raise TextError(
                f"{where}:{i}: a carriage return inside the line (a file with \\r line ends?);"
                " write one sample per line, ended by \\n"
            )
        yield line


def read_lines(f, where):
    """The lines of a binary file object, decoded as UTF-8 (else a TextError naming where:line)."""
    return list(_decoded(f, where))


def read_samples(path, required=True):
    """(line number, line) of a file's lines that are not blank; required: none is an error."""
    with open(path, "rb") as f:
        lines = [(i, line) for i, line in enumerate(_decoded(f, path), 1) if line.strip()]
    if required and not lines:
        empty = "an empty file" if os.path.getsize(path) == 0 else "blank lines only"
        raise TextError(f"{path}: no sample ({empty}); expected one sample per line")
    return lines


def line_chunks(path, chunk, bar=None):
    """(first line index, lines) chunks of a text file, read lazily."""
    with open(path, "rb") as f:
        numbered = enumerate(_decoded(f, path))
        while part := list(itertools.islice(numbered, chunk)):
            for i, line in part:
                if not line.strip():
                    raise TextError(f"{path}:{i + 1}: empty line; expected one sample per line")
            lines = [line for _, line in part]
            if bar:
                bar.update(sum(map(len, lines)) + len(lines))
            yield part[0][0], lines


_NAME = re.compile(r"\w[\w.-]*")


def check_name(name, what):
    """A name from a file that becomes part of a path (a split, an encoding) must be plain: the
    path stays inside its folder."""
    if not (isinstance(name, str) and _NAME.fullmatch(name) and ".." not in name):
        raise TextError(
            f"{what} {name!r} is not a plain name (letters, digits, _ . - and no '..'); "
            "it names a file inside the dataset's folder"
        )


def require_dataset(data_dir):
    """meta.json's path: without it a folder is not a whole dataset (prepare/ writes it last)."""
    if not data_dir:
        raise FileNotFoundError("data_dir is empty; name the folder of a prepared dataset")
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(
            f"{data_dir} is not a directory; expected a dataset written by a prepare/ script"
        )
    meta = os.path.join(data_dir, "meta.json")
    if not os.path.exists(meta):
        raise FileNotFoundError(
            f"{meta} not found: {data_dir} is not a complete dataset (did a prepare/ run stop "
            "early? run it again); for text files of your own: python tokenize_numbers.py "
            f"{data_dir} --plain-text"
        )
    return meta


def dataset_splits(data_dir, plain_text=False):
    """A dataset's split names, train first, and the meta.json to write (None: it stands); text
    files of your own (plain_text) have the splits their files name."""
    meta_path, meta, new_meta = os.path.join(data_dir, "meta.json"), None, None
    if not (plain_text and os.path.isdir(data_dir) and not os.path.exists(meta_path)):
        meta = read_meta(data_dir)
        if not isinstance(meta["splits"], (list, dict)):
            raise TextError(f"{meta_path}: 'splits' is not a list of split names")
        splits = list(meta["splits"])
        for split in splits:
            check_name(split, f"{meta_path}: split")
        if not splits or len(set(splits)) < len(splits):
            raise TextError(f"{meta_path}: splits {splits!r}: none, or one named twice")
    if meta is None or meta.get("dataset") == "plain text":
        files = sorted(f for f in os.listdir(data_dir) if f.endswith(".txt"))
        splits = [f[:-4] for f in files if _SPLIT_FILE.fullmatch(f)]
        if others := [f for f in files if not _SPLIT_FILE.fullmatch(f)]:
            print(
                f"note: {', '.join(others)} not taken as splits (a split is train.txt, val.txt,"
                " test.txt or test_ood*.txt)"
            )
        if "train" not in splits:
            raise FileNotFoundError(
                f"{data_dir}: no train.txt; --plain-text expects <split>.txt files, train among"
                " them"
            )
        if meta is None or meta["splits"] != splits:
            command = " ".join(["python"] + sys.argv)
            new_meta = {"dataset": "plain text", "splits": splits, "command": command}
    # every split has a sample before anything is written
    for split in splits:
        path = os.path.join(data_dir, f"{split}.txt")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} not found, but {meta_path} lists split {split!r}")
        with open(path, encoding="utf-8", errors="replace") as f:
            if not f.readline().strip():
                raise TextError(
                    f"{path}:1: {'empty file' if os.path.getsize(path) == 0 else 'empty line'}; "
                    "expected one sample per line"
                )
    return sorted(splits, key=lambda s: (s != "train", s != "val")), new_meta


def read_json(path, keys=(), again=""):
    """A JSON object from a file; one cut short, not an object or without one of `keys` is a
    TextError naming the file."""
    check_regular(path)
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise TextError(f"{path}: not readable JSON ({e}){again}")
    if not isinstance(obj, dict):
        raise TextError(f"{path}: a JSON {type(obj).__name__}, expected an object{again}")
    if missing := [k for k in keys if k not in obj]:
        raise TextError(f"{path}: no {', '.join(map(repr, missing))} key{again}")
    return obj


def read_meta(data_dir):
    """A complete dataset's meta.json."""
    return read_json(require_dataset(data_dir), ("splits",), "; prepare the dataset again")


def load_text_vocab(data_dir):
    require_dataset(data_dir)
    path = os.path.join(data_dir, "vocab.json")
    again = f"; run: python tokenize_numbers.py {data_dir} --rebuild-vocab"
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found; run: python tokenize_numbers.py {data_dir}")
    tokens = read_json(path, ("text_tokens",), again)["text_tokens"]
    if not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
        raise TextError(f"{path}: text_tokens is not a list of strings{again}")
    # never written by the tokenizer: a token twice, an empty one, a control token's name
    named = [t for t in tokens if t[:1] == "[" and re.fullmatch(r"\[\w+\]", t)]
    if len(set(tokens)) < len(tokens) or "" in tokens or named:
        raise TextError(f"{path}: text_tokens holds a token twice, an empty one or a [NAME]{again}")
    return tokens


def fingerprint(data_dir, encoding):
    """Short digests of the data a model trains on, for checkpoints: "meta" of meta.json less the
    command, "arrays" of vocab.json and the ends of the train and val arrays (None: not written).
    A moved dataset is the same data; one prepared again is not."""
    meta = {k: v for k, v in read_meta(data_dir).items() if k != "command"}
    digests = {"meta": hashlib.sha1(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]}
    try:
        with open(os.path.join(data_dir, "vocab.json"), "rb") as f:
            arrays = hashlib.sha1(f.read())
        for split, kind in itertools.product(("train", "val"), ("ids", "values", "offsets")):
            with open(os.path.join(data_dir, encoding, f"{split}.{kind}.npy"), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                arrays.update(str(size).encode() + f.read(1 << 20))
                f.seek(max(0, size - (1 << 20)))
                arrays.update(f.read())
    except FileNotFoundError:
        return digests | {"arrays": None}
    return digests | {"arrays": arrays.hexdigest()[:16]}


def check_trained_on(checkpoint, path, data_dir, changed_data=False):
    """Refuse to score a checkpoint on its own dataset prepared again since, unless changed_data."""
    if not os.path.exists(os.path.join(data_dir, "meta.json")):
        raise FileNotFoundError(
            f"{data_dir}/meta.json not found: {path} was trained on {data_dir}, the folder it "
            "names; if the dataset has moved, name it with --data_dir=FOLDER"
        )
    recorded = checkpoint.get("data_fingerprint")
    if recorded is None:
        print(
            f"note: {path} does not record its data's fingerprint (an older train.py); {data_dir}"
            " is not checked"
        )
    elif fingerprint(data_dir, checkpoint["model_args"]["encoding"])["meta"] != recorded["meta"]:
        what = f"{data_dir} has been prepared again since {path} was trained on it"
        if not changed_data:
            raise ValueError(
                f"{what}: its scales and samples may differ; evaluate anyway with"
                " --changed_data=True, or train again"
            )
        print(f"warning: {what}; evaluating anyway (--changed_data=True)")


def vocab_digest(text_tokens):
    """A short digest of a text vocabulary, to catch arrays tokenized with another one."""
    return hashlib.sha1(json.dumps(text_tokens).encode()).hexdigest()[:12]


def write_split(
    folder, split, encodings, text_tokens, encode_lines, vocabs, workers=1, chunk=1000, staged=None
):
    """Encode <split>.txt with encode_lines, a chunk of lines at a time, into
    <encoding>/<split>.{ids,values,offsets}.npy and a JSON summary for each of `encodings`, in
    temporary files whose (temporary, final) names go to `staged` (None: renamed at once)."""
    path, tmp = os.path.join(folder, f"{split}.txt"), f"{os.getpid()}.tmp"
    bases = {enc: os.path.join(folder, enc, split) for enc in encodings}
    for base in bases.values():
        os.makedirs(os.path.dirname(base), exist_ok=True)
    raw = {(e, n): open_new(f"{b}.{n}.{tmp}") for e, b in bases.items() for n in ("ids", "values")}
    parts = {enc: [] for enc in encodings}
    pool = Pool(workers, worker_signals) if workers > 1 else None
    size = os.path.getsize(path)
    bar = tqdm(
        total=size, unit="B", unit_scale=True, desc=split, disable=size < 1 << 26, leave=False
    )
    jobs = ((lines, text_tokens, encodings, path, i) for i, lines in line_chunks(path, chunk, bar))
    # waves of `workers` chunks: the text is read as it is encoded, never all at once
    try:
        for wave in iter(lambda: list(itertools.islice(jobs, max(workers, 1))), []):
            for result in (pool.starmap if pool else itertools.starmap)(encode_lines, wave):
                for enc, (ids, values, lengths, numbers, counts) in result.items():
                    raw[enc, "ids"].write(ids.tobytes())
                    raw[enc, "values"].write(values.tobytes())
                    largest = np.abs(values[vocabs[enc].is_number(ids)]).max(initial=0)
                    parts[enc].append((lengths, numbers, counts, float(largest), ids.dtype))
    except BaseException:
        for f in raw.values():
            os.remove(f.name)
        raise
    finally:
        bar.close()
        for f in raw.values():
            f.close()
        if pool:
            pool.terminate()
    moves, summaries = [], []
    for enc, base in bases.items():
        lengths, numbers = (np.concatenate([p[i] for p in parts[enc]]) for i in (0, 1))
        for name, dtype in (("ids", parts[enc][0][4]), ("values", np.float32)):
            header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype))}
            header.update(fortran_order=False, shape=(int(lengths.sum()),))
            # an .npy header, then the bytes
            part = f"{base}.{name}.{tmp}"
            with open_new(part + ".npy") as out, open(part, "rb") as f:
                np.lib.format.write_array_header_1_0(out, header)
                shutil.copyfileobj(f, out, 1 << 24)
            os.remove(part)
        # sample i: [o[i], o[i+1])
        with open_new(f"{base}.offsets.{tmp}.npy") as out:
            np.save(out, np.r_[0, np.cumsum(lengths)].astype(np.int64))
        counts = {k: sum(p[2][k] for p in parts[enc]) for k in ("clipped", "zero")}
        s = dict(split=split, encoding=enc, samples=len(lengths), tokens=int(lengths.sum()))
        s.update(tokens_per_sample_mean=round(float(lengths.mean()), 2))
        s.update(tokens_per_sample_max=int(lengths.max()))
        s.update(numbers_per_sample_mean=round(float(numbers.mean()), 2))
        s.update(numbers_per_sample_max=int(numbers.max()))
        s.update(largest_abs=max(p[3] for p in parts[enc]), clipped=counts["clipped"])
        s.update(flushed_to_zero=counts["zero"], vocab_size=len(vocabs[enc]))
        s.update(vocab_digest=vocab_digest(text_tokens), text_bytes=size)
        summaries.append(s)
        atomic_write_text(f"{base}.{tmp}.json", json.dumps(s, indent=1))
        for name in ("ids", "values", "offsets"):
            moves.append((f"{base}.{name}.{tmp}.npy", f"{base}.{name}.npy"))
        moves.append((f"{base}.{tmp}.json", f"{base}.json"))
        if counts["clipped"]:
            clipped = counts["clipped"]
            print(f"warning: {split}: {clipped} numbers beyond ±9.99e7 were clipped ({enc})")
        if counts["zero"]:
            print(
                f"note: {split}: {counts['zero']} numbers below"
                f" {'1.4e-45 (float32)' if enc == 'xval' else '1e-8'} in magnitude became 0 ({enc})"
            )
    for tmp_name, final in moves if staged is None else ():
        os.replace(tmp_name, final)
    (staged if staged is not None else []).extend(moves)
    return summaries


class Split:
    """A tokenized split, memory-mapped: sample i is ids[offsets[i]:offsets[i+1]] (and values)."""

    def __init__(self, data_dir, split, encoding, vocab=None):
        check_name(split, "split")
        check_name(encoding, "encoding")
        base = os.path.join(data_dir, encoding, split)
        self.base, self.split = base, split
        command = f"python tokenize_numbers.py {data_dir} --encoding {encoding}"
        if not os.path.exists(base + ".ids.npy"):
            raise FileNotFoundError(f"{base}.ids.npy not found; run: {command}")
        again = f"run again: {command}"
        keys = ("split", "encoding", "samples", "vocab_digest")
        summary = read_json(base + ".json", keys, f"; {again}")
        try:
            for name in ("ids", "values", "offsets"):
                check_regular(f"{base}.{name}.npy")
            self.ids = np.load(base + ".ids.npy", mmap_mode="r")
            self.values = np.load(base + ".values.npy", mmap_mode="r")
            self.offsets = np.load(base + ".offsets.npy")
        # missing, truncated or not an array
        except (OSError, ValueError, EOFError) as e:
            raise ValueError(f"{base}: unreadable arrays ({type(e).__name__}: {e}); {again}")
        if summary["vocab_digest"] != vocab_digest(load_text_vocab(data_dir)):
            raise ValueError(f"{base}.ids.npy was tokenized with another vocab.json; {again}")
        if (summary["split"], summary["encoding"]) != (split, encoding):
            raise ValueError(
                f"{base}.json describes split {summary['split']!r} of {summary['encoding']!r}, not"
                f" {split!r} of {encoding!r}; {again}"
            )
        # the four files are written together: offsets not spanning the others' are another run's
        o, samples = self.offsets, summary["samples"]
        spans = o.ndim == 1 and o.dtype.kind in "iu" and len(o) > 1 and o[0] == 0
        spans = spans and bool(np.all(o[1:] > o[:-1]))
        if not (spans and samples == len(o) - 1 and o[-1] == len(self.ids) == len(self.values)):
            raise ValueError(
                f"{base}.offsets.npy ({len(o) - 1} samples, {int(o[-1]) if len(o) else 0} tokens) "
                f"does not match {base}.json ({samples} samples) and .ids.npy ({len(self.ids)} "
                f"tokens): the files come from different runs; {again}"
            )
        # an edited text would train on its old arrays
        text = os.path.join(data_dir, f"{split}.txt")
        size = os.path.getsize(text) if os.path.exists(text) else None
        if size is not None and summary.get("text_bytes", size) != size:
            raise ValueError(
                f"{text} has changed since it was tokenized ({size} bytes, {summary['text_bytes']}"
                f" then); {again}"
            )
        self.lengths = np.diff(self.offsets)
        vocab_size = len(vocab) if vocab else summary.get("vocab_size")
        self.check_arrays(vocab_size, vocab and vocab.num_id, again)

    def at(self, position):
        """The sample holding token `position`, and its line of the text."""
        i = int(np.searchsorted(self.offsets, position, side="right")) - 1
        return f"sample {i} (line {i + 1} of {self.split}.txt)"

    def check_arrays(self, vocab_size, num_id, again):
        """Refuse token ids outside the vocabulary and numbers not finite or beyond ±MAX_VALUE now,
        not as a crash or a NaN loss hours in."""
        ids, values, where = self.ids, self.values, self.base
        if ids.ndim != 1 or ids.dtype.kind not in "iu" or values.ndim != 1 or values.dtype != "f4":
            raise ValueError(
                f"{where}.ids.npy/.values.npy hold {ids.dtype} {ids.shape} and {values.dtype} "
                f"{values.shape}, expected integer ids and float32 values, one-dimensional; {again}"
            )
        if not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"{where}.json has no vocab_size; {again}")
        bad = first_index(len(ids), lambda s: (ids[s] < 0) | (ids[s] >= vocab_size))
        if bad is not None:
            raise ValueError(
                f"{where}.ids.npy: {self.at(bad)} holds token id {int(ids[bad])}, outside the"
                f" vocabulary of {vocab_size}; {again}"
            )
        bad = first_index(len(values), lambda s: ~(np.abs(values[s]) <= MAX_VALUE))
        if bad is not None:
            x = float(values[bad])
            what = f"{x:.4g}, beyond ±{MAX_VALUE:g}, which float32 cannot square; scale the"
            what = what + " numbers to order 1" if math.isfinite(x) else "a non-finite number"
            raise ValueError(
                f"{where}.values.npy: {self.at(bad)} holds {what}; remove or rescale it and"
                " tokenize again"
            )
        # xVal multiplies every embedding by its value: 1.0 but at [NUM]
        if num_id is not None:
            bad = first_index(len(ids), lambda s: (ids[s] != num_id) & (values[s] != 1))
            if bad is not None:
                raise ValueError(
                    f"{where}.values.npy: {self.at(bad)} holds {float(values[bad]):g} at a token"
                    f" that is no number (1.0 expected); {again}"
                )

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        a, b = self.offsets[i], self.offsets[i + 1]
        return np.asarray(self.ids[a:b], np.int64), np.asarray(self.values[a:b], np.float32)


def temporaries(data_dir, pid):
    """The temporary files of process pid in a dataset's folders (their names hold the pid)."""
    if not os.path.isdir(data_dir):
        return []
    folders = [e.path for e in os.scandir(data_dir) if e.is_dir()]
    return [os.path.join(d, f) for d in folders for f in os.listdir(d) if f".{pid}.tmp" in f]


def lock(data_dir):
    """Take <data_dir>/tokenize.lock: two runs never write one dataset at once; a killed run's lock
    is replaced, its temporary files removed."""

    def clean(pid):
        stale = temporaries(data_dir, pid)
        print(
            f"note: removing {path} of process {pid}, which ended without releasing it, and"
            f" {len(stale)} temporary files it left"
        )
        for f in stale:
            os.remove(f)

    path = os.path.join(data_dir, "tokenize.lock")
    if (pid := take_lock(path, clean)) is not None:
        raise TextError(
            f"{path}: another tokenize_numbers.py run (pid {pid}) is writing {data_dir}; "
            "wait for it to end (or delete the lock if that process is not tokenizing)"
        )
    return path


def write_arrays(args, encodings, encode_lines, build_text_vocab, make_vocab):
    """Every split of args.data_dir in each of `encodings`, renamed into place once all are encoded;
    vocab.json from train.txt if there is none (or --rebuild-vocab). A failed or stopped run
    (SIGTERM too) leaves the dataset as it was. Returns the summaries."""
    data_dir = args.data_dir
    new_dirs = [os.path.join(data_dir, enc) for enc in encodings]
    new_dirs = [d for d in new_dirs if not os.path.exists(d)]
    vocab_path, held, staged, summaries = os.path.join(data_dir, "vocab.json"), None, [], []
    # a SIGTERM runs the clean-up below
    on_term = None
    if threading.current_thread() is threading.main_thread():
        on_term = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        splits, meta = dataset_splits(data_dir, args.plain_text)
        held = lock(data_dir)
        if os.path.exists(vocab_path) and not args.rebuild_vocab:
            text_tokens, vocab = read_json(vocab_path, ("text_tokens",))["text_tokens"], None
        # from the training split, a chunk at a time: it may not fit in memory
        else:
            train = os.path.join(data_dir, "train.txt")
            chunks = line_chunks(train, 10_000)
            text_tokens = sorted(set().union(*(build_text_vocab(c, train, i) for i, c in chunks)))
            vocab = {"built_from": "train.txt", "text_tokens": text_tokens}
        if "val" not in splits and (meta or {}).get("dataset") == "plain text":
            raise FileNotFoundError(
                f"{data_dir}: no val.txt; train.py validates on it: put some samples (not those of "
                "train.txt) in val.txt, one per line"
            )
        print(f"{data_dir}: {len(text_tokens)} text tokens in vocab.json")
        vocabs = {enc: make_vocab(text_tokens, enc) for enc in encodings}
        # a prepared dataset's meta.json counts its samples: a text cut short is not tokenized
        declared = read_meta(data_dir)["splits"] if meta is None else []
        for split in splits:
            job = (data_dir, split, encodings, text_tokens, encode_lines, vocabs, args.workers)
            for s in write_split(*job, staged=staged):
                if isinstance(declared, dict) and declared.get(split) not in (None, s["samples"]):
                    raise TextError(
                        f"{data_dir}/{split}.txt has {s['samples']:,} samples, its meta.json"
                        f" {declared[split]:,}: a copy cut short? copy or prepare it again"
                    )
                summaries.append(s)
                print(
                    f"{s['encoding']:>6} {split:>18}: {s['samples']} samples, tokens/sample mean"
                    f" {s['tokens_per_sample_mean']} max {s['tokens_per_sample_max']},"
                    f" numbers/sample {s['numbers_per_sample_mean']}, largest |x|"
                    f" {s['largest_abs']:.4g}, vocab {s['vocab_size']}"
                )
        for tmp, final in staged:
            os.replace(tmp, final)
        for path, content in ((vocab_path, vocab), (os.path.join(data_dir, "meta.json"), meta)):
            if content:
                atomic_write_text(path, json.dumps(content, indent=1))
    except OSError as e:
        # ours: a split or folder that is not there
        if isinstance(e, FileNotFoundError) and not e.filename:
            raise
        what = f"{e.filename or data_dir}: {e.strerror or e}; nothing was changed"
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            free = shutil.disk_usage(data_dir).free / 2**20
            what = f"the disk is full ({free:,.0f} MiB free there); free some and run again (no"
            what += " partly written array is kept)"
        raise OSError(e.errno, f"writing the arrays of {data_dir} failed: {what}") from None
    finally:
        # a run that failed leaves nothing behind
        for f in temporaries(data_dir, os.getpid()):
            os.remove(f)
        for new_dir in new_dirs:
            if os.path.isdir(new_dir) and not os.listdir(new_dir):
                os.rmdir(new_dir)
        if held:
            os.remove(held)
        if on_term is not None:
            signal.signal(signal.SIGTERM, on_term)
    return summaries


def command(argv, encodings_known, encode_lines, build_text_vocab, make_vocab):
    """tokenize_numbers.py's command line: write a dataset's arrays, or print its statistics."""
    known = ", ".join(encodings_known)
    p = argparse.ArgumentParser(
        description="Tokenize a prepared dataset into arrays, or print its token statistics."
    )
    folder = "a folder written by a prepare/ script (train.txt, val.txt, ...)"
    p.add_argument("data_dir", help=folder)
    p.add_argument("--encoding", default="xval", help=f"one of {known}, or 'all'")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    stats = "print tokens/sample per encoding (tokenizes every encoding)"
    p.add_argument("--stats", action="store_true", help=stats)
    p.add_argument("--rebuild-vocab", action="store_true", help="rebuild vocab.json from train.txt")
    plain = (
        "DIR holds <split>.txt files of your own, no meta.json: write one naming them and tokenize"
    )
    p.add_argument("--plain-text", action="store_true", help=plain)
    args, t0 = p.parse_args(argv), time.time()
    encodings = list(encodings_known) if args.encoding == "all" or args.stats else [args.encoding]
    for e in encodings:
        if e not in encodings_known:
            p.error(f"unknown encoding {e!r}; expected one of {known} or 'all'")
    try:
        table = write_arrays(args, encodings, encode_lines, build_text_vocab, make_vocab)
    except (TextError, OSError) as e:
        sys.exit(f"error: {e.strerror if isinstance(e, OSError) and e.strerror else e}")
    # Ctrl-C: one line, and the exit code shells expect
    except KeyboardInterrupt:
        print(f"interrupted: {args.data_dir} is as it was before this run", file=sys.stderr)
        sys.exit(130)
    if args.stats:
        print("\n| encoding | tokens/sample mean | max | numbers/sample mean | max |")
        print("|---|---|---|---|---|")
        for s in (s for s in table if s["split"] == "train"):
            print(
                f"| {s['encoding']} | {s['tokens_per_sample_mean']} | {s['tokens_per_sample_max']}"
                f" | {s['numbers_per_sample_mean']} | {s['numbers_per_sample_max']} |"
            )
    print(f"done in {time.time() - t0:.1f} s")
