"""The Compare page's method chooser (issue 38 section 4): which of the applicable methods to run, and whether
to add the baselines that are not EM. Running all twelve took 321 s on TREC on a busy machine; an analyst who wants
Dawid-Skene, GLAD and EBCC picks those three.

Widget keys ``compare.methods`` and ``compare.baselines``; their values live under plain keys
(``compare.methods_value``, ``compare.baselines_value``) so that a page switch keeps them. Methods that do not
apply to the current dataset are dropped from the choice; with none stored, every applicable method is chosen.
"""

from __future__ import annotations

import streamlit as st

from crowdlab.io.annotations import Annotations
from crowdlab.models import MODELS, applicable_models

METHODS = "compare.methods"  # widget
METHODS_VALUE = "compare.methods_value"  # plain key: the chosen method keys (None = all that apply)
BASELINES = "compare.baselines"  # widget
BASELINES_VALUE = "compare.baselines_value"  # plain key


def chosen(data: Annotations) -> list[str]:
    """The chosen method keys that apply to ``data``, in the models' order (all of them by default)."""
    options = applicable_models(data)
    stored = st.session_state.get(METHODS_VALUE)
    if stored is None:
        return options
    return [m for m in options if m in stored]


def with_baselines() -> bool:
    return bool(st.session_state.get(BASELINES_VALUE, True))


def _on_methods() -> None:
    st.session_state[METHODS_VALUE] = list(st.session_state[METHODS])


def _on_baselines() -> None:
    st.session_state[BASELINES_VALUE] = bool(st.session_state[BASELINES])


def method_chooser(data: Annotations, where=None) -> list[str]:
    """The multiselect of methods and the baselines checkbox; returns the chosen method keys."""
    where = where or st
    options = applicable_models(data)
    st.session_state[METHODS] = chosen(data)
    where.multiselect(
        "Methods",
        options,
        format_func=lambda k: MODELS[k].info.title,
        key=METHODS,
        on_change=_on_methods,
        help="The methods to fit (default: every one that applies to this dataset). Fewer methods, sooner done.",
    )
    if not data.is_continuous:
        st.session_state[BASELINES] = with_baselines()
        where.checkbox(
            "Baselines that are not EM",
            key=BASELINES,
            on_change=_on_baselines,
            help="Wawa, Zero-Based Skill, KOS and M-MSR beside the EM methods (fast).",
        )
    return chosen(data)


def run_label(data: Annotations) -> str:
    n, total = len(chosen(data)), len(applicable_models(data))
    return "Run all methods" if n == total else f"Run {n} of {total} methods"
