"""Fuzz: every model the streaming engine runs, on small generated problems (tests/unit/fuzz_problems.py, the
adversarial designs included: one worker, one item, near-deterministic workers, repeated pairs), written to a file
and streamed in chunks that cut items: the same answers as the in-memory fit (1e-8), nothing non-finite, known
labels and priors mixed in. A few seeds per model run by default; the slow suite runs many."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.engines.blocks import ENGINE_METHODS
from crowdlab.engines.run import nonfinite_entries
from crowdlab.engines.stream import fit_file
from crowdlab.errors import DataError
from crowdlab.io.data import read_annotations, to_long_dataframe
from tests.unit.fuzz_problems import class_problem
from tests.unit.test_stream import assert_same_fit

# issue 42: every warning is an error in the fuzz of the models (none may leak from a model)
pytestmark = pytest.mark.filterwarnings("error")
# the engines' plain EM (accelerate=False) equals the in-memory fit's plain EM, half-step for half-step
plain_fit = functools.partial(cl.fit, accelerate=False)

N_FAST = 6
N_SLOW = 60


def _one(method: str, seed: int, tmp_path) -> None:
    rng = np.random.default_rng(seed + 77)
    data = class_problem(seed, K=2 if method == "two_coin" else None)
    path = tmp_path / f"p{seed}.csv"
    to_long_dataframe(data)[["item", "worker", "label"]].to_csv(path, index=False)
    try:
        data = read_annotations(path)  # the file's own items and classes (nobody-labelled items are not in it)
    except DataError as exc:  # one class everywhere: both readers refuse it alike
        assert "same class" in str(exc)
        with pytest.raises(DataError, match="same class"):
            fit_file(path, method)
        return
    prior = 0.0 if method in ("mv", "mace_vb", "ibcc", "ebcc") else float((0.0, 0.5, 3.0)[seed % 3])
    kw = {"prior": prior} if method != "mv" else {}
    known = None
    if method != "mv" and seed % 2:
        pick = rng.random(data.n_items) < 0.3
        known = {
            data.item_names[n]: data.class_names[int(rng.integers(0, data.n_classes))] for n in np.flatnonzero(pick)
        }
    mem = plain_fit(
        data,
        method,
        max_iter=30,
        known=None if known is None else {k: v for k, v in known.items()},
        **kw,
    )
    work = tmp_path / f"w{seed}"
    work.mkdir()
    rows = int(rng.integers(1, 9))
    eng = fit_file(path, method, chunk_rows=rows, max_iter=30, known=known, workdir=work, accelerate=False, **kw)
    assert np.isfinite(eng.posterior).all()
    np.testing.assert_allclose(eng.posterior.sum(axis=1), 1.0, atol=1e-12)
    if eng.params is not None:
        assert nonfinite_entries(eng.params) == []
    assert_same_fit(mem, eng)
    assert eng.violations == mem.violations == []


@pytest.mark.parametrize("method", ENGINE_METHODS)
def test_stream_fuzz_every_model(method, tmp_path):
    for seed in range(N_FAST):
        _one(method, seed, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("method", ENGINE_METHODS)
def test_stream_fuzz_every_model_many(method, tmp_path):
    for seed in range(N_FAST, N_FAST + N_SLOW):
        _one(method, seed, tmp_path)
