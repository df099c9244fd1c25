"""The README's Python examples run as written (the distributed one needs a cluster: tests/unit cover its API)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
BLUEBIRDS = "sample_data/welinder2010_bluebirds/labels.csv"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_the_readme_python_examples_run_in_order(monkeypatch, capsys):
    blocks = _blocks()
    assert len(blocks) == 5 and "Client(" in blocks[4]
    monkeypatch.chdir(ROOT)
    ns: dict = {"df": pd.read_csv(BLUEBIRDS).rename(columns={"item": "task"})}
    exec(blocks[0], ns)  # the five lines: read, fit, print
    printed = capsys.readouterr().out
    assert printed.startswith("['1', '1', ") and printed.rstrip().endswith("converged")
    exec(blocks[1], ns)  # pandas, crowd-kit style
    assert ns["labels"].index.name == "task" and set(ns["labels"]) <= {0, 1}
    assert list(ns["post"].columns) == [0, 1] and ns["ds"].stop_reason_ == "converged"
    exec(blocks[2], ns)  # online EM, on the data of the first block
    assert len(ns["run"].progress.rows) > 0
    exec(blocks[3].replace('"big_labels.csv"', repr(BLUEBIRDS)), ns)  # streaming
    assert ns["run"].stop_reason == "converged"


def test_majority_vote_is_as_the_readme_says():
    import crowdlab as cl

    data = cl.read_annotations(ROOT / BLUEBIRDS)
    run = cl.fit(data, "mv")
    assert run.params is None and run.stop_reason is None and len(run.labels()) == data.n_items
