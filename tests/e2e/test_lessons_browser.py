"""The Lessons page in a real browser at the projector's 1024 x 768: the first steps of the EM lecture are clicked
through (action, outcome, Next), the formula is typeset, and nothing raises."""

from __future__ import annotations

from tests.e2e.helpers import assert_no_exception, screenshot, wait_idle, wait_page


def _main(page):
    return page.locator('[data-testid="stMain"]')


def test_lesson_first_steps_at_projector_size(server, page):
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(server + "/Lessons")
    wait_page(page)
    main = _main(page)
    assert main.get_by_text("step 1 of 15").count() == 1
    assert main.locator(".katex").count() >= 1  # the formula is typeset
    action = main.get_by_role("button", name="Start: assume everyone is good")
    assert action.is_visible() and action.bounding_box()["y"] + action.bounding_box()["height"] <= 768
    action.click()
    wait_idle(page)
    assert_no_exception(page)
    main.locator('[data-testid="stAlertContentSuccess"]').get_by_text("correlation with the true means").wait_for()
    main.get_by_role("button", name="Next").click()
    wait_idle(page)
    main.get_by_text("step 2 of 15").wait_for()
    main.get_by_role("button", name="E-step").click()
    wait_idle(page)
    assert_no_exception(page)
    main.locator('[data-testid="stAlertContentSuccess"]').get_by_text("judged bad").wait_for()
    assert main.locator(".js-plotly-plot").count() == 1
    screenshot(page, "lessons_e_step")


def test_lesson_keyboard_shortcuts_drive_the_lessons_run(server, page):
    """The stepper's keys work in the lesson too (its free controls are the one stepper): → moves the lesson's run
    one half-step (the lesson then says the run was moved), ← moves it back one half-step."""
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(server + "/Lessons")
    wait_page(page)
    main = _main(page)
    main.get_by_role("button", name="Start: assume everyone is good").click()
    wait_idle(page)
    main.locator('[data-testid="stAlertContentSuccess"]').wait_for()
    main.get_by_text("iteration 0, initialisation").wait_for(state="attached")  # in the (closed) free controls
    main.locator("h1").first.click()  # focus the page, not an input
    page.keyboard.press("ArrowRight")
    wait_idle(page)
    main.get_by_text("The run was moved with the controls below").wait_for()
    main.get_by_text("iteration 1, after E-step").wait_for(state="attached")
    page.keyboard.press("ArrowLeft")
    wait_idle(page)
    main.get_by_text("iteration 0, initialisation").wait_for(state="attached")
    main.get_by_text("iteration 1, after E-step").wait_for(state="detached")
    assert_no_exception(page)
