"""Issue 42's doors, page by page: a setting that refuses the bundled sample leaves every page standing with a
sentence (§2); a path that loops or names no user is refused in a sentence, and `/` is no allowed root (§3); a
refusal of a file on the server names the file and what is wrong, never its content (§1); Load while an upload is
still arriving says so (§7)."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io import limits
from tests.app.helpers import ROOT

PAGES = ["app.py"] + sorted(
    str(Path(p).relative_to(ROOT)) for p in glob.glob(str(ROOT / "pages" / "*.py")) if "Join" not in p
)


def _text(at: AppTest) -> list[str]:
    """Every message a visitor reads on the page, markdown escapes removed."""
    kinds = ("error", "warning", "info", "success", "caption", "markdown", "exception", "toast", "text")
    out = []
    for kind in kinds:
        for el in at.get(kind):
            out.append(str(getattr(el, "value", "") or getattr(el, "message", "")).replace("\\", ""))
    return out


@pytest.mark.parametrize(
    "setting, env", [({"max_workers": 1}, "CROWDLAB_MAX_WORKERS"), ({"max_file_mb": 1e-300}, "CROWDLAB_MAX_FILE_MB")]
)
@pytest.mark.parametrize("page", PAGES)
def test_a_setting_that_refuses_the_sample_leaves_every_page_standing(page, setting, env):
    with limits.override(**setting):
        at = AppTest.from_file(str(ROOT / page), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    warned = [w.value.replace("\\", "") for w in at.warning]
    assert any("bundled sample" in w and env in w and "Upload your own labels" in w for w in warned), warned


def test_with_the_sample_refused_the_data_page_offers_the_upload():
    with limits.override(max_items=1):
        at = AppTest.from_file(str(ROOT / "pages" / "1_Data.py"), default_timeout=30).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.get("file_uploader") and at.button(key="data.upload.load")
        warned = [w.value.replace("\\", "") for w in at.warning]
        assert any("CROWDLAB_MAX_ITEMS" in w for w in warned), warned
        # picking another bundled dataset over the same limit is refused in a sentence, not a traceback
        at.selectbox(key="home.dataset").set_value("rte").run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("The bundled dataset" in w.value.replace("\\", "") for w in at.warning)
