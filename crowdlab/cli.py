# PYTHON_ARGCOMPLETE_OK  (argcomplete's marker: `crowdlab completion bash`, or its global completion, finds it)
"""Command line for analysts: ``python -m crowdlab fit FILE --method ds [--gold G] --out DIR``; ``crowdlab app``
starts the web app (:func:`cmd_app`).

Writes ``posteriors.csv`` (posterior per class, hard label, confidence; scores model: estimated item means),
``labels.csv`` (item, label), ``workers.csv`` and ``params.json`` (worker parameters, class prior),
``history.json`` (the objective after every half-step, convergence, violations) and ``metrics.json`` (against
gold, when given), then prints a summary. A bad file, an option out of its range or an ``--out`` folder that would
overwrite an input prints a one-line message and exits with status 2 (before anything is written). CSV cells that a
spreadsheet would run as a formula are escaped (:func:`crowdlab.analysis.export.write_csv`); names printed in the
summary lose
control characters (:func:`crowdlab.io.safe.plain`).
"""

from __future__ import annotations

import argparse
import glob
import io
import math
import os
import sys
from pathlib import Path

import numpy as np

from crowdlab.analysis.export import (
    history_dict,
    metrics_dict,
    params_dict,
    posterior_frame,
    to_json,
    worker_frame,
    write_csv,
)
from crowdlab.engines.init import INITS
from crowdlab.engines.limits import MAX_ITER
from crowdlab.errors import CrowdlabError, ModelError
from crowdlab.io import safe
from crowdlab.io.limits import setting_problems
from crowdlab.io.safe import plural
from crowdlab.models import CLASS_PRIOR_MODELS, MODELS, ONLINE_MODELS


class OptionError(CrowdlabError, ValueError):
    """A command-line option out of its range, options that do not go together, or an ``--out`` folder that cannot
    take the output (it would overwrite an input, or it is a file)."""


# what ``fit`` may write into --out (metrics.json only with gold); the engines write all but metrics.json
OUTPUTS = (
    "posteriors.csv",
    "labels.csv",
    "workers.csv",
    "params.json",
    "history.json",
    "metrics.json",
    "intervals.csv",
)
ENGINE_OUTPUTS = ("posteriors.csv", "labels.csv", "workers.csv", "params.json", "history.json")


def prog_name(argv0: str | None = None) -> str:
    """``crowdlab`` when run as the installed ``crowdlab`` command, else ``python -m crowdlab``."""
    name = Path((sys.argv or [""])[0] if argv0 is None else argv0).name.lower()
    return "crowdlab" if name.removesuffix(".exe").removesuffix("-script.py") == "crowdlab" else "python -m crowdlab"


def build_parser() -> argparse.ArgumentParser:
    from crowdlab import __version__

    p = argparse.ArgumentParser(prog=prog_name(), description="EM for crowd labels.")
    p.add_argument("--version", action="version", version=f"crowdlab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="aggregate a label file and write posteriors and worker parameters")
    f.add_argument(
        "file",
        help="long CSV (item,worker,label) or wide CSV (rows = items, columns = workers), or a bundled sample's name "
        "(bluebirds; `samples` lists them)",
    ).completer = _complete_file
    f.add_argument(
        "--method", default="ds", choices=sorted([*MODELS, *ONLINE_MODELS]), help="aggregation method (default: ds)"
    )
    f.add_argument("--gold", help="gold CSV (item,label) to report accuracy against")
    f.add_argument(
        "--out",
        help="output directory (created if missing); without it, the summary and the first labels go to stdout and "
        "no file is written",
    )
    f.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar (it is drawn on stderr only when that is a terminal, never into a pipe or a file)",
    )
    f.add_argument("--init", default="majority", choices=[k for k in INITS if k not in ("params", "posterior")])
    f.add_argument(
        "--prior", type=float, default=None, help="prior strength s >= 0 (pseudo-counts); default 0 = ML (online: 1)"
    )
    f.add_argument("--hard", action="store_true", help="hard EM (arg-max instead of posteriors)")
    f.add_argument(
        "--plain",
        action="store_true",
        help="plain EM, one EM step at a time (default: accelerated EM, SQUAREM, for the models that have it, on "
        "every engine)",
    )
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--tol", type=float, default=1e-8, help="relative change of the objective to stop at")
    f.add_argument(
        "--max-iter",
        type=int,
        default=MAX_ITER,
        help="iteration limit (default 10,000; EM usually stops long before: see the stop reason)",
    )
    f.add_argument(
        "--n-jobs",
        dest="n_jobs",
        type=int,
        default=1,
        help="in memory: threads for the E-step and M-step statistics of the class models over blocks of items "
        "(default 1; -1: every core; at most the machine's cores); any value >= 2 gives the same numbers",
    )
    f.add_argument(
        "--format",
        dest="fmt",
        default="auto",
        choices=["auto", "long", "wide", "sequences"],
        help="sequences: sequence,position,worker,label (the default for --method hmm)",
    )
    f.add_argument("--edges", help="edge list CSV source,target[,weight] over the items (needed by --method mrf)")
    f.add_argument("--delta", type=float, help="MRF: Potts penalty for disagreeing neighbours (default: #workers)")
    f.add_argument("--e-step", dest="e_step", default="icm", choices=["icm", "mean_field"], help="MRF E-step")
    f.add_argument(
        "--kind",
        default="auto",
        choices=["auto", "classes", "continuous", "ordinal"],
        help="ordinal: numeric labels read as ratings (for --method ordinal)",
    )
    f.add_argument(
        "--abstain",
        action="append",
        metavar="TOKEN",
        help='a label meaning "can\'t tell" (e.g. --abstain unsure; repeat for more): read as a response that is '
        "not a class, so the models learn who abstains (ds, ibcc, ebcc, mace, mace_vb, one_coin, two_coin, mv)",
    )
    f.add_argument(
        "--columns",
        metavar="ITEM,WORKER,LABEL",
        help="a long file's item, worker and label columns by name, when row 1 does not say which is which "
        "(e.g. --columns q,w,a)",
    )
    f.add_argument(
        "--tie-break",
        dest="tie_break",
        default="frequent",
        choices=["frequent", "random", "first"],
        help="majority vote: where tied items go (the most frequent class, random with --tie-seed, the first "
        "worker's label); posteriors.csv flags them in its mv_tied column, whatever the method",
    )
    f.add_argument("--tie-seed", dest="tie_seed", type=int, default=0, help="seed of --tie-break random")
    f.add_argument(
        "--class-prior",
        dest="class_prior",
        choices=["uniform", "estimate"],
        help=f"{', '.join(CLASS_PRIOR_MODELS)}: the true-class prior, uniform as in their papers (the default) or "
        "estimated like Dawid-Skene's (better when one class dominates)",
    )
    f.add_argument("--known", help="semi-supervised EM: CSV item,label of items whose class is known (kept fixed)")
    f.add_argument(
        "--known-column",
        dest="known_column",
        help="--stream: semi-supervised EM from a column of FILE itself (a cell holding a class fixes that row's "
        "item; blank: unknown)",
    )
    f.add_argument("--reveal", type=float, help="semi-supervised EM: fix the classes of this fraction of --gold")
    f.add_argument("--reveal-seed", dest="reveal_seed", type=int, default=0, help="which gold items --reveal picks")
    f.add_argument(
        "--restarts",
        type=int,
        default=None,
        help="fit from this many seeds of the method's random start and keep the best objective (default: 8 for "
        "ebcc, whose split over its subtypes decides its answer; 1 for the others)",
    )
    f.add_argument(
        "--intervals",
        action="store_true",
        help="with --gold on some items: 95%% intervals for the labels' accuracy and each class's share over all "
        "items, prediction-powered (the posterior on every item, the gold on the few) beside gold-only ones; "
        "printed and written to intervals.csv (crowdlab.analysis.ppi)",
    )
    o = f.add_argument_group("online EM (--method online_ds / online_one_coin; the nominalonlineextract blog post)")
    o.add_argument("--eta0", type=float, default=1.0, help="step size eta_t = eta0 (tau0 + t)^-rho (default 1)")
    o.add_argument("--tau0", type=float, default=10.0, help="delay tau0 >= 0 (default 10)")
    o.add_argument("--rho", type=float, default=0.6, help="decay rho; Robbins-Monro needs 0.5 < rho <= 1 (default 0.6)")
    o.add_argument("--buckets", type=int, default=None, help="hash workers into this many confusion matrices")
    o.add_argument("--passes", type=int, default=10, help="passes over the data (default 10)")
    o.add_argument("--batch-size", dest="batch_size", type=int, default=10, help="items per update (default 10)")
    o.add_argument(
        "--worker-steps", dest="worker_steps", action="store_true", help="a step-size clock per worker (bucket)"
    )

    g = f.add_argument_group(
        "bigger than memory / on a Dask cluster (methods mv, ds, one_coin, two_coin, glad, mace, mace_vb, ibcc, "
        "ebcc; --known)"
    )
    g.add_argument(
        "--engine",
        default="memory",
        choices=["memory", "stream", "dask"],
        help="memory (default); stream: read a long CSV or Parquet file in chunks (crowdlab.engines.stream); "
        "dask: batch EM on a Dask cluster over FILE, a glob of CSV or Parquet files (crowdlab.engines.distributed)",
    )
    g.add_argument("--stream", action="store_true", help="the same as --engine stream")
    g.add_argument("--chunk-rows", type=int, default=1_000_000, help="stream: rows per chunk (default 1,000,000)")
    g.add_argument(
        "--scheduler", help="dask: address of a running scheduler (tcp://host:8786); default: a local cluster"
    )
    g.add_argument("--npartitions", type=int, help="dask: partitions by item (default: one per file / as read)")
    _compare_parser(sub)
    sub.add_parser("samples", help="list the bundled sample datasets")
    c = sub.add_parser(
        "completion",
        help="print the shell code that completes crowdlab's commands and options (needs argcomplete)",
        description=COMPLETION_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("shell", nargs="?", default="bash", choices=COMPLETION_SHELLS)
    sub.add_parser(
        "app",
        help="start the web app on http://127.0.0.1:8501 (needs crowdlab[app]); Streamlit's options pass through",
        description=APP_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return p


COMPARE_OUTPUTS = ("fit_check.csv", "checks.csv", "fit_check_workers.csv", "fit_check.json")
COMPARE_HELP = """\
Which model fits this crowd? No gold needed (crowdlab.analysis.fit_check):

- held-out labels: the labels are split into --folds folds (stratified by worker); each model is refitted
  without a fold and scores each held-out label by its predictive probability, smoothed alike for every model
  ((1 - eps) p + eps / R, --epsilon); the mean log score per held-out label (nats, higher is better) with a 95 %
  interval, and each model's gap to the best (paired, with its standard error);
- posterior predictive checks: --replicates label sets drawn from each full fit with the observed design, and
  where the observed unanimous share, item agreement, spread of worker-pair agreement and majority-vote class
  shares fall among them (p < 0.01 counts as a failed check);
- a recommendation in plain words, with its numbers: the model with the best held-out score or, where others
  are within two standard errors of it, the one of them whose labels agree most with theirs.

With --gold the table adds each model's accuracy (never used by the check). --out DIR writes fit_check.csv (the
table), checks.csv (every check), fit_check_workers.csv (each worker's held-out score under each model, the
worst-predicted under the recommended model first) and fit_check.json.
"""


def _compare_parser(sub) -> None:
    from crowdlab.analysis.fit_check_defaults import CHECK_MODELS, EPSILON, FOLDS, REPLICATES

    c = sub.add_parser(
        "compare",
        help="which model fits this crowd: held-out labels and posterior predictive checks (no gold needed)",
        description=COMPARE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("file", help="long CSV (item,worker,label) or wide CSV (rows = items, columns = workers)")
    c.add_argument(
        "--methods",
        help=f"comma-separated models to compare (default: every one that applies of {', '.join(CHECK_MODELS)})",
    )
    c.add_argument("--folds", type=int, default=FOLDS, help=f"folds over the labels (default {FOLDS})")
    c.add_argument(
        "--epsilon", type=float, default=EPSILON, help=f"the common smoothing of the predictive (default {EPSILON})"
    )
    c.add_argument(
        "--replicates", type=int, default=REPLICATES, help=f"predictive replicates, 0: none (default {REPLICATES})"
    )
    c.add_argument("--seed", type=int, default=0, help="folds, replicates and the models' seeded starts")
    c.add_argument("--gold", help="gold CSV (item,label): each model's accuracy beside the check (not used by it)")
    c.add_argument(
        "--out", help="also write fit_check.csv, checks.csv, fit_check_workers.csv and fit_check.json into this folder"
    )
    c.add_argument("--max-iter", dest="max_iter", type=int, default=10000, help="iteration limit of every fit")
    c.add_argument("--format", dest="fmt", default="auto", choices=["auto", "long", "wide"])
    c.add_argument("--columns", metavar="ITEM,WORKER,LABEL", help="a long file's columns by name")
    c.add_argument("--abstain", action="append", metavar="TOKEN", help='a label meaning "can\'t tell"')
    c.add_argument("--kind", default="auto", choices=["auto", "classes", "ordinal"])
    c.set_defaults(known=None, edges=None)


def cmd_compare(args: argparse.Namespace) -> int:
    from crowdlab.analysis.fit_check import fit_check
    from crowdlab.io.data import read_annotations

    check_input(args.file)
    if args.folds < 2:
        raise OptionError(f"--folds must be at least 2, not {args.folds}.")
    if not (0.0 <= args.epsilon < 1.0):
        raise OptionError(f"--epsilon must lie in [0, 1), not {args.epsilon:g}.")
    if args.replicates < 0:
        raise OptionError(f"--replicates must be 0 or more, not {args.replicates}.")
    if args.max_iter < 1:
        raise OptionError(f"--max-iter must be at least 1, not {args.max_iter}.")
    out = check_out(args, COMPARE_OUTPUTS) if args.out else None
    data = read_annotations(
        args.file, gold=args.gold, fmt=args.fmt, kind=args.kind, columns=args.columns, where="cli", abstain=args.abstain
    )
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
    if methods is not None:
        from crowdlab.models import ALIASES

        methods = [ALIASES.get(m, m) for m in methods]

    def progress(i: int, n: int, title: str) -> None:
        if i < n:
            print(f"[{i + 1}/{n}] {title}: {args.folds} folds + the full fit", file=sys.stderr, flush=True)

    res = fit_check(
        data,
        methods,
        folds=args.folds,
        epsilon=args.epsilon,
        replicates=args.replicates,
        seed=args.seed,
        progress=progress,
        max_iter=args.max_iter,
    )
    print(f"Which model fits {safe.plain(Path(args.file).name)}? (held-out labels, higher is better)")
    cols = ["method", "held-out", "lo", "hi", "gap", "gap se", "impossible"]
    cols += [c for c in ("checks failed", "gold accuracy", "time (s)") if c in res.table]
    print(res.table[cols].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print()
    print(safe.plain(res.recommendation))
    if res.n_skipped:
        print(
            f"({plural(res.n_skipped, 'held-out label')} of workers with no other label were not scored.)",
        )
    if out is not None:
        from crowdlab.analysis.export import to_json

        text = to_json(res.to_dict())  # first: a refusal leaves no partial output
        try:
            out.mkdir(parents=True, exist_ok=True)
            write_csv(res.table, out / "fit_check.csv")
            write_csv(res.checks, out / "checks.csv")
            write_csv(res.worker_frame(data), out / "fit_check_workers.csv")
            (out / "fit_check.json").write_text(text)
        except OSError as exc:
            raise _cannot_write(exc) from None
        print(f"Wrote {', '.join(COMPARE_OUTPUTS)} to {safe.plain(out)}.")
    return 0


COMPLETION_SHELLS = ("bash", "zsh", "fish", "tcsh", "powershell")
COMPLETION_HELP = """\
Print the code that makes your shell complete crowdlab's subcommands, options, methods and file names (and the
bundled samples' names after `fit`). It needs argcomplete (pip install argcomplete). Enable it for this shell:

  eval "$(crowdlab completion bash)"            (bash; zsh: crowdlab completion zsh)

or for every new shell, add that line to ~/.bashrc (~/.zshrc). argcomplete's global completion
(activate-global-python-argcomplete) works too: crowdlab carries its PYTHON_ARGCOMPLETE_OK marker.
"""


def _complete_file(prefix: str, **_) -> list[str]:
    """argcomplete's completer of fit's FILE: the bundled samples' names, then file names."""
    from argcomplete.completers import FilesCompleter

    from crowdlab.io.samples import SAMPLES, SEQUENCE_SAMPLES

    names = [k for k in (*SAMPLES, *SEQUENCE_SAMPLES) if k.startswith(prefix)]
    return names + list(FilesCompleter()(prefix))


def cmd_completion(shell: str) -> int:
    """``crowdlab completion [bash|zsh|fish|tcsh|powershell]``: argcomplete's shell code for this command."""
    try:
        import argcomplete
    except ImportError:
        raise OptionError(
            "shell completion needs argcomplete: pip install argcomplete (or pip install 'crowdlab[completion]')."
        ) from None
    print(argcomplete.shellcode(["crowdlab"], shell=shell), end="")
    return 0


def _autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit, when there is one (argcomplete sets _ARGCOMPLETE); otherwise
    nothing is imported and nothing happens."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser)


APP_HELP = """\
Start crowdlab's web app: the same pages and settings as `python3 dev.py app` in a checkout, served by
`streamlit run` from the installed package (needs the app's extra: pip install "crowdlab[app]").

It listens on 127.0.0.1 (this machine only) unless you choose an address. Every other argument goes to Streamlit
unchanged, and an option you give replaces the app's setting of the same name (.streamlit/config.toml), e.g.

  crowdlab app --server.port 8502
  crowdlab app --server.address 0.0.0.0      (show it to other machines)

A setting given as an environment variable (STREAMLIT_SERVER_PORT=8502) also wins over the app's. `streamlit run
--help` lists Streamlit's options. Files the app reads by path are looked for in the folder you start it in.
"""


def _number_checks(args: argparse.Namespace):
    """(option, value, whether it is in range, what it must be) for every numeric option of ``fit``."""
    finite = lambda x: x is not None and math.isfinite(x)  # noqa: E731
    whole = "a whole number"
    return (
        ("--prior", args.prior, args.prior is None or (finite(args.prior) and args.prior >= 0), "a finite number >= 0"),
        ("--tol", args.tol, finite(args.tol) and args.tol >= 0, "a finite number >= 0 (relative change)"),
        ("--max-iter", args.max_iter, args.max_iter >= 0, f"{whole} >= 0 (0 stops at the start)"),
        ("--n-jobs", args.n_jobs, args.n_jobs >= 1 or args.n_jobs == -1, f"{whole} >= 1, or -1 for every core"),
        ("--seed", args.seed, args.seed >= 0, f"{whole} >= 0"),
        ("--tie-seed", args.tie_seed, args.tie_seed >= 0, f"{whole} >= 0"),
        ("--reveal-seed", args.reveal_seed, args.reveal_seed >= 0, f"{whole} >= 0"),
        ("--restarts", args.restarts, args.restarts is None or args.restarts >= 1, f"{whole} >= 1"),
        ("--reveal", args.reveal, args.reveal is None or 0 <= args.reveal <= 1, "a fraction between 0 and 1"),
        ("--delta", args.delta, args.delta is None or (finite(args.delta) and args.delta >= 0), "a finite number >= 0"),
        ("--eta0", args.eta0, finite(args.eta0) and args.eta0 > 0, "a finite number > 0"),
        ("--tau0", args.tau0, finite(args.tau0) and args.tau0 >= 0, "a finite number >= 0"),
        ("--rho", args.rho, finite(args.rho) and 0 <= args.rho <= 1, "in [0, 1] (converges for 0.5 < rho <= 1)"),
        ("--buckets", args.buckets, args.buckets is None or args.buckets >= 1, f"{whole} >= 1"),
        ("--passes", args.passes, args.passes >= 1, f"{whole} >= 1"),
        ("--batch-size", args.batch_size, args.batch_size >= 1, f"{whole} >= 1"),
        ("--chunk-rows", args.chunk_rows, args.chunk_rows >= 1, f"{whole} >= 1"),
        ("--npartitions", args.npartitions, args.npartitions is None or args.npartitions >= 1, f"{whole} >= 1"),
    )


# options that only one method or engine reads: (flag, dest, applies, to what)
_SCOPED = (
    *((f"--{d.replace('_', '-')}", d, "online", "--method online_ds / online_one_coin") for d in (
        "eta0", "tau0", "rho", "buckets", "passes", "batch_size", "worker_steps")),
    ("--tie-break", "tie_break", "mv", "--method mv"),
    ("--tie-seed", "tie_seed", "mv", "--method mv"),
    ("--delta", "delta", "mrf", "--method mrf"),
    ("--e-step", "e_step", "mrf", "--method mrf"),
    ("--reveal-seed", "reveal_seed", "reveal", "--reveal"),
    ("--chunk-rows", "chunk_rows", "stream", "--stream (--engine stream)"),
    ("--known-column", "known_column", "stream", "--stream (--engine stream)"),
    ("--scheduler", "scheduler", "dask", "--engine dask"),
    ("--npartitions", "npartitions", "dask", "--engine dask"),
    ("--n-jobs", "n_jobs", "memory", "the in-memory engine (--engine memory)"),
)  # fmt: skip


def ignored_options(args: argparse.Namespace) -> list[str]:
    """The options given a value other than their default that this run does not read (a batch method with
    --passes, the memory engine with --chunk-rows, ...), each as "--flag (applies to ...)"."""
    defaults = build_parser().parse_args(["fit", "-", "--out", "-"])
    engine = "stream" if args.stream else args.engine
    used = {
        "online": args.method in ONLINE_MODELS,
        "mv": args.method == "mv",
        "mrf": args.method == "mrf",
        "reveal": args.reveal is not None,
        "stream": engine == "stream",
        "dask": engine == "dask",
        "memory": engine == "memory",
    }
    return [
        f"{flag} (applies to {what})"
        for flag, dest, scope, what in _SCOPED
        if not used[scope] and getattr(args, dest) != getattr(defaults, dest)
    ]


def check_options(args: argparse.Namespace) -> None:
    """Refuse an option out of its range, or options that do not go together, before any file is read; warn
    about options this run would not read."""
    ignored = ignored_options(args)
    if ignored:
        print(f"warning: ignored, this run does not use them: {'; '.join(ignored)}.", file=sys.stderr)
    for option, value, ok, want in _number_checks(args):
        if not ok:
            shown = f"{value:g}" if isinstance(value, float) else value
            raise OptionError(f"{option} must be {want}, not {shown}.")
    if args.known and args.known_column:
        raise OptionError("--known and --known-column both name known classes: give one.")
    if getattr(args, "intervals", False):
        _check_intervals(args)
    if args.class_prior is not None and args.method not in CLASS_PRIOR_MODELS:
        raise OptionError(
            f"--class-prior applies to --method {', '.join(CLASS_PRIOR_MODELS)} only; the other methods estimate "
            "their class prior (or have none)."
        )
    if args.method in ONLINE_MODELS:
        used = (("--hard", args.hard), ("--known", args.known), ("--reveal", args.reveal is not None))
        ignored = [name for name, given in used if given]
        if ignored:
            raise OptionError(
                f"{', '.join(ignored)} cannot be used with --method {args.method}: online EM is soft and fixes no "
                "item's class (use a batch method such as ds)."
            )
        if 0 <= args.rho <= 0.5:
            print(
                f"warning: --rho {args.rho} is outside (0.5, 1], where the Robbins-Monro conditions guarantee "
                "convergence; running anyway.",
                file=sys.stderr,
            )


def _check_intervals(args: argparse.Namespace) -> None:
    """--intervals needs gold, a batch fit in memory that has not seen the gold, and class labels."""
    if not args.gold:
        raise OptionError("--intervals needs --gold (a gold file for some of the items).")
    if args.reveal is not None or args.known or args.known_column:
        raise OptionError(
            "--intervals needs a fit that has not seen the gold: leave out --reveal / --known (the posterior on "
            "those items would be the gold itself)."
        )
    if args.stream or args.engine != "memory" or args.method in ONLINE_MODELS or args.method in ("scores", "hmm"):
        raise OptionError(
            "--intervals works with a batch class model in memory (ds, glad, mace, ibcc, ebcc, mv, ...), not with "
            "--stream / --engine dask, online EM, scores or hmm."
        )


def _model_options(args: argparse.Namespace) -> dict:
    """The options ``fit`` passes to the model's constructor (``model_options``)."""
    options = {}
    if args.method == "mrf":
        options = {"delta": args.delta, "e_step": args.e_step}
    elif args.method == "mv":
        options = {"tie_break": args.tie_break, "tie_seed": args.tie_seed}
    elif args.method in ONLINE_MODELS:
        keys = ("eta0", "tau0", "rho", "buckets", "passes", "batch_size", "worker_steps")
        options = {k: getattr(args, k) for k in keys}
    if args.class_prior is not None:
        options["class_prior"] = args.class_prior
    return options


def check_model(args: argparse.Namespace, options: dict) -> None:
    """Build the model as :func:`crowdlab.fit` will, so that an option its constructor refuses (``--hard`` for a
    variational method) is a usage error before any file is read; only the constructor's ModelError (or another
    ValueError) is caught."""
    from crowdlab.models import make_model

    if args.method in ONLINE_MODELS:
        extra = {"seed": args.seed, **({} if args.prior is None else {"prior": args.prior})}
    else:
        extra = {"prior": 0.0 if args.prior is None else args.prior, "hard": args.hard}
    try:
        make_model(args.method, **options, **extra)
    except ValueError as exc:  # the constructor's ModelError (an option out of its range), or a plain ValueError
        if isinstance(exc, CrowdlabError) and not isinstance(exc, ModelError):
            raise
        if args.hard:
            try:
                make_model(args.method, **options, **{**extra, "hard": False})
            except ValueError:
                pass
            else:
                raise OptionError(
                    f"--method {args.method} has no hard-EM version (it keeps a full posterior): drop --hard."
                ) from None
        raise OptionError(f"--method {args.method}: {exc}") from None


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # either missing (an output not yet written), or an unusable name
        return False


def _input_paths(args: argparse.Namespace) -> list[str]:
    """Every local file or folder the command reads: FILE (each match of a glob for the Dask engine), --gold,
    --known, --edges."""
    paths = [args.file]
    if any(c in args.file for c in "*?["):
        paths += glob.glob(args.file)
    return paths + [p for p in (args.gold, args.known, args.edges) if p]


def check_out(args: argparse.Namespace, names=OUTPUTS) -> Path:
    """The --out folder, refused when it is a file, lies under a file, or when one of the ``names`` written there
    would be an input (the same file: compared with os.path.samefile, so links and case-insensitive names count)."""
    out = Path(args.out)
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                where = "is a file" if folder == out else f"lies under the file {folder}"
                raise OptionError(f"--out {out} {where}; --out takes a folder (created if missing).")
            break
    inputs = _input_paths(args)
    for src in inputs:
        if _same_file(src, out):
            raise OptionError(f"--out {out} is the input {src}; choose another folder.")
    for name in names:
        target = out / name
        if target.is_dir():
            raise OptionError(f"--out {out} holds a folder named {name}, which fit writes; choose another folder.")
        for src in inputs:
            if _same_file(src, target):
                raise OptionError(
                    f"--out {out} would overwrite the input {src} with the output {name}; nothing was written. "
                    "Choose another --out folder."
                )
    return out


def _cannot_write(exc: OSError) -> OptionError:
    return OptionError(f"cannot write {exc.filename or 'the output'}: {exc.strerror or exc}.")


def check_input(path: str) -> None:
    """Refuse a missing FILE before anything else; when its name points at a bundled sample (``bluebirds``,
    ``sample_data/welinder2010_bluebirds/labels.csv`` typed outside the checkout), say where the samples lie."""
    if any(c in path for c in "*?[") or Path(path).exists():
        return
    from crowdlab.io.samples import SAMPLES, SEQUENCE_SAMPLES, sample_paths

    words = {w.lower() for w in Path(path).parts} | {Path(path).stem.lower()}
    for key, sample in {**SAMPLES, **SEQUENCE_SAMPLES}.items():
        if words & {key, sample.folder.lower()}:
            labels, _ = sample_paths(key)
            raise OptionError(
                f"no such file: {path}. '{key}' is a bundled sample: its labels are {labels} "
                f"(`{prog_name()} samples` lists every sample and where it lies)."
            )
    if "sample_data" in words:
        raise OptionError(
            f"no such file: {path}. `{prog_name()} samples` lists the bundled samples and where they lie."
        )


def sample_file(args: argparse.Namespace) -> None:
    """FILE that is not a file but a bundled sample's name (``bluebirds``, or its folder's name): read that sample's
    labels, and its gold unless --gold is given, saying so (issue 41: the command knew which sample was meant)."""
    name = args.file.strip().lower()
    if Path(args.file).exists() or not name or any(c in name for c in "/\\*?["):
        return
    from crowdlab.io.samples import SAMPLES, SEQUENCE_SAMPLES, sample_paths

    for key, sample in {**SAMPLES, **SEQUENCE_SAMPLES}.items():
        if name in (key, sample.folder.lower()):
            labels, gold = sample_paths(key)
            args.file = str(labels)
            said = f"note: '{key}' is a bundled sample ({sample.title}): reading {labels}"
            engines = args.stream or args.engine != "memory"  # they take no --gold
            if args.gold is None and gold is not None and Path(gold).exists() and not engines:
                args.gold = str(gold)
                said += f", with its gold {gold}"
            print(said)
            return


def _progress(args: argparse.Namespace, desc: str = "EM", unit: str = "iteration"):
    """A progress bar on stderr while EM runs, when stderr is a terminal and --quiet is not given; else nothing
    (a ``with`` block either way). The engines call it once per iteration (`crowdlab.engines.progress`)."""
    from contextlib import nullcontext

    from crowdlab.engines.progress import ProgressBar, on_terminal

    if getattr(args, "quiet", False) or not on_terminal(sys.stderr):
        return nullcontext(None)
    return ProgressBar(desc, unit, file=sys.stderr)


HEAD_ROWS = 10  # labels printed when fit has no --out


def _print_head(post) -> None:
    """Without --out: the first labels (item, label, confidence; scores: item, estimate) after the summary."""
    cols = [c for c in ("item", "label", "confidence", "estimate") if c in post]
    head = post[cols].head(HEAD_ROWS).copy()
    for c in ("item", "label"):
        if c in head:
            head[c] = [safe.plain(str(v)) for v in head[c]]
    shown = "all" if len(post) <= HEAD_ROWS else f"the first {HEAD_ROWS} of {len(post):,}"
    print(f"\nlabels ({shown}; --out DIR writes them all, with the posteriors and the workers):")
    print(head.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


def cmd_fit(args: argparse.Namespace) -> int:
    check_options(args)
    sample_file(args)
    check_input(args.file)
    if args.stream or args.engine != "memory":
        return cmd_fit_engine(args, "stream" if args.stream else args.engine)
    options = _model_options(args)
    check_model(args, options)
    out = check_out(args) if args.out is not None else None
    from crowdlab.engines.fit import fit
    from crowdlab.io.data import read_annotations
    from crowdlab.io.sequences import read_sequences

    kind = "continuous" if args.method == "scores" and args.kind == "auto" else args.kind
    if args.fmt == "sequences" or (args.method == "hmm" and args.fmt == "auto"):
        data = read_sequences(args.file, gold=args.gold, where="cli")
    else:
        data = read_annotations(
            args.file, gold=args.gold, fmt=args.fmt, kind=kind, columns=args.columns, where="cli", abstain=args.abstain
        )
    if args.edges:
        from crowdlab.io.graph import read_edges

        data = read_edges(args.edges, data, where="cli")
    known = _known_codes(args.known, data) if args.known else None
    with _progress(args, unit="update" if args.method in ONLINE_MODELS else "iteration") as bar:
        run = fit(
            data,
            args.method,
            init=args.init,
            prior=args.prior,
            hard=args.hard,
            seed=args.seed,
            tol=args.tol,
            max_iter=args.max_iter,
            model_options=options,
            known=known,
            reveal=args.reveal,
            reveal_seed=args.reveal_seed,
            n_jobs=_n_jobs(args.n_jobs),
            progress=bar,
            accelerate=not getattr(args, "plain", False),
            restarts=args.restarts,
        )
    post = posterior_frame(run)
    if args.method == "hmm":
        names = list(data.class_names)
        post["viterbi"] = [names[k] for k in run.model.decode(data, run.params)]
    workers = worker_frame(run)
    metrics = metrics_dict(run)
    # every file's content first (each writer refuses non-finite numbers), so a refusal leaves no partial output
    texts = {"params.json": to_json(params_dict(run)), "history.json": to_json(history_dict(run))}
    if metrics:
        texts["metrics.json"] = to_json(metrics)
    intervals = _gold_intervals(run) if args.intervals else None
    if out is None:
        _print_summary(run, workers, metrics, None, ())
        _print_head(post)
        if intervals is not None:
            print(intervals.text())
        return 0
    written = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_csv(post, out / "posteriors.csv")
        written.append("posteriors.csv")
        if "label" in post:
            write_csv(post[["item", "label"]], out / "labels.csv")
            written.append("labels.csv")
        write_csv(workers, out / "workers.csv")
        written.append("workers.csv")
        if intervals is not None:
            write_csv(intervals.table, out / "intervals.csv")
            written.append("intervals.csv")
        for name, text in texts.items():
            (out / name).write_text(text)
            written.append(name)
        removed = _remove_stale(out, written)
    except OSError as exc:
        raise _cannot_write(exc) from None
    _print_summary(run, workers, metrics, out, written)
    if intervals is not None:
        print(intervals.text())
    _say_removed(removed, out)
    return 0


def _gold_intervals(run):
    """crowdlab.analysis.ppi.gold_intervals of ``run``, its refusal (no gold in the file's items, ...) as an error."""
    from crowdlab.analysis.ppi import gold_intervals

    try:
        return gold_intervals(run)
    except ValueError as exc:
        raise OptionError(f"--intervals: {exc}") from None


def _n_jobs(n: int) -> int:
    """--n-jobs bounded by the machine's cores (-1: all of them), with a message when it asked for more."""
    cores = os.cpu_count() or 1
    if n == -1:
        return cores
    if n > cores:
        print(f"note: --n-jobs {n} is more than this machine's {cores} cores; using {cores}.", file=sys.stderr)
        return cores
    return n


def _remove_stale(out: Path, written) -> list[str]:
    """Delete the files of ``OUTPUTS`` in ``out`` that this run did not write (left by an earlier run into the same
    folder: a metrics.json from a run with gold beside a run without would be read as this run's scores)."""
    removed = []
    for name in OUTPUTS:
        if name not in written and (out / name).is_file():
            (out / name).unlink()
            removed.append(name)
    return removed


def _say_removed(removed: list[str], out: Path) -> None:
    if removed:
        them = "it" if len(removed) == 1 else "them"
        print(
            f"note: removed {', '.join(removed)} from {out}: an earlier run wrote {them} and this one does not "
            "(metrics.json needs --gold), so nothing there describes another run"
        )


def _known_codes(path: str, data):
    """(n_items,) class codes of the items in the known-labels file (-1 elsewhere), read like a gold file and
    refused in its own words (`crowdlab.io.gold.read_known`)."""
    from crowdlab.io.gold import read_known

    return read_known(path, data, where="cli")


def cmd_fit_engine(args: argparse.Namespace, engine: str) -> int:
    """``fit --stream`` / ``--engine dask``: batch EM without the whole file in memory; the same output files."""
    from crowdlab.analysis.export import write_engine_outputs

    unsupported = [
        name
        for name, used in (
            ("--gold", args.gold),
            ("--hard", args.hard),
            ("--edges", args.edges),
            ("--reveal", args.reveal is not None),
            (f"--init {args.init}", args.init != "majority"),
            (f"--format {args.fmt}", args.fmt not in ("auto", "long")),
            ("--columns", args.columns),
            (f"--kind {args.kind}", args.kind in ("continuous", "ordinal")),
            ("--abstain", args.abstain),
        )
        if used
    ]
    if unsupported:
        print(
            f"error: {', '.join(unsupported)} cannot be used with --engine {engine}; the engines fit long files of "
            "class labels from a majority-vote start (score labels.csv against gold afterwards; fix known classes "
            "with --known FILE).",
            file=sys.stderr,
        )
        return 2
    if engine == "dask":
        from crowdlab.errors import require_extra

        require_extra("dask", "--engine dask")
    from crowdlab.engines.blocks import engine_model

    options = {k: v for k, v in _model_options(args).items() if k == "class_prior"}
    engine_model(args.method, 0.0, options)  # a method the engine does not run: refused before reading
    if args.out is None:
        raise OptionError(f"--engine {engine} writes its results to files: give --out DIR.")
    out = check_out(args, ENGINE_OUTPUTS)
    if engine == "stream":
        from crowdlab.engines.stream import fit_file

        with _progress(args, "reading", "row") as reading, _progress(args) as bar:
            run = fit_file(
                args.file,
                args.method,
                chunk_rows=args.chunk_rows,
                prior=0.0 if args.prior is None else args.prior,
                tol=args.tol,
                max_iter=args.max_iter,
                where="cli",
                known=args.known,
                model_options=options,
                known_column=args.known_column,
                progress=bar,
                read_progress=reading,
                restarts=args.restarts,
                accelerate=not args.plain,
            )
        frames = None
    else:
        from crowdlab.engines.distributed import fit as dask_fit

        with _progress(args) as bar:
            run = dask_fit(
                args.file,
                args.method,
                scheduler=args.scheduler,
                npartitions=args.npartitions,
                prior=0.0 if args.prior is None else args.prior,
                tol=args.tol,
                max_iter=args.max_iter,
                where="cli",
                known=args.known,
                model_options=options,
                progress=bar,
                restarts=args.restarts,
                accelerate=not args.plain,
            )
        frames = [run.posterior_frame()]
    try:
        workers = write_engine_outputs(run, out, frames)
        removed = _remove_stale(out, ENGINE_OUTPUTS)
    except OSError as exc:
        raise _cannot_write(exc) from None
    _print_summary(run, workers, {}, out, ENGINE_OUTPUTS)
    _say_removed(removed, out)
    print(f"engine: {engine}; {run.stop_reason}")
    return 0


def _limit_hint(run) -> str:
    """What to try when EM stopped at --max-iter: a higher limit, or (a model with a prior, none set) a prior, which
    keeps the estimates off 0 and 1 where maximum likelihood creeps for ever (Dawid-Skene on TREC: 10,000 iterations
    without converging; with --prior 1, 552 iterations, 0.9 s)."""
    hint = f"hint: raise --max-iter (now {run.max_iter:,})"
    if run.model.info.prior_pull and not getattr(run.model, "prior", 0.0):
        hint += (
            ", or give a prior (e.g. --prior 1: pseudo-counts that keep the estimates off 0 and 1; it often "
            "converges far sooner)"
        )
    return hint


def _print_summary(run, workers, metrics: dict, out: Path | None, written) -> None:
    d = run.data
    kind = "continuous scores" if d.is_continuous else f"{d.n_classes} classes"
    counts = f"{plural(d.n_items, 'item')}, {plural(d.n_workers, 'worker')}, {plural(d.n_obs, 'label')}"
    if getattr(d, "response_names", ()):  # the streaming and Dask engines read no "can't tell" responses
        n_abs = int((d.label >= d.n_classes).sum())
        counts += f" ({plural(n_abs, 'abstention')}: {', '.join(map(repr, d.response_names))})"
    print(f"{safe.plain(d.name or 'data')}: {counts}, {kind}")
    for note in d.notes:
        print(f"note: {safe.plain(note)}")
    print(f"method: {run.model.info.title}; start: {run.start_description}")
    if getattr(run, "restarts", None):
        seeds = [s for s, _ in run.restarts]
        print(
            f"restarts: {len(seeds)} seeds of the random start ({seeds[0]}-{seeds[-1]}); kept seed {run.model.seed}, "
            f"the best {run.model.objective_name} ({max(v for _, v in run.restarts):.4f})"
        )
    if getattr(run.model, "semi_supervised", False):
        n_known = int((run.model.known_classes(d) >= 0).sum())
        keep = "item keeps its known class (it counts" if n_known == 1 else "items keep their known class (they count"
        print(f"semi-supervised: {n_known} {keep} in the metrics below)")
    if args_online := hasattr(run, "progress"):
        from crowdlab.models.online import format_table

        print(format_table(run.progress.rows))
        h = run.objective_history()
        steps = f"{plural(run.last.iteration, 'pass', 'passes')}, {plural(run.last.t, 'update')}"
        print(f"online EM: {steps}; {run.model.objective_name} = {h[-1]:.6f}")
    if run.iterative and not args_online:
        from crowdlab.engines.run import STOP_REASONS

        state = STOP_REASONS.get(run.stop_reason or "", "converged" if run.converged else "not converged")
        print(f"EM: {plural(run.last.iteration, 'iteration')}; {run.model.objective_name} = {run.last.objective:.6f}")
        print(f"stopped: {state}")
        if getattr(run, "acceleration", None) is not None:
            print(run.acceleration.summary())
        if run.stop_reason == "max_iter":
            print(_limit_hint(run))
    if run.violations:
        print(f"WARNING: the objective decreased {plural(len(run.violations), 'time')}: {run.violations[0]}")
    col = next((c for c in ("accuracy", "p_good", "agreement_with_majority") if c in workers), None)
    if col:
        ranked = workers.sort_values(col, ascending=False)
        fmt = lambda r: f"{safe.plain(r['worker'])} ({r[col]:.2f}, {plural(int(r['n_labels']), 'label')})"  # noqa: E731
        print(f"most reliable ({col}): " + ", ".join(fmt(r) for _, r in ranked.head(3).iterrows()))
        print(f"least reliable ({col}): " + ", ".join(fmt(r) for _, r in ranked.tail(3)[::-1].iterrows()))
    alpha = workers.attrs.get("krippendorff_alpha")
    if alpha is not None and np.isfinite(alpha):
        print(f"Krippendorff's alpha (nominal, all labels): {alpha:.3f}")
    if "spammer_score" in workers:
        spam = workers.loc[workers["spammer_score"] < 0.05, "worker"]
        if len(spam):
            shown = ", ".join(safe.plain(w) for w in spam.head(5))
            print(f"likely spammers (spammer score < 0.05, Raykar & Yu 2012): {shown}{' ...' if len(spam) > 5 else ''}")
    dep = workers.attrs.get("dependence")
    if dep is not None:
        print(safe.plain(dep.summary()))
        for _, r in dep.frame(top=3)[lambda f: f["flagged"]].iterrows():
            print(
                f"  likely copying: {safe.plain(r['worker a'])} & {safe.plain(r['worker b'])}: agree on "
                f"{r['agree']:.0f} of {r['shared items']} items, {r['agree if independent']:.1f} if independent "
                f"(Holm p = {r['Holm p']:.2g})"
            )
    for k, v in metrics.items():
        print(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")
    if out is not None:
        print(f"wrote {', '.join(sorted(written))} to {out}")


def app_command(rest: list[str]) -> list[str]:
    """The command ``crowdlab app REST...`` runs: ``python -m streamlit run <installed app.py>`` with the app's
    settings (:func:`crowdlab.io.app_files.config_options`, ``server.address = 127.0.0.1`` among them) as options,
    less those the user set on the command line (``--server.port 8502`` or ``--server.port=8502``) or in the
    environment (``STREAMLIT_SERVER_PORT``), then ``rest`` unchanged (as ``python3 dev.py app`` passes them)."""
    from crowdlab.io.app_files import APP, app_root, config_options, env_name

    root = app_root()
    given = {a.split("=", 1)[0][2:] for a in rest if a.startswith("--")}
    ours = [
        f"--{name}={value}"
        for name, value in config_options(root).items()
        if name not in given and env_name(name) not in os.environ
    ]
    return [sys.executable, "-m", "streamlit", "run", str(root / APP), *ours, *rest]


def cmd_app(rest: list[str]) -> int:
    """``crowdlab app [streamlit options]``: replaces this process with Streamlit's server (POSIX), so that Ctrl-C
    and a service manager's SIGTERM reach the server itself; on Windows it waits for it."""
    if any(a in ("-h", "--help") for a in rest):
        print(f"usage: {prog_name()} app [streamlit options ...]\n\n{APP_HELP}", end="")
        return 0
    from crowdlab.errors import require_extra

    require_extra("app", f"{prog_name()} app (the web app)")
    args = app_command(rest)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "nt":  # pragma: no cover - no exec that keeps the console's Ctrl-C on Windows
        import subprocess

        return subprocess.run(args).returncode
    os.execv(args[0], args)
    return 0  # pragma: no cover - execv does not return


def cmd_samples() -> int:
    from crowdlab.io.samples import SAMPLES, SEQUENCE_SAMPLES, sample_paths

    for key, s in {**SAMPLES, **SEQUENCE_SAMPLES}.items():
        labels, gold = sample_paths(key)
        print(f"{key:10s} {s.title}: {s.description}\n{'':10s} {labels}" + (f" (gold: {gold})" if gold else ""))
    return 0


def _lenient_output() -> None:
    """Print what a console cannot encode as an escape instead of failing: the objective's name has θ, and
    users' file and worker names can be anything, while a pipe on Windows (cp1252) or a C locale cannot write
    them."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, io.UnsupportedOperation):
            pass


def _quiet_stdout() -> None:
    """After the reader of our output went away (``| head -1``): send what is left to /dev/null, so that the
    interpreter's last flush does not print a BrokenPipeError of its own."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status (0; 2 for an error the user can fix). A closed pipe
    (``crowdlab samples | head -1``) ends it quietly with 0: the output files are written before the summary."""
    _lenient_output()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["app"]:  # Streamlit's options are not ours to parse: everything after "app" goes to it
        return _dispatch_app(argv[1:])
    try:
        parser = build_parser()
        _autocomplete(parser)
        args = parser.parse_args(argv)
        refused = setting_problems(defaults=False)
        if refused:  # a CROWDLAB_* variable outside its range: stop before anything runs with a setting not asked for
            for text in refused:
                print(f"error: {text}", file=sys.stderr)
            return 2
        code = _dispatch(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return 0


def _dispatch_app(rest: list[str]) -> int:
    try:
        return cmd_app(rest)
    except CrowdlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: {exc.strerror}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command == "fit":
            return cmd_fit(args)
        if args.command == "compare":
            return cmd_compare(args)
        if args.command == "completion":
            return cmd_completion(args.shell)
        return cmd_samples()
    except CrowdlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: no such file: {exc.filename}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
