"""The shared page frame: page config, state restore, the sidebar dataset summary, and the cached loaders.

Every page calls :func:`page_frame` first. On a cold deep link (a fresh session opening any page) the default
dataset, the bundled bluebirds, is loaded so every page has something to show.

Loaders are cached with ``st.cache_data`` keyed on small things only: the sample key, the uploaded file's bytes,
the simulation's parameters (never on large arrays, which Streamlit would sample when hashing).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from crowdlab.errors import DataError
from crowdlab.io import limits, safe
from crowdlab.io.annotations import Annotations
from crowdlab.io.app_files import app_root
from crowdlab.io.samples import SAMPLES, load_sample
from crowdlab.teaching.simulate import simulate_crowd
from crowdlab.ui import lab, live_chart, presenter, sessions, state

HOME_DATASET = "home.dataset"

# the sidebar navigation (Streamlit's own is off in .streamlit/config.toml, so the home page reads "Home"): the home
# page, then every file of pages/ in Streamlit's order (its number), labelled as Streamlit labels them
ROOT = app_root()  # the checkout's top level, or the installed package's copy (crowdlab/_app)
PAGE_ICONS = {
    "app": ":material/home:",
    "0_Lessons": ":material/school:",
    "1_Data": ":material/table_chart:",
    "2_Step_through_EM": ":material/stairs:",
    "3_Compare_methods": ":material/compare_arrows:",
    "4_Priors_and_initialisations": ":material/tune:",
    "5_Export": ":material/download:",
    "6_Sequences": ":material/timeline:",
    "7_Networks": ":material/hub:",
    "8_Error_rates_without_labels": ":material/rule:",
    "9_Learning_from_crowds": ":material/scatter_plot:",
    "10_Batch_vs_online": ":material/stream:",
    "11_Class": ":material/groups:",
    "12_Join": ":material/front_hand:",
}
# pages built for a phone: no frame, no sidebar (the student's page of a live class)
PHONE_PAGES = ("pages/12_Join.py",)


def nav_entries(root: Path = ROOT) -> list[tuple[str, str, str | None]]:
    """(path, label, icon) of the home page and every page file: "pages/2_Step_through_EM.py" is labelled
    "Step through EM"; pages are ordered by their leading number, as in Streamlit's own navigation."""

    def number(f: Path) -> tuple[float, str]:
        head = f.stem.split("_", 1)[0]
        return (float(head) if head.isdigit() else float("inf"), f.stem)

    out = [("app.py", "Home", PAGE_ICONS["app"])]
    for f in sorted((root / "pages").glob("*.py"), key=number):
        label = re.sub(r"^\d+_", "", f.stem).replace("_", " ")
        out.append((f"pages/{f.name}", label, PAGE_ICONS.get(f.stem)))
    return out


NAV = tuple(nav_entries())


# ---------------------------------------------------------------------------- cached loaders
@st.cache_data(max_entries=16, show_spinner="Loading the dataset...")
def load_sample_cached(key: str) -> Annotations:
    """A bundled dataset (:func:`crowdlab.io.samples.load_sample`), cached on its key."""
    return load_sample(key)


@st.cache_data(max_entries=8, show_spinner="Reading the file...")
def load_upload_cached(
    content: bytes, gold: bytes | None = None, kind: str = "auto", name: str = "uploaded file"
) -> Annotations:
    """An uploaded label file (and optional gold file), cached on their bytes; bad input raises DataError."""
    from crowdlab.io.data import read_annotations  # the reader lives next to Annotations

    return read_annotations(content, gold=gold, kind=kind, name=name)


@st.cache_data(max_entries=8, show_spinner="Simulating a crowd...")
def simulate_crowd_cached(
    n_items: int, n_workers: int, n_classes: int, labels_per_item: int | None = None, seed: int = 0
) -> Annotations:
    """A simulated Dawid-Skene crowd (:func:`crowdlab.teaching.simulate.simulate_crowd`), cached on its parameters."""
    return simulate_crowd(n_items, n_workers, n_classes, labels_per_item=labels_per_item, seed=seed).annotations


def sample_id(key: str) -> str:
    return f"sample:{key}"


UPLOAD_TYPES = ["csv", "tsv", "txt"]


def file_boxes(specs: list[tuple[str, str]]) -> None:
    """File uploaders side by side, ``(label, key)`` each, two to a row at 1024 px with the sidebar open (three
    in a narrow column would cut their "400MB per file" line), all on one row when there is room."""
    row = st.container(horizontal=True, gap="small")
    for label, key in specs:
        row.file_uploader(label, type=UPLOAD_TYPES, key=key, width=240)  # two fit in an expander at 1024 px


def upload_id(content: bytes) -> str:
    return "upload:" + hashlib.sha1(content).hexdigest()[:12]


def use_sample(key: str, *, notice: bool = True) -> None:
    """Make bundled sample ``key`` the working dataset (the run resets)."""
    state.set_dataset(sample_id(key), load_sample_cached(key), notice=notice, source=f'load_sample("{key}")')


def _default_dataset() -> tuple[str, Annotations, str]:
    key = state.DEFAULT_SAMPLE
    return sample_id(key), load_sample_cached(key), f'load_sample("{key}")'


def refused_sample(exc: DataError, what: str | None = None) -> str:
    """Why a bundled dataset cannot be loaded under the limits this app was started with (issue 42: with
    ``CROWDLAB_MAX_WORKERS=1`` every page crashed on the default sample): the limit, its variable, and what to do."""
    what = what or f"The bundled sample ({SAMPLES[state.DEFAULT_SAMPLE].title})"
    field = re.search(r"\((max_[a-z_]+)\)", exc.problem)
    if field is None:
        return f"{what} cannot be loaded: {exc} Upload your own labels on the Data page."
    env = limits.Limits().env_name(field.group(1))
    return (
        f"{what} is refused by the setting {env} this app was started with: {exc.problem} Upload your own labels "
        f"on the Data page, or restart the app with {env} raised (or unset)."
    )


def _no_dataset(why: str, needs_data: bool) -> None:
    """The page without a working dataset: the sentence saying why, a link to the upload, and (on a page that
    needs one) nothing more."""
    st.warning(safe.md(why), icon=":material/warning:")
    if needs_data:
        try:
            st.page_link("pages/1_Data.py", label="Upload a label file on the Data page", icon=":material/upload:")
        except StreamlitPageNotFoundError:  # started from a page file (tests): no multipage app to link into
            pass
        st.stop()


# ---------------------------------------------------------------------------- frame
def navigation() -> None:
    """Links to the home page and every page, in order (nothing where the app was started from a page file,
    as in tests: there is no multipage app to link into)."""
    try:
        for path, label, icon in NAV:
            st.page_link(path, label=label, icon=icon)
    except StreamlitPageNotFoundError:
        return
    st.divider()


@functools.cache
def favicon():
    """The browser tab's icon, drawn here (a rising objective on the theme's blue): a material icon as
    ``page_icon`` made the browser fetch it from a font server on the internet, which a classroom without internet
    answers with console errors. Everything the app shows comes from its own server."""
    from PIL import Image, ImageDraw

    img = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    draw.rounded_rectangle((0, 0, 63, 63), radius=14, fill=(31, 119, 180, 255))
    points = [(10, 52), (18, 30), (26, 21), (36, 16), (46, 14), (55, 13)]
    draw.line(points, fill=(255, 255, 255, 255), width=6, joint="curve")
    for x, y in points[::2]:
        draw.ellipse((x - 5, y - 5, x + 5, y + 5), fill=(255, 255, 255, 255))
    return img


def page_frame(
    title: str,
    icon: str | None = None,
    *,
    dataset: Callable[[], Annotations] | None = None,
    notice: bool = True,
    needs_data: bool = True,
) -> Annotations | None:
    """Set up a page: wide layout, presenter mode (:func:`crowdlab.ui.presenter.presenter`: the URL's
    ``?present=1`` or the sidebar toggle), restored state (default dataset on a cold start), sidebar navigation and
    dataset summary, title. Shows the working dataset's one-time notice (e.g. "Dataset changed: the run was
    reset.") in a slot that is always there, so nothing below it shifts; the Step page passes ``notice=False``
    (its stepper shows the notice, and a Step clears it) and pages with their own dataset show theirs in their
    stepper.

    Returns the working dataset; a page with its own dataset (Sequences, Networks) passes ``dataset``, a function
    returning it (loading its default on a cold start): the sidebar then summarises that one, names the working
    dataset of the other pages, and the page's dataset is returned.
    """
    lab.note_page()
    sessions.track()  # released when the tab has gone (crowdlab.ui.sessions)
    on = presenter.from_url()
    st.set_page_config(
        page_title=f"{title} · crowdlab",
        page_icon=favicon(),  # the page's material icon stays in its title and the navigation (local fonts)
        layout="wide",
        initial_sidebar_state="collapsed" if on else "auto",
    )
    why = None
    try:
        state.ensure_dataset(_default_dataset)
    except DataError as exc:
        why = refused_sample(exc)
    data = state.get_data()
    own = None
    if data is not None and dataset is not None:
        try:
            own = dataset()
        except DataError as exc:
            why = refused_sample(exc, "This page's dataset")
    if why is not None:
        with st.sidebar:
            navigation()
            presenter.presenter()
        st.title(f"{icon} {title}" if icon else title)
        for text in limits.setting_problems():
            st.warning(safe.md(text), icon=":material/warning:")
        _no_dataset(why, needs_data or data is not None)
        return None
    with st.sidebar:
        navigation()
        if not presenter.presenter():  # normal mode: a stepper's curves beside its panels where the column is wide
            st.html(lab.BESIDE_CSS)
        live_chart.motion_control()
        dataset_summary(own if own is not None else data, compact=True)
        if own is not None:
            other = safe.md(data.name or state.get_data_id())
            st.markdown(
                f"This page has its own dataset. The other pages work on **{other}** (items: **{data.n_items:,}**)."
            )
    st.title(f"{icon} {title}" if icon else title)
    for text in limits.setting_problems():  # a CROWDLAB_* variable refused: the app runs on the default
        st.warning(safe.md(text), icon=":material/warning:")
    box = st.container()  # always there, so the page's fragments keep their place (and their ids)
    text = state.pop_notice() if notice and own is None else None
    if text:
        box.info(text, icon="ℹ️")
    return own if own is not None else data


def summary_rows(data: Annotations) -> dict[str, str]:
    """The numbers a person wants first: items (sequences, edges), workers, labels, K (or "scores"), gold."""
    rows = {"items": f"{data.n_items:,}"}
    if data.is_sequential:
        rows["sequences"] = f"{data.n_sequences:,}"
    if data.graph is not None:
        rows["edges"] = f"{int(data.graph.nnz) // 2:,}"
    return rows | {
        "workers": f"{data.n_workers:,}",
        "labels": (
            f"{round(float(data.weight.sum())):,} ({data.n_obs:,} weighted observations)"
            if data.is_soft
            else f"{data.n_obs:,}"
        ),
        "classes": "scores"
        if data.is_continuous
        else str(data.n_classes) + (" (ratings)" if getattr(data, "ordinal", False) else ""),
        "gold": f"yes ({int(data.gold_mask.sum()):,} items)" if data.has_gold else "no",
        **({"votes": "soft (confidences as fractional labels)"} if data.is_soft else {}),
        **(
            {
                "can't tell": f"{int((data.label >= data.n_classes).sum()):,} "
                f"({', '.join(repr(r) for r in data.response_names)}: a response, not a class)"
            }
            if getattr(data, "response_names", ())
            else {}
        ),
    }


def dataset_summary(data: Annotations, *, compact: bool = False) -> None:
    """The current dataset: name and counts (sidebar: compact lines; home: a card with metrics). The name, the
    classes and the reader's notes are the user's text: escaped (:func:`crowdlab.io.safe.md`)."""
    rows = summary_rows(data)
    name = safe.md(data.name or "(unnamed dataset)")
    if compact:
        st.markdown("**Current dataset**")
        st.markdown(name)
        st.markdown("\n".join(f"- {k}: **{v}**" for k, v in rows.items()))
        return
    with st.container(border=True):
        st.subheader(name)
        row = st.container(horizontal=True, gap="medium")  # wraps when narrow: a count is never cut to "1..."
        for k, v in rows.items():
            row.metric(k, v.split(" (")[0], width="content")
        if not data.is_continuous:
            st.caption("Classes: " + ", ".join(safe.md(c) for c in data.class_names))
        for note in data.notes:
            st.caption(safe.md(note))


# ---------------------------------------------------------------------------- dataset picker
REFUSED = "home.refused"  # why the picked sample could not be loaded (plain key)


def _on_pick_sample() -> None:
    key = st.session_state.get(HOME_DATASET)
    st.session_state[REFUSED] = None
    if key:
        try:
            use_sample(key)
        except DataError as exc:  # over a limit the app was started with
            st.session_state[REFUSED] = refused_sample(exc, f"The bundled dataset {SAMPLES[key].title}")


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
    refused = st.session_state.get(REFUSED)
    if refused:
        st.warning(safe.md(refused), icon=":material/warning:")
    key = st.session_state.get(HOME_DATASET)
    if key:
        st.caption(SAMPLES[key].description)
