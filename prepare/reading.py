"""Your files as a Table for prepare/text.py: a Column per key (on disk), a row per CSV row (read by
pyarrow's streaming reader) or JSON object."""

import codecs
import csv
import functools
import gzip
import io
import json
import os
import re
import shlex
import tempfile
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
from common import fail

from dataset import shown
from tokenize_line import NUMBER

# a missing value, in any case
MISSING = ("", "NA", "N/A", "NaN", "null", "None", "?", "-", "--", ".", "#N/A")
_MISSING = {m.lower() for m in MISSING}
# 33,231 (a thousands separator) or 12,5 (a decimal comma)
SEPARATED = re.compile(r"[+-]?\d+(?:,\d+)+(?:\.\d*)?")
# 01234: a code (a ZIP code), not a quantity
CODE = re.compile(r"[+-]?0\d+")
DELIMITERS = {",": "a comma", ";": "a semicolon", "\t": "a tab", "|": "a bar"}
# the start of a JSON file: an object, or an array of objects
JSON = re.compile(r"\s*(\{|\[\s*[{\]])")
NUM, GAP, NESTED = -1, -2, -3
# bytes of CSV read at a time
BLOCK = 1 << 20


def rewrite(value, f):
    if isinstance(value, dict):
        return {k: rewrite(v, f) for k, v in value.items()}
    return [rewrite(v, f) for v in value] if isinstance(value, list) else f(value)


def leaves(value):
    if isinstance(value, dict):
        value = list(value.values())
    return [x for v in value for x in leaves(v)] if isinstance(value, list) else [value]


def numbers(value):
    return [x for x in leaves(value) if isinstance(x, Decimal)]


def plain_number(cell):
    """The number in "$12.50", "45%", "1_000" or "0x1F", else None."""
    if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", cell):
        return str(int(cell, 16))
    bare = re.sub(r"^([+-]?)\s*[$€£¥]\s*|\s*[%‰]$", r"\1", cell)
    if re.fullmatch(r"[+-]?(?:\d+(?:_\d+)+|\d{1,3}(?:,\d{3})+)(?:\.\d*)?", bare):
        bare = re.sub("[_,]", "", bare)
    return bare if bare != cell and NUMBER.fullmatch(bare) else None


class Column:
    """One key's value in every row, on disk: `code` (NUM, GAP, NESTED or an index in `texts`),
    `x` (a number); `q`: the place 10^q of its numbers' finest digit."""

    def __init__(self, name, files, as_text, decimal_comma):
        self.name, self.as_text, self.decimal_comma = name, as_text, decimal_comma
        # the flag that reads it as text, as a shell takes it
        self.flag = f"--text {shlex.quote(name)}"
        self.index, self.nested, self.n = {}, {}, 0
        self.paths = [f"{files}.code", f"{files}.x"]
        # the first row holding a number, a text, a leading zero
        self.first, self.clash = {}, None
        self.q = 999

    def text_code(self, value):
        return self.index.setdefault(value, len(self.index))

    def add(self, distinct, codes, row0, where, parse):
        """Rows row0... holding distinct[codes], each parsed once (-> code, Decimal)."""
        self.pad(row0)
        first_row = np.unique(codes, return_index=True)[1]
        code, x = np.empty(len(distinct), np.int32), np.full(len(distinct), np.nan)
        floats = {}
        for i, v in enumerate(distinct):
            at = lambda: where(row0 + first_row[i])
            code[i], d = parse(v, at)
            if d is None:
                continue
            x[i] = self.check_float(d, at)
            # two different numbers that are one float64 (20-digit IDs)
            seen = floats.setdefault(x[i], (d, i))
            if self.clash is None and seen[0] != d:
                self.clash = (d, at(), seen[0], where(row0 + first_row[seen[1]]))
            if CODE.fullmatch(str(v).strip()):
                self.first.setdefault("code", (row0 + first_row[i], v))
        rows = code[codes]
        for kind, mask in (("number", rows == NUM), ("text", rows >= 0)):
            if mask.any() and kind not in self.first:
                i = int(np.argmax(mask))
                self.first[kind] = (row0 + i, distinct[codes[i]])
        self.write(rows, x[codes])

    def pad(self, n):
        self.write(np.full(n - self.n, GAP, np.int32), np.full(n - self.n, np.nan))

    def write(self, code, x):
        # per block: 1,000 columns hold no file open
        for path, values in zip(self.paths, (code, x)):
            with open(path, "ab") as f:
                values.tofile(f)
        self.n += len(code)

    def check_float(self, d, at):
        """d as a float64 (refused if one cannot hold its square); q lowered to its finest digit."""
        x = float(d)
        self.q = min(self.q, d.as_tuple().exponent)
        if d and not 1e-150 <= abs(x) < 1e150:
            fail(
                f"{at()}: {self.noun} {self.name!r}: {d} is beyond what a float64 holds, squared;"
                " write the key in other units"
            )
        return x

    def finish(self, where):
        """Refused: a CSV column of numbers and text."""
        if "number" not in self.first:
            return

        def at(kind):
            row, value = self.first[kind]
            return f"{where(row)}: column {self.name!r}: {shown(value)}"

        hint = f"{self.flag} reads it as text"
        if "code" in self.first:
            fail(f"{at('code')} has a leading zero, a code rather than a quantity; {hint}")
        if "text" in self.first and (self.code == NUM).sum() * 2 >= (self.code != GAP).sum():
            fix = f"write a number or a missing value ({', '.join(MISSING[1:])})"
            fail(f"{at('text')} is not a number, but most of the column's values are; {fix}")
        if "text" in self.first:
            fail(f"{at('number')} is a number, but most of the column's values are text; {hint}")

    def parse_cell(self, cell, at):
        refuse = lambda fact: fail(f"{at()}: column {self.name!r}: {fact}, or {self.flag}")
        c = cell.strip()
        if c.lower() in _MISSING:
            return GAP, None
        if self.as_text:
            return self.text_code(c), None
        if self.decimal_comma:
            if "." in c and NUMBER.fullmatch(c):
                refuse(f"{cell!r} holds a point, but --decimal-comma says numbers are written 12,5")
            c = re.sub(r"^([+-]?\d*),(\d+(?:[eE][+-]?\d+)?)$", r"\1.\2", c)
        if SEPARATED.fullmatch(c):
            fix = c.replace(",", "")
            # 1,013.2: a thousands separator alone
            if "." not in c:
                fix += f" or {c.replace(',', '.')}, or --decimal-comma"
            refuse(f"{c!r} holds a thousands separator or a decimal comma; write {fix}")
        if plain := plain_number(c):
            how = "a currency or percent sign, digit groups or in hex"
            refuse(f"{c!r} is a number written with {how}; write {plain}")
        if not NUMBER.fullmatch(c):
            return self.text_code(c), None
        return NUM, Decimal(c)

    def parse_json(self, value, at):
        if value is None:
            return GAP, None
        if isinstance(value, Decimal):
            return NUM, value
        for x in leaves(value) if not self.as_text else []:
            if isinstance(x, str) and (NUMBER.fullmatch(x.strip()) or plain_number(x)):
                number = plain_number(x) or x.strip()
                fail(
                    f"{at()}: key {self.name!r}: {x!r} is a number written as a string; write"
                    f" it as a JSON number ({number}), or {self.flag}"
                )
        if isinstance(value, (str, bool)):
            return self.text_code(value), None
        for d in numbers(value):
            self.check_float(d, at)
        return NESTED, None

    @property
    def code(self):
        return np.memmap(self.paths[0], np.int32, "r", shape=(self.n,))

    @property
    def x(self):
        return np.memmap(self.paths[1], float, "r", shape=(self.n,))

    @functools.cached_property
    def words(self):
        return np.array([json.dumps(t, ensure_ascii=False) for t in self.texts], object)


class Table:
    """The rows of the files read, a Column per key; where(row) names a row's file and line."""

    def __init__(self):
        self.paths, self.arrays, self.starts = [], [], [0]
        self.cols, self.line = {}, np.empty(0, np.int32)
        self.scratch = tempfile.TemporaryDirectory(prefix=f"prepare-text-{os.getpid()}-")

    @property
    def n(self):
        return self.starts[-1]

    def where(self, row):
        return self.places([row])[0]

    def places(self, rows):
        """Each row's file and line (and record, in a JSON array)."""
        files = np.searchsorted(self.starts, rows, "right") - 1
        lines, out = self.line[rows].tolist(), []
        for f, row, line in zip(files.tolist(), np.asarray(rows).tolist(), lines):
            record = f" (record {row - self.starts[f] + 1})" if self.arrays[f] else ""
            out.append(f"{self.paths[f]}:{line}{record}")
        return out

    def start(self, path, array=False):
        self.paths.append(path)
        self.arrays.append(array)
        self.starts.append(self.n)

    def column(self, name, noun, args):
        if name not in self.cols:
            files = os.path.join(self.scratch.name, str(len(self.cols)))
            self.cols[name] = Column(name, files, name in args.text, args.decimal_comma)
        self.cols[name].noun = noun
        return self.cols[name]


def opened(path):
    """A file's bytes, gzip undone; refused unless text."""
    f = open(path, "rb")
    if f.peek(2)[:2] == b"\x1f\x8b":
        f = gzip.GzipFile(fileobj=f)
    try:
        head = f.peek(4)[:4]
    except (OSError, EOFError) as e:
        fail(f"{path}: a damaged gzip file ({e})")
    if head.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):
        fail(f'{path}: a zip archive or an Excel workbook (.xlsx), not text; save as "CSV UTF-8"')
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        fail(f"{path}: UTF-16 text (Excel's Unicode Text); save the file as UTF-8")
    return f


def scan(path):
    """(the first 64 KiB of text, whether lines end in \\r alone, the first empty line or 0);
    refused: a byte not UTF-8, a lone \\r."""
    f = opened(path)
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    head = ""
    cr_only = False
    blank = 0
    lines = 1
    while block := f.read(1 << 22):
        try:
            head += decoder.decode(block)[: (1 << 16) - len(head)]
        except UnicodeDecodeError as e:
            line = lines + block.count(b"\n", 0, e.start)
            fail(f"{path}:{line}: not UTF-8; save the file as UTF-8")
        cr_only = "\r" in head and "\n" not in head
        ends = b"\r" if cr_only else b"\n"
        lone = None if cr_only else re.search(rb"\r(?!\n)", block)
        if lone and (lone.end() < len(block) or not f.peek(1).startswith(b"\n")):
            at = lines + block.count(b"\n", 0, lone.start())
            column = lone.start() - block.rfind(b"\n", 0, lone.start())
            fail(f"{path}:{at}: a lone carriage return (\\r) at column {column}; remove it")
        empty = re.search(ends + rb"\r?" + ends, block)
        if empty and not blank:
            blank = lines + block.count(ends, 0, empty.start()) + 1
        lines += block.count(ends)
    return head, cr_only, blank


def csv_head(path, head, delimiter):
    """(header, first row, delimiter: --delimiter or the header's most frequent of , ; tab |);
    comment lines refused."""
    header_line = re.split("\r?\n|\r", head)[0]
    comments = len(re.match(r"(?:#.*\n)*", head.replace("\r", "\n") + "\n")[0].split("\n")) - 1
    if comments > 1 or comments and not re.search(r"[,;\t|]", header_line):
        fail(
            f"{path}:1: {header_line[:40]!r} is a comment, not a header ({comments} line(s) start"
            " with #); expected the column names on line 1: delete the lines above them"
        )
    if not delimiter:
        delimiter = max(DELIMITERS, key=header_line.count)
        if not header_line.count(delimiter) and re.search(r"\S\s+\S", header_line):
            fail(f"{path}:1: the header holds no , ; tab or | but spaces; name it with --delimiter")
        if delimiter != ",":
            print(f"note: {path}: columns separated by {DELIMITERS[delimiter]}")
    reader = csv.reader(io.StringIO(head, newline=""), delimiter=delimiter)
    header = [name.strip() for name in next(reader)]
    return header, next(reader, []), delimiter


def ragged(path, header, delimiter, width, line, cells, last_empty):
    """Fail: the row at line holds `cells` cells (the last one empty or not), not `width`."""
    # rows end in a delimiter the header lacks: the first row is named
    if width != len(header):
        line, cells, last_empty = 2, width, True
    hint = " (another delimiter? --delimiter)" if delimiter == "," else ""
    if cells == len(header) + 1 and last_empty:
        hint = " (the last one empty: a delimiter at the end of some rows but not all? remove it)"
    names = f"the header ({path}:1) names {len(header)} columns"
    fail(f"{path}:{line}: {cells} cells, but {names}{hint}")


def line_of(path, delimiter, width, start):
    """The line of the first row of another width from line start (a row's first) on, read by the
    csv module (start if none); refused: a row it cannot read (an unterminated quote)."""
    # cells of a block: more than the csv module's 128 KiB
    csv.field_size_limit(4 * BLOCK)
    with io.TextIOWrapper(opened(path), "utf-8-sig", newline="") as f:
        for _ in range(start - 1):
            f.readline()
        reader = csv.reader(f, delimiter=delimiter, strict=True)
        at = start
        try:
            for row in reader:
                if row and len(row) != width:
                    return at
                at = start + reader.line_num
        except csv.Error as e:
            fail(f"{path}:{at}: {e} (an unterminated quote?)")
    return start


def read_csv(table, path, args, head, cr_only, blank):
    """A CSV file's rows into table (scanned: head, line ends, first empty line)."""
    if cr_only:
        print(f"note: {path}: its lines end in a carriage return alone (\\r): read as line ends")
    header, row, delimiter = csv_head(path, head, args.delimiter)
    names = header[:-1] if len(header) > 1 and not header[-1] else header
    trailing = len(row) == len(names) + 1 and not row[-1].strip()
    wanted = csv_columns(path, names if trailing else header, args.columns)
    table.start(path)
    columns = [table.column(header[j], "column", args) for j in wanted]
    lines = []
    multi = []
    for cells, first in csv_batches(path, header, delimiter, trailing, cr_only, blank):
        row0 = table.n
        lines.append(first[:-1].astype(np.int32))
        table.starts[-1] += len(first) - 1
        tall = np.diff(first) > 1
        multi += zip(first[:-1][tall], first[1:][tall] - 1)
        where = lambda r: f"{path}:{first[r - row0]}"
        for j, column in zip(wanted, columns):
            encoded = pc.dictionary_encode(cells[j])
            values = encoded.dictionary.to_pylist()
            column.add(values, encoded.indices.to_numpy(), row0, where, column.parse_cell)
    if table.n == table.starts[-2]:
        fail(f"{path}: a header and no rows")
    if trailing:
        print(
            f"note: {path}: every row ends in {DELIMITERS.get(delimiter, repr(delimiter))}, an"
            " empty last column with no name: left out"
        )
    if multi:
        print(
            f"note: {path}:{multi[0][0]}-{multi[0][1]}: a quoted cell holds a line break"
            f" ({len(multi)} such row(s)); if a quote is unterminated, close it"
        )
    table.line = np.concatenate([table.line, *lines])
    for column in columns:
        column.finish(table.where)


def csv_batches(path, header, delimiter, trailing, cr_only, blank):
    """Blocks of rows: their columns, and the line each row starts on then the line after;
    refused: a row of another width or over 1 MiB, an empty line but at the end, an unterminated
    quote."""
    width = len(header) + (trailing and bool(header[-1]))
    names = [f"c{j}" for j in range(width)]
    invalid = []
    with opened(path) as f:
        source = pa.input_stream(path, "gzip" if isinstance(f, gzip.GzipFile) else None)
    line = 2
    ended = False
    cells = []
    try:
        # read by pyarrow itself: only a ragged row calls back into Python, from its threads
        for batch in pa_csv.open_csv(
            source,
            pa_csv.ReadOptions(column_names=names, skip_rows=1, block_size=BLOCK),
            pa_csv.ParseOptions(
                delimiter=delimiter,
                newlines_in_values=True,
                ignore_empty_lines=False,
                invalid_row_handler=lambda row: invalid.append(row) or "error",
            ),
            pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string())),
        ):
            cells = batch.columns
            if cr_only:
                cells = [pc.replace_substring(c, "\r", "\n") for c in cells]
            breaks = sum(pc.count_substring(c, "\n").to_numpy(zero_copy_only=False) for c in cells)
            first = line + np.concatenate([[0], np.cumsum(1 + breaks)])
            line = first[-1]
            size = sum(pc.binary_length(c).to_numpy(zero_copy_only=False) for c in cells)
            if (size + width - 1 > BLOCK).any():
                at = first[np.argmax(size + width - 1 > BLOCK)]
                fail(f"{path}:{at}: a row of more than {BLOCK >> 20} MiB, over the limit; split it")
            cut = np.flatnonzero(first[:-1] == blank)[:1] if not ended else [0]
            if len(cut):
                rest = [c.slice(cut[0]) for c in cells]
                if not all(pc.all(pc.equal(c, "")).as_py() in (True, None) for c in rest):
                    fail(f"{path}:{blank}: empty line; expected one row per record")
                ended, cells, first = True, [c.slice(0, cut[0]) for c in cells], first[: cut[0] + 1]
            if trailing:
                filled = pc.not_equal(pc.utf8_trim_whitespace(cells[-1]), "")
                if pc.any(filled).as_py():
                    at = first[pc.index(filled, True).as_py()]
                    ragged(path, header, delimiter, width, at, width, False)
            if len(first) > 1:
                yield cells, first
    except pa.ArrowInvalid as e:
        if "straddl" in str(e):
            fail(f"{path}:{line}: a row of more than {BLOCK >> 20} MiB, over the limit; split it")
        if not invalid:
            fail(f"{path}: {e}")
        row = invalid[0]
        at = line_of(path, delimiter, width, line)
        last_empty = row.text.rstrip().endswith(delimiter)
        ragged(path, header, delimiter, width, at, row.actual_columns, last_empty)
    # an unterminated quote takes the rest of the file into its cell
    if cells and len(cells[0]) and any(pc.ends_with(c[-1:], "\n")[0].as_py() for c in cells):
        fail(f"{path}:{first[-2]}: unexpected end of data (an unterminated quote?)")


def csv_columns(path, header, wanted):
    """The indices of the columns to read: named, and in --columns; a header of numbers refused."""
    keep = []
    for j, name in enumerate(header):
        if not name and j == 0 and "" not in header[1:]:
            print(f"note: {path}: column 1 has no name (row names, as R writes them): left out")
            continue
        if "\n" in name or "\r" in name:
            fail(f"{path}:1: column {j + 1} of the header holds a line break; write it on one line")
        if not name or name in header[:j]:
            what = f"{name!r} again" if name else "empty"
            fail(f"{path}:1: column {j + 1} of the header is {what}")
        if not wanted or name in wanted:
            keep.append(j)
    for name in wanted or []:
        if name not in header:
            fail(f"{path}:1: {wanted[name]} names {name!r}, not a column here: {', '.join(header)}")
    numeric = [header[j] for j in keep if NUMBER.fullmatch(header[j])]
    if numeric and len(numeric) * 2 >= len(keep):
        fail(
            f"{path}:1: the header holds numbers ({', '.join(numeric[:3])}): a file without a"
            " header row? add a line of names"
        )
    return keep


def _constant(name):
    if name != "NaN":
        raise ValueError(f"{name} is not a finite number")


def _object(pairs):
    record = dict(pairs)
    if len(record) < len(pairs):
        keys = [k for k, _ in pairs]
        repeated = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"key {repeated!r} is repeated in one object")
    return record


def json_records(path, args):
    """(a JSON file's records, the line of each, whether an array); missing values None."""
    text = opened(path).read().decode("utf-8-sig").replace("\r\n", "\n").rstrip("\n")
    decoder = json.JSONDecoder(
        parse_float=Decimal, parse_int=Decimal, parse_constant=_constant, object_pairs_hook=_object
    )
    space = re.compile(r"\s*")
    line_at = lambda i: f"{path}:{text.count(chr(10), 0, i) + 1}"
    to_none = lambda x: None if isinstance(x, str) and x.strip().lower() in _MISSING else x
    records = []
    lines = []
    i = space.match(text).end()
    line = 1
    at = 0
    array = text.startswith("[", i)
    i = space.match(text, i + array).end()
    while i < len(text) and not (array and text[i] == "]"):
        line, at = line + text.count("\n", at, i), i
        where = f"{path}:{line}" + (f" (record {len(records) + 1})" if array else "")
        try:
            record, i = decoder.raw_decode(text, i)
            if not isinstance(record, dict) or not record:
                fail(f"{where}: expected a JSON object, found {text[at:i][:40]!r}")
            keep = args.columns or record
            records.append({k: rewrite(v, to_none) for k, v in record.items() if k in keep})
        except json.JSONDecodeError as e:
            fail(f"{path}:{e.lineno}: not a JSON record ({e.msg} at column {e.colno})")
        except ValueError as e:
            fail(f"{where}: {e}")
        except RecursionError:
            fail(f"{where}: a record nested too deep for Python's JSON reader; flatten it")
        lines.append(line)
        i = space.match(text, i).end()
        if array and text.startswith(",", i):
            i = space.match(text, i + 1).end()
        elif array and i < len(text) and text[i] != "]":
            fail(f"{line_at(i)}: expected , or ] after a record of the JSON array")
    if array and i == len(text):
        fail(f"{line_at(i)}: the file ends inside the JSON array")
    if array and text[i:].strip() != "]":
        fail(f"{line_at(i)}: expected nothing after the JSON array's ]")
    return records, lines, array


def read_json(table, path, args):
    records, lines, array = json_records(path, args)
    if not records:
        fail(f"{path}: an empty JSON array; expected a record per object")
    values = list(records[0].values()) if len(records) == 1 else []
    by_column = all(isinstance(v, (dict, list)) and len(v) == len(values[0]) > 1 for v in values)
    if len(values) > 1 and by_column:
        fail(
            f"{path}: one JSON object of columns of {len(values[0])} values; expected a record"
            ' per row (to_json(orient="records", lines=True))'
        )
    table.start(path, array)
    row0 = table.n
    table.line = np.concatenate([table.line, lines])
    table.starts[-1] += len(records)
    for key in dict.fromkeys(k for r in records for k in r):
        column = table.column(key, "key", args)
        values = [r.get(key) for r in records]
        if column.as_text:
            values = [rewrite(v, lambda x: str(x) if isinstance(x, Decimal) else x) for v in values]
        # a list, object or boolean (True == 1) distinct from every other value
        same = [(i,) if isinstance(v, (list, dict, bool)) else v for i, v in enumerate(values)]
        position = {}
        codes = np.array([position.setdefault(v, len(position)) for v in same])
        distinct = [values[k[0]] if isinstance(k, tuple) else k for k in position]
        column.add(distinct, codes, row0, table.where, column.parse_json)
        nested = np.flatnonzero(column.code[row0:] == NESTED)
        column.nested.update({row0 + int(r): values[r] for r in nested})


def read_files(paths, args):
    """A Table of the files' rows, JSON (starting with { or [) or CSV; a key a file lacks is
    missing in its rows."""
    table = Table()
    for path in paths:
        head, cr_only, blank = scan(path)
        if not head.strip():
            fail(f"{path}: empty file; expected a CSV header and rows, or JSON records")
        if JSON.match(head):
            read_json(table, path, args)
        else:
            read_csv(table, path, args, head, cr_only, blank)
    for column in table.cols.values():
        column.pad(table.n)
        column.texts = list(column.index)
    return table
