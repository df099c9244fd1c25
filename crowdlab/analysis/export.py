"""Results a person takes away: tables and JSON built from a Run (used by the CLI and the Export page).

Nothing non-finite is written: the models and the engine never produce NaN or inf (`crowdlab.engines.run` stops a run
with a ModelError instead), and the writers check once more. :func:`to_json` refuses NaN and +-inf with a
ModelError naming the key (``null`` only ever means "not applicable": majority vote has no objective, a Pearson
r of constant estimates is undefined); :func:`posterior_frame` and :func:`worker_frame` refuse a non-finite
number naming the column and row.

Every CSV that crowdlab writes (here, on the Export and Data pages, from the command line) goes through
:func:`csv_bytes`: text cells a spreadsheet would run as a formula get a leading apostrophe
(:func:`crowdlab.io.safe.csv_frame`); numbers stay numbers. JSON needs no such care.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from crowdlab.engines.run import Run
from crowdlab.errors import ModelError
from crowdlab.io import safe
from crowdlab.io._lazy import lazy
from crowdlab.io.metrics import accuracy, log_loss, macro_f, pearson
from crowdlab.models import estimates_class_prior
from crowdlab.models.majority import tied_items
from crowdlab.models.params import ClassParams
from crowdlab.models.scores import ScoreParams

if TYPE_CHECKING:
    from crowdlab.engines.blocks import EngineData, EngineRun

pd = lazy("pandas")


def csv_bytes(frame: pd.DataFrame, *, index: bool = False, header: bool = True) -> bytes:
    """``frame`` as UTF-8 CSV bytes, safe to open in a spreadsheet (:func:`crowdlab.io.safe.csv_frame`);
    ``header=False`` for the second and later slices of a table written in slices (the streaming engines)."""
    return safe.csv_bytes(frame, index=index, header=header)  # every cell with CR or LF quoted (issue 42)


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """Write ``frame`` (no index) to ``path`` as :func:`csv_bytes` does."""
    Path(path).write_bytes(csv_bytes(frame))


def posterior_frame(run: Run) -> pd.DataFrame:
    """One row per item: posterior per class, the hard label and its probability, ``mv_tied`` (True when the
    item's majority vote is tied, whatever the method: :func:`crowdlab.models.majority.tied_items`) (classes);
    for the scores model, the estimated mean score per item."""
    data, snap = run.data, run.current
    if isinstance(snap.params, ScoreParams):
        out = pd.DataFrame({"item": data.item_names, "estimate": snap.params.mu})
        if data.gold is not None:
            out["gold"] = data.gold  # NaN = no gold for that item (written as an empty cell)
        return check_finite_frame(out, "posteriors", skip=("gold",))
    labels = run.labels()
    cols = {f"p_{c}": snap.q[:, k] for k, c in enumerate(data.class_names)}
    out = pd.DataFrame({"item": data.item_names, **cols})
    out["label"] = np.asarray(data.class_names, dtype=object)[labels]
    out["confidence"] = snap.q[np.arange(data.n_items), labels]
    if hasattr(data, "worker"):  # the streaming and Dask engines keep no labels in memory: no tie flags there
        out["mv_tied"] = tied_items(data)  # the item's majority vote is tied (whatever the method)
    if data.gold is not None:
        names = np.asarray(data.class_names + ("",), dtype=object)
        out["gold"] = names[np.where(data.gold >= 0, data.gold, len(data.class_names))]
    return check_finite_frame(out, "posteriors")


def upload_names(data) -> dict[str, str]:
    """{"item", "label", "gold"} -> the name that column has in the file the data were read from
    (``Annotations.columns``: an upload's ``question``/``answer`` stay so); the role's own name where the file has
    no such column or the data came from no file."""
    own = tuple(getattr(data, "columns", ()) or ())
    own = own + ("",) * (4 - len(own))
    names = {"item": own[0] or "item", "label": own[2] or "label", "gold": own[3] or "gold"}
    return names


def in_upload_names(frame: pd.DataFrame, data) -> pd.DataFrame:
    """``frame`` with its item, label and gold columns renamed to the upload's names (:func:`upload_names`)."""
    names = upload_names(data)
    moves = {k: v for k, v in names.items() if k in frame.columns and k != v}
    kept = set(frame.columns) - set(moves)
    if kept & set(moves.values()) or len(set(moves.values())) < len(moves):
        return frame  # an upload's name is already another column here: keep the plain names rather than clash
    return frame.rename(columns=moves)


def labels_side_by_side(data, labels: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per item: the item id, gold (when the data have gold), then each method's answer, side by side,
    under the upload's own column names (:func:`upload_names`): ``answer (Dawid-Skene)``, ``answer (GLAD)``, ...
    ``labels``: method name -> class code per item (``crowdlab.analysis.compare.Comparison.labels``), or for
    continuous scores the estimated mean per item."""
    names = upload_names(data)
    out = {names["item"]: np.asarray(data.item_names, dtype=object)}
    classes = np.asarray(tuple(data.class_names) + ("",), dtype=object)
    if data.gold is not None:
        if data.is_continuous:
            out[names["gold"]] = np.asarray(data.gold, dtype=float)  # NaN = no gold (an empty cell)
        else:
            out[names["gold"]] = classes[np.where(data.gold >= 0, data.gold, len(data.class_names))]
    for method, answer in labels.items():
        answer = np.asarray(answer)
        out[f"{names['label']} ({method})"] = answer if data.is_continuous else classes[answer]
    frame = pd.DataFrame(out)
    return check_finite_frame(frame, "labels of every method", skip=(names["gold"],))


def worker_frame(run: Run) -> pd.DataFrame:
    """One row per worker: number of labels and the model's reliability estimates."""
    data, snap = run.data, run.current
    out = pd.DataFrame({"worker": data.worker_names, "n_labels": data.labels_per_worker})
    p = snap.params
    if isinstance(p, ScoreParams):
        out["p_good"] = snap.q[:, 1]
        return check_finite_frame(out, "workers")
    if isinstance(p, ClassParams):
        out["accuracy"] = p.worker_accuracy()
        for k, v in p.extra.items():
            out[k] = np.asarray(v)
        out = _with_report(run, out)
    else:  # majority vote: agreement with the majority label
        lab = run.labels()
        agree = np.bincount(data.worker, weights=(data.label == lab[data.item]), minlength=data.n_workers)
        out["agreement_with_majority"] = agree / np.maximum(data.labels_per_worker, 1)
    return check_finite_frame(out, "workers")


REPORT_COLUMNS = (
    "lower",
    "upper",
    "interval",
    "worst_confusion",
    "worst_rate",
    "spammer_score",
    "agreement",
    "copying_partner",
    "partner_excess",
    "partner_p",
)


def _with_report(run: Run, out: pd.DataFrame) -> pd.DataFrame:
    """``out`` with the worker report's columns (:func:`crowdlab.analysis.reports.worker_report`: interval, worst
    confusion, Raykar & Yu's spammer score, agreement with the consensus); ``out.attrs["krippendorff_alpha"]``."""
    from crowdlab.analysis.reports import worker_report

    if not hasattr(run.data, "worker"):  # the streaming and Dask engines keep no labels in memory
        return out
    try:
        rep = worker_report(run)
    except ModelError:
        return out
    for col in (*REPORT_COLUMNS, "abstention_rate"):
        if col in rep:  # abstention_rate: only with "can't tell" responses
            out[col] = rep[col].to_numpy()
    out.attrs["krippendorff_alpha"] = rep.attrs.get("krippendorff_alpha")
    out.attrs["dependence"] = rep.attrs.get("dependence")
    return out


def check_finite_frame(frame: pd.DataFrame, what: str, skip: tuple[str, ...] = ()) -> pd.DataFrame:
    """``frame`` itself, after checking that every number in it is finite (else ModelError naming the column and
    the first row's first-column value); columns in ``skip`` may hold NaN for "unknown"."""
    for col in frame.columns:
        if col in skip:
            continue
        v = frame[col].to_numpy()
        if v.dtype.kind not in "fc":
            continue
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ModelError(
                f"{what}: column '{col}' is {v[i]} in the row of {frame.iloc[i, 0]!s} ({int(bad.sum())} such "
                "row(s)); nothing non-finite is written."
            )
    return frame


def params_dict(run: Run) -> dict:
    """Worker parameters and class prior, JSON-ready."""
    data, p = run.data, run.current.params
    base = {"method": run.model.info.key, "title": run.model.info.title}
    if p is None:
        base["workers"] = worker_frame(run).to_dict(orient="records")
        return base
    if isinstance(p, ScoreParams):
        base.update(p.to_dict(item_names=data.item_names))
        base["p_good"] = dict(zip(data.worker_names, run.current.q[:, 1].tolist()))
        return base
    base.update(p.to_dict(worker_names=data.worker_names, class_names=data.class_names))
    return base


def acceleration_dict(acc) -> dict | None:
    """What an accelerated run did (`crowdlab.engines.accel.Acceleration`), JSON-ready (what was not estimated,
    a gap or a null objective, is left out); None for plain EM."""
    if acc is None:
        return None

    def finite(x):
        return float(x) if x is not None and math.isfinite(float(x)) else None

    out = {
        "method": "SQUAREM (Varadhan & Roland 2008)",
        "evaluations": int(acc.evaluations),
        "cycles": int(acc.cycles),
        "fallback_steps": int(acc.fallbacks),
        "gap_estimate": finite(acc.gap),
        "objective_limit": finite(acc.limit),
        "maximum_check": {k: (finite(v) if isinstance(v, float) else v) for k, v in acc.check.items()} or None,
        "saddles_left": int(acc.saddles),
        "saddle_gain": finite(acc.saddle_gain),
        "no_signal": bool(acc.no_signal),
        "null_objective": finite(acc.null_objective),
        "passes": getattr(acc, "passes", None),
        "summary": acc.summary(),
    }
    return {k: v for k, v in out.items() if v is not None}  # what was not estimated is left out (no nulls)


def history_dict(run: Run) -> dict:
    """The objective after each half-step, plus what the run was."""
    out = {
        "method": run.model.info.key,
        "objective_name": getattr(run.model, "objective_name", None),
        "init": run.init,
        "start": run.start_description,
        "prior": getattr(run.model, "prior", 0.0),
        "hard": bool(getattr(run.model, "hard", False)),
        "seed": run.seed,
        "iterations": int(run.last.iteration),
        "converged": bool(run.converged),
        "stop_reason": run.stop_reason,
        "tol": run.tol,
        "param_tol": getattr(run, "param_tol", None),
        "snapshots": [
            {
                "index": int(s.index),
                "iteration": int(s.iteration),
                "kind": str(s.kind),
                "objective": _num(s.objective, f"objective of snapshot {s.index}"),
                "bound": _num(s.bound, f"bound of snapshot {s.index}"),
            }
            for s in run.snapshots
        ],
        "violations": list(run.violations),
    }
    acc = acceleration_dict(getattr(run, "acceleration", None))
    if acc is not None:  # accelerated EM only (a plain run's history has no such key)
        out["acceleration"] = acc
    return out


def metrics_dict(run: Run) -> dict:
    """Accuracy / macro F / log loss against gold (classes) or Pearson r (scores); empty without gold."""
    data = run.data
    if not data.has_gold:
        return {}
    if isinstance(run.current.params, ScoreParams):
        r = pearson(run.current.params.mu, data.gold)  # NaN: undefined (constant estimates or gold)
        return {"pearson_r": None if math.isnan(r) else _num(r, "pearson_r"), "gold_items": int(data.gold_mask.sum())}
    lab = run.labels()
    return {
        "accuracy": _num(accuracy(lab, data.gold), "accuracy"),
        "macro_f": _num(macro_f(lab, data.gold, data.n_classes), "macro_f"),
        "log_loss": _num(log_loss(run.current.q, data.gold), "log_loss"),
        "gold_items": int(data.gold_mask.sum()),
    }


def to_json(obj: dict) -> str:
    """``obj`` as indented JSON; a NaN or +-inf anywhere raises ModelError naming where (never ``null``)."""
    _check_json(obj, "")
    return json.dumps(obj, indent=2, allow_nan=False, default=_default)


def _check_json(obj, path: str) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _check_json(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            _check_json(v, f"{path}[{i}]")
    elif isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc" and not np.all(np.isfinite(obj)):
            i = np.argwhere(~np.isfinite(obj))[0]
            raise ModelError(f"'{path}{list(i.tolist())}' is {obj[tuple(i)]}: a non-finite number is never written.")
    elif isinstance(obj, float | np.floating) and not math.isfinite(obj):
        raise ModelError(f"'{path}' is {obj}: a non-finite number is never written.")


def _num(x, what: str = "value") -> float | None:
    """A finite float, None for None (not applicable); NaN or +-inf raises ModelError naming ``what``."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x):
        raise ModelError(f"{what} is {x}: a non-finite number is never written.")
    return x


def _default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


def python_snippet(run: Run, load_code: str) -> str:
    """Python that reproduces ``run`` with the crowdlab API; ``load_code`` is an expression giving the data,
    e.g. ``load_sample("bluebirds")`` or ``read_annotations("labels.csv", gold="gold.csv")``."""
    model = run.model
    args = [f'"{model.info.key}"', f'init="{run.init}"']
    if getattr(model, "prior", 0.0):
        args.append(f"prior={model.prior!r}")
    if getattr(model, "hard", False):
        args.append("hard=True")
    options = {}
    if getattr(model, "tie_break", "frequent") != "frequent":
        options.update(tie_break=model.tie_break, tie_seed=model.tie_seed)
    if getattr(model, "sigma_min", None) is not None:
        options["sigma_min"] = model.sigma_min
    if estimates_class_prior(model):
        options["class_prior"] = "estimate"  # GLAD, MACE: instead of their papers' uniform
    if options:
        args.append(f"model_options={options!r}")
    if getattr(model, "reveal", None):
        args += [f"reveal={model.reveal!r}", f"reveal_seed={model.reveal_seed!r}"]
    if run.init == "random":
        args.append(f"seed={run.seed!r}")
    imports = "import crowdlab as cl\n"
    q0 = run.init_kwargs.get("q0") if run.init == "posterior" else None
    if q0 is not None and q0.shape[1] == 2 and np.array_equal(q0, np.eye(2)[q0.argmax(axis=1)]):
        good = np.flatnonzero(q0[:, 1] == 1).tolist()  # the scores model's start "only these annotators good"
        args.append(f"q0=np.eye(2)[np.isin(np.arange({q0.shape[0]}), {good!r}).astype(int)]")
        imports = "import numpy as np\n\n" + imports
    if run.iterative:
        args += [f"tol={run.tol!r}", f"max_iter={run.max_iter!r}"]
        if getattr(run, "acceleration", None) is None:  # stepped (or run) as plain EM: cl.fit accelerates otherwise
            args.append("accelerate=False")
    head = load_code.split("(")[0]
    if head in ("load_sample",):
        imports += "from crowdlab.io.samples import load_sample\n"
    elif head in ("simulate_crowd", "simulate_scores"):
        imports += f"from crowdlab.teaching.simulate import {head}\n"
        load_code += ".annotations"
    elif head in ("read_annotations",):
        imports += "from crowdlab.io.data import read_annotations\n"
    lines = [
        imports,
        f"data = {load_code}",
        f"run = cl.fit(data, {', '.join(args)})",
        "posterior = run.posterior          # (items, classes) or, for scores, (annotators, [bad, good])",
        "labels = run.labels()              # hard labels (class codes); names: data.class_names",
        "params = run.params                # pi, gamma[m, said, true] (or mu, sigma, pi_good)",
        "history = run.objective_history()  # the objective after every iteration",
    ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------ the streaming and Dask engines' results (crowdlab.engines.blocks)
def engine_worker_frame(run: EngineRun) -> pd.DataFrame:
    """`worker_frame` for an engine's result (majority vote: agreement from the engine's sums)."""
    if run.iterative:
        return worker_frame(run)
    d = run.data
    out = pd.DataFrame({"worker": d.worker_names, "n_labels": d.labels_per_worker})
    out["agreement_with_majority"] = run.agree / np.maximum(d.labels_per_worker, 1)
    return out


def engine_params_dict(run: EngineRun) -> dict:
    if run.iterative:
        return params_dict(run)
    base = {"method": run.model.info.key, "title": run.model.info.title}
    base["workers"] = engine_worker_frame(run).to_dict(orient="records")
    return base


def engine_history_dict(run: EngineRun) -> dict:
    out = history_dict(run)
    out["engine"] = run.engine
    out["stop_reason"] = run.stop_reason
    return out


def engine_posterior_frames(run: EngineRun, rows: int = 250_000) -> Iterator[pd.DataFrame]:
    """`posterior_frame` of the result in slices of ``rows`` items (the same columns)."""
    from crowdlab.engines.blocks import EngineData

    d = run.data
    q, lab = run.posterior, run.labels()
    for lo in range(0, d.n_items, rows):
        hi = min(lo + rows, d.n_items)
        view = _SliceRun(
            EngineData(d.item_names[lo:hi], d.worker_names, d.class_names, d.labels_per_worker, 0), q[lo:hi], lab[lo:hi]
        )
        yield posterior_frame(view)


@dataclass
class _SliceRun:
    data: EngineData
    q: np.ndarray
    lab: np.ndarray

    @property
    def current(self):
        from crowdlab.engines.blocks import EngineSnapshot, _Current

        return _Current(EngineSnapshot(0, "M", 0, None, None, None), self.q)

    def labels(self):
        return self.lab


def write_engine_outputs(run: EngineRun, out, frames: Iterator[pd.DataFrame] | None = None) -> pd.DataFrame:
    """Write posteriors.csv, labels.csv, workers.csv, params.json and history.json like ``crowdlab fit``
    (posteriors in slices, so the whole table is never built); returns the workers table."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    frames = engine_posterior_frames(run) if frames is None else frames
    with open(out / "posteriors.csv", "wb") as fp, open(out / "labels.csv", "wb") as fl:
        for i, post in enumerate(frames):  # the one CSV writer (formula cells escaped), a slice at a time
            fp.write(csv_bytes(post, header=i == 0))
            fl.write(csv_bytes(post[["item", "label"]], header=i == 0))
    workers = engine_worker_frame(run)
    write_csv(workers, out / "workers.csv")
    (out / "params.json").write_text(to_json(engine_params_dict(run)))
    (out / "history.json").write_text(to_json(engine_history_dict(run)))
    return workers
