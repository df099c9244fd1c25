"""crowdlab installed as a user installs it: a real wheel in a fresh virtual environment, used from another folder.

The wheel is built offline (``pip wheel --no-deps --no-build-isolation``) from a clean copy of the package's
sources, installed with ``--no-deps`` into a new venv that sees the test environment's site-packages (numpy,
pandas, ...) through a ``.pth`` file placed after its own, and then run from a folder outside the repository: the
``crowdlab`` command, ``python -m crowdlab`` and ``load_sample`` must all find the bundled data inside the install,
and ``crowdlab app`` must serve the installed copy of the app (issue 41).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest

from crowdlab.io.samples import SAMPLES, SEQUENCE_SAMPLES, sample_root

ROOT = Path(__file__).resolve().parents[2]
BIN = "Scripts" if os.name == "nt" else "bin"
EXE = ".exe" if os.name == "nt" else ""
# A Python whose setuptools can build a wheel without downloading anything (setuptools >= 70.1 has bdist_wheel
# itself; 77 reads pyproject's SPDX `license` expression). A wheel of pure Python is the same whoever builds it.
CAN_BUILD = (
    "import setuptools as s, setuptools.build_meta, importlib.util as u; "
    "v = tuple(int(x) for x in s.__version__.split('.')[:2]); "
    "assert v >= (77, 0) and u.find_spec('pip')"
)
# what a build reads besides the package: setup.py copies the app's files into the wheel (crowdlab/_app/)
BUILD_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "LICENSE", "README.md", "app.py")
BUILD_FOLDERS = ("crowdlab", "sample_data", "pages", ".streamlit")


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
    for name in BUILD_FILES:
        shutil.copy2(ROOT / name, src)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in BUILD_FOLDERS:
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
    assert not any(n.startswith(("sample_data/", "tests/", "pages/", "benchmarks/", "app.py", "dev.py")) for n in names)
    assert {"crowdlab/cli.py", "crowdlab/models/dawid_skene.py", "crowdlab/ui/__init__.py"} <= names


@pytest.mark.slow
def test_wheel_carries_the_app_and_the_licence(wheel):
    """The app's files as crowdlab/_app/ (what `crowdlab app` serves), the licence, and the metadata `pip show` reads:
    issue 41 found License, Author and the app missing."""
    zf = zipfile.ZipFile(wheel)
    names = set(zf.namelist())
    app = {"app.py", ".streamlit/config.toml", *(f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py"))}
    assert {f"crowdlab/_app/{n}" for n in app} <= names
    for n in app:
        assert zf.read(f"crowdlab/_app/{n}") == (ROOT / n).read_bytes(), n
    assert not any(n.startswith("crowdlab/_app/") and n.removeprefix("crowdlab/_app/") not in app for n in names)
    meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    head = dict(line.split(": ", 1) for line in meta.split("\n\n", 1)[0].splitlines() if ": " in line)
    assert head["License-Expression"] == "BSD-3-Clause" and head["Author"] == "crowdlab developers"
    licence = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert zf.read(licence) == (ROOT / "LICENSE").read_bytes()


@pytest.mark.slow
def test_wheel_is_typed_and_carries_the_version(wheel):
    """PEP 561: the wheel carries crowdlab/py.typed, so type checkers read the hints; the wheel's version is
    crowdlab.__version__ (one number, tagged v<version>)."""
    import crowdlab

    names = set(zipfile.ZipFile(wheel).namelist())
    assert "crowdlab/py.typed" in names
    assert wheel.name.startswith(f"crowdlab-{crowdlab.__version__}-")
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == crowdlab.__version__


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


# ------------------------------------------------------------------ the pip user's path: the core only, then the CLI
CORE = ("numpy", "scipy", "pandas", "pyarrow", "tqdm")


def _closure(names) -> list:
    """The installed distributions of ``names`` and everything they require (extras left out)."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    todo, seen, out = list(names), set(), []
    while todo:
        dist = md.distribution(todo.pop())
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen.add(key)
        out.append(dist)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return out


@pytest.fixture(scope="module")
def pip_user(wheel, tmp_path_factory) -> dict[str, Path]:
    """A fresh venv that holds only the core's dependencies (linked from the test environment, with their
    dist-info, so that pip sees them installed), then ``pip install --no-index`` of the wheel, dependencies resolved
    as a user's install resolves them, without the network. No dask, numba, plotly or streamlit in it."""
    pytest.importorskip("packaging")
    tmp = tmp_path_factory.mktemp("pipuser")
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    py = env_dir / BIN / f"python{EXE}"
    purelib = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            env=_clean_env(),
        ).stdout.strip()
    )
    for dist in _closure(CORE):
        base = Path(dist.locate_file(""))
        for top in {f.parts[0] for f in dist.files or () if f.parts[0] != ".."}:
            if (base / top).exists() and not (purelib / top).exists():
                (purelib / top).symlink_to(base / top)
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-index", "--disable-pip-version-check"]
    proc = subprocess.run([*pip, "-q", str(wheel)], capture_output=True, text=True, env=_clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    work = tmp / "elsewhere"
    work.mkdir()
    return {"env": env_dir, "python": py, "crowdlab": env_dir / BIN / f"crowdlab{EXE}", "work": work}


def _run_any(installed: dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args], cwd=installed["work"], capture_output=True, text=True, env=_clean_env(), timeout=300
    )


@pytest.mark.slow
def test_pip_user_path_with_the_core_only(pip_user):
    """pip install . (dependencies resolved, core only), then from another folder: crowdlab samples, a fit of
    load_sample's data, and --engine dask without the extra: one line naming it (issue 30)."""
    py, cmd = pip_user["python"], pip_user["crowdlab"]
    have = _run_any(pip_user, py, "-c", "import importlib.util as u; print([m for m in "
                    "('dask', 'distributed', 'numba', 'plotly', 'streamlit') if u.find_spec(m)])").stdout  # fmt: skip
    assert have.strip() == "[]", have
    samples = _run_any(pip_user, cmd, "samples")
    assert samples.returncode == 0 and "bluebirds" in samples.stdout, samples.stderr
    code = (
        "import crowdlab as cl; from crowdlab.io.samples import load_sample; "
        "run = cl.fit(load_sample('bluebirds'), 'ds'); print(run.stop_reason, len(run.labels()))"
    )
    fit = _run_any(pip_user, py, "-c", code)
    assert fit.stdout.split() == ["converged", "108"], fit.stderr
    birds = samples.stdout.split()[samples.stdout.split().index("bluebirds") :]
    labels = next(w for w in birds if w.endswith("labels.csv"))
    out = _run_any(pip_user, cmd, "fit", labels, "--out", "res")
    assert out.returncode == 0 and "108 items, 39 workers" in out.stdout, out.stderr
    dask = _run_any(pip_user, cmd, "fit", labels, "--engine", "dask", "--out", "res2")
    assert dask.returncode == 2 and dask.stdout == ""
    assert dask.stderr.count("\n") == 1 and 'pip install "crowdlab[dask]"' in dask.stderr, dask.stderr
    pipe = subprocess.Popen([str(cmd), "samples"], cwd=pip_user["work"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pipe.stdout.close()
    assert pipe.wait(timeout=120) == 0 and pipe.stderr.read() == b""
    app = _run_any(pip_user, cmd, "app")  # without the app's extra: one line naming it, nothing started
    assert app.returncode == 2 and app.stderr.count("\n") == 1 and 'pip install "crowdlab[app]"' in app.stderr, app
    version = _run_any(pip_user, cmd, "--version")
    assert version.stdout.startswith("crowdlab ") and version.returncode == 0


# --------------------------------------------------------------------------------- crowdlab app, from the install
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status, r.read()


@pytest.mark.slow
def test_installed_app_command_serves_the_installed_pages(installed):
    """`crowdlab app --server.headless true --server.port P` from another folder: Streamlit answers its health check
    on 127.0.0.1 (the app's default address), runs the installed app.py (not the checkout's), and serves the pages;
    the installed copy's pages run without an exception. Then it is stopped."""
    port = _free_port()
    env = {k: v for k, v in _clean_env().items() if not k.startswith("STREAMLIT_")}
    args = [installed["crowdlab"], "app", "--server.headless", "true", "--server.port", str(port)]
    proc = subprocess.Popen(
        [str(a) for a in args], cwd=installed["work"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline, health = time.monotonic() + 90, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = _get(f"http://127.0.0.1:{port}/_stcore/health")
                break
            except OSError:
                time.sleep(0.3)
        assert health == (200, b"ok"), (proc.poll(), proc.stdout.read() if proc.poll() is not None else "")
        assert _get(f"http://127.0.0.1:{port}/Step_through_EM")[0] == 200
        if sys.platform.startswith("linux"):  # the server is this process (exec), running the installed app.py
            cmd = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
            app = Path(next(a.decode() for a in cmd if a.endswith(b"app.py")))
            assert app.resolve().is_relative_to(installed["env"].resolve()) and app.parent.name == "_app"
            assert b"--server.address=127.0.0.1" in cmd
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    code = (
        "import json; from streamlit.testing.v1 import AppTest; from crowdlab.io.app_files import app_root; "
        "from crowdlab.ui.frame import NAV; root = app_root(); "
        "runs = [AppTest.from_file(str(root / p), default_timeout=60).run() for p in ('app.py', 'pages/1_Data.py')]; "
        "print(json.dumps([str(root), len(NAV), [len(r.exception) for r in runs]]))"
    )
    root, n_nav, errors = json.loads(_run(installed, installed["python"], "-c", code).stdout.splitlines()[-1])
    assert Path(root).resolve().is_relative_to(installed["env"].resolve())
    assert n_nav == 1 + len(list((ROOT / "pages").glob("*.py"))) and errors == [0, 0]
