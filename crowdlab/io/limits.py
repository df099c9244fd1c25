"""The largest inputs crowdlab accepts, in one place, visible and changeable.

Every reader checks these before it does work proportional to a size it has not yet seen (a file, a row count, a
number of classes or workers, a position or a weight); past a limit it raises `DataError` saying which limit and
how to raise it, so a file never freezes the app or exhausts memory.

Change them for a session with environment variables (``CROWDLAB_MAX_FILE_MB=500 streamlit run app.py``; the
names are ``CROWDLAB_`` + the field name in upper case), or in Python::

    from crowdlab.io import limits
    limits.set_limits(max_classes=500)          # for this process
    with limits.override(max_file_mb=1000):     # for a block
        ...

The app's upload limit is Streamlit's ``server.maxUploadSize`` in ``.streamlit/config.toml``, set to
``max_file_mb`` (a test keeps the two equal).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace

__all__ = ["Limits", "get_limits", "override", "set_limits", "describe"]


@dataclass(frozen=True)
class Limits:
    """Sizes and values past which the readers refuse a file (with a `DataError`, never a hang)."""

    max_file_mb: float = 400
    """Largest file read, in MB (10^6 bytes). Streamlit's ``server.maxUploadSize`` matches it."""
    max_rows: int = 20_000_000
    """Most data rows in one file (a long file: labels)."""
    max_columns: int = 200_000
    """Most columns in one file (a wide file: workers + 1)."""
    max_cells: int = 50_000_000
    """Most cells (rows x columns) of a wide file."""
    max_classes: int = 100
    """Most distinct classes (Dawid-Skene keeps a classes x classes matrix per worker)."""
    max_workers: int = 200_000
    """Most distinct workers."""
    max_items: int = 10_000_000
    """Most items (for sequences: positions laid out, gaps included)."""
    max_confusion_cells: int = 100_000_000
    """Most entries of all workers' confusion matrices together (workers x classes^2; 800 MB of float64)."""
    max_abs_value: float = 1e12
    """Largest magnitude of a score, gold score or feature (squares and sums of squares must stay finite)."""
    max_weight: float = 1e6
    """Largest edge weight (the MRF multiplies its penalty by the weight)."""
    max_position: int = 2**53
    """Largest sequence position (beyond it positions are no longer exact as floats)."""
    max_position_gap: int = 100_000
    """Most unlabelled positions between two labelled ones of a sequence (each becomes an item)."""
    continuous_threshold: int = 20
    """kind "auto": numeric labels with more distinct values than this are read as continuous scores."""

    def env_name(self, field: str) -> str:
        return f"CROWDLAB_{field.upper()}"


def _from_env() -> Limits:
    base = Limits()
    changes = {}
    for f in fields(Limits):
        raw = os.environ.get(base.env_name(f.name))
        if raw is None or not raw.strip():
            continue
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{base.env_name(f.name)}={raw!r} is not a number.") from None
        changes[f.name] = value if f.type in ("float", float) else int(value)
    return replace(base, **changes)


_CURRENT: Limits = _from_env()


def get_limits() -> Limits:
    """The limits in force."""
    return _CURRENT


def set_limits(**changes) -> Limits:
    """Change some limits for this process (unknown names raise TypeError); returns the new limits."""
    global _CURRENT
    _CURRENT = replace(_CURRENT, **changes)
    return _CURRENT


@contextmanager
def override(**changes) -> Iterator[Limits]:
    """Change some limits inside a ``with`` block."""
    global _CURRENT
    old = _CURRENT
    _CURRENT = replace(old, **changes)
    try:
        yield _CURRENT
    finally:
        _CURRENT = old


def describe(lim: Limits | None = None) -> str:
    """One line a person reads: the main limits in force."""
    lim = lim or _CURRENT
    return (
        f"files up to {lim.max_file_mb:g} MB, {lim.max_rows:,} rows, {lim.max_columns:,} columns, "
        f"{lim.max_classes:,} classes, {lim.max_workers:,} workers, {lim.max_items:,} items"
    )


def how_to_raise(field: str, where: str = "python") -> str:
    """The sentence telling a user how to raise one limit, in the spelling of ``where``."""
    env = Limits().env_name(field)
    if where == "python":
        return f"To raise the limit, call crowdlab.io.limits.set_limits({field}=...) or set {env}."
    if where == "app":
        return f"To raise the limit, restart the app with the environment variable {env} set."
    return f"To raise the limit, set the environment variable {env}."


def as_dict() -> dict:
    return asdict(_CURRENT)
