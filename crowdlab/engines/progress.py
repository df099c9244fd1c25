"""Progress bars for long fits (issue 41: TREC ran 244 s to its iteration limit in silence).

Every engine's loop already takes ``progress(done, total)``, called once per iteration (online EM: per update; the
streaming engine's first pass: per chunk of rows, total None) and never when it is None, so a fit without a bar
pays nothing. :class:`ProgressBar` is such a callback drawing a tqdm bar; the command line shows one on a terminal
(:func:`on_terminal`), never into a pipe or with ``--quiet``, and the DataFrame estimators take ``progress=True``
(tqdm's notebook widget in Jupyter, a text bar elsewhere).

tqdm is a core dependency: pure Python, no dependencies of its own, and it draws the notebook widget and the
terminal bar alike; without it (an install that skipped dependencies) a fit runs as before, without a bar.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

Progress = Callable[[int, "int | None"], None]


def on_terminal(stream=None) -> bool:
    """True when ``stream`` (default: stderr, where the bar is drawn) is a terminal, not a pipe or a file."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed, or no isatty
        return False


class ProgressBar:
    """``progress(done, total)`` as a tqdm bar, made on the first call (so ``total`` is the run's own: its
    ``max_iter``, or None when unknown). ``close()`` (or leaving a ``with`` block) ends it; after a run that stopped
    before the limit (converged) the bar ends at what was done, not at a limit never reached.

    ``notebook``: tqdm.auto (the Jupyter widget where there is one); else the text bar on ``file`` (stderr).
    ``leave``: keep the finished bar on screen (the command line clears it: its summary says the same)."""

    def __init__(
        self, desc: str = "EM", unit: str = "iteration", *, file=None, notebook: bool = False, leave: bool = False
    ) -> None:
        self.desc, self.unit, self.file, self.notebook, self.leave = desc, unit, file, notebook, leave
        self.bar = None
        self.done = 0
        self.off = False  # no tqdm here: calls do nothing

    def __call__(self, done: int, total: int | None) -> None:
        if self.bar is None:
            if self.off:
                return
            self.bar = self._make(total)
            if self.bar is None:
                self.off = True
                return
        if total != self.bar.total:
            self.bar.total = total
        step = int(done) - self.done
        self.done = int(done)
        self.bar.update(step)  # tqdm redraws at most every mininterval (0.1 s): cheap per iteration

    def _make(self, total: int | None):
        try:
            if self.notebook:
                from tqdm.auto import tqdm
            else:
                from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is a core dependency; an install without it runs without a bar
            return None
        return tqdm(
            total=total,
            desc=self.desc,
            unit=self.unit,
            file=self.file if self.file is not None else (None if self.notebook else sys.stderr),
            leave=self.leave,
            dynamic_ncols=True,
        )

    def close(self) -> None:
        if self.bar is None:
            return
        if self.bar.total is not None and self.done < self.bar.total:
            self.bar.total = self.done  # stopped before the limit: the bar ends full at what was done
        self.bar.close()
        self.bar = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def as_callback(progress, desc: str = "EM", unit: str = "iteration") -> tuple[Progress | None, ProgressBar | None]:
    """A ``progress=`` option as (callback for the engine, bar to close afterwards): False/None: none (no cost);
    True: a :class:`ProgressBar` for notebooks (tqdm.auto), kept on screen; a callable ``f(done, total)`` as it is."""
    if progress is None or progress is False:
        return None, None
    if progress is True:
        bar = ProgressBar(desc, unit, notebook=True, leave=True)
        return bar, bar
    if callable(progress):
        return progress, None
    raise TypeError(f"progress must be True, False or a function f(done, total), not {progress!r}.")
