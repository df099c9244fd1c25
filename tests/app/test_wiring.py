"""The core's issue-10 features in the app (AppTest): worker reports (Step tab and Data page), the Convergence tab
and the stop reason, majority-vote ties, the scores model's degenerate optimum and its floor on sigma,
semi-supervised EM ("Reveal gold") and the non-EM baselines on the Compare page."""

from __future__ import annotations

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.analysis.reports import krippendorff_alpha, worker_report
from crowdlab.engines.run import STOP_REASONS
from crowdlab.io.samples import load_sample
from crowdlab.ui import lab, reports_view
from tests.app.helpers import arr, click, ok, trace
from tests.app.test_step_lab import _chart, _method, _open, _run, _tab

DATA_PAGE = "pages/1_Data.py"


def _table(at, column: str = "spammer_score"):
    """The one table on the page with ``column`` (keyed dataframes carry no id in AppTest)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


# ---------------------------------------------------------------------------- worker reports
def test_step_worker_report_is_the_cursors_and_sorted_by_spammer_score():
    at = _method(_open("bluebirds"), "ds")
    click(at, "stepper.run")
    _tab(at, "Workers")
    run = _run(at)
    want = worker_report(run)
    got = _table(at)
    assert len(got) == run.data.n_workers == 39
    assert np.all(np.diff(got["spammer_score"].to_numpy()) >= 0)  # spammers first
    by = want.set_index("worker")
    assert got["accuracy"].to_numpy() == pytest.approx(by.loc[got["worker"], "accuracy"].to_numpy())
    rep = want.attrs["dependence"]  # the report's dependence check: its four figures follow alpha
    e = rep.effective
    assert [m.value for m in at.metric] == [
        f"{krippendorff_alpha(run.data):.3f}",
        f"{rep.n_flagged} of {rep.n_tested}",
        f"{e['eigen']:.1f} of {e['n_workers']}",
        f"{e['kish']:.1f}",
        f"{e['weighted']:.1f}",
    ]
    assert any("near 0: a spammer" in c.value.lower() for c in at.caption)
    assert any("Σ_k π_k Γ(k, k)" in c.value for c in at.caption)
    # sort by accuracy instead; back one step: the report follows the cursor
    ok(at.radio(key="stepper.report.sort").set_value(reports_view.SORTS[1]).run())
    assert np.all(np.diff(_table(at)["accuracy"].to_numpy()) >= 0)
    click(at, "stepper.back")
    click(at, "stepper.back")
    run = _run(at)
    earlier = worker_report(run).set_index("worker")
    got = _table(at)
    assert got["accuracy"].to_numpy() == pytest.approx(earlier.loc[got["worker"], "accuracy"].to_numpy())


def test_glads_worker_report_says_its_accuracy_is_over_the_workers_items():
    at = _method(_open("bluebirds"), "glad")
    click(at, "stepper.run")
    _tab(at, "Workers")
    run = _run(at)
    got = _table(at).set_index("worker")
    want = worker_report(run).set_index("worker")
    np.testing.assert_allclose(got.loc[want.index, "accuracy"], want["accuracy"], rtol=1e-12)
    assert any("the mean of σ(α_j β_i) over the items the worker labelled" in c.value for c in at.caption)
    assert not any("Σ_k π_k Γ(k, k)" in c.value for c in at.caption)


@pytest.mark.parametrize("method", ["mv", "scores"])
def test_step_worker_report_says_why_not(method):
    at = _method(_open("affect" if method == "scores" else "bluebirds"), method)
    _tab(at, "Workers")
    assert any("needs a class model" in i.value for i in at.info)
    assert not [d for d in at.dataframe if "spammer_score" in d.value.columns]  # the Workers tab's own tables stay


def test_data_page_worker_report_and_alpha():
    at = ok(_open("dogs").switch_page(DATA_PAGE).run())
    data = load_sample("dogs")
    got = _table(at)
    assert len(got) == data.n_workers
    assert np.all(np.diff(got["spammer_score"].to_numpy()) >= 0)
    assert f"{krippendorff_alpha(data):.3f}" in [m.value for m in at.metric]
    assert any("Dawid-Skene fitted from majority vote" in c.value for c in at.caption)


def test_worker_report_table_is_as_tall_as_its_rows(monkeypatch):
    """A fixed 320 px drew ~5 empty bordered rows under a 3-worker report; the height follows the rows now: the
    table's own ("content"), never px per row, which cut the last row in presenter mode's taller rows."""
    import streamlit as st

    heights, dataframe = {}, st.dataframe

    def spy(*args, **kwargs):
        heights[kwargs.get("key")] = kwargs.get("height")
        return dataframe(*args, **kwargs)

    monkeypatch.setattr(st, "dataframe", spy)
    at = ok(_open("patients").switch_page(DATA_PAGE).run())  # 5 workers
    key = [k for k in heights if k and k.endswith("report.table")]
    assert len(key) == 1 and len(_table(at)) == 5
    assert heights[key[0]] == lab.table_height(5, 320) == "content"
    assert heights[key[0].replace("table", "confusions")] == "content"
    assert lab.table_height(8, 320) == "content" and lab.table_height(9, 320) == 320
    assert lab.table_height(39, 320) == 320  # a long report scrolls inside its box


# ---------------------------------------------------------------------------- convergence
def test_convergence_tab_plots_the_trace_on_a_fixed_range_and_says_why_it_stopped():
    at = _method(_open("bluebirds"), "ds")
    _tab(at, "Stopping")
    assert any("Not converged yet" in m.value for m in at.markdown)
    click(at, "stepper.run")
    run = _run(at)
    assert run.stop_reason in STOP_REASONS
    convergence = run.convergence_trace()
    spec = _chart(at, "stepper.convergence_chart")
    gain = trace(spec, "gain")
    # Run to convergence accelerates (SQUAREM): one point per accepted cycle, at its EM-map evaluation count
    np.testing.assert_array_equal(arr(gain["x"]), convergence["iteration"])
    assert len(convergence["gain"]) == len(convergence["iteration"])
    assert convergence["iteration"][-1] == run.last.iteration
    assert arr(gain["y"])[0] == pytest.approx(np.log10(convergence["gain"][0]))
    assert trace(spec, "param_change") is not None
    fixed = spec["layout"]["yaxis"]["range"]
    assert any(STOP_REASONS[run.stop_reason] in m.value for m in at.markdown)
    assert any("284 nats" in c.value for c in at.caption)
    for _ in range(3):  # scrubbing back moves the cursor line, never the y axis
        click(at, "stepper.back")
        spec = _chart(at, "stepper.convergence_chart")
        assert spec["layout"]["yaxis"]["range"] == fixed
    line = [s for s in spec["layout"]["shapes"] if s["name"] == "current"][0]
    assert line["x0"] == _run(at).current.iteration


def test_hard_em_stopping_tab_says_it_reached_an_exact_fixed_point():
    """Hard EM converges in a few iterations with a parameter change of exactly 0 (no label changed): the tab says
    so instead of "contracting ... 10 iterations in a row", which the audit found contradicted the chart."""
    at = _method(_open("bluebirds"), "ds")
    ok(at.checkbox(key="stepper.hard").check().run())
    _tab(at, "Stopping")
    click(at, "stepper.run")
    run = _run(at)
    assert run.model.hard and run.stop_reason == "converged" and run.last.iteration < 10
    assert run.last.param_change == 0.0
    assert any("exact fixed point" in m.value for m in at.markdown)
    assert not any(STOP_REASONS["converged"] in m.value for m in at.markdown)
    assert any("Hard EM stops differently" in c.value for c in at.caption)
    ok(at.checkbox(key="stepper.hard").uncheck().run())  # soft EM: the general reason, no hard-EM note
    click(at, "stepper.run")
    assert any(STOP_REASONS["converged"] in m.value for m in at.markdown)
    assert not any("Hard EM stops differently" in c.value for c in at.caption)


def test_one_coin_collapsed_class_prior_is_explained_above_the_tabs():
    """One-coin on bluebirds ends at 0.583 (majority vote 0.759) with pi = (0.972, 0.028): the audit found no word
    on the page about why. The notice names the class, the live numbers and the remedy; Dawid-Skene has none."""
    at = _method(_open("bluebirds"), "one_coin")
    assert not any("class prior has collapsed" in i.value for i in at.info)  # the start: majority vote's prior
    click(at, "stepper.run")
    said = [i.value for i in at.info if "class prior has collapsed" in i.value]
    assert len(said) == 1, [i.value for i in at.info]
    assert "π = 0.028 for class 1" in said[0] and "30% of the items" in said[0]
    assert "Accuracy against gold: 0.583, against majority vote's 0.759" in said[0]
    assert "one-coin's errors cannot depend on the true class" in said[0] and "Dawid-Skene" in said[0]
    at = _method(at, "ds")
    click(at, "stepper.run")
    assert not any("class prior has collapsed" in i.value for i in at.info)


# ---------------------------------------------------------------------------- majority-vote ties
def test_majority_vote_ties_rule_count_marks_and_export():
    from crowdlab.models.majority import majority_labels, tied_items
    from crowdlab.plots.matrices import TIED_MARK
    from crowdlab.ui import state

    at = _method(_open("rte"), "mv")
    data = _run(at).data
    n_tied = int(tied_items(data).sum())
    assert n_tied == 65
    assert any(f"{n_tied} of 800 items are tied" in m.value for m in at.markdown)
    from crowdlab.ui import panels

    ok(at.radio(key=panels.W_ORDER).set_value(panels.ORDER_UNCERTAIN).run())
    ticks = _chart(at, "stepper.posterior_chart")["layout"]["yaxis"]["ticktext"]
    assert all(t.endswith(TIED_MARK) for t in ticks)  # most uncertain first: the 25 rows of page 1 are all tied
    assert any(f"{n_tied} items in all" in c.value for c in at.caption)
    labels = {}
    for rule in ("random", "first", "frequent"):
        ok(at.selectbox(key=state.W_TIE_BREAK).set_value(rule).run())
        run = _run(at)
        assert run.model.tie_break == rule
        labels[rule] = run.labels()
        assert np.array_equal(labels[rule], majority_labels(data, rule, 0))
    untied = ~tied_items(data)
    assert np.array_equal(labels["random"][untied], labels["frequent"][untied])
    assert not np.array_equal(labels["random"], labels["frequent"])  # the rule decides the tied items
    # the Export page's posterior CSV flags them (and the majority-vote labels follow the rule)
    ok(at.selectbox(key=state.W_TIE_BREAK).set_value("first").run())
    at = ok(at.switch_page("pages/5_Export.py").run())
    from crowdlab.ui import export_page

    post = export_page.export_files(_run(at), "")["posteriors.csv"]
    import io

    import pandas as pd

    frame = pd.read_csv(io.BytesIO(post))
    assert frame["mv_tied"].sum() == n_tied
    assert list(frame["label"].astype(str)) == [str(data.class_names[k]) for k in majority_labels(data, "first")]


def test_mv_on_a_set_without_ties_says_so():
    at = _method(_open("bluebirds"), "mv")
    assert any("No tied item" in m.value for m in at.markdown)


# ---------------------------------------------------------------------------- semi-supervised EM
def test_reveal_gold_fixes_items_and_changes_the_workers():
    from crowdlab.ui import state

    at = _method(_open("bluebirds"), "ds")
    click(at, "stepper.run")
    gamma0 = _run(at).params.gamma.copy()
    acc0 = float(np.mean(_run(at).labels() == _run(at).data.gold))
    assert acc0 < 0.95
    assert any("none of the 108 gold labels" in c.value for c in at.caption)
    ok(at.slider(key=state.W_REVEAL).set_value(50).run())
    click(at, "stepper.run")
    run = _run(at)
    assert run.model.semi_supervised and run.model.reveal == 0.5
    assert any("54 of 108 items with gold are fixed" in c.value for c in at.caption)
    assert not np.allclose(run.params.gamma, gamma0, atol=1e-3)  # the worker estimates move
    ok(at.slider(key=state.W_REVEAL).set_value(100).run())
    click(at, "stepper.run")
    run = _run(at)
    assert any("108 of 108 items with gold are fixed" in c.value for c in at.caption)
    assert float(np.mean(run.labels() == run.data.gold)) == 1.0
    assert state.metrics(run)["accuracy"][-1] == pytest.approx(1.0)


def test_reveal_is_not_offered_without_gold_or_for_majority_vote():
    from crowdlab.ui import state

    at = _method(_open("patients"), "ds")  # no gold
    assert not [s for s in at.slider if s.key == state.W_REVEAL]
    at = _method(_open("bluebirds"), "mv")
    assert not [s for s in at.slider if s.key == state.W_REVEAL]


# ---------------------------------------------------------------------------- the scores model's degenerate optimum
def test_scores_degenerate_optimum_notice_and_the_floor_remedy():
    from crowdlab.ui import state

    at = _open("bluebirds", page=DATA_PAGE)
    click(at, "data.scores.run")  # the lecture's crowd: 20 items, 3 good and 2 bad scorers (seed 0)
    at = _method(ok(at.switch_page("pages/2_Step_through_EM.py").run()), "scores")
    click(at, "stepper.run")
    run = _run(at)
    assert run.current.objective == pytest.approx(67.72, abs=0.01)  # the sensible optimum, from everyone good
    assert not [i for i in at.info if "degenerate" in i.value]
    ok(at.selectbox(key=state.W_ONLY_GOOD).set_value(0).run())  # only A0 good
    click(at, "stepper.run")
    run = _run(at)
    assert run.init == "posterior" and run.current.objective == pytest.approx(117.27, abs=0.01)
    assert int((run.current.q[:, 1] > 0.5).sum()) == 1 and run.params.sigma == pytest.approx(1e-3)
    note = [i.value for i in at.info if "degenerate maximum" in i.value]
    assert note and "only A0 is 'good'" in note[0] and "sits at its floor" in note[0]
    ok(at.number_input(key=state.W_SIGMA_MIN).set_value(0.07).run())  # the remedy
    click(at, "stepper.run")
    run = _run(at)
    assert run.model.sigma_min == 0.07
    assert run.current.objective == pytest.approx(67.72, abs=0.01)  # the sensible optimum, not 117.3
    assert int((run.current.q[:, 1] > 0.5).sum()) == 3 and run.params.sigma > 0.07
    assert not [i for i in at.info if "degenerate maximum" in i.value]


# ---------------------------------------------------------------------------- GLAD's and MACE's class prior
def test_class_prior_choice_for_mace_changes_the_fit_and_the_export():
    """The simulated sample's classes are 50/32/19 %: MACE with its paper's uniform prior gets 0.920, with the prior
    estimated 0.942; the choice reaches the model, the accuracy and the exported snippet."""
    from crowdlab.analysis.export import python_snippet
    from crowdlab.io.metrics import accuracy
    from crowdlab.ui import state

    at = _method(_open("simulated"), "mace")
    assert at.selectbox(key=state.W_CLASS_PRIOR).value == "uniform"
    click(at, "stepper.run")
    uniform = _run(at)
    assert uniform.model.class_prior == "uniform" and np.allclose(uniform.params.pi, 1 / 3)
    ok(at.selectbox(key=state.W_CLASS_PRIOR).set_value("estimate").run())
    click(at, "stepper.run")
    run = _run(at)
    assert run.model.class_prior == "estimate"
    assert run.params.pi[0] > 0.45 > run.params.pi[2]  # the posterior's class shares, not 1/3 each
    data = run.data
    assert accuracy(uniform.labels(), data.gold) == pytest.approx(0.920, abs=5e-4)
    assert accuracy(run.labels(), data.gold) == pytest.approx(0.942, abs=5e-4)
    assert "model_options={'class_prior': 'estimate'}" in python_snippet(run, 'load_sample("simulated")')
    # Dawid-Skene always estimates it: no such choice there
    at = _method(at, "ds")
    assert not [b for b in at.selectbox if b.key == state.W_CLASS_PRIOR]


# ---------------------------------------------------------------------------- baselines on the Compare page
@pytest.mark.parametrize("sample", ["bluebirds", "dogs"])
def test_compare_lists_the_baselines_beside_em(sample):
    from crowdlab.io.metrics import accuracy
    from crowdlab.models.baselines import BASELINES

    at = _open(sample, page="pages/3_Compare_methods.py")
    click(at, "compare.run")
    table = _table(at, "time (s)").set_index("method")
    data = load_sample(sample)
    binary = data.n_classes == 2
    for key, (title, func) in BASELINES.items():
        if key == "kos" and not binary:
            assert title not in table.index
            continue
        row = table.loc[title]
        assert row["kind"] == "baseline (not EM)" and row["converged"] == "—" and row["objective"] == "—"
        assert row["accuracy"] == pytest.approx(accuracy(func(data).labels, data.gold))
        assert row["time (s)"] >= 0
    assert table.loc["Dawid-Skene", "kind"] == "EM" and table.loc["Majority vote", "kind"] == "baseline (not EM)"
    for vb in ("Bayesian Dawid-Skene (IBCC, variational)", "MACE (variational Bayes)"):
        assert table.loc[vb, "kind"] == "variational Bayes"
    notes = " ".join(c.value for c in at.caption)
    assert "cannot be stepped" in notes and "the ELBO" in notes
    assert ("KOS (Karger, Oh & Shah 2011) left out" in notes) == (not binary)
    # the baselines join the agreement matrix
    agreement = at.session_state["compare.results"][("sample:" + sample, 0.0)].agreement
    assert "Wawa (agreement-weighted vote)" in agreement.index


def test_data_page_report_waits_for_a_button_on_a_large_dataset(monkeypatch):
    monkeypatch.setattr(reports_view, "AUTO_LABELS", 1_000)  # bluebirds has 4,212 labels
    at = ok(_open("bluebirds").switch_page(DATA_PAGE).run())
    assert not [d for d in at.dataframe if "spammer_score" in d.value.columns]
    click(at, "data.report.fit")
    assert len(_table(at)) == 39


@pytest.mark.parametrize("sample", ["bluebirds", "patients"])
def test_compare_table_fits_and_agreement_labels_are_unique(sample):
    """Audit at 1024 px: without gold the results table's five columns (610 px) cut "time" to "tin"; the
    agreement heatmap labelled both MACE rows "MACE" and drew its numbers ~5 px high."""
    import json

    from crowdlab.ui import compare_page

    at = _open(sample, page="pages/3_Compare_methods.py")
    click(at, "compare.run")
    (table,) = [d for d in at.dataframe if "time (s)" in d.value.columns]
    widths = json.loads(table.proto.columns)
    assert "time (s)" in table.proto.column_order
    if sample == "bluebirds":  # with gold: macro F and log loss are in the visible table, not only the details
        assert {"accuracy", "macro F", "log loss"} <= set(table.proto.column_order)
    assert sum(widths[c]["width"] for c in table.proto.column_order) <= compare_page.MAIN_WIDTH
    fig = _chart(at, "compare.agreement_chart")
    for axis in ("xaxis", "yaxis"):
        labels = fig["layout"][axis]["ticktext"]
        assert len(set(labels)) == len(labels) > 6, labels
        assert {"MACE", "MACE (VB)"} <= set(labels)
    assert fig["data"][0]["textfont"]["size"] >= 11


# ---------------------------------------------------------------------------- one vocabulary on the Step page
def test_step_page_names_positions_as_the_stepper_does():
    """The stepper's heading says "iteration 1, after M-step"; the charts, the Formulas tab and the worker report
    under it said "snapshot 2" (and "snapshot 1 -> 2"): two numberings of one position on one screen."""
    at = _method(_open("bluebirds"), "ds")
    click(at, "stepper.step")
    here = "iteration 1, after M-step"
    titles = {}
    for tab, key in (
        ("Posterior", "stepper.posterior_chart"),
        ("Priors", "stepper.prior_chart"),
        ("Surface", "stepper.surface_chart"),
        ("Intervals", "stepper.intervals_chart"),
    ):
        _tab(at, tab)
        spec = _chart(at, key)
        assert spec is not None, (tab, key)
        titles[tab] = spec["layout"]["title"]["text"].replace("<br>", " ")
    assert all(here in t and "snapshot" not in t for t in titles.values()), titles
    _tab(at, "Formulas")
    said = " ".join(m.value for m in at.markdown)
    assert "M-step just done** (iteration 1, after E-step → iteration 1, after M-step)" in said
    assert "snapshot 1" not in said
    _tab(at, "Workers")
    assert any(f"**Worker report, {here}**" in m.value for m in at.markdown)


# ---------------------------------------------------------------------------- the iteration limit
def test_run_at_the_iteration_limit_says_so_and_a_higher_limit_keeps_the_run():
    """Audit (TREC, 500 iterations): 'Run to convergence' at the limit did nothing and said nothing, the Export page
    said to run to convergence, and raising the limit threw the 500 iterations away."""
    from crowdlab.ui import state

    at = _method(_open("bluebirds"), "ds")
    ok(at.number_input(key=state.W_MAX_ITER).set_value(3).run())
    click(at, "stepper.run")
    run = _run(at)
    assert run.last.iteration == 3 and not run.converged and run.stop_reason == "max_iter"
    assert any("stopped at the iteration limit (3)" in c.value for c in at.caption)
    click(at, "stepper.run")  # again: nothing to do, and the page says why and what to do
    said = [i.value for i in at.info if "iteration limit" in i.value]
    assert said and "(3 iterations)" in said[0] and "raise Max iterations" in said[0]
    assert _run(at) is run and run.last.iteration == 3
    exported = ok(at.switch_page("pages/5_Export.py").run())
    assert any("iteration limit (3 iterations)" in c.value and "Max iterations" in c.value for c in exported.caption)
    at = ok(exported.switch_page("pages/2_Step_through_EM.py").run())
    ok(at.number_input(key=state.W_MAX_ITER).set_value(500).run())  # higher: the run goes on from iteration 3
    assert _run(at) is run and run.max_iter == 500 and run.stop_reason is None
    assert any("Max iterations raised to 500" in i.value and "keeps its 3 iterations" in i.value for i in at.info)
    click(at, "stepper.run")
    assert run.converged and run.last.iteration > 3
    fresh = cl.Run(run.data, run.model, "majority", tol=run.tol, max_iter=500)  # EM's path is the same
    fresh.run()
    assert fresh.last.iteration == run.last.iteration
    np.testing.assert_allclose(fresh.current.q, run.current.q, atol=1e-12)
    ok(at.number_input(key=state.W_MAX_ITER).set_value(100).run())  # lower: a new run
    assert _run(at) is not run and _run(at).last.iteration == 0


def test_compare_says_which_method_s_class_prior_collapsed():
    """One-coin scores 0.583 on bluebirds, below majority vote's 0.759: Compare methods said nothing of its collapsed
    class prior (the Step page had the notice); it says so now, naming the method."""
    at = _open("bluebirds", page="pages/3_Compare_methods.py")
    click(at, "compare.run")
    notes = [i.value for i in at.info if "class prior has collapsed" in i.value]
    # the method's name (markdown-escaped: "One\\-coin") before the notice's own words
    assert any("One" in n.split("class prior")[0] and "coin" in n.split("class prior")[0] for n in notes), notes
