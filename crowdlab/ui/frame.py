"""The shared page frame: page config, state restore, the sidebar dataset summary, and the cached loaders.

Every page calls :func:`page_frame` first. On a cold deep link (a fresh session opening any page) the default
dataset, the bundled bluebirds, is loaded so every page has something to show.

Loaders are cached with ``st.cache_data`` keyed on small things only: the sample key, the uploaded file's bytes,
the simulation's parameters (never on large arrays, which Streamlit would sample when hashing).
"""

from __future__ import annotations

import hashlib

import streamlit as st

from crowdlab.data import Annotations
from crowdlab.samples import SAMPLES, load_sample
from crowdlab.simulate import simulate_crowd
from crowdlab.ui import state

HOME_DATASET = "home.dataset"


# ---------------------------------------------------------------------------- cached loaders
@st.cache_data(max_entries=16, show_spinner="Loading the dataset...")
def load_sample_cached(key: str) -> Annotations:
    """A bundled dataset (:func:`crowdlab.samples.load_sample`), cached on its key."""
    return load_sample(key)


@st.cache_data(max_entries=8, show_spinner="Reading the file...")
def load_upload_cached(
    content: bytes, gold: bytes | None = None, kind: str = "auto", name: str = "uploaded file"
) -> Annotations:
    """An uploaded label file (and optional gold file), cached on their bytes; bad input raises DataError."""
    from crowdlab.data import read_annotations  # the reader lives next to Annotations

    return read_annotations(content, gold=gold, kind=kind, name=name)


@st.cache_data(max_entries=8, show_spinner="Simulating a crowd...")
def simulate_crowd_cached(
    n_items: int, n_workers: int, n_classes: int, labels_per_item: int | None = None, seed: int = 0
) -> Annotations:
    """A simulated Dawid-Skene crowd (:func:`crowdlab.simulate.simulate_crowd`), cached on its parameters."""
    return simulate_crowd(n_items, n_workers, n_classes, labels_per_item=labels_per_item, seed=seed).annotations


def sample_id(key: str) -> str:
    return f"sample:{key}"


def upload_id(content: bytes) -> str:
    return "upload:" + hashlib.sha1(content).hexdigest()[:12]


def use_sample(key: str, *, notice: bool = True) -> None:
    """Make bundled sample ``key`` the working dataset (the run resets)."""
    state.set_dataset(sample_id(key), load_sample_cached(key), notice=notice, source=f'load_sample("{key}")')


def _default_dataset() -> tuple[str, Annotations, str]:
    key = state.DEFAULT_SAMPLE
    return sample_id(key), load_sample_cached(key), f'load_sample("{key}")'


# ---------------------------------------------------------------------------- frame
def page_frame(title: str, icon: str | None = None) -> Annotations:
    """Set up a page: wide layout, restored state (default dataset on a cold start), sidebar summary, title.

    Shows the one-time notice (e.g. "Method changed: the run was reset.") and returns the working dataset.
    """
    st.set_page_config(page_title=f"{title} · crowdlab", page_icon=icon, layout="wide")
    state.ensure_dataset(_default_dataset)
    data = state.get_data()
    with st.sidebar:
        dataset_summary(data, compact=True)
    st.title(f"{icon} {title}" if icon else title)
    notice = state.pop_notice()
    if notice:
        st.info(notice, icon="ℹ️")
    return data


def summary_rows(data: Annotations) -> dict[str, str]:
    """The numbers a person wants first: items, workers, labels, K (or "scores"), gold yes/no."""
    return {
        "items": f"{data.n_items:,}",
        "workers": f"{data.n_workers:,}",
        "labels": f"{data.n_obs:,}",
        "classes": "scores" if data.is_continuous else str(data.n_classes),
        "gold": f"yes ({int(data.gold_mask.sum()):,} items)" if data.has_gold else "no",
    }


def dataset_summary(data: Annotations, *, compact: bool = False) -> None:
    """The current dataset: name and counts (sidebar: compact lines; home: a card with metrics)."""
    rows = summary_rows(data)
    name = data.name or "(unnamed dataset)"
    if compact:
        st.markdown("**Current dataset**")
        st.markdown(f"{name}")
        st.markdown("\n".join(f"- {k}: **{v}**" for k, v in rows.items()))
        return
    with st.container(border=True):
        st.subheader(name)
        cols = st.columns(len(rows))
        for col, (k, v) in zip(cols, rows.items()):
            col.metric(k, v.split(" (")[0])
        if not data.is_continuous:
            st.caption("Classes: " + ", ".join(data.class_names))
        for note in data.notes:
            st.caption(note)


# ---------------------------------------------------------------------------- dataset picker
def _on_pick_sample() -> None:
    key = st.session_state.get(HOME_DATASET)
    if key:
        use_sample(key)


def sample_picker() -> None:
    """A select box over the bundled samples; picking one makes it the working dataset (the run resets)."""
    current = state.get_data_id() or ""
    st.session_state[HOME_DATASET] = current.removeprefix("sample:") if current.startswith("sample:") else None
    st.selectbox(
        "Bundled dataset",
        options=list(SAMPLES),
        format_func=lambda k: SAMPLES[k].title,
        key=HOME_DATASET,
        on_change=_on_pick_sample,
        placeholder="(your own dataset)",
    )
    key = st.session_state.get(HOME_DATASET)
    if key:
        st.caption(SAMPLES[key].description)
