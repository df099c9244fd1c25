#!/usr/bin/env python3
"""One-command setup for crowdlab: ``python3 dev.py app`` or ``python3 dev.py test``.

Creates a virtual environment in ``.venv`` (first run only), installs ``requirements.txt`` into it whenever that
file changes, then starts the app, runs the test suite, or lints. Needs only Python 3.11+.

    python3 dev.py app    [streamlit args...]   start the web app on http://127.0.0.1:8501 (bluebirds data);
                                                --server.address 0.0.0.0 shows it to other machines
    python3 dev.py test   [pytest args...]      run the tests (unit, app; --all: browser and slow too, as CI does)
    python3 dev.py lint                         ruff check + format check + the import layers (lint-imports)
    python3 dev.py docs   [--build]             build the documentation site (warnings are errors) and serve it on
                                                http://127.0.0.1:8000; --build only builds it into site/
    python3 dev.py fit    FILE --method ds ...  the command line (python -m crowdlab fit ...); FILE and --out
                                                are relative to the folder you are in
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
REQ = ROOT / "requirements.txt"
STAMP = VENV / ".requirements-sha256"
DOCS_ADDRESS = "127.0.0.1:8000"  # the documentation site, served to this machine only
LOCAL_ADDRESS = "127.0.0.1"  # the app is private to this machine unless the user asks for more
FORWARDED = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
GRACE_S = 5.0  # after forwarding a signal, how long the child may take before it is killed


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


def app_args(rest: list[str]) -> list[str]:
    """Streamlit's arguments: the user's, plus ``--server.address 127.0.0.1`` unless they chose an address.

    An address given on the command line (``--server.address X`` or ``--server.address=X``) or in the
    environment (``STREAMLIT_SERVER_ADDRESS``) wins; otherwise the app listens on the loopback interface only.
    """
    chosen = any(a == "--server.address" or a.startswith("--server.address=") for a in rest)
    if chosen or os.environ.get("STREAMLIT_SERVER_ADDRESS"):
        return list(rest)
    return ["--server.address", LOCAL_ADDRESS, *rest]


def with_package_on_path(env: dict[str, str]) -> dict[str, str]:
    """A copy of ``env`` whose PYTHONPATH starts with the repository, so ``-m crowdlab`` works from any folder."""
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _parent_death_signal():  # pragma: no cover - the returned function runs in the child between fork and exec
    """Linux only: a ``preexec_fn`` that makes the kernel send the child SIGTERM when dev.py dies, even by SIGKILL."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, in the parent, not after the fork
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # dev.py died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def run_child(args: list[str], cwd: Path, env: dict[str, str] | None = None, *, server: bool = False) -> int:
    """Run ``args`` and stop it when dev.py is stopped; returns its exit status (128 + N after signal N).

    ``server=True`` (the app): the child gets its own process group, and Ctrl-C, SIGTERM and SIGHUP sent to
    dev.py go on to that whole group, so stopping dev.py stops ``streamlit run`` and anything it started; a group
    still alive ``GRACE_S`` seconds later is killed, and on Linux the kernel also stops it if dev.py is killed
    outright. Otherwise (tests, fit, lint) the child stays in the terminal's foreground group, where a debugger
    can read the keyboard and Ctrl-C reaches it directly (dev.py only waits for it); SIGTERM and SIGHUP are
    forwarded.
    """
    if os.name == "nt":  # no process groups or POSIX signals; the console sends Ctrl-C to every process
        return subprocess.run(args, cwd=cwd, env=env).returncode
    if server:
        child = subprocess.Popen(args, cwd=cwd, env=env, process_group=0, preexec_fn=_parent_death_signal())
    else:
        child = subprocess.Popen(args, cwd=cwd, env=env)
    received: list[int] = []

    def forward(signum: int, _frame) -> None:
        if not server and signum == signal.SIGINT:
            return  # the terminal delivered it to the child as well
        received.append(signum)
        try:
            if server:
                os.killpg(child.pid, signum)
            else:
                child.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    deadline = None
    try:
        while True:
            try:
                code = child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if not (server and received):
                    continue
                deadline = deadline or time.monotonic() + GRACE_S
                if time.monotonic() > deadline:
                    try:
                        os.killpg(child.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if received:
        return 128 + received[0]
    return code if code >= 0 else 128 - code


def docs(rest: list[str]) -> int:
    """Build the site with ``mkdocs build --strict`` (as CI does, tests/unit/test_docs.py) into ``site/``, which
    opens from the disk (``site/index.html``); then, without ``--build``, serve it on 127.0.0.1:8000 until Ctrl-C."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about MkDocs 2.0 is not about this site
    build_only = "--build" in rest
    rest = [a for a in rest if a != "--build"]
    code = run_child([str(PY), "-m", "mkdocs", "build", "--strict", *rest], cwd=ROOT, env=env)
    if code or build_only:
        if not code:
            print(f"Built the site into {ROOT / 'site'}; open site/index.html in a browser.")
        return code
    serve = [str(PY), "-m", "mkdocs", "serve", "--strict", "--dev-addr", DOCS_ADDRESS, *rest]
    return run_child(serve, cwd=ROOT, env=env, server=True)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"app", "test", "lint", "fit", "docs"}:
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    ensure_env()
    if cmd == "app":
        return run_child([str(PY), "-m", "streamlit", "run", "app.py", *app_args(rest)], cwd=ROOT, server=True)
    if cmd == "test":
        return run_child([str(PY), "-m", "pytest", *rest], cwd=ROOT)
    if cmd == "docs":
        return docs(rest)
    if cmd == "fit":  # paths are the user's: run where they typed the command
        env = with_package_on_path(os.environ)
        return run_child([str(PY), "-m", "crowdlab", "fit", *rest], cwd=Path.cwd(), env=env)
    a = run_child([str(PY), "-m", "ruff", "check", "."], cwd=ROOT)
    b = run_child([str(PY), "-m", "ruff", "format", "--check", "."], cwd=ROOT)
    c = run_child([str(BIN / "lint-imports")], cwd=ROOT)  # the layers of docs/architecture.md (pyproject.toml)
    return a or b or c


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
