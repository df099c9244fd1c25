"""The Data page: upload a label file, simulate a crowd (or the lecture's scorers), pick a bundled set; then look.

Loading goes through callbacks: a file chosen in an upload box loads at once (``on_change``), and **Load**
(``on_click``) reads the chosen or kept files again with the format and kind shown; a bad file puts the reader's
:class:`~crowdlab.errors.DataError` message under the plain key ``data.upload.error`` (shown with ``st.error``) and
leaves the working dataset as it was. Readers and simulations are cached with ``st.cache_data`` on the file bytes
or the parameters.

The files chosen in the upload boxes are kept, name and bytes, under the plain key ``data.upload.kept``: a page
switch empties Streamlit's upload boxes, so on return the page says which files are kept (and the working dataset
is still the uploaded one), and Load reads the kept files again (e.g. with another format). File names, class
names and the reader's messages are the user's text: shown through :func:`crowdlab.io.safe.md`; the CSV downloads
go through :func:`crowdlab.analysis.export.csv_bytes` (no cell a spreadsheet would run as a formula).

The simulation and reader options are mirrored in the plain key ``data.widgets`` (written by each widget's
``on_change``, written back into the widget keys before they are drawn): Streamlit forgets a widget's value when
its page, or its tab, is not shown.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab.analysis.export import csv_bytes
from crowdlab.engines.run import Run
from crowdlab.errors import DataError
from crowdlab.io import limits, safe
from crowdlab.io.annotations import Annotations, to_gold_dataframe, to_long_dataframe
from crowdlab.io.columns import ColumnsUnclear
from crowdlab.io.data import read_annotations
from crowdlab.io.describe import class_balance, worker_table
from crowdlab.plots import data as figs
from crowdlab.teaching.simulate import WORKER_TYPES, mix_from_counts, simulate_crowd, simulate_scores
from crowdlab.ui import large_file, panels, sessions, state
from crowdlab.ui.frame import dataset_summary, sample_picker, upload_id
from crowdlab.ui.reports_view import REPORT_ERRORS, data_report_section, report_due

PREVIEW_ROWS = 20
AGREEMENT_WORKERS = 30
FORMATS = ("auto", "long", "wide")
KINDS = ("auto", "classes", "continuous", "ordinal")

# upload widgets and plain keys
UPLOAD_FILE = "data.upload.file"
UPLOAD_GOLD = "data.upload.gold"
UPLOAD_FMT = "data.upload.fmt"
UPLOAD_KIND = "data.upload.kind"
UPLOAD_ABSTAIN = "data.upload.abstain"  # a label meaning "can't tell" ("" = none)
UPLOAD_ERROR = "data.upload.error"  # the reader's message for the last bad file (plain key)
UPLOAD_OK = "data.upload.ok"  # "Loaded 'x.csv': ..." after a good load (plain key)
UPLOAD_KEPT = "data.upload.kept"  # {"file": (name, bytes) | None, "gold": (name, bytes) | None} (plain key)
UPLOAD_ASK = "data.upload.ask"  # the file's column names when the reader asked which is which (plain key)
# Load pressed with no file in the box: under load the press reaches the server before the chosen file does (3 of 10
# sessions in a busy room), and the file loads by itself when it arrives (_on_file_change): say so (issue 42)
NO_FILE_YET = (
    "No label file has arrived yet. If you have just chosen one, it is still arriving and loads by itself as soon "
    "as it is here (no need to press Load again); otherwise choose a label file (long or wide CSV, or Parquet) above."
)
PICK = {role: f"data.upload.pick.{role}" for role in ("item", "worker", "label")}  # the column picker's widgets
PREVIEW = "data.preview"  # {"id": data id, "csv": bytes, "gold": bytes | None} (plain key)

# simulate-a-crowd widgets (values mirrored in WIDGETS)
SIM_ITEMS = "data.sim.items"
SIM_WORKERS = "data.sim.workers"
SIM_CLASSES = "data.sim.classes"
SIM_LABELS = "data.sim.labels"
SIM_NOVICES = "data.sim.novices"
SIM_SPAMMERS = "data.sim.spammers"
SIM_ADVERSARIES = "data.sim.adversaries"
SIM_SEED = "data.sim.seed"
SIM_DEFAULTS = {
    SIM_ITEMS: 600,
    SIM_WORKERS: 15,
    SIM_CLASSES: 3,
    SIM_LABELS: 4,
    SIM_NOVICES: 4,
    SIM_SPAMMERS: 2,
    SIM_ADVERSARIES: 1,
    SIM_SEED: 0,
}

# simulate-scores widgets (values mirrored in WIDGETS)
SC_ITEMS = "data.scores.items"
SC_GOOD = "data.scores.good"
SC_BAD = "data.scores.bad"
SC_SIGMA = "data.scores.sigma"
SC_MISSING = "data.scores.missing"
SC_SEED = "data.scores.seed"
SCORES_DEFAULTS = {SC_ITEMS: 20, SC_GOOD: 3, SC_BAD: 2, SC_SIGMA: 0.1, SC_MISSING: 0.0, SC_SEED: 0}

WIDGETS = "data.widgets"  # plain key: {widget key: value} for every key of WIDGET_DEFAULTS the user changed
WIDGET_DEFAULTS = {**SIM_DEFAULTS, **SCORES_DEFAULTS, UPLOAD_FMT: "auto", UPLOAD_KIND: "auto", UPLOAD_ABSTAIN: ""}


# ---------------------------------------------------------------------------- cached loaders
def _named(content: bytes, name: str) -> io.BytesIO:
    """Bytes as a file-like whose ``name`` the reader puts in its messages."""
    f = io.BytesIO(content)
    f.name = name
    return f


@st.cache_data(max_entries=8, show_spinner="Reading the file...")
def read_upload_cached(
    content: bytes,
    gold: bytes | None,
    fmt: str,
    kind: str,
    name: str,
    gold_name: str | None,
    columns: tuple[int, int, int] | None = None,
    abstain: str = "",
) -> Annotations:
    """:func:`crowdlab.io.data.read_annotations` on uploaded bytes, cached on the bytes and the options
    (``abstain``: the "can't tell" label, "" for none)."""
    gold_src = None if gold is None else _named(gold, gold_name or "gold file")
    return read_annotations(
        _named(content, name),
        gold=gold_src,
        fmt=fmt,
        kind=kind,
        name=Path(name).stem,
        columns=columns,
        where="app",
        abstain=abstain.strip() or None,
    )


@st.cache_data(max_entries=8, show_spinner="Simulating a crowd...")
def simulate_crowd_cached(
    n_items: int, n_workers: int, n_classes: int, labels_per_item: int, counts: tuple[int, ...], seed: int
):
    """:func:`crowdlab.teaching.simulate.simulate_crowd` (data and truth); ``counts`` = workers per type in
    ``WORKER_TYPES`` order."""
    return simulate_crowd(
        n_items, n_workers, n_classes, labels_per_item=labels_per_item, mix=crowd_mix(counts), seed=seed
    )


@st.cache_data(max_entries=8, show_spinner="Simulating scores...")
def simulate_scores_cached(n_items: int, n_good: int, n_bad: int, sigma: float, missing: float, seed: int):
    """:func:`crowdlab.teaching.simulate.simulate_scores` (the lecture's good and bad scorers, data and truth), cached
    on
    the parameters."""
    return simulate_scores(n_items, n_good, n_bad, sigma=sigma, missing=missing, seed=seed)


def crowd_mix(counts: tuple[int, ...]) -> dict[str, float]:
    """Worker counts per type (``WORKER_TYPES`` order) -> the ``mix`` fractions, zero counts left out."""
    return mix_from_counts({t: c for t, c in zip(WORKER_TYPES, counts) if c})


# ---------------------------------------------------------------------------- loading (callbacks call these)
def upload_source(
    name: str,
    gold_name: str | None = None,
    fmt: str = "auto",
    kind: str = "auto",
    columns: tuple | None = None,
    abstain: str = "",
) -> str:
    """The ``read_annotations(...)`` expression that reloads an uploaded file (for the Export page)."""
    args = [json.dumps(name)]
    if gold_name:
        args.append(f"gold={json.dumps(gold_name)}")
    if fmt != "auto":
        args.append(f'fmt="{fmt}"')
    if kind != "auto":
        args.append(f'kind="{kind}"')
    if columns is not None:
        args.append(f"columns={tuple(int(c) for c in columns)!r}")
    if abstain.strip():
        args.append(f"abstain={json.dumps(abstain.strip())}")
    return f"read_annotations({', '.join(args)})"


def load_upload(
    content: bytes,
    gold: bytes | None = None,
    fmt: str = "auto",
    kind: str = "auto",
    name: str = "uploaded.csv",
    gold_name: str | None = None,
    columns: tuple[int, int, int] | None = None,
    abstain: str = "",
) -> bool:
    """Read an uploaded label file (and gold file) and make it the working dataset; True on success. ``abstain``:
    a label meaning "can't tell" (read as a response, not a class; "" for none).

    On a :class:`DataError` the reader's message goes to ``data.upload.error`` and the working dataset stays; when
    the reader cannot tell the columns apart (:class:`ColumnsUnclear`), the file is kept and ``data.upload.ask``
    holds its column names, for the column picker (``columns``: item, worker and label column indices).
    """
    kept = {"file": (name, content), "gold": None if gold is None else (gold_name, gold)}
    try:
        data = read_upload_cached(content, gold, fmt, kind, name, gold_name, columns, abstain)
    except DataError as exc:
        st.session_state[UPLOAD_ERROR] = str(exc)
        st.session_state[UPLOAD_OK] = None
        st.session_state[UPLOAD_ASK] = exc.header if isinstance(exc, ColumnsUnclear) else None
        if isinstance(exc, ColumnsUnclear):
            st.session_state[UPLOAD_KEPT] = kept
        return False
    st.session_state[UPLOAD_ERROR] = None
    st.session_state[UPLOAD_ASK] = None
    st.session_state[UPLOAD_KEPT] = kept
    data_id = upload_id(_upload_key(content, gold, fmt, kind, columns, abstain))
    state.set_dataset(data_id, data, source=upload_source(name, gold_name, fmt, kind, columns, abstain))
    with_gold = f" with gold from '{gold_name}'" if gold is not None else ""
    st.session_state[UPLOAD_OK] = (
        f"Loaded '{name}'{with_gold}: {data.n_items:,} items, {data.n_workers:,} workers, {data.n_obs:,} labels"
        + (f' ({abstentions(data):,} of them "can\'t tell").' if data.response_names else ".")
    )
    return True


_BOXES = {"file": UPLOAD_FILE, "gold": UPLOAD_GOLD}
# a label or gold file: CSV, or Parquet (read as the engines do); ".pq" files are read too where named on disk, but
# not offered here: the uploader lists every type, and one more cut its line at 1024 px with the sidebar open
LABEL_TYPES = ["csv", "tsv", "txt", "parquet"]


def kept_files() -> dict:
    """The kept uploads: ``{"file": (name, bytes) | None, "gold": (name, bytes) | None}``."""
    return {"file": None, "gold": None, **(st.session_state.get(UPLOAD_KEPT) or {})}


def _chosen(which: str) -> tuple[str, bytes] | None:
    """The file in upload box ``which`` ("file" or "gold"), else the one kept from before."""
    upload = st.session_state.get(_BOXES[which])
    if upload is not None:
        return upload.name, upload.getvalue()
    return kept_files()[which]


def _on_load() -> None:
    upload, gold = _chosen("file"), _chosen("gold")
    if upload is None:
        st.session_state[UPLOAD_ERROR] = NO_FILE_YET
        st.session_state[UPLOAD_OK] = None
        return
    load_upload(
        upload[1],
        None if gold is None else gold[1],
        value(UPLOAD_FMT),
        value(UPLOAD_KIND),
        upload[0],
        None if gold is None else gold[0],
        abstain=value(UPLOAD_ABSTAIN),
    )


def _on_load_columns() -> None:
    """The column picker's Load: read the kept file with the item, worker and label columns picked."""
    kept = kept_files()
    if kept["file"] is None:
        st.session_state[UPLOAD_ASK] = None
        return
    columns = tuple(int(st.session_state[PICK[role]]) for role in ("item", "worker", "label"))
    if len(set(columns)) < 3:
        st.session_state[UPLOAD_ERROR] = "Pick three different columns: one for the item, the worker and the label."
        return
    gold = kept["gold"]
    load_upload(
        kept["file"][1],
        None if gold is None else gold[1],
        "auto",
        value(UPLOAD_KIND),
        kept["file"][0],
        None if gold is None else gold[0],
        columns,
        abstain=value(UPLOAD_ABSTAIN),
    )


def column_picker() -> None:
    """Three pickers (item, worker, label) over the file's columns, shown when the reader asked which is which."""
    header = st.session_state.get(UPLOAD_ASK)
    if not header:
        return
    st.markdown("**Which column is which?** Pick the item, worker and label columns of this long file:")
    names = [h or f"column {j + 1} (no header)" for j, h in enumerate(header)]
    cols = st.columns(4, vertical_alignment="bottom")
    for j, role in enumerate(("item", "worker", "label")):
        cols[j].selectbox(
            role.capitalize(),
            range(len(header)),
            index=min(j, len(header) - 1),
            format_func=lambda i: safe.plain(names[i]),  # options are plain text
            key=PICK[role],
        )
    cols[3].button("Load with these columns", key="data.upload.load_columns", on_click=_on_load_columns)


def _on_file_change(which: str) -> None:
    """on_change of an upload box: keep the chosen file (name and bytes; removing it from the box forgets it) and
    load it at once (a gold file: with the label file chosen), with the format and kind shown.

    Loading on the file's arrival, not only on the Load press, is what holds in a busy room: the browser sends the
    file and a Load press separately, and a press that reaches the server while the file is still on its way, or
    whose callback a following rerun interrupts, is lost (Streamlit delivers a button's press once); the file's
    own change is delivered with the file. A file that a Load in the same rerun has already loaded changes
    nothing (its message stays)."""
    upload = st.session_state.get(_BOXES[which])
    chosen = None if upload is None else (upload.name, upload.getvalue())
    label = chosen if which == "file" else _chosen("file")
    gold = chosen if which == "gold" else _chosen("gold")
    if chosen is not None and label is not None and state.get_data_id() == _upload_data_id(label, gold):
        return  # already the working dataset (a Load in this same rerun read it)
    st.session_state[UPLOAD_ERROR] = None
    st.session_state[UPLOAD_OK] = None
    st.session_state[UPLOAD_ASK] = None
    if chosen is not None and label is not None:
        _on_load()  # reads the boxes (the kept label file when its box is empty)
    st.session_state[UPLOAD_KEPT] = {**kept_files(), which: chosen}


def _upload_data_id(label: tuple[str, bytes], gold: tuple[str, bytes] | None) -> str:
    gold_bytes = None if gold is None else gold[1]
    key = _upload_key(label[1], gold_bytes, value(UPLOAD_FMT), value(UPLOAD_KIND), abstain=value(UPLOAD_ABSTAIN))
    return upload_id(key)


def _upload_key(content: bytes, gold: bytes | None, fmt: str, kind: str, columns=None, abstain: str = "") -> bytes:
    extra = f"\0abstain\0{abstain.strip()}" if abstain.strip() else ""  # none: the key it always had
    return content + b"\0gold\0" + (gold or b"") + f"\0{fmt}\0{kind}\0{columns}{extra}".encode()


def abstentions(data: Annotations) -> int:
    """How many labels are a "can't tell" response (not a class)."""
    return int((data.label >= data.n_classes).sum()) if data.response_names else 0


def _on_forget() -> None:
    st.session_state[UPLOAD_KEPT] = None
    st.session_state[UPLOAD_OK] = None
    st.session_state[UPLOAD_ASK] = None


def simulate_crowd_source(n_items, n_workers, n_classes, labels_per_item, counts, seed) -> str:
    """The ``simulate_crowd(...)`` call that reproduces a simulated crowd (``.annotations`` gives the data)."""
    mix = crowd_mix(counts)
    return (
        f"simulate_crowd({n_items}, {n_workers}, {n_classes}, labels_per_item={labels_per_item}, "
        f"mix={mix!r}, seed={seed})"
    )


def use_simulated_crowd(
    n_items: int, n_workers: int, n_classes: int, labels_per_item: int, counts: tuple[int, ...], seed: int
) -> None:
    """Simulate a Dawid-Skene crowd and make it the working dataset (the run resets)."""
    counts = tuple(int(c) for c in counts)
    sim = simulate_crowd_cached(n_items, n_workers, n_classes, labels_per_item, counts, seed)
    data_id = f"sim:crowd:{n_items}:{n_workers}:{n_classes}:{labels_per_item}:{'-'.join(map(str, counts))}:{seed}"
    src = simulate_crowd_source(n_items, n_workers, n_classes, labels_per_item, counts, seed)
    state.set_dataset(data_id, sim.annotations, source=src)
    panels.remember_truth(data_id, sim)  # worker types and true confusion matrices, for the Step page


def use_simulated_scores(n_items: int, n_good: int, n_bad: int, sigma: float, missing: float, seed: int) -> None:
    """Simulate the lecture's good/bad scorers and make them the working dataset (the run resets)."""
    sim = simulate_scores_cached(n_items, n_good, n_bad, sigma, missing, seed)
    data_id = f"sim:scores:{n_items}:{n_good}:{n_bad}:{sigma:g}:{missing:g}:{seed}"
    src = f"simulate_scores({n_items}, {n_good}, {n_bad}, sigma={sigma!r}, missing={missing!r}, seed={seed})"
    state.set_dataset(data_id, sim.annotations, source=src)
    panels.remember_truth(data_id, sim)  # which annotators are good, for the Step page


def value(key: str):
    """The current value of a mirrored widget (its default until the user changes it)."""
    return (st.session_state.get(WIDGETS) or {}).get(key, WIDGET_DEFAULTS[key])


def _set(key: str, v) -> None:
    st.session_state[WIDGETS] = {**(st.session_state.get(WIDGETS) or {}), key: v}


def _on_widget(key: str) -> None:
    """on_change of a mirrored widget: keep its new value in the plain key."""
    _set(key, st.session_state[key])


def _mirrored(key: str) -> dict:
    """Widget arguments of a mirrored widget; writes the mirrored value into the widget key first."""
    st.session_state[key] = value(key)
    return dict(key=key, on_change=_on_widget, args=(key,))


def _sim_counts() -> tuple[int, int, int, int]:
    others = int(value(SIM_NOVICES)), int(value(SIM_SPAMMERS)), int(value(SIM_ADVERSARIES))
    return (int(value(SIM_WORKERS)) - sum(others), *others)


def _on_simulate_crowd() -> None:
    counts = _sim_counts()
    if counts[0] < 0:
        return
    sizes = (int(value(SIM_ITEMS)), int(value(SIM_WORKERS)), int(value(SIM_CLASSES)), int(value(SIM_LABELS)))
    use_simulated_crowd(*sizes, counts, int(value(SIM_SEED)))


def _on_simulate_scores() -> None:
    if int(value(SC_GOOD)) + int(value(SC_BAD)) < 1:
        return
    sizes = int(value(SC_ITEMS)), int(value(SC_GOOD)), int(value(SC_BAD))
    use_simulated_scores(*sizes, float(value(SC_SIGMA)), float(value(SC_MISSING)), int(value(SC_SEED)))


# ---------------------------------------------------------------------------- the page
TABS = ("Upload", "Simulate a crowd", "Simulate scores (lecture)", "Bundled")
TAB = "data.tab"  # widget
TAB_VALUE = "data.tab_value"  # plain key: the open tab comes back after a page switch


def _on_tab() -> None:
    st.session_state[TAB_VALUE] = st.session_state.get(TAB)


def data_page(data: Annotations | None) -> None:
    """Tabs to change the dataset, then a preview and pictures of the working dataset."""
    upload, crowd, scores, bundled = st.tabs(
        TABS, key=TAB, default=st.session_state.get(TAB_VALUE) or TABS[0], on_change=_on_tab
    )  # keyed: the open tab stays open when a notice appears above it
    with upload:
        upload_tab()
    with crowd:
        simulate_crowd_tab()
    with scores:
        simulate_scores_tab()
    with bundled:
        sample_picker()
    data = state.get_data()
    if data is None:  # the bundled sample is over a limit the app was started with (the frame said which)
        return
    st.divider()
    dataset_summary(data)
    preview(data)
    pictures(data)
    data_report_section(data, *reference_run(data))


def reference_run(data: Annotations) -> tuple[Run | None, str | None]:
    """(the Dawid-Skene run the worker report reads, why there is none): :func:`crowdlab.ui.state.reference_run`
    (fitted once per dataset id) when the report is due (:func:`crowdlab.ui.reports_view.report_due`), else
    (None, None): continuous scores, or a large dataset whose fit waits for its button."""
    if not report_due(data):
        return None, None
    try:
        return state.reference_run(data), None
    except REPORT_ERRORS as exc:
        return None, str(exc)


def upload_tab() -> None:
    st.markdown(
        "A **long** CSV has one label per row (`item,worker,label`; `task`, `annotator`, `answer` ... work too); "
        "a **wide** CSV has one row per item and one column per worker (blank = not labelled). "
        "A Parquet file with the same columns works too. "
        "Gold is optional: a CSV `item,label`, or a `gold` column in the label file."
    )
    st.caption(
        f"Limits: {limits.describe()} (set by the person who started the app). An upload lives in this browser "
        "tab's session: reloading the page starts again from the sample data, and your file stays on your disk."
    )
    left, right = st.columns(2)
    for col, which, label in ((left, "file", "Label file"), (right, "gold", "Gold file (optional)")):
        col.file_uploader(label, type=LABEL_TYPES, key=_BOXES[which], on_change=_on_file_change, args=(which,))
    kept_notice()
    c1, c2, c4, c3 = st.columns([2, 2, 2, 1], vertical_alignment="bottom")
    c1.selectbox(
        "Format", FORMATS, help="auto: long when row 1 names a worker or label column", **_mirrored(UPLOAD_FMT)
    )
    c2.selectbox(
        "Kind of labels",
        KINDS,
        help="auto: scores when the label column is value/score/rating; ordinal: numbers read as ratings (1-5 "
        "stars, 0-10), for the ordinal model, whose confusion favours nearby ratings",
        **_mirrored(UPLOAD_KIND),
    )
    c4.text_input(
        "Can't tell answer",
        placeholder="e.g. unsure",
        help='A label meaning "can\'t tell" (unsure, ?, ...): read as a response, not a class, so the models with '
        "confusion matrices learn who abstains on which class. Empty: every label is a class (a label spelled like "
        "one gets a note).",
        **_mirrored(UPLOAD_ABSTAIN),
    )
    c3.button(
        "Load",
        key="data.upload.load",
        type="primary",
        on_click=_on_load,
        width="stretch",
        help="A chosen file loads at once; Load reads it again with this format and kind",
    )
    error = st.session_state.get(UPLOAD_ERROR)
    if error:
        st.error(safe.md(error), icon=":material/error:")
        column_picker()
        current = state.get_data()
        if current is not None:
            st.caption(f"The working dataset is unchanged: {safe.md(current.name or state.get_data_id())}.")
    elif st.session_state.get(UPLOAD_OK):
        st.success(safe.md(st.session_state[UPLOAD_OK]))
    # past a limit (or the upload box's size) the streaming engine fits the file from disk instead
    large_file.section(expanded=bool(error) and limits.RAISE.lower() in error.lower())


def _size(content: bytes) -> str:
    n = len(content)
    return f"{n:,} bytes" if n < 1024 else f"{n / 1024:,.1f} kB" if n < 1024**2 else f"{n / 1024**2:,.1f} MB"


def kept_notice() -> None:
    """Which kept files stand in for empty upload boxes (after a page switch), with a button to forget them."""
    kept = kept_files()
    shown = [
        f"{what} **{safe.md(kept[which][0])}** ({_size(kept[which][1])})"
        for which, what in (("file", "label file"), ("gold", "gold file"))
        if kept[which] is not None and st.session_state.get(_BOXES[which]) is None
    ]
    if not shown:
        return
    c1, c2 = st.columns([5, 1], vertical_alignment="center")
    c1.markdown(
        ":material/attach_file: Kept from your last upload: " + " and ".join(shown) + ". **Load** reads them "
        "again (with the options below); choose a file above to replace one."
    )
    c2.button("Forget", key="data.upload.forget", on_click=_on_forget, help="Forget the kept files", width="stretch")


def simulate_crowd_tab() -> None:
    st.markdown(
        "A Dawid-Skene crowd with a known truth: **experts** (accuracy 0.85-0.97), **novices** (a little above "
        "chance), **spammers** (answers ignore the item) and **adversaries** (systematically wrong)."
    )
    c1, c2, c3, c4 = st.columns(4)
    c1.slider("Items", 20, 5000, step=10, **_mirrored(SIM_ITEMS))
    c2.slider("Workers", 2, 60, **_mirrored(SIM_WORKERS))
    c3.slider("Classes", 2, 8, **_mirrored(SIM_CLASSES))
    workers = int(value(SIM_WORKERS))
    for k in (SIM_LABELS, SIM_NOVICES, SIM_SPAMMERS, SIM_ADVERSARIES):
        if value(k) > workers:  # the sliders below cannot go past the number of workers
            _set(k, workers)
    c4.slider("Labels per item", 1, workers, **_mirrored(SIM_LABELS))
    m1, m2, m3, m4 = st.columns(4)
    m1.slider("Novices", 0, workers, **_mirrored(SIM_NOVICES))
    m2.slider("Spammers", 0, workers, **_mirrored(SIM_SPAMMERS))
    m3.slider("Adversaries", 0, workers, **_mirrored(SIM_ADVERSARIES))
    m4.number_input("Seed", min_value=0, step=1, **_mirrored(SIM_SEED))
    counts = _sim_counts()
    if counts[0] < 0:
        st.warning(f"Novices, spammers and adversaries add up to more than the {workers} workers.")
    else:
        st.caption(
            f"{workers} workers: **{counts[0]} experts**, {counts[1]} novices, {counts[2]} spammers, "
            f"{counts[3]} adversaries; each item labelled by {value(SIM_LABELS)} of them."
        )
    st.button("Simulate", key="data.sim.run", type="primary", on_click=_on_simulate_crowd, disabled=counts[0] < 0)


def simulate_scores_tab() -> None:
    st.markdown(
        "The lecture's **bad annotators** scenario: every item has a true mean score in [0, 1]; a good annotator "
        "scores it with Gaussian noise (sigma), a bad one draws uniformly from [0, 1] whatever the item."
    )
    c1, c2, c3 = st.columns(3)
    c1.slider("Items", 5, 2000, **_mirrored(SC_ITEMS))
    c2.slider("Good annotators", 0, 20, **_mirrored(SC_GOOD))
    c3.slider("Bad annotators", 0, 20, **_mirrored(SC_BAD))
    d1, d2, d3 = st.columns(3)
    d1.slider("Noise of the good (sigma)", 0.01, 0.5, step=0.01, **_mirrored(SC_SIGMA))
    d2.slider("Share of scores missing", 0.0, 0.9, step=0.05, **_mirrored(SC_MISSING))
    d3.number_input("Seed", min_value=0, step=1, **_mirrored(SC_SEED))
    none = int(value(SC_GOOD)) + int(value(SC_BAD)) < 1
    if none:
        st.warning("Give at least one annotator.")
    st.button("Simulate scores", key="data.scores.run", type="primary", on_click=_on_simulate_scores, disabled=none)


def _preview_files(data: Annotations) -> dict:
    """The long CSV (and gold CSV) of the working dataset, built once per dataset id."""
    data_id = state.get_data_id()
    cached = st.session_state.get(PREVIEW)
    if cached is None or cached["id"] != data_id or cached["obj"] is not data:
        frame = to_long_dataframe(data)
        gold = csv_bytes(to_gold_dataframe(data)) if data.has_gold else None
        csv = csv_bytes(frame)
        cached = {"id": data_id, "obj": data, "head": frame.head(PREVIEW_ROWS), "csv": csv, "gold": gold}
        st.session_state[PREVIEW] = cached
    return cached


def _file_stem(data: Annotations) -> str:
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in (data.name or "dataset")).strip("_")
    return stem or "dataset"


def preview(data: Annotations) -> None:
    """The first rows in long form, and the whole file as a download."""
    files = _preview_files(data)
    st.subheader("Preview")
    st.dataframe(files["head"], hide_index=True, width="stretch", height=300)
    shown = min(PREVIEW_ROWS, data.n_obs)
    st.caption(
        f"The first {shown} of {data.n_obs:,} labels, one per row."
        + (" Soft votes: each row is one class with its weight (its share of a vote)." if data.is_soft else "")
    )
    row = st.container(horizontal=True)  # each button as wide as its label: nothing cut to "Download all la…"
    stem = _file_stem(data)
    sessions.download_button(
        "Download all labels (long CSV)",
        files["csv"],
        file_name=f"{stem}_labels.csv",
        mime="text/csv",
        key="data.download.labels",
        where=row,
    )
    if files["gold"] is not None:
        sessions.download_button(
            "Download gold (CSV)",
            files["gold"],
            file_name=f"{stem}_gold.csv",
            mime="text/csv",
            key="data.download.gold",
            where=row,
        )


def pictures(data: Annotations) -> None:
    """Labels per item and per worker, class balance (or scores), worker-by-worker agreement (or correlation)."""
    st.subheader("A picture of the data")
    c1, c2 = st.columns(2)  # two to a row: in a third of 1024 px their titles were cut
    c1.plotly_chart(figs.labels_per_item_histogram(data), key="data.fig.items")
    c2.plotly_chart(figs.labels_per_worker_histogram(data), key="data.fig.workers")
    left, right = st.columns([3, 2])
    if data.is_continuous:
        gold = data.gold if data.has_gold else None
        right.plotly_chart(figs.score_histogram(data.value, gold), key="data.fig.balance")
    else:
        right.plotly_chart(figs.class_balance_bars(class_balance(data)), key="data.fig.balance")
    with left:
        if data.is_continuous:
            st.plotly_chart(figs.score_correlation_heatmap(data, AGREEMENT_WORKERS), key="data.fig.agreement")
            st.caption("Good scorers follow the item means and correlate with each other; bad ones with nobody.")
        else:
            st.plotly_chart(figs.worker_agreement_heatmap(data, AGREEMENT_WORKERS), key="data.fig.agreement")
            st.caption("Share of equal labels on the items both workers labelled; blank: no item in common.")
    with right:
        worker_summary(data)


def worker_summary(data: Annotations) -> None:
    """The most active workers: labels given and (classes) the share of each class in their labels."""
    st.markdown("**The most active workers**")
    if data.is_continuous:
        n = data.labels_per_worker
        mean = np.bincount(data.worker, weights=data.value, minlength=data.n_workers) / np.maximum(n, 1)
        table = pd.DataFrame({"worker": data.worker_names, "labels": n, "mean score": mean})
    else:
        table = worker_table(data)
    table = table.sort_values("labels", ascending=False, kind="stable")
    config = {
        c: st.column_config.NumberColumn(c, format="%.2f") for c in table.columns if c not in ("worker", "labels")
    }
    st.dataframe(table.head(PREVIEW_ROWS), hide_index=True, width="stretch", column_config=config)
    if len(table) > PREVIEW_ROWS:
        st.caption(f"The {PREVIEW_ROWS} most active of {len(table):,} workers; the download has them all.")
    sessions.download_button(  # a short label: the column is ~220 px wide at 1024 px
        "All workers (CSV)",
        csv_bytes(table),
        file_name=f"{_file_stem(data)}_workers.csv",
        mime="text/csv",
        key="data.download.workers",
        icon=":material/download:",
    )
