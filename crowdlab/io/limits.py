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

Each value is checked once, when crowdlab is imported (:func:`check`): a whole number from 1 to 2^53 for the
counts, a positive finite number for ``max_abs_value`` and ``max_weight``, more than 0 and at most 10^9 MB for
``max_file_mb``. A variable outside its range (``abc``, ``nan``, ``inf``, ``1e999``, ``0``, ``-1``, ``2.5`` for a
count) never switches a limit off and never stops an import: its limit keeps the default, the command line stops
with a message naming the variable and the range, the app shows that message as a warning, and Python warns
(:class:`SettingWarning`). ``set_limits`` and ``override`` refuse such values with a `SettingError`.

The app's upload limit is Streamlit's ``server.maxUploadSize`` in ``.streamlit/config.toml``, set to
``max_file_mb`` (a test keeps the two equal).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace

from crowdlab.errors import SettingError


class SettingWarning(UserWarning):
    """A ``CROWDLAB_*`` environment variable was refused; its limit keeps the default."""


__all__ = ["Limits", "get_limits", "override", "set_limits", "describe", "setting_problems"]


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


INT_MAX = 2**53  # every whole-number limit: exact as a float, and far past what any machine holds

# the valid range of each limit: (smallest, largest, whether the smallest itself is allowed)
RANGES: dict[str, tuple[float, float, bool]] = {
    "max_file_mb": (0.0, 1e9, False),  # up to a petabyte; a fraction of a MB is allowed (tests use it)
    "max_abs_value": (0.0, 1.7976931348623157e308, False),  # any positive finite number
    "max_weight": (0.0, 1.7976931348623157e308, False),
}


def valid_range(field: str) -> str:
    """The valid values of one limit, as a person reads them."""
    if field == "max_file_mb":
        return f"a number of MB greater than 0 and at most {RANGES[field][1]:,.0f}"
    if field in RANGES:
        return "a positive finite number"
    return f"a whole number from 1 to {INT_MAX:,}"


def _show(v) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"


def check(field: str, value) -> float | int:
    """``value`` for limit ``field`` (a number or the text of an environment variable), as a float or an int;
    raises `SettingError` naming the limit and its valid range for anything else: text that is not a number,
    NaN, infinities, zero or negative, past the largest value, a fraction for a whole-number limit."""
    kinds = {f.name: f.type for f in fields(Limits)}
    if field not in kinds:
        raise TypeError(f"unknown limit {field!r}; the limits are {', '.join(kinds)}")
    env = f"CROWDLAB_{field.upper()}"
    shown = repr(value.strip()) if isinstance(value, str) else repr(value)

    def refuse(why: str) -> SettingError:
        return SettingError(f"{env}={shown} {why}: give {valid_range(field)}.")

    if isinstance(value, bool):
        raise refuse("is not a number")
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise refuse("is not a number") from None
    else:
        try:
            number = value if isinstance(value, int) else float(value)
        except (TypeError, ValueError, OverflowError):
            raise refuse("is not a number") from None
    if isinstance(number, float) and not math.isfinite(number):
        raise refuse("is not a finite number")
    if field in RANGES:
        lo, hi, closed = RANGES[field]
        if number < lo or (number == lo and not closed) or number > hi:
            raise refuse("is out of range")
        return float(number)
    if number != int(number):
        raise refuse("is not a whole number")
    if not 1 <= int(number) <= INT_MAX:
        raise refuse("is out of range")
    return int(number)


KERNELS_CHOICES = ("", "auto", "numba", "numpy")  # CROWDLAB_KERNELS (read by crowdlab.kernels; checked here)


def kernels_choice(environ=None) -> str:
    """``CROWDLAB_KERNELS`` as the kernels read it: trimmed and in lower case (``' numpy '`` and ``'numpy\\n'`` are
    ``numpy``), and ``auto`` for an empty or refused value (the refusal's message is among the setting problems)."""
    raw = (os.environ if environ is None else environ).get("CROWDLAB_KERNELS", "")
    choice = raw.strip().lower()
    return choice if choice in KERNELS_CHOICES[2:] else "auto"


def _from_env(environ=None) -> tuple[Limits, tuple[tuple[str, str], ...]]:
    """The limits set by ``CROWDLAB_*`` environment variables, each checked (:func:`check`); a bad one keeps
    its default and adds (its message, the default) to the problems returned (never raised: the app must start,
    and the CLI reports them inside its error handler)."""
    environ = os.environ if environ is None else environ
    base = Limits()
    changes, problems = {}, []
    for f in fields(Limits):
        raw = environ.get(base.env_name(f.name))
        if raw is None or not raw.strip():
            continue
        try:
            changes[f.name] = check(f.name, raw)
        except SettingError as exc:
            problems.append((str(exc), _show(getattr(base, f.name))))
    kernels = environ.get("CROWDLAB_KERNELS")
    if kernels is not None and kernels.strip().lower() not in KERNELS_CHOICES:
        why = "is not a choice: give numpy (the numpy code only), numba or auto (compiled where numba is installed)."
        problems.append((f"CROWDLAB_KERNELS={kernels.strip()!r} {why}", "auto"))
    return replace(base, **changes), tuple(problems)


_CURRENT, _PROBLEMS = _from_env()  # parsed once, when crowdlab is first imported


def setting_problems(*, defaults: bool = True) -> tuple[str, ...]:
    """The messages of the ``CROWDLAB_*`` environment variables that were refused (each setting kept its
    default; ``defaults``: each message says so): the CLI stops on them, the app shows them as a warning, Python
    warns on the first use of the limits (:class:`SettingWarning`)."""
    return tuple(f"{m} Until it is fixed, the default ({d}) is used." if defaults else m for m, d in _PROBLEMS)


_WARNED = False


def get_limits() -> Limits:
    """The limits in force (the first call warns about refused ``CROWDLAB_*`` variables, once)."""
    global _WARNED
    if _PROBLEMS and not _WARNED:
        _WARNED = True
        warnings.warn(" ".join(setting_problems()), SettingWarning, stacklevel=2)
    return _CURRENT


def set_limits(**changes) -> Limits:
    """Change some limits for this process (unknown names raise TypeError); returns the new limits."""
    global _CURRENT
    _CURRENT = replace(_CURRENT, **_checked(changes))
    return _CURRENT


def _checked(changes: dict) -> dict:
    out = {}
    for name, v in changes.items():
        try:
            out[name] = check(name, v)
        except SettingError as exc:  # from Python the message names the argument, not the variable
            raise SettingError(str(exc).replace(f"CROWDLAB_{name.upper()}=", f"{name}=", 1)) from None
    return out


@contextmanager
def override(**changes) -> Iterator[Limits]:
    """Change some limits inside a ``with`` block."""
    global _CURRENT
    old = _CURRENT
    _CURRENT = replace(old, **_checked(changes))
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


RAISE = "To raise the limit"  # how every refusal for a limit ends (the Data page looks for it)


def how_to_raise(field: str, where: str = "python") -> str:
    """The sentence telling a user how to raise one limit, in the spelling of ``where``."""
    env = Limits().env_name(field)
    if where == "python":
        return f"{RAISE}, call crowdlab.io.limits.set_limits({field}=...) or set {env}."
    if where == "app":
        return f"{RAISE}, restart the app with the environment variable {env} set."
    return f"{RAISE}, set the environment variable {env}."


def as_dict() -> dict:
    return asdict(_CURRENT)
