"""The server's safe defaults live in ``.streamlit/config.toml``, so a plain ``streamlit run app.py`` has them too:
it listens on 127.0.0.1 only (as ``dev.py app`` does), and an uncaught exception shows the visitor a short message
while its type, message and traceback go to the server's log."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import dev

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())


def test_streamlit_run_listens_on_this_machine_only_as_dev_py_does():
    # before: server.address unset, so `streamlit run app.py` listened on every interface
    assert CONFIG["server"]["address"] == "127.0.0.1" == dev.LOCAL_ADDRESS
    assert dev.app_args([])[:2] == ["--server.address", CONFIG["server"]["address"]]


def test_error_details_stay_on_the_server():
    assert CONFIG["client"]["showErrorDetails"] == "none"


def test_an_uncaught_exception_shows_a_short_message_and_logs_the_details(tmp_path):
    # the project's config is read from the folder the server starts in (the repository root)
    script = tmp_path / "boom.py"
    script.write_text('import streamlit as st\nst.write("ok")\nraise RuntimeError("secret detail in /srv/path")\n')
    code = textwrap.dedent(f"""
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file({str(script)!r}).run()
        print("SHOWN:", [e.value for e in at.exception])
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    log, shown = out.stdout.split("SHOWN:", 1)
    assert "error" in shown and "secret" not in shown and "/srv/path" not in shown and "RuntimeError" not in shown
    log += out.stderr  # the server's console (rich prints the traceback to stdout)
    assert "RuntimeError" in log and "secret" in log and "Traceback" in log
