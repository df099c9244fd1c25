"""dev.py as a user runs it: the app stops with it, listens on 127.0.0.1 by default, and fit takes the user's paths.

The app tests start the real ``python3 dev.py app`` in a subprocess (on a free port), wait for Streamlit's health
endpoint, stop dev.py the way a terminal or a process manager would, and check that the server is gone.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "dev.py"

_spec = importlib.util.spec_from_file_location("crowdlab_dev", DEV)
dev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dev)

posix_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals and /proc: Linux only")


@pytest.fixture(autouse=True)
def _venv_ready():
    """dev.py would (re)install requirements into .venv first; a test must not trigger that."""
    want = hashlib.sha256(dev.REQ.read_bytes()).hexdigest()
    if not (dev.PY.exists() and dev.STAMP.exists() and dev.STAMP.read_text().strip() == want):
        pytest.skip(".venv is not set up by dev.py (run `python3 dev.py test` once)")


# ------------------------------------------------------------------------------------------- the app's address


def test_app_listens_on_loopback_unless_asked(monkeypatch):
    monkeypatch.delenv("STREAMLIT_SERVER_ADDRESS", raising=False)
    assert dev.app_args([]) == ["--server.address", "127.0.0.1"]
    assert dev.app_args(["--server.port", "9000"]) == ["--server.address", "127.0.0.1", "--server.port", "9000"]
    assert dev.app_args(["--server.address", "0.0.0.0"]) == ["--server.address", "0.0.0.0"]
    assert dev.app_args(["--server.address=0.0.0.0"]) == ["--server.address=0.0.0.0"]
    monkeypatch.setenv("STREAMLIT_SERVER_ADDRESS", "0.0.0.0")
    assert dev.app_args([]) == []


# ---------------------------------------------------------------------------------------- helpers for the app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> set[str]:
    """Local addresses with a LISTEN socket on ``port`` (from /proc/net/tcp and tcp6), e.g. {'127.0.0.1'}."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.split(":")
            if state != "0A" or int(hexport, 16) != port:
                continue
            if len(addr) == 8:
                found.add(socket.inet_ntoa(bytes.fromhex(addr)[::-1]))
            else:  # IPv6: four little-endian 32-bit words
                raw = b"".join(bytes.fromhex(addr[i : i + 8])[::-1] for i in range(0, 32, 8))
                found.add(socket.inet_ntop(socket.AF_INET6, raw))
    return found


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _start_app(tmp_path: Path) -> tuple[subprocess.Popen, int, int, Path]:
    """``python3 dev.py app --server.port N`` from a folder outside the repo; returns (dev.py, port, child, log)."""
    port = _free_port()
    log = tmp_path / "dev_app.log"
    cmd = [sys.executable, str(DEV), "app", "--server.port", str(port), "--server.fileWatcherType", "none"]
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, f"dev.py app exited with {proc.returncode}: {log.read_text()}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no /_stcore/health within 60 s: {log.read_text()}")
        time.sleep(0.3)
    (child,) = _children(proc.pid)
    return proc, port, child, log


def _cleanup(proc: subprocess.Popen, child: int) -> None:
    for pid in (proc.pid, child):
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    proc.wait(timeout=10)


# ------------------------------------------------------------------------------------- stopping dev.py app


@posix_only
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_stopping_devpy_stops_the_streamlit_server(tmp_path, sig):
    proc, port, child, log = _start_app(tmp_path)
    try:
        assert _listening(port) == {"127.0.0.1"}, "dev.py app must listen on the loopback interface only"
        proc.send_signal(sig)
        t0 = time.monotonic()
        while _port_open(port) and time.monotonic() - t0 < 5:
            time.sleep(0.1)
        assert not _port_open(port), f"port {port} still open 5 s after {sig.name} to dev.py"
        assert proc.wait(timeout=5) == 128 + sig
        while _alive(child) and time.monotonic() - t0 < 5:
            time.sleep(0.1)
        assert not _alive(child), "streamlit outlived dev.py"
    finally:
        _cleanup(proc, child)


@posix_only
def test_killing_devpy_outright_still_stops_the_server(tmp_path):
    """SIGKILL cannot be forwarded; the kernel's parent-death signal stops the server instead."""
    proc, port, child, log = _start_app(tmp_path)
    try:
        proc.kill()
        proc.wait(timeout=5)
        t0 = time.monotonic()
        while (_port_open(port) or _alive(child)) and time.monotonic() - t0 < 5:
            time.sleep(0.1)
        assert not _port_open(port) and not _alive(child)
    finally:
        _cleanup(proc, child)


# ----------------------------------------------------------------------------------------------- dev.py fit


def test_fit_resolves_file_and_out_where_the_user_typed_them(tmp_path):
    birds = ROOT / "sample_data" / "welinder2010_bluebirds"
    work = tmp_path / "analysis"
    work.mkdir()
    shutil.copy2(birds / "labels.csv", work / "labels.csv")
    shutil.copy2(birds / "gold.csv", work / "gold.csv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, str(DEV), "fit", "labels.csv", "--gold", "gold.csv", "--out", "results"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "accuracy: 0.8981" in proc.stdout
    assert len(pd.read_csv(work / "results" / "posteriors.csv")) == 108
    assert not (ROOT / "results").exists()


def test_fit_with_a_missing_file_names_it_relative_to_the_user(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(DEV), "fit", "nope.csv", "--out", "o"], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 2 and "nope.csv" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()
