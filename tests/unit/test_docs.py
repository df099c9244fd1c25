"""Issue 41 section 3: the documentation site builds with warnings as errors, documents every public name and
every command-line option, and the examples in ``examples/`` run.

The site build (``mkdocs build --strict``, Material for MkDocs + mkdocstrings) takes 15-30 s on a 2-core machine:
marked slow (CI runs it; ``python3 dev.py test --all`` too). The examples run as scripts, in a subprocess, at the
sizes CI can afford: the 10^7-label streaming example at 10^5 labels (``--labels 100000``).
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API_PAGE = ROOT / "docs" / "reference" / "api.md"
EXAMPLES = ROOT / "examples"


def _env() -> dict[str, str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _hooks():
    spec = importlib.util.spec_from_file_location("crowdlab_docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_names() -> dict[str, object]:
    """Every public name of ``crowdlab`` (its __all__ and what it loads on first use, __dir__) and of
    ``crowdlab.frames`` (its __all__), with the object it names."""
    import crowdlab
    import crowdlab.frames

    names = {n for n in [*crowdlab.__all__, *dir(crowdlab)] if not n.startswith("_")}
    names -= {"annotations"}  # `from __future__ import annotations` in a module is not an API name
    out = {n: getattr(crowdlab, n) for n in names if not isinstance(getattr(crowdlab, n), type(sys))}
    out.update({n: getattr(crowdlab.frames, n) for n in crowdlab.frames.__all__})
    return out


def documented() -> set[str]:
    return set(re.findall(r"^::: ([\w.]+)$", API_PAGE.read_text(encoding="utf-8"), re.M))


def test_every_public_name_is_on_the_api_page():
    import crowdlab

    leaves: dict[str, list[str]] = {}
    for path in documented():
        leaves.setdefault(path.rsplit(".", 1)[1], []).append(path)
    missing = sorted(n for n in public_names() if n not in leaves)
    assert not missing, f"add to docs/reference/api.md: {missing}"
    for name, obj in public_names().items():  # an entry is the object itself, not only a namesake elsewhere
        found = []
        for path in leaves[name]:
            module, _, attr = path.rpartition(".")
            __import__(module)
            found.append(getattr(sys.modules[module], attr))
        assert any(f is obj for f in found), (name, leaves[name])
    assert crowdlab.__version__ and "__version__" not in leaves


def test_the_cli_reference_is_generated_from_the_parser():
    hooks = _hooks()
    page = hooks.cli_markdown()
    parser = hooks._parser()
    subs = hooks.subcommands(parser)
    assert {"fit", "samples", "app", "compare"} <= set(subs)
    for name, sub in subs.items():
        assert f"## `crowdlab {name}`" in page
        for action in sub._actions:
            for option in action.option_strings:
                assert option in page, (name, option)
            if action.help and action.help is not argparse.SUPPRESS and "%(" not in action.help:
                assert action.help.split()[0] in page
    assert hooks.MARKER in (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert "usage: crowdlab fit" in page and "python -m crowdlab" not in page.split("## `crowdlab app`")[0]


def test_the_nav_names_every_page():
    """Every Markdown page under docs/ is in mkdocs.yml's nav (strict mode also fails on one that is not)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert pages and all(f": {p}" in text for p in pages), sorted(p for p in pages if f": {p}" not in text)


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "-d", site],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "WARNING" not in log, log[-4000:]
    for page in (
        "index",
        "getting-started/lecturer",
        "getting-started/analyst",
        "getting-started/class",
        "data-formats",
        "models",
        "engines",
        "notation",
        "examples",
        "reference/cli",
        "changelog",
    ):
        assert (site / f"{page}.html").is_file(), page
    api = (site / "reference" / "api.html").read_text(encoding="utf-8")
    for path in documented():
        assert f'id="{path}"' in api, path
    assert ":func:" not in api and ":class:" not in api and "<code>~" not in api  # docs/hooks.py drops the roles
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    assert "--chunk-rows" in cli and "crowdlab-cli" not in cli  # the marker was replaced by the parser's text
    examples = html.unescape(re.sub(r"<[^>]+>", "", (site / "examples.html").read_text(encoding="utf-8")))
    for script in EXAMPLES.glob("*.py"):  # each script's own text is on the page (snippets), so it cannot drift
        first_line = script.read_text(encoding="utf-8").splitlines()[0].strip('"')
        assert first_line in examples, script.name
    assert "https://fonts.googleapis.com" not in (site / "index.html").read_text(encoding="utf-8")  # offline


def _run_example(name: str, *args: str, timeout: int = 300) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


def test_example_compare_methods_against_gold():
    out = _run_example("compare_methods.py")
    rows = dict(re.findall(r"^([a-z_]+)\s+(0\.\d+)\s+\d+\s+[\d.]+$", out, re.M))
    assert float(rows["ds"]) == pytest.approx(0.898148, abs=1e-6)
    assert float(rows["mv"]) == pytest.approx(0.759259, abs=1e-6)
    assert len(rows) == 12 and "least reliable workers" in out


def test_example_streams_a_label_file_at_ci_size():
    """The 10^7-label example, run here at 10^5 labels (--labels 100000): the file goes through the streaming
    engine and EM finds the simulated truth."""
    out = _run_example("stream_big_file.py", "--labels", "100000", "--chunk-rows", "20000")
    assert "wrote 100,000 labels" in out and "stop: converged" in out
    accuracy = float(re.search(r"accuracy against the simulated truth: ([\d.]+)", out).group(1))
    assert accuracy > 0.93


def test_example_llm_judges_soft_votes_and_dependence():
    out = _run_example("llm_judges.py")
    assert "soft votes: 3,643 weighted observations" in out
    assert re.search(r"^mv\s+0\.9075\s+0\.8975$", out, re.M)
    assert "on soft votes: 10 worker pairs" in out and "0 flagged" in out
    assert "on hard votes: 10 worker pairs" in out and "1 flagged" in out


def test_example_lecture_plan(tmp_path):
    plan = tmp_path / "plan.md"
    out = _run_example("lecture_plan.py", "--markdown", str(plan))
    text = plan.read_text(encoding="utf-8")
    assert text.strip() == out.strip() and text.startswith("# Lecture plan: ")
    assert "## 1. " in text and "/Lessons?present=1" in text and "{" not in text  # every outcome filled in
    listed = _run_example("lecture_plan.py", "--list")
    assert listed.split()[0] in {"em", "dependent", "risk", "trust", "copy"}
