"""``crowdlab app``: Streamlit on the app's files with the app's settings, 127.0.0.1 unless the user chose an address,
every other option passed through (issue 41). The installed wheel's copy is tested in test_install.py."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

import dev
from crowdlab import cli
from crowdlab.io import app_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_streamlit_env(monkeypatch):
    for k in [k for k in __import__("os").environ if k.startswith("STREAMLIT_")]:
        monkeypatch.delenv(k)


def test_a_checkout_finds_its_own_app_files():
    assert app_files.app_root() == ROOT
    table = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    opts = app_files.config_options()
    assert opts["server.address"] == "127.0.0.1" == dev.LOCAL_ADDRESS
    assert opts["server.headless"] == "true" and opts["server.maxUploadSize"] == "400"
    assert len(opts) == sum(len(v) for v in table.values())
    assert app_files.env_name("server.maxUploadSize") == "STREAMLIT_SERVER_MAX_UPLOAD_SIZE"


def test_app_command_runs_streamlit_on_app_py_with_the_apps_settings():
    cmd = cli.app_command(["--server.port", "8502"])
    assert cmd[:5] == [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py")]
    assert "--server.address=127.0.0.1" in cmd and "--client.showErrorDetails=none" in cmd
    assert cmd[-2:] == ["--server.port", "8502"]


@pytest.mark.parametrize("given", [["--server.address", "0.0.0.0"], ["--server.address=0.0.0.0"]])
def test_the_users_address_wins_as_in_dev_py(given):
    cmd = cli.app_command(given)
    assert not any(a.startswith("--server.address=127") for a in cmd) and cmd[-len(given) :] == given
    assert dev.app_args(given) == given


def test_an_environment_setting_wins_over_the_apps(monkeypatch):
    monkeypatch.setenv("STREAMLIT_SERVER_ADDRESS", "0.0.0.0")
    monkeypatch.setenv("STREAMLIT_SERVER_MAX_UPLOAD_SIZE", "50")
    cmd = cli.app_command([])
    assert not any(a.startswith(("--server.address", "--server.maxUploadSize")) for a in cmd)
    assert "--server.headless=true" in cmd


def test_app_execs_streamlit(monkeypatch):
    seen = []
    monkeypatch.setattr(cli.os, "execv", lambda exe, args: seen.append((exe, args)))
    cli.main(["app", "--server.port", "9999"])
    ((exe, args),) = seen
    assert exe == sys.executable and args[-2:] == ["--server.port", "9999"]


def test_app_help_and_the_missing_extra(monkeypatch, capsys):
    assert cli.main(["app", "--help"]) == 0
    assert "127.0.0.1" in capsys.readouterr().out
    assert cli.main(["samples"]) == 0  # the other commands still parse
    capsys.readouterr()
    monkeypatch.setattr("crowdlab.errors.missing_modules", lambda extra, modules=None: ["streamlit"])
    monkeypatch.setattr(cli.os, "execv", lambda *a: pytest.fail("started without the extra"))
    assert cli.main(["app"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'pip install "crowdlab[app]"' in err
