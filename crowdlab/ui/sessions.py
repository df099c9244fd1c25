"""A session's server memory: released when its browser tab has gone; its downloads kept while it lives.

**Release.** Streamlit keeps a closed tab's session ``server.disconnectedSessionTTL`` seconds (120 by default) so
that a network blip can reconnect to it, and documents that it *may* clean the session up after that; in practice
the stored session goes only when its storage is next touched, without being shut down, so its session state
(datasets, runs, uploaded bytes) and its files stay in memory. :func:`track` (called by the page frame on every
run) notes each session; a daemon thread (one per server process) sweeps every ``SWEEP_S`` seconds and, for a
session disconnected for the TTL (just before Streamlit's store would drop it unclosed), clears its session state,
shuts it down on the server's event loop (Streamlit's own ``Runtime.close_session``), releases its uploaded files
and media references, and hands the freed heap back to the system.

**Downloads.** A download button's file lives in Streamlit's media store only while some session's latest run
references it; a run clears its session's references when it starts, and any session's run that ends deletes
unreferenced download files (at the second sweep). Under load, or while a run is interrupted by the next click,
a button still shown in the browser can point to a deleted file: "Download Button source error - 404", and the
click downloads nothing. :func:`download_button` keeps the files of this session's download buttons (the last
two of each button) referenced until the session is released, so a click always downloads.

Both use Streamlit internals where no public API exists (the media store's per-session references, the runtime's
event loop); each use is guarded: if a later Streamlit changes them, buttons and sessions behave as Streamlit's
own (and the sweep still clears the session state it can reach).
"""

from __future__ import annotations

import ctypes
import gc
import threading
import time
from pathlib import Path

import streamlit as st
from streamlit import config, runtime
from streamlit.logger import get_logger
from streamlit.runtime.scriptrunner import get_script_run_ctx

__all__ = ["download_button", "pinned_files", "sweep", "track"]

_LOG = get_logger(__name__)  # the server's log, at Streamlit's level
SWEEP_S = 5.0  # how often the sweep looks for sessions gone
PIN = "crowdlab.pinned:"  # the media store's pseudo-session holding a live session's download files
KEEP = 2  # files kept per download button: the current one and the one a browser may still show

_LOCK = threading.Lock()
_STATES: dict = {}  # session id -> its SessionState
_GONE: dict[str, float] = {}  # session id -> when the sweep first saw it disconnected
_THREAD: threading.Thread | None = None


def track() -> None:
    """Note the session of the current run (and start the sweep, once per process); a session the server does
    not list as connected (AppTest's) is left alone."""
    global _THREAD
    ctx = get_script_run_ctx()
    # "is True": AppTest's runtime is a MagicMock, whose answers are truthy mocks (its sessions are not kept)
    if ctx is None or not runtime.exists() or runtime.get_instance().is_active_session(ctx.session_id) is not True:
        return
    state = getattr(ctx.session_state, "_state", None)  # SafeSessionState wraps the session's SessionState
    with _LOCK:
        if state is not None:
            _STATES[ctx.session_id] = state  # held until the session is released (below)
        _GONE.pop(ctx.session_id, None)
        if _THREAD is None or not _THREAD.is_alive():
            _THREAD = threading.Thread(target=_loop, name="crowdlab-session-sweep", daemon=True)
            _THREAD.start()


def _loop() -> None:
    while runtime.exists():
        time.sleep(SWEEP_S)
        try:
            sweep()
        except Exception:  # noqa: BLE001 - the sweep must never stop; the log says why
            _LOG.exception("crowdlab: the session sweep failed")


def sweep(now: float | None = None) -> list[str]:
    """Release every noted session disconnected for (about) ``server.disconnectedSessionTTL`` seconds, the time
    Streamlit keeps it for a reconnect; returns their ids."""
    if not runtime.exists():
        return []
    rt = runtime.get_instance()
    now = time.monotonic() if now is None else now
    ttl = float(config.get_option("server.disconnectedSessionTTL") or 0)
    # Streamlit's store drops the session at its TTL without shutting it down: release it just before, while
    # Runtime.close_session still finds it (the sweep first sees a disconnect up to SWEEP_S after it happened)
    wait = max(ttl - SWEEP_S - 1.0, 0.0)
    gone = []
    with _LOCK:
        for sid in list(_STATES):
            if rt.is_active_session(sid):
                _GONE.pop(sid, None)
                continue
            if now - _GONE.setdefault(sid, now) < wait:
                continue
            gone.append((sid, _STATES.pop(sid)))
            _GONE.pop(sid, None)
    for sid, state in gone:
        _release(rt, sid, state)
    if gone:
        _LOG.info("crowdlab: released %d closed session(s) (reconnect time %g s over)", len(gone), ttl)
    return [sid for sid, _ in gone]


def _give_back() -> None:
    """Collect the released objects and hand the freed heap back to the system (glibc keeps it otherwise)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, Windows, musl)
        pass


def _release(rt, sid: str, state) -> None:
    def close() -> None:
        if rt.is_active_session(sid):  # reconnected in the meantime: it keeps everything
            return
        if state is not None:
            state.clear()  # this session's datasets, runs and kept uploads
        _unpin(rt, sid)
        if loop is not None:
            rt.close_session(sid)  # Streamlit's shutdown, while the session is still stored for a reconnect
        # the store may have dropped it already (at its TTL) without a shutdown: its files, then
        rt.media_file_mgr.clear_session_refs(sid)
        rt.uploaded_file_mgr.remove_session_files(sid)
        rt.media_file_mgr.remove_orphaned_files()  # download files go at the second sweep
        rt.media_file_mgr.remove_orphaned_files()
        _give_back()

    try:
        loop = rt._get_async_objs().eventloop  # Runtime.close_session must run on the server's event loop
    except Exception:  # noqa: BLE001 - internals changed: clear what is ours, Streamlit drops the rest
        loop = None
        close()
        return
    loop.call_soon_threadsafe(close)


# ---------------------------------------------------------------------------- downloads
def _refs(mgr) -> dict | None:
    refs = getattr(mgr, "_files_by_session_and_coord", None)
    return refs if isinstance(refs, dict) else None


def pin(mgr, session_id: str, key: str, file_id: str) -> None:
    """Keep ``file_id`` referenced for ``session_id``'s button ``key`` (with the button's previous file)."""
    refs = _refs(mgr)
    if refs is None:
        return
    with mgr._lock:
        held = refs.setdefault(PIN + session_id, {})
        ids = [f for f in (held.get(f"{key}#{n}") for n in range(KEEP)) if f and f != file_id]
        for n, f in enumerate([file_id, *ids][:KEEP]):
            held[f"{key}#{n}"] = f


def pinned_files(mgr, session_id: str) -> set[str]:
    refs = _refs(mgr) or {}
    return set((refs.get(PIN + session_id) or {}).values())


def _unpin(rt, session_id: str) -> None:
    mgr = rt.media_file_mgr
    refs = _refs(mgr)
    if refs is not None:
        with mgr._lock:
            refs.pop(PIN + session_id, None)


def download_button(label: str, data: bytes | str | Path, *, file_name: str, mime: str, key: str, where=None, **kwargs):
    """``st.download_button`` (``on_click="ignore"``: a click does not rerun the page) whose file stays on the
    server while this session lives (see the module's docstring); ``where``: a container (default ``st``).
    ``data`` a `Path`: a file on disk, read only when the button is clicked (Streamlit's deferred download: a large
    result is not held in memory for a click that may never come; nothing to keep)."""
    if isinstance(data, Path):
        path = data
        return (where or st).download_button(
            label, lambda: path.read_bytes(), file_name=file_name, mime=mime, key=key, on_click="ignore", **kwargs
        )
    data = data.encode() if isinstance(data, str) else data  # as Streamlit stores text (and a str would be a path)
    out = (where or st).download_button(
        label, data, file_name=file_name, mime=mime, key=key, on_click="ignore", **kwargs
    )
    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():
        return out
    mgr = runtime.get_instance().media_file_mgr
    try:
        url = mgr.add(data, mime, f"{PIN}{key}", file_name=file_name, is_for_static_download=True)
        pin(mgr, ctx.session_id, key, url.rsplit("/", 1)[-1].split(".", 1)[0])
    except Exception:  # noqa: BLE001 - internals changed: the button works as Streamlit's own
        _LOG.debug("crowdlab: could not keep a download's file", exc_info=True)
    return out
