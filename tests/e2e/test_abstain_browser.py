""" "Can't tell" answers in a real Chromium at 1024 x 768 (issue 28, section 4): the Data page's "Can't tell answer"
field beside Format, Kind and Load (nothing cut), a file whose "unsure" labels are read as a response after it is
typed in and Load pressed (the count in the message and the summary, the worker report's "can't tell" column), then
IBCC stepped on it on the Step page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.helpers import (
    ITERATION,
    assert_no_exception,
    assert_nothing_cut,
    screenshot,
    sidebar_link,
    wait_idle,
    wait_page,
)

pytestmark = pytest.mark.e2e


@pytest.fixture()
def unsure_csv(tmp_path) -> tuple[Path, int]:
    rows = [(i, j, "unsure" if (i + 2 * j) % 7 == 0 else "ab"[(i + (j == 2)) % 2]) for i in range(40) for j in range(5)]
    f = tmp_path / "e2e_unsure.csv"
    f.write_text("item,worker,label\n" + "".join(f"t{i},w{j},{lab}\n" for i, j, lab in rows))
    return f, sum(lab == "unsure" for _, _, lab in rows)


def test_data_page_reads_a_cant_tell_token_and_the_step_page_steps_on_it(server, page, unsure_csv):
    path, n_unsure = unsure_csv
    page.goto(server + "/Data")
    wait_page(page)
    uploader = page.locator('[data-testid="stFileUploader"]').nth(0)
    uploader.locator('input[type="file"]').set_input_files(str(path))
    uploader.locator(f'[data-testid="stFileChipName"][title="{path.name}"]').wait_for()
    page.get_by_text('looks like a "can\'t tell" answer').first.wait_for()  # read as a class, with the note
    wait_idle(page)
    field = page.get_by_label("Can't tell answer", exact=True)
    field.fill("unsure")
    field.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text(f'({n_unsure} of them "can\'t tell")').wait_for()
    wait_idle(page)
    page.locator('[data-testid="stMetric"]').filter(has_text="can't tell").first.wait_for()
    page.get_by_text("can't tell", exact=True).first.wait_for()  # the worker report's column header
    assert_no_exception(page)
    assert_nothing_cut(page, "data page with abstentions")
    screenshot(page, "data_abstain")

    sidebar_link(page, "Step through EM")
    page.get_by_text(ITERATION).first.wait_for()
    page.get_by_role("button", name="Step", exact=True).click()
    page.get_by_text("iteration 1, after M-step").first.wait_for()
    wait_idle(page)
    assert_no_exception(page)
    screenshot(page, "step_abstain")
