"""Errors a person can act on.

`DataError` is raised for every bad input file or array. Its message names the file, the row and the column when
they are known, and says what would fix the problem; the app shows that message (never a traceback).
"""

from __future__ import annotations


class CrowdlabError(Exception):
    """Base class of crowdlab's own errors."""


class DataError(CrowdlabError, ValueError):
    """Bad input data, with a message that says where and what to do.

    Attributes
    ----------
    file, row, column:
        Where the problem is, when known (``row`` is 1-based as a spreadsheet shows it, header = row 1).
    hint:
        What would fix it.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | None = None,
        column: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.file = file
        self.row = row
        self.column = column
        self.hint = hint
        self.problem = message
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.file:
            where.append(f"file '{self.file}'")
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column:
            where.append(f"column '{self.column}'")
        text = self.problem
        if where:
            text = f"{', '.join(where)}: {text}"
        if self.hint:
            text = f"{text} {self.hint}"
        return text


class ModelError(CrowdlabError, ValueError):
    """A model was asked to do something it cannot do (e.g. two-coin on three classes), or given an option outside
    its range (a negative prior, Zero-Based Skill's ``lr`` past 2, online EM's ``rho`` outside [0, 1]): every model
    and baseline refuses with this one class (a ``ValueError`` too, so ``except ValueError`` catches it); a value of
    the wrong type (text for a number) is a ``TypeError``."""


class NotFittedError(CrowdlabError, ValueError, AttributeError):
    """A fitted attribute (``labels_``, ``run_``, ...) of an estimator was read before ``fit`` (the same bases as
    scikit-learn's ``NotFittedError``, so ``hasattr`` says False and ``except AttributeError`` catches it)."""


# the optional parts of crowdlab: pip extra -> the modules it installs (pyproject.toml's optional-dependencies)
EXTRAS = {"dask": ("dask", "distributed"), "fast": ("numba",), "app": ("streamlit", "plotly")}


class MissingExtra(CrowdlabError, ImportError):
    """An optional part of crowdlab was asked for, and its packages are not installed: the one-line message names
    the pip extra that installs them (``pip install "crowdlab[dask]"``)."""


def missing_modules(extra: str, modules: tuple[str, ...] | None = None) -> list[str]:
    """The modules of ``extra`` (see `EXTRAS`; or only ``modules`` of them) that cannot be imported here (found
    without importing them)."""
    import importlib.util
    import sys

    missing = []
    for name in modules or EXTRAS[extra]:
        if name in sys.modules:
            if sys.modules[name] is None:
                missing.append(name)
            continue
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


def extra_message(extra: str, what: str, missing: list[str]) -> str:
    """'``what`` needs dask, which is not installed: pip install "crowdlab[dask]".'"""
    verb = "is" if len(missing) == 1 else "are"
    return f'{what} needs {" and ".join(missing)}, which {verb} not installed: pip install "crowdlab[{extra}]".'


def require_extra(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise `MissingExtra` (its message: `extra_message`) when a module of ``extra`` (or of ``modules``) is
    missing."""
    missing = missing_modules(extra, modules)
    if missing:
        raise MissingExtra(extra_message(extra, what, missing))


class SettingError(CrowdlabError, ValueError):
    """A setting (a ``CROWDLAB_*`` environment variable, or a limit set from Python) outside its valid range; the
    message names the setting and the range."""
