"""The "what just happened" formulas stay valid KaTeX whatever the names: names go through crowdlab.io.safe.tex."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from crowdlab.engines.fit import fit
from crowdlab.io.data import read_annotations
from crowdlab.teaching import explain
from crowdlab.teaching.simulate import simulate_scores

DATA = Path(__file__).resolve().parents[1] / "data"
ALLOWED_IN_TEXT = re.compile(r"\\(textbackslash\{\}|textasciicircum\{\}|textasciitilde\{\}|[{}$&%#_])")


def text_args(line: str) -> list[str]:
    r"""The arguments of every \text{...} of a formula; asserts that the braces of the whole line balance."""
    out, depth, i, starts = [], 0, 0, []
    while i < len(line):
        if line[i] == "\\":
            if line.startswith("\\text{", i):
                starts.append((depth, i + 6))
                depth += 1
                i += 6
                continue
            i += 2  # an escaped character or the first letter of a command
            continue
        if line[i] == "{":
            depth += 1
        elif line[i] == "}":
            depth -= 1
            assert depth >= 0, f"unbalanced braces: {line}"
            if starts and starts[-1][0] == depth:
                out.append(line[starts.pop()[1] : i])
        i += 1
    assert depth == 0, f"unbalanced braces: {line}"
    return out


def check(lines: list[str]) -> None:
    assert lines
    for line in lines:
        for arg in text_args(line):
            bare = ALLOWED_IN_TEXT.sub("", arg)
            assert not set(bare) & set("\\{}$^_&%#~"), (arg, line)


@pytest.fixture(scope="module")
def hostile():
    return read_annotations(DATA / "hostile_long.csv", gold=DATA / "hostile_gold.csv")


@pytest.mark.parametrize("key", ["ds", "one_coin", "two_coin"])
def test_class_formulas_with_hostile_names(hostile, key):
    run = fit(hostile, key)
    p, q = run.params, run.posterior
    for n in range(hostile.n_items):
        check(explain.e_step_classes(hostile, p, n, key))
    for m in range(hostile.n_workers):
        lines = explain.m_step_classes(hostile, q, m, key)
        check(lines)
    joined = "".join(explain.e_step_classes(hostile, p, hostile.item_names.index("$x^2$"), key))
    assert r"\text{item \$x\textasciicircum{}2\$}" in joined


def test_score_formulas_with_hostile_names(hostile):
    d = simulate_scores(hostile.n_items, hostile.n_workers - 2, 2, seed=1).annotations
    d = dataclasses.replace(d, item_names=hostile.item_names, worker_names=hostile.worker_names)
    run = fit(d, "scores")
    for m in range(d.n_workers):
        check(explain.e_step_scores(d, run.params, m))
    for n in range(d.n_items):
        check(explain.m_step_scores(d, run.posterior, n))


def test_long_names_are_shortened_before_escaping():
    assert explain._name("_" * 40) == r"\_" * 23 + "…"
    assert explain._name("a\\b") == r"a\textbackslash{}b"
