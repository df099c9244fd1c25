"""A label file too large for the app's memory, fitted from the Data page through the streaming engine
(:func:`crowdlab.engines.stream.fit_file`, accelerated EM as ``cl.fit``): the file stays on disk, EM makes one pass
over it per evaluation of its EM map, a bar shows them, and the results (labels, posteriors, workers, parameters,
history: the files ``crowdlab fit --stream`` writes) are written to a folder and offered for download.

An upload cannot do this: the browser sends the whole file, and Streamlit holds it in the server's memory (and
refuses it past ``server.maxUploadSize``). So this section reads a path on the machine the app runs on, which is
only safe when that machine is the user's own: it is on when the app listens on this machine only (its
``server.address`` is 127.0.0.1, as ``.streamlit/config.toml`` sets it; the files under the home folder and the
folder the app was started in), or in the folders named by ``CROWDLAB_FILES_DIR`` (separated by ``os.pathsep``),
and off otherwise (a class's app shown to other machines reads no path). The root of the file system and the
system folders (/etc, /usr, /proc, ...) are never allowed roots, whatever ``CROWDLAB_FILES_DIR`` says: with
``CROWDLAB_FILES_DIR=/`` every file of the machine was readable by the room (issue 42).

A refusal of a file here names the file and what is wrong, never the file's content (:func:`crowdlab.io.safe.withhold`:
a notes file's ``password=...`` came back quoted in the message); an upload's own content may still be quoted back
to the person who uploaded it (the Data page's upload tab).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab.analysis.export import engine_worker_frame, write_engine_outputs
from crowdlab.engines.blocks import ENGINE_METHODS
from crowdlab.engines.limits import MAX_ITER as LIMIT
from crowdlab.errors import CrowdlabError, DataError
from crowdlab.io import safe
from crowdlab.ui import sessions, state
from crowdlab.ui.lab import STOP_WORDS, table_height
from crowdlab.ui.progress import Pace, seconds

FILES_ENV = "CROWDLAB_FILES_DIR"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")
OUTPUTS = ("labels.csv", "posteriors.csv", "workers.csv", "params.json", "history.json")
DOWNLOAD_MB = 200  # larger result files are named by their path only (a download is read into memory first)
RESULTS_PREFIX = "crowdlab-fit-"  # the results' folders, in the system's temporary folder
RESULTS_KEEP_S = 24 * 3600  # a results folder older than this is removed by the next fit (a closed tab's, say)
WORKER_ROWS = 1000  # rows of the workers table shown (all of them are in workers.csv)

# folders whose files belong to the system, never allowed roots (nor any folder inside them); the root of the file
# system (``/``, a Windows drive's root) neither
SYSTEM_FOLDERS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
)

PATH = "data.large.path"
METHOD = "data.large.method"
PRIOR = "data.large.prior"
MAX_ITER = "data.large.max_iter"
RESULT = "data.large.result"  # the last fit's summary (plain key): a dict, see _fit
ERROR = "data.large.error"  # the last refusal's message (plain key)
PENDING = "data.large.pending"  # a fit was asked for (plain key)


def system_folder(p: Path) -> str | None:
    """Why folder ``p`` (resolved) may not be an allowed root, or None: the root of the file system, or a system
    folder or a folder inside one (their files are the machine's, its passwords and keys among them)."""
    if p.parent == p:
        return f"{p} is the root of the file system (every file on this machine)"
    for name in SYSTEM_FOLDERS:
        system = Path(name)
        if p == system or p.is_relative_to(system):
            return f"{p} is {'a system folder' if p == system else f'inside the system folder {system}'}"
    return None


def _resolved(text: str) -> Path | None:
    """``text`` as an absolute folder path, or None when it cannot be resolved (a symlink loop, an unknown user)."""
    try:
        return Path(text).expanduser().resolve()
    except (RuntimeError, OSError):
        return None


def roots() -> tuple[list[Path], str]:
    """The folders whose files may be fitted, and a sentence saying why (or why none)."""
    env = os.environ.get(FILES_ENV, "").strip()
    if env:
        texts = [p.strip() for p in env.split(os.pathsep) if p.strip()]
        named = [(t, _resolved(t)) for t in texts]
        refused = [why for _, p in named if p is not None and p.is_dir() and (why := system_folder(p))]
        found = [p for _, p in named if p is not None and p.is_dir() and not system_folder(p)]
        missing = ", ".join(str(p or t) for t, p in named if p is None or not p.is_dir())
        never = (
            f"; never a system folder or the root of the file system, so left out: {'; '.join(refused)}"
            if refused
            else ""
        )
        if not found:
            if refused and not missing:
                return [], f"Off: {FILES_ENV} names no folder this app may read{never}. Name a folder of label files."
            return [], f"Off: {FILES_ENV} names no folder that exists on this machine ({missing or 'empty'}){never}."
        return found, f"the folders {FILES_ENV} names" + (
            f"; not folders here, so left out: {missing}" if missing else ""
        ) + never
    try:
        address = str(st.get_option("server.address") or "")
    except Exception:  # noqa: BLE001 - no Streamlit config: treat as shown to other machines
        address = ""
    if address in LOOPBACK:
        found = []
        for p in (Path.home(), Path.cwd()):
            p = p.resolve()
            if p.parent == p:  # started in / : the whole file system is no default
                continue
            if p.is_dir() and not any(p == q or p.is_relative_to(q) for q in found):
                found.append(p)
        return found, "your home folder and the app's folder (the app listens on this machine only)"
    return [], (
        "Off: this app is reachable from other machines, so it reads no file by its path. The person who started it "
        f"can allow folders with the environment variable {FILES_ENV}."
    )


def check_path(text: str, allowed: list[Path]) -> Path:
    """The file ``text`` names, resolved, or a `DataError` saying why it cannot be fitted."""
    text = (text or "").strip().strip('"').strip("'")
    if not text:
        raise DataError("Type the path of a label file on this machine (a long CSV or a Parquet file).")
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # ~nosuchuser/x.csv
        user = text[1:].split("/", 1)[0].split(os.sep, 1)[0]
        raise DataError(
            f"'{text}' starts with the home folder of user '{user}', whom this machine does not know. Give the "
            "file's full path (or ~/ for your own home folder)."
        ) from None
    if not path.is_absolute():
        path = Path.cwd() / path
    try:
        path = path.resolve()
    except (RuntimeError, OSError):  # a symbolic link that leads back to itself (a -> a, a -> b -> a)
        raise DataError(
            f"'{text}' is a symbolic link that leads back to itself (a loop of links), not a file. Give the path "
            "of the label file itself."
        ) from None
    if not any(path == r or path.is_relative_to(r) for r in allowed):
        where = ", ".join(str(r) for r in allowed) or "none"
        raise DataError(
            f"'{path}' is outside the folders this app may read ({where}). The person who started the app can "
            f"allow a folder with the environment variable {FILES_ENV}."
        )
    if path.is_dir():
        raise DataError(f"'{path}' is a folder: give one file (a long CSV, or a Parquet file).")
    if not path.is_file():
        raise DataError(f"No file at '{path}'.")
    if path.suffix.lower() not in SUFFIXES:
        raise DataError(
            f"'{path.name}' is not a label file this engine reads: give a long CSV (.csv, .tsv, .txt) or a Parquet "
            "file (.parquet, .pq) with item, worker and label columns."
        )
    return path


def _on_fit() -> None:
    st.session_state[PENDING] = True
    st.session_state[ERROR] = None


def section(expanded: bool = False) -> None:
    """The Data page's "Fit a large file on this machine" expander."""
    allowed, why = roots()
    with st.expander("Fit a large file on this machine (streaming engine)", expanded=expanded or _busy()):
        st.markdown(
            "For a label file too large to upload or to hold in memory (the limits above): the file stays on "
            "disk and EM reads it once per iteration, in chunks, with the same answer as in memory. You get the "
            "labels, posteriors and each worker's estimates to download; the Step and Compare pages keep the "
            "working dataset."
        )
        if not allowed:
            st.info(safe.md(why), icon=":material/lock:")
            return
        st.caption(safe.md(f"Files under {', '.join(str(r) for r in allowed)} ({why})."))
        st.text_input("Path of the label file", key=PATH, placeholder=str(allowed[0] / "labels.csv"))
        # the method's box wide enough for "Bayesian Dawid-Skene (IBCC, variational)" beside an open sidebar at
        # 1024 px; the button on its own line
        c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
        c1.selectbox("Method", ENGINE_METHODS, format_func=state.method_title, key=METHOD, index=1)
        c2.number_input(
            "Prior", min_value=0.0, max_value=1e6, value=0.0, step=0.5, key=PRIOR, help="Pseudo-counts (0: none)"
        )
        c3.number_input("Most iterations", min_value=1, max_value=100_000, value=LIMIT, step=100, key=MAX_ITER)
        st.button("Fit by streaming", key="data.large.fit", type="primary", on_click=_on_fit)
        if st.session_state.get(PENDING):
            st.session_state[PENDING] = False
            _fit(allowed)
        error = st.session_state.get(ERROR)
        if error:
            st.error(safe.md(error), icon=":material/error:")
        result = st.session_state.get(RESULT)
        if result:
            _show(result)


def _busy() -> bool:
    return bool(st.session_state.get(PENDING) or st.session_state.get(ERROR) or st.session_state.get(RESULT))


def _fit(allowed: list[Path]) -> None:
    """Fit the chosen file under a progress bar; its results replace the last fit's (whose folder is removed)."""
    from crowdlab.engines.stream import fit_file

    folder = path = None
    try:
        path = check_path(st.session_state.get(PATH, ""), allowed)
        method = st.session_state.get(METHOD) or "ds"
        prior = float(st.session_state.get(PRIOR) or 0.0)
        max_iter = int(st.session_state.get(MAX_ITER) or LIMIT)
        t0 = time.perf_counter()
        run = _fit_with_bar(fit_file, path, method, prior, max_iter)
        _remove_old_results()
        folder = Path(tempfile.mkdtemp(prefix=RESULTS_PREFIX))
        with st.spinner(
            f"Writing the results of {run.data.n_items:,} items (labels, posteriors, workers)...", show_time=True
        ):
            write_engine_outputs(run, folder)
    except (CrowdlabError, ValueError, OSError) as exc:  # the engine's and the readers' messages say what is wrong
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)  # half-written results: nothing to offer
        if isinstance(exc, OSError):
            where = f" ({exc.filename})" if exc.filename else ""
            st.session_state[ERROR] = f"Could not read or write a file: {exc.strerror or exc}{where}."
        elif path is None:  # the path itself refused: the message is about the path typed, not about a file
            st.session_state[ERROR] = str(exc)
        else:  # the file's own words never come back (a notes file's password, say): its name and what is wrong
            st.session_state[ERROR] = safe.withhold(exc, keep=(path.name, str(path)))
        return
    old = st.session_state.get(RESULT)
    if old:
        shutil.rmtree(old["folder"], ignore_errors=True)
    st.session_state[RESULT] = _summary(run, path, folder, time.perf_counter() - t0, prior)


def _fit_with_bar(fit_file, path: Path, method: str, prior: float, max_iter: int):
    """``fit_file`` under one bar: the labels read so far in the first pass, then each EM pass with its pace (timed
    from the first pass's end, so the reading does not count as an iteration's time)."""
    bar = st.progress(0.0, text=f"Reading '{path.name}'...")
    show = lambda f, words: bar.progress(f, text=words)  # noqa: E731
    em: list[Pace] = []

    def passes(done: int, total: int) -> None:
        if not em:
            em.append(Pace(show, "Accelerated EM by streaming, one pass over the file per EM step"))
        em[0](done, total)

    try:
        reading = Pace(show, f"Reading '{path.name}'", unit="label", bound=False)
        return fit_file(
            path, method, prior=prior, max_iter=max_iter, where="app", progress=passes, read_progress=reading
        )
    finally:
        bar.empty()


def _remove_old_results(now: float | None = None) -> None:
    """Remove the results folders of fits older than RESULTS_KEEP_S (their sessions are long gone)."""
    now = time.time() if now is None else now
    for old in Path(tempfile.gettempdir()).glob(RESULTS_PREFIX + "*"):
        try:
            if old.is_dir() and now - old.stat().st_mtime > RESULTS_KEEP_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass


def _limit_hint(run, prior: float) -> str:
    """What to try when EM stopped at its iteration limit before converging."""
    hint = f"EM had not converged after {run.max_iter:,} iterations: raise Most iterations"
    if run.model.info.prior_pull and not prior:
        hint += (
            ", or give a Prior (e.g. 1: pseudo-counts that keep the estimates off 0 and 1; it often converges far "
            "sooner)"
        )
    return hint + "."


def _summary(run, path: Path, folder: Path, elapsed: float, prior: float = 0.0) -> dict:
    d = run.data
    K = len(d.class_names)
    counts = np.bincount(np.asarray(run.labels(), dtype=np.int64), minlength=K)[:K]
    workers = engine_worker_frame(run)
    if "n_labels" in workers:
        workers = workers.sort_values("n_labels", ascending=False, kind="stable")
    reason = run.stop_reason or ("converged" if run.converged else None)
    return {
        "file": path.name,
        "path": str(path),
        "folder": str(folder),
        "method": run.model.info.title,
        "items": d.n_items,
        "workers": d.n_workers,
        "labels": d.n_obs,
        "iterations": int(run.last.iteration),
        "stop": STOP_WORDS.get(reason, reason or "done"),
        "hint": _limit_hint(run, prior) if reason == "max_iter" else "",
        "objective": run.objective,
        "seconds": elapsed,
        "classes": pd.DataFrame(
            {"class": [str(c) for c in d.class_names], "items": counts, "share": counts / max(counts.sum(), 1)}
        ),
        "workers_table": workers.head(WORKER_ROWS).reset_index(drop=True),
        "notes": tuple(d.notes),
    }


def _show(r: dict) -> None:
    iters = f"{r['iterations']:,} iteration{'s' if r['iterations'] != 1 else ''}, {r['stop']}"
    st.success(
        safe.md(
            f"Fitted '{r['file']}' by streaming with {r['method']}: {r['items']:,} items, {r['workers']:,} workers, "
            f"{r['labels']:,} labels; {iters}; {seconds(r['seconds'])}."
        ),
        icon=":material/check_circle:",
    )
    if r.get("hint"):
        st.warning(safe.md(r["hint"]), icon=":material/info:")
    for note in r["notes"]:
        st.caption(safe.md(note))
    left, right = st.columns([2, 3])
    left.markdown("**Items per class** (each item's most probable class)")
    left.dataframe(
        r["classes"],
        hide_index=True,
        column_config={
            "items": st.column_config.NumberColumn(format="localized"),
            "share": st.column_config.NumberColumn(format="%.3f"),
        },
    )
    shown = len(r["workers_table"])
    right.markdown(
        f"**Workers** ({f'the {shown:,} with most labels; ' if shown < r['workers'] else ''}all of them in workers.csv)"
    )
    right.dataframe(
        r["workers_table"],
        hide_index=True,
        height=table_height(shown),
        column_config={"n_labels": st.column_config.NumberColumn(format="localized")},
    )
    folder = Path(r["folder"])
    st.caption(safe.md(f"The results are in {folder} (until the next fit here replaces them)."))
    cols = st.columns(len(OUTPUTS))
    for col, name in zip(cols, OUTPUTS):
        f = folder / name
        if not f.is_file():
            continue
        mb = f.stat().st_size / 1e6
        if mb > DOWNLOAD_MB:
            col.caption(safe.md(f"{name}: {mb:,.0f} MB, in the folder above"))
            continue
        sessions.download_button(
            name,
            f,
            file_name=f"{Path(r['file']).stem}-{name}",
            mime="application/json" if name.endswith(".json") else "text/csv",
            key=f"data.large.download.{name}",
            where=col,
            width="stretch",
        )
