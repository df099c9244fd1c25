"""Shared helpers of the AppTest tests: run checks, button clicks, page switches, plotly charts and wrapper apps."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def ok(at: AppTest) -> AppTest:
    """Assert that the last run raised no exception and showed no ``st.error``; return ``at``."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def click(at: AppTest, key: str) -> AppTest:
    """Click the enabled button with widget key ``key``, rerun and check the run with :func:`ok`."""
    btn = at.button(key=key)
    assert not btn.disabled, f"{key} is disabled"
    return ok(btn.click().run())


def goto(at: AppTest, page: str) -> AppTest:
    """Switch to ``page`` (relative to the main script), run it and check the run with :func:`ok`."""
    return ok(at.switch_page(page).run())


def figures(at: AppTest) -> list[tuple[str, dict]]:
    """Every chart on the page as (element id, plotly spec): ``st.plotly_chart``'s and the live chart element's
    (:mod:`crowdlab.ui.live_chart`, a components-v2 element whose data holds the figure's JSON)."""
    found = [(c.proto.id, json.loads(c.proto.spec)) for c in at.get("plotly_chart")]
    for c in at.get("bidi_component"):
        if c.proto.component_name == "crowdlab_live_chart":
            found.append((c.proto.id, json.loads(json.loads(c.proto.json)["spec"])))
    return found


def chart(at: AppTest, key: str, *, unique: bool = False) -> dict | None:
    """The plotly spec of the chart with widget key ``key``, or None; ``unique``: assert at most one chart matches."""
    found = [spec for i, spec in figures(at) if i.endswith("-" + key)]
    if unique:
        assert len(found) <= 1
    return found[0] if found else None


def trace(spec: dict, meta: str) -> dict:
    """The one trace of plotly spec ``spec`` whose ``meta`` is ``meta`` (asserting there is exactly one)."""
    found = [t for t in spec["data"] if t.get("meta") == meta]
    assert len(found) == 1, [t.get("meta") for t in spec["data"]]
    return found[0]


def arr(v, dtype=None) -> np.ndarray:
    """A plotly JSON array: a list (as an array of ``dtype``), or a typed array ``{"dtype", "bdata"[, "shape"]}``."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        return a.reshape([int(n) for n in str(shape).split(",")]) if shape else a
    return np.asarray(v, dtype=dtype)


def iteration_label(at: AppTest) -> str:
    """The stepper's one "#### iteration …" heading, without its hashes."""
    found = [m.value.lstrip("# ") for m in at.markdown if m.value.startswith("#### iteration")]
    assert len(found) == 1, found
    return found[0]


def wrapper_script(folder: Path, text: str, name: str = "wrapper.py", *, links: bool = True) -> Path:
    """Write ``text`` as the main script ``folder/name`` of a wrapper app and return its path.

    AppTest cannot drive ``st.file_uploader``: a module's wrapper script (its own ``WRAPPER`` text) pops a request
    from ``st.session_state``, calls a page's load function, then runs the page with runpy. ``links``: put links to
    the real ``pages/`` and ``app.py`` next to it, so that the session can switch from it to the real pages.
    """
    if links:
        (folder / "pages").symlink_to(ROOT / "pages", target_is_directory=True)
        (folder / "app.py").symlink_to(ROOT / "app.py")
    script = folder / name
    script.write_text(text)
    return script
