"""User-supplied text made safe for every place it is shown or written: the one escaping helper.

Names of items, workers and classes, file names and gold labels come from the user's files. They are *text*: an
item called ``$x^2$`` must not render as math, a worker called ``**bold**`` must not render bold,
``<script>alert(1)</script>`` must never become an element, ``![t](https://example.org/t.png)`` must not load an
image, and a class called ``=HYPERLINK(...)`` must not run as a formula when an exported CSV is opened in a
spreadsheet. Each function below escapes for one target; every page, figure builder, formula and writer uses them
(nothing else in crowdlab escapes by hand):

=================  =============================================================================================
``md(s)``          Markdown as Streamlit renders it (``st.markdown``, ``st.caption``, labels, ``st.info`` ...):
                   every ASCII punctuation character is backslash-escaped (CommonMark), so no emphasis, link,
                   image, code span, ``$`` math, ``:color[...]`` directive or HTML survives; newlines fold to
                   spaces and the ends are trimmed (leading spaces would start a code block). GitHub's bare-URL
                   autolinks (``https://...``, ``www.``, ``a@b.org``) are found in the text *after* escapes are
                   resolved, so an invisible word joiner (U+2060) goes where one would start.
``tex(s)``         text inside ``\\text{...}`` of a KaTeX formula (``st.latex``): the ten LaTeX specials escaped.
``html(s)``        text that plotly renders (tick labels, hover text, legends, titles, annotations): ``< > &``
                   as entities, so plotly's tag subset (``<a href>``, ``<b>``, ``<br>``, ``<span style>``) is inert;
                   also ``" ' { } $`` as numeric entities (plotly.js decodes only a few named ones), so a name
                   cannot close an attribute, start a ``%{...}`` hover-template field or a ``$...$`` formula.
``plain(s)``       plain text for a terminal (the CLI's summary): line breaks folded, control characters (ANSI
                   escape sequences start with one) removed.
``csv_cell(x)``    one cell written to a CSV: a string that a spreadsheet would run as a formula (it starts with
                   ``=``, ``+``, ``-``, ``@``, tab or CR) gets the usual leading apostrophe; numbers, and strings
                   that are plain numbers such as ``-3.5``, stay as they are (OWASP's CSV-injection advice).
``csv_frame(df)``  :func:`csv_cell` over every text cell, column name and index label of a DataFrame (a copy).
``csv_text(df)``   the CSV text of :func:`csv_frame` (``csv_bytes``: UTF-8), the one way crowdlab writes a CSV
                   (downloads, the CLI's files, the class export): every cell holding CR or LF is quoted. pandas
                   (Python's csv writer) quotes only the characters of its line terminator, so a bare CR
                   (``"w1\\r=1+1"``) went out unquoted and a reader that ends a line at CR (Python's csv module
                   does) began a new row with ``=1+1``; a table holding a CR is written with CRLF line ends,
                   which makes the writer quote CR too (issue 42).
``withhold(s)``    a reader's message about a file *on the server* with the file's content taken out: every span
                   the readers quote (``'...'`` or ``"..."``, as ``repr`` writes one; a column name, a cell, the
                   first row) and Arrow's own words become ``'…'``, the file's name and crowdlab's own quoted
                   words stay. What is wrong, the row and the column's place remain (issue 42: a path refusal
                   quoted ``password=hunter2`` from a notes file).
=================  =============================================================================================

:func:`shorten` cuts a long name for a narrow place (a tick label, a formula) with an ellipsis; escape after
shortening, never before (an entity or escape cut in half would show as garbage). :func:`plural` says a count in
words (``1 iteration``, ``2 items``); it escapes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "md",
    "tex",
    "html",
    "html_all",
    "plain",
    "csv_cell",
    "csv_frame",
    "csv_text",
    "csv_bytes",
    "withhold",
    "shorten",
    "FORMULA_START",
]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:=&\"'^%@;/,?])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]")
_NEWLINES = re.compile(r"[\r\n\t]+")
# where a GFM autolink literal would start: a protocol's "://", "www.", an e-mail's "@"
_AUTOLINK = re.compile(r"(?<=[A-Za-z])(?=://)|(?<=[wW]{3})(?=\.)|(?<=[-.+\w])(?=@)")
WORD_JOINER = "\u2060"

# LaTeX text-mode specials and their KaTeX-supported text forms
_TEX = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
}
_TEX_RE = re.compile(r"[\\{}$&%#_^~]")

# plotly.js decodes numeric entities and only amp, lt, gt, nbsp, mu, times, plusmn, deg by name
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;", "{": "&#123;", "}": "&#125;", "$": "&#36;"}
_HTML_RE = re.compile("[&<>\"'{}$]")

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _clean(s: Any) -> str:
    """str(s) with line breaks folded to one space and invisible control/format characters made visible as
    nothing (they cannot carry meaning in a name shown on a page)."""
    return _CONTROL.sub("", _NEWLINES.sub(" ", str(s)))


def plural(n: int, one: str, many: str | None = None) -> str:
    """A count in words, the one way every page and the CLI say it: ``1 iteration``, ``2 iterations``, ``1,000
    items``; ``many`` for an irregular plural (``pass``). Not an escape: ``one`` is crowdlab's own word."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def shorten(s: Any, n: int = 24) -> str:
    """``s`` cut to at most ``n`` characters, the last one an ellipsis when it was cut (n >= 2)."""
    s = str(s)
    return s if len(s) <= n else s[: max(n - 1, 1)] + "…"


def md(s: Any) -> str:
    """``s`` as literal text inside Streamlit Markdown (see the module docstring)."""
    return _MD_SPECIAL.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, _clean(s).strip()))


def tex(s: Any) -> str:
    """``s`` as literal text inside ``\\text{...}`` of a KaTeX formula."""
    return _TEX_RE.sub(lambda m: _TEX[m.group(0)], _clean(s))


def html(s: Any) -> str:
    """``s`` as literal text in plotly (tick labels, hover text, legends, titles, annotations)."""
    return _HTML_RE.sub(lambda m: _HTML[m.group(0)], _clean(s))


def html_all(names: Iterable[Any]) -> list[str]:
    """:func:`html` over a sequence of names (tick labels, hover rows)."""
    return [html(n) for n in names]


def plain(s: Any) -> str:
    """``s`` as one line of plain text without control characters (for a terminal)."""
    return _clean(s)


def csv_cell(x: Any) -> Any:
    """One CSV cell: a string a spreadsheet would run as a formula gets a leading apostrophe; all else as is."""
    if isinstance(x, str) and x.startswith(FORMULA_START) and not _PLAIN_NUMBER.match(x):
        return "'" + x
    return x


def csv_frame(df):
    """A copy of the pandas DataFrame ``df`` with :func:`csv_cell` applied to every text cell, to the column
    names and to the index labels (numbers untouched)."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) in ("string", "str"):
            out[col] = out[col].map(csv_cell)
    out.columns = [csv_cell(c) if isinstance(c, str) else c for c in out.columns]
    if out.index.dtype == object or str(out.index.dtype) in ("string", "str"):
        out.index = [csv_cell(i) for i in out.index]
    return out


def _holds_cr(df) -> bool:
    """Whether a text cell, a column name or a text index label of ``df`` holds a carriage return."""

    def texts(values) -> bool:
        if not (values.dtype == object or str(values.dtype) in ("string", "str")):
            return False  # numbers, dates, booleans: no CR
        try:
            return bool(values.str.contains("\r", regex=False, na=False).any())
        except AttributeError:  # an object column without a single string
            return False

    if any(isinstance(c, str) and "\r" in c for c in df.columns) or texts(df.index.to_series()):
        return True
    return any(texts(df.iloc[:, j]) for j in range(df.shape[1]))


def csv_text(df, *, index: bool = False, header: bool = True) -> str:
    """``df`` as CSV text, safe to open in a spreadsheet (:func:`csv_frame`) and with every cell that holds CR or
    LF quoted (see the module docstring): LF line ends, CRLF for a table that holds a CR."""
    out = csv_frame(df)
    return out.to_csv(index=index, header=header, lineterminator="\r\n" if _holds_cr(out) else "\n")


def csv_bytes(df, *, index: bool = False, header: bool = True) -> bytes:
    """:func:`csv_text` as UTF-8 bytes (a download, a file); ``header=False`` for the second and later slices of a
    table written in slices."""
    return csv_text(df, index=index, header=header).encode("utf-8")


# a span a message quotes as repr writes it ('...' or "...", escapes inside), not an apostrophe inside a word
_QUOTED = re.compile(r"""(?<![\w'"])('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")(?![\w'"])""")
# Arrow's own words in brackets (crowdlab.io.parquet), one level of brackets inside
_ARROW = re.compile(r"\(Arrow: [^()]*(?:\([^()]*\)[^()]*)*\)")
WITHHELD = "'…'"
# crowdlab's own quoted words in the readers' hints (not the file's): they stay
OWN_WORDS = frozenset({"CSV UTF-8", "Unicode (UTF-8)", "Format", "labels.csv", "wide", "long", ""})


def withhold(message: Any, keep: Iterable[str] = ()) -> str:
    """``message`` without the content of the file it is about (see the module docstring): every quoted span but
    those in ``keep`` (the file's name, its path) and crowdlab's own words becomes ``'…'``, Arrow's words too."""
    kept = set(keep) | OWN_WORDS

    def sub(m: re.Match) -> str:
        inner = m.group(0)[1:-1]
        return m.group(0) if inner in kept else WITHHELD

    return _QUOTED.sub(sub, _ARROW.sub("(Arrow: …)", str(message)))
