"""The posterior CSV's ``mv_tied`` column and the reproduction snippet for the Step page's method options (tie rule,
floor on sigma, revealed gold, a start with only one annotator good)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlab import fit
from crowdlab.analysis.export import posterior_frame, python_snippet
from crowdlab.engines.run import Run
from crowdlab.models import make_model
from crowdlab.models.majority import tied_items
from crowdlab.teaching.lessons import lecture_scores


@pytest.mark.parametrize("method", ["mv", "ds", "one_coin"])
def test_tied_column_for_every_class_method(rte, method):
    frame = posterior_frame(fit(rte, method, max_iter=50))
    assert frame["mv_tied"].dtype == bool
    assert np.array_equal(frame["mv_tied"].to_numpy(), tied_items(rte)) and frame["mv_tied"].sum() == 65


def test_no_tied_column_for_scores():
    frame = posterior_frame(fit(lecture_scores(0).annotations, "scores"))
    assert "mv_tied" not in frame and "tied" not in frame


def _exec_snippet(code: str, data) -> Run:
    code = code.replace('data = load_sample("X")', "")
    env = {"data": data}
    exec(code, env)  # noqa: S102 - our own generated code
    return env["run"]


@pytest.mark.parametrize(
    ("method", "options", "init", "init_kwargs"),
    [
        ("mv", {"tie_break": "random", "tie_seed": 3}, "majority", {}),
        ("ds", {"reveal": 0.5, "reveal_seed": 2}, "majority", {}),
        ("scores", {"sigma_min": 0.07}, "posterior", {"q0": np.eye(2)[[1, 0, 0, 0, 0]]}),
        ("scores", {}, "posterior", {"q0": np.eye(2)[[0, 1, 0, 0, 0]]}),
    ],
)
def test_snippet_reproduces_the_method_options(rte, method, options, init, init_kwargs):
    data = lecture_scores(0).annotations if method == "scores" else rte
    run = Run(data, make_model(method, **options), init, **init_kwargs)
    run.run()
    code = python_snippet(run, 'load_sample("X")')
    for k, v in options.items():
        assert f"{k}" in code and repr(v) in code
    again = _exec_snippet(code, data)
    assert np.array_equal(again.labels(), run.labels())
    if run.iterative:
        assert again.last.objective == pytest.approx(run.last.objective, rel=1e-9)
    if method == "scores" and not options:
        assert run.last.objective == pytest.approx(117.27, abs=0.01)  # the degenerate maximum, reproduced


def test_tied_column_survives_the_csv(rte, tmp_path):
    from crowdlab.analysis.export import write_csv

    write_csv(posterior_frame(fit(rte, "ds", max_iter=20)), tmp_path / "p.csv")
    back = pd.read_csv(tmp_path / "p.csv")
    assert back["mv_tied"].sum() == 65
