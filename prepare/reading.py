"""
Your files read into records for prepare/text.py (prepare/README.md's "Your own data"): a reader
returns [(record, where)], a record {key: value}, a value a number (Decimal), text, None (missing),
or a list or object of these.
"""

import csv
import gzip
import io
import json
import re
from decimal import Decimal

# common puts the repository's root on the path
from common import fail
from tokenize_numbers import NUMBER, TextError, split_text

# a missing value, in any case
MISSING = ("", "NA", "N/A", "NaN", "null", "None", "?", "-", "--", ".", "#N/A")
_MISSING = {m.lower() for m in MISSING}
# 12:30, 05:06:07.5, 5:06 PM
TIME = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?[ap]\.?m\.?)?"
MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
DATE = re.compile(
    rf"(?:\d{{4}}-\d{{1,2}}(?:-\d{{1,2}})?|\d{{4}}/\d{{1,2}}/\d{{1,2}}"
    rf"|\d{{1,2}}[/.]\d{{1,2}}[/.](?:\d{{4}}|\d\d)"
    # 4-Mar-2021, Mar 4, 2021, Mar-2021
    rf"|\d{{1,2}}[- ]{MONTH}[- ](?:\d{{4}}|\d\d)|{MONTH} \d{{1,2}},? \d{{4}}|{MONTH}[- ]\d{{4}})"
    rf"(?:[T ]{TIME}(?:Z| ?UTC| ?GMT|[+-]\d{{2}}:?\d{{2}})?)?|{TIME}",
    re.IGNORECASE,
)
YYYYMMDD = re.compile(r"(?:1[89]|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")
# 33,231 (a thousands separator) or 12,5 (a decimal comma)
SEPARATED = re.compile(r"[+-]?\d+(?:,\d+)+(?:\.\d*)?")
# a leading zero: 01234 is a code (a ZIP code), not a quantity
CODE = re.compile(r"[+-]?0\d+")
DELIMITERS = {",": "a comma", ";": "a semicolon", "\t": "a tab", "|": "a bar"}


def is_missing(cell):
    return cell.strip().lower() in _MISSING


def rewrite(value, f):
    """A value with f applied to each of its leaves."""
    if isinstance(value, dict):
        return {k: rewrite(v, f) for k, v in value.items()}
    return [rewrite(v, f) for v in value] if isinstance(value, list) else f(value)


def leaves(value):
    """The numbers (Decimal), strings, booleans and nulls under a value, in order."""
    if isinstance(value, dict):
        value = list(value.values())
    return [x for v in value for x in leaves(v)] if isinstance(value, list) else [value]


def kinds(value):
    """The kinds of a value's leaves: 'number', 'text' (also booleans), 'null'."""
    return {
        "number" if isinstance(x, Decimal) else "null" if x is None else "text"
        for x in leaves(value)
    }


def numbers(value):
    return [x for x in leaves(value) if isinstance(x, Decimal)]


def plain_number(cell):
    """The number a cell writes with a currency or percent sign, digit groups or in hex ("$12.50",
    "45%", "1_000", "0x1F"), which the tokenizer would read as a word or two numbers; else None."""
    if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", cell):
        return str(int(cell, 16))
    bare = re.sub(r"^([+-]?)\s*[$€£¥]\s*|\s*[%‰]$", r"\1", cell)
    # 1_000, 1,000 (after a sign)
    if re.fullmatch(r"[+-]?(?:\d+(?:_\d+)+|\d{1,3}(?:,\d{3})+)(?:\.\d*)?", bare):
        bare = re.sub("[_,]", "", bare)
    return bare if bare != cell and NUMBER.fullmatch(bare) else None


def read_text(path):
    """A file's text (gzip undone): UTF-8 without a byte-order mark, line ends made \\n (CR-only
    noted, a lone \\r refused)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    # gzip (file.csv.gz): read as the file it holds
    if data.startswith(b"\x1f\x8b"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            fail(
                f"{path}: a damaged gzip file ({e}); expected a CSV or JSON-lines file, or one"
                " compressed with gzip"
            )
    if data.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):
        fail(
            f"{path}: a zip archive or an Excel workbook (.xlsx, .xls), not text; unzip it, or save"
            ' the sheet as "CSV UTF-8"'
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        fail(
            f'{path}: UTF-16 text (Excel\'s "Unicode Text"); save the file as UTF-8 (Excel: "CSV'
            ' UTF-8")'
        )
    try:
        # the byte-order mark a spreadsheet may write
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        fail(
            f"{path}:{data[: e.start].count(10) + 1}: not UTF-8 (byte {e.start}); save the file as"
            " UTF-8"
        )
    if "\r" in text and "\n" not in text:
        print(
            f"note: {path}: its lines end in a carriage return alone (\\r, old Mac files): read as"
            " line ends"
        )
        return text.replace("\r", "\n")
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        i = text.index("\r")
        fail(
            f"{path}:{text.count(chr(10), 0, i) + 1}: a lone carriage return (\\r) at column"
            f" {i - text.rfind(chr(10), 0, i)} in a file of \\n line ends; expected one line end"
            " per line (remove it)"
        )
    return text


def read_csv(path, text, columns, text_columns, delimiter, decimal_comma):
    """[(record, where)] of a CSV file, a record per row."""
    header_line = text.partition("\n")[0]
    comments = len(re.match(r"(?:#.*\n)*", text + "\n")[0].split("\n")) - 1
    if comments > 1 or comments and not re.search(r"[,;\t|]", header_line):
        fail(
            f"{path}:1: {header_line[:40]!r} is a comment, not a header ({comments} line(s) start"
            " with #); expected the column names on line 1: delete the lines above them"
        )
    if not delimiter:
        delimiter = max(DELIMITERS, key=header_line.count)
        if not header_line.count(delimiter) and re.search(r"\S\s+\S", header_line):
            fail(
                f"{path}:1: the header holds no , ; tab or | but spaces: a file separated by"
                " spaces? write it as CSV, or name the delimiter with --delimiter"
            )
        if delimiter != ",":
            print(
                f"note: {path}: columns separated by {DELIMITERS[delimiter]} (the header's most"
                " frequent of , ; tab |)"
            )
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, strict=True)
    rows, spans, end = [], [], 0
    try:
        for row in reader:
            rows.append(row)
            spans.append((end + 1, reader.line_num))
            end = reader.line_num
    except csv.Error as e:
        fail(f'{path}:{end + 1}: {e} (an unterminated quote?); expected cells like 1.5 or "a, b"')
    while rows and not rows[-1]:
        rows.pop()
    header, rows = [name.strip() for name in rows[0]], rows[1:]
    if not rows:
        fail(f"{path}: a header and no rows; expected one row per record after the header")
    names = header[:-1] if len(header) > 1 and not header[-1] else header
    if all(len(row) == len(names) + 1 and not row[-1].strip() for row in rows):
        print(
            f"note: {path}: every row ends in {DELIMITERS.get(delimiter, repr(delimiter))}, an"
            " empty last column with no name: left out"
        )
        header, rows = names, [row[:-1] for row in rows]
    multi = [(first, last) for first, last in spans[1 : len(rows) + 1] if last > first]
    if multi:
        print(
            f"note: {path}:{multi[0][0]}-{multi[0][1]}: a quoted cell holds a line break, read as"
            f" part of the cell ({len(multi)} such row(s)); if a quote is unterminated, close it"
        )
    where = [f"{path}:{first}" for first, _ in spans[1:]]
    for row, at in zip(rows, where):
        if not row:
            fail(f"{at}: empty line; expected one row per record")
        if len(row) == len(header):
            continue
        hint = " (separated by a comma: another delimiter? --delimiter)" if delimiter == "," else ""
        if len(row) == len(header) + 1 and not row[-1].strip():
            hint = (
                " (the last one empty: a delimiter at the end of some rows but not all? remove it)"
            )
        fail(f"{at}: {len(row)} cells, but the header ({path}:1) names {len(header)} columns{hint}")
    wanted = []
    for j, name in enumerate(header):
        if not name and j == 0 and "" not in header[1:]:
            print(f"note: {path}: column 1 has no name (row names, as R writes them): left out")
            continue
        if not name or name in header[:j]:
            fail(
                f"{path}:1: column {j + 1} of the header is"
                f" {'empty' if not name else f'{name!r} again'}; expected one distinct name per"
                " column"
            )
        if not columns or name in columns:
            wanted.append(j)
    for name in columns or []:
        if name not in header:
            fail(f"{path}:1: --columns names {name!r}, not a column here: {', '.join(header)}")
    names = [header[j] for j in wanted]
    cells = [[row[j].strip() for row in rows] for j in wanted]
    values = [
        csv_column(n, c, where, n in text_columns, decimal_comma) for n, c in zip(names, cells)
    ]
    return [(dict(zip(names, row)), at) for row, at in zip(zip(*values), where)]


def csv_column(name, cells, where, as_text, decimal_comma):
    """A CSV column's values: numbers if its cells are, else text; where: each cell's file:line."""

    def at(i):
        return f"{where[i]}: column {name!r}: {cells[i]!r}"

    # 12,5 is 12.5; a point would be a thousands separator
    if decimal_comma and not as_text:
        dotted = [i for i, c in enumerate(cells) if "." in c and NUMBER.fullmatch(c)]
        if dotted:
            fail(
                f"{at(dotted[0])} holds a point, but --decimal-comma says numbers are written 12,5;"
                f" write it without the thousands separator (or --text {name}: text)"
            )
        cells = [re.sub(r"^([+-]?\d*),(\d+(?:[eE][+-]?\d+)?)$", r"\1.\2", c) for c in cells]
    present = [i for i, c in enumerate(cells) if not is_missing(c)]
    numeric = [i for i in present if NUMBER.fullmatch(cells[i])]
    checked = [] if as_text else present
    for i in checked:
        if SEPARATED.fullmatch(cells[i]):
            fail(
                f"{at(i)} holds a thousands separator or a decimal comma; write"
                f" {cells[i].replace(',', '')} or {cells[i].replace(',', '.')}, or --decimal-comma"
                f" for a file of decimal commas (or --text {name}: text)"
            )
    for i in checked:
        if plain_number(cells[i]):
            fail(
                f"{at(i)} is a number written with a currency or percent sign, digit groups or in"
                f" hex; write {plain_number(cells[i])} (a unit in the column's name), or --text"
                f" {name}: text"
            )
    if as_text or not numeric:
        return [None if is_missing(c) else c for c in cells]
    for i in present:
        if CODE.fullmatch(cells[i]):
            fail(
                f"{at(i)} has a leading zero, a code (a ZIP code?) rather than a quantity; --text"
                f" {name} keeps the codes as words, or leave it out with --columns"
            )
    bad = [i for i in present if not NUMBER.fullmatch(cells[i])]
    # mostly numbers: the others are malformed
    if bad and len(numeric) * 2 >= len(present):
        fail(
            f"{at(bad[0])} is not a number, but {len(numeric)} of the column's {len(present)}"
            f" values are; write it as one (e.g. 1013.6), or a missing value"
            f" ({', '.join(MISSING[1:])})"
        )
    if bad:
        fail(
            f"{at(numeric[0])} is a number, but most of the column's values are text; make a column"
            f" all numbers or all text (--text {name})"
        )
    return [None if is_missing(c) else Decimal(c) for c in cells]


def _constant(name):
    if name != "NaN":
        raise ValueError(f"{name} is not a finite number")


def _object(pairs):
    keys = [k for k, _ in pairs]
    for k in keys:
        if keys.count(k) > 1:
            raise ValueError(f"key {k!r} is repeated in one object; expected each key once")
    return dict(pairs)


def read_json(path, text, columns, text_keys):
    """[(record, where)] of a JSON file: null, NaN and MISSING are None."""
    decoder = json.JSONDecoder(
        parse_float=Decimal, parse_int=Decimal, parse_constant=_constant, object_pairs_hook=_object
    )
    space = re.compile(r"\s*")
    line_at = lambda i: f"{path}:{text.count(chr(10), 0, i) + 1}"
    to_none = lambda x: None if isinstance(x, str) and is_missing(x) else x
    records, i, line, at = [], space.match(text).end(), 1, 0
    array = text.startswith("[", i)
    i = space.match(text, i + array).end()
    while i < len(text) and not (array and text[i] == "]"):
        line, at = line + text.count("\n", at, i), i
        where = f"{path}:{line}" + (f" (record {len(records) + 1})" if array else "")
        try:
            record, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            fail(f"{path}:{e.lineno}: not a JSON record ({e.msg} at column {e.colno})")
        except ValueError as e:
            fail(f"{where}: {e}")
        if not isinstance(record, dict) or not record:
            fail(
                f'{where}: expected a JSON object {{"key": value, ...}}, found {text[at:i][:40]!r}'
            )
        record = {k: rewrite(v, to_none) for k, v in record.items() if not columns or k in columns}
        for k, v in record.items():
            strings = [x for x in leaves(v) if isinstance(x, str) and k not in text_keys]
            quoted = [x for x in strings if NUMBER.fullmatch(x.strip()) or plain_number(x)]
            if quoted:
                fail(
                    f"{where}: key {k!r}: {quoted[0]!r} is a number written as a string; write it"
                    f" as a JSON number ({plain_number(quoted[0]) or quoted[0].strip()}), or --text"
                    f" {k} keeps the key's strings as words"
                )
        records.append((record, where))
        i = space.match(text, i).end()
        if array and text.startswith(",", i):
            i = space.match(text, i + 1).end()
        elif array and i < len(text) and text[i] != "]":
            fail(f"{line_at(i)}: expected , or ] after a record of the JSON array")
    if array and i == len(text):
        fail(f"{line_at(i)}: the file ends inside the JSON array; expected ] at its end")
    if array and text[i:].strip() != "]":
        fail(f"{line_at(i)}: expected nothing after the JSON array's ]")
    if not records:
        fail(
            f'{path}: an empty JSON array; expected JSON objects {{"key": value, ...}}, a record'
            " each"
        )
    values = list(records[0][0].values()) if len(records) == 1 else []
    by_column = all(isinstance(v, (dict, list)) and len(v) == len(values[0]) > 1 for v in values)
    if len(values) > 1 and by_column:
        fail(
            f"{path}: one JSON object of columns, each holding {len(values[0])} values (pandas'"
            " to_json writes this by default); expected a record per row: write it with"
            ' to_json(orient="records", lines=True)'
        )
    return records


def read_file(path, args):
    """([(record, where)] of a file's rows, what it calls a key: "key" or "column")."""
    # the newline that ends the last line
    text = read_text(path).rstrip("\n")
    if not text.strip():
        fail(f"{path}: empty file; expected a CSV header and rows, or one JSON record per line")
    if text.lstrip().startswith(("{", "[")):
        return read_json(path, text, args.columns, args.text), "key"
    rows = read_csv(path, text, args.columns, args.text, args.delimiter, args.decimal_comma)
    return rows, "column"


def is_date(x):
    if isinstance(x, str):
        return DATE.fullmatch(x) is not None
    return isinstance(x, Decimal) and YYYYMMDD.fullmatch(str(x)) is not None


def date_keys(rows, keys, text_keys):
    """The keys whose every value is a date or time (not forced to text), noted."""
    dates = []
    for key in keys:
        values = [r[key] for r, _ in rows if r.get(key) is not None]
        if key in text_keys or not values or not all(is_date(v) for v in values):
            continue
        dates.append(key)
        # ISO dates and yyyymmdd sort as text
        sortable = all(re.match(r"\d{4}", str(v)) for v in values)
        pairs = [(a.get(key), b.get(key), w) for (a, _), (b, w) in zip(rows, rows[1:])]
        back = [w for a, b, w in pairs if sortable and None not in (a, b) and str(b) < str(a)]
        print(
            f"note: key {key!r} holds dates or times ({values[0]} ... {values[-1]}): left out;"
            " the rows are taken in file order"
            + (f" (they go back in time at {back[0]}: sort the file)" if back else "")
        )
    return dates


def as_word(text):
    """text, or where the tokenizer would read a number in it, one word: every character but
    letters, digits and _ made _ ("room_12", "_01234")."""
    try:
        if all(kind != "num" for kind, _ in split_text(json.dumps(text, ensure_ascii=False))):
            return text
    except TextError:
        pass
    word = re.sub(r"\W", "_", text)
    return "_" + word if not word or word[0].isdigit() else word


def words_for_tokenizer(rows):
    """Key names and text values made words (as_word) in every record, noted; {old: new} keys."""
    renamed, values = {}, {}
    for record, _ in rows:
        for key, value in record.items():
            if key not in renamed:
                renamed[key] = as_word(key)
            for x in leaves(value):
                if isinstance(x, str) and x not in values:
                    values[x] = as_word(x)
    for mapping, what in ((renamed, "key"), (values, "text value")):
        changed = {a: b for a, b in mapping.items() if a != b}
        clash = {}
        for a, b in mapping.items():
            if clash.setdefault(b, a) != a:
                fail(f"the {what}s {clash[b]!r} and {a!r} would both be written {b!r}; rename one")
        if changed:
            a, b = next(iter(changed.items()))
            print(
                f"note: {len(changed)} {what}(s) the tokenizer would read as numbers written as one"
                f" word each: {a!r} as {b!r}"
                + (" (--mask_key takes the new name)" if what == "key" else "")
            )
    word = lambda x: values.get(x, x) if isinstance(x, str) else x
    for record, _ in rows:
        items = [(renamed[k], rewrite(v, word)) for k, v in record.items()]
        record.clear()
        record.update(items)
    return renamed
