#!/usr/bin/env python3
"""One-command setup for crowdlab: ``python3 dev.py app`` or ``python3 dev.py test``.

Creates a virtual environment in ``.venv`` (first run only), installs ``requirements.txt`` into it whenever that
file changes, then starts the app, runs the test suite, or lints. Needs only Python 3.11+.

    python3 dev.py app    [streamlit args...]   start the web app (opens on the bundled bluebirds data)
    python3 dev.py test   [pytest args...]      run the whole test suite (unit, app, browser)
    python3 dev.py lint                         ruff check + format check
    python3 dev.py fit    FILE --method ds ...  the command line (python -m crowdlab fit ...)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
REQ = ROOT / "requirements.txt"
STAMP = VENV / ".requirements-sha256"


def ensure_env() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py runs before any venv exists
        sys.exit(f"crowdlab needs Python 3.11 or newer; this is {sys.version.split()[0]}.")
    if not PY.exists():
        print("Creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    want = hashlib.sha256(REQ.read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == want:
        return
    print("Installing requirements into .venv (first run takes a minute) ...", flush=True)
    pip = [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-r", str(REQ)], check=True)
    STAMP.write_text(want)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"app", "test", "lint", "fit"}:
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    ensure_env()
    os.chdir(ROOT)
    if cmd == "app":
        args = [str(PY), "-m", "streamlit", "run", "app.py", *rest]
    elif cmd == "test":
        args = [str(PY), "-m", "pytest", *rest]
    elif cmd == "fit":
        args = [str(PY), "-m", "crowdlab", "fit", *rest]
    else:
        a = subprocess.run([str(PY), "-m", "ruff", "check", "."]).returncode
        b = subprocess.run([str(PY), "-m", "ruff", "format", "--check", "."]).returncode
        return a or b
    return subprocess.run(args).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
