"""The Streamlit app under ``streamlit.testing.v1.AppTest``: pages load, the stepper moves the run as it should,
every method converges on every bundled dataset it applies to, and state survives method and page switches."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.engines.init import INITS
from crowdlab.io import safe
from crowdlab.io.samples import SAMPLES, load_sample
from crowdlab.models import applicable_models
from crowdlab.ui import state
from tests.app.helpers import chart, click, figures, ok

ROOT = Path(__file__).resolve().parents[2]
HOME = str(ROOT / "app.py")
STEP = str(ROOT / "pages" / "2_Step_through_EM.py")
STEP_PAGE = "pages/2_Step_through_EM.py"
LABEL = re.compile(r"iteration \d+, (after [EM]-step|initialisation)|majority vote")


def _step_page() -> AppTest:
    return ok(AppTest.from_file(STEP, default_timeout=30).run())


def _run(at: AppTest):
    return at.session_state[state.RUN]


# unlike helpers.iteration_label: also the "majority vote" heading, and the hashes are stripped after the match
def _label(at: AppTest) -> str:
    found = [m.value for m in at.markdown if LABEL.search(m.value)]
    assert len(found) == 1, found
    return found[0].lstrip("# ")


def test_home_loads_with_default_dataset_and_links():
    at = ok(AppTest.from_file(HOME, default_timeout=30).run())
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"
    assert at.session_state[state.DATA].n_items == 108
    assert at.selectbox(key="home.dataset").value == "bluebirds"
    assert any("Bluebirds" in s.value for s in at.subheader)
    assert any("items: **108**" in m.value for m in at.sidebar.markdown)
    # every lesson named under the Lessons link (it listed 3 of the 5)
    from crowdlab.teaching.lessons import LESSONS, short_title

    lessons_caption = next(c.value for c in at.caption if c.value.startswith("Guided lessons"))
    assert all(short_title(lesson) in lessons_caption for lesson in LESSONS.values())


def test_step_page_cold_start_defaults_to_dawid_skene_on_bluebirds():
    at = _step_page()
    run = _run(at)
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"
    assert at.selectbox(key=state.W_METHOD).value == "ds"
    assert len(at.selectbox(key=state.W_METHOD).options) == len(applicable_models(at.session_state[state.DATA]))
    assert run.model.info.key == "ds" and run.index == 0 and len(run.snapshots) == 1
    assert _label(at) == "iteration 0, initialisation"
    # at the start: E-step and Step possible, M-step / Back / Reset not
    disabled = {b.key: b.disabled for b in at.button}
    assert disabled == {
        "stepper.e_step": False,
        "stepper.m_step": True,
        "stepper.step": False,
        "stepper.run": False,
        "stepper.back": True,
        "stepper.reset": True,
        "stepper.next": False,
        "stepper.play": False,
    }
    assert not at.warning  # no monotonicity violation


def test_run_to_convergence_is_accelerated_em_to_cl_fits_fixed_point():
    """Run to convergence uses cl.fit's default, SQUAREM (issue 40): the same optimum as cl.fit, each accepted
    point a snapshot the position line calls accelerated."""
    import crowdlab as cl

    at = _step_page()
    click(at, "stepper.step")
    click(at, "stepper.run")
    run = _run(at)
    assert run.stop_reason == "converged" and run.acceleration is not None and run.current.accelerated
    ref = cl.fit(run.data, "ds")
    assert abs(run.last.objective - ref.last.objective) <= 1e-6 * abs(ref.last.objective)
    assert any("accelerated (SQUAREM, " in c.value for c in at.caption)
    click(at, "stepper.back")
    assert not run.current.accelerated and not any("accelerated (SQUAREM, " in c.value for c in at.caption)


def test_step_e_m_back_scrub_run_reset_move_the_run():
    at = _step_page()
    run = _run(at)
    click(at, "stepper.step")
    assert (run.index, run.current.kind, run.iteration) == (2, "M", 1)
    assert _label(at) == "iteration 1, after M-step"
    click(at, "stepper.e_step")
    assert (run.index, run.current.kind) == (3, "E")
    assert _label(at) == "iteration 2, after E-step"
    assert at.button(key="stepper.e_step").disabled and not at.button(key="stepper.m_step").disabled
    click(at, "stepper.m_step")
    assert (run.index, run.iteration) == (4, 2)
    assert _label(at) == "iteration 2, after M-step"
    click(at, "stepper.step")
    assert (run.index, run.iteration) == (6, 3)
    # Back: one half-step back, nothing recomputed
    n = len(run.snapshots)
    click(at, "stepper.back")
    assert (run.index, run.current.kind) == (5, "E") and len(run.snapshots) == n
    assert _label(at) == "iteration 3, after E-step"
    click(at, "stepper.back")
    assert (run.index, run.iteration) == (4, 2) and len(run.snapshots) == n
    assert _label(at) == "iteration 2, after M-step"
    # scrub to the E-step of iteration 2
    assert at.slider(key=state.W_SCRUB).value == 4
    ok(at.slider(key=state.W_SCRUB).set_value(3).run())
    assert run.index == 3 and _label(at) == "iteration 2, after E-step"
    assert at.slider(key=state.W_SCRUB).max == n - 1
    # Step from the middle reuses the stored snapshots
    click(at, "stepper.m_step")
    assert run.index == 4 and len(run.snapshots) == n
    # Run to convergence
    click(at, "stepper.run")
    assert run.converged and run.at_end and run.iteration > 3
    assert at.button(key="stepper.run").disabled
    assert any("converged" in c.value for c in at.caption)
    assert at.slider(key=state.W_SCRUB).value == run.index
    assert not run.violations and not at.warning
    # the accuracy against gold is tracked for every snapshot and EM beats majority vote on bluebirds
    cache = at.session_state[state.METRICS]
    assert cache["n"] == len(run.snapshots)
    acc = cache["values"]["accuracy"]
    assert len(acc) == len(run.snapshots) and acc[-1] > acc[0] + 0.05
    # Reset: back to the initialisation, same method
    run_id = at.session_state[state.RUN_ID]
    click(at, "stepper.reset")
    assert len(run.snapshots) == 1 and run.index == 0
    assert _label(at) == "iteration 0, initialisation"
    assert at.session_state[state.RUN_ID] == run_id
    assert at.button(key="stepper.reset").disabled


def test_method_change_resets_the_run_with_a_notice_shown_once():
    at = _step_page()
    click(at, "stepper.step")
    click(at, "stepper.step")
    old = _run(at)
    assert old.index == 4
    ok(at.selectbox(key=state.W_METHOD).set_value("one_coin").run())
    new = _run(at)
    assert new is not old and new.model.info.key == "one_coin" and new.index == 0
    assert [i.value for i in at.info] == [state.NOTICE_METHOD]
    assert at.session_state[state.CONFIG].method == "one_coin"
    # a prior change resets too; the next unrelated rerun no longer shows the notice
    ok(at.number_input(key=state.W_PRIOR).set_value(2.0).run())
    assert _run(at).model.prior == 2.0 and _run(at).index == 0
    click(at, "stepper.step")
    assert state.NOTICE_METHOD not in [i.value for i in at.info]
    # majority vote: one snapshot, every stepping button disabled
    ok(at.selectbox(key=state.W_METHOD).set_value("mv").run())
    assert all(b.disabled for b in at.button)
    assert _label(at).startswith("majority vote")
    # hard EM: its objective is the complete-data log-likelihood and it never decreases
    ok(at.selectbox(key=state.W_METHOD).set_value("ds").run())
    assert "bound" in _trace_metas(at, "stepper.objective_chart")  # soft EM: the bound L(q, θ) beside it
    ok(at.checkbox(key=state.W_HARD).check().run())
    click(at, "stepper.run")
    run = _run(at)
    assert run.model.hard and run.converged and not run.violations
    # one curve: hard EM's bound is its objective (a second, identical dashed curve said nothing)
    assert "bound" not in _trace_metas(at, "stepper.objective_chart")
    assert "objective" in _trace_metas(at, "stepper.objective_chart")


def _trace_metas(at: AppTest, key: str) -> list[str]:
    spec = chart(at, key)
    assert spec is not None, f"no chart {key}"
    return [t.get("meta") for t in spec["data"]]


def test_state_survives_page_switches():
    at = ok(AppTest.from_file(HOME, default_timeout=30).run())
    ok(at.selectbox(key="home.dataset").set_value("simulated").run())
    assert at.session_state[state.DATA_ID] == "sample:simulated"
    assert [i.value for i in at.info] == [state.loaded_notice(at.session_state[state.DATA])]
    ok(at.switch_page(STEP_PAGE).run())
    assert any("Simulated crowd" in m.value for m in at.sidebar.markdown)
    ok(at.selectbox(key=state.W_METHOD).set_value("one_coin").run())
    click(at, "stepper.step")
    click(at, "stepper.step")
    click(at, "stepper.e_step")
    run = _run(at)
    assert run.index == 5
    ok(at.switch_page("app.py").run())
    assert at.selectbox(key="home.dataset").value == "simulated"
    ok(at.switch_page(STEP_PAGE).run())
    assert _run(at) is run and run.index == 5
    assert at.selectbox(key=state.W_METHOD).value == "one_coin"  # widget restored from the plain key
    assert _label(at) == "iteration 3, after E-step"
    # a dataset without a method's applicability falls back to one that applies (affect: scores only)
    ok(at.switch_page("app.py").run())
    ok(at.selectbox(key="home.dataset").set_value("affect").run())
    assert at.session_state[state.CONFIG].method == "scores"
    ok(at.switch_page(STEP_PAGE).run())
    assert at.selectbox(key=state.W_METHOD).value == "scores"


CASES = [(key, method) for key in SAMPLES for method in applicable_models(load_sample(key))]


@pytest.mark.parametrize("sample", list(SAMPLES))
def test_every_method_runs_to_convergence_on_every_dataset(sample):
    at = ok(AppTest.from_file(HOME, default_timeout=30).run())
    if sample != "bluebirds":
        ok(at.selectbox(key="home.dataset").set_value(sample).run())
    ok(at.switch_page(STEP_PAGE).run())
    methods = [m for s, m in CASES if s == sample]
    assert methods, sample
    for method in methods:
        ok(at.selectbox(key=state.W_METHOD).set_value(method).run())
        run = _run(at)
        assert run.model.info.key == method
        if method == "mv":
            assert not run.iterative and at.button(key="stepper.run").disabled
            continue
        click(at, "stepper.run")
        run = _run(at)
        assert run.stop_reason in ("converged", "stalled", "max_iter"), (sample, method, run.stop_reason)
        assert run.at_end and run.iteration >= 1
        assert not run.violations, (sample, method, run.violations)
        assert not at.warning
        assert _label(at) == f"iteration {run.iteration}, after M-step"
        assert len(figures(at)) >= 2


def test_a_violation_is_shown_as_a_warning():
    at = _step_page()
    click(at, "stepper.step")
    _run(at).violations.append("M-step to snapshot 2: objective fell by 0.5")
    ok(at.run())
    assert len(at.warning) == 1 and "objective fell by 0.5" in at.warning[0].value


def test_majority_vote_and_scores_panels():
    at = ok(AppTest.from_file(HOME, default_timeout=30).run())
    ok(at.switch_page(STEP_PAGE).run())
    ok(at.selectbox(key=state.W_METHOD).set_value("mv").run())
    # the Posterior tab's heatmap only: no objective to draw
    assert len(figures(at)) == 1
    assert [m.label for m in at.metric] == ["accuracy", "macro F"]
    assert float(at.metric[0].value) == pytest.approx(0.75, abs=0.02)  # bluebirds' majority vote
    ok(at.switch_page("app.py").run())
    ok(at.selectbox(key="home.dataset").set_value("affect").run())
    ok(at.switch_page(STEP_PAGE).run())
    # the scores model's posterior is per annotator: bars of P(good) and the item means, no item table to order
    assert not at.radio and len(figures(at)) == 4
    click(at, "stepper.step")
    assert any("Pearson r now" in c.value for c in at.caption)


def test_moment_matching_start_on_the_step_page_and_a_failed_start_is_an_error(monkeypatch):
    at = _step_page()
    assert INITS["moments"] in at.selectbox(key=state.W_INIT).options
    ok(at.selectbox(key=state.W_INIT).set_value("moments").run())
    run = _run(at)
    assert run.init == "moments" and run.next_kind == "M" and run.start_description.startswith("Moment matching")
    click(at, "stepper.run")
    assert run.converged and not run.violations
    assert at.session_state[state.METRICS]["values"]["accuracy"][-1] > 0.85  # bluebirds: as good as from MV
    # a method without a moment-matched start: the start falls back to majority vote, the option goes away
    ok(at.selectbox(key=state.W_METHOD).set_value("mv").run())
    assert at.session_state[state.CONFIG].init == "majority"
    assert INITS["moments"] not in at.selectbox(key=state.W_INIT).options
    ok(at.selectbox(key=state.W_METHOD).set_value("one_coin").run())
    ok(at.selectbox(key=state.W_INIT).set_value("moments").run())
    assert _run(at).init == "moments"
    # GLAD, MACE and IBCC start from Dawid-Skene's posterior at the moment estimates
    for method in ("glad", "mace", "mace_vb", "ibcc"):
        ok(at.selectbox(key=state.W_METHOD).set_value(method).run())
        assert at.session_state[state.CONFIG].init == "moments"
        run = _run(at)
        assert run.init == "moments" and run.start_description.endswith(
            "Dawid-Skene's posterior at the moment estimates"
        )
        click(at, "stepper.step")
        assert not run.violations and math.isfinite(run.current.objective)

    # the optimiser failing: a message on the page, no traceback
    def fail(*args, **kwargs):
        raise RuntimeError("the optimiser did not converge")

    monkeypatch.setattr("crowdlab.engines.init._moment_params", fail)
    at.selectbox(key=state.W_METHOD).set_value("two_coin").run()  # the start (moments) is kept and now fails
    assert not at.exception and at.session_state[state.RUN] is None
    assert at.session_state[state.CONFIG] == state.MethodConfig(method="two_coin", init="moments")
    assert [e.value for e in at.error] == [
        safe.md("The run could not start (RuntimeError: the optimiser did not converge). Try another start or method.")
    ]


def test_sidebar_navigation_reads_home_then_every_page_in_order():
    from crowdlab.ui.frame import NAV

    pages = sorted((ROOT / "pages").glob("*.py"), key=lambda f: int(f.stem.split("_")[0]))
    assert [path for path, _, _ in NAV] == ["app.py", *(f"pages/{f.name}" for f in pages)]
    labels = [label for _, label, _ in NAV]
    assert labels[:4] == ["Home", "Lessons", "Data", "Step through EM"] and {"Sequences", "Networks"} <= set(labels)
    at = ok(AppTest.from_file(HOME, default_timeout=30).run())
    assert [link.proto.label for link in at.sidebar.get("page_link")] == labels
    main = [link.proto.label for link in at.main.get("page_link")]
    assert {"Sequences", "Networks"} <= set(main)


def test_the_notice_after_a_new_dataset_says_what_was_loaded():
    """After Load the notice said only "Dataset changed: the run was reset."; it names the dataset, its items,
    workers, labels and how many items have gold."""
    at = ok(AppTest.from_file(HOME, default_timeout=30).run())
    ok(at.selectbox(key="home.dataset").set_value("simulated").run())
    data = at.session_state[state.DATA]
    (text,) = [i.value for i in at.info]
    assert text.startswith("Dataset changed: loaded") and "the run was reset" not in text
    for n in (data.n_items, data.n_workers, data.n_obs):
        assert f"{n:,}" in text
    gold = int(data.gold_mask.sum())
    assert f"gold for {gold:,} of them" in text if gold else "no gold" in text
