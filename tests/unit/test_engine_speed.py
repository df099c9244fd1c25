"""The fast engine path gives the same numbers as a plain reference EM, and its memory window keeps the run intact.

- Dawid-Skene and one-coin on the bundled sets against a straightforward EM written here (np.add.at over the labels,
  no sparse products, no memo): objective after every iteration and the final posterior to 1e-10.
- The bound: at the E-step's own posterior it is the objective; after the M-step it is E_q[log p] + H(q) with H from
  the memoised log joint, equal to -sum q log q.
- ``keep_posteriors`` (the app's window above 2x10^5 labels): the same run to the last bit, scrubbing back shows the
  same posterior (recomputed), the stopping rule and the arg-max changes unaffected, memory bounded.
- ``import crowdlab`` and ``python -m crowdlab --help`` do not load pandas, plotly or scipy.optimize.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from crowdlab.engines.run import KEEP_ALL_BELOW, POSTERIOR_WINDOW, Run, posterior_window
from crowdlab.io.samples import load_sample
from crowdlab.models import make_model
from crowdlab.models.base import entropy_rows, logsumexp_rows, row_argmax, row_max, row_sums, softmax_lse
from crowdlab.teaching.simulate import simulate_crowd

ROOT = Path(__file__).resolve().parents[2]


def reference_em(data, iters: int, one_coin: bool = False, prior: float = 0.0):
    """Dawid-Skene / one-coin EM from the majority-vote fractions, written plainly: (objective at theta_t,
    posterior E(theta_t)) for t = 0 .. iters."""
    N, M, K = data.n_items, data.n_workers, data.n_classes
    item, worker, label = (np.asarray(a, dtype=np.int64) for a in (data.item, data.worker, data.label))
    votes = np.zeros((N, K))
    np.add.at(votes, (item, label), 1.0)
    tot = votes.sum(axis=1, keepdims=True)
    q = np.where(tot > 0, votes / np.maximum(tot, 1), 1.0 / K)
    objectives, posteriors = [], []
    for _ in range(iters + 1):
        counts = np.zeros((M, K, K))  # counts[m, said, truth]
        np.add.at(counts, (worker, label), q[item])
        if one_coin:
            correct = np.trace(counts, axis1=1, axis2=2)
            total = counts.sum(axis=(1, 2))
            theta = np.where(total + 2 * prior > 0, (correct + prior) / np.maximum(total + 2 * prior, 1e-300), 0.5)
            gamma = np.empty((M, K, K))
            for m in range(M):
                gamma[m] = np.full((K, K), (1 - theta[m]) / (K - 1))
                np.fill_diagonal(gamma[m], theta[m])
        else:
            c = counts + prior
            col = c.sum(axis=1, keepdims=True)
            gamma = np.where(col > 0, c / np.where(col > 0, col, 1.0), 1.0 / K)
        pi = (q.sum(axis=0) + prior) / (N + prior * K)
        lj = np.tile(np.log(np.maximum(pi, 1e-300)), (N, 1))
        np.add.at(lj, item, np.log(np.maximum(gamma[worker, label, :], 1e-300)))
        mx = lj.max(axis=1, keepdims=True)
        objectives.append(float((mx[:, 0] + np.log(np.exp(lj - mx).sum(axis=1))).sum()))
        q = np.exp(lj - mx)
        q /= q.sum(axis=1, keepdims=True)
        posteriors.append(q)
    return np.array(objectives), posteriors


CASES = [("bluebirds", "ds"), ("dogs", "ds"), ("patients", "ds"), ("rte", "one_coin"), ("dogs", "one_coin")]


@pytest.mark.parametrize(("name", "method"), CASES)
def test_engine_matches_a_plain_reference_em(name, method):
    data = load_sample(name)
    iters = 12
    run = Run(data, make_model(method))
    for _ in range(iters):
        run.step()
    want_obj, want_q = reference_em(data, iters, one_coin=method == "one_coin")
    got = np.array(run.objective_history())
    np.testing.assert_allclose(got, want_obj[: got.size], rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(run.posterior, want_q[iters - 1], atol=1e-10)  # E-step of iteration 12: theta_11


def test_map_dawid_skene_matches_the_reference_objective_minus_nothing_but_the_prior():
    data = load_sample("dogs")
    model = make_model("ds", prior=1.0)
    run = Run(data, model)
    for _ in range(5):
        run.step()
    _, want_q = reference_em(data, 5, prior=1.0)
    np.testing.assert_allclose(run.posterior, want_q[4], atol=1e-10)


def test_bound_at_the_e_step_is_the_objective_and_after_the_m_step_uses_the_entropy_of_q():
    data = load_sample("dogs")
    model = make_model("ds")
    run = Run(data, model)
    run.step()
    e = run.e_step()
    assert e.bound == e.objective
    m = run.m_step()
    lj = model.log_joint(data, m.params)
    want = float((m.q * lj).sum()) + entropy_rows(m.q)
    assert m.bound == pytest.approx(want, rel=1e-12, abs=1e-9)
    assert model.entropy(m.q) == pytest.approx(entropy_rows(m.q), rel=1e-9, abs=1e-9)
    assert m.bound <= m.objective + 1e-9 * abs(m.objective)
    # an array the model did not produce: its entropy from q itself
    other = m.q.copy()
    assert model.entropy(other) == entropy_rows(other)


def test_row_helpers_agree_with_numpy():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(500, 7)) * 30 - 100
    x[3] = -np.inf
    x[3, 2] = 0.5
    np.testing.assert_array_equal(row_max(x), x.max(axis=1))
    y = np.exp(np.minimum(x, 0))
    np.testing.assert_allclose(row_sums(y), y.sum(axis=1), rtol=1e-15)
    q, lse = softmax_lse(x)
    np.testing.assert_allclose(lse, logsumexp_rows(x), rtol=1e-15)
    np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=1e-15)
    np.testing.assert_allclose(q, np.exp(x - lse[:, None]), atol=1e-15)
    for k in (2, 3):
        w = np.round(rng.random((400, k)), 1)  # many ties
        np.testing.assert_array_equal(row_argmax(w), np.argmax(w, axis=1))


@pytest.fixture(scope="module")
def crowd():
    return simulate_crowd(2000, 12, 3, labels_per_item=4, seed=3).annotations


@pytest.mark.parametrize("method", ["ds", "one_coin", "mace", "glad"])
def test_a_window_of_posteriors_changes_nothing_but_memory(crowd, method):
    full = Run(crowd, make_model(method), max_iter=40)
    full.run()
    lean = Run(crowd, make_model(method), max_iter=40, keep_posteriors=4)
    first = lean.snapshots[0]
    lean.run()
    assert lean.stop_reason == full.stop_reason
    assert len(lean.snapshots) == len(full.snapshots)
    assert lean.converged == full.converged
    np.testing.assert_array_equal(lean.history()["objective"], full.history()["objective"])
    np.testing.assert_array_equal(lean.history()["bound"], full.history()["bound"])
    np.testing.assert_array_equal(lean.convergence_trace()["param_change"], full.convergence_trace()["param_change"])
    for a, b in zip(lean.snapshots, full.snapshots, strict=True):
        np.testing.assert_array_equal(a.changed, b.changed)
    # at most the window (plus the newest) holds a posterior; the snapshot objects themselves stay (caches key on them)
    assert sum(s.q is not None for s in lean.snapshots) <= 5
    assert lean.snapshots[0] is first and first.q is None
    # scrubbing back shows the same posterior, recomputed from the stored parameters, and its labels
    for i in (0, 1, 2, 5, len(full.snapshots) // 2):
        got = lean.goto(i)
        assert got.index == i and got.kind == full.snapshots[i].kind
        np.testing.assert_allclose(got.q, full.snapshots[i].q, atol=1e-12)
        np.testing.assert_array_equal(lean.labels(lean.snapshots[i]), full.labels(full.snapshots[i]))
        np.testing.assert_allclose(lean.snapshot(i).q, full.snapshots[i].q, atol=1e-12)
    assert len(lean._recomputed) <= 4  # recomputed ones are cached in the window, not written back
    assert sum(s.q is not None for s in lean.snapshots) <= 5
    # stepping on from a scrubbed position reuses the stored snapshots, then computes new ones
    lean.goto(3)
    nxt = lean.step()
    assert nxt.index == 4 and nxt.q is not None


def test_the_app_keeps_every_posterior_on_small_data_and_a_window_on_large(crowd):
    assert posterior_window(crowd) is None
    big = simulate_crowd(KEEP_ALL_BELOW // 10 + 10, 20, 2, labels_per_item=10, seed=0).annotations
    assert big.n_obs >= KEEP_ALL_BELOW
    assert posterior_window(big) == POSTERIOR_WINDOW


def test_the_step_page_builds_its_run_with_the_window(monkeypatch, crowd):
    from crowdlab.ui import state

    seen = {}
    real = state.Run

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(state, "Run", spy)
    monkeypatch.setattr(state, "posterior_window", lambda data: 8)
    session = {}
    monkeypatch.setattr(state.st, "session_state", session)
    monkeypatch.setattr(state, "get_data", lambda: crowd)
    state._new_run()
    assert seen["keep_posteriors"] == 8
    assert session[state.RUN].keep_posteriors == 8


def _modules_after(code: str) -> list[str]:
    quiet = "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n    "
    probe = quiet + code.replace("\n", "\n    ")
    heavy = "('pandas', 'plotly', 'scipy.optimize', 'scipy.special', 'numba')"
    probe += f"\nimport sys\nprint(' '.join(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_import_crowdlab_loads_no_pandas_plotly_optimizer_special_functions_or_numba():
    assert _modules_after("import crowdlab; crowdlab.Run; crowdlab.make_model('ds')") == []


def test_the_command_line_help_loads_no_pandas():
    code = (
        "import runpy, sys\nsys.argv = ['crowdlab', '--help']\n"
        "try:\n    runpy.run_module('crowdlab', run_name='__main__')\nexcept SystemExit:\n    pass"
    )
    assert _modules_after(code) == []


def test_the_dataframe_api_still_resolves_lazily():
    import crowdlab

    assert callable(crowdlab.aggregate) and crowdlab.DawidSkene.__name__ == "DawidSkene"
    assert "aggregate" in dir(crowdlab) and callable(crowdlab.read_annotations)
    with pytest.raises(AttributeError):
        crowdlab.no_such_name  # noqa: B018


@pytest.mark.parametrize("size", [1, 7, 64, None])
def test_hmm_forward_backward_by_blocks_equals_the_whole_pass(size):
    from crowdlab.models.hmm import HMMParams, chunked_forward_backward, chunks, forward_backward
    from tests.unit.test_hmm import random_params, tiny_chains

    rng = np.random.default_rng(11)
    for trial in range(12):
        data = tiny_chains(rng, rng.integers(1, 9, size=rng.integers(1, 12)), 3, 3)
        p = random_params(rng, 3, 3)
        if trial % 4 == 3:  # zeros in pi0 and T: blocks that need the log-space pass
            T = np.eye(3)[[1, 2, 0]]
            p = HMMParams(pi=np.array([1.0, 0.0, 0.0]), gamma=p.gamma, T=T)
        q, xi, ll = forward_backward(data, p)
        fb = chunked_forward_backward(data, p, size)
        blocks = chunks(data, size)
        assert blocks[0].lo == 0 and blocks[-1].hi == data.n_items
        assert all(a.hi == b.lo for a, b in zip(blocks, blocks[1:], strict=False))
        np.testing.assert_allclose(fb.q, q, atol=1e-12)
        np.testing.assert_allclose(fb.xi, xi, atol=1e-10)
        assert fb.log_lik == pytest.approx(ll, rel=1e-12, abs=1e-10)
        starts = np.asarray(data.sequence_starts)[:-1]
        np.testing.assert_allclose(fb.first, q[starts].sum(axis=0), atol=1e-12)


def test_hmm_run_keeps_its_numbers_with_blocks_and_a_window():
    from crowdlab.models import HMMCrowd
    from crowdlab.teaching.simulate import simulate_sequences

    data = simulate_sequences(60, 30, 4, 5, labels_per_item=3, seed=2).annotations
    full = Run(data, HMMCrowd(), max_iter=30)
    full.run()
    lean = Run(data, HMMCrowd(), max_iter=30, keep_posteriors=2)
    lean.run()
    assert lean.stop_reason == full.stop_reason and lean.violations == [] == full.violations
    np.testing.assert_array_equal(lean.history()["objective"], full.history()["objective"])
    np.testing.assert_array_equal(lean.history()["bound"], full.history()["bound"])
    np.testing.assert_allclose(lean.goto(3).q, full.snapshots[3].q, atol=1e-12)
    h = full.history()
    e = h["kind"] == "E"
    np.testing.assert_allclose(h["bound"][e], h["objective"][e], rtol=1e-12)
    assert np.all(h["bound"] <= h["objective"] + 1e-9 * np.abs(h["objective"]))


@pytest.mark.parametrize("cached", [False, True])
def test_majority_labels_break_ties_as_the_documented_rule(cached):
    from crowdlab.models.majority import majority_labels

    data = simulate_crowd(3000, 4, 5, labels_per_item=2, seed=5).annotations  # two labels per item: many ties
    if cached:
        _ = data.vote_counts
    v = np.zeros((data.n_items, data.n_classes))
    np.add.at(v, (data.item, data.label), 1.0)
    K = v.shape[1]
    order = np.lexsort((np.arange(K), -v.sum(axis=0)))  # most frequent class overall first, then the lowest code
    rank = np.empty(K)
    rank[order] = np.arange(K)
    want = np.argmax(v - rank[None, :] / (2.0 * K), axis=1)
    assert (v.max(axis=1)[:, None] == v).sum(axis=1).max() > 1  # there are ties to break
    np.testing.assert_array_equal(majority_labels(data), want)
    assert ("vote_counts" in data.__dict__) == cached
