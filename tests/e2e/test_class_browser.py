"""A live class in a real browser: a student on a 375 x 667 phone joins, labels every item and sees their reveal;
the projector counts the votes; EM on the class's data runs on the Step page; a spammer-heavy class of scripted
students is revealed and MACE and Dawid-Skene single out the spammers.

The app runs with its own data folder (a temporary one), so the test reads the same SQLite file as the server.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from crowdlab.classroom import items as ci
from crowdlab.classroom.store import ClassStore, Limits
from tests.e2e.helpers import ARTIFACTS, ITERATION, assert_no_exception, screenshot, streamlit_server, wait_idle

pytestmark = pytest.mark.e2e

PHONE = {"width": 375, "height": 667}


@pytest.fixture(scope="module")
def class_server(tmp_path_factory):
    data = tmp_path_factory.mktemp("class_data")
    with streamlit_server({"CROWDLAB_DATA_DIR": str(data)}, log_name="streamlit_class.log") as url:
        yield url, data / "class.db"


@pytest.fixture()
def phone(browser):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()


def _metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]', has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _wait_metric(page, label: str, value: str, timeout: float = 15_000) -> None:
    page.wait_for_function(
        """([label, value]) => Array.from(document.querySelectorAll('[data-testid="stMetric"]')).some(m =>
            m.innerText.includes(label) &&
            m.querySelector('[data-testid="stMetricValue"]').innerText.trim() === value)""",
        arg=[label, value],
        timeout=timeout,
    )


def _start(page, url: str) -> tuple[str, str]:
    """Start a session with the default settings on the Class page; returns (join code, lecturer key)."""
    page.goto(url + "/Class")
    page.get_by_role("button", name="Start the class session").click()
    page.get_by_text("Join code:").first.wait_for()
    code = re.search(r"Join code: ([A-Z0-9]{6})", page.locator('[data-testid="stMain"]').inner_text()).group(1)
    with page.expect_download() as got:  # the key is a file, never text on the projected page
        page.get_by_role("button", name="Download the lecturer key", exact=True).click()
    key = re.search(r"lecturer key: (\S+)", Path(got.value.path()).read_text()).group(1)
    return code, key


def _projected_text(page) -> str:
    """Everything the page shows as text, what a projector shows (its text, and what its fields hold)."""
    return page.evaluate(
        """() => document.body.innerText + '\\n' +
            Array.from(document.querySelectorAll('input, textarea')).map(e => e.value).join('\\n')"""
    )


def _layout_fits_a_phone(page, answers=()) -> None:
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width} px wide on a 375 px phone"
    assert page.locator('[data-testid="stSidebar"]:visible').count() == 0
    assert page.locator(".js-plotly-plot").count() == 0
    for box in [b.bounding_box() for b in page.locator('[data-testid="stButton"] button').all()]:
        assert box["height"] >= 48 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    for name in answers:  # the item and its answers fit on the screen at once: no scrolling to answer
        box = page.get_by_role("button", name=name, exact=True).bounding_box()
        assert box["y"] + box["height"] <= PHONE["height"], (name, box)


def test_a_phone_joins_labels_every_item_and_sees_the_reveal(class_server, page, phone):
    url, _ = class_server
    code, key = _start(page, url)
    assert len(key) >= 30
    page.locator('[data-testid="stImage"] img').first.wait_for()  # the QR code
    _wait_metric(page, "Votes counted", "0")

    phone.goto(f"{url}/Join?code={code}")
    phone.get_by_role("button", name="Join", exact=True).click()
    phone.get_by_text("0 of 10 answered").wait_for()
    phone.locator('[data-testid="stImage"] img').wait_for()
    _layout_fits_a_phone(phone, ci.DOT_CHOICES)
    phone.screenshot(path=str(ARTIFACTS / "class_phone_item.png"))
    for k in range(10):
        phone.get_by_text(f"{k} of 10 answered").wait_for()
        phone.get_by_role("button", name="orange", exact=True).click()
    phone.get_by_text("10 of 10 answered").wait_for()
    phone.get_by_text("All done").wait_for()
    assert_no_exception(phone)

    _wait_metric(page, "Votes counted", "10")  # the projector counts them, by itself
    _wait_metric(page, "Students done", "1")
    page.get_by_role("button", name="Reveal the roles").click()
    page.get_by_text("Reveal: did EM find the careless students?").wait_for()
    phone.get_by_role("button", name="See what EM found out").click()
    phone.get_by_text("What EM found out about you").wait_for()
    phone.get_by_text("Items the class got right").wait_for()  # the reveal's last element
    phone.screenshot(path=str(ARTIFACTS / "class_phone_reveal.png"), full_page=True)
    text = phone.locator('[data-testid="stMain"]').inner_text()
    assert "Your secret role was" in text and "95% sure" in text and "Items the class got right" in text, text
    _layout_fits_a_phone(phone)
    assert_no_exception(phone)
    assert_no_exception(page)


def test_the_lecturer_key_is_never_projected_and_a_reload_keeps_the_lecturer(class_server, page):
    url, _ = class_server
    code, key = _start(page, url)
    _wait_metric(page, "Votes counted", "0")
    wait_idle(page)
    shown = _projected_text(page)
    assert code in shown and key not in shown
    page.reload()  # the Class page comes back to the session, not to the setup form, without the key typed
    page.get_by_text("Join code:").first.wait_for()
    _wait_metric(page, "Votes counted", "0")
    wait_idle(page)
    assert f"Join code: {code}" in page.locator('[data-testid="stMain"]').inner_text()
    assert key not in _projected_text(page)
    assert page.get_by_role("button", name="Start the class session").count() == 0
    assert_no_exception(page)


def test_em_runs_on_the_class_data_on_the_step_page(class_server, page):
    url, db = class_server
    code, key = _start(page, url)
    store = ClassStore(str(db), limits=Limits(votes_per_window=1000))
    rng = np.random.default_rng(1)
    session = store.lecturer_session(code, key)
    truth = {it.item_id: it for it in store.items(session.id)}
    for _ in range(6):
        st, tok = store.join(code, ci.pseudonym(), deal=ci.deal_role)
        for i in st.assigned:
            store.vote(tok, i, ci.scripted_answer(st.role, truth[i].truth, ci.DOT_CHOICES, 0.2, rng))
    _wait_metric(page, "Votes counted", "60")
    page.get_by_role("button", name="Step through EM on our votes").click()
    page.get_by_text("are now the working dataset").wait_for()
    page.locator('[data-testid="stMain"]').get_by_role("link", name=re.compile("Step through EM")).click()
    page.get_by_text(ITERATION).first.wait_for()
    assert "live class" in page.locator('[data-testid="stSidebar"]').inner_text()
    page.get_by_role("button", name="Run to convergence").click()
    page.get_by_text("converged").first.wait_for()
    wait_idle(page)
    assert_no_exception(page)
    store.close()


def test_a_spammer_heavy_class_is_revealed(class_server, page):
    """30 scripted students, 40% of them spammers: after Reveal, MACE gives the spammers a far higher probability
    of spamming and Dawid-Skene a far lower accuracy than the honest students, in the lecturer's table."""
    url, db = class_server
    store = ClassStore(str(db), limits=Limits(votes_per_window=1000))
    items = ci.dot_items(16, 0.2, seed=2)
    shares = {"honest": 0.5, "spammer": 0.4, "adversary": 0.0, "lazy": 0.1}
    session, key = store.create_session(items, ci.DOT_CHOICES, per_student=12, shares=shares)
    rng = np.random.default_rng(2)
    by = {it.item_id: it for it in items}
    for _ in range(30):
        st, tok = store.join(session.join_code, ci.pseudonym(), deal=ci.deal_role)
        for i in st.assigned:
            store.vote(tok, i, ci.scripted_answer(st.role, by[i].truth, ci.DOT_CHOICES, by[i].difficulty, rng))
    page.goto(url + "/Class")
    page.get_by_text("Resume a session").click()
    page.get_by_label("Join code").fill(session.join_code)
    page.get_by_label("Lecturer key").fill(key)
    page.get_by_role("button", name="Resume", exact=True).click()
    _wait_metric(page, "Votes counted", "360")
    page.get_by_role("button", name="Reveal the roles").click()
    page.get_by_text("Reveal: did EM find the careless students?").wait_for()
    page.wait_for_function(  # the reveal's picture: a dot per student, in a trace per role
        """() => Array.from(document.querySelectorAll('.cl-live-chart')).some(g => g.data &&
            g.data.some(t => t.name === 'Spammer' && t.x.length === 12))"""
    )
    roles = store.session(session.id).reveal["roles"]  # what the page computed and stored
    assert roles["spammer"]["students"] == 12 and roles["honest"]["students"] == 15
    assert roles["spammer"]["mace_spamming"] > roles["honest"]["mace_spamming"] + 0.2
    assert roles["spammer"]["accuracy"] < roles["honest"]["accuracy"] - 0.2
    assert_no_exception(page)
    screenshot(page, "class_reveal")
    store.close()


PROJECTOR = {"width": 1024, "height": 768}
SMALL_TEXT = """() => { const small = [];
  const walk = document.createTreeWalker(document.querySelector('[data-testid="stMain"]'), NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) { const n = walk.currentNode; const e = n.parentElement;
    if (!n.textContent.trim() || !e || !e.offsetParent) continue;
    const px = parseFloat(getComputedStyle(e).fontSize); if (px < 16) small.push([n.textContent.trim(), px]); }
  return small.slice(0, 10); }"""
BUTTON_COLOR = """(name) => { const b = Array.from(document.querySelectorAll('[data-testid="stButton"] button'))
  .find(b => b.innerText.trim() === name); return b ? getComputedStyle(b).backgroundColor : null; }"""


def _shot(page, name: str, size: dict) -> None:
    """A screenshot of everything the page draws at ``size``'s width (Streamlit scrolls inside a section)."""
    height = page.evaluate(
        "() => Math.max(...Array.from(document.querySelectorAll('section, div')).map(e => e.scrollHeight))"
    )
    page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 5000)})
    page.wait_for_timeout(700)  # the live charts re-lay out and finish their transition
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    page.set_viewport_size(size)


def _live_chart_text(page, nth: int = 0) -> str:
    return page.evaluate(
        "(k) => { const g = document.querySelectorAll('.cl-live-chart')[k]; return g && g.data ? "
        "JSON.stringify(g.data.map(t => [t.name, t.x, t.y])) : ''; }",
        nth,
    )


def test_a_whole_predict_then_reveal_round_with_three_phones(class_server, browser):
    """Projector (1024 x 768) and three phones (375 x 667): the items as pictures with live bars, the phones'
    answer buttons in their colours and no text under 16 px, a question pushed to every phone, their predictions
    counted on the projector, the step run and the right answer on each phone, then the reveal as one picture and
    in plain words."""
    url, db = class_server
    proj_ctx = browser.new_context(viewport=PROJECTOR)
    proj = proj_ctx.new_page()
    proj.set_default_timeout(30_000)
    phones = []
    for _ in range(3):
        ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
        pg = ctx.new_page()
        pg.set_default_timeout(30_000)
        phones.append((ctx, pg))
    store = ClassStore(str(db), limits=Limits(votes_per_window=1000))
    try:
        code, key = _start(proj, url)
        wait_idle(proj)
        proj.locator(".cl-live-chart").first.wait_for()  # the live bars
        assert proj.locator('[data-testid="stImage"] img').count() >= 13  # 12 items as pictures and the QR code
        tokens = []
        for _, ph in phones:
            ph.goto(f"{url}/Join?code={code}")
            ph.get_by_role("button", name="Join", exact=True).click()
            ph.get_by_text("0 of 10 answered").wait_for()
            ph.wait_for_url(re.compile(r"[?&]t="))  # the token reaches the address a moment after the page
            tokens.append(re.search(r"[?&]t=([^&]+)", ph.url).group(1))
        first = phones[0][1]
        first.locator('[data-testid="stImage"] img').wait_for()
        wait_idle(first)
        assert first.evaluate(BUTTON_COLOR, "orange") == "rgb(230, 159, 0)"  # the orange button is orange
        assert first.evaluate(BUTTON_COLOR, "blue") == "rgb(0, 114, 178)"
        assert first.evaluate(SMALL_TEXT) == []
        _layout_fits_a_phone(first, ci.DOT_CHOICES)
        _shot(first, "class_round_phone_item", PHONE)

        session = store.lecturer_session(code, key)
        truth = {it.item_id: it for it in store.items(session.id)}
        rng = np.random.default_rng(3)
        for k in range(5):  # the first phone taps five answers itself; the store votes the rest (same database)
            first.get_by_text(f"{k} of 10 answered").wait_for()
            first.get_by_role("button", name=["orange", "blue"][k % 2], exact=True).click()
        first.get_by_text("5 of 10 answered").wait_for()
        for tok in tokens:
            st = store.student(tok)
            for i in st.assigned:
                if i not in st.voted:
                    store.vote(tok, i, ci.scripted_answer("honest", truth[i].truth, ci.DOT_CHOICES, 0.3, rng))
        _wait_metric(proj, "Votes counted", "30")
        _wait_metric(proj, "Still answering", "0")
        bars = _live_chart_text(proj)
        assert '"orange"' in bars and '"blue"' in bars, bars
        _shot(proj, "class_round_projector_votes", PROJECTOR)

        proj.get_by_role("button", name="Run EM on our votes").click()
        proj.get_by_role("button", name="Next half-step").wait_for()
        proj.get_by_role("button", name="Next half-step").click()
        wait_idle(proj)
        proj.get_by_role("button", name="Who will EM trust most?").click()
        proj.get_by_role("button", name="Run the step and show the answers").wait_for()
        proj.get_by_text("0 of 3 students have predicted").wait_for()
        _shot(proj, "class_round_projector_asked", PROJECTOR)

        picks = []
        for n, (_, ph) in enumerate(phones):
            ph.reload()  # a phone mid-item sees the question at its next tap or reload; a finished one presses Look
            ph.get_by_text("Predict:").wait_for()
            wait_idle(ph)
            ph.locator('[class*="st-key-student-predict-"] button').first.wait_for()
            options = [b.inner_text().strip() for b in ph.locator('[class*="st-key-student-predict-"] button').all()]
            assert len(options) >= 2, options
            picks.append(options[n % len(options)])
            ph.get_by_role("button", name=picks[-1], exact=True).click()
            ph.get_by_text("Your prediction:").wait_for()
            assert ph.evaluate(SMALL_TEXT) == []
        _shot(phones[1][1], "class_round_phone_predicted", PHONE)
        proj.get_by_text("3 of 3 students have predicted").wait_for()
        proj.get_by_role("button", name="Run the step and show the answers").click()
        proj.get_by_text("Most trusted").wait_for()
        _shot(proj, "class_round_projector_answer", PROJECTOR)
        answer = store.question(session.id, key)["answer"]

        for n, (_, ph) in enumerate(phones):
            if n == 0:
                ph.reload()
            else:
                ph.get_by_role("button", name="Look for the lecturer's question").click()
            want = "right!" if picks[n] == answer else "the answer was"
            ph.get_by_text(want).wait_for()
            assert_no_exception(ph)
        _shot(phones[2][1], "class_round_phone_answer", PHONE)

        proj.get_by_role("button", name="Done with this question").click()
        wait_idle(proj)
        proj.get_by_role("button", name="Reveal the roles").click()
        proj.get_by_text("Did EM find the careless students?").first.wait_for()
        proj.wait_for_function("() => document.querySelectorAll('.cl-live-chart').length >= 3")
        assert proj.locator('[data-testid="stPlotlyChart"]').count() == 0  # every changing chart is a live chart
        _shot(proj, "class_round_projector_reveal", PROJECTOR)
        last = phones[2][1]
        last.get_by_role("button", name="See what EM found out").click()
        last.get_by_text("What EM found out about you").wait_for()
        last.get_by_text("50% means a coin flip").wait_for()
        text = last.locator('[data-testid="stMain"]').inner_text()
        assert "thinks you were right" in text and "you were right" in text, text
        assert last.evaluate(SMALL_TEXT) == []
        _layout_fits_a_phone(last)
        _shot(last, "class_round_phone_reveal", PHONE)
        assert_no_exception(proj)
    finally:
        store.close()
        for ctx, _ in phones:
            ctx.close()
        proj_ctx.close()
