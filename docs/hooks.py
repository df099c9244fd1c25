"""MkDocs hook: the command-line reference (docs/reference/cli.md) is generated from crowdlab's own argparse parser
at every build, so it cannot drift from ``crowdlab --help``. The page holds the marker ``<!-- crowdlab-cli -->``;
this hook replaces it with one section per subcommand: its usage and help as the parser prints them, then a table of
its options."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- crowdlab-cli -->"
WIDTH = "100"  # argparse wraps at $COLUMNS: fixed, so the page is the same on every machine


def _parser() -> argparse.ArgumentParser:
    if str(ROOT) not in sys.path:  # a checkout without an install: the package beside docs/
        sys.path.insert(0, str(ROOT))
    from crowdlab.cli import build_parser

    argv0 = sys.argv[0] if sys.argv else ""
    sys.argv[:1] = ["crowdlab"]  # the installed command's name, not "python -m crowdlab" or "mkdocs"
    try:
        return build_parser()
    finally:
        sys.argv[:1] = [argv0]


def _help(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        return parser.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
        if action.choices is not None and not isinstance(action.choices, dict):
            value = " \\| ".join(f"`{c}`" for c in action.choices)
        elif action.nargs == 0:
            value = "(a flag)"
        else:
            value = f"`{action.metavar or action.dest.upper()}`"
        default = action.default
        shown = "" if default in (None, argparse.SUPPRESS, False) or action.nargs == 0 else f"`{default}`"
        text = action.help or ""
        if "%(" in text:
            text = text % {**vars(action), "prog": parser.prog}
        rows.append(f"| {name} | {value} | {shown} | {_cell(text)} |")
    if not rows:
        return []
    return ["| option | value | default | what it does |", "|---|---|---|---|", *rows, ""]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_markdown() -> str:
    """The reference as Markdown: the top-level command, then each subcommand."""
    parser = _parser()
    out = ["## `crowdlab`", "", "```text", _help(parser).rstrip(), "```", ""]
    for name, sub in subcommands(parser).items():
        out += [f"## `crowdlab {name}`", "", "```text", _help(sub).rstrip(), "```", ""]
        out += _options_table(sub)
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs' hook signature
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_markdown())
    return markdown


# Docstrings cite other objects with Sphinx roles (:func:`fit`); Markdown renders those as ":func:" before the code.
ROLE = re.compile(r":(?:func|meth|class|data|mod|attr|exc|obj):<code>~?")


def on_page_content(html: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs' hook signature
    """Pages without the roles' prefixes: ``:func:`fit``` shows as ``fit`` in code (and ``~x.y`` as ``x.y``)."""
    return ROLE.sub("<code>", html)
