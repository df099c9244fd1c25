"""The Export page: take a run away as files, and the Python that reproduces it.

Which run: the Step page's run at its cursor when it has moved (or is majority vote, which has nothing to step),
so what you saw is what you export; otherwise a run of the same settings fitted to convergence here
(:func:`crowdlab.engines.fit.fit`), kept under the plain key ``export.run`` with the (dataset id, config) it belongs to.
"""

from __future__ import annotations

import io
import re
import zipfile

import streamlit as st

from crowdlab.analysis.export import (
    csv_bytes,
    history_dict,
    in_upload_names,
    labels_side_by_side,
    metrics_dict,
    params_dict,
    posterior_frame,
    python_snippet,
    to_json,
    upload_names,
    worker_frame,
)
from crowdlab.engines.fit import fit
from crowdlab.engines.init import INITS
from crowdlab.engines.run import STOP_REASONS, Run
from crowdlab.errors import CrowdlabError
from crowdlab.io import safe
from crowdlab.io.safe import plural
from crowdlab.models import estimates_class_prior
from crowdlab.ui import compare_page, lab, sessions, state
from crowdlab.ui.gold_intervals_view import gold_intervals_section
from crowdlab.ui.reports_view import table_only

EXPORT_RUN = "export.run"  # {"key": (data id, MethodConfig), "run": Run}
EXPORT_ERROR = "export.error"
EXPORT_PENDING = "export.pending"  # Fit to convergence was pressed: the body fits, under a progress bar
HEAD_ROWS = 20
FALLBACK_SOURCE = 'read_annotations("labels.csv")'


# ---------------------------------------------------------------------------- which run
def _key() -> tuple:
    return state.get_data_id(), state.get_config()


def step_run() -> Run | None:
    """The Step page's run when it has something to export (it moved, or it is majority vote)."""
    run = state.get_run()
    if run is not None and (not run.iterative or len(run.snapshots) > 1):
        return run
    return None


def fitted_run() -> Run | None:
    stored = st.session_state.get(EXPORT_RUN)
    if stored and stored["key"] == _key():
        return stored["run"]
    return None


def _on_fit() -> None:
    """Ask for a fit of the current config to convergence: it runs in the page's body, under a progress bar."""
    st.session_state[EXPORT_PENDING] = True


def _fit(progress) -> None:
    """Fit the current config to convergence (the Step page's run is left as it is), reporting each iteration."""
    data, cfg = state.get_data(), state.get_config()
    st.session_state[EXPORT_ERROR] = None
    options = state.model_options(cfg, data)  # the Step page's model options (ties, floor on sigma, reveal)
    prior, hard = options.pop("prior"), options.pop("hard")
    semi = {k: options.pop(k) for k in ("reveal", "reveal_seed") if k in options}
    init, init_kwargs = state.start_options(cfg, data)
    try:
        run = fit(
            data,
            cfg.method,
            init=init,
            prior=prior,
            hard=hard,
            seed=cfg.seed,
            tol=cfg.tol,
            max_iter=cfg.max_iter,
            model_options=options or None,
            progress=progress,
            **semi,
            **init_kwargs,
        )
    except (CrowdlabError, ValueError) as exc:
        st.session_state[EXPORT_ERROR] = str(exc)
        return
    st.session_state[EXPORT_RUN] = {"key": _key(), "run": run}


def _settings(run: Run) -> str:
    model = run.model
    parts = [model.info.title]
    if run.iterative:
        parts.append(f"start: {INITS.get(run.init, run.init)}")
        if getattr(model, "prior", 0.0):
            parts.append(f"prior {model.prior:g}")
        if getattr(model, "hard", False):
            parts.append("hard EM")
        if getattr(model, "sigma_min", None) is not None:
            parts.append(f"floor on σ {model.sigma_min:g}")
        if estimates_class_prior(model):
            parts.append("class prior estimated")
        if getattr(model, "reveal", None):
            parts.append(f"{model.reveal:.0%} of gold revealed")
    elif getattr(model, "tie_break", "frequent") != "frequent":
        parts.append(f"ties: {model.tie_break}")
    return ", ".join(parts)


# ---------------------------------------------------------------------------- the snippet
def reproduces_cursor(run: Run) -> bool:
    """True when the snippet must stop at the cursor (it is not the run's converged end)."""
    return run.iterative and not (run.converged and run.at_end)


def snippet_for(run: Run, load_code: str) -> str:
    """:func:`crowdlab.analysis.export.python_snippet`, pinned to the cursor when the run is not at its converged end.

    Pinned: ``tol=0.0, max_iter=<iteration at the cursor>`` (EM then stops exactly there), plus ``run.e_step()``
    when the cursor sits after an E-step. A run that Run to convergence accelerated (SQUAREM) after some plain
    steps replays them the same way and then ``run.run(..., accelerate=True)`` from there (the accelerated path
    depends on where it starts: the same fixed point from anywhere, the same numbers only from the same point);
    a cursor scrubbed back into the accelerated part is ``run.index``.
    """
    code = python_snippet(run, load_code)
    start = getattr(run, "accelerated_from", None)
    if start is None or getattr(run, "acceleration", None) is None:
        start = None
    if not reproduces_cursor(run) and not start:
        return code  # plain to convergence, or accelerated from the start: cl.fit as it is
    cursor = run.index
    pin = run.snapshots[start] if start is not None and cursor > start else run.current
    lines = code.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("run = cl.fit("):
            continue
        fit_args = re.search(r"tol=[^,)]+, max_iter=\d+", line).group(0)
        line = re.sub(r"tol=[^,)]+", "tol=0.0", line)
        line = re.sub(r"max_iter=\d+", f"max_iter={pin.iteration}", line)
        if "accelerate=False" not in line:
            line = line[:-1] + ", accelerate=False)"
        said = ", as exported" if pin is run.current else ""
        lines[i] = line + f"  # plain EM, stop at iteration {pin.iteration}{said}"
        extra = ["run.e_step()  # the exported snapshot is the E-step after it"] if pin.kind == "E" else []
        if pin is not run.current:
            if pin.kind == "E":
                extra = ["run.e_step()  # where the Step page's Run to convergence started"]
            extra.append(f"run.run({fit_args}, accelerate=True)  # Run to convergence: accelerated EM (SQUAREM)")
            if not run.at_end:
                extra.append(f"run.goto({cursor})  # the exported snapshot (the Step page's cursor)")
        lines[i + 1 : i + 1] = extra
        break
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the files
def export_files(run: Run, snippet: str, post=None, workers=None) -> dict[str, bytes]:
    """File name -> content: posteriors, hard labels, workers, parameters, history, metrics (gold), snippet.
    CSV cells a spreadsheet would run as a formula are escaped (:func:`crowdlab.analysis.export.csv_bytes`). ``post``
    and
    ``workers``: the run's posterior and worker frames when the caller has them (the worker report's intervals take
    seconds on a large crowd: 2.8 s on TREC's 766 workers)."""
    post = in_upload_names(posterior_frame(run) if post is None else post, run.data)  # question/answer stay so
    files = {"posteriors.csv": csv_bytes(post)}
    item, label = post.columns[0], upload_label(run, post)
    if label is not None:
        files["labels.csv"] = csv_bytes(post[[item, label]])
    files["workers.csv"] = csv_bytes(worker_frame(run) if workers is None else workers)
    files["params.json"] = to_json(params_dict(run)).encode()
    files["history.json"] = to_json(history_dict(run)).encode()
    metrics = metrics_dict(run)
    if metrics:
        files["metrics.json"] = to_json(metrics).encode()
    files["reproduce.py"] = snippet.encode()
    return files


def upload_label(run: Run, post) -> str | None:
    """The hard-label column of ``post`` (the upload's name of its label column, else ``label``); None for scores."""
    name = upload_names(run.data)["label"]
    return name if name in post.columns else ("label" if "label" in post.columns else None)


# ---------------------------------------------------------------------------- every method from Compare
ALL_METHODS_FILE = "labels_all_methods.csv"


def compare_file(data) -> tuple[bytes, object] | None:
    """(CSV bytes, the frame) of every method's labels from the Compare page, side by side
    (:func:`crowdlab.analysis.export.labels_side_by_side`); None when Compare has not been run on this dataset."""
    comparison = compare_page.get_comparison()
    if comparison is None or not comparison.labels:
        return None
    frame = labels_side_by_side(data, comparison.labels)
    return csv_bytes(frame), frame


def compare_section(data) -> None:
    """The labels of every method run on the Compare page, in one file, or how to get them."""
    st.subheader("Every method from Compare methods")
    found = compare_file(data)
    if found is None:
        st.caption(
            "Press **Run all methods** on the Compare methods page to export every method's labels side by side in "
            f"one file ({ALL_METHODS_FILE}) here."
        )
        return
    content, frame = found
    methods = list(compare_page.get_comparison().labels)
    st.caption(
        f"The labels of all {len(methods)} methods run on the Compare methods page, one column each, under your "
        f"file's column names: {ALL_METHODS_FILE}."
    )
    sessions.download_button(
        ALL_METHODS_FILE,
        content,
        file_name=ALL_METHODS_FILE,
        mime="text/csv",
        key="export.download.compare",
        icon=":material/download:",
    )
    st.dataframe(frame.head(HEAD_ROWS), hide_index=True, width="stretch", key="export.compare_table")
    st.caption(_shown(len(frame), "items", ALL_METHODS_FILE))


def zip_files(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in files.items():
            z.writestr(name, content)
    return buf.getvalue()


def float_format(frame, fmt: str = "%.4f") -> dict:
    """Column config showing every float column with a fixed number of decimals."""
    return {c: st.column_config.NumberColumn(c, format=fmt) for c in frame.columns if frame[c].dtype.kind == "f"}


MIME = {"csv": "text/csv", "json": "application/json", "py": "text/x-python"}


# ---------------------------------------------------------------------------- the page
def export_page() -> None:
    if st.session_state.pop(EXPORT_PENDING, False):  # Fit to convergence: its bar says how far, how fast, how long
        lab.with_progress(f"Fitting {state.method_title(state.get_config().method)} to convergence", _fit)
    run = step_run()
    if run is not None:
        tail = " · converged" if run.iterative and run.converged and run.at_end else ""
        st.info(
            f"Exporting the Step page's run at its cursor: **{state.step_label(run)}** "
            f"(snapshot {run.index} of {len(run.snapshots) - 1}{tail}) — {_settings(run)}.",
            icon=":material/my_location:",
        )
        if reproduces_cursor(run) and lab.at_limit(run) and run.at_end:
            st.caption(
                f"Not converged: EM stopped at the Step page's iteration limit ({run.max_iter:,} iterations), and "
                f"the files hold the estimates there. To export converged ones, {lab.limit_way('on the Step page')}, "
                "then Run to convergence."
            )
        elif reproduces_cursor(run):
            st.caption(
                "Not at convergence: the files hold the estimates at this snapshot. Run to convergence on the "
                "Step page to export the final ones."
            )
    else:
        run = fitted_run()
        if run is None:
            no_run()
            compare_section(state.get_data())
            return
        st.info(fitted_text(run), icon=":material/check_circle:" if run.converged else ":material/warning:")
    downloads(run)
    compare_section(run.data)


def fitted_text(run: Run) -> str:
    """What the Export page says of the run it fitted: to convergence, or where it stopped and why (it said
    'fitted to convergence' for a run whose history.json said converged false)."""
    head = f"Exporting a run fitted here with the Step page's settings — {_settings(run)}: "
    n = plural(run.last.iteration, "iteration") if run.iterative else "no iterations"
    if not run.iterative:
        return head + "nothing to iterate."
    if run.converged:
        return head.replace("fitted here", "fitted to convergence here") + f"{n}, converged."
    if run.stop_reason == "max_iter":
        return head + (
            f"**not converged**: EM stopped at the iteration limit ({run.max_iter:,} iterations), and the files hold "
            "the estimates there. To go on, raise Max iterations on the Step page and fit again."
        )
    return head + f"{n}, **not converged** ({STOP_REASONS.get(run.stop_reason or '', 'stopped')})."


def no_run() -> None:
    if state.get_run() is None and state.get_run_error():
        st.error(safe.md(state.get_run_error()))
        return
    cfg = state.get_config()
    st.info(
        f"Nothing to export yet: the Step page's run ({state.method_title(cfg.method)}) is still at its "
        "initialisation. Step through it on the Step page, or fit it to convergence here."
    )
    st.button("Fit to convergence", key="export.fit", type="primary", on_click=_on_fit)
    if st.session_state.get(EXPORT_ERROR):
        st.error(safe.md(st.session_state[EXPORT_ERROR]))


def _shown(n: int, what: str, file: str) -> str:
    if n <= HEAD_ROWS:
        return f"All {n:,} {what} ({file})."
    return f"The first {HEAD_ROWS} of {n:,} {what} ({file} has them all)."


def downloads(run: Run) -> None:
    source = state.get_data_source()
    snippet = snippet_for(run, source or FALLBACK_SOURCE)
    post, workers = in_upload_names(posterior_frame(run), run.data), worker_frame(run)  # once, files and tables
    files = export_files(run, snippet, post, workers)
    zipped = dict(files)
    if (found := compare_file(run.data)) is not None:  # every Compare method's labels join the zip (own button below)
        zipped[ALL_METHODS_FILE] = found[0]
    st.subheader("Download")
    # a wrapping row of buttons each as wide as its label: in a quarter of 1024 px "posteriors.csv" was cut
    row = st.container(horizontal=True)
    for name in files:
        sessions.download_button(
            name,
            files[name],
            file_name=name,
            mime=MIME[name.rsplit(".", 1)[1]],
            key=f"export.download.{name}",
            where=row,
            icon=":material/download:",
        )
    sessions.download_button(
        "All of them (zip)",
        zip_files(zipped),
        file_name="crowdlab_export.zip",
        mime="application/zip",
        key="export.download.zip",
        icon=":material/folder_zip:",
        type="primary",
    )
    st.subheader("Reproduce it in Python")
    st.code(snippet, language="python", wrap_lines=True)  # its comments wrap at 1024 px instead of running off
    if source is None:
        st.caption("Replace labels.csv by the path of your label file.")
    st.subheader("What is in the files")
    t1, t2, t3 = st.tabs(["Posteriors", "Workers", "Metrics"])
    with t1:
        st.dataframe(post.head(HEAD_ROWS), hide_index=True, width="stretch", column_config=float_format(post))
        st.caption(_shown(len(post), "items", "posteriors.csv"))
    with t2:
        head = table_only(workers.head(HEAD_ROWS))
        st.dataframe(head, hide_index=True, width="stretch", column_config=float_format(workers))
        st.caption(_shown(len(workers), "workers", "workers.csv"))
    with t3:
        metrics = metrics_dict(run)
        if metrics:
            st.json(metrics)
            gold_intervals_section(run)
        else:
            st.caption("No gold labels: no metrics.")
