"""Text a submission controls, made safe for the place it is shown: the one helper every format uses.

A submission chooses its exception messages, what it prints and its file name, and so may put in them
lone surrogates (which no UTF-8 file can hold: writing the report would fail), NUL bytes and other
characters XML forbids, and terminal control sequences (a terminal obeys ESC[2K and a carriage
return, which can overwrite a line of the report with "Verdict: ACCEPTED"). Every format passes
what it writes through `printable` (text, JUnit) or `printable_data` (the JSON formats), and the
gradebook's cells through `csv_cell`.
"""

import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATES = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline (so ESC, CR, backspace, NUL...), DEL, C1 controls (CSI U+009B among
# them), the line and paragraph separators, the bidirectional overrides and isolates (they reorder
# what a line shows), and the two noncharacters XML forbids. Each is written as its escape, \x1b or
# \u202e: visible, and inert.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069\ufffe\uffff]")
# OWASP's advice against CSV injection: a cell a spreadsheet would read as a formula starts with a quote.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """text with lone surrogates replaced by U+FFFD and every control character (but tab and
    newline) written as its escape; a CR LF line end is a newline. Safe on a terminal, in a UTF-8
    file, in JSON and in XML 1.0, and unchanged when it holds none of these."""
    text = text.replace("\r\n", "\n")
    return _CONTROLS.sub(_escape, _SURROGATES.sub(REPLACEMENT, text))


def printable_data(data: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, strings, numbers) with every string, keys included, printable."""
    if isinstance(data, str):
        return printable(data)
    if isinstance(data, dict):
        return {printable(k) if isinstance(k, str) else k: printable_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [printable_data(item) for item in data]
    return data


def csv_cell(text: str) -> str:
    """A gradebook cell: printable, and never read as a formula by a spreadsheet (a leading = + - @,
    tab or CR gets a single quote before it)."""
    shown = printable(text)  # a leading CR is shown as \x0d, and quoted all the same
    return "'" + shown if text.startswith(_FORMULA_START) or shown.startswith(_FORMULA_START) else shown
