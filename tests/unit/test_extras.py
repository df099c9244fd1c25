"""The optional parts (pip extras dask, fast, app) say which extra to install when their packages are missing: one
line, no traceback, on the command line, in Python and in the app (issue 30). The packages are hidden by setting
``sys.modules[name] = None`` (what Python does for a module that cannot be imported)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from crowdlab.cli import main
from crowdlab.errors import EXTRAS, MissingExtra
from crowdlab.models import kernels

ROOT = Path(__file__).resolve().parents[2]
BIRDS = ROOT / "sample_data" / "welinder2010_bluebirds" / "labels.csv"


def _hide(monkeypatch, *names: str) -> None:
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def test_the_extras_in_pyproject_are_the_ones_the_messages_name():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = meta["optional-dependencies"]
    assert set(EXTRAS) <= set(extras)
    for extra, modules in EXTRAS.items():
        names = {r.split("[")[0].split(">")[0].split("=")[0].strip() for r in extras[extra]}
        assert set(modules) <= names, extra
    core = {r.split(">")[0] for r in meta["dependencies"]}
    assert core == {"numpy", "scipy", "pandas", "pyarrow", "tqdm"}  # no plotly, streamlit, dask or numba in the core


def test_cli_engine_dask_without_the_extra_is_one_line(monkeypatch, tmp_path, capsys):
    _hide(monkeypatch, "dask", "distributed")
    assert main(["fit", str(BIRDS), "--engine", "dask", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'pip install "crowdlab[dask]"' in err and "--engine dask" in err
    assert not (tmp_path / "o").exists()


def test_api_dask_without_the_extra_names_it(monkeypatch):
    from crowdlab.engines import distributed

    _hide(monkeypatch, "distributed")
    with pytest.raises(
        MissingExtra, match=r'needs distributed, which is not installed: pip install "crowdlab\[dask\]"'
    ):
        distributed.fit(str(BIRDS))
    with pytest.raises(ImportError):  # MissingExtra is an ImportError too
        distributed.read_source(str(BIRDS))


def test_kernels_forced_without_numba_names_the_fast_extra(monkeypatch):
    _hide(monkeypatch, "numba")
    monkeypatch.setattr(kernels, "_TRIED", False)
    monkeypatch.setattr(kernels, "_KERNELS", None)
    monkeypatch.setenv("CROWDLAB_KERNELS", "numba")
    with pytest.raises(MissingExtra, match=r"crowdlab\[fast\]"):
        kernels._compile()
    monkeypatch.setattr(kernels, "_TRIED", False)
    monkeypatch.delenv("CROWDLAB_KERNELS")
    assert kernels._compile() is None  # not asked for: the numpy path, quietly


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_plots_and_the_app_without_plotly_name_the_app_extra():
    code = (
        "import sys; sys.modules['plotly'] = None\n"
        "try:\n    import crowdlab.plots\nexcept ImportError as e:\n    print(type(e).__name__, e)\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=60).run()\n"
        "print('APP', not at.exception, [e.value for e in at.error])\n"
    )
    proc = _python(code)
    lines = [line for line in proc.stdout.splitlines() if line]
    assert lines[0].startswith("MissingExtra crowdlab.plots (the figures) needs plotly"), proc.stdout + proc.stderr
    assert 'pip install "crowdlab[app]"' in lines[0]
    assert lines[1].startswith("APP True") and "The crowdlab app needs plotly" in lines[1], proc.stdout
