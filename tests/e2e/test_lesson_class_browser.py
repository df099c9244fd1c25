"""Ask the class during a lesson, in a real browser: the lecturer starts a class on the Class page, opens the Lessons
page in presenter mode at 1024 x 768 (a new page load: the Class page's cookie brings the lecturer back), asks the
class before the bluebirds' M-step, a phone (375 x 667) predicts on the Join page and two more through the store;
the M-step runs and the class's predictions, the right answer and the lesson's own outcome are all on the first
screen. Screenshots: tests/e2e/artifacts/lesson_class_*.png."""

from __future__ import annotations

import re

import pytest

from crowdlab.classroom.store import ClassStore, Limits
from crowdlab.teaching import lessons
from tests.e2e.helpers import ARTIFACTS, assert_no_exception, streamlit_server, wait_idle, wait_page

pytestmark = pytest.mark.e2e

PROJECTOR = {"width": 1024, "height": 768}
PHONE = {"width": 375, "height": 667}
M_STEP = [s.action for s in lessons.EM_LESSON.steps].index("m_step", 4)  # the bluebirds' M-step (Dawid-Skene)
# the bottoms of what the reveal must show on the first screen (null: not on the page)
BOTTOMS = """
() => { const main = document.querySelector('[data-testid="stMain"]');
  const bottom = e => e && e.offsetParent !== null ? Math.round(e.getBoundingClientRect().bottom) : null;
  const bars = Array.from(main.querySelectorAll('.cl-live-chart')).find(e => e.textContent.includes("predictions"));
  const said = Array.from(main.querySelectorAll('[data-testid="stAlert"]'))
    .find(e => e.innerText.includes("predicted it"));
  return {outcome: bottom(main.querySelector('.st-key-lesson_outcome')), bars: bottom(bars), said: bottom(said),
          next: bottom(main.querySelector('.st-key-lesson-next button'))}; }
"""


@pytest.fixture(scope="module")
def class_server(tmp_path_factory):
    data = tmp_path_factory.mktemp("lesson_class_data")
    with streamlit_server({"CROWDLAB_DATA_DIR": str(data)}, log_name="streamlit_lesson_class.log") as url:
        yield url, data / "class.db"


def _on_first_screen(page, names) -> None:
    got = page.evaluate(BOTTOMS)
    for name in names:
        assert got[name] is not None and got[name] <= PROJECTOR["height"], got


def test_a_lesson_asks_the_class_and_reveals_beside_the_step(class_server, browser):
    url, db = class_server
    proj_ctx = browser.new_context(viewport=PROJECTOR)
    phone_ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    proj, phone = proj_ctx.new_page(), phone_ctx.new_page()
    for pg in (proj, phone):
        pg.set_default_timeout(30_000)
    store = ClassStore(str(db), limits=Limits(votes_per_window=1000))
    try:
        proj.goto(url + "/Class?present=1")
        proj.get_by_role("button", name="Start the class session").click()
        proj.get_by_text("Join code:").first.wait_for()
        code = re.search(r"Join code: ([A-Z0-9]{6})", proj.locator('[data-testid="stMain"]').inner_text()).group(1)
        proj.get_by_role("button", name="I have the key").click()
        wait_idle(proj)
        phone.goto(f"{url}/Join?code={code}")
        phone.get_by_role("button", name="Join", exact=True).click()
        phone.wait_for_url(re.compile(r"[?&]t="))
        tokens = [store.join(code, f"Phone {k}", client=f"10.0.0.{k}", browser=f"browser-{k:02d}-xxxxxxxxxxxx")[1]
                  for k in range(2)]  # fmt: skip

        proj.goto(url + "/Lessons?present=1")  # a new page load: the lecturer comes back by the Class page's cookie
        wait_page(proj)
        main = proj.locator('[data-testid="stMain"]')
        for _ in range(M_STEP):
            main.locator(".st-key-lesson-action button").click()
            wait_idle(proj)
            proj.wait_for_timeout(450)  # the lesson's guard against a double click on Next
            main.locator(".st-key-lesson-next button").click()
            wait_idle(proj)
        main.get_by_text("M-step: count again").wait_for()
        main.get_by_role("button", name="Ask: who is trusted most?").click()
        main.get_by_text("0 of 3 students have predicted").wait_for()

        phone.reload()
        phone.get_by_text("Which worker will Dawid-Skene trust most after the next M-step?").wait_for()
        options = phone.locator('[class*="st-key-student-predict-"] button')
        options.first.wait_for()
        pick = options.first.inner_text().strip()
        options.first.click()
        phone.get_by_text("Your prediction:").wait_for()
        phone.screenshot(path=str(ARTIFACTS / "lesson_class_phone.png"))
        q = store.question_for(tokens[0])
        for k, token in enumerate(tokens):
            store.predict(token, q["id"], q["options"][(k + 1) % len(q["options"])])
        main.get_by_text("3 of 3 students have predicted").wait_for()
        proj.wait_for_timeout(800)  # the bars' transition
        _on_first_screen(proj, ["bars", "next"])
        proj.screenshot(path=str(ARTIFACTS / "lesson_class_asked.png"))

        main.locator(".st-key-lesson-action button").click()  # the M-step runs and the answer is revealed
        main.get_by_text("Most trusted").wait_for()
        proj.wait_for_timeout(800)
        _on_first_screen(proj, ["outcome", "bars", "said", "next"])
        proj.screenshot(path=str(ARTIFACTS / "lesson_class_reveal.png"))
        answer = store.question_for(tokens[0])["answer"]
        assert f"Most trusted: {answer}" in main.inner_text()
        phone.reload()  # a phone mid-item sees the answer at its next tap or reload
        phone.get_by_text("right!" if pick == answer else "the answer was").wait_for()
        assert_no_exception(proj)
        assert_no_exception(phone)
    finally:
        store.close()
        proj_ctx.close()
        phone_ctx.close()
