"""The API analysts already know: pandas in, pandas out, and scikit-learn-style estimators.

::

    import crowdlab as cl
    labels = cl.aggregate(df, method="ds")                  # Series: task -> label
    probs = cl.proba(df, method="ds")                       # DataFrame: task x class
    ds = cl.DawidSkene().fit(df)                            # labels_, probas_, errors_, skills_, run_, n_iter_
    ds.fit_predict(df, gold=gold)                           # gold (for the metrics) only by keyword

``gold`` is keyword-only everywhere: crowd-kit's ``fit(df, true_labels)`` means "these tasks' classes are known",
which crowdlab spells ``DawidSkene(known=true_labels).fit(df)``; a second positional argument is a TypeError that
says so, never silently read as something else.

``df`` has the columns crowd-kit uses (``task``, ``worker``, ``label``) or crowdlab's (``item``, ``worker``,
``label``; the reader's aliases such as ``annotator`` or ``answer`` work too). Results are indexed by the task
column's own values, sorted (rows sorted by task, probability columns by class), and labels come back in the label
column's own values and dtype (ints stay ints, categorical stays categorical); ``skills_`` is indexed by the worker
column's values and named after it. Text is read as the CSV reader reads it: surrounding spaces go, a blank value is
refused, and so is a column that mixes text with other values (1 and "1"), and two candidate columns for one role
(``worker`` and ``annotator``, or ``worker`` and ``Worker``) are refused rather than one picked. Options are
checked when an estimator is built (``get_params()`` lists them with their defaults). This is a
thin layer: the same models, the same EM engine (:class:`crowdlab.engines.run.Run`) and the same baselines
(:mod:`crowdlab.models.baselines`) as everywhere else; ``run_`` is the :class:`~crowdlab.engines.run.Run` for the EM
methods.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from crowdlab.engines.limits import MAX_ITER
from crowdlab.errors import DataError, NotFittedError
from crowdlab.io.annotations import Annotations
from crowdlab.io.values import _check_sizes as check_sizes
from crowdlab.models.baselines import option_int, option_real, option_seed

__all__ = [
    "GLAD",
    "IBCC",
    "KOS",
    "MACE",
    "MMSR",
    "EBCC",
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

TASK_ALIASES = ("task", "item", "question", "item_id", "task_id", "hit_id")  # hit_id: MTurk's HITId
WORKER_ALIASES = ("worker", "annotator", "labeler", "labeller", "rater", "worker_id", "performer")
LABEL_ALIASES = ("label", "answer", "response", "class", "output")


def _column(df: pd.DataFrame, aliases: tuple[str, ...], role: str, what: str = "The DataFrame") -> str:
    """The one column of ``df`` whose name (stripped, any case, CamelCase as words: ``WorkerId``) is one of
    ``aliases``; two or more (``worker`` and ``annotator``, ``worker`` and ``Worker``, or two called ``label``) are
    refused, as the reader refuses them. The label of an MTurk batch file is its one ``Answer.*`` column."""
    from crowdlab.io.columns import ANSWER_PREFIX, _norm

    names = [_norm(str(c)) for c in df.columns]
    found = [c for a in aliases for c, n in zip(df.columns, names, strict=True) if n == a]
    if not found and aliases is LABEL_ALIASES:
        found = [c for c, n in zip(df.columns, names, strict=True) if n.startswith(ANSWER_PREFIX)]
    if len(found) > 1:  # as the reader: two candidates are a question, not a choice to make silently
        raise DataError(
            f"{what} has {len(found)} {role} columns ({', '.join(map(repr, found))}): drop or rename all but one."
        )
    if found:
        return found[0]
    raise DataError(
        f"{what} has no {role} column (looked for {', '.join(aliases)}; it has {', '.join(map(str, df.columns))})."
    )


def _rows(index: pd.Index, mask: np.ndarray) -> str:
    """The index labels of the first five rows where ``mask`` holds (what ``df.loc`` finds them by)."""
    return repr(index[mask][:5].tolist())


def _refuse_mixed(col: pd.Series, role: str, name) -> bool:
    """For an object column: refuse bytes, values that cannot name anything (lists, dicts) and text mixed with
    other values (1 and "1" would be two different classes that print alike); True when the values are text.
    pandas' type inference is one C pass; only a column it calls mixed is looked at value by value."""
    kind = pd.api.types.infer_dtype(col, skipna=True)
    if kind in ("string", "empty"):
        return True
    if kind not in ("bytes", "mixed", "mixed-integer"):
        return False  # numbers, dates, ...: no text
    types = col.map(type)
    kinds = list(pd.unique(types))
    fix = f"convert the column to one type first, e.g. df[{name!r}] = df[{name!r}].astype(str)"
    for t in kinds:
        if issubclass(t, bytes):
            raise DataError(
                f"The {role} column {name!r} holds bytes ({col[types == t].iloc[0]!r}): decode them first, e.g. "
                f"df[{name!r}] = df[{name!r}].str.decode('utf-8')."
            )
        if t.__hash__ is None:
            raise DataError(
                f"The {role} column {name!r} holds {t.__name__} values ({col[types == t].iloc[0]!r}), which cannot "
                f"name a {role}: {fix}."
            )
    text = [t for t in kinds if issubclass(t, str)]
    if text and len(text) < len(kinds):
        is_text = types.isin(text).to_numpy()
        a, b = col[is_text].iloc[0], col[~is_text].iloc[0]
        raise DataError(
            f"The {role} column {name!r} mixes text with other values ({a!r} and {b!r}; 1 and '1' would be two "
            f"different {role}s): {fix}."
        )
    return bool(text)


def _stripped(col: pd.Series, role: str, name=None) -> pd.Series:
    """Text values without surrounding spaces (as the CSV reader reads them: " y" and "y" are one class);
    a value that is blank after that is refused, as the reader refuses a blank cell, and so is a column that mixes
    text with other values (see ``_refuse_mixed``). A numeric column is returned as it is. Vectorised (``.str``),
    for frames of 10^8 rows; a categorical column keeps its categories' order."""
    name = role if name is None else name
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = col.cat.categories
        if not (cats.dtype.kind in "OUT" or cats.dtype == "str") or not _refuse_mixed(pd.Series(cats), role, name):
            return col
        new = pd.Series(cats).str.strip()
        if (new == "").any():
            raise DataError(f"A {role} category of the DataFrame is blank: fill it in or drop its rows first.")
        if new.is_unique:
            return col.cat.rename_categories(list(new))
        return col.astype(object).str.strip().astype(pd.CategoricalDtype(pd.unique(new), ordered=False))
    if col.dtype.kind != "O" and col.dtype != "str":
        return col
    if not isinstance(col.dtype, pd.StringDtype) and not _refuse_mixed(col, role, name):
        return col
    stripped = col.str.strip()
    blank = stripped.eq("").to_numpy(dtype=bool, na_value=False)
    if blank.any():
        raise DataError(
            f"Rows {_rows(col.index, blank)} (index labels) of the DataFrame have a blank {role}: fill them in or "
            "drop them first."
        )
    return stripped


def _factorize(col: pd.Series, role: str, name) -> tuple[np.ndarray, pd.Index]:
    try:
        codes, uniques = pd.factorize(col, sort=True)
    except TypeError as exc:  # values of types that do not compare (1 and (1, 2)): one line, not pandas' traceback
        raise DataError(
            f"The {role} column {name!r} holds values that cannot be sorted together ({exc}): convert the column "
            f"to one type first, e.g. df[{name!r}] = df[{name!r}].astype(str)."
        ) from None
    return codes, pd.Index(uniques)


def _names(values: pd.Index) -> tuple[str, ...]:
    """``tuple(str(v) for v in values)``, from a plain list (iterating an Arrow-backed index value by value took
    0.4 s for 600,000 text ids)."""
    return tuple(map(str, values.tolist()))


class _Frame:
    """The Annotations built from a DataFrame, with the original task and label values to map results back."""

    def __init__(self, df: pd.DataFrame, gold: pd.Series | pd.DataFrame | dict | None = None, abstain=None) -> None:
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
            raise DataError(
                f"Rows {_rows(sub.index, missing)} (index labels) of the DataFrame have a missing task, worker or "
                "label: drop them first."
            )
        if len(sub) == 0:
            raise DataError("The DataFrame has no rows.")
        item, self.tasks = _factorize(_stripped(sub[tcol], "task", tcol), "task", tcol)
        worker, self.workers = _factorize(_stripped(sub[wcol], "worker", wcol), "worker", wcol)
        label, self.classes = _factorize(_stripped(sub[lcol], "label", lcol), "label", lcol)
        # the reader's limits and messages, before anything of size items x classes is allocated
        check_sizes(None, "python", items=len(self.tasks), workers=len(self.workers), classes=len(self.classes))
        self.task_name, self.worker_name, self.label_name = tcol, wcol, lcol
        g = None
        if gold is not None:
            gold = _gold_series(gold)
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
            _names(self.tasks),
            _names(self.workers),
            _names(self.classes),
            gold=g,
            name="DataFrame",
        )
        self.responses = pd.Index([], dtype=self.classes.dtype)
        self._read_abstentions(abstain)

    def _read_abstentions(self, abstain) -> None:
        """``abstain``: a label value (or values) meaning "can't tell", read as a response that is not a class, as
        ``read_annotations(..., abstain=)`` does (:func:`crowdlab.io.abstain.with_abstentions`); without it, a label
        spelled like one gets the reader's note in ``data.notes``."""
        from crowdlab.io.abstain import _responses

        tokens = None
        if abstain is not None:
            given = [abstain] if isinstance(abstain, str) or not np.iterable(abstain) else list(abstain)
            tokens = [str(c) for c, v in zip(self.data.class_names, self.classes) if v in given or str(v) in given]
            if not tokens:
                tokens = [str(t) for t in given]  # none is a label: the reader's note says so
        data = _responses(self.data, tokens, "python")
        notes = tuple(n.replace("read_annotations(..., ", "fit(df, ") for n in data.notes)
        if notes != data.notes:  # a new Annotations checks every name again: only when something changed
            data = replace(data, notes=notes)
        if data.response_names:
            keep = [self.data.class_names.index(c) for c in data.class_names]
            gone = [self.data.class_names.index(c) for c in data.response_names]
            self.classes, self.responses = self.classes.take(keep), self.classes.take(gone)
        self.data = data

    def known_codes(self, known) -> np.ndarray:
        """``known=`` (a mapping or Series task -> label, in the DataFrame's own values) as (n_tasks,) class codes
        (-1: not known). A task or a label the data does not have is an error, never read as a position."""
        if isinstance(known, pd.Series):
            keys, values = known.index, known.to_numpy()
        else:
            keys = pd.Index(list(known.keys()), tupleize_cols=False)
            values = np.array(list(known.values()) + [None], dtype=object)[:-1]  # tuples stay whole
        pos = _lookup(self.tasks, self.data.item_names, keys)
        bad = np.flatnonzero(pos < 0)
        if bad.size:
            raise DataError(
                f"known=: task {_plain(keys[bad[0]])!r} is not in the data (its tasks: {_sample(self.tasks)}, dtype "
                f"{self.tasks.dtype})."
            )
        cls = _lookup(self.classes, self.data.class_names, pd.Index(values, tupleize_cols=False))
        bad = np.flatnonzero(cls < 0)
        if bad.size:
            raise DataError(
                f"known=: label {_plain(values[bad[0]])!r} for task {_plain(keys[bad[0]])!r} is not one of the "
                f"classes ({_sample(self.classes, 10)})."
            )
        out = np.full(len(self.tasks), -1, dtype=np.int64)
        out[pos] = cls
        return out

    def labels(self, codes: np.ndarray) -> pd.Series:
        """The label column's own values and dtype (categorical stays categorical), indexed by task."""
        return pd.Series(self.classes.take(codes), index=pd.Index(self.tasks, name=self.task_name), name="agg_label")

    def probas(self, q: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            q, index=pd.Index(self.tasks, name=self.task_name), columns=pd.Index(self.classes, name=self.label_name)
        )

    def per_worker(self, values: np.ndarray, name: str) -> pd.Series:
        return pd.Series(values, index=pd.Index(self.workers, name=self.worker_name), name=name)

    def per_class(self, values: np.ndarray, name: str) -> pd.Series:
        return pd.Series(values, index=pd.Index(self.classes, name=self.label_name), name=name)

    def errors(self, gamma: np.ndarray) -> pd.DataFrame:
        """crowd-kit's layout: rows (worker, label said), columns the true label, P(said | true)."""
        M, R, K = gamma.shape  # R = K, or K + the "can't tell" responses (rows after the classes)
        said = self.classes.append(self.responses) if R > K else self.classes
        index = pd.MultiIndex.from_product([self.workers, said], names=[self.worker_name, self.label_name])
        return pd.DataFrame(gamma.reshape(M * R, K), index=index, columns=pd.Index(self.classes, name=self.label_name))


def _lookup(index: pd.Index, names: tuple[str, ...], keys: pd.Index) -> np.ndarray:
    """Positions of ``keys`` in ``index`` (-1: absent); a key not found as it is is looked up by its text too
    (task "7" finds task 7), as ``crowdlab.models.base.resolve_known`` does."""
    try:
        pos = index.get_indexer(keys)
    except (TypeError, ValueError) as exc:
        raise DataError(f"known= must map tasks to labels of the DataFrame ({exc}).") from None
    miss = pos < 0
    if miss.any():
        pos[miss] = pd.Index(names).get_indexer(keys[miss].map(str))
    return pos


def _gold_series(gold) -> pd.Series:
    """Gold as a Series task -> label: a Series or mapping as it is, a DataFrame by its task and label columns
    (the same names as the annotations', e.g. a gold.csv read with ``pd.read_csv``)."""
    if isinstance(gold, pd.DataFrame):
        tcol = _column(gold, TASK_ALIASES, "task", "The gold DataFrame")
        lcol = _column(gold, LABEL_ALIASES, "label", "The gold DataFrame")
        return pd.Series(gold[lcol].to_numpy(), index=pd.Index(gold[tcol]), name=lcol)
    return gold if isinstance(gold, pd.Series) else pd.Series(gold)


def _plain(value):
    """A numpy scalar as the Python value it holds (so a message shows 7, not np.int64(7))."""
    return value.item() if isinstance(value, np.generic) else value


def _sample(values, n: int = 3) -> str:
    shown = [_plain(v) for v in pd.unique(np.asarray(values, dtype=object))[:n]]
    return "[" + ", ".join(map(repr, shown)) + (", ...]" if len(values) > n else "]")


def from_dataframe(df: pd.DataFrame, gold: pd.Series | dict | None = None, abstain=None) -> Annotations:
    """:class:`~crowdlab.io.annotations.Annotations` from a DataFrame with task/item, worker and label columns; ``gold``
    maps task -> label (tasks or labels it does not know are ignored); ``abstain``: a label (or labels) meaning
    "can't tell", read as a response that is not a class (``Annotations.response_names``)."""
    return _Frame(df, gold, abstain).data


class _Aggregator:
    """Base of the estimators: ``fit(df)`` sets ``labels_``, ``probas_`` and ``skills_``; EM ones also ``errors_``
    (the confusion matrices), ``run_``, ``stop_reason_`` and ``n_iter_`` (the EM iterations run, crowd-kit's name;
    the iterative baselines set it too). ``fit_predict`` / ``fit_predict_proba`` return labels /
    probabilities. Options are checked when the estimator is built (an unknown keyword is a TypeError listing the
    valid ones) and again by ``fit``; ``get_params()`` gives every option with its default, ``set_params`` changes
    them (scikit-learn's ``clone`` works). A fitted attribute read before ``fit`` raises
    :class:`crowdlab.errors.NotFittedError`; ``fit`` first drops what an earlier fit left."""

    method: str = ""
    _one_class_ok = True  # False: the model cannot run on a single class; fit then returns that class, without EM

    def __init__(self, **options: Any) -> None:
        self._check_names(options)
        self._check({**self._defaults(), **options})
        self.options = options

    @classmethod
    def _defaults(cls) -> dict:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    @classmethod
    def _title(cls) -> str:
        return cls.__name__

    def _check(self, params: dict) -> None:
        """Raise TypeError / ValueError (one line) on an option value that cannot work."""

    def _check_names(self, options: dict) -> None:
        valid = self._defaults()
        for name in options:
            if name not in valid:
                close = difflib.get_close_matches(str(name), list(valid), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TypeError(
                    f"{self._title()} has no option {name!r}{hint}; its options: {', '.join(valid) or 'none'}."
                )

    def get_params(self, deep: bool = True) -> dict:
        """Every option with its value: the defaults, overridden by what was given."""
        return {**self._defaults(), **self.options}

    def set_params(self, **options: Any) -> _Aggregator:
        self._check_names(options)
        self._check({**self.get_params(), **options})
        self.options.update(options)
        return self

    def __repr__(self) -> str:
        defaults = self._defaults()
        shown = {k: v for k, v in self.options.items() if not _same(v, defaults.get(k, _same))}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def __getattr__(self, name: str):
        # only called for attributes not set: a fitted one (labels_, run_, ...) read before fit, or one this fit
        # does not set (spamming_intervals_ after MACE by EM)
        if name.endswith("_") and not name.startswith("__"):
            if "labels_" not in self.__dict__:
                raise NotFittedError(f"{self._title()} is not fitted yet: call fit(df) first.")
            why = self.__dict__.get("_absent", {}).get(name)
            if why:
                raise AttributeError(why)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __sklearn_is_fitted__(self) -> bool:
        return "labels_" in self.__dict__

    def _clear(self) -> None:
        for key in [k for k in self.__dict__ if k.endswith("_") and not k.startswith("__")]:
            del self.__dict__[key]
        self.__dict__.pop("_absent", None)

    def fit(
        self,
        df: pd.DataFrame,
        *positional: Any,
        gold: pd.Series | pd.DataFrame | dict | None = None,
        abstain=None,
    ) -> _Aggregator:
        """Fit on ``df``; ``gold`` (keyword only): task -> label (a Series, a mapping, or a DataFrame with task and
        label columns), needed for ``reveal=`` and kept in ``run_.data`` for the metrics; it never changes the fit.
        A second positional argument is refused (:meth:`_refuse_positional`): crowd-kit reads it as known labels.
        ``abstain`` (keyword only): a label (or labels) meaning "can't tell": a response that is not a class
        (Dawid-Skene, IBCC, EBCC, MACE, one-coin, two-coin and majority vote take it, GLAD and the baselines refuse
        it; ``errors_`` then has a row for it, and ``abstention_rate_`` gives each worker's share)."""
        self._refuse_positional("fit", positional)
        self._clear()  # a refit, failed or not, leaves nothing of the last one
        params = self.get_params()
        self._check(params)
        if params.get("reveal") and gold is None:
            raise DataError("reveal= reveals gold labels: pass them too, fit(df, gold=...) (a Series task -> label).")
        frame = _Frame(df, gold, abstain)
        try:
            if frame.data.n_classes == 1 and not self._one_class_ok:
                self._fit_one_class(frame)
            else:
                self._fit(frame, params)
        except BaseException:
            self._clear()
            raise
        return self

    def _fit(self, frame: _Frame, params: dict) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def _fit_one_class(self, frame: _Frame) -> None:
        """Every label is the one class: every task gets it for certain, every worker is right (as majority vote
        and Dawid-Skene find); no EM is run, so there is no ``run_``."""
        N, M = len(frame.tasks), len(frame.workers)
        why = (
            f"{self._title()} ran no EM: the data has one class ({_plain(frame.classes[0])!r}), which every task gets, "
            "so it has no run_ or difficulties_."
        )
        self._absent = {"run_": why, "difficulties_": why, "spamming_intervals_": why}
        self.errors_ = frame.errors(np.ones((M, 1, 1)))
        self.priors_ = frame.per_class(np.ones(1), "prior")
        self.probas_ = frame.probas(np.ones((N, 1)))
        self.skills_ = frame.per_worker(np.ones(M), "skill")
        self.stop_reason_ = "converged"
        self.n_iter_ = 0
        self.labels_ = frame.labels(np.zeros(N, dtype=np.intp))

    def _refuse_positional(self, call: str, positional: tuple) -> None:
        """crowd-kit's ``fit(df, true_labels)`` fixes those tasks' classes (semi-supervised); crowdlab's ``gold`` only
        scores the fit. A positional second argument would be read as one or the other silently: it is a TypeError
        naming both spellings instead (issue 41)."""
        if not positional:
            return
        name = type(self).__name__
        semi = (
            f" To keep some tasks' classes fixed while fitting (what crowd-kit's fit(df, true_labels) does), pass them "
            f"as known=: {name}(known=true_labels).{call}(df)."
            if "known" in self._defaults()
            else f" ({self._title()} has no semi-supervised option: crowd-kit's true_labels has no counterpart here.)"
        )
        raise TypeError(
            f"{name}.{call}() takes the DataFrame as its only positional argument ({len(positional) + 1} given). Gold "
            f"labels for the metrics go by keyword, {call}(df, gold=labels); they never change the result.{semi}"
        )

    def fit_predict(
        self, df: pd.DataFrame, *positional: Any, gold: pd.Series | pd.DataFrame | dict | None = None, abstain=None
    ) -> pd.Series:
        """``fit(df, gold=..., abstain=...).labels_``."""
        self._refuse_positional("fit_predict", positional)
        return self.fit(df, gold=gold, abstain=abstain).labels_

    def fit_predict_proba(
        self, df: pd.DataFrame, *positional: Any, gold: pd.Series | pd.DataFrame | dict | None = None, abstain=None
    ) -> pd.DataFrame:
        """``fit(df, gold=..., abstain=...).probas_``."""
        self._refuse_positional("fit_predict_proba", positional)
        return self.fit(df, gold=gold, abstain=abstain).probas_


def _same(a, b) -> bool:
    """``a`` is the default ``b`` (identity, or equal plain values; never an elementwise comparison)."""
    if a is b:
        return True
    plain = (str, int, float, bool, tuple, type(None))
    return type(a) is type(b) and isinstance(a, plain) and a == b


def _model_options(keys: tuple[str, ...]) -> dict:
    """The constructor options of the models ``keys`` (besides prior and hard) with their defaults; an option whose
    default differs between them defaults to None (each model's own default)."""
    from crowdlab.models import MODELS

    out: dict = {}
    for n, key in enumerate(keys):
        sig = inspect.signature(MODELS[key].__init__)
        for p in list(sig.parameters.values())[1:]:
            if p.name in ("prior", "hard") or p.default is p.empty:
                continue
            if n and not _same(out.get(p.name, p.default), p.default):
                out[p.name] = None
            else:
                out.setdefault(p.name, p.default)
    return out


class _EM(_Aggregator):
    """An EM model run to convergence through :func:`crowdlab.fit` (options: prior, init, hard, seed, tol,
    max_iter, the model's own, and semi-supervised EM's known / reveal / reveal_seed)."""

    FIT_KEYS = ("prior", "hard", "init", "max_iter", "tol", "seed", "accelerate")
    FIT_DEFAULTS = {
        "prior": 0.0,
        "hard": False,
        "init": "majority",
        "max_iter": MAX_ITER,
        "tol": 1e-8,
        "seed": 0,
        "accelerate": True,  # SQUAREM (`crowdlab.engines.accel`) on every engine; False: plain EM
    }
    SEMI_DEFAULTS = {"known": None, "reveal": None, "reveal_seed": 0}
    INIT_DEFAULTS = {"q0": None, "params": None, "good_accuracy": 0.8}  # for init="posterior" / "params" / "all_good"
    ENGINE_DEFAULTS = {"engine": "memory", "chunk_rows": 1_000_000, "client": None, "progress": False}
    """``engine``: "memory" (`crowdlab.fit`), "stream" (`crowdlab.engines.stream.fit_file` over a temporary Parquet
    copy, ``chunk_rows`` rows per chunk) or "dask" (`crowdlab.engines.distributed.fit`; ``client``: a
    ``distributed.Client``, else a local cluster for the call). ``progress``: True draws a progress bar while EM runs
    (tqdm: the widget in a notebook, text elsewhere; `crowdlab.engines.progress`), or a function f(done, total) called
    after every iteration; False (the default) costs nothing."""

    @classmethod
    def _model_keys(cls) -> tuple[str, ...]:
        return (cls.method,)

    @classmethod
    def _defaults(cls) -> dict:
        own = cls.__dict__.get("_defaults_memo")
        if own is None:
            own = {**cls.FIT_DEFAULTS, **cls._extra(), **_model_options(cls._model_keys())}
            own.update(cls.SEMI_DEFAULTS)
            own.update(cls.INIT_DEFAULTS)
            own.update(cls.ENGINE_DEFAULTS)
            cls._defaults_memo = own
        return own

    @classmethod
    def _extra(cls) -> dict:
        return {}

    def _model_key(self, params: dict) -> str:
        return self.method

    def _model_kw(self, params: dict) -> dict:
        own = _model_options(self._model_keys())
        return {k: params[k] for k in own if params[k] is not None}

    def _check(self, params: dict) -> None:
        from crowdlab.engines.init import INITS
        from crowdlab.models import make_model

        if not isinstance(params["init"], str) or params["init"] not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}; not {params['init']!r}.")
        if params["prior"] is not None:
            option_real("prior", params["prior"], 0.0)
        if not isinstance(params["hard"], bool | np.bool_):
            raise TypeError(f"hard must be True or False, not {params['hard']!r}.")
        option_int("max_iter", params["max_iter"], 0)
        option_real("tol", params["tol"], 0.0)
        option_seed("seed", params["seed"])
        if params["reveal"] is not None:
            option_real("reveal", params["reveal"], 0.0, high=1.0)
        option_int("reveal_seed", params["reveal_seed"], 0)
        option_real("good_accuracy", params["good_accuracy"], 0.0, strict=True, high=1.0)
        if isinstance(params["known"], str | bytes | int | float):
            raise TypeError(f"known must map tasks to labels (a dict or a Series), not {params['known']!r}.")
        _check_engine(params, self._model_key(params), self._model_kw(params))
        if not (isinstance(params["progress"], bool | np.bool_) or callable(params["progress"])):
            raise TypeError(f"progress must be True, False or a function f(done, total), not {params['progress']!r}.")
        # the model's own options, checked by building it (cheap; no data involved)
        make_model(
            self._model_key(params), prior=params["prior"] or 0.0, hard=bool(params["hard"]), **self._model_kw(params)
        )

    def _fit(self, frame: _Frame, params: dict) -> None:
        from crowdlab.engines.progress import as_callback

        p = params["progress"]
        progress, bar = as_callback(p if callable(p) else bool(p))
        try:
            self._fit_em(frame, params, progress)
        finally:
            if bar is not None:
                bar.close()

    def _fit_em(self, frame: _Frame, params: dict, progress) -> None:
        from crowdlab.engines.fit import fit

        known = params["known"]
        if isinstance(known, Mapping | pd.Series):
            known = frame.known_codes(known)
        if params["engine"] != "memory":
            run = _engine_fit(frame, self._model_key(params), params, self._model_kw(params), known, progress)
            return self._results(frame, params, run)
        init_kw = {k: params[k] for k in self.INIT_DEFAULTS}
        if isinstance(init_kw["q0"], pd.DataFrame):  # e.g. another estimator's probas_
            q0 = init_kw["q0"].reindex(index=frame.tasks, columns=frame.classes)
            if q0.isna().to_numpy().any():
                raise DataError("q0 must have a row for every task and a column for every class of the DataFrame.")
            init_kw["q0"] = q0.to_numpy(dtype=np.float64)
        run = fit(
            frame.data,
            self._model_key(params),
            **{k: params[k] for k in self.FIT_KEYS},
            model_options=self._model_kw(params) or None,
            known=known,
            reveal=params["reveal"],
            reveal_seed=params["reveal_seed"],
            progress=progress,
            **init_kw,
        )
        self._results(frame, params, run)

    def _results(self, frame: _Frame, params: dict, run) -> None:
        self.run_ = run
        self.stop_reason_ = run.stop_reason  # "converged", "stalled" or "max_iter" (crowdlab.engines.run.STOP_REASONS)
        self.n_iter_ = int(run.last.iteration)  # EM iterations run (crowd-kit's name)
        self.probas_ = frame.probas(run.posterior)
        p = run.params
        if hasattr(p, "gamma"):
            self.errors_ = frame.errors(p.gamma)
            self.skills_ = frame.per_worker(p.worker_accuracy(), "skill")
        if hasattr(p, "pi"):
            self.priors_ = frame.per_class(p.pi, "prior")
        self._fit_more(frame, params, run)
        if frame.data.response_names:
            d = frame.data
            said = np.bincount(d.worker, weights=(d.label >= d.n_classes).astype(float), minlength=d.n_workers)
            rate = said / np.maximum(np.bincount(d.worker, minlength=d.n_workers), 1)
            self.abstention_rate_ = frame.per_worker(rate, "abstention_rate")
        self.labels_ = frame.labels(run.labels())  # last: labels_ is what marks the estimator fitted

    def _fit_more(self, frame: _Frame, params: dict, run) -> None:
        """The model's own fitted attributes (GLAD's difficulties, MACE's spamming)."""


ENGINES = ("memory", "stream", "dask")


def _check_engine(params: dict, key: str, model_kw: dict) -> None:
    """``engine=``: one of ENGINES; the streaming and Dask engines start from majority vote, soft EM, no reveal=."""
    engine = params["engine"]
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; not {engine!r}.")
    option_int("chunk_rows", params["chunk_rows"], 1)
    if engine == "memory":
        return
    from crowdlab.engines.blocks import engine_model

    engine_model(key, params["prior"] or 0.0, model_kw)  # a method the engine does not run: its message
    used = [
        name
        for name, given in (
            (f"init={params['init']!r}", params["init"] != "majority"),
            ("hard=True", bool(params["hard"])),
            ("reveal=", params["reveal"] is not None),
            ("q0=", params["q0"] is not None),
            ("params=", params["params"] is not None),
        )
        if given
    ]
    if used:
        raise ValueError(
            f"engine={engine!r} runs soft EM from the majority-vote start: {', '.join(used)} needs engine='memory'."
        )


def _codes_text(codes: np.ndarray, n: int) -> np.ndarray:
    """Codes as zero-padded digits: the engines order such names as the codes (numerically), so the engine's
    items, workers and classes come back in the DataFrame's own order."""
    width = len(str(max(n - 1, 0)))
    return np.char.zfill(codes.astype(np.int64).astype(str), width).astype(object)


def _engine_fit(frame: _Frame, key: str, params: dict, model_kw: dict, known, progress=None):
    """Fit through the streaming or Dask engine on the DataFrame's codes (written as padded digits)."""
    d = frame.data
    cols = {
        "item": _codes_text(d.item, d.n_items),
        "worker": _codes_text(d.worker, d.n_workers),
        "label": _codes_text(d.label, d.n_classes),
    }
    kn = None
    if known is not None:
        known = np.asarray(known)
        idx = np.flatnonzero(known >= 0)
        items = _codes_text(np.arange(d.n_items), d.n_items)[idx]
        classes = _codes_text(known[idx], d.n_classes)
        kn = dict(zip(items.tolist(), classes.tolist()))
    kw = {"prior": params["prior"] or 0.0, "tol": params["tol"], "max_iter": params["max_iter"]}
    kw.update(known=kn, model_options=model_kw or None, progress=progress, accelerate=bool(params["accelerate"]))
    if params["engine"] == "dask":
        from crowdlab.engines.distributed import fit

        return fit(pd.DataFrame(cols), key, client=params["client"], **kw)
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from crowdlab.engines.stream import fit_file

    with tempfile.TemporaryDirectory(prefix="crowdlab-frame-") as tmp:
        path = f"{tmp}/labels.parquet"
        pq.write_table(pa.table({c: pa.array(v.tolist(), pa.string()) for c, v in cols.items()}), path)
        return fit_file(path, key, chunk_rows=params["chunk_rows"], workdir=tmp, **kw)


class _NotEM(_Aggregator):
    @classmethod
    def _defaults(cls) -> dict:
        from crowdlab.models.baselines import baseline_options

        return baseline_options(cls.method)

    def _check(self, params: dict) -> None:
        from crowdlab.models.baselines import check_options

        check_options(self.method, params)

    def _fit(self, frame: _Frame, params: dict) -> None:
        from crowdlab.models.baselines import BASELINES

        result = BASELINES[self.method][1](frame.data, **params)
        self.result_ = result
        if self.method in ("zbs", "kos", "mmsr"):  # iterative (crowd-kit's n_iter_); Wawa is two votes, not a loop
            self.n_iter_ = int(result.iterations)
        self.probas_ = frame.probas(result.scores)
        self.skills_ = frame.per_worker(result.skills, "skill")
        self.labels_ = frame.labels(result.labels)


class MajorityVote(_Aggregator):
    """Majority vote: ``probas_`` split ties evenly; ``labels_`` break ties by ``tie_break`` ("frequent": the most
    frequent class overall, the default; "random" with ``tie_seed``; "first": the first worker's label);
    ``tied_`` flags the tied tasks."""

    method = "mv"

    @classmethod
    def _defaults(cls) -> dict:
        return {"tie_break": "frequent", "tie_seed": 0}

    def _check(self, params: dict) -> None:
        from crowdlab.models.majority import TIE_RULES

        if not isinstance(params["tie_break"], str) or params["tie_break"] not in TIE_RULES:
            raise ValueError(f"tie_break must be one of {', '.join(TIE_RULES)}; not {params['tie_break']!r}.")
        option_seed("tie_seed", params["tie_seed"])

    def _fit(self, frame: _Frame, params: dict) -> None:
        from crowdlab.models.majority import majority_labels, majority_posterior, tied_items

        labels = majority_labels(frame.data, tie_break=params["tie_break"], seed=params["tie_seed"])
        index = pd.Index(frame.tasks, name=frame.task_name)
        self.tied_ = pd.Series(tied_items(frame.data), index=index, name="tied")
        self.probas_ = frame.probas(majority_posterior(frame.data))
        d = frame.data
        hit = (d.label == labels[d.item]).astype(float)
        skill = np.bincount(d.worker, weights=hit, minlength=d.n_workers) / np.bincount(d.worker, minlength=d.n_workers)
        self.skills_ = frame.per_worker(skill, "skill")
        self.labels_ = frame.labels(labels)


class DawidSkene(_EM):
    """Dawid & Skene (1979) by EM: a confusion matrix per worker and a class prior (``prior`` > 0: MAP)."""

    method = "ds"


class OneCoin(_EM):
    """One accuracy per worker, errors spread evenly over the other classes."""

    method = "one_coin"
    _one_class_ok = False


class TwoCoin(_EM):
    """Sensitivity and specificity per worker (binary labels; Raykar et al. 2010)."""

    method = "two_coin"


class GLAD(_EM):
    """GLAD (Whitehill et al. 2009): worker ability and item difficulty; ``skills_`` = abilities alpha_j,
    ``difficulties_`` = 1 / beta_i per task."""

    method = "glad"
    _one_class_ok = False

    def _fit_more(self, frame: _Frame, params: dict, run) -> None:
        p = run.params
        self.skills_ = frame.per_worker(p.alpha, "skill")
        index = pd.Index(frame.tasks, name=frame.task_name)
        self.difficulties_ = pd.Series(p.difficulty, index=index, name="difficulty")


class MACE(_EM):
    """MACE (Hovy et al. 2013): ``spamming_`` = P(worker j is spamming) = 1 - theta_j; ``skills_`` = theta_j.

    ``inference="em"`` (default): EM with MAP priors (:class:`crowdlab.models.MACE`); ``inference="vb"``: the
    paper's variational Bayes (:class:`crowdlab.models.MaceVB`, like crowd-kit's ``MACE(method="vb")``), which
    also sets ``spamming_intervals_`` (the 95% credible interval of P(spamming) per worker). ``theta_prior`` and
    ``strategy_prior`` default to None: each inference's own ((2, 2) and 2 for EM, (0.5, 0.5) and 10 for VB)."""

    method = "mace"
    INFERENCE = ("em", "vb")

    @classmethod
    def _model_keys(cls) -> tuple[str, ...]:
        return ("mace", "mace_vb")

    @classmethod
    def _extra(cls) -> dict:
        return {"inference": "vb" if cls.method == "mace_vb" else "em"}

    def _model_key(self, params: dict) -> str:
        return "mace_vb" if params["inference"] == "vb" else "mace"

    def _check(self, params: dict) -> None:
        if params["inference"] not in self.INFERENCE:
            raise ValueError(f"MACE's inference must be 'em' or 'vb', not {params['inference']!r}.")
        super()._check(params)

    def _fit_more(self, frame: _Frame, params: dict, run) -> None:
        from crowdlab.models.mace import spam_intervals

        p = run.params
        self.skills_ = frame.per_worker(p.theta, "skill")
        self.spamming_ = frame.per_worker(p.spamming, "spamming")
        if params["inference"] == "vb":
            lo, hi = spam_intervals(p, 0.95)
            index = pd.Index(frame.workers, name=frame.worker_name)
            self.spamming_intervals_ = pd.DataFrame({"lower": lo, "upper": hi}, index=index)
        else:
            self._absent = {"spamming_intervals_": "spamming_intervals_ comes with MACE(inference='vb') only."}


class _MaceVB(MACE):
    """``aggregate(df, "mace_vb")``: MACE with ``inference="vb"``."""

    method = "mace_vb"
    INFERENCE = ("vb",)

    @classmethod
    def _title(cls) -> str:
        return "MACE (method 'mace_vb')"

    def _check(self, params: dict) -> None:
        if params["inference"] != "vb":
            raise ValueError(
                f"Method 'mace_vb' is MACE by variational Bayes: inference={params['inference']!r} contradicts it; "
                "use method 'mace' (EM by default) instead."
            )
        super()._check(params)


class IBCC(_EM):
    """Bayesian Dawid-Skene by variational Bayes (Kim & Ghahramani 2012): ``errors_`` are the posterior means of
    the confusion matrices; the run's objective is the ELBO."""

    method = "ibcc"


class EBCC(_EM):
    """EBCC (Li, Rubinstein & Cohn 2019): IBCC with latent subtypes per class shared by the workers, so workers who
    err together (a shared blind spot) are modelled; variational Bayes, the run's objective is the ELBO. Options:
    ``subtypes`` (L, default 10), ``subtype_prior``, ``diagonal``; ``seed`` also seeds the split of the start over
    the subtypes. ``errors_`` are the subtype-averaged confusion matrices. In memory only: the start's split is
    keyed by each task's name, which the streaming and Dask paths of this API replace by codes, so they would not
    give engine="memory"'s result (``crowdlab fit FILE --method ebcc --engine stream`` reads the file's own names
    and does)."""

    method = "ebcc"

    def _check(self, params: dict) -> None:
        if params["engine"] != "memory":
            raise ValueError(
                f"EBCC from a DataFrame runs in memory only (engine={params['engine']!r} would split the start over "
                "the subtypes by other task names, and give another result); for a file larger than memory use "
                "`crowdlab fit FILE --method ebcc --engine stream` or crowdlab.engines.stream.fit_file."
            )
        super()._check(params)


class Wawa(_NotEM):
    """Agreement-with-majority-weighted vote (:func:`crowdlab.models.baselines.wawa`)."""

    method = "wawa"


class ZeroBasedSkill(_NotEM):
    """Zero-Based Skill (:func:`crowdlab.models.baselines.zero_based_skill`)."""

    method = "zbs"


class KOS(_NotEM):
    """Karger, Oh & Shah (2011) message passing, binary labels (:func:`crowdlab.models.baselines.kos`)."""

    method = "kos"


class MMSR(_NotEM):
    """M-MSR, Ma & Olshevsky (2020) (:func:`crowdlab.models.baselines.mmsr`)."""

    method = "mmsr"


ESTIMATORS: dict[str, type[_Aggregator]] = {
    cls.method: cls
    for cls in (
        MajorityVote,
        DawidSkene,
        OneCoin,
        TwoCoin,
        GLAD,
        MACE,
        _MaceVB,
        IBCC,
        EBCC,
        Wawa,
        ZeroBasedSkill,
        KOS,
        MMSR,
    )
}

NOT_FROM_DATAFRAME = {
    "scores": "it models continuous scores, and a DataFrame's labels are read as classes; use "
    "cl.fit(cl.read_annotations(path, kind='continuous'), 'scores').",
    "hmm": "it needs sequences (each item's sequence and position); use crowdlab.io.sequences.read_sequences and "
    "cl.fit.",
    "mrf": "it needs a graph over the items; add one with crowdlab.io.graph.read_edges and use cl.fit.",
    "online_ds": "online EM has no estimator; use cl.fit(crowdlab.frames.from_dataframe(df), 'online_ds').",
    "online_one_coin": "online EM has no estimator; use cl.fit(crowdlab.frames.from_dataframe(df), 'online_one_coin').",
    "raykar": "it needs item features; use crowdlab.models.raykar.RaykarModel with crowdlab.io.features.",
    "ordinal": "it models ratings in numeric order, and a DataFrame's labels are read as unordered classes; use "
    "cl.fit(cl.read_annotations(path, kind='ordinal'), 'ordinal').",
}
"""Methods of ``cl.fit`` that a task/worker/label DataFrame cannot feed, and why (the unknown-method message)."""


def _estimator(method: str, options: dict) -> _Aggregator:
    from crowdlab.models import ALIASES

    key = ALIASES.get(method, method) if isinstance(method, str) else method
    if isinstance(key, str) and key in ESTIMATORS:
        return ESTIMATORS[key](**options)
    if isinstance(key, str) and key in NOT_FROM_DATAFRAME:
        raise DataError(f"Method {method!r} does not work from a DataFrame: {NOT_FROM_DATAFRAME[key]}")
    choices = sorted(ESTIMATORS)
    close = difflib.get_close_matches(method, [*choices, *ALIASES], n=1) if isinstance(method, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise DataError(f"Unknown method {method!r}{hint}; choose one of {', '.join(choices)}.")


def aggregate(
    df: pd.DataFrame,
    method: str = "ds",
    *,
    gold: pd.Series | pd.DataFrame | dict | None = None,
    abstain=None,
    **options: Any,
) -> pd.Series:
    """The aggregated label of every task (a Series indexed by task, sorted, in the label column's own values).
    ``options`` are the estimator's (``cl.DawidSkene().get_params()`` lists them); ``gold`` and ``abstain`` as in
    ``fit``."""
    return _estimator(method, options).fit(df, gold=gold, abstain=abstain).labels_


def proba(
    df: pd.DataFrame,
    method: str = "ds",
    *,
    gold: pd.Series | pd.DataFrame | dict | None = None,
    abstain=None,
    **options: Any,
) -> pd.DataFrame:
    """The posterior (EM methods) or normalised vote shares (baselines) of every task: rows = tasks (sorted),
    columns = classes (sorted), rows summing to 1."""
    return _estimator(method, options).fit(df, gold=gold, abstain=abstain).probas_
