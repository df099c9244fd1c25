"""Hostile names in a real browser: a label file (and gold file) whose item, worker, class and file names are
Markdown, HTML, LaTeX and spreadsheet formulas is uploaded through the file uploader, stepped on the Step page
with every tab opened, and exported. The page never gains a script element, a link or an image from a name, no
name renders bold, KaTeX reports no error, the names show literally, and the downloaded CSV files hold no formula
cell. Screenshots: tests/e2e/artifacts/hostile_*.png.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from crowdlab.io import safe
from tests.e2e.helpers import (
    ARTIFACTS,
    ITERATION,
    assert_no_exception,
    screenshot,
    sidebar_link,
    sidebar_text,
    wait_idle,
    wait_page,
)

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parents[1] / "data"
FILE_NAME = "**upload** $y^2$ <i>f.csv"
GOLD_NAME = "gold <script>alert(1)<script> ![g](https:example.org).csv"
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")

# what a hostile name would have made of the page, counted in the live DOM
DOM_CHECK = """() => {
  const text = e => (e.textContent || '');
  const href = e => (e.getAttribute('href') || '') + ' ' + (e.getAttribute('xlink:href') || '');
  return {
    scripts: Array.from(document.querySelectorAll('script')).filter(s => text(s).includes('alert(1)')).length,
    links: Array.from(document.querySelectorAll('a')).filter(a => href(a).includes('example.org')).length,
    images: Array.from(document.querySelectorAll('img, image')).filter(
      i => ((i.getAttribute('src') || '') + href(i)).includes('example.org')).length,
    // a name made bold (the page may put a name in bold, but then its asterisks show: "**markdown**")
    bold: Array.from(document.querySelectorAll('strong, b, em, i')).filter(
      e => /markdown|bold item|upload|alarm/.test(text(e)) && !text(e).includes('**')).length,
    italic_file: Array.from(document.querySelectorAll('i')).filter(e => text(e) === 'f').length,
    katex_errors: document.querySelectorAll('.katex-error').length,
    colored: document.querySelectorAll('[class*="colored"], span[style*="color: red"]').length,
  };
}"""


def check_dom(page) -> None:
    found = page.evaluate(DOM_CHECK)
    where = page.evaluate(
        "() => Array.from(document.querySelectorAll('a, img, image, script, strong, b, em, i, .katex-error'))"
        ".filter(e => /example\\.org|alert\\(1\\)|markdown|bold item|upload|alarm|katex-error/.test(e.outerHTML))"
        ".map(e => e.parentElement.outerHTML.slice(0, 400))"
    )
    assert found == {
        "scripts": 0,
        "links": 0,
        "images": 0,
        "bold": 0,
        "italic_file": 0,
        "katex_errors": 0,
        "colored": found["colored"],
    }, (found, where)
    assert_no_exception(page)


def svg_texts(page) -> str:
    """The text drawn in every plotly chart on the page (tick labels, titles, legends, annotations)."""
    return page.evaluate("() => Array.from(document.querySelectorAll('svg text')).map(t => t.textContent).join('\\n')")


def _choose(page, index: int, path: Path, name: str) -> None:
    """Put ``path``'s bytes, named ``name``, into the index-th file uploader and wait until Streamlit has it."""
    uploader = page.locator('[data-testid="stFileUploader"]').nth(index)
    uploader.locator('input[type="file"]').set_input_files(
        {"name": name, "mimeType": "text/csv", "buffer": path.read_bytes()}
    )
    uploader.locator('[data-testid="stFileChipName"]').first.wait_for()
    wait_idle(page)


def _tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    wait_idle(page)


def _csv_rows(content: bytes) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(content.decode())))
    for row in rows:
        for cell in row:
            assert not (cell.startswith(safe.FORMULA_START) and not NUMBER.match(cell)), (cell, row)
    return rows


def test_hostile_names_upload_step_and_export(server, page):
    page.goto(server + "/Data")
    wait_page(page)
    _choose(page, 0, DATA / "hostile_long.csv", FILE_NAME)
    _choose(page, 1, DATA / "hostile_gold.csv", GOLD_NAME)
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("Dataset changed: loaded").first.wait_for()
    page.locator(".js-plotly-plot").nth(3).wait_for()
    wait_idle(page)
    check_dom(page)
    # the names show as they are: the file name in the sidebar, the workers on the agreement heatmap's ticks
    assert "**upload** $y^2$ <i>f" in sidebar_text(page)
    page.get_by_text(f"Loaded '{FILE_NAME}' with gold from '{GOLD_NAME}'").wait_for()
    ticks = svg_texts(page)
    for name in ("**markdown**", "<script>alert(1)</script>", '<a href="https://example.org/">x</a>', "@SUM(A1)"):
        assert safe.shorten(name, 14) in ticks, name  # long names are shortened on ticks (the hover has them all)
    assert "![t](https://…" in ticks  # a class on the class-balance bars
    screenshot(page, "hostile_data")

    sidebar_link(page, "Step through EM")
    page.get_by_text(ITERATION).first.wait_for()
    step = page.get_by_role("button", name="Step", exact=True)
    for i in range(1, 4):
        step.click()
        page.get_by_text(f"iteration {i}, after M-step").first.wait_for()
        wait_idle(page)
    check_dom(page)
    assert "$x^2$" in svg_texts(page)  # an item on the posterior heatmap
    screenshot(page, "hostile_step_posterior")
    for tab in ("Workers", "Priors", "Surface", "Intervals", "Formulas"):
        _tab(page, tab)
        check_dom(page)
        screenshot(page, "hostile_step_" + re.sub(r"\W+", "_", tab.lower()).strip("_"))
    # "What just happened": pick the item $x^2$ from the select box (its options are plain text)
    combo = page.get_by_role("combobox", name=re.compile(r"^Item \(default"))
    combo.scroll_into_view_if_needed()
    combo.click()
    options = page.locator('[data-testid="stSelectboxVirtualDropdown"] [role="option"]')
    page.wait_for_timeout(500)
    if options.count() == 0:
        combo.press("ArrowDown")
    options.first.wait_for()
    shown = options.all_inner_texts()
    assert "$x^2$" in shown and "**bold item**" in shown, shown
    check_dom(page)  # the open list renders no name as markup
    page.screenshot(path=str(ARTIFACTS / "hostile_step_item_options.png"))
    options.filter(has_text=re.compile(r"^\$x\^2\$$")).click()
    wait_idle(page)
    check_dom(page)
    js = "() => Array.from(document.querySelectorAll('.katex-html')).map(k => k.textContent).join('\\n')"
    # the formulas redraw after the pick's rerun, which a busy machine may finish after wait_idle returns
    page.wait_for_function(f"() => ({js})().replaceAll('\\xa0', ' ').includes('item $x^2$ (5 labels)')", timeout=20_000)
    katex = page.evaluate(js)
    katex = katex.replace("\xa0", " ")  # KaTeX writes the spaces of \text{} as no-break spaces
    assert "item $x^2$ (5 labels)" in katex, katex[:500]
    page.get_by_text(re.compile(r"here for worker \*\*markdown\*\*")).first.wait_for()  # Markdown, literally
    page.get_by_role("button", name=re.compile(r"^E-step")).click()  # the name ends with its shortcut key
    page.get_by_text(re.compile(r"here for item \$x\^2\$")).first.wait_for()
    wait_idle(page)
    check_dom(page)
    screenshot(page, "hostile_step_explain")

    sidebar_link(page, "Export")
    page.get_by_role("button", name=re.compile(r"posteriors\.csv$")).wait_for()
    check_dom(page)
    files = {}
    for name in ("posteriors.csv", "labels.csv", "workers.csv"):
        with page.expect_download() as info:
            page.get_by_role("button", name=re.compile(re.escape(name) + "$")).click()
        files[name] = Path(info.value.path()).read_bytes()
        _csv_rows(files[name])
    assert "'=HYPERLINK" in files["labels.csv"].decode()
    assert "'@SUM(A1)" in files["workers.csv"].decode()
    assert "\n-3.5," in files["posteriors.csv"].decode()  # a plain number stays a number
    screenshot(page, "hostile_export")

    # back on the Data page: the upload boxes are empty (a page switch), the kept files are named, the data kept
    sidebar_link(page, "Data")
    page.get_by_text("Kept from your last upload").wait_for()
    notice = page.get_by_text("Kept from your last upload").first.inner_text()
    assert FILE_NAME in notice and GOLD_NAME in notice, notice
    assert "**upload** $y^2$ <i>f" in sidebar_text(page)
    check_dom(page)
    screenshot(page, "hostile_data_again")
