"""One notation (docs/notation.md): the app's text (every page, the UI, the figures, the lessons and the models'
objective names) uses log p(F | θ) for the objective, L(q, θ) for the bound and "iteration (E-steps at ½)" for the
x axis; the retired spellings (log p(x | θ), log p(s | θ), F(q, θ) beside data named F, ...) appear nowhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from crowdlab.models import MODELS, make_model
from crowdlab.plots.common import X_TITLE

ROOT = Path(__file__).resolve().parents[2]
APP_TEXT = [ROOT / "app.py", *(ROOT / "pages").glob("*.py")] + [
    p for d in ("ui", "plots", "teaching", "models") for p in (ROOT / "crowdlab" / d).rglob("*.py")
]
RETIRED = [
    "p(x | θ)",
    "p(x, ẑ | θ)",
    "p(s | θ)",
    r"p(s \mid",
    r"p(x \mid",
    "F(q, θ)",
    "F(q, Γ)",
    r"\hat z",
    "E-steps at the half",
]


def _strings(path: Path) -> list[str]:
    """The string constants of a module (its comments and docstrings are for developers, not the app's text)."""
    import ast

    tree = ast.parse(path.read_text())
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_the_app_text_uses_no_retired_spelling():
    found = [(str(p.relative_to(ROOT)), r, s[:80]) for p in APP_TEXT for s in _strings(p) for r in RETIRED if r in s]
    assert found == []


@pytest.mark.parametrize("key", sorted(MODELS))
def test_every_objective_is_named_in_the_notation(key):
    name = getattr(make_model(key), "objective_name", "")  # majority vote has no objective
    assert not any(r in name for r in RETIRED), name
    if "log-likelihood" in name:
        assert "log p(F | θ)" in name


def test_one_x_axis_title():
    from crowdlab.ui.lab import CURVE_X_TITLE

    assert X_TITLE == CURVE_X_TITLE == "iteration (E-steps at ½)"
