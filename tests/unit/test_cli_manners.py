"""The command line behaves like a command line (issue 30): a closed pipe ends it quietly, ``--version``, a missing
file that names a bundled sample points at ``crowdlab samples``, and the API's refusals speak the API's words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import crowdlab as cl
from crowdlab.cli import main

ROOT = Path(__file__).resolve().parents[2]
BIRDS = ROOT / "sample_data" / "welinder2010_bluebirds" / "labels.csv"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("args", [["samples"], ["fit", str(BIRDS), "--out", "OUT"]], ids=["samples", "fit"])
def test_a_closed_pipe_ends_quietly_with_status_0(args, tmp_path):
    args = [str(tmp_path / "o") if a == "OUT" else a for a in args]
    proc = subprocess.Popen(
        [sys.executable, "-m", "crowdlab", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    proc.stdout.close()  # the reader is gone before the first line (as `| head -0`; `| head -1` soon after it)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == ""
    if args[0] == "fit":
        assert (tmp_path / "o" / "posteriors.csv").is_file()  # the files are written before the summary


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"crowdlab {cl.__version__}"


# a bare sample name ("bluebirds") is read as that sample (issue 41; tests/unit/test_cli_people.py)
@pytest.mark.parametrize("given", ["sample_data/welinder2010_bluebirds/labels.csv", "sample_data/x.csv"])
def test_a_missing_file_naming_a_sample_points_at_the_samples(given, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # outside the checkout, where sample_data/... does not exist
    assert main(["fit", given, "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err and "samples` lists" in err
    if "bluebirds" in given:
        assert str(BIRDS) in err


def test_a_missing_file_naming_nothing_known_is_just_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "nope.csv", "--out", "o"]) == 2
    assert "samples" not in capsys.readouterr().err


@pytest.mark.parametrize("method", ["ibcc", "mace_vb"])
def test_refusing_hard_em_speaks_the_apis_words(method, capsys):
    with pytest.raises(ValueError) as info:
        cl.make_model(method, hard=True)
    assert "untick" not in str(info.value) and "hard=False" in str(info.value)
    assert main(["fit", str(BIRDS), "--method", method, "--hard", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert "drop --hard" in err and "untick" not in err and "hard=False" not in err


def test_a_first_fit_imports_only_what_it_needs(tmp_path):
    """Start-up (issue 30): ``import crowdlab`` loads neither scipy nor pandas; ``crowdlab fit`` with its worker
    report never imports scipy.stats (1-2 s), plotly or numba (bluebirds is far below the kernels' first-use gate)."""
    code = (
        "import sys, io, contextlib; import crowdlab\n"
        "light = not any(m.split('.')[0] in ('scipy', 'pandas', 'pyarrow') for m in sys.modules)\n"
        "from crowdlab.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): main(['fit', {str(BIRDS)!r}, '--out', {str(tmp_path)!r}])\n"
        "print(light, [m for m in ('scipy.stats', 'plotly', 'numba', 'streamlit') if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert proc.stdout.strip() == "True []", proc.stdout + proc.stderr
