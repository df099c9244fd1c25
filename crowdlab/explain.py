""" "What just happened": the E-step and M-step formulas of each model, with the current numbers filled in.

Each function returns a list of LaTeX lines (for ``st.latex``): the general formula with the papers' symbols,
then the same formula evaluated for the item or worker the user picked. Only the first few factors of long
products are written out; the rest are summarised, and the printed result is the exact one.
"""

from __future__ import annotations

import numpy as np

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
    """A name safe inside \\text{...}."""
    for a, b in (("\\", "/"), ("{", "("), ("}", ")"), ("_", "\\_"), ("&", "\\&"), ("%", "\\%"), ("#", "\\#")):
        s = s.replace(a, b)
    s = s.replace("$", "\\$")
    return s[:24]


def _product(factors: list[str]) -> str:
    if not factors:
        return "1"
    shown = " \\cdot ".join(factors[:SHOW])
    if len(factors) > SHOW:
        shown += f" \\cdots (\\text{{{len(factors) - SHOW} more}})"
    return shown


def e_step_classes(data: Annotations, params: ClassParams, item: int, model_key: str = "ds") -> list[str]:
    """E-step for item n (Traganitis & Giannakis eq. (9); Raykar et al.'s mu_i for two-coin): q_nk from pi, Gamma."""
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
    """M-step for worker m (Traganitis & Giannakis eq. (11); one-coin theta; Raykar et al.'s alpha/beta)."""
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
    """E-step for annotator a (the EM lecture): w_a = P(good | scores)."""
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
    """M-step for item i (the EM lecture): mu_i = sum_a w_a s_ia / sum_a w_a."""
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
