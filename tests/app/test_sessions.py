"""crowdlab.ui.sessions: a download's file outlives the runs that clear its references (Streamlit's real media
store), and a session gone longer than the TTL is released (its state cleared, Streamlit's shutdown called on
the event loop), while one that reconnected, or is gone for less, keeps everything."""

from __future__ import annotations

import pytest
from streamlit import config, runtime
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.media_file_storage import MediaFileStorageError
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from crowdlab.ui import sessions


def _mgr() -> MediaFileManager:
    return MediaFileManager(MemoryMediaFileStorage("/media"))


def _add(mgr: MediaFileManager, data: bytes, coord: str = "1.2") -> str:
    url = mgr.add(data, "text/csv", coord, file_name="x.csv", is_for_static_download=True)
    return url.rsplit("/", 1)[-1].split(".", 1)[0]


def _exists(mgr: MediaFileManager, file_id: str) -> bool:
    try:
        mgr._storage.get_file(file_id)
        return True
    except MediaFileStorageError:
        return False


def _runs_elsewhere(mgr: MediaFileManager, sid: str) -> None:
    """This session's next run has started (its references cleared) and two other sessions' runs end."""
    mgr.clear_session_refs(sid)
    mgr.remove_orphaned_files()
    mgr.remove_orphaned_files()


def test_a_download_file_is_gone_after_two_other_runs_unless_kept():
    mgr = _mgr()
    plain = _add(mgr, b"a,b\n1,2\n")
    _runs_elsewhere(mgr, "dontcare")  # a run without a script context registers under "dontcare"
    assert not _exists(mgr, plain)  # the 404 a browser still showing the button gets
    kept = _add(mgr, b"a,b\n3,4\n")
    sessions.pin(mgr, "dontcare", "data.download.labels", kept)
    _runs_elsewhere(mgr, "dontcare")
    assert _exists(mgr, kept)


def test_a_button_keeps_its_last_two_files_and_a_released_session_none():
    mgr = _mgr()
    ids = [_add(mgr, f"v,{n}\n".encode()) for n in range(3)]
    for f in ids:
        sessions.pin(mgr, "s1", "stepper.intervals_download", f)
    sessions.pin(mgr, "s1", "stepper.intervals_download", ids[2])  # the same file again: no duplicate
    assert sessions.pinned_files(mgr, "s1") == {ids[1], ids[2]}
    _runs_elsewhere(mgr, "dontcare")
    assert [_exists(mgr, f) for f in ids] == [False, True, True]

    class Runtime:
        media_file_mgr = mgr

    sessions._unpin(Runtime(), "s1")
    _runs_elsewhere(mgr, "dontcare")
    assert not any(_exists(mgr, f) for f in ids)


class _State:
    cleared = False

    def clear(self):
        self.cleared = True


class _Loop:
    def call_soon_threadsafe(self, fn):
        fn()


class _Runtime:
    def __init__(self):
        self.active: set[str] = set()
        self.closed: list[str] = []
        self.media_file_mgr = _mgr()
        self.uploaded_file_mgr = type("Uploads", (), {"remove_session_files": lambda self, sid: None})()

    def is_active_session(self, sid):
        return sid in self.active

    def close_session(self, sid):
        self.closed.append(sid)

    def _get_async_objs(self):
        class Objs:
            eventloop = _Loop()

        return Objs()


@pytest.fixture()
def rt(monkeypatch):
    fake = _Runtime()
    monkeypatch.setattr(runtime, "exists", lambda: True)
    monkeypatch.setattr(runtime, "get_instance", lambda: fake)
    monkeypatch.setattr(sessions, "_STATES", {})
    monkeypatch.setattr(sessions, "_GONE", {})
    return fake


def test_a_session_gone_for_the_ttl_is_released(rt, monkeypatch):
    monkeypatch.setattr(config, "get_option", lambda name: 120 if name == "server.disconnectedSessionTTL" else None)
    states = {sid: _State() for sid in ("here", "back", "gone")}
    for sid, s in states.items():
        sessions._STATES[sid] = s
    rt.active = {"here"}
    assert sessions.sweep(now=1000.0) == []  # "back" and "gone" are first seen disconnected now
    rt.active = {"here", "back"}  # "back" reconnects (a network blip)
    assert sessions.sweep(now=1100.0) == []  # within the TTL
    rt.active = {"here"}  # "back" leaves again: its clock starts again
    assert sessions.sweep(now=1113.0) == []  # released SWEEP_S + 1 s before the TTL (Streamlit drops it then)
    assert sessions.sweep(now=1115.0) == ["gone"]
    assert states["gone"].cleared and rt.closed == ["gone"]
    assert not states["here"].cleared and not states["back"].cleared
    assert sessions.sweep(now=1226.0) == []  # "back" was first seen gone again at 1113
    assert sessions.sweep(now=1228.0) == ["back"] and rt.closed == ["gone", "back"]
    assert set(sessions._STATES) == {"here"}


def test_a_session_that_reconnects_as_it_is_closed_is_not_closed(rt, monkeypatch):
    monkeypatch.setattr(config, "get_option", lambda name: 0)
    s = _State()
    sessions._STATES["x"] = s

    class Loop:  # the session reconnects between the sweep and the event loop's turn
        def call_soon_threadsafe(self, fn):
            rt.active.add("x")
            fn()

    monkeypatch.setattr(rt, "_get_async_objs", lambda: type("Objs", (), {"eventloop": Loop()})())
    assert sessions.sweep(now=5.0) == ["x"] and rt.closed == [] and not s.cleared
