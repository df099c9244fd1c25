"""Issue 38 section 4, "one method, one answer": the Step page and Export use the one iteration limit of cl.fit,
Compare and the CLI (crowdlab.engines.limits.MAX_ITER), and Export says where a fitted run stopped."""

from __future__ import annotations

import argparse

import crowdlab as cl
from crowdlab.engines.limits import MAX_ITER
from crowdlab.io.samples import load_sample
from crowdlab.ui import export_page, state
from tests.app.helpers import click, ok
from tests.app.test_step_lab import _method, _open


def test_every_front_door_has_the_one_limit():
    import inspect

    from crowdlab.cli import build_parser
    from crowdlab.engines import distributed, stream
    from crowdlab.frames import _EM

    assert MAX_ITER == 10_000
    assert state.MethodConfig().max_iter == MAX_ITER  # the Step page and Export (500 before)
    assert inspect.signature(cl.fit).parameters["max_iter"].default == MAX_ITER
    assert inspect.signature(stream.fit_file).parameters["max_iter"].default == MAX_ITER
    assert inspect.signature(distributed.fit).parameters["max_iter"].default == MAX_ITER
    assert _EM.FIT_DEFAULTS["max_iter"] == MAX_ITER
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sub.choices["fit"].get_default("max_iter") == MAX_ITER


def test_the_step_page_keeps_a_window_of_posteriors_when_all_would_not_fit():
    small = load_sample("bluebirds")
    assert state.step_posteriors(small, MAX_ITER) is None  # 35 MB for 20,001 half-steps: every one kept
    # TREC's size (20,232 items x 4 classes) without reading it: the rule reads the shape only
    fake = type("Shape", (), {"n_items": 20_232, "n_classes": 4, "n_obs": 98_453})()
    assert state.step_posteriors(fake, MAX_ITER) == 8
    assert state.step_posteriors(fake, 100) is None  # 130 MB: kept


def test_export_says_a_fitted_run_stopped_at_the_limit():
    at = _method(_open("bluebirds"), "ds")
    ok(at.number_input(key=state.W_MAX_ITER).set_value(3).run())
    at = ok(at.switch_page("pages/5_Export.py").run())
    click(at, "export.fit")
    run = at.session_state[export_page.EXPORT_RUN]["run"]
    assert run.stop_reason == "max_iter" and not run.converged
    said = [i.value for i in at.info if "Exporting a run fitted" in i.value]
    assert said and "not converged" in said[0] and "iteration limit (3 iterations)" in said[0]
    assert "fitted to convergence" not in said[0]
    at = ok(at.switch_page("pages/2_Step_through_EM.py").run())
    ok(at.number_input(key=state.W_MAX_ITER).set_value(MAX_ITER).run())
    at = ok(at.switch_page("pages/5_Export.py").run())
    click(at, "export.fit")
    said = [i.value for i in at.info if "Exporting a run fitted" in i.value]
    assert said and "fitted to convergence" in said[0] and "converged." in said[0] and "not converged" not in said[0]


def test_compare_page_runs_the_chosen_methods():
    """Issue 38 section 4: Compare ran all twelve methods (321 s on TREC); the analyst chooses which."""
    from crowdlab.ui import compare_page, method_chooser

    at = _open("bluebirds")
    at = ok(at.switch_page("pages/3_Compare_methods.py").run())
    assert at.button(key="compare.run").label == "Run all methods"
    ok(at.multiselect(key=method_chooser.METHODS).set_value(["ds", "glad"]).run())
    ok(at.checkbox(key=method_chooser.BASELINES).uncheck().run())
    assert at.button(key="compare.run").label.startswith("Run 2 of ")
    click(at, "compare.run")
    comparison = at.session_state[compare_page.RESULTS][(at.session_state[state.DATA_ID], 0.0)]
    assert list(comparison.runs) == ["ds", "glad"] and not comparison.baselines
    at = ok(at.switch_page("pages/2_Step_through_EM.py").run())  # the choice survives a page switch
    at = ok(at.switch_page("pages/3_Compare_methods.py").run())
    assert at.multiselect(key=method_chooser.METHODS).value == ["ds", "glad"]
    ok(at.multiselect(key=method_chooser.METHODS).set_value([]).run())
    assert at.button(key="compare.run").disabled


def test_the_step_page_says_which_ebcc_split_it_steps():
    from crowdlab.ui import method_options

    at = _method(_open("bluebirds"), "ebcc")
    assert any(c.value == method_options.EBCC_STEP_NOTE for c in at.caption)
