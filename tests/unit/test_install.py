"""crowdlab installed as a user installs it: a real wheel in a fresh virtual environment, used from another folder.

The wheel is built offline (``pip wheel --no-deps --no-build-isolation``) from a clean copy of the package's
sources, installed with ``--no-deps`` into a new venv that sees the test environment's site-packages (numpy,
pandas, ...) through a ``.pth`` file placed after its own, and then run from a folder outside the repository: the
``crowdlab`` command, ``python -m crowdlab`` and ``load_sample`` must all find the bundled data inside the install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from crowdlab.io.samples import SAMPLES, SEQUENCE_SAMPLES, sample_root

ROOT = Path(__file__).resolve().parents[2]
BIN = "Scripts" if os.name == "nt" else "bin"
EXE = ".exe" if os.name == "nt" else ""
# A Python whose setuptools can build a wheel without downloading anything (setuptools >= 70.1 has bdist_wheel
# itself; older ones need the `wheel` package). A wheel of pure Python is the same whoever builds it.
CAN_BUILD = (
    "import setuptools as s, setuptools.build_meta, importlib.util as u; "
    "v = tuple(int(x) for x in s.__version__.split('.')[:2]); "
    "assert v >= (61, 0) and u.find_spec('pip') and (u.find_spec('wheel') or v >= (70, 1))"
)


def _builder() -> str | None:
    seen = set()
    for py in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if not py or not os.path.exists(py) or os.path.realpath(py) in seen:
            continue
        seen.add(os.path.realpath(py))
        if subprocess.run([py, "-c", CAN_BUILD], capture_output=True).returncode == 0:
            return py
    return None


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    builder = _builder()
    if builder is None:
        msg = "no Python here can build a wheel offline: add `wheel` (or setuptools>=70.1) to requirements.txt"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a clean copy: no stale build/ or egg-info of an earlier in-tree build leaks in
    src.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", src)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("crowdlab", "sample_data"):
        shutil.copytree(ROOT / folder, src / folder, ignore=ignore)
    out = tmp / "dist"
    cmd = [builder, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out)]
    proc = subprocess.run([*cmd, str(src)], capture_output=True, text=True, env=_clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (whl,) = out.glob("crowdlab-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict[str, Path]:
    """A fresh venv with the wheel installed; returns its python, its crowdlab command and a folder to work in."""
    tmp = tmp_path_factory.mktemp("venv")
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    py = env_dir / BIN / f"python{EXE}"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        env=_clean_env(),
    ).stdout.strip()
    # the test environment's packages, after the venv's own site-packages (so the wheel's crowdlab comes first)
    Path(purelib, "zz_shared_site.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q"]
    proc = subprocess.run([*pip, "--disable-pip-version-check", str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    work = tmp / "elsewhere"
    work.mkdir()
    return {"env": env_dir, "python": py, "crowdlab": env_dir / BIN / f"crowdlab{EXE}", "work": work}


def _run(installed: dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(a) for a in args], cwd=installed["work"], capture_output=True, text=True, env=_clean_env(), timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


# ------------------------------------------------------------------------------------------------- fast checks


def test_every_subpackage_is_listed_in_pyproject():
    """The package list in pyproject.toml is explicit (sample_data is mapped in): a new subpackage must join it."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "crowdlab").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert on_disk <= listed, f"add {sorted(on_disk - listed)} to [tool.setuptools] packages in pyproject.toml"
    assert listed - on_disk == {"crowdlab.sample_data"}


def test_checkout_finds_the_top_level_sample_data():
    assert sample_root() == ROOT / "sample_data"
    for s in {**SAMPLES, **SEQUENCE_SAMPLES}.values():
        assert (sample_root() / s.folder / "labels.csv").is_file()


def test_build_outputs_are_git_ignored():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    probes = ["build/lib/crowdlab/x.py", "dist/crowdlab-0.1.0-py3-none-any.whl", "crowdlab.egg-info/PKG-INFO"]
    proc = subprocess.run(["git", "check-ignore", *probes], cwd=ROOT, capture_output=True, text=True)
    assert proc.stdout.split() == probes


# ------------------------------------------------------------------------------- the real wheel, really installed


@pytest.mark.slow
def test_wheel_carries_every_sample_file_inside_the_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {
        "crowdlab/sample_data/" + p.relative_to(ROOT / "sample_data").as_posix()
        for p in (ROOT / "sample_data").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert want <= names, sorted(want - names)
    assert not any(n.startswith(("sample_data/", "tests/", "pages/", "benchmarks/")) for n in names)
    assert {"crowdlab/cli.py", "crowdlab/models/dawid_skene.py", "crowdlab/ui/__init__.py"} <= names


@pytest.mark.slow
def test_installed_samples_command_lists_data_inside_the_install(installed):
    out = _run(installed, installed["crowdlab"], "samples").stdout
    env = installed["env"].resolve()
    for key, s in {**SAMPLES, **SEQUENCE_SAMPLES}.items():
        path = Path(next(w for w in out.split() if w.endswith(f"{s.folder}{os.sep}labels.csv")))
        assert path.is_file() and path.resolve().is_relative_to(env), (key, path)
        assert not path.resolve().is_relative_to(ROOT)


@pytest.mark.slow
def test_installed_load_sample_reads_the_bundled_sequences(installed):
    code = (
        "import json, crowdlab, crowdlab.io.samples as s; d = s.load_sample('ner'); b = s.load_sample('bluebirds'); "
        "print(json.dumps([crowdlab.__file__, str(s.sample_root()), d.n_items, b.n_items, b.n_workers]))"
    )
    where, root, n_tokens, n_birds, n_workers = json.loads(_run(installed, installed["python"], "-c", code).stdout)
    env = installed["env"].resolve()
    assert Path(where).resolve().is_relative_to(env) and Path(root).resolve().is_relative_to(env)
    assert (n_tokens, n_birds, n_workers) == (39025, 108, 39)


@pytest.mark.slow
def test_installed_fit_from_another_folder(installed):
    root = subprocess.run(
        [installed["python"], "-c", "import crowdlab.io.samples as s; print(s.sample_root())"],
        cwd=installed["work"],
        capture_output=True,
        text=True,
        env=_clean_env(),
    ).stdout.strip()
    birds = Path(root) / "welinder2010_bluebirds"
    proc = _run(
        installed, installed["crowdlab"], "fit", birds / "labels.csv", "--gold", birds / "gold.csv", "--out", "res"
    )
    assert "accuracy: 0.8981" in proc.stdout
    assert len((installed["work"] / "res" / "posteriors.csv").read_text().splitlines()) == 109


@pytest.mark.slow
def test_usage_line_names_the_command_the_user_typed(installed):
    assert _run(installed, installed["crowdlab"], "--help").stdout.startswith("usage: crowdlab ")
    assert _run(installed, installed["python"], "-m", "crowdlab", "--help").stdout.startswith(
        "usage: python -m crowdlab "
    )
