"""The five-line Python API: ``fit`` runs a method to convergence and returns the :class:`~crowdlab.em.Run`."""

from __future__ import annotations

from crowdlab.data import Annotations
from crowdlab.em import Run
from crowdlab.models import make_model


def fit(
    data: Annotations,
    method: str = "ds",
    *,
    init: str = "majority",
    prior: float = 0.0,
    hard: bool = False,
    seed: int | None = 0,
    tol: float = 1e-8,
    max_iter: int = 10000,
    model_options: dict | None = None,
    known=None,
    reveal: float | None = None,
    reveal_seed: int = 0,
    **init_kwargs,
) -> Run:
    """Fit ``method`` ("mv", "ds", "one_coin", "two_coin", "glad", "mace", "ibcc", "scores", "hmm", "mrf") and
    run EM to convergence.

    Semi-supervised EM: ``known`` (a mapping item -> class, or (n_items,) class codes with -1 for unknown) and/or
    ``reveal`` (a fraction of the gold labels, drawn with ``reveal_seed``) keep those items' classes fixed in every
    E-step.

    The run keeps the posteriors of its last two snapshots only (older ones are recomputed on demand), so a
    long fit on 10^7 labels does not hold one posterior per half-step; build a :class:`Run` yourself to keep all.
    It stops when EM has converged (:attr:`Run.converged`: the objective has stopped changing *and* the parameters
    are contracting to a fixed point, so a plateau is not mistaken for the end), stalls, or reaches ``max_iter``;
    ``run.stop_reason`` says which. ``model_options`` go to the model's constructor (e.g.
    ``{"delta": 5.0, "e_step": "mean_field"}`` for "mrf").
    """
    semi = {"known": known, "reveal": reveal, "reveal_seed": reveal_seed} if known is not None or reveal else {}
    model = make_model(method, prior=prior, hard=hard, **(model_options or {}), **semi)
    run = Run(data, model, init, seed=seed, tol=tol, max_iter=max_iter, keep_posteriors=2, **init_kwargs)
    run.run()
    return run
