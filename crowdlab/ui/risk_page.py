"""The "Error rates without labels" page (Donmez, Lebanon & Balasubramanian 2010).

k classifiers label n unlabelled examples; with the marginal p(y) known, their accuracies theta_j (risk 1 - theta_j)
are estimated from the outputs alone. The top of the page simulates fresh outputs for the chosen p(y = 1), theta,
n, k and missing rate and compares eq. (9) (one classifier at a time, closed form) with the collaborative maximum
likelihood (eq. (12), EM), with Prop. 3's verdict. Below, lazy tabs draw the paper's figures live: the
log-likelihood curves (Fig. 1), Fisher information beside the Monte-Carlo error (Fig. 3), error against n for
k = 1, 3, 5, 10 and collaborative against non-collaborative (Figs. 4, 6), a misspecified p(y) (Fig. 8), and the
two-population estimator (Lemma 6, Prop. 7).

State: the widget values are mirrored under the plain key ``risk.values`` (written back into the widget keys
``risk.*`` before the widgets are drawn, so a page switch keeps them); the open tab under ``risk.view.tab``. Every
simulation and Monte-Carlo study is a pure numpy function here, wrapped in ``st.cache_data`` keyed on its
parameters; the studies are split into chunks (one n, or one row of the grid) so a ``st.progress`` bar can follow
them, and a chunk already computed is a cache hit.

Monte Carlo for k = 1: eq. (9) needs only m, the number of outputs equal to class 2 among the n_obs observed ones,
so m is drawn exactly as Binomial(n_obs, p(out = 2)) with n_obs ~ Binomial(n, 1 - missing) (the same distribution
as simulating every output, at a tiny fraction of the cost).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab.analysis import fisher, risk
from crowdlab.errors import CrowdlabError
from crowdlab.plots import risk as figs

NS = "risk"
VALUES = "risk.values"  # plain key: {widget key: value}
TAB_VIEW = "risk.view.tab"  # plain key: the open tab

# widget keys
P, THETA, N, K, SPREAD, MISSING, SEED = (
    "risk.p",
    "risk.theta",
    "risk.n",
    "risk.k",
    "risk.spread",
    "risk.missing",
    "risk.seed",
)
MORE, PRINTED = "risk.more", "risk.printed"
T11, T22, PA, PB = "risk.two.t11", "risk.two.t22", "risk.two.pa", "risk.two.pb"
W_TAB = "risk.tab"
DEFAULTS = {
    P: 0.75,
    THETA: 0.75,
    N: 500,
    K: 3,
    SPREAD: 0.0,
    MISSING: 0.0,
    SEED: 0,
    MORE: False,
    PRINTED: False,
    T11: 0.85,
    T22: 0.65,
    PA: 0.75,
    PB: 0.35,
}

# short enough to fit the tab strip at 1024 px with the sidebar open; each tab's heading names its figure
TABS = (
    "Likelihood (Fig. 1)",
    "Fisher (Fig. 3)",
    "Error vs n (Figs. 4, 6)",
    "Wrong p(y) (Fig. 8)",
    "Two populations",
)
K_LIST = (1, 3, 5, 10)
NS_LIST = (50, 100, 200, 500, 1000, 2000)
GRID_THETA = tuple(np.round(np.arange(0.5, 1.0001, 0.05), 2).tolist())  # 11 values, Fig. 3's coarse grid
GRID_P = tuple(np.round(np.arange(0.55, 0.9501, 0.05), 2).tolist())  # 9 values (p and 1 - p look the same)
FIG3_X = (0.475, 1.025)
FIG3_Y = (0.525, 0.975)
REPS = {"fig3": 200, "fig46": 20, "fig8": 300, "var": 20_000}  # Monte-Carlo repetitions ("more": x5)
MORE_FACTOR = 5
MC_CALLS = {"fig3": 0, "fig46": 0, "fig8": 0}  # chunk computations done in this process (tests read it)


# ============================================================================ pure computations
# the library's messages write parameters in ASCII (theta11, theta_j): on the page they read as the page's symbols
_SYMBOLS = (
    (re.compile(r"\btheta11\b"), "θ₁₁"),
    (re.compile(r"\btheta22\b"), "θ₂₂"),
    (re.compile(r"\btheta_j\b"), "θⱼ"),
    (re.compile(r"\btheta\b"), "θ"),
    (re.compile(r" <= "), " ≤ "),
    (re.compile(r" >= "), " ≥ "),
)


def readable(message: str) -> str:
    """A verdict or error of :mod:`crowdlab.analysis.risk` with its ASCII symbols as the page writes them: "theta =
    0.7280"
    -> "θ = 0.7280", "1/l < theta_j < 1" -> "1/l < θⱼ < 1", "theta11 = 0.79" -> "θ₁₁ = 0.79"."""
    for pattern, symbol in _SYMBOLS:
        message = pattern.sub(symbol, message)
    return message


def thetas_for(theta: float, k: int, spread: float) -> tuple[float, ...]:
    """k accuracies evenly spaced over [theta - spread, theta + spread] (all theta when spread is 0), in [0, 1]."""
    offsets = np.linspace(-1.0, 1.0, int(k)) if k > 1 else np.zeros(1)
    return tuple(np.round(np.clip(theta + spread * offsets, 0.0, 1.0), 4).tolist())


def _se_symmetric(theta_hat: float | None, p: float, n_obs: int) -> float:
    """1 / sqrt(n_obs J(theta_hat)) for eq. (9) (the corrected eq. (24)); NaN where J is 0 or undefined."""
    if theta_hat is None or abs(p - 0.5) < 1e-9 or n_obs == 0:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        J = float(fisher.fisher_symmetric(theta_hat, p))
    return float(1.0 / np.sqrt(n_obs * J)) if np.isfinite(J) and J > 0 else float("nan")


def _collaborative_se(theta_hat: np.ndarray, p: float, missing: float, n: int) -> np.ndarray:
    """Standard errors of the collaborative MLE: sqrt(diag(J^-1) / n) with J the information of one example,
    enumerated over every output vector (each output observed with probability 1 - missing, eq. (16))."""
    th = np.asarray(theta_hat, dtype=np.float64)
    k = th.size
    if abs(p - 0.5) < 1e-9 or (th <= 1e-6).any() or (th >= 1 - 1e-6).any() or 3**k > 200_000:
        return np.full(k, np.nan)
    r = float(missing)
    py = np.array([p, 1.0 - p])

    def probs(t):
        t = np.asarray(t)
        obs = 1.0 - r
        G = np.empty((k, 3, 2), dtype=t.dtype)
        G[:, 0, 0] = t * obs
        G[:, 1, 0] = (1 - t) * obs
        G[:, 0, 1] = (1 - t) * obs
        G[:, 1, 1] = t * obs
        G[:, 2, :] = r
        return fisher.outcome_probs(G if r > 0 else G[:, :2, :], py)

    try:
        J = fisher.fisher_enumerate(probs, th)
        cov = np.linalg.inv(J) / n
    except (np.linalg.LinAlgError, CrowdlabError):
        return np.full(k, np.nan)
    return np.sqrt(np.maximum(np.diag(cov), 0.0))


def _plurality(out: np.ndarray, p: float) -> np.ndarray:
    """Majority vote of the observed outputs; ties (and rows with nothing observed) go to the likelier class."""
    ones = (out == 1).sum(axis=1)
    zeros = (out == 0).sum(axis=1)
    tie = 1 if p < 0.5 else 0
    return np.where(ones > zeros, 1, np.where(zeros > ones, 0, tie))


def fresh_estimates(p: float, thetas: tuple[float, ...], n: int, missing: float, seed: int) -> dict:
    """Simulate n outputs of k = len(thetas) classifiers (eq. (8)) and estimate every theta_j twice: eq. (9) on its
    own outputs and the collaborative MLE (eq. (12) / (16), EM). Returns the outputs, the truth, a table (one row
    per classifier), the two verdicts and the accuracy of eq. (4)'s combination against majority vote."""
    th = np.asarray(thetas, dtype=np.float64)
    out, y = risk.simulate_classifier_outputs(n, th, p, missing=missing, seed=seed)
    rows = []
    first = None
    for j in range(th.size):
        col = out[:, j]
        n_obs = int((col >= 0).sum())
        try:
            est = risk.symmetric_closed_form(col, p)
        except CrowdlabError as exc:
            est, msg = None, readable(str(exc))
        else:
            msg = readable(est.verdict)
        if j == 0:
            first = (est, msg)
        t_hat = None if est is None else est.theta
        rows.append(
            {
                "classifier": f"f{j + 1}",
                "true θ": th[j],
                "outputs": n_obs,
                "θ̂ (9)": np.nan if t_hat is None else t_hat,
                "SE (9)": _se_symmetric(t_hat, p, n_obs),
                "|err| (9)": np.nan if t_hat is None else abs(t_hat - th[j]),
            }
        )
    try:
        coll = risk.collaborative_mle(out, p, tol=1e-9)
    except CrowdlabError as exc:
        coll, coll_msg = None, readable(str(exc))
    else:
        coll_msg = readable(coll.verdict)
    table = pd.DataFrame(rows)
    if coll is not None:
        table["θ̂ collab."] = coll.theta
        table["SE collab."] = _collaborative_se(coll.theta, p, missing, n)
        table["|err| collab."] = np.abs(coll.theta - th)
        combined = risk.combine(out, coll.theta, p)
        acc_combined = float((combined == y).mean())
    else:
        acc_combined = float("nan")
    est0, msg0 = first
    return {
        "outputs": out,
        "truth": y,
        "table": table,
        "closed_form": msg0,
        "closed_form_ok": est0 is not None and est0.identifiable and est0.in_range,
        "closed_form_identifiable": est0 is not None and est0.identifiable,
        "collaborative": coll_msg,
        "collaborative_ok": coll is not None and coll.identifiable,
        "collaborative_iterations": None if coll is None else coll.n_iter,
        "acc_combined": acc_combined,
        "acc_majority": float((_plurality(out, p) == y).mean()),
    }


def loglik_study(p: float, thetas: tuple[float, ...], n: int, missing: float, seed: int) -> dict:
    """Fig. 1: classifier 1's log-likelihood over theta for nested prefixes of n/5, n/2 and n outputs; with two
    or more classifiers also the collaborative log-likelihood of the first two over a 61 x 61 grid."""
    out, _ = risk.simulate_classifier_outputs(n, thetas, p, missing=missing, seed=seed)  # fresh_estimates' data
    grid = np.linspace(0.0, 1.0, 401)
    sizes = sorted({max(n // 5, 10), max(n // 2, 10), n})
    curves = {f"n = {m}": risk.symmetric_loglik(grid, out[:m, 0], p) for m in sizes}
    res = {"grid": grid, "curves": curves, "contour": None}
    if out.shape[1] >= 2:
        t = np.linspace(0.01, 0.99, 61)
        T1, T2 = np.meshgrid(t, t)  # T1 varies along columns (x), T2 along rows (y)
        Z = risk.collaborative_loglik(np.stack([T1, T2], axis=-1), out[:, :2], p)
        fit = risk.collaborative_mle(out[:, :2], p, tol=1e-9)
        res["contour"] = {"t": t, "Z": Z, "mle": tuple(fit.theta.tolist())}
    return res


def _draw_closed_form(rng: np.random.Generator, theta, p_true, p_assumed, n: int, missing: float, reps: int):
    """(reps, ...) eq. (9) estimates clipped to [0, 1], m drawn as a binomial (see the module docstring);
    ``theta`` broadcasts against ``p_true`` and ``p_assumed``."""
    theta = np.asarray(theta, dtype=np.float64)
    q1 = np.asarray(p_true) * (1.0 - theta) + (1.0 - np.asarray(p_true)) * theta  # p(out = code 1)
    shape = (reps,) + np.broadcast(q1, np.asarray(p_assumed)).shape
    n_obs = rng.binomial(n, 1.0 - missing, size=shape) if missing > 0 else np.full(shape, n)
    m = rng.binomial(n_obs, np.broadcast_to(q1, shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = risk.closed_form_theta(m, np.maximum(n_obs, 1), p_assumed)
    return np.clip(np.nan_to_num(raw, nan=0.5), 0.0, 1.0), raw


def fig3_row(p: float, n: int, missing: float, reps: int, seed: int) -> np.ndarray:
    """One row of Fig. 3 (left): mean |theta_hat - theta| of eq. (9) for every theta of GRID_THETA at this p(y)."""
    MC_CALLS["fig3"] += 1
    rng = np.random.default_rng([seed, 3, int(round(p * 1000))])
    th = np.asarray(GRID_THETA)
    est, _ = _draw_closed_form(rng, th, p, p, n, missing, reps)
    return np.abs(est - th).mean(axis=0)


def variance_check(theta: float, p: float, n: int, reps: int, seed: int) -> dict:
    """Var(theta_hat) of eq. (9) (unclipped) by Monte Carlo against 1 / (n J) with J corrected and as printed."""
    rng = np.random.default_rng([seed, 24])
    _, raw = _draw_closed_form(rng, theta, p, p, n, 0.0, reps)
    return {
        "mc": float(np.var(raw)),
        "corrected": float(1.0 / (n * fisher.fisher_symmetric(theta, p))),
        "printed": float(1.0 / (n * fisher.fisher_symmetric_printed(theta, p))),
    }


def fig46_chunk(p: float, theta: float, spread: float, n: int, missing: float, reps: int, seed: int) -> dict:
    """Figs. 4 and 6 at one n: for k in K_LIST, the mean |theta_hat_j - theta_j| (over reps and classifiers) of
    the collaborative MLE and of eq. (9) per classifier; for k = 10 also eq. (9)'s error per classifier. k = 1's
    collaborative MLE is eq. (9) clipped (the same maximiser), so it is not fitted twice."""
    MC_CALLS["fig46"] += 1
    coll = {k: 0.0 for k in K_LIST}
    single = {k: 0.0 for k in K_LIST}
    per_classifier = np.zeros(max(K_LIST))
    for k in K_LIST:
        th = np.asarray(thetas_for(theta, k, spread))
        for r in range(reps):
            out, _ = risk.simulate_classifier_outputs(n, th, p, missing=missing, seed=[seed, k, n, r])
            own = np.array([_clipped_closed_form(out[:, j], p) for j in range(k)])
            err_own = np.abs(own - th)
            single[k] += err_own.mean() / reps
            if k == max(K_LIST):
                per_classifier += err_own / reps
            if k == 1:
                coll[k] += err_own.mean() / reps
                continue
            try:
                est = risk.collaborative_mle(out, p, tol=1e-6).theta
            except CrowdlabError:
                est = own
            coll[k] += np.abs(est - th).mean() / reps
    return {"collaborative": coll, "single": single, "per_classifier": per_classifier}


def _clipped_closed_form(col: np.ndarray, p: float) -> float:
    obs = col[col >= 0]
    if obs.size == 0:
        return 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = float(risk.closed_form_theta(int((obs == 1).sum()), obs.size, p))
    return float(np.clip(raw, 0.0, 1.0)) if np.isfinite(raw) else 0.5


def assumed_marginals(p: float) -> tuple[float, ...]:
    """Fig. 8's assumed p(y = 1): the truth and 0.05, 0.1 either side, kept on the truth's side of 1/2."""
    side = 1.0 if p >= 0.5 else -1.0
    out = []
    for d in (-0.1, -0.05, 0.0, 0.05, 0.1):
        q = round(p + side * d, 4)
        if 0.01 <= q <= 0.99 and side * (q - 0.5) > 0.005:
            out.append(q)
    return tuple(out)


def fig8_row(p_true: float, theta: float, p_assumed: float, missing: float, reps: int, seed: int) -> np.ndarray:
    """Fig. 8: mean |theta_hat - theta| against NS_LIST when eq. (9) assumes ``p_assumed`` instead of ``p_true``."""
    MC_CALLS["fig8"] += 1
    rng = np.random.default_rng([seed, 8, int(round(p_assumed * 1000))])
    errs = []
    for n in NS_LIST:
        est, _ = _draw_closed_form(rng, theta, p_true, p_assumed, n, missing, reps)
        errs.append(float(np.abs(est - theta).mean()))
    return np.asarray(errs)


def theta_limit(p_true: float, theta: float, p_assumed: np.ndarray) -> np.ndarray:
    """Where eq. (9) converges when it assumes ``p_assumed``: theta_hat at the true p(out = 2), clipped."""
    q1 = p_true * (1.0 - theta) + (1.0 - p_true) * theta
    pa = np.asarray(p_assumed, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        lim = np.clip(risk.closed_form_theta(q1, 1.0, pa), 0.0, 1.0)
    return np.where(np.abs(pa - 0.5) < 1e-3, np.nan, lim)


def two_population_study(t11: float, t22: float, pa: float, pb: float, n: int, seed: int) -> dict:
    """Lemma 6 and Prop. 7: outputs of one classifier with confusion (theta11, theta22) on two populations with
    p(y = 1) = pa and pb (n examples each); A's log-likelihood on an 81 x 81 grid, both flat ridges, the estimate."""
    G = np.array([[t11, 1.0 - t22], [1.0 - t11, t22]])  # G[said, true]
    out_a = risk.simulate_confusion_outputs(n, G, pa, seed=[seed, 1])[0][:, 0]
    out_b = risk.simulate_confusion_outputs(n, G, pb, seed=[seed, 2])[0][:, 0]
    t = np.linspace(0.0, 1.0, 81)
    A, B = np.meshgrid(t, t)
    Z = risk.two_by_two_loglik(A, B, out_a, pa)
    ridge_a = risk.lemma6_flat_direction(out_a, pa)
    ridge_b = risk.lemma6_flat_direction(out_b, pb)
    est = risk.two_population_estimate(out_a, pa, out_b, pb)
    return {"t": t, "Z": Z, "ridge_a": ridge_a, "ridge_b": ridge_b, "estimate": est}


# ============================================================================ cached wrappers
fresh_estimates_cached = st.cache_data(max_entries=64, show_spinner="Simulating the classifiers...")(fresh_estimates)
loglik_study_cached = st.cache_data(max_entries=32, show_spinner=False)(loglik_study)
fig3_row_cached = st.cache_data(max_entries=512, show_spinner=False)(fig3_row)
variance_check_cached = st.cache_data(max_entries=64, show_spinner=False)(variance_check)
fig46_chunk_cached = st.cache_data(max_entries=256, show_spinner=False)(fig46_chunk)
fig8_row_cached = st.cache_data(max_entries=256, show_spinner=False)(fig8_row)
two_population_cached = st.cache_data(max_entries=32, show_spinner=False)(two_population_study)


def text_table(df: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Floats written with ``digits`` decimals and "—" for NaN (a small table for reading, not sorting)."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype.kind == "f":
            out[c] = [("—" if not np.isfinite(v) else f"{v:.{digits}f}") for v in out[c]]
    return out


def with_progress(text: str, chunks: list[Callable[[], object]]) -> list:
    """Run the chunks under a progress bar (cache hits pass through it in an instant); the bar goes away after."""
    bar = st.progress(0.0, text=text)
    out = []
    for i, chunk in enumerate(chunks):
        out.append(chunk())
        bar.progress((i + 1) / len(chunks), text=f"{text} ({i + 1} of {len(chunks)})")
    bar.empty()
    return out


# ============================================================================ state: mirrored widgets
def value(key: str):
    """The current value of a page widget (its default until the person changes it)."""
    return (st.session_state.get(VALUES) or {}).get(key, DEFAULTS[key])


def set_value(key: str, v) -> None:
    st.session_state[VALUES] = {**(st.session_state.get(VALUES) or {}), key: v}


def _on_widget(key: str) -> None:
    set_value(key, st.session_state[key])


def mirrored(key: str) -> dict:
    """Widget arguments: the mirrored value is written into the widget key first; a change is copied back."""
    st.session_state[key] = value(key)
    return {"key": key, "on_change": _on_widget, "args": (key,)}


def _on_tab() -> None:
    st.session_state[TAB_VIEW] = st.session_state.get(W_TAB)


def reps(name: str) -> int:
    return REPS[name] * (MORE_FACTOR if value(MORE) else 1)


def params() -> dict:
    """The page's simulation parameters from the mirrored widgets."""
    p, theta, k, spread = float(value(P)), float(value(THETA)), int(value(K)), float(value(SPREAD))
    return {
        "p": p,
        "theta": theta,
        "n": int(value(N)),
        "k": k,
        "spread": spread,
        "thetas": thetas_for(theta, k, spread),
        "missing": float(value(MISSING)),
        "seed": int(value(SEED)),
    }


# ============================================================================ the page
def risk_page() -> None:
    """Sliders, the verdict and the estimates on fresh data, then the open tab."""
    controls()
    q = params()
    fresh = fresh_estimates_cached(q["p"], q["thetas"], q["n"], q["missing"], q["seed"])
    verdict(fresh, q)
    estimates_table(fresh, q)
    st.session_state[W_TAB] = st.session_state.get(TAB_VIEW) if st.session_state.get(TAB_VIEW) in TABS else TABS[0]
    panels = (likelihood_tab, fisher_tab, error_vs_n_tab, misspecified_tab, two_population_tab)
    for tab, panel in zip(st.tabs(TABS, key=W_TAB, on_change=_on_tab), panels):
        if tab.open:
            with tab:
                panel(q)


def controls() -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.slider(
        "p(y = 1), known",
        0.05,
        0.95,
        step=0.01,
        help="The marginal the method assumes known. At 0.5 the symmetric model is not identifiable (Prop. 3).",
        **mirrored(P),
    )
    c2.slider("θ: accuracy of the classifiers", 0.0, 1.0, step=0.01, **mirrored(THETA))
    c3.slider("n: unlabelled examples", 50, 5000, step=50, **mirrored(N))
    c4.slider("k: classifiers", 1, 10, **mirrored(K))
    d1, d2, d3 = st.columns(3)  # the seed and the toggle share a column: "More repetitions" is whole at 1024 px
    d1.slider(
        "Spread of the accuracies",
        0.0,
        0.25,
        step=0.01,
        help="θⱼ evenly spaced over [θ − spread, θ + spread]; 0: every classifier has accuracy θ (the paper's runs).",
        **mirrored(SPREAD),
    )
    d2.slider(
        "Missing outputs",
        0.0,
        0.9,
        step=0.05,
        help="Each output is hidden with this probability (eq. 16 sums it out).",
        **mirrored(MISSING),
    )
    d3.number_input("Seed", min_value=0, step=1, **mirrored(SEED))
    d3.toggle(
        "More repetitions",
        help=f"×{MORE_FACTOR} repetitions in the tabs below: smoother curves, a few times slower (cached).",
        **mirrored(MORE),
    )


def verdict(fresh: dict, q: dict) -> None:
    """Eq. (9)'s verdict for classifier 1 (Corollary 4 / the range check) and Prop. 3's for the collaborative MLE."""
    c1, c2, c3 = st.columns([3, 3, 2])  # the metrics' labels whole at 1024 px
    with c1:
        st.markdown("**Identifiable? Classifier f1 alone, eq. (9)**")
        if not fresh["closed_form_identifiable"]:
            st.error(fresh["closed_form"], icon=":material/block:")
        elif fresh["closed_form_ok"]:
            st.success(fresh["closed_form"], icon=":material/check_circle:")
        else:
            st.warning(fresh["closed_form"], icon=":material/warning:")
    with c2:
        st.markdown(f"**All {q['k']} together: collaborative MLE, Prop. 3**")
        if fresh["collaborative_ok"]:
            st.success(fresh["collaborative"], icon=":material/check_circle:")
        else:
            st.warning(fresh["collaborative"], icon=":material/warning:")
    with c3:
        st.metric(
            "combined, eq. (4)",
            f"{fresh['acc_combined']:.3f}",
            help="Accuracy against the simulated truth of the unsupervised combination arg-max p(y) Π p_θ(fⱼ | y).",
        )
        st.metric("majority vote", f"{fresh['acc_majority']:.3f}", help="Accuracy of the plain majority vote.")


def estimates_table(fresh: dict, q: dict) -> None:
    table = fresh["table"]
    st.markdown(f"**Estimates on fresh data** (n = {q['n']:,}, p(y = 1) = {q['p']:.2f}, seed {q['seed']})")
    st.dataframe(text_table(table), hide_index=True, key="risk.estimates_table")
    notes = [
        "(9): each classifier alone, eq. (9); collab.: all together, the collaborative MLE (Prop. 3)",
        "Risk R(fⱼ) = 1 − θⱼ",
        "SE: 1/√(n J) from the Fisher information (corrected eq. 24; collaborative: the k × k information, enumerated)",
    ]
    if fresh["collaborative_iterations"] is not None:
        notes.append(f"EM took {fresh['collaborative_iterations']} iterations")
    st.caption("; ".join(notes) + ". The data are new for every change of a slider (cached on the sliders).")


# ---------------------------------------------------------------------------- tabs
def likelihood_tab(q: dict) -> None:
    study = loglik_study_cached(q["p"], q["thetas"], q["n"], q["missing"], q["seed"])
    left, right = st.columns(2)
    left.plotly_chart(
        figs.loglik_curves(study["grid"], study["curves"], theta_true=q["thetas"][0],
                           title="ℓ(θ) of classifier f1, each curve's maximum at 0"),
        key="risk.fig1_curves",
    )  # fmt: skip
    left.caption(
        "Nested samples: the first n/5, n/2 and n outputs of f1. As n grows the curve gets steeper and its "
        "maximiser settles near the true θ (Donmez et al. 2010, Fig. 1, left). With p(y = 1) = 0.5 every curve is flat."
    )
    c = study["contour"]
    if c is None:
        right.info("Set k ≥ 2 to see two classifiers' collaborative log-likelihood (Donmez et al., Fig. 1 right).")
        return
    mle = c["mle"]
    right.plotly_chart(
        figs.loglik_contour(c["t"], c["t"], c["Z"], truth=q["thetas"][:2], mle=mle,
                            flipped=(1.0 - mle[0], 1.0 - mle[1])),
        key="risk.fig1_contour",
    )  # fmt: skip
    right.caption(
        "Eq. (12) for f1 and f2 over (θ₁, θ₂). The mirror point (1 − θ̂₁, 1 − θ̂₂) fits as well only when p(y) "
        "is uniform; otherwise the maximum is unique (Prop. 3)."
    )


def fisher_tab(q: dict) -> None:
    n, missing, seed = q["n"], q["missing"], q["seed"]
    r = reps("fig3")
    rows = with_progress(
        f"Monte Carlo over {len(GRID_P)} × {len(GRID_THETA)} (θ, p) points, {r} repetitions each",
        [lambda p=p: fig3_row_cached(p, n, missing, r, seed) for p in GRID_P],
    )
    err = np.vstack(rows)
    th_c, p_c = np.asarray(GRID_THETA), np.asarray(GRID_P)
    n_eff = n * (1.0 - missing)
    with np.errstate(divide="ignore"):
        predicted = np.sqrt(2.0 / (np.pi * n_eff * fisher.fisher_symmetric(th_c[None, :], p_c[:, None])))
    printed = st.toggle(
        "Show eq. (24) as printed in the paper (not the Fisher information)",
        help="The paper's eq. (24) weights the squared score by p(y) instead of p_θ(output).",
        **mirrored(PRINTED),
    )
    cur_p = max(q["p"], 1.0 - q["p"])
    current = (q["theta"], cur_p)
    left, right = st.columns(2)
    left.plotly_chart(
        figs.error_heatmap(GRID_THETA, GRID_P, err, current=current, predicted=predicted, x_range=FIG3_X,
                           y_range=FIG3_Y, title=f"Monte Carlo: mean |θ̂ − θ|, eq. (9), n = {n:,}"),
        key="risk.fig3_error",
    )  # fmt: skip
    th_f = np.linspace(0.5, 1.0, 101)
    p_f = np.linspace(0.51, 0.99, 97)
    fn = fisher.fisher_symmetric_printed if printed else fisher.fisher_symmetric
    J = fn(th_f[None, :], p_f[:, None])
    right.plotly_chart(
        figs.fisher_contour(th_f, p_f, J, current=current, x_range=FIG3_X, y_range=FIG3_Y,
                            title="Eq. (24) as printed (not E[score²])" if printed
                            else "Fisher information J(θ) (corrected eq. 24)"),
        key="risk.fig3_fisher",
    )  # fmt: skip
    st.caption(
        f"Donmez et al. Fig. 3: where J is large the error is small. Left: {r} simulated data sets per cell, estimates "
        "clipped to [0, 1] (colours fixed to [0, 0.3]; the hover also shows the Fisher prediction √(2/(π n J))). "
        "p(y) and 1 − p(y) give the same pictures; your (θ, p) is the cross."
    )
    if printed:
        st.warning(
            "Eq. (24) as printed, α(2α−1)²/P₁² + (1−α)(2α−1)²/P₂², weights the squared score by p(y) where the "
            "Fisher information weights it by p_θ(output): J = (2α−1)²/(P₁P₂), with P₁ = p(output = 1). They agree "
            "only at θ = 1/2 and θ = 1 (e.g. θ = 0.7, α = 0.8: printed 1.248, J = 1.528). The table below checks "
            "both against the Monte-Carlo variance of θ̂.",
            icon=":material/error:",
        )
    else:
        st.caption(
            "The contours are the corrected eq. (24); the paper's printed formula is not the Fisher information "
            "(toggle above to compare)."
        )
    if abs(q["p"] - 0.5) < 1e-9:
        st.info("p(y = 1) = 0.5: J = 0 everywhere (not identifiable), so there is no variance to check.")
        return
    v = variance_check_cached(q["theta"], q["p"], n, reps("var"), seed)
    table = pd.DataFrame(
        {
            f"at θ = {q['theta']:.2f}, p(y = 1) = {q['p']:.2f}, n = {n:,} (no missing outputs)": [
                f"Var θ̂ by Monte Carlo ({reps('var'):,} data sets, eq. 9 unclipped)",
                "1 / (n J), J corrected",
                "1 / (n J), J as printed in eq. (24)",
            ],
            "variance": [f"{v['mc']:.3e}", f"{v['corrected']:.3e}", f"{v['printed']:.3e}"],
        }
    )
    st.dataframe(table, hide_index=True, key="risk.fig3_variance", width=640)


def error_vs_n_tab(q: dict) -> None:
    p, theta, spread, missing, seed = q["p"], q["theta"], q["spread"], q["missing"], q["seed"]
    r = reps("fig46")
    chunks = with_progress(
        f"Monte Carlo: k = 1, 3, 5, 10 at {len(NS_LIST)} sample sizes, {r} repetitions each (EM for every one)",
        [lambda n=n: fig46_chunk_cached(p, theta, spread, n, missing, r, seed) for n in NS_LIST],
    )
    coll = {k: np.array([c["collaborative"][k] for c in chunks]) for k in K_LIST}
    single = {k: np.array([c["single"][k] for c in chunks]) for k in K_LIST}
    per = np.vstack([c["per_classifier"] for c in chunks])  # (len(NS_LIST), 10)
    top = max(float(np.nanmax(per)), max(float(np.nanmax(v)) for v in single.values())) * 1.05
    left, right = st.columns(2)
    series = {
        ("k = 1 (eq. 9)" if k == 1 else f"k = {k}, collaborative"): {"y": coll[k], "meta": f"collaborative:{k}"}
        for k in K_LIST
    }
    left.plotly_chart(
        figs.error_vs_n(NS_LIST, series, y_max=top, title="Fig. 4: collaborative estimation, k = 1, 3, 5, 10"),
        key="risk.fig4",
    )
    kmax = max(K_LIST)
    ths = thetas_for(theta, kmax, spread)
    series6 = {
        (f"f1 … f{kmax} each alone (eq. 9)" if j == 0 else f"f{j + 1} alone (θ = {ths[j]:.2f})"): {
            "y": per[:, j],
            "meta": f"single:{j + 1}",
            "width": 1.5,
            "dash": "dot",
            "markers": False,
            "showlegend": j == 0,
        }
        for j in range(kmax)
    }
    series6[f"all {kmax} collaboratively"] = {"y": coll[kmax], "meta": "collaborative", "color": "#111111", "width": 4}
    right.plotly_chart(
        figs.error_vs_n(NS_LIST, series6, y_max=top, title=f"Fig. 6: k = {kmax}, each alone vs collaborative"),
        key="risk.fig6",
    )
    st.caption(
        f"Mean |θ̂ⱼ − θⱼ| over the classifiers and {r} simulated data sets per point, p(y = 1) = {p:.2f}, "
        f"θ = {theta:.2f}" + (f" ± {spread:.2f}" if spread else "") + ". Collaborative: the MLE of eq. (12) by EM "
        "with p(y) fixed (for k = 1 it is eq. (9), the same maximiser). Right: eq. (9) on each classifier's own "
        "outputs (dotted), which cannot improve with k, against all ten estimated together. The k slider above "
        "does not change these curves (they use k = 1, 3, 5, 10)."
    )


def misspecified_tab(q: dict) -> None:
    p, theta, missing, seed = q["p"], q["thetas"][0], q["missing"], q["seed"]
    if abs(p - 0.5) < 0.01:
        st.info("Move p(y = 1) away from 0.5: near it eq. (9) is not identifiable whatever p(y) is assumed.")
        return
    assumed = assumed_marginals(p)
    r = reps("fig8")
    rows = with_progress(
        f"Monte Carlo: {len(assumed)} assumed marginals at {len(NS_LIST)} sample sizes, {r} repetitions each",
        [lambda a=a: fig8_row_cached(p, theta, a, missing, r, seed) for a in assumed],
    )
    series = {}
    for a, row in zip(assumed, rows):
        label = f"assumed {a:.2f}" + (" (the truth)" if abs(a - p) < 1e-9 else "")
        series[label] = {"y": row, "meta": f"assumed:{a:g}", "width": 4 if abs(a - p) < 1e-9 else 2}
    left, right = st.columns(2)
    left.plotly_chart(
        figs.error_vs_n(NS_LIST, series, title=f"Fig. 8: eq. (9) with p(y = 1) assumed; truth {p:.2f}"),
        key="risk.fig8",
    )
    grid = np.linspace(0.01, 0.99, 197)
    lim = theta_limit(p, theta, grid)
    marks = {f"assumed {a:.2f}": (a, float(theta_limit(p, theta, np.array([a]))[0])) for a in assumed}
    right.plotly_chart(
        figs.misspecification_limit(grid, lim, theta_true=theta, p_true=p, marked=marks), key="risk.fig8_limit"
    )
    st.caption(
        f"Classifier f1 (θ = {theta:.2f}) alone. A wrong p(y) makes eq. (9) consistent for the wrong value: the "
        "error stops falling with n and levels off at the gap on the right. Assuming p(y) further from 1/2 than it "
        "is (over-specifying) hurts less than assuming it closer to 1/2 (Donmez et al. 2010, Fig. 8)."
    )


def two_population_tab(q: dict) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.slider("θ₁₁ = P(says 1 | y = 1)", 0.0, 1.0, step=0.01, **mirrored(T11))
    c2.slider("θ₂₂ = P(says 2 | y = 2)", 0.0, 1.0, step=0.01, **mirrored(T22))
    c3.slider("population A: p(y = 1)", 0.01, 0.99, step=0.01, **mirrored(PA))
    c4.slider("population B: p(y = 1)", 0.01, 0.99, step=0.01, **mirrored(PB))
    t11, t22, pa, pb = (float(value(k)) for k in (T11, T22, PA, PB))
    n, seed = q["n"], q["seed"]
    s = two_population_cached(t11, t22, pa, pb, n, seed)
    est = s["estimate"]
    ra, rb = s["ridge_a"], s["ridge_b"]
    if est.identifiable:
        st.success(readable(est.verdict), icon=":material/check_circle:")
    else:
        st.error(readable(est.verdict), icon=":material/block:")
    left, right = st.columns([3, 2])
    left.plotly_chart(
        figs.two_population_figure(
            s["t"], s["t"], s["Z"], line_a=(ra.theta11, ra.theta22),
            line_b=None if abs(pa - pb) < 1e-9 else (rb.theta11, rb.theta22), truth=(t11, t22),
            estimate=None if est.theta11 is None else (est.theta11, est.theta22),
            se=None if est.se11 is None else (est.se11, est.se22),
        ),
        key="risk.two_contour",
    )  # fmt: skip
    right.plotly_chart(figs.flat_line_profile(ra.theta11, ra.loglik, ra.risk), key="risk.two_profile")
    true_risk = [1 - pa * t11 - (1 - pa) * t22, 1 - pb * t11 - (1 - pb) * t22]
    if est.theta11 is not None:
        rows = {
            "quantity": ["θ₁₁", "θ₂₂", "risk on A", "risk on B"],
            "truth": [t11, t22, *true_risk],
            "estimate": [est.theta11, est.theta22, est.risk_a, est.risk_b],
            "SE": [est.se11, est.se22, np.nan, np.nan],
        }
        st.dataframe(text_table(pd.DataFrame(rows)), hide_index=True, key="risk.two_table", width=640)
    st.caption(
        f"One classifier with the non-symmetric model (6), n = {n:,} outputs per population. One population "
        "identifies only p(y=1) θ₁₁ − p(y=2) θ₂₂: its whole ridge (white) fits equally well while the risk along "
        "it changes (right). A second population with another p(y) draws a second ridge (orange); they cross at "
        "the estimate (Prop. 7), with ±1.96 SE bars (delta method)."
    )
