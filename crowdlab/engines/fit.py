"""The five-line Python API: ``fit`` runs a method to convergence and returns the :class:`~crowdlab.engines.run.Run`."""

from __future__ import annotations

from crowdlab.engines.limits import MAX_ITER
from crowdlab.engines.restarts import with_restarts
from crowdlab.engines.run import Run
from crowdlab.io.annotations import Annotations
from crowdlab.models import ONLINE_MODELS, make_model

PARAMS_BUDGET = 256 * 2**20  # bytes of stored parameter sets a fit keeps before the oldest go (Run.params_budget)
ONLINE_OPTIONS = ("eta0", "tau0", "rho", "buckets", "passes", "batch_size", "n_items", "init_accuracy", "worker_steps")


def fit(
    data: Annotations,
    method: str = "ds",
    *,
    init: str = "majority",
    prior: float | None = None,
    hard: bool = False,
    seed: int | None = 0,
    tol: float = 1e-8,
    max_iter: int = MAX_ITER,
    model_options: dict | None = None,
    known=None,
    reveal: float | None = None,
    reveal_seed: int = 0,
    n_jobs: int = 1,
    progress=None,
    accelerate: bool = True,
    restarts: int | None = None,
    **init_kwargs,
) -> Run:
    """Fit ``method`` ("mv", "ds", "one_coin", "two_coin", "glad", "mace", "mace_vb", "ibcc", "scores", "hmm",
    "mrf") and run EM (or, for "ibcc" and "mace_vb", variational Bayes) to convergence.

    Semi-supervised EM: ``known`` (a mapping item -> class, or (n_items,) class codes with -1 for unknown) and/or
    ``reveal`` (a fraction of the gold labels, drawn with ``reveal_seed``) keep those items' classes fixed in every
    E-step.

    Online EM ("online_ds", "online_one_coin"; :mod:`crowdlab.models.online`) takes its options as keyword
    arguments, e.g. ``fit(data, "online_ds", eta0=1.0, tau0=10, rho=0.6, buckets=None, passes=10, batch_size=10,
    seed=0, prior=1.0)``, runs its passes (``max_iter`` and ``tol`` do not apply) and returns a
    :class:`crowdlab.engines.online.OnlineRun` (the same interface: ``labels()``, ``posterior``, ``params``,
    ``history()``); ``prior`` (pseudo-counts) defaults to 1 there and to 0 (maximum likelihood) elsewhere.

    The run keeps the posteriors of its last two snapshots only (older ones are recomputed on demand), so a
    long fit on 10^7 labels does not hold one posterior per half-step, and at most :data:`PARAMS_BUDGET` (256 MiB)
    of parameter sets, the oldest going first (their objectives stay in ``history()``), so a long fit with many
    workers and classes does not hold one set of confusion matrices per iteration; build a :class:`Run` yourself
    to keep all.
    ``n_jobs``: threads for the class models' E-step and M-step statistics over blocks of items (numba's compiled
    kernels; `crowdlab.models.parallel`): 1 (the default) one thread, -1 every core; every n_jobs >= 2 gives the
    same numbers bit for bit, and the same as one thread to ~1e-16 relative.
    It stops when EM has converged (:attr:`Run.converged`: the objective has stopped changing *and* the parameters
    are contracting to a fixed point, so a plateau is not mistaken for the end), stalls, or reaches ``max_iter``;
    ``run.stop_reason`` says which. ``model_options`` go to the model's constructor (e.g.
    ``{"delta": 5.0, "e_step": "mean_field"}`` for "mrf"). ``progress``: True draws a progress bar (tqdm: the
    widget in a notebook, text elsewhere), or a function ``progress(iteration, max_iter)`` is called after every
    iteration (:meth:`crowdlab.engines.run.Run.run`; online EM: after every pass or update, as its run reports).

    ``accelerate`` (default True): SQUAREM around the EM (or VB) map of Dawid-Skene, one-coin, two-coin, MACE (EM
    and VB), IBCC, EBCC and GLAD (`crowdlab.engines.accel`): the same fixed point in 40-60 % fewer EM-map
    evaluations, stopping on the estimated remaining gain (at most ``tol`` relative) after checking that the stop
    is a maximum, not a saddle; ``run.acceleration`` reports the evaluations, fallback steps, the gap estimate
    and the check, and ``max_iter`` bounds the evaluations. Hard EM and the other models run plain EM, as does
    ``accelerate=False`` (what the Step page and the lessons step).
    ``restarts``: fits from that many seeds of the model's own random start (its ``seed`` option, from
    ``model_options["seed"]`` or 0 upwards) keeping the best final objective (:mod:`crowdlab.engines.restarts`);
    None: the method's default, 8 for "ebcc" (its subtype split decides its answer), 1 for the others.
    ``max_iter``: :data:`crowdlab.engines.limits.MAX_ITER` (10,000), the one limit of every page.
    """
    if progress is not None and not callable(progress):  # True/False: a tqdm bar (the notebook widget) or none
        from crowdlab.engines.progress import as_callback

        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True, False or a function f(done, total), not {progress!r}.")
        callback, bar = as_callback(progress)
        kw = dict(init=init, prior=prior, hard=hard, seed=seed, tol=tol, max_iter=max_iter, known=known)
        kw |= dict(model_options=model_options, reveal=reveal, reveal_seed=reveal_seed, n_jobs=n_jobs)
        kw |= dict(accelerate=accelerate, restarts=restarts, **init_kwargs)
        try:
            return fit(data, method, progress=callback, **kw)
        finally:
            if bar is not None:
                bar.close()
    if method in ONLINE_MODELS:
        from crowdlab.engines.online import OnlineRun

        options = {k: init_kwargs.pop(k) for k in ONLINE_OPTIONS if k in init_kwargs}
        if init_kwargs:
            raise TypeError(f"unexpected options for {method}: {', '.join(init_kwargs)}")
        if prior is not None:
            options["prior"] = prior
        options.update(model_options or {})
        model = make_model(method, seed=seed if seed is not None else 0, **options)
        run = OnlineRun(data, model, track_every=None, keep_blocks=False)
        run.run(progress=progress)
        return run
    again = dict(init=init, prior=prior, hard=hard, seed=seed, tol=tol, max_iter=max_iter, known=known, reveal=reveal)
    again |= dict(reveal_seed=reveal_seed, n_jobs=n_jobs, progress=progress, accelerate=accelerate, **init_kwargs)
    best = with_restarts(lambda **kw: fit(data, **kw), method, restarts, model_options, again)  # EBCC: 8 seeds
    if best is not None:
        return best
    prior = 0.0 if prior is None else prior
    semi = {"known": known, "reveal": reveal, "reveal_seed": reveal_seed} if known is not None or reveal else {}
    model = make_model(method, prior=prior, hard=hard, **(model_options or {}), **semi)
    run = Run(
        data,
        model,
        init,
        seed=seed,
        tol=tol,
        max_iter=max_iter,
        keep_posteriors=2,
        params_budget=PARAMS_BUDGET,
        n_jobs=n_jobs,
        **init_kwargs,
    )
    run.run(progress=progress, accelerate=accelerate)
    return run
