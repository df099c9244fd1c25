"""The one escaping helper (crowdlab.safe): Markdown, KaTeX text, plotly text and CSV cells."""

import pandas as pd

from crowdlab import safe

HOSTILE = [
    "$x^2$",
    "**markdown**",
    "<script>alert(1)</script>",
    '<a href="https://example.org/">x</a>',
    "![t](https://example.org/t.png)",
    '=HYPERLINK("https://example.org")',
    ":red[alarm] :material/home:",
    "a\\b{c}_d&e%f#g~h",
    "line\nbreak",
]


def test_md_escapes_every_markdown_special():
    for s in HOSTILE:
        out = safe.md(s)
        for ch in "*_$<>[]()!`#:=&~\\":
            # every special is preceded by a backslash (an odd run of backslashes)
            i = -1
            while (i := out.find(ch, i + 1)) != -1:
                run = len(out[:i]) - len(out[:i].rstrip("\\"))
                if ch == "\\":
                    continue
                assert run % 2 == 1, (s, out, ch)
    assert safe.md("line\nbreak") == "line break"
    assert safe.md("plain text 12") == "plain text 12"


def test_tex_escapes_latex_specials():
    assert safe.tex("$x^2$") == r"\$x\textasciicircum{}2\$"
    assert safe.tex("a\\b{c}_d&e%f#g~h") == (r"a\textbackslash{}b\{c\}\_d\&e\%f\#g\textasciitilde{}h")
    assert safe.tex("w1") == "w1"


def test_html_makes_plotly_tags_inert():
    out = safe.html('<a href="https://example.org/">x</a>')
    assert "<" not in out and ">" not in out and '"' not in out
    assert out.startswith("&lt;a href=")
    assert safe.html_all(["<b>", "ok"]) == ["&lt;b&gt;", "ok"]


def test_csv_cell_escapes_formulas_and_keeps_numbers():
    for s in ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("u")']:
        assert safe.csv_cell(s) == "'" + s
    for s in ["-3.5", "+2", "-1e-5", "w1", "", "a=b"]:
        assert safe.csv_cell(s) == s
    assert safe.csv_cell(-3) == -3 and safe.csv_cell(1.5) == 1.5


def test_csv_frame_escapes_cells_columns_and_index():
    df = pd.DataFrame({"=item": ["=a", "b", "-4"], "p": [-0.5, 0.2, 1.0]}, index=["@x", "y", "z"])
    out = safe.csv_frame(df)
    assert list(out.columns) == ["'=item", "p"]
    assert list(out["'=item"]) == ["'=a", "b", "-4"]
    assert list(out["p"]) == [-0.5, 0.2, 1.0]
    assert list(out.index) == ["'@x", "y", "z"]
    assert list(df["=item"]) == ["=a", "b", "-4"]  # the input is untouched


def test_shorten():
    assert safe.shorten("abcdef", 4) == "abc…"
    assert safe.shorten("abc", 4) == "abc"
