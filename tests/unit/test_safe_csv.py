"""CSV written by crowdlab never holds a cell that a spreadsheet runs as a formula (command line and Export page)."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crowdlab.analysis.export import csv_bytes, posterior_frame, worker_frame
from crowdlab.cli import main
from crowdlab.engines.fit import fit
from crowdlab.io import safe
from crowdlab.io.data import read_annotations

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
LABELS, GOLD = DATA / "hostile_long.csv", DATA / "hostile_gold.csv"
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def assert_no_formula(rows: list[list[str]]) -> None:
    for row in rows:
        for cell in row:
            assert not (cell.startswith(safe.FORMULA_START) and not NUMBER.match(cell)), (cell, row)


def test_csv_bytes_escapes_names_and_keeps_numbers():
    data = read_annotations(LABELS, gold=GOLD)
    run = fit(data, "ds")
    post = cells(csv_bytes(posterior_frame(run)).decode())
    assert_no_formula(post)
    header, body = post[0], post[1:]
    assert header[0] == "item" and header[1] == "p_![t](https://example.org/t.png)"
    assert header[2] == 'p_=HYPERLINK("https://example.org")'  # starts with p: not a formula
    labels = {r[header.index("label")] for r in body}
    assert labels <= {"![t](https://example.org/t.png)", '\'=HYPERLINK("https://example.org")'}
    items = [r[0] for r in body]
    assert "'+cmd|' /C calc'!A0" in items and "-3.5" in items  # a plain number stays as it is
    for r in body:
        float(r[1])  # probabilities stay numbers
    workers = cells(csv_bytes(worker_frame(run)).decode())
    assert_no_formula(workers)
    assert "'@SUM(A1)" in [r[0] for r in workers[1:]]


def _check_out(out: Path) -> None:
    for name in ("posteriors.csv", "labels.csv", "workers.csv"):
        rows = cells((out / name).read_text())
        assert len(rows) > 1
        assert_no_formula(rows)
    text = (out / "posteriors.csv").read_text()
    assert "'=HYPERLINK" in text and "'@SUM(A1)" not in text
    assert "'@SUM(A1)" in (out / "workers.csv").read_text()


@pytest.mark.parametrize("method", ["ds", "mv", "two_coin"])
def test_cli_fit_on_hostile_names_writes_escaped_csv(tmp_path, capsys, method):
    assert main(["fit", str(LABELS), "--method", method, "--gold", str(GOLD), "--out", str(tmp_path)]) == 0
    _check_out(tmp_path)
    printed = capsys.readouterr().out
    assert "\x1b" not in printed


def test_cli_as_a_process(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "crowdlab", "fit", str(LABELS), "--gold", str(GOLD), "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    _check_out(tmp_path)


def test_cli_summary_strips_terminal_control_characters(tmp_path, capsys):
    f = tmp_path / "esc.csv"
    f.write_text("item,worker,label\na,\x1b[31mred,x\nb,\x1b[31mred,y\na,w2,x\nb,w2,y\n")
    assert main(["fit", str(f), "--method", "ds", "--out", str(tmp_path / "out")]) == 0
    assert "\x1b" not in capsys.readouterr().out
