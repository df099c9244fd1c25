"""Every Python block and every shell command of the README and of the documentation's guides runs as written,
where it can run here.

The README's first screen is its own test; the guides' Python blocks (docs/getting-started/analyst.md, then
docs/engines.md: the reference material that moved there from the README) run in order in one namespace (the
distributed one needs a cluster: tests/unit cover its API). Shell
commands: every ``python -m crowdlab ...`` line runs (big files stand in as the bundled bluebirds, in a scratch
folder); ``python3 dev.py ...`` (it installs into .venv, starts the app, or runs this suite) and ``pip install``
(``tests/unit/test_install.py`` installs the real wheel into a fresh venv) are the known exceptions, listed below so
that a new command in the README must be handled here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
BLUEBIRDS = "sample_data/welinder2010_bluebirds/labels.csv"
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDES = ("docs/getting-started/analyst.md", "docs/engines.md")  # their Python blocks run in this order
DOCS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
GUIDE_TEXT = "\n".join((ROOT / g).read_text(encoding="utf-8") for g in GUIDES)
ALL_TEXT = "\n".join([README, *((ROOT / d).read_text(encoding="utf-8") for d in DOCS)])
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*\s+")  # CROWDLAB_CLASS_SECRET='...' python3 dev.py app


def _blocks(text: str = GUIDE_TEXT) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _commands() -> list[str]:
    """Every command of the bash blocks of the README and docs/: continuation lines joined, comments dropped, and
    leading environment assignments dropped (the command is what follows them)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", ALL_TEXT, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            while ENV_ASSIGNMENT.match(line):
                line = ENV_ASSIGNMENT.sub("", line, count=1)
            if line:
                out.append(line)
    return out


def test_the_readme_first_screen(monkeypatch, capsys):
    """Issue 41: the first screen (its first 45 lines) says what crowdlab is for each of its three users, keeps
    the Quickstart commands (CI runs the test one), and gives the lines a data scientist needs: install,
    aggregate, probabilities, skills, compare; they run as written."""
    first = "\n".join(README.splitlines()[:45])
    for who in ("**A lecturer**", "**An analyst**", "**A class**"):
        assert who in first
    for cmd in ("python3 dev.py app", "python3 dev.py test", "python3 dev.py docs", "pip install ."):
        assert cmd in first
    (block,) = _blocks(first)
    for call in ("cl.aggregate(", "cl.proba(", ".skills_", ".eq(gold)"):
        assert call in block
    assert "pure numpy/scipy" not in README  # the core is numpy, scipy, pandas and pyarrow: README says why
    monkeypatch.chdir(ROOT)
    ns: dict = {}
    exec(block, ns)
    assert ns["probas"].shape == (108, 2) and len(ns["skills"]) == 39 and len(ns["labels"]) == 108
    printed = capsys.readouterr().out
    assert printed.startswith("{'mv': 0.759") and "'ds': 0.898" in printed


def test_the_guides_python_examples_run_in_order(monkeypatch, capsys):
    blocks = _blocks()
    assert len(blocks) == 6 and "Client(" in blocks[5]
    monkeypatch.chdir(ROOT)
    ns: dict = {"df": pd.read_csv(BLUEBIRDS).rename(columns={"item": "task"})}
    exec(blocks[0], ns)  # the five lines: read, fit, print
    printed = capsys.readouterr().out
    assert printed.startswith("['1', '1', ") and printed.rstrip().endswith("converged")
    exec(blocks[1], ns)  # a pip user's bundled sample
    assert ns["data"].n_items == 108 and ns["data"].has_gold and ns["run"].stop_reason == "converged"
    exec(blocks[2], ns)  # pandas, crowd-kit style
    assert ns["labels"].index.name == "task" and set(ns["labels"]) <= {0, 1}
    assert list(ns["post"].columns) == [0, 1] and ns["ds"].stop_reason_ == "converged"
    exec(blocks[3], ns)  # online EM, on the data of the first block
    assert len(ns["run"].progress.rows) > 0
    exec(blocks[4].replace('"big_labels.csv"', repr(BLUEBIRDS)), ns)  # streaming
    assert ns["run"].stop_reason == "converged"


NOT_RUN = {  # command prefix -> why it does not run here
    "python3 dev.py": "installs into .venv, starts the app or runs this suite",
    "pip install": "tests/unit/test_install.py installs the real wheel (slow)",
    "crowdlab app": "starts the server: tests/unit/test_install.py runs it from the installed wheel (slow)",
    "CROWDLAB_CLASS_SECRET=": "starts the app for a class on the network (tests/app/test_class_pages.py: the secret)",
}


def _runnable(cmd: str, tmp: Path) -> list[str] | None:
    args = shlex.split(cmd)
    if any(cmd.startswith(p) for p in NOT_RUN):
        return None
    assert args[:3] == ["python", "-m", "crowdlab"], f"a README command this test does not know: {cmd}"
    if "--scheduler" in args:
        return None  # needs a running Dask scheduler: tests/unit cover the option
    stand_in = str(ROOT / BLUEBIRDS)
    args = [stand_in if a in ("big_labels.csv", "data/*.parquet", "data/*.csv") else a for a in args]
    args = [str(ROOT / a) if a.startswith("sample_data/") else a for a in args]
    args = [str(tmp / a) if a == "results/" else a for a in args]
    return [sys.executable, *args[1:]]


@pytest.mark.slow
def test_every_readme_shell_command_runs(tmp_path):
    commands = _commands()
    ran = []
    for cmd in commands:
        args = _runnable(cmd, tmp_path)
        if args is None:
            continue
        proc = subprocess.run(
            args, cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        assert proc.returncode == 0, (cmd, proc.stderr[-2000:])
        ran.append(cmd)
    assert len(ran) >= 3 and any("--engine dask" in c for c in ran) and any("--stream" in c for c in ran)


def test_the_readme_commands_are_all_known():
    """Each command is either run above or a listed exception (a typo'd command would fail here, quickly)."""
    assert any(c.startswith("python3 dev.py app --server.address 0.0.0.0") for c in _commands())
    for cmd in _commands():
        if not any(cmd.startswith(p) for p in NOT_RUN):
            assert cmd.startswith("python -m crowdlab "), cmd
            assert shlex.split(cmd)[3] in ("fit", "samples", "compare"), cmd


def test_the_readme_tells_the_truth_it_promised():
    """Issue 30: the baselines where they live, pip users' samples, docs/ not DESIGN.md, the other CROWDLAB."""
    import crowdlab as cl

    for name in ("Wawa", "ZeroBasedSkill", "KOS", "MMSR"):
        assert f"`cl.{name}`" in README and hasattr(cl, name)
    assert "crowdlab.baselines" not in README and "DESIGN.md" not in README
    assert "load_sample" in README and ". .venv/bin/activate" in README
    assert "Goh, Tkachenko & Mueller 2022" in README and "../shared/datasets" in README
    for extra in ("app", "fast", "dask"):
        assert f'pip install ".[{extra}]"' in README


def test_majority_vote_is_as_the_readme_says():
    import crowdlab as cl

    data = cl.read_annotations(ROOT / BLUEBIRDS)
    run = cl.fit(data, "mv")
    assert run.params is None and run.stop_reason is None and len(run.labels()) == data.n_items
