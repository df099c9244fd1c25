""" "What just happened": the E-step and M-step formulas of each model, with the current numbers filled in.

Each function returns a list of LaTeX lines (for ``st.latex``): the general formula with the seed's symbols,
then the same formula evaluated for the item or worker the user picked. Only the first few factors of long
products are written out; the rest are summarised, and the printed result is the exact one.
"""

from __future__ import annotations

import numpy as np

from crowdlab import safe
from crowdlab.data import Annotations
from crowdlab.models.base import softmax_rows
from crowdlab.models.dawid_skene import class_log_joint
from crowdlab.models.params import ClassParams
from crowdlab.models.scores import ScoreParams

SHOW = 4  # factors written out before "... (n more)"


def _f(x: float) -> str:
    """3 significant digits; magnitudes below 1e-12 (the log floor of the models) print as 0."""
    return "0" if abs(x) < 1e-12 else f"{x:.3g}"


def _name(s: str) -> str:
    """A user-supplied name as literal text inside \\text{...}: shortened, then escaped (:func:`crowdlab.safe.tex`)."""
    return safe.tex(safe.shorten(s, 24))


def _product(factors: list[str]) -> str:
    if not factors:
        return "1"
    shown = " \\cdot ".join(factors[:SHOW])
    if len(factors) > SHOW:
        shown += f" \\cdots (\\text{{{len(factors) - SHOW} more}})"
    return shown


def e_step_classes(data: Annotations, params: ClassParams, item: int, model_key: str = "ds") -> list[str]:
    """E-step for item n (seed 003 eq. (9); seed 000's mu_i for two-coin): q_nk from pi and Gamma."""
    K = data.n_classes
    obs = np.flatnonzero(data.item == item)
    q = softmax_rows(class_log_joint(data, params.pi, params.gamma)[item : item + 1])[0]
    if model_key == "two_coin":
        lines = [
            r"\mu_i = \frac{a_i\,p}{a_i\,p + b_i\,(1-p)},\quad a_i = \prod_j \alpha_j^{y_{ij}}(1-\alpha_j)^{1-y_{ij}},"
            r"\quad b_i = \prod_j \beta_j^{1-y_{ij}}(1-\beta_j)^{y_{ij}}"
        ]
    else:
        lines = [
            r"q_{nk} = \frac{\pi_k \prod_{m} \Gamma_m(f_m(x_n), k)}"
            r"{\sum_{k'} \pi_{k'} \prod_{m} \Gamma_m(f_m(x_n), k')}"
        ]
    iname = _name(data.item_names[item])
    terms = []
    for k in range(K):
        factors = [_f(params.gamma[data.worker[j], data.label[j], k]) for j in obs]
        unnorm = params.pi[k] * np.prod(params.gamma[data.worker[obs], data.label[obs], k])
        terms.append(
            rf"\text{{class {_name(data.class_names[k])}}}:\ {_f(params.pi[k])} \cdot {_product(factors)}"
            rf" = {unnorm:.3e}"
        )
    lines.append(rf"\text{{item {iname}}}\ ({len(obs)}\ \text{{labels}}):")
    lines.extend(terms)
    lines.append(r"\Rightarrow\ q = (" + ",\\ ".join(_f(v) for v in q) + ")")
    return lines


def m_step_classes(data: Annotations, q: np.ndarray, worker: int, model_key: str = "ds") -> list[str]:
    """M-step for worker m (seed 003 eq. (11); one-coin theta; two-coin alpha/beta of seed 000)."""
    K = data.n_classes
    obs = np.flatnonzero(data.worker == worker)
    counts = np.zeros((K, K))
    np.add.at(counts, data.label[obs], q[data.item[obs]])  # counts[k', k] = sum_n q_nk I(f_m = k')
    wname = _name(data.worker_names[worker])
    col = counts.sum(axis=0)
    if model_key == "one_coin":
        correct, n = float(np.trace(counts)), float(counts.sum())
        return [
            r"\theta_m = \frac{\sum_n \sum_k q_{nk}\, I(f_m(x_n)=k)}{\#\text{labels of } m}",
            rf"\text{{worker {wname}}}:\ \theta = \frac{{{_f(correct)}}}{{{_f(n)}}} = {_f(correct / max(n, 1e-300))}",
        ]
    if model_key == "two_coin":
        a = counts[1, 1] / max(col[1], 1e-300)
        b = counts[0, 0] / max(col[0], 1e-300)
        return [
            r"\alpha_j = \frac{\sum_i \mu_i y_{ij}}{\sum_i \mu_i},\qquad"
            r" \beta_j = \frac{\sum_i (1-\mu_i)(1-y_{ij})}{\sum_i (1-\mu_i)}",
            rf"\text{{worker {wname}}}:\ \alpha = \frac{{{_f(counts[1, 1])}}}{{{_f(col[1])}}} = {_f(a)},\quad"
            rf" \beta = \frac{{{_f(counts[0, 0])}}}{{{_f(col[0])}}} = {_f(b)}",
        ]
    lines = [r"\Gamma_m(k', k) = \frac{\sum_n q_{nk}\, I(f_m(x_n) = k')}{\sum_{k''} \sum_n q_{nk}\, I(f_m(x_n) = k'')}"]
    lines.append(rf"\text{{worker {wname}}}\ ({len(obs)}\ \text{{labels}}),\ \text{{column = true class}}:")
    for k in range(min(K, 6)):
        entries = ",\\ ".join(rf"\frac{{{_f(counts[kp, k])}}}{{{_f(col[k])}}}" for kp in range(min(K, 6)))
        lines.append(rf"\Gamma(\cdot, \text{{{_name(data.class_names[k])}}}) = ({entries})")
    return lines


def e_step_scores(data: Annotations, p: ScoreParams, annotator: int) -> list[str]:
    """E-step for annotator a (seed 004): w_a = P(good | scores)."""
    obs = np.flatnonzero(data.worker == annotator)
    s, mu = data.value[obs], p.mu[data.item[obs]]
    log_good = float(np.sum(-0.5 * ((s - mu) / p.sigma) ** 2 - np.log(p.sigma) - 0.5 * np.log(2 * np.pi)))
    log_bad = -len(obs) * np.log(p.high - p.low)
    lg = np.log(max(p.pi_good, 1e-300)) + log_good
    lb = np.log(max(1 - p.pi_good, 1e-300)) + log_bad
    w = 1.0 / (1.0 + np.exp(np.clip(lb - lg, -700, 700)))
    factors = [rf"\mathcal{{N}}({_f(a)}; {_f(b)}, {_f(p.sigma)})" for a, b in zip(s, mu)]
    name = _name(data.worker_names[annotator])
    return [
        r"w_a = \frac{\pi_{good} \prod_i \mathcal{N}(s_{ia}; \mu_i, \sigma)}"
        r"{\pi_{good} \prod_i \mathcal{N}(s_{ia}; \mu_i, \sigma) + (1-\pi_{good}) \prod_i \frac{1}{high-low}}",
        rf"\text{{annotator {name}}}\ ({len(obs)}\ \text{{scores}}):\ \log[\pi_{{good}} {_product(factors)}]"
        rf" = {lg:.4g},\quad \log[(1-\pi_{{good}}) \cdot ({_f(1 / (p.high - p.low))})^{{{len(obs)}}}] = {lb:.4g}",
        rf"\Rightarrow\ w_a = {_f(w)}",
    ]


def m_step_scores(data: Annotations, q: np.ndarray, item: int) -> list[str]:
    """M-step for item i (seed 004): mu_i = sum_a w_a s_ia / sum_a w_a."""
    obs = np.flatnonzero(data.item == item)
    w, s = q[data.worker[obs], 1], data.value[obs]
    num, den = float((w * s).sum()), float(w.sum())
    mu = num / den if den > 0 else float(s.mean())
    terms = [rf"{_f(a)} \cdot {_f(b)}" for a, b in zip(w, s)]
    shown = " + ".join(terms[:SHOW]) + (rf" + \cdots (\text{{{len(terms) - SHOW} more}})" if len(terms) > SHOW else "")
    return [
        r"\mu_i = \frac{\sum_a w_a s_{ia}}{\sum_a w_a},\qquad \sigma^2 = \frac{\sum_{i,a} w_a (s_{ia}-\mu_i)^2}"
        r"{\sum_{i,a} w_a},\qquad \pi_{good} = \frac{1}{M}\sum_a w_a",
        rf"\text{{item {_name(data.item_names[item])}}}:\ \mu = \frac{{{shown}}}{{{_f(den)}}} = {_f(mu)}",
    ]


# ---------------------------------------------------------------------------- GLAD, MACE, IBCC (models/glad.py ...)
def _tex_name(s) -> str:
    from crowdlab import safe

    return safe.tex(safe.shorten(s, 24))


def _class_lines(data: Annotations, lj_row: np.ndarray, parts: list[list[str]], lead: list[str]) -> list[str]:
    """Per class: its factors and the log of the product, then the normalised posterior."""
    q = softmax_rows(lj_row[None, :])[0]
    out = []
    for k in range(min(data.n_classes, 6)):
        out.append(rf"\text{{class {_tex_name(data.class_names[k])}}}:\ {lead[k]} {_product(parts[k])}")
    if data.n_classes > 6:
        out.append(rf"\cdots\ (\text{{{data.n_classes - 6} more classes}})")
    out.append(r"\log(\text{unnormalised}) = (" + ",\\ ".join(f"{v:.4g}" for v in lj_row[:6]) + ")")
    out.append(r"\Rightarrow\ q = (" + ",\\ ".join(_f(v) for v in q) + ")")
    return out


def e_step_glad(data: Annotations, params, item: int) -> list[str]:
    """GLAD E-step for item i (Whitehill et al. 2009, Sec. 3): each label is right with sigma(alpha_j beta_i)."""
    from crowdlab.models.glad import GLAD, sigmoid

    K = data.n_classes
    obs = np.flatnonzero(data.item == item)
    beta = float(params.beta[item])
    acc = sigmoid(params.alpha[data.worker[obs]] * beta)
    lines = [
        r"q_{ik} \propto \pi_k \prod_j \sigma(\alpha_j\beta_i)^{I(L_{ij}=k)}"
        r"\Big(\frac{1-\sigma(\alpha_j\beta_i)}{K-1}\Big)^{I(L_{ij}\neq k)},\qquad \sigma(x)=\frac{1}{1+e^{-x}}",
        rf"\text{{item {_tex_name(data.item_names[item])}}}:\ \beta_i = {_f(beta)}\ "
        rf"(\text{{difficulty}}\ 1/\beta_i = {_f(1 / beta)}),\ {len(obs)}\ \text{{labels}}",
    ]
    shown = [
        rf"\text{{{_tex_name(data.worker_names[data.worker[o]])}}}:\ \sigma({_f(params.alpha[data.worker[o]])}"
        rf"\cdot {_f(beta)}) = {_f(a)}"
        for o, a in zip(obs[:SHOW], acc[:SHOW])
    ]
    if shown:
        lines.append(",\\ ".join(shown) + (r",\ \ldots" if len(obs) > SHOW else ""))
    parts = [[_f(a) if data.label[o] == k else _f((1 - a) / (K - 1)) for o, a in zip(obs, acc)] for k in range(K)]
    lead = [rf"{_f(params.pi[k])} \cdot" for k in range(K)]
    lj = GLAD(class_prior="estimate").log_joint(data, params)[item]
    return lines + _class_lines(data, lj, parts, lead)


def m_step_glad(data: Annotations, q: np.ndarray, params, worker: int) -> list[str]:
    """GLAD M-step for worker j: the gradient of Q in alpha_j (ascended, not solved: generalised EM)."""
    from crowdlab.models.glad import sigmoid

    obs = np.flatnonzero(data.worker == worker)
    a = float(params.alpha[worker])
    beta = params.beta[data.item[obs]]
    w = q[data.item[obs], data.label[obs]]
    s = sigmoid(a * beta)
    grad = float(((w - s) * beta).sum())
    med = float(np.median(params.beta))
    terms = [rf"({_f(wi)} - {_f(si)})\cdot {_f(bi)}" for wi, si, bi in zip(w, s, beta)]
    shown = " + ".join(terms[:SHOW]) + (rf" + \cdots (\text{{{len(terms) - SHOW} more}})" if len(terms) > SHOW else "")
    return [
        r"\frac{\partial Q}{\partial \alpha_j} = \sum_i \big(q_{i,L_{ij}} - \sigma(\alpha_j\beta_i)\big)\,\beta_i"
        r" - \frac{\alpha_j-\mu_\alpha}{\sigma^2_\alpha},\qquad "
        r"\frac{\partial Q}{\partial \log\beta_i} = \sum_j \big(q_{i,L_{ij}} - \sigma(\alpha_j\beta_i)\big)"
        r"\,\alpha_j\beta_i"
        r" - \frac{\log\beta_i-\mu_\beta}{\sigma^2_\beta}",
        r"\text{No closed form: the M-step climbs } Q \text{ (Newton steps, halved until } Q \text{ does not fall)}",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}\ ({len(obs)}\ \text{{labels}}):\ "
        rf"\alpha_j = {_f(a)},\quad \sum_i (q - \sigma)\beta_i = {shown} = {_f(grad)}",
        rf"\text{{P(right) on an item of median difficulty}} = \sigma({_f(a)} \cdot {_f(med)})"
        rf" = {_f(float(sigmoid(a * med)))}",
    ]


def e_step_mace(data: Annotations, params, item: int) -> list[str]:
    """MACE E-step for item i (Hovy et al. 2013): a label is the truth unless its worker is spamming."""
    from crowdlab.models.dawid_skene import class_log_joint

    K = data.n_classes
    obs = np.flatnonzero(data.item == item)
    th, xi = params.theta, params.xi
    lines = [
        r"q_{it} \propto \pi_t \prod_j \big(\theta_j\, I(A_{ij}=t) + (1-\theta_j)\,\xi_j(A_{ij})\big)",
        rf"\text{{item {_tex_name(data.item_names[item])}}}\ ({len(obs)}\ \text{{labels}}):",
    ]
    parts = []
    for k in range(K):
        parts.append(
            [
                rf"({_f(th[data.worker[o]]) + ' + ' if data.label[o] == k else ''}"
                rf"{_f(1 - th[data.worker[o]])}\cdot{_f(xi[data.worker[o], data.label[o]])})"
                for o in obs
            ]
        )
    lead = [rf"{_f(params.pi[k])} \cdot" for k in range(K)]
    lj = class_log_joint(data, params.pi, params.gamma)[item]
    return lines + _class_lines(data, lj, parts, lead)


def m_step_mace(data: Annotations, q: np.ndarray, params, worker: int) -> list[str]:
    """MACE M-step for worker j: expected honest labels and the spam strategy (Hovy et al. 2013, Sec. 2.1)."""
    from crowdlab.models.mace import spam_responsibility

    K = data.n_classes
    obs = np.flatnonzero(data.worker == worker)
    D = np.bincount(data.label[obs], weights=q[data.item[obs], data.label[obs]], minlength=K)
    n_lab = np.bincount(data.label[obs], minlength=K).astype(float)
    r = spam_responsibility(params.theta[worker : worker + 1], params.xi[worker : worker + 1])[0]
    honest = float((D * r).sum())
    spam = D * (1 - r) + (n_lab - D)
    top = np.argsort(-params.xi[worker])[:3]
    return [
        r"P(S_{ij}=0 \mid A_{ij}=a, T_i=a) = \frac{\theta_j}{\theta_j + (1-\theta_j)\xi_j(a)},\qquad "
        r"\theta_j = \frac{E[\#\text{honest labels}]}{\#\text{labels}},\qquad "
        r"\xi_j(a) = \frac{E[\#\text{spam labels } a]}{E[\#\text{spam labels}]}",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}:\ E[\#\text{{honest}}] = {_f(honest)}"
        rf"\ \text{{of}}\ {len(obs)}\ \Rightarrow\ \theta_j \approx {_f(honest / max(len(obs), 1))},\quad"
        rf"\text{{stored}}\ \theta_j = {_f(float(params.theta[worker]))}\ (\text{{P(spamming)}} = "
        rf"{_f(float(1 - params.theta[worker]))})",
        r"\text{spam strategy } \xi_j:\ "
        + ",\\ ".join(
            rf"\text{{{_tex_name(data.class_names[k])}}}\ {_f(float(params.xi[worker, k]))}"
            rf"\ (E[\#] = {_f(float(spam[k]))})"
            for k in top
        ),
        r"\text{(the stored values include the prior's pseudo-counts and the inner EM over } S"
        r"\text{, run from the previous } \theta, \xi)",
    ]


def e_step_ibcc(data: Annotations, params, item: int) -> list[str]:
    """IBCC's variational E-step for item n (Kim & Ghahramani 2012): expected logs under the Dirichlets."""
    from crowdlab.models.ibcc import IBCC, expected_log

    K = data.n_classes
    obs = np.flatnonzero(data.item == item)
    el = expected_log(params.A, axis=1)
    ek = expected_log(params.nu)
    lines = [
        r"q_{nk} \propto \exp\Big(E[\log\kappa_k] + \sum_m E[\log\Gamma_m(f_m(x_n), k)]\Big),\qquad "
        r"E[\log x_a] = \psi(a_a) - \psi\big(\textstyle\sum_b a_b\big)",
        rf"\text{{item {_tex_name(data.item_names[item])}}}\ ({len(obs)}\ \text{{labels}}),"
        r"\ \text{terms written as } e^{E\log}:",
    ]
    parts = [[_f(float(np.exp(el[data.worker[o], data.label[o], k]))) for o in obs] for k in range(K)]
    lead = [rf"e^{{E\log\kappa}} = {_f(float(np.exp(ek[k])))} \cdot" for k in range(K)]
    lj = IBCC().log_joint(data, params)[item]
    return lines + _class_lines(data, lj, parts, lead)


def m_step_ibcc(data: Annotations, q: np.ndarray, params, worker: int) -> list[str]:
    """IBCC's update of worker m's Dirichlet posteriors: prior plus expected counts (Kim & Ghahramani 2012)."""
    K = data.n_classes
    obs = np.flatnonzero(data.worker == worker)
    counts = np.zeros((K, K))
    np.add.at(counts, data.label[obs], q[data.item[obs]])
    A = params.A[worker]
    A0 = A - counts
    lines = [
        r"A_m(k', k) = A^0_m(k', k) + \sum_n q_{nk}\, I(f_m(x_n) = k'),\qquad "
        r"E[\Gamma_m(k', k)] = \frac{A_m(k', k)}{\sum_{k''} A_m(k'', k)},\qquad \nu_k = \nu^0_k + \sum_n q_{nk}",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}\ ({len(obs)}\ \text{{labels}}),\ "
        r"\text{column = true class, prior + counts = } A:",
    ]
    for k in range(min(K, 6)):
        cells = ",\\ ".join(rf"{_f(A0[kp, k])}+{_f(counts[kp, k])}" for kp in range(min(K, 6)))
        lines.append(
            rf"A(\cdot, \text{{{_tex_name(data.class_names[k])}}}) = ({cells}),\quad "
            rf"E[\Gamma(k,k)] = {_f(A[k, k] / A[:, k].sum())}"
        )
    return lines


NEW_MODEL_EXPLAINERS = {
    "glad": (e_step_glad, m_step_glad),
    "mace": (e_step_mace, m_step_mace),
    "ibcc": (e_step_ibcc, m_step_ibcc),
}
"""model key -> (e_lines(data, params, item), m_lines(data, q, params_after_the_M_step, worker))."""
