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
    """A model was asked to do something it cannot do (e.g. two-coin on three classes)."""


class NotFittedError(CrowdlabError, ValueError, AttributeError):
    """A fitted attribute (``labels_``, ``run_``, ...) of an estimator was read before ``fit`` (the same bases as
    scikit-learn's ``NotFittedError``, so ``hasattr`` says False and ``except AttributeError`` catches it)."""


class SettingError(CrowdlabError, ValueError):
    """A setting (a ``CROWDLAB_*`` environment variable, or a limit set from Python) outside its valid range; the
    message names the setting and the range."""
