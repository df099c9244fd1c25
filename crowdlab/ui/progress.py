"""What a wait over half a second shows: a progress bar whose text says what is being done, how far it is, how fast
it goes and how long is left, from the speed measured so far (issue 26: the Sequences page promised "about a
second" for a 23 s start; Compare methods stood at "GLAD (4 of 11)" for 42 s with no sign of life).

:func:`pace` writes the words (pure, so tests can check them with a fake clock); :class:`Pace` is the callback that
the engines call once per iteration (``progress(iteration, max_iter)``, :meth:`crowdlab.engines.run.Run.run`) and
that updates a Streamlit bar at most ten times a second. A fit stops at convergence, usually well before its
iteration limit, so the time left is an upper bound ("at most"), never a promise.
"""

from __future__ import annotations

import time
from collections.abc import Callable

UPDATE_EVERY = 0.1  # s between two updates of a bar (each is a message to the browser)


def seconds(s: float) -> str:
    """A duration in words: "0.4 s", "12 s", "3 min 05 s"."""
    if s < 10:
        return f"{s:.1f} s"
    if s < 60:
        return f"{s:.0f} s"
    m, r = divmod(int(round(s)), 60)
    return f"{m} min {r:02d} s"


def pace(done: int, total: int | None, elapsed: float, unit: str = "iteration", *, bound: bool = True) -> str:
    """``done`` of ``total`` ``unit``s after ``elapsed`` seconds, the measured time per unit and the time left at
    that speed: "iteration 37 of at most 500 · 0.21 s each · at most 1 min 37 s left". ``bound``: ``total`` is a
    limit the work may stop before (an iteration limit: "at most"); else it is the exact count. Without a total,
    or before the first unit is done: what is done and the time so far."""
    if done <= 0 or elapsed <= 0:
        return f"{unit} {max(done, 0):,} · {seconds(max(elapsed, 0.0))} so far"
    each = elapsed / done
    rate = f"{seconds(each)} each" if each >= 0.05 else f"{done / elapsed:,.0f} {unit}s a second"
    if not total:
        return f"{unit} {done:,} · {rate} · {seconds(elapsed)} so far"
    left = max(total - done, 0) * each
    most = "at most " if bound else ""
    return f"{unit} {done:,} of {most}{total:,} · {rate} · {most}{seconds(left)} left"


class Pace:
    """``Pace(show, what)``: a ``progress(done, total)`` callback that calls ``show(fraction, text)`` (a bar's
    ``progress``) with ``"<what>: <pace(...)>"``, at most every :data:`UPDATE_EVERY` seconds (and always for the
    first unit, so a slow first iteration is seen at once). ``clock``: for tests."""

    def __init__(
        self,
        show: Callable[[float, str], object],
        what: str,
        unit: str = "iteration",
        *,
        bound: bool = True,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.show, self.what, self.unit, self.bound, self.clock = show, what, unit, bound, clock
        self.start = clock()
        self.last = None

    def text(self, done: int, total: int | None) -> str:
        return f"{self.what}: {pace(done, total, self.clock() - self.start, self.unit, bound=self.bound)}"

    def __call__(self, done: int, total: int | None) -> None:
        now = self.clock()
        if self.last is not None and now - self.last < UPDATE_EVERY:
            return
        self.last = now
        fraction = min(done / total, 1.0) if total else 0.0
        self.show(fraction, self.text(done, total))


class MethodsPace:
    """The bar of a run of several methods (Compare methods): ``method(i, n, title)`` before each method and
    ``iteration(iteration, max_iter)`` inside its fit call ``show(fraction, text)`` with "GLAD (4 of 11): iteration
    37 · 0.21 s each · 7.8 s on it, 21 s in all". The fit's iteration limit (10,000) is far above where it stops, so
    no time left is claimed for a method, only its measured pace; the bar fills by methods done."""

    def __init__(self, show: Callable[[float, str], object], *, clock: Callable[[], float] = time.perf_counter):
        self.show, self.clock = show, clock
        self.start = clock()
        self.i, self.n, self.title = 0, 1, ""
        self.inner: Pace | None = None

    def _all(self) -> str:
        return f"{seconds(self.clock() - self.start)} in all"

    def method(self, i: int, n: int, title: str) -> None:
        self.i, self.n, self.title = i, max(n, 1), title
        self.inner = Pace(self._iteration_shown, f"{title} ({i + 1} of {n})", clock=self.clock)
        text = "done" if i >= n else f"{title} ({i + 1} of {n}) · {self._all()}"
        self.show(min(i / self.n, 1.0), text)

    def _iteration_shown(self, fraction: float, text: str) -> None:
        self.show(min(self.i / self.n, 1.0), text)

    def iteration(self, iteration: int, max_iter: int) -> None:
        if self.inner is None:
            return
        inner = self.inner
        if inner.last is not None and self.clock() - inner.last < UPDATE_EVERY:
            return
        inner.last = self.clock()
        on_it = pace(iteration, None, self.clock() - inner.start)
        self.show(min(self.i / self.n, 1.0), f"{inner.what}: {on_it.replace(' so far', ' on it')}, {self._all()}")
