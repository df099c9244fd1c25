"""crowdlab beside crowd-kit: GLAD and MACE (and MV, DS, IBCC) on every real dataset with gold.

Runs crowd-kit's GLAD and MACE (defaults of crowd-kit 1.4.2) and crowdlab's MV, DS, GLAD, MACE, MACE (VB) and IBCC
(the CLI's defaults: ``cl.fit(data, method)``, majority-vote start) on every class-label dataset with gold under
/work/shared/datasets (continuous scores, sequences and sets without gold are skipped), and prints accuracy on the
items with gold plus the wall time of each fit, then a Markdown table for benchmarks/README.md.

    python benchmarks/bench_peers.py                 # every dataset
    python benchmarks/bench_peers.py --only snow2008_rte welinder2010_bluebirds
    python benchmarks/bench_peers.py --skip-peers    # crowdlab only (fast)
    python benchmarks/bench_peers.py --all --peers   # every crowdlab method, and crowd-kit's MV, DS, one-coin DS,
                                                     # Wawa, ZBS, KOS and M-MSR beside them (no crowd-kit GLAD/MACE)

Not a test: it prints figures. Accuracy counts a tie of the posterior as the first class (arg-max), crowd-kit's
label is its own arg-max.

crowd-kit's MACE (1.4.2) codes workers and labels with ``pd.factorize`` (order of first appearance) in its E-step
but reads its M-step counts back from a ``groupby(...).unstack()`` table in sorted order, so unless every worker
and label first appears in sorted order its strategies are scrambled between workers and classes and it does not
fit MACE (on fact evaluation its parameters have log-likelihood -108,508 against -98,511 at MACE's optimum, and
one exact EM step from them gains 8,000). The column "crowd-kit MACE (aligned)" feeds it codes that already are
in first-appearance order, which sidesteps that mismatch; "crowd-kit MACE" is the plain call on crowdlab's codes.

crowd-kit's GLAD stops as soon as its per-label objective Q changes by less than 1e-5, which includes any fall of
Q (``Q - last_Q < tol``); its CG M-step can lower Q, and on TREC it stopped after 2 iterations (Q -0.3280 ->
-0.3294). The column ``ck_glad_iters`` prints how many iterations it ran. ``--peers glad_full`` runs crowd-kit's
GLAD without that stop (``tol=-inf``) for ``--ck-glad-iters`` iterations (default 400) and prints the accuracy
of its posterior every 10 iterations: slow (about 10 s an iteration on TREC), so it is not in the default set.

    python benchmarks/bench_peers.py --only trec2010_relevance --skip-ours --peers glad glad_full
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import crowdlab as cl  # noqa: E402
from crowdlab.io.data import read_annotations  # noqa: E402
from crowdlab.io.metrics import accuracy  # noqa: E402
from crowdlab.models.baselines import BASELINES  # noqa: E402
from crowdlab.models.majority import majority_labels  # noqa: E402

ROOT = Path("/work/shared/datasets")
SKIP = {"snow2008_affect", "snow2008_wordsim", "rodrigues2014_conll_ner", "dawid_skene1979_patients"}
OURS = ("mv", "ds", "ibcc", "glad", "mace", "mace_vb")
BASE = ("one_coin", "two_coin", "wawa", "zbs", "kos", "mmsr")  # with --all: every other class-label method
PEERS = ("glad", "mace", "mace_aligned")
SLOW_PEERS = ("glad_full",)  # crowd-kit's GLAD run past its early stop: only when asked for
BASE_PEERS = ("mv", "ds", "one_coin", "wawa", "zbs", "kos", "mmsr")  # crowd-kit's counterparts, all fast
BINARY_ONLY = {"two_coin", "kos"}
NAMES = {
    "mv": "MV",
    "ds": "DS",
    "one_coin": "one-coin",
    "two_coin": "two-coin",
    "ibcc": "IBCC",
    "glad": "GLAD",
    "mace": "MACE",
    "mace_vb": "MACE (VB)",
    "wawa": "Wawa",
    "zbs": "ZBS",
    "kos": "KOS",
    "mmsr": "M-MSR",
}


def datasets(only: list[str] | None) -> list[Path]:
    out = []
    for d in sorted(p for p in ROOT.iterdir() if p.is_dir()):
        if d.name in SKIP or (only and d.name not in only):
            continue
        if (d / "labels.csv").exists() and (d / "gold.csv").exists():
            out.append(d)
    return out


def ours(data, method: str) -> tuple[float, float]:
    if method in BINARY_ONLY and data.n_classes != 2:
        return float("nan"), 0.0
    t = time.perf_counter()
    if method == "mv":
        pred = majority_labels(data)
    elif method in BASELINES:
        pred = BASELINES[method][1](data).labels
    else:
        pred = cl.fit(data, method).labels()
    return accuracy(pred, data.gold), time.perf_counter() - t


ITERS: dict[str, int] = {}
FAILED: list[tuple[str, str]] = []  # (method, message) of crowd-kit runs that raised; their accuracy is inf


def _fitted_check_shim() -> None:
    """crowd-kit 1.4.2's Wawa and ZeroBasedSkill call scikit-learn's ``check_is_fitted`` on objects that are not
    scikit-learn estimators, which scikit-learn >= 1.6 rejects (no ``__sklearn_tags__``) before looking at the
    attribute. Put back the check they mean: the fitted attribute exists."""
    from crowdkit.aggregation.classification import wawa, zero_based_skill

    def check(estimator, attributes: str) -> None:
        if getattr(estimator, attributes, None) is None:
            raise RuntimeError(f"{type(estimator).__name__} is not fitted")

    wawa.check_is_fitted = zero_based_skill.check_is_fitted = check


def base_peer(data, method: str) -> tuple[float, float]:
    """crowd-kit's counterpart of one of crowdlab's baselines (``BASE_PEERS``) at its defaults."""
    from crowdkit import aggregation as ck

    _fitted_check_shim()
    if method == "kos" and data.n_classes != 2:
        return float("nan"), 0.0
    make = {
        "mv": ck.MajorityVote,
        "ds": lambda: ck.DawidSkene(n_iter=100),
        "one_coin": lambda: ck.OneCoinDawidSkene(n_iter=100),
        "wawa": ck.Wawa,
        "zbs": ck.ZeroBasedSkill,
        "kos": ck.KOS,
        "mmsr": ck.MMSR,
    }[method]
    df = pd.DataFrame({"task": data.item, "worker": data.worker, "label": data.label})
    t = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = make().fit_predict(df)
    except Exception as exc:  # a peer's failure is a finding to print, not a reason to lose the other rows
        FAILED.append((method, f"{type(exc).__name__}: {str(exc)[:100]}"))
        print(f"  crowd-kit {method} failed: {FAILED[-1][1]}", flush=True)
        return float("inf"), time.perf_counter() - t
    elapsed = time.perf_counter() - t
    pred = np.full(data.n_items, -1, dtype=np.int64)
    pred[labels.index.to_numpy(dtype=np.int64)] = labels.to_numpy(dtype=np.int64)
    return accuracy(pred, data.gold), elapsed


def _fit_glad_full(data, df: pd.DataFrame, iters: int):
    """crowd-kit's GLAD with ``tol=-inf`` (no early stop) for ``iters`` iterations, its labels and the fitted
    aggregator; its M-step is wrapped for the fit to print the accuracy of the posterior of the E-step before it
    every 10 iterations."""
    from crowdkit.aggregation import GLAD

    orig, count = GLAD._m_step, [0]

    def m_step(self, frame):
        out = orig(self, frame)
        count[0] += 1
        if count[0] % 10 == 0 or count[0] <= 2:
            p = self.probas_
            pred = np.full(data.n_items, -1, dtype=np.int64)
            pred[p.index.to_numpy(dtype=np.int64)] = p.columns.to_numpy()[np.argmax(p.to_numpy(), axis=1)]
            q = self.loss_history_[-1] if self.loss_history_ else float("nan")
            print(f"    crowd-kit GLAD iteration {count[0]}: accuracy {accuracy(pred, data.gold):.4f}, Q {q:.7f}")
        return out

    GLAD._m_step = m_step
    try:
        agg = GLAD(n_iter=iters, tol=-np.inf)
        return agg.fit_predict(df), agg
    finally:
        GLAD._m_step = orig


def peer(data, method: str, glad_iters: int = 400) -> tuple[float, float]:
    from crowdkit.aggregation import GLAD, MACE

    worker, label, names = data.worker, data.label, np.arange(data.n_classes)
    if method == "mace_aligned":  # codes in order of first appearance (see the module docstring)
        worker = pd.factorize(pd.Series(worker))[0]
        label, names = pd.factorize(pd.Series(label))
        names = np.asarray(names)
    df = pd.DataFrame({"task": data.item, "worker": worker, "label": label})
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "glad_full":
            labels, agg = _fit_glad_full(data, df, glad_iters)
        else:
            agg = GLAD() if method == "glad" else MACE()
            labels = agg.fit_predict(df)
    elapsed = time.perf_counter() - t
    if method in ("glad", "glad_full"):
        ITERS[method] = len(agg.loss_history_)
    pred = np.full(data.n_items, -1, dtype=np.int64)
    pred[labels.index.to_numpy(dtype=np.int64)] = names[labels.to_numpy(dtype=np.int64)]
    return accuracy(pred, data.gold), elapsed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="dataset folder names")
    ap.add_argument("--skip-peers", action="store_true", help="crowdlab only")
    ap.add_argument(
        "--peers", nargs="*", default=list(PEERS), choices=PEERS + SLOW_PEERS, help="which crowd-kit GLAD/MACE runs"
    )
    ap.add_argument("--ck-glad-iters", type=int, default=400, help="iterations of --peers glad_full")
    ap.add_argument("--skip-ours", action="store_true", help="crowdlab's GLAD only (with --peers glad_full)")
    ap.add_argument(
        "--all",
        action="store_true",
        help="also every other class-label method (one-coin, two-coin, Wawa, ZBS, KOS, M-MSR) and, unless "
        "--skip-peers, crowd-kit's MV, DS, one-coin DS, Wawa, ZBS, KOS and M-MSR beside them",
    )
    args = ap.parse_args(argv)
    methods = OURS + (BASE if args.all else ())
    base_peers = BASE_PEERS if args.all and not args.skip_peers else ()
    rows = []
    for d in datasets(args.only):
        data = read_annotations(d / "labels.csv", gold=d / "gold.csv")
        if data.is_continuous:
            continue
        row = {"dataset": d.name, "items": data.n_items, "labels": data.n_obs, "K": data.n_classes}
        for m in ("glad",) if args.skip_ours else methods:
            row[m], row[f"t_{m}"] = ours(data, m)
        if not args.skip_peers:
            for m in args.peers:
                row[f"ck_{m}"], row[f"t_ck_{m}"] = peer(data, m, args.ck_glad_iters)
            for m in ("glad", "glad_full"):
                if m in args.peers:
                    row[f"ck_{m}_iters"] = ITERS.get(m, 0)
            for m in base_peers:
                row[f"ckb_{m}"], row[f"t_ckb_{m}"] = base_peer(data, m)
        rows.append(row)
        print(
            f"{d.name:34s} "
            + " ".join(f"{k}={v:.3f}" for k, v in row.items() if k in methods or k.startswith(("ck_", "ckb_")))
            + "  time(s): "
            + " ".join(f"{k[2:]}={v:.1f}" for k, v in row.items() if k.startswith("t_")),
            flush=True,
        )
    print()
    if args.skip_ours:
        print(glad_table(rows))
    elif args.peers:
        print(markdown(rows, peers=not args.skip_peers and set(args.peers) == set(PEERS)))
    if args.all:
        print()
        print(every_method(rows, methods))
        if base_peers:
            print()
            print(beside_peers(rows, base_peers))


def glad_table(rows: list[dict]) -> str:
    """crowdlab's GLAD beside crowd-kit's at its default stop and, where run, without it (``--skip-ours``)."""
    lines = [
        "| dataset | crowdlab GLAD | crowd-kit GLAD (default stop) | crowd-kit GLAD (no early stop) |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        cells = [f"{r['glad']:.3f}"]
        for m in ("glad", "glad_full"):
            key = f"ck_{m}"
            cells.append(f"{r[key]:.3f} ({r[key + '_iters']} iterations)" if key in r else "—")
        lines.append(f"| {r['dataset']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(rows: list[dict], peers: bool = True) -> str:
    cols = list(OURS) + (["ck_glad", "ck_mace", "ck_mace_aligned"] if peers else [])
    names = dict(NAMES, ck_glad="crowd-kit GLAD", ck_mace="crowd-kit MACE")
    names["ck_mace_aligned"] = "crowd-kit MACE (aligned)"
    head = "| dataset | K | labels | " + " | ".join(names[c] for c in cols) + " | best |"
    lines = [head, "|" + "---|" * (len(cols) + 4)]
    for r in rows:
        best = max(r[c] for c in cols)
        winners = ", ".join(names[c] for c in cols if r[c] >= best - 1e-12)
        cells = " | ".join((f"**{r[c]:.3f}**" if r[c] >= best - 1e-12 else f"{r[c]:.3f}") for c in cols)
        lines.append(f"| {r['dataset']} | {r['K']} | {r['labels']:,} | {cells} | {winners} |")
    if peers:
        gaps = [
            (
                r["glad"] - r["ck_glad"],
                r["mace"] - r["ck_mace"],
                r["mace"] - r["ck_mace_aligned"],
                r["mace_vb"] - r["ck_mace_aligned"],
            )
            for r in rows
        ]
        lines.append("")
        lines.append(
            f"crowdlab minus crowd-kit, worst case over {len(rows)} datasets: GLAD {min(g[0] for g in gaps):+.3f}, "
            f"MACE {min(g[1] for g in gaps):+.3f} (plain call), {min(g[2] for g in gaps):+.3f} (aligned codes); "
            f"MACE (VB) minus crowd-kit's MACE (VB as well) on aligned codes: {min(g[3] for g in gaps):+.3f} to "
            f"{max(g[3] for g in gaps):+.3f}."
        )
    return "\n".join(lines)


def _cell(v: float, best: float) -> str:
    if np.isnan(v):
        return "—"
    return f"**{v:.3f}**" if v >= best - 1e-12 else f"{v:.3f}"


def every_method(rows: list[dict], methods: tuple[str, ...]) -> str:
    """Every crowdlab method on every set, the best per row in bold and named (binary-only methods: — on K > 2),
    then how often each method wins and its mean accuracy over the sets it applies to."""
    head = "| dataset | K | " + " | ".join(NAMES[m] for m in methods) + " | best |"
    lines = [head, "|---|---:|" + "---:|" * len(methods) + "---|"]
    wins = dict.fromkeys(methods, 0)
    for r in rows:
        best = np.nanmax([r[m] for m in methods])
        won = [m for m in methods if not np.isnan(r[m]) and r[m] >= best - 1e-12]
        for m in won:
            wins[m] += 1
        cells = " | ".join(_cell(r[m], best) for m in methods)
        lines.append(f"| {r['dataset']} | {r['K']} | {cells} | {', '.join(NAMES[m] for m in won)} |")
    lines.append("")
    lines.append(
        "Wins (ties count for each): "
        + ", ".join(f"{NAMES[m]} {wins[m]}" for m in sorted(methods, key=lambda m: -wins[m]))
        + ". Mean accuracy over the sets a method applies to: "
        + ", ".join(f"{NAMES[m]} {np.nanmean([r[m] for r in rows]):.3f}" for m in methods)
        + "."
    )
    return "\n".join(lines)


def beside_peers(rows: list[dict], peers: tuple[str, ...]) -> str:
    """crowdlab's and crowd-kit's versions of the same method, side by side, with the difference."""
    head = "| dataset | " + " | ".join(f"{NAMES[m]}: crowdlab / crowd-kit" for m in peers) + " |"
    lines = [head, "|---|" + "---:|" * len(peers)]
    for r in rows:
        cells = []
        for m in peers:
            a, b = r[m], r[f"ckb_{m}"]
            if np.isnan(a) or np.isnan(b):
                cells.append("—")
            elif np.isinf(b):
                cells.append(f"{a:.3f} / raises")
            else:
                cells.append(f"{a:.3f} / {b:.3f} ({a - b:+.3f})")
        lines.append(f"| {r['dataset']} | " + " | ".join(cells) + " |")
    gaps = {m: [r[m] - r[f"ckb_{m}"] for r in rows if np.isfinite(r[m]) and np.isfinite(r[f"ckb_{m}"])] for m in peers}
    lines.append("")
    lines.append(
        "crowdlab minus crowd-kit, worst / best over the sets: "
        + ", ".join(f"{NAMES[m]} {min(g):+.3f} / {max(g):+.3f}" for m, g in gaps.items() if g)
        + "."
    )
    for method, message in FAILED:
        lines.append(f"crowd-kit's {NAMES[method]} raised {message}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
