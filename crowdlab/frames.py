"""The API analysts already know: pandas in, pandas out, and scikit-learn-style estimators.

::

    import crowdlab as cl
    labels = cl.aggregate(df, method="ds", prior=1.0)      # Series: task -> label
    probs = cl.proba(df, method="ds")                       # DataFrame: task x class
    ds = cl.DawidSkene(prior=1.0).fit(df)                   # labels_, probas_, errors_, skills_, run_
    ds.fit_predict(df)

``df`` has the columns crowd-kit uses (``task``, ``worker``, ``label``) or crowdlab's (``item``, ``worker``,
``label``; the reader's aliases such as ``annotator`` or ``answer`` work too). Results are indexed by the task
column's own values and labels come back in the label column's own values and dtype (ints stay ints, categorical
stays categorical). Text is read as the CSV reader reads it: surrounding spaces go, a blank value is refused, and
two candidate columns for one role (``worker`` and ``annotator``) are refused rather than one picked. This is a
thin layer: the same models, the same EM engine (:class:`crowdlab.em.Run`) and the same baselines
(:mod:`crowdlab.baselines`) as everywhere else; ``run_`` is the :class:`~crowdlab.em.Run` for the EM methods.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from crowdlab.data import Annotations
from crowdlab.errors import DataError

__all__ = [
    "GLAD",
    "IBCC",
    "KOS",
    "MACE",
    "MMSR",
    "DawidSkene",
    "MajorityVote",
    "OneCoin",
    "TwoCoin",
    "Wawa",
    "ZeroBasedSkill",
    "aggregate",
    "from_dataframe",
    "proba",
]

TASK_ALIASES = ("task", "item", "question", "item_id", "task_id")
WORKER_ALIASES = ("worker", "annotator", "labeler", "labeller", "rater", "worker_id", "performer")
LABEL_ALIASES = ("label", "answer", "response", "class", "output")


def _column(df: pd.DataFrame, aliases: tuple[str, ...], role: str) -> str:
    lower = {str(c).strip().lower(): c for c in df.columns}
    found = [lower[a] for a in aliases if a in lower]
    if len(found) > 1:  # as the reader: two candidates are a question, not a choice to make silently
        raise DataError(
            f"The DataFrame has {len(found)} {role} columns ({', '.join(map(repr, found))}): drop or rename all "
            "but one."
        )
    if found:
        return found[0]
    raise DataError(
        f"The DataFrame has no {role} column (looked for {', '.join(aliases)}; "
        f"it has {', '.join(map(str, df.columns))})."
    )


def _stripped(col: pd.Series, role: str) -> pd.Series:
    """Text values without surrounding spaces (as the CSV reader reads them: " y" and "y" are one class);
    a value that is blank after that is refused, as the reader refuses a blank cell. Other values are kept, and a
    numeric column is returned as it is. Vectorised (``.str``), for frames of 10^8 rows; a categorical column
    keeps its categories' order."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = col.cat.categories
        new = pd.Series(cats).str.strip() if cats.dtype.kind in "OUT" or cats.dtype == "str" else None
        if new is None or new.isna().all():
            return col
        new = new.where(new.notna(), pd.Series(cats))
        if (new == "").any():
            raise DataError(f"A {role} category of the DataFrame is blank: fill it in or drop its rows first.")
        if new.is_unique:
            return col.cat.rename_categories(list(new))
        return col.astype(object).str.strip().astype(pd.CategoricalDtype(pd.unique(new), ordered=False))
    if col.dtype.kind != "O" and col.dtype != "str":
        return col
    stripped = col.str.strip()  # NaN where a cell is not text (NaN cells were refused before)
    text = stripped.notna()
    if not text.any():
        return col
    blank = stripped.eq("").to_numpy(dtype=bool, na_value=False)
    if blank.any():
        rows = np.flatnonzero(blank)[:5].tolist()
        raise DataError(f"Rows {rows} of the DataFrame have a blank {role}: fill them in or drop them first.")
    return stripped.where(text, col)


class _Frame:
    """The Annotations built from a DataFrame, with the original task and label values to map results back."""

    def __init__(self, df: pd.DataFrame, gold: pd.Series | dict | None = None) -> None:
        if not isinstance(df, pd.DataFrame):
            raise DataError(
                f"Expected a pandas DataFrame with task, worker and label columns, got {type(df).__name__}."
            )
        tcol = _column(df, TASK_ALIASES, "task")
        wcol = _column(df, WORKER_ALIASES, "worker")
        lcol = _column(df, LABEL_ALIASES, "label")
        sub = df[[tcol, wcol, lcol]]
        missing = sub.isna().any(axis=1).to_numpy()
        if missing.any():
            rows = np.flatnonzero(missing)[:5].tolist()
            raise DataError(f"Rows {rows} of the DataFrame have a missing task, worker or label: drop them first.")
        if len(sub) == 0:
            raise DataError("The DataFrame has no rows.")
        item, self.tasks = pd.factorize(_stripped(sub[tcol], "task"), sort=True)
        worker, self.workers = pd.factorize(_stripped(sub[wcol], "worker"), sort=True)
        label, self.classes = pd.factorize(_stripped(sub[lcol], "label"), sort=True)
        self.tasks, self.workers, self.classes = pd.Index(self.tasks), pd.Index(self.workers), pd.Index(self.classes)
        self.task_name = tcol
        g = None
        if gold is not None:
            gold = pd.Series(gold)
            pos = self.tasks.get_indexer(gold.index)
            cls = self.classes.get_indexer(gold.to_numpy())
            ok = (pos >= 0) & (cls >= 0)
            if len(gold) and not ok.any():  # gold that matches nothing is a mistake (often a dtype: "7" vs 7)
                raise DataError(
                    f"None of the {len(gold):,} gold labels matches the DataFrame: gold tasks "
                    f"{_sample(gold.index)} (dtype {gold.index.dtype}) against tasks {_sample(self.tasks)} (dtype "
                    f"{self.tasks.dtype}); gold labels {_sample(gold)} (dtype {gold.dtype}) against classes "
                    f"{_sample(self.classes)} (dtype {self.classes.dtype})."
                )
            g = np.full(len(self.tasks), -1, dtype=np.int32)
            g[pos[ok]] = cls[ok]
        self.data = Annotations(
            item.astype(np.int32),
            worker.astype(np.int32),
            label.astype(np.int32),
            tuple(str(t) for t in self.tasks),
            tuple(str(w) for w in self.workers),
            tuple(str(c) for c in self.classes),
            gold=g,
            name="DataFrame",
        )

    def labels(self, codes: np.ndarray) -> pd.Series:
        """The label column's own values and dtype (categorical stays categorical), indexed by task."""
        return pd.Series(self.classes.take(codes), index=pd.Index(self.tasks, name=self.task_name), name="agg_label")

    def probas(self, q: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            q, index=pd.Index(self.tasks, name=self.task_name), columns=pd.Index(self.classes, name="label")
        )

    def per_worker(self, values: np.ndarray, name: str) -> pd.Series:
        return pd.Series(values, index=pd.Index(self.workers, name="worker"), name=name)

    def errors(self, gamma: np.ndarray) -> pd.DataFrame:
        """crowd-kit's layout: rows (worker, label said), columns the true label, P(said | true)."""
        M, K, _ = gamma.shape
        index = pd.MultiIndex.from_product([self.workers, self.classes], names=["worker", "label"])
        return pd.DataFrame(gamma.reshape(M * K, K), index=index, columns=pd.Index(self.classes, name="label"))


def _sample(values, n: int = 3) -> str:
    shown = list(pd.unique(np.asarray(values, dtype=object)))[:n]
    return "[" + ", ".join(map(repr, shown)) + (", ...]" if len(values) > n else "]")


def from_dataframe(df: pd.DataFrame, gold: pd.Series | dict | None = None) -> Annotations:
    """:class:`~crowdlab.data.Annotations` from a DataFrame with task/item, worker and label columns; ``gold``
    maps task -> label (tasks or labels it does not know are ignored)."""
    return _Frame(df, gold).data


class _Aggregator:
    """Base of the estimators: ``fit(df)`` sets ``labels_``, ``probas_`` and ``skills_``; EM ones also ``errors_``
    (the confusion matrices) and ``run_``. ``fit_predict`` / ``fit_predict_proba`` return labels / probabilities."""

    method: str = ""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.labels_: pd.Series | None = None
        self.probas_: pd.DataFrame | None = None
        self.skills_: pd.Series | None = None

    def get_params(self, deep: bool = True) -> dict:
        return dict(self.options)

    def set_params(self, **options: Any) -> _Aggregator:
        self.options.update(options)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{type(self).__name__}({args})"

    def fit(self, df: pd.DataFrame, gold: pd.Series | dict | None = None) -> _Aggregator:
        frame = _Frame(df, gold)
        self._fit(frame)
        return self

    def _fit(self, frame: _Frame) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def fit_predict(self, df: pd.DataFrame) -> pd.Series:
        return self.fit(df).labels_

    def fit_predict_proba(self, df: pd.DataFrame) -> pd.DataFrame:
        return self.fit(df).probas_


class _EM(_Aggregator):
    """An EM model run to convergence through :func:`crowdlab.fit` (options: prior, init, hard, seed, tol,
    max_iter, and the model's own)."""

    FIT_KEYS = ("init", "prior", "hard", "seed", "tol", "max_iter")

    def _fit(self, frame: _Frame) -> None:
        self._fit_as(frame, self.method, self.options)

    def _fit_as(self, frame: _Frame, method: str, options: dict) -> None:
        from crowdlab.api import fit

        fit_kw = {k: v for k, v in options.items() if k in self.FIT_KEYS}
        model_kw = {k: v for k, v in options.items() if k not in self.FIT_KEYS}
        run = fit(frame.data, method, model_options=model_kw or None, **fit_kw)
        self.run_ = run
        self.stop_reason_ = run.stop_reason  # "converged", "stalled" or "max_iter" (crowdlab.em.STOP_REASONS)
        self.labels_ = frame.labels(run.labels())
        self.probas_ = frame.probas(run.posterior)
        params = run.params
        if hasattr(params, "gamma"):
            self.errors_ = frame.errors(params.gamma)
            self.skills_ = frame.per_worker(params.worker_accuracy(), "skill")
        if hasattr(params, "pi"):
            self.priors_ = pd.Series(params.pi, index=pd.Index(frame.classes, name="label"), name="prior")


class _NotEM(_Aggregator):
    def _fit(self, frame: _Frame) -> None:
        from crowdlab.baselines import BASELINES

        result = BASELINES[self.method][1](frame.data, **self.options)
        self.result_ = result
        self.labels_ = frame.labels(result.labels)
        self.probas_ = frame.probas(result.scores)
        self.skills_ = frame.per_worker(result.skills, "skill")


class MajorityVote(_Aggregator):
    """Majority vote: ``probas_`` split ties evenly; ``labels_`` break ties by ``tie_break`` ("frequent": the most
    frequent class overall, the default; "random" with ``tie_seed``; "first": the first worker's label);
    ``tied_`` flags the tied tasks."""

    method = "mv"

    def _fit(self, frame: _Frame) -> None:
        from crowdlab.models.majority import majority_labels, majority_posterior, tied_items

        rule = self.options.get("tie_break", "frequent")
        labels = majority_labels(frame.data, tie_break=rule, seed=self.options.get("tie_seed", 0))
        self.labels_ = frame.labels(labels)
        self.tied_ = pd.Series(tied_items(frame.data), index=self.labels_.index, name="tied")
        self.probas_ = frame.probas(majority_posterior(frame.data))
        d = frame.data
        hit = (d.label == labels[d.item]).astype(float)
        skill = np.bincount(d.worker, weights=hit, minlength=d.n_workers) / np.bincount(d.worker, minlength=d.n_workers)
        self.skills_ = frame.per_worker(skill, "skill")


class DawidSkene(_EM):
    """Dawid & Skene (1979) by EM: a confusion matrix per worker and a class prior (``prior`` > 0: MAP)."""

    method = "ds"


class OneCoin(_EM):
    """One accuracy per worker, errors spread evenly over the other classes."""

    method = "one_coin"


class TwoCoin(_EM):
    """Sensitivity and specificity per worker (binary labels; Raykar et al. 2010)."""

    method = "two_coin"


class GLAD(_EM):
    """GLAD (Whitehill et al. 2009): worker ability and item difficulty; ``skills_`` = abilities alpha_j,
    ``difficulties_`` = 1 / beta_i per task."""

    method = "glad"

    def _fit(self, frame: _Frame) -> None:
        super()._fit(frame)
        p = self.run_.params
        self.skills_ = frame.per_worker(p.alpha, "skill")
        self.difficulties_ = pd.Series(p.difficulty, index=self.labels_.index, name="difficulty")


class MACE(_EM):
    """MACE (Hovy et al. 2013): ``spamming_`` = P(worker j is spamming) = 1 - theta_j; ``skills_`` = theta_j.

    ``inference="em"`` (default): EM with MAP priors (:class:`crowdlab.models.MACE`); ``inference="vb"``: the
    paper's variational Bayes (:class:`crowdlab.models.MaceVB`, like crowd-kit's ``MACE(method="vb")``), which
    also sets ``spamming_intervals_`` (the 95% credible interval of P(spamming) per worker)."""

    method = "mace"

    def _fit(self, frame: _Frame) -> None:
        from crowdlab.models.mace import spam_intervals

        options = dict(self.options)
        inference = options.pop("inference", "vb" if self.method == "mace_vb" else "em")
        if inference not in ("em", "vb"):
            raise ValueError(f"MACE's inference must be 'em' or 'vb', not {inference!r}.")
        self._fit_as(frame, "mace_vb" if inference == "vb" else "mace", options)
        p = self.run_.params
        self.skills_ = frame.per_worker(p.theta, "skill")
        self.spamming_ = frame.per_worker(p.spamming, "spamming")
        if inference == "vb":
            lo, hi = spam_intervals(p, 0.95)
            index = pd.Index(frame.workers, name="worker")
            self.spamming_intervals_ = pd.DataFrame({"lower": lo, "upper": hi}, index=index)


class _MaceVB(MACE):
    """``aggregate(df, "mace_vb")``: MACE with ``inference="vb"``."""

    method = "mace_vb"


class IBCC(_EM):
    """Bayesian Dawid-Skene by variational Bayes (Kim & Ghahramani 2012): ``errors_`` are the posterior means of
    the confusion matrices; the run's objective is the ELBO."""

    method = "ibcc"


class Wawa(_NotEM):
    """Agreement-with-majority-weighted vote (:func:`crowdlab.baselines.wawa`)."""

    method = "wawa"


class ZeroBasedSkill(_NotEM):
    """Zero-Based Skill (:func:`crowdlab.baselines.zero_based_skill`)."""

    method = "zbs"


class KOS(_NotEM):
    """Karger, Oh & Shah (2011) message passing, binary labels (:func:`crowdlab.baselines.kos`)."""

    method = "kos"


class MMSR(_NotEM):
    """M-MSR, Ma & Olshevsky (2020) (:func:`crowdlab.baselines.mmsr`)."""

    method = "mmsr"


ESTIMATORS: dict[str, type[_Aggregator]] = {
    cls.method: cls
    for cls in (MajorityVote, DawidSkene, OneCoin, TwoCoin, GLAD, MACE, _MaceVB, IBCC, Wawa, ZeroBasedSkill, KOS, MMSR)
}


def _estimator(method: str, options: dict) -> _Aggregator:
    from crowdlab.models import ALIASES, MODELS

    key = ALIASES.get(method, method)
    if key in ESTIMATORS:
        return ESTIMATORS[key](**options)
    if key in MODELS:  # any other EM model in the registry (e.g. one added later) works through the engine
        est = _EM(**options)
        est.method = key
        return est
    choices = sorted(set(ESTIMATORS) | set(MODELS))
    raise DataError(f"Unknown method {method!r}; choose one of {', '.join(choices)}.")


def aggregate(df: pd.DataFrame, method: str = "ds", **options: Any) -> pd.Series:
    """The aggregated label of every task (a Series indexed by task, in the label column's own values)."""
    return _estimator(method, options).fit(df).labels_


def proba(df: pd.DataFrame, method: str = "ds", **options: Any) -> pd.DataFrame:
    """The posterior (EM methods) or normalised vote shares (baselines) of every task: rows = tasks, columns =
    classes, rows summing to 1."""
    return _estimator(method, options).fit(df).probas_
