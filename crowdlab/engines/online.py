"""An online-EM run with the interface of :class:`crowdlab.engines.run.Run`, so the one stepper drives it.

Each update of online EM (:mod:`crowdlab.models.online`) is two half-steps, as in batch EM:

- "E": the next block (one mini-batch of items, in this pass's seeded order) gets q_i, the exact maximiser of
  F_i with the parameters fixed; its F_i and predictions are recorded before any update (progressive
  validation);
- "M": the expected sufficient statistics move towards the block's by a step eta_t; the parameters follow.

``iteration`` counts completed passes (``max_iter`` = the model's ``passes``); the run is finished
(``converged``) when they are done. A snapshot record is light (kind, counters, the objectives, the block);
the parameters and the posterior of every item at a snapshot are materialised on demand: from the nearest stored
state (kept every ``checkpoint_every`` updates and at the end of every pass) the updates are replayed, which is
exact because the stream is deterministic given the seed. So Back and the scrubber recompute at most
``checkpoint_every`` updates; nothing else is recomputed.

``track_every``: every how many updates the batch objective log p(x | theta) and the accuracy against gold of
the whole data set are measured (the app: every update on small data; ``cl.fit``: at the end of each pass only,
so a pass over 10^6 labels stays fast). The progressive values of every block are always kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from crowdlab.engines.run import Snapshot
from crowdlab.io.annotations import Annotations
from crowdlab.io.metrics import accuracy
from crowdlab.models.dawid_skene import DawidSkene
from crowdlab.models.one_coin import OneCoin
from crowdlab.models.online import Block, OnlineDawidSkene, OnlineOneCoin, OnlineState, Progress, worker_buckets
from crowdlab.models.params import ClassParams


@dataclass(frozen=True, eq=False)
class Record:
    """One half-step of an online run (light: no parameters, no posterior)."""

    index: int
    kind: str  # "init", "E" or "M"
    iteration: int  # passes completed
    t: int  # updates done
    seen: int  # item blocks seen (progressive validation counter)
    epoch: int
    pos: int
    objective: float | None = None  # batch objective log p(x | theta) (+ log prior), when tracked
    accuracy: float | None = None  # of the whole data set's arg-max q against gold, when tracked
    progressive: float | None = None  # average F_i over every block seen so far
    block: Block | None = None  # on "E" records (and the "M" that follows): the block and its q_i
    violation: str | None = None
    bound: float | None = None
    changed: np.ndarray | None = None


class OnlineRun:
    """Online EM on ``data`` with ``model`` (an :class:`~crowdlab.models.online.OnlineDawidSkene`), as a list of
    half-step records and a cursor: ``step``, ``e_step``, ``m_step``, ``back``, ``goto``, ``reset``, ``run``,
    ``current``, ``labels``, ``history``, like :class:`crowdlab.engines.run.Run`."""

    iterative = True
    init = "online"
    progress_unit = "update"  # what ``run(progress=...)`` counts (the progress bar's word): updates, not iterations

    def __init__(
        self,
        data: Annotations,
        model: OnlineDawidSkene,
        *,
        track_every: int | None = 1,
        checkpoint_every: int = 64,
        keep_blocks: bool = True,
    ) -> None:
        model.check(data)
        self.data = data
        self.model = model
        self.seed = model.seed
        self.tol = 0.0
        self.max_iter = model.passes
        self.track_every = track_every
        self.checkpoint_every = max(int(checkpoint_every), 1)
        self.keep_blocks = keep_blocks
        self.stream = model.stream(data)
        self.start_description = (
            f"uniform class prior, confusion matrices with {model.init_accuracy:g} on the diagonal"
            + (f" (before the prior's {model.prior:g} pseudo-count per cell)" if model.prior > 0 else "")
            + "; "
            f"{model.batch_size} item{'s' if model.batch_size != 1 else ''} per update, {model.passes} "
            f"pass{'es' if model.passes != 1 else ''}"
        )
        self._start()

    # ------------------------------------------------------------------ state
    def _start(self) -> None:
        self.violations: list[str] = []
        state = self.model.init_state(self.stream)
        self._states: dict[int, OnlineState] = {0: state}
        self._tip = state  # the state after the last record
        self._order = (0, self.model.order(self.stream, 0))
        self.progress = Progress(self.data.class_names, self.data.gold if self.data.has_gold else None)
        obj, acc = self._measure(state)
        self.snapshots: list[Record] = [Record(0, "init", 0, 0, 0, 0, 0, obj, acc)]
        self.index = 0
        self._cache: dict[int, Snapshot] = {}

    def _order_for(self, epoch: int) -> np.ndarray:
        if self._order[0] != epoch:
            self._order = (epoch, self.model.order(self.stream, epoch))
        return self._order[1]

    def _measure(self, state: OnlineState) -> tuple[float, float | None]:
        """The batch objective and the accuracy against gold of every item under ``state``'s parameters."""
        params = self.model.params(self.stream, state)
        obj = self.model.log_likelihood(self.data, params)
        acc = None
        if self.data.has_gold:
            pred = np.argmax(self.model.e_step(self.data, params), axis=1)
            acc = accuracy(pred, self.data.gold)
        return obj, acc

    @property
    def finished(self) -> bool:
        """All passes done (at the last record)."""
        return self._tip.epoch >= self.model.passes

    @property
    def last(self) -> Record:
        return self.snapshots[-1]

    @property
    def at_end(self) -> bool:
        return self.index == len(self.snapshots) - 1

    @property
    def converged(self) -> bool:
        """Online EM stops after its passes (there is no convergence test); True when they are done."""
        return self.finished and self.last.kind != "E"

    @property
    def stop_reason(self) -> str | None:
        """ "passes" once every pass over the data is done (online EM has no convergence test), else None."""
        return "passes" if self.converged else None

    def stop_check(self) -> str | None:
        """Why the run would stop now (the engine's interface): "passes" when every pass is done, else None."""
        return self.stop_reason

    def kind_after(self, snap) -> str | None:
        if snap.kind == "E":
            return "M"
        if snap.index == len(self.snapshots) - 1 and self.finished:
            return None
        return "E"

    @property
    def next_kind(self) -> str | None:
        return self.kind_after(self.snapshots[self.index])

    @property
    def iteration(self) -> int:
        return self.snapshots[self.index].iteration

    def position_label(self) -> str:
        """ "pass 2, block 5 of 11, after E-step" for the cursor (the stepper shows it)."""
        r = self.snapshots[self.index]
        if r.kind == "init":
            return "start: no block seen yet"
        per_pass = -(-self.stream.n_items // self.model.batch_size)
        if r.kind == "E":
            n = r.pos // self.model.batch_size + 1
            return f"pass {r.epoch + 1}, block {n} of {per_pass}: after E-step (q for the block)"
        if r.pos == 0:  # the pass's last block: the counters have moved on to the next pass
            return f"pass {r.epoch}, block {per_pass} of {per_pass}: after M-step (statistics updated)"
        n = -(-r.pos // self.model.batch_size)
        return f"pass {r.epoch + 1}, block {n} of {per_pass}: after M-step (statistics updated)"

    # ------------------------------------------------------------------ moves
    def e_step(self) -> Record:
        """Evaluate the next block under the current parameters (q_i and F_i); nothing global changes."""
        if self.next_kind != "E":
            raise ValueError(f"The next half-step is {self.next_kind}, not E.")
        if not self.at_end:
            self.index += 1
            return self.snapshots[self.index]
        st = self._tip
        items = self.model.next_items(self.stream, st, self._order_for(st.epoch))
        block = self.model.evaluate(self.stream, st, items)
        self.progress.add(block)
        violation = None
        if not np.all(np.isfinite(block.F)):
            violation = f"non-finite Fᵢ in block at update {st.t + 1}"
            self.violations.append(violation)
        prev = self.last
        rec = Record(
            len(self.snapshots), "E", prev.iteration, st.t, st.seen + len(items), st.epoch, st.pos,
            prev.objective, prev.accuracy, self.progress.average, block, violation,
        )  # fmt: skip
        self.snapshots.append(rec)
        self.index = rec.index
        return rec

    def m_step(self) -> Record:
        """Move the statistics towards the block's by eta_t (stepwise EM) and re-derive the parameters."""
        if self.next_kind != "M":
            raise ValueError(f"The next half-step is {self.next_kind}, not M.")
        if not self.at_end:
            self.index += 1
            return self.snapshots[self.index]
        prev = self.last
        st = self.model.update(self.stream, self._tip, prev.block)
        self._tip = st
        pass_end = st.pos == 0
        track = pass_end or (self.track_every is not None and st.t % self.track_every == 0)
        obj, acc = self._measure(st) if track else (None, None)
        violation = None
        if obj is not None and not np.isfinite(obj):
            violation = f"non-finite objective after update {st.t}"
            self.violations.append(violation)
        idx = len(self.snapshots)
        if pass_end or st.t % self.checkpoint_every == 0:
            self._states[st.t] = st
        if st.epoch >= self.model.passes and prev.block is not None:
            self.progress.finish(prev.block)  # vw's last line, for the final example
        rec = Record(
            idx, "M", st.epoch, st.t, st.seen, st.epoch, st.pos, obj, acc, self.progress.average,
            prev.block, violation,
        )  # fmt: skip
        if not self.keep_blocks:
            self.snapshots[-1] = Record(**{**prev.__dict__, "block": None})
        self.snapshots.append(rec)
        self.index = idx
        return rec

    def step(self) -> Record:
        """One whole update: E then M (just M after an E-only step); nothing when all passes are done."""
        nk = self.next_kind
        if nk is None:
            return self.snapshots[self.index]
        if nk == "M":
            return self.m_step()
        self.e_step()
        return self.m_step()

    def back(self) -> Record:
        self.index = max(self.index - 1, 0)
        return self.snapshots[self.index]

    def goto(self, index: int) -> Record:
        self.index = int(np.clip(index, 0, len(self.snapshots) - 1))
        return self.snapshots[self.index]

    def reset(self):
        self._start()
        return self.current

    def run(
        self,
        tol: float | None = None,
        max_iter: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ):
        """Run the remaining passes (``max_iter`` may lower or raise the number of passes of this run).
        ``progress(t, total)`` after every update: the updates done and the run's total (:attr:`progress_unit`)."""
        if max_iter is not None and int(max_iter) != self.model.passes:
            self.model = self.model.with_options(passes=int(max_iter))
            self.max_iter = self.model.passes
        self.index = len(self.snapshots) - 1
        total = self.model.passes * -(-self.stream.n_items // self.model.batch_size)
        while self.next_kind is not None:
            self.step()
            if progress is not None:
                progress(self._tip.t, total)
            if should_stop is not None and should_stop():
                break
        return self.current

    # ------------------------------------------------------------------ materialised results
    def state_at(self, i: int) -> OnlineState:
        """The statistics after record ``i``: replayed from the nearest stored state (deterministic)."""
        target_t = self.snapshots[i].t  # the state is a function of the number of updates alone
        if target_t == self._tip.t:
            return self._tip
        st = self._states[max(t for t in self._states if t <= target_t)]
        while st.t < target_t:
            _, st = self.model.advance(self.stream, st, self._order_for(st.epoch))
        return st

    def _materialize(self, i: int) -> Snapshot:
        if i in self._cache:
            return self._cache[i]
        r = self.snapshots[i]
        params = self.model.params(self.stream, self.state_at(i))
        q = self.model.e_step(self.data, params)
        snap = Snapshot(i, r.kind, r.iteration, params, q, r.objective, None, np.zeros(0, np.int64), r.violation)
        if len(self._cache) > 4:
            self._cache.pop(next(iter(self._cache)))
        self._cache[i] = snap
        return snap

    @property
    def current(self) -> Snapshot:
        """The cursor's snapshot with its parameters (per worker) and the posterior of every item."""
        return self._materialize(self.index)

    @property
    def posterior(self) -> np.ndarray:
        return self.current.q

    @property
    def params(self):
        return self.current.params

    def labels(self, snap=None) -> np.ndarray:
        i = self.index if snap is None else snap.index
        return np.argmax(self._materialize(i).q, axis=1).astype(np.int32)

    def history(self) -> dict[str, np.ndarray]:
        """Per record: index, iteration, kind, objective (nan where not measured), bound (nan), and the online
        series: seen, updates, progressive average F_i, accuracy (nan where not measured), eta."""
        s = self.snapshots
        nan = float("nan")
        return {
            "index": np.array([x.index for x in s]),
            "iteration": np.array([x.iteration for x in s]),
            "kind": np.array([x.kind for x in s]),
            "objective": np.array([nan if x.objective is None else x.objective for x in s]),
            "bound": np.full(len(s), nan),
            "seen": np.array([x.seen for x in s]),
            "t": np.array([x.t for x in s]),
            "progressive": np.array([nan if x.progressive is None else x.progressive for x in s]),
            "accuracy": np.array([nan if x.accuracy is None else x.accuracy for x in s]),
        }

    def objective_history(self) -> list[float]:
        """The batch objective at the start and after every completed pass."""
        return [r.objective for r in self.snapshots if (r.kind == "init" or (r.kind == "M" and r.pos == 0))]

    def table(self, upto: int | None = None) -> list[dict]:
        """The progress table's rows (vw style) up to the cursor (or record ``upto``)."""
        seen = self.snapshots[self.index if upto is None else upto].seen
        return [row for row in self.progress.rows if row["example counter"] <= seen]


# ---------------------------------------------------------------------------- comparisons (the page, the benchmark)
def fast_fit(data: Annotations, model: OnlineDawidSkene, on_pass: Callable[[int, OnlineState], None] | None = None):
    """All passes on the fast path (no records): (stream, final state, progress table). ``on_pass(epoch, state)``
    is called after every pass."""
    stream = model.stream(data)
    state = model.init_state(stream)
    prog = Progress(data.class_names, data.gold if data.has_gold else None)
    last = [None]

    def seen(block: Block) -> None:
        prog.add(block)
        last[0] = block

    while state.epoch < model.passes:
        state = model.run_pass(stream, state, seen)
        if on_pass is not None:
            on_pass(state.epoch, state)
    prog.finish(last[0])
    return stream, state, prog


def batch_model(model: OnlineDawidSkene):
    """The batch EM model whose fixed point online ``model`` approximates: Dawid-Skene for ``online_ds``, one-coin
    for ``online_one_coin``, with the same prior (the same MAP M-step of the expected counts)."""
    return OneCoin(prior=model.prior) if isinstance(model, OnlineOneCoin) else DawidSkene(prior=model.prior)


def bucketed(data: Annotations, model: OnlineDawidSkene) -> Annotations:
    """``data`` with every worker replaced by its hash bucket (the buckets in use, renumbered 0 .. B' - 1): batch
    EM on it fits one matrix (or accuracy) per bucket, the model online EM fits. ``data`` itself without hashing."""
    if model.buckets is None:
        return data
    used, worker = np.unique(worker_buckets(data.worker_names, model.buckets, model.seed), return_inverse=True)
    return replace(data, worker=worker[data.worker], worker_names=tuple(f"bucket {b}" for b in used))


def batch_curves(data: Annotations, model: OnlineDawidSkene, max_iter: int = 100) -> dict:
    """Batch EM of the same model as online ``model`` from the same start, per complete iteration: the model of
    :func:`batch_model` (with hashing, on :func:`bucketed` data), started from the parameters online EM starts from
    (``model.params`` of ``model.init_state``), run with :class:`crowdlab.engines.run.Run` to convergence (at most
    ``max_iter`` iterations). Iteration 0 is then online EM's start exactly (the same objective and accuracy).
    Keys: ``iteration``, ``objective`` (log p(x | theta) + log prior), ``accuracy`` against gold (nan without
    gold; measured as online EM measures it), ``model`` (its short name) and ``start`` (how it starts, in words)."""
    from crowdlab.engines.run import Run

    stream = model.stream(data)
    p0 = model.params(stream, model.init_state(stream))
    tied = bucketed(data, model)
    # one worker per bucket in use (in order), and every worker's bucket among them
    _, first, of_worker = np.unique(stream.bucket_of_worker, return_index=True, return_inverse=True)
    batch = batch_model(model)
    if isinstance(batch, OneCoin):
        params0 = batch.params_from(p0.pi, p0.extra["theta"][first])
    else:
        params0 = ClassParams(pi=p0.pi, gamma=p0.gamma[first])
    run = Run(tied, batch, "params", params=params0, max_iter=max_iter)
    run.run()
    snaps = [s for s in run.snapshots if s.kind in ("init", "M")]

    def acc(s) -> float:  # measured as online EM measures it (the same E-step on the data, so ties break alike)
        if not data.has_gold:
            return float("nan")
        params = ClassParams(pi=s.params.pi, gamma=s.params.gamma[of_worker])
        return accuracy(np.argmax(model.e_step(data, params), axis=1), data.gold)

    return {
        "iteration": np.array([s.iteration for s in snaps], dtype=np.float64),
        "objective": np.array([s.objective for s in snaps], dtype=np.float64),
        "accuracy": np.array([acc(s) for s in snaps], dtype=np.float64),
        "model": "one-coin" if isinstance(batch, OneCoin) else "Dawid-Skene",
        "start": f"{model.init_accuracy:g} on the diagonal, uniform class prior",
    }


def bucket_grid(n_workers: int) -> list[int]:
    """B = 1, 2, 4, ... up to the first power of two at or above the number of workers."""
    out, b = [], 1
    while True:
        out.append(b)
        if b >= n_workers:
            return out
        b *= 2


def bucket_sweep(
    data: Annotations,
    model: OnlineDawidSkene,
    buckets: Sequence[int] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Final accuracy against gold (or, without gold, the batch objective per item) of ``model`` with each number
    of hash buckets in ``buckets`` (default :func:`bucket_grid`) and each hash seed; plus one matrix per worker.
    Keys: ``buckets``, ``values`` (len(buckets), len(seeds)), ``per_worker`` (len(seeds),), ``measure``."""
    buckets = list(buckets) if buckets is not None else bucket_grid(data.n_workers)
    measure = "accuracy" if data.has_gold else "log-likelihood per item"

    def score(m: OnlineDawidSkene) -> float:
        stream, state, _ = fast_fit(data, m)
        params = m.params(stream, state)
        if data.has_gold:
            return accuracy(np.argmax(m.e_step(data, params), axis=1), data.gold)
        return m.log_likelihood(data, params) / data.n_items

    total = (len(buckets) + 1) * len(seeds)
    done = 0
    values = np.empty((len(buckets), len(seeds)))
    per_worker = np.empty(len(seeds))
    for j, seed in enumerate(seeds):
        per_worker[j] = score(model.with_options(buckets=None, seed=seed))
        done += 1
        for i, b in enumerate(buckets):
            values[i, j] = score(model.with_options(buckets=b, seed=seed))
            done += 1
            if progress is not None:
                progress(done, total)
    return {"buckets": np.array(buckets), "values": values, "per_worker": per_worker, "measure": measure}
