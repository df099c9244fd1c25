"""The one escaping helper (crowdlab.io.safe): Markdown, KaTeX text, plotly text and CSV cells."""

import pandas as pd

from crowdlab.io import safe

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


def test_html_uses_only_entities_plotly_decodes():
    # plotly.js decodes numeric entities and amp/lt/gt (not &quot;): a quote must come out as a numeric one
    assert safe.html("a\"b'c") == "a&#34;b&#39;c"
    assert safe.html("x & y") == "x &amp; y"
    # a name cannot open a hover-template field or a $...$ formula
    assert safe.html("%{y}") == "%&#123;y&#125;"
    assert safe.html("$x^2$") == "&#36;x^2&#36;"
    for s in HOSTILE:
        out = safe.html(s)
        assert not set("<>\"'{}$") & set(out), out
        for entity in __import__("re").findall(r"&[^;\s]*;", out):
            assert entity in ("&amp;", "&lt;", "&gt;") or entity[1] == "#", entity


def test_md_trims_and_breaks_autolinks():
    import re

    assert safe.md("    indented") == "indented"
    # GFM finds bare URLs after escapes are resolved: a word joiner breaks them
    for url in ("https://example.org", "www.example.org", "mail a@example.org", "HTTP://x.org", "WWW.x.org"):
        out = safe.md(url).replace("\\", "")
        assert not re.search(r"(?i)https?://|www\.|\w@", out), out
    assert safe.md("no url here.") == r"no url here\."
    assert safe.md("") == ""


def test_md_output_parses_to_the_same_text():
    """CommonMark unescapes a backslash before ASCII punctuation: md(s) shows s itself (newlines folded, trimmed)."""
    import re

    for s in HOSTILE + ["tab\there", "  spaced  ", "ünïcödé ∑ 'quotes' \"dq\" 50% a@b.c"]:
        shown = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", safe.md(s)).replace(safe.WORD_JOINER, "")
        assert shown == " ".join(s.replace("\t", " ").split("\n")).strip(), (s, shown)


def test_tex_output_has_balanced_braces_and_no_raw_specials():
    for s in HOSTILE:
        out = safe.tex(s)
        depth = 0
        i = 0
        while i < len(out):
            if out[i] == "\\":
                i += 2
                continue
            depth += {"{": 1, "}": -1}.get(out[i], 0)
            assert depth >= 0, out
            assert out[i] not in "$^_&%#~", (s, out)
            i += 1
        assert depth == 0, out


def test_shorten_then_escape():
    long = "<script>alert(1)</script>" * 3
    out = safe.html(safe.shorten(long, 24))
    assert out.endswith("…") and "<" not in out
    assert len(safe.shorten(long, 24)) == 24


def test_csv_cell_hostile_names():
    assert safe.csv_cell('=HYPERLINK("https://example.org")').startswith("'=")
    assert safe.csv_cell("@cmd") == "'@cmd"
    assert safe.csv_cell("<script>alert(1)</script>") == "<script>alert(1)</script>"  # not a formula
    assert safe.csv_cell(None) is None


def test_properties_hold_for_any_text():
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.text())
    def check(s):
        out = safe.html(s)
        assert not set("<>\"'{}$") & set(out)
        md = safe.md(s)
        # every special character of md's output is escaped
        stripped = re.sub(r"\\[!-/:-@\[-`{-~]", "", md)
        assert not set("*_`<>[]()$:!#|~&\\") & set(stripped), (s, md)
        cell = safe.csv_cell(s)
        assert not (
            isinstance(cell, str)
            and cell.startswith(safe.FORMULA_START)
            and cell == s
            and not re.match(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$", s)
        )

    check()
