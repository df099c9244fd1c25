"""Every wait over half a second says what is happening, with estimates from the measured speed (issue 26, section
2): the words of :mod:`crowdlab.ui.progress`, and the plumbing from the engines' per-iteration callback through
``fit`` and ``compare_methods`` to the bars of the Compare, Step and Sequences pages."""

from __future__ import annotations

import pytest

from crowdlab.analysis.compare import compare_methods
from crowdlab.engines.fit import fit
from crowdlab.io.samples import load_sample
from crowdlab.ui import lab, sequences_page
from crowdlab.ui.progress import MethodsPace, Pace, pace, seconds


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_seconds_in_words():
    assert [seconds(s) for s in (0.42, 12.4, 185)] == ["0.4 s", "12 s", "3 min 05 s"]


def test_pace_says_done_speed_and_time_left_from_the_measured_speed():
    assert pace(37, 500, 37 * 0.2) == "iteration 37 of at most 500 · 0.2 s each · at most 1 min 33 s left"
    assert pace(400, 1000, 2.0, "update", bound=False) == "update 400 of 1,000 · 200 updates a second · 3.0 s left"
    assert pace(0, 500, 1.5) == "iteration 0 · 1.5 s so far"  # nothing measured yet: no estimate
    assert pace(12, None, 6.0) == "iteration 12 · 0.5 s each · 6.0 s so far"  # no total: no time left claimed


def test_pace_callback_updates_a_bar_at_most_ten_times_a_second_and_at_once_for_the_first():
    clock, shown = Clock(), []
    progress = Pace(lambda f, text: shown.append((f, text)), "Running EM", clock=clock)
    clock.t += 2.0
    progress(1, 500)  # a slow first iteration is shown at once
    clock.t += 0.05
    progress(2, 500)  # too soon after: skipped
    clock.t += 0.2
    progress(3, 500)
    assert [f for f, _ in shown] == [1 / 500, 3 / 500]
    assert shown[0][1] == "Running EM: iteration 1 of at most 500 · 2.0 s each · at most 16 min 38 s left"
    assert shown[1][1].startswith("Running EM: iteration 3 of at most 500 · 0.8 s each")


def test_methods_pace_names_the_method_its_iteration_and_the_time():
    clock, shown = Clock(), []
    paced = MethodsPace(lambda f, text: shown.append((f, text)), clock=clock)
    paced.method(3, 11, "GLAD")
    assert shown[-1] == (3 / 11, "GLAD (4 of 11) · 0.0 s in all")
    clock.t += 4.0
    paced.iteration(20, 10_000)
    assert shown[-1] == (3 / 11, "GLAD (4 of 11): iteration 20 · 0.2 s each · 4.0 s on it, 4.0 s in all")
    clock.t += 0.01
    paced.iteration(21, 10_000)  # throttled
    assert len(shown) == 2
    paced.method(11, 11, "done")
    assert shown[-1] == (1.0, "done")


def test_fit_reports_every_iteration():
    data = load_sample("bluebirds")
    seen = []
    run = fit(data, "ds", progress=lambda it, most: seen.append((it, most)), accelerate=False)
    assert seen == [(i, 10_000) for i in range(1, run.last.iteration + 1)]
    seen.clear()  # accelerated EM: after every cycle, counting EM-map evaluations
    run = fit(data, "ds", progress=lambda it, most: seen.append((it, most)))
    its = [it for it, _ in seen]
    assert its == sorted(set(its)) and its[-1] == run.last.iteration and all(m == 10_000 for _, m in seen)


def test_compare_methods_reports_inside_each_iterative_fit():
    data = load_sample("bluebirds")
    events = []
    comparison = compare_methods(
        data,
        methods=["ds", "glad"],
        progress=lambda i, n, title: events.append(("method", title)),
        iteration_progress=lambda it, most: events.append(("iteration", it)),
    )
    starts = [k for k, e in enumerate(events) if e[0] == "method"]
    assert [events[k][1] for k in starts] == ["Dawid-Skene", "GLAD (ability and difficulty)", "done"]
    for run, (a, b) in zip(comparison.runs.values(), zip(starts, starts[1:])):
        its = [e[1] for e in events[a + 1 : b]]  # after every accelerated cycle (EM-map evaluations so far)
        assert its and its == sorted(set(its)) and its[-1] == run.last.iteration


@pytest.mark.parametrize("unit, bound", [("iteration", True), ("update", False)])
def test_the_step_pages_bar_says_the_pace(unit, bound):
    shown = []

    class Box:
        def progress(self, fraction, text):
            shown.append(text)
            return self

    _, update = lab.progress_bar(Box(), unit)
    update(5, 500)
    assert shown[-1].startswith(f"Running EM: {unit} 5 of {'at most ' if bound else ''}500 · ")
    assert shown[-1].endswith(" left")


def test_the_ner_caption_states_the_measured_time_not_a_promise(monkeypatch):
    monkeypatch.setattr(sequences_page, "MEASURED", {})
    before = sequences_page.ner_timing()
    assert "about a second" not in before and "a few seconds" not in before and "took" not in before
    monkeypatch.setattr(sequences_page, "MEASURED", {"sample:ner": 23.4})
    assert "(it took 23 s the last time here)" in sequences_page.ner_timing()
