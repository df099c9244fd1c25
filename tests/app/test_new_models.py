"""GLAD, MACE and IBCC on the Step page (AppTest): the method picker offers them, Step moves EM and the objective
never falls, "What just happened" shows each model's own formulas with numbers, and the "Model details" tab shows
abilities and difficulties (GLAD), spammers (MACE) and credible intervals (IBCC)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.analysis.reports import worker_report
from crowdlab.models.ibcc import accuracy_intervals
from crowdlab.models.mace import spam_intervals
from tests.app.helpers import arr, click, ok, trace
from tests.app.test_step_lab import _chart, _latex, _method, _open, _run, _tab

NEW = ("glad", "mace", "mace_vb", "ibcc")


@pytest.mark.parametrize("sample", ["bluebirds", "dogs"])
def test_the_picker_offers_the_new_models(sample):
    at = _open(sample)
    options = at.selectbox(key="stepper.method").options
    assert {"GLAD (ability and difficulty)", "MACE (competence and spamming)"} <= set(options)
    assert {"Bayesian Dawid-Skene (IBCC, variational)", "MACE (variational Bayes)"} <= set(options)


@pytest.mark.parametrize("method", NEW)
def test_step_explain_and_details(method):
    at = _method(_open("dogs"), method)
    run = _run(at)
    assert run.model.info.key == method
    for _ in range(3):
        click(at, "stepper.step")
    click(at, "stepper.e_step")
    run = _run(at)
    assert run.current.kind == "E" and run.iteration == 3
    obj = run.history()["objective"]
    assert np.all(np.diff(obj) >= -1e-9 * np.abs(obj[:-1])) and run.violations == []

    _tab(at, "Formulas")
    tex = " ".join(_latex(at))
    assert {
        "glad": r"\sigma(\alpha_j\beta_i)",
        "mace": r"\theta_j\, I(A_{ij}=t)",
        "mace_vb": r"\tilde\theta_j\, I(A_{ij}=t)",
        "ibcc": r"\psi(a_a)",
    }[method] in tex
    assert r"\Rightarrow\ q = (" in tex  # the numbers for the picked item
    # the expander previews the M-step with the model's own update
    assert {
        "glad": r"\partial Q}{\partial \alpha_j}",
        "mace": r"E[\#\text{honest",
        "mace_vb": r"\mathrm{Beta}\big(a + E[\#\text{honest}]",
        "ibcc": "A^0_m",
    }[method] in tex

    click(at, "stepper.m_step")
    tex = " ".join(_latex(at))
    assert any("M-step just done" in m.value for m in at.markdown)
    assert {
        "glad": r"\alpha_j = ",
        "mace": r"\text{stored}\ \theta_j",
        "mace_vb": r"E[\theta_j] = ",
        "ibcc": r"E[\Gamma(k,k)]",
    }[method] in tex

    _tab(at, "Details")  # no Intervals tab for these models: the Details tab says where their intervals are
    assert {"glad": "labels taken as known", "mace": "Wald", "mace_vb": "credible", "ibcc": "credible"}[method] in (
        " ".join(c.value for c in at.caption)
    )
    run = _run(at)
    p = run.params
    if method == "glad":
        ability = trace(_chart(at, "stepper.details.ability"), "ability")
        a = np.sort(p.alpha)  # 109 workers: the 20 lowest and the 20 highest abilities
        assert arr(ability["x"]) == pytest.approx(np.concatenate([a[:20], a[-20:]]))
        hist = trace(_chart(at, "stepper.details.difficulty"), "difficulty")
        assert arr(hist["y"]).sum() == run.data.n_items
        table = at.dataframe[0].value
        assert table["difficulty 1/β"].iloc[0] == pytest.approx(p.difficulty.max())
    elif method in ("mace", "mace_vb"):
        spam = trace(_chart(at, "stepper.details.spam"), "spam")
        sp = np.sort(p.spamming)
        assert arr(spam["x"]) == pytest.approx(np.concatenate([sp[:20], sp[-20:]]))
        n_spam = int((p.spamming > 0.5).sum())
        assert at.metric[0].value == f"{n_spam} of {run.data.n_workers:,}"
        table = at.dataframe[0].value
        if method == "mace_vb":  # the Beta posterior's central 95% of P(spamming), around its mean
            lo, hi = spam_intervals(p, 0.95)
            row = table.iloc[0]
            j = run.data.worker_names.index(row["worker"])
            assert row["95% credible"] == f"{lo[j]:.2f} – {hi[j]:.2f}"
            ends = table["95% credible"].str.split(" – ", expand=True).astype(float)
            assert (ends[0] <= table["P(spamming)"] + 0.005).all() and (table["P(spamming)"] <= ends[1] + 0.005).all()
        else:  # EM: the Wald interval of the worker's own information, the same numbers as the core's
            from crowdlab.analysis.fisher import mace_worker_intervals

            wi = mace_worker_intervals(run.model, run.data, p)
            assert "95% credible" not in table.columns
            for _, row in table.head(5).iterrows():
                j = run.data.worker_names.index(row["worker"])
                assert row["95% Wald"] == f"{wi.spam_lower[j]:.2f} – {wi.spam_upper[j]:.2f}"
            assert "observed information" in " ".join(c.value for c in at.caption)
    else:
        spec = _chart(at, "stepper.details.credible")
        dots = trace(spec, "wald")
        assert "credible" in dots["name"]
        ci = accuracy_intervals(p, seed=0)
        table = at.dataframe[0].value.set_index("worker")
        name = run.data.worker_names[0]
        assert table.loc[name, "95% credible"] == f"{ci['lo'][0]:.2f} – {ci['hi'][0]:.2f}"
        assert table.loc[name, "mean"] == pytest.approx(ci["mean"][0])
        # beside them, Dawid-Skene's interval for the same worker, from the Data page's worker report
        ds = worker_report(cl.fit(run.data, "ds", max_iter=500))
        assert table.loc[name, "DS 95%"] == f"{ds.lower[0]:.2f} – {ds.upper[0]:.2f}"
        assert list(table.columns[:4]) == ["labels", "mean", "95% credible", "DS 95%"]  # side by side, on screen
        widths = {c: v.get("width") for c, v in json.loads(at.dataframe[0].proto.columns).items()}
        assert widths["95% credible"] == widths["DS 95%"] == 110  # both intervals whole, at the same width
        widths = ci["hi"] - ci["lo"]
        assert table.index[0] == run.data.worker_names[int(np.argmax(widths))]  # the widest first
        notes = " ".join(c.value for c in at.caption)
        assert "Median width" in notes and "Dawid-Skene's interval for the same worker" in notes


def test_other_models_have_no_details_tab():
    """The Details tab only said "pick GLAD, MACE or IBCC" for the other models: it is left out for them (and a
    remembered Details tab opens the first tab)."""
    at = _method(_open("bluebirds"), "ds")
    click(at, "stepper.step")
    _tab(at, "Details")
    assert "Details" not in [t.label for t in at.tabs]
    assert not any("GLAD" in i.value and "MACE" in i.value for i in at.info)


@pytest.mark.parametrize("method", ["ibcc", "mace_vb"])
def test_variational_models_turn_hard_em_off_and_still_step(method):
    """Hard EM ticked on Dawid-Skene, then a variational method (which has no hard version): the run is built
    (no error box in place of the stepper), the checkbox is unticked and disabled, and its help says why."""
    at = _method(_open("bluebirds"), "ds")
    ok(at.checkbox(key="stepper.hard").check().run())
    assert _run(at).model.hard
    at = ok(_method(at, method))
    box = at.checkbox(key="stepper.hard")
    assert box.value is False and box.disabled
    assert "no hard version" in box.help
    click(at, "stepper.step")
    run = _run(at)
    assert run.model.info.key == method and not run.model.hard and run.iteration == 1
    at = ok(_method(at, "ds"))  # back on a method with a hard version: the box is there again, unticked
    assert not at.checkbox(key="stepper.hard").disabled and not _run(at).model.hard
