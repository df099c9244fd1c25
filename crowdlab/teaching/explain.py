""" "What just happened": the E-step and M-step formulas of each model, with the current numbers filled in.

Each function returns a list of LaTeX lines (one ``st.latex`` each): the general formula with the papers' symbols,
then the same formula evaluated for the item or worker the user picked. KaTeX display math does not wrap, so every
line is kept narrow enough for a 1024 x 768 projector: at most :data:`MAX_WIDTH` characters as estimated by
:func:`visible_width` (about 500 px, the narrowest box the lines are shown in with the sidebar open), or
:data:`NARROW_WIDTH` inside :func:`narrow` (presenter mode, whose larger font and side-by-side layout leave the
formulas about 440 px). Long formulas are split over several lines, long sums and products are written out as
far as they fit with the rest counted ("(35 more)"), and the printed result is always the exact one. Small and large
numbers are written as ``2.91 \\times 10^{-15}``, never ``2.91e-15``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import re

import numpy as np

from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import safe_log, softmax_rows
from crowdlab.models.dawid_skene import class_log_joint
from crowdlab.models.params import ClassParams
from crowdlab.models.scores import ScoreParams, range_note

SHOW = 4  # at most this many factors of a long product are written out before "(n more)"
ALL_TERMS = 8  # a sum with at most this many terms (a weighted mean over few scorers) is written out in full
MAX_WIDTH = 56  # estimated characters per line: about 500 px of KaTeX at Streamlit's size (8.6-9 px each), so a
# line fits the narrowest place it is shown at 1024 x 768 (the next half-step's expander beside the sidebar)
NARROW_WIDTH = 40  # presenter mode: the Step page's formulas tab is 446 px wide with the sidebar open, where KaTeX
# draws a digit 10.3 px wide and a sum or a fraction wider than estimated
_WIDTH = contextvars.ContextVar("explain_width", default=MAX_WIDTH)  # per thread: each Streamlit session its own


def line_width() -> float:
    """The width every line is kept to now: :data:`MAX_WIDTH`, or :data:`NARROW_WIDTH` inside :func:`narrow`."""
    return _WIDTH.get()


@contextlib.contextmanager
def narrow(width: float = NARROW_WIDTH):
    """Within the block every explainer keeps its lines to ``width`` (presenter mode's narrower formulas)."""
    token = _WIDTH.set(width)
    try:
        yield
    finally:
        _WIDTH.reset(token)


# ---------------------------------------------------------------------------- numbers and names
def num(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits as LaTeX; exponents as ``m \\times 10^{e}`` (never ``e-15``).

    Magnitudes below 1e-300 (the log floor of the models) print as 0.
    """
    x = float(x)
    if not math.isfinite(x):
        return r"\infty" if x > 0 else (r"-\infty" if x < 0 else r"\text{NaN}")
    if abs(x) < 1e-300:
        return "0"
    s = f"{x:.{digits}g}"
    if "e" not in s:
        return s
    mant, exp = s.split("e")
    return rf"{mant} \times 10^{{{int(exp)}}}"


def _f(x: float) -> str:
    """3 significant digits (see :func:`num`)."""
    return num(x, 3)


def _name(s: str) -> str:
    """A user-supplied name as literal text inside \\text{...}: shortened, then escaped
    (:func:`crowdlab.io.safe.tex`)."""
    return safe.tex(safe.shorten(s, 24))


# ---------------------------------------------------------------------------- line width
_SYMBOL_WIDTH = {
    "quad": 2.0,
    "qquad": 4.0,
    ",": 0.3,
    ";": 0.5,
    ":": 0.4,
    " ": 0.5,
    "!": -0.3,
    "cdots": 3.0,
    "ldots": 3.0,
    "Rightarrow": 2.5,
    "prod": 2.0,
    "sum": 2.0,
    "times": 2.4,
    "cdot": 1.5,
    "approx": 2.0,
    "le": 2.0,
    "ge": 2.0,
    "in": 2.0,
    "mapsto": 2.5,
    "to": 2.5,
    "left": 0.0,
    "right": 0.0,
    "big": 0.0,
    "Big": 0.0,
    "mathcal": 0.0,
    "mathrm": 0.0,
    "boldsymbol": 0.0,
}
_SPACED = {"=": 2.0, "+": 2.0, "-": 1.6, "<": 2.0, ">": 2.0, ",": 1.3}


def _group(s: str, i: int) -> tuple[str, int]:
    """The brace group starting at s[i] == '{' (its content) and the index after it; a single token otherwise."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] != "{":
        if s[i] == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", s[i:])
            return m.group(0), i + len(m.group(0))
        return s[i], i + 1
    depth, j = 0, i
    while j < len(s):
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return s[i + 1 : j], j + 1
        j += 1
    return s[i + 1 :], len(s)


def visible_width(latex: str) -> float:
    """An estimate of the rendered width of a KaTeX line in characters of the main font (measured in Chromium:
    about 8.6 px each at Streamlit's ``st.latex`` size): text and digits count one each, fractions their wider
    part, sub- and superscripts 0.7, binary operators and relations their spacing, layout commands nothing."""
    width, i, s = 0.0, 0, latex
    while i < len(s):
        c = s[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", s[i:])
            cmd = m.group(1)
            i += len(m.group(0))
            if cmd == "frac":
                a, i = _group(s, i)
                b, i = _group(s, i)
                width += max(visible_width(a), visible_width(b)) + 0.5
            elif cmd in ("text", "textbf", "textit", "operatorname"):
                a, i = _group(s, i)
                width += len(re.sub(r"\\textbackslash\{\}|\\textasciicircum\{\}|\\textasciitilde\{\}", "x", a)) - (
                    a.count("\\") - len(re.findall(r"\\text[a-z]+\{\}", a))
                )
            elif cmd in ("mathcal", "mathrm", "boldsymbol", "sqrt"):
                a, i = _group(s, i)
                width += visible_width(a) + (1.0 if cmd == "sqrt" else 0.0)
            elif cmd in ("begin", "end"):
                _, i = _group(s, i)
            else:
                width += _SYMBOL_WIDTH.get(cmd, 1.0)
        elif c in "^_":
            a, i = _group(s, i + 1)
            width += 0.75 * visible_width(a)
        elif c == "{" or c == "}":
            i += 1
        elif c == " " or c == "&":
            i += 1
        else:
            width += _SPACED.get(c, 1.0)
            i += 1
    return width


def _fits(line: str, width: float | None = None) -> bool:
    return visible_width(line) <= (line_width() if width is None else width)


def _pack(
    first: str, terms: list[str], joiner: str, end: str = "", cont: str = r"\quad", width: float | None = None
) -> list[str]:
    """``first`` then every term joined with ``joiner``, as many per line as fit, then ``end``; a continuation
    line starts with ``cont`` and the joiner. ``end`` (e.g. ``" = 0.42"``) goes on a line of its own when it
    does not fit on the last one."""
    lines, cur = [], first
    tail = joiner.rstrip().removesuffix("\\")  # what a cut line ends with: "," for ",\ ", "\cdot" for "\cdot"
    for j, t in enumerate(terms):
        glue = ("" if first.endswith("(") else " ") if j == 0 else joiner
        cand = cur + glue + t
        if j > 0 and not _fits(cand + (tail if j < len(terms) - 1 else ""), width):
            lines.append(cur + tail)
            cur = f"{cont} {t}"
        else:
            cur = cand
    if end:
        if _fits(cur + end, width):
            cur += end
        else:
            lines.append(cur)
            cur = r"\qquad" + end
    lines.append(cur)
    return lines


_BREAKS = (r",\qquad ", r",\qquad", r"\qquad ", r"\qquad", r",\quad ", r",\quad", r"\quad ", r",\ ")


def wrap(line: str, cont: str = r"\quad", width: float | None = None) -> list[str]:
    r"""``line`` cut into lines that fit (``width``, else :func:`line_width`) at its top-level breaks (``\qquad``,
    ``\quad`` and ``,\ `` outside braces), each break kept at the end of the piece before it; a continuation line
    starts with ``cont``. A piece with no break in it that does not fit is left whole (the explainers keep those
    short)."""
    if _fits(line, width):
        return [line]
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(line):
        c = line[i]
        if c == "\\" and line[i + 1 : i + 2] in ("{", "}"):
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0:
            brk = next((b for b in _BREAKS if line.startswith(b, i)), None)
            if brk is not None and i > start:
                pieces.append(line[start : i + len(brk)])
                start = i = i + len(brk)
                continue
        i += 1
    pieces.append(line[start:])
    out = _pack("", pieces, "", cont=cont, width=width)  # as many pieces per line as fit
    out[0] = out[0].lstrip()
    return [_trim_end(x) for x in out[:-1]] + out[-1:]


def _trim_end(line: str) -> str:
    r"""A cut line without the spacing it ended with (``\quad``, ``\qquad``, an escaped space)."""
    line = line.rstrip()
    for cmd in (r"\qquad", r"\quad"):
        line = line.removesuffix(cmd).rstrip()
    return line[:-1] if line.endswith("\\") and not line.endswith("\\\\") else line


def _fitted(explainer):
    """``explainer`` with every line it returns passed through :func:`wrap` (at most :func:`line_width`)."""

    @functools.wraps(explainer)
    def run(*args, **kwargs) -> list[str]:
        return [w for line in explainer(*args, **kwargs) for w in wrap(line)]

    return run


def _pow(factor: str, v: float) -> str:
    """A factor raised to its observation's weight (soft votes); unchanged for a whole label."""
    return factor if v == 1.0 else rf"{factor}^{{{_f(v)}}}"


SOFT_NOTE = (
    "Soft votes: each label counts with its weight v (its probability), so a factor P(label | class) enters the "
    "E-step as P^v and a label adds q·v to the M-step's counts. EM climbs log p_v(x | θ) = Σᵢ log Σₖ πₖ "
    "Πⱼ P(Lᵢⱼ | k, j)^vᵢⱼ (+ log prior), the likelihood of the labels with fractional counts, and never lowers it."
)


def _product_line(head: str, factors: list[str], result: str) -> list[str]:
    """``head`` times the first factors (at most :data:`SHOW`, as many as fit) with "(n more)", then
    ``= result``, on one line when it fits, else the result on the next."""
    more = lambda n: rf" \cdots (\text{{{n} more}})" if n else ""  # noqa: E731
    shown = 1 if factors else 0
    while shown < min(len(factors), SHOW):
        cand = head + r" \cdot ".join(factors[: shown + 1]) + more(len(factors) - shown - 1)
        if not _fits(cand):
            break
        shown += 1
    line = head + (r" \cdot ".join(factors[:shown]) if factors else "1") + more(len(factors) - shown)
    end = f" = {result}"
    return [line + end] if _fits(line + end) else [line, r"\qquad" + end]


# ---------------------------------------------------------------------------- class models
@_fitted
def _abstention_line(data: Annotations, worker: int) -> list[str]:
    """One-coin and two-coin: the worker's share of "can't tell" answers, a rate that does not depend on the class
    (so it leaves the posterior as it is); [] without such responses."""
    if not data.response_names:
        return []
    mine = data.label[data.worker == worker]
    rate = float((mine >= data.n_classes).mean()) if mine.size else 0.0
    return [
        rf"\rho_m(\text{{can't tell}}) = \frac{{{int((mine >= data.n_classes).sum())}}}{{{mine.size}}} = {_f(rate)}"
        r"\ \text{(the same for every class: no effect on q)}"
    ]


def e_step_classes(data: Annotations, params: ClassParams, item: int, model_key: str = "ds") -> list[str]:
    """E-step for item n (Traganitis & Giannakis eq. (9); Raykar et al. 2010's mu_i for two-coin): q_nk from pi
    and Gamma. Per class: the prior, the first few factors Gamma_m(f_m(x_n), k), the product."""
    K = data.n_classes
    obs = np.flatnonzero(data.item == item)
    q = softmax_rows(class_log_joint(data, params.pi, params.gamma)[item : item + 1])[0]
    if model_key == "two_coin":
        lines = [
            r"\mu_i = \frac{a_i\,p}{a_i\,p + b_i\,(1-p)}",
            r"a_i = \prod_j \alpha_j^{y_{ij}}(1-\alpha_j)^{1-y_{ij}}",
            r"b_i = \prod_j \beta_j^{1-y_{ij}}(1-\beta_j)^{y_{ij}}",
        ]
    else:
        lines = [
            r"q_{nk} = \frac{\pi_k \prod_{m} \Gamma_m(f_m(x_n), k)}"
            r"{\sum_{k'} \pi_{k'} \prod_{m} \Gamma_m(f_m(x_n), k')}"
        ]
    lines.append(rf"\text{{item {_name(data.item_names[item])}}}\ ({len(obs)}\ \text{{labels}}):")
    v = data.obs_weight[obs]
    for k in range(K):
        g = params.gamma[data.worker[obs], data.label[obs], k]
        log_un = float(np.log(max(params.pi[k], 1e-300)) + np.sum(v * np.log(np.maximum(g, 1e-300))))
        head = rf"\text{{class {_name(data.class_names[k])}}}:\ {_f(params.pi[k])} \cdot "
        factors = [_pow(_f(x), w) for x, w in zip(g, v)]
        lines += _product_line(head, factors, num(math.exp(log_un) if log_un > -700 else 0.0, 4))
    lines += _pack(r"\Rightarrow\ q = (", [_f(v) for v in q], r",\ ", end=")")
    return lines


@_fitted
def m_step_classes(data: Annotations, q: np.ndarray, worker: int, model_key: str = "ds") -> list[str]:
    """M-step for worker m (Traganitis & Giannakis eq. (11); one-coin theta; Raykar et al. 2010's alpha and
    beta for two-coin), the expected counts written out as fractions."""
    K = data.n_classes
    obs = np.flatnonzero(data.worker == worker)
    counts = np.zeros((data.n_responses, K))  # K rows, or K + the "can't tell" responses
    # counts[k', k] = sum_n q_nk I(f_m = k') (each label times its weight for soft votes)
    np.add.at(counts, data.label[obs], q[data.item[obs]] * data.obs_weight[obs][:, None])
    wname = _name(data.worker_names[worker])
    col = counts.sum(axis=0)
    abstained = _abstention_line(data, worker) if model_key in ("one_coin", "two_coin") else []
    if model_key == "one_coin":
        cls = counts[:K]
        correct, n = float(np.trace(cls)), float(cls.sum())
        return [
            r"\theta_m = \frac{\sum_n \sum_k q_{nk}\, I(f_m(x_n)=k)}{\#\text{labels of } m}",
            rf"\text{{worker {wname}}}:\ \theta = \frac{{{_f(correct)}}}{{{_f(n)}}} = {_f(correct / max(n, 1e-300))}",
            *abstained,
        ]
    if model_key == "two_coin":
        col = counts[:K].sum(axis=0)
        a = counts[1, 1] / max(col[1], 1e-300)
        b = counts[0, 0] / max(col[0], 1e-300)
        return [
            r"\alpha_j = \frac{\sum_i \mu_i y_{ij}}{\sum_i \mu_i},\qquad"
            r" \beta_j = \frac{\sum_i (1-\mu_i)(1-y_{ij})}{\sum_i (1-\mu_i)}",
            rf"\text{{worker {wname}}}:",
            rf"\alpha = \frac{{{_f(counts[1, 1])}}}{{{_f(col[1])}}} = {_f(a)},\qquad"
            rf" \beta = \frac{{{_f(counts[0, 0])}}}{{{_f(col[0])}}} = {_f(b)}",
            *abstained,
        ]
    lines = [r"\Gamma_m(k', k) = \frac{\sum_n q_{nk}\, I(f_m(x_n) = k')}{\sum_{k''} \sum_n q_{nk}\, I(f_m(x_n) = k'')}"]
    lines.append(rf"\text{{worker {wname}}}\ ({len(obs)}\ \text{{labels}}),\ \text{{column = true class}}:")
    shown = min(K, 6)
    rows = [*range(shown), *range(K, data.n_responses)]  # the "can't tell" rows after the classes
    if data.response_names:
        said = ", ".join(_name(r) for r in data.response_names)
        lines.append(rf"\text{{(the last {len(data.response_names)} of each column: {said})}}")
    for k in range(shown):
        entries = [rf"\frac{{{_f(counts[kp, k])}}}{{{_f(col[k])}}}" for kp in rows]
        head = rf"\Gamma(\cdot, \text{{{_name(data.class_names[k])}}}) = ("
        lines += _pack(head, entries, r",\ ", end=r",\ \ldots)" if K > shown else ")")
    if K > shown:
        lines.append(rf"\text{{(the first {shown} of {K} classes)}}")
    return lines


# ---------------------------------------------------------------------------- the lecture's scores model
def _bad_density(p: ScoreParams) -> str:
    return num(1.0 / (p.high - p.low), 3)


@_fitted
def e_step_scores(data: Annotations, p: ScoreParams, annotator: int) -> list[str]:
    """E-step for annotator a (the EM lecture on bad annotators): w_a = P(good | their scores), with pi_good,
    sigma and the bad-annotator density as numbers, and the two log-terms that are compared."""
    obs = np.flatnonzero(data.worker == annotator)
    s, mu = data.value[obs], p.mu[data.item[obs]]
    logn = -0.5 * ((s - mu) / p.sigma) ** 2 - np.log(p.sigma) - 0.5 * np.log(2 * np.pi)
    log_good = float(np.sum(logn))
    log_bad = -len(obs) * float(np.log(p.high - p.low))
    lg = float(np.log(max(p.pi_good, 1e-300))) + log_good
    lb = float(np.log(max(1 - p.pi_good, 1e-300))) + log_bad
    w = 1.0 / (1.0 + np.exp(np.clip(lb - lg, -700, 700)))
    name = _name(data.worker_names[annotator])
    dens = _bad_density(p)
    terms = [rf"\log \mathcal{{N}}({_f(a)}; {_f(b)}, {_f(p.sigma)})" for a, b in zip(s, mu)]
    shown = 1
    head = rf"\log G_a = \log {_f(p.pi_good)} + "
    while shown < min(len(terms), SHOW) and _fits(
        head + " + ".join(terms[: shown + 1]) + rf" + \cdots (\text{{{len(terms) - shown - 1} more}})"
    ):
        shown += 1
    sum_lines = [head + " + ".join(terms[:shown])]
    more = rf" + \cdots (\text{{{len(terms) - shown} more}})" if len(terms) > shown else ""
    if more and _fits(sum_lines[0] + more):
        sum_lines[0] += more
    elif more:  # not even one term and the count fit beside the head: the count on a line of its own
        sum_lines.append(r"\qquad" + more)
    return [
        r"w_a = \frac{G_a}{G_a + B_a}",
        r"G_a = \pi_{good} \prod_i \mathcal{N}(s_{ia}; \mu_i, \sigma)",
        r"B_a = (1-\pi_{good}) \prod_i b",
        rf"b = {dens}\ \text{{on}}\ [{_f(p.low)}, {_f(p.high)}]\quad \text{{({range_note(p)})}}",
        rf"\text{{annotator {name}}}\ ({len(obs)}\ \text{{scores}}):",
        rf"\pi_{{good}} = {_f(p.pi_good)},\qquad \sigma = {num(p.sigma, 4)}",
        *sum_lines,
        rf"\qquad = {num(lg, 4)}",
        rf"\log B_a = \log {_f(1 - p.pi_good)} + {len(obs)} \cdot \log {dens} = {num(lb, 4)}",
        rf"\Rightarrow\ w_a = \frac{{1}}{{1 + e^{{\log B_a - \log G_a}}}} = {_f(w)}",
    ]


@_fitted
def m_step_scores(
    data: Annotations, q: np.ndarray, item: int, prior: float = 0.0, sigma_floor: float = 0.0
) -> list[str]:
    """M-step (the EM lecture on bad annotators): mu_i for item i with every term when there are few scorers,
    then sigma^2 and pi_good from all scores, each with its numbers (``prior``: the Beta prior's strength s;
    ``sigma_floor``: the model's lower guard on sigma, shown when it applies)."""
    obs = np.flatnonzero(data.item == item)
    w, s = q[data.worker[obs], 1], data.value[obs]
    num_i, den_i = float((w * s).sum()), float(w.sum())
    mu_i = num_i / den_i if den_i > 0 else float(s.mean())
    iname = _name(data.item_names[item])
    lines = [
        r"\mu_i = \frac{\sum_a w_a s_{ia}}{\sum_a w_a},\qquad"
        r" \sigma^2 = \frac{\sum_{i,a} w_a (s_{ia}-\mu_i)^2}{\sum_{i,a} w_a}",
        r"\pi_{good} = \frac{1}{M}\sum_a w_a"
        if prior <= 0
        else rf"\pi_{{good}} = \frac{{s + \sum_a w_a}}{{2s + M}}\quad (\text{{prior}}\ s = {prior:g})",
        rf"\text{{item {iname}}}\ ({len(obs)}\ \text{{scores}}),\ w_a \cdot s_{{ia}}:",
    ]
    few = len(obs) <= ALL_TERMS
    k = len(obs) if few else 2
    top = [rf"{_f(a)} \cdot {_f(b)}" for a, b in zip(w[:k], s[:k])]
    if not few:
        top.append(rf"\cdots (\text{{{len(obs) - k} more}})")
    lines += _pack(r"\textstyle\sum_a w_a s_{ia} =", top, " + ", end=f" = {num(num_i, 4)}")
    bottom = [_f(a) for a in w[:k]] + ([] if few else [rf"\cdots (\text{{{len(obs) - k} more}})"])
    lines += _pack(r"\textstyle\sum_a w_a =", bottom, " + ", end=f" = {num(den_i, 4)}")
    lines.append(rf"\Rightarrow\ \mu_i = \frac{{{num(num_i, 4)}}}{{{num(den_i, 4)}}} = {num(mu_i, 4)}")
    # sigma^2 and pi_good from every score, with the new means
    wa = q[:, 1]
    w_obs = wa[data.worker]
    N = data.n_items
    den = np.bincount(data.item, weights=w_obs, minlength=N)
    nm = np.bincount(data.item, weights=w_obs * data.value, minlength=N)
    plain = np.bincount(data.item, weights=data.value, minlength=N) / np.maximum(data.labels_per_item, 1)
    mu = np.where(den > 0, nm / np.where(den > 0, den, 1.0), plain)
    ss = float((w_obs * (data.value - mu[data.item]) ** 2).sum())
    tot = float(w_obs.sum())
    if tot > 0:
        var = ss / tot
        lines.append(rf"\sigma^2 = \frac{{{num(ss, 4)}}}{{{num(tot, 4)}}} = {num(var, 4)}")
        sd = math.sqrt(var)
        if sd < sigma_floor:
            lines.append(
                rf"\sigma = \max({num(sd, 4)},\ {num(sigma_floor, 4)}) = {num(sigma_floor, 4)}\ \text{{(the floor)}}"
            )
        else:
            lines.append(rf"\sigma = {num(sd, 4)}")
    else:
        lines.append(r"\sigma:\ \text{every } w_a = 0\text{; the spread of all scores is kept}")
    M = wa.shape[0]
    pi_new = num((wa.sum() + prior) / (M + 2 * prior), 4)
    if M <= ALL_TERMS:
        terms = [_f(v) for v in wa]
        lines += _pack(r"\textstyle\sum_{a=1}^{M} w_a =", terms, " + ", end=f" = {num(wa.sum(), 4)}")
    bottom = str(M) if prior <= 0 else f"{M} + {2 * prior:g}"
    top = num(wa.sum(), 4) if prior <= 0 else f"{prior:g} + {num(wa.sum(), 4)}"
    lines.append(rf"\pi_{{good}} = \frac{{{top}}}{{{bottom}}} = {pi_new}")
    return lines


# ---------------------------------------------------------------------------- GLAD, MACE, IBCC (models/glad.py ...)
def _tex_name(s) -> str:
    from crowdlab.io import safe

    return safe.tex(safe.shorten(s, 24))


def _class_lines(data: Annotations, lj_row: np.ndarray, parts: list[list[str]], lead: list[str]) -> list[str]:
    """Per class: its factors and the log of the product, then the normalised posterior."""
    q = softmax_rows(lj_row[None, :])[0]
    out = []
    for k in range(min(data.n_classes, 6)):
        extra = len(parts[k]) - SHOW
        factors = parts[k][:SHOW] + ([rf"\cdots (\text{{{extra} more}})"] if extra > 0 else [])
        out += _pack(rf"\text{{class {_tex_name(data.class_names[k])}}}:\ {lead[k]}", factors or ["1"], r" \cdot ")
    if data.n_classes > 6:
        out.append(rf"\cdots\ (\text{{{data.n_classes - 6} more classes}})")
    out += _pack(r"\log(\text{unnormalised}) = (", [num(v, 4) for v in lj_row[:6]], ",\\ ", end=")")
    out += _pack(r"\Rightarrow\ q = (", [_f(v) for v in q], ",\\ ", end=")")
    return out


def e_step_glad(data: Annotations, params, item: int) -> list[str]:
    """GLAD E-step for item i (Whitehill et al. 2009, Sec. 3): each label is right with sigma(alpha_j beta_i)."""
    from crowdlab.models.glad import GLAD, sigmoid

    K = data.n_classes
    obs = np.flatnonzero(data.item == item)
    beta = float(params.beta[item])
    acc = sigmoid(params.alpha[data.worker[obs]] * beta)
    lines = [  # the general formula over three lines: one did not fit the tab beside the sidebar
        r"q_{ik} \propto \pi_k \prod_j \sigma(\alpha_j\beta_i)^{I(L_{ij}=k)}",
        r"\qquad \cdot\Big(\frac{1-\sigma(\alpha_j\beta_i)}{K-1}\Big)^{I(L_{ij}\neq k)},",
        r"\sigma(x)=\frac{1}{1+e^{-x}}",
        rf"\text{{item {_tex_name(data.item_names[item])}}}\ ({len(obs)}\ \text{{labels}}):\ \beta_i = {_f(beta)},\ "
        rf"\text{{difficulty}}\ 1/\beta_i = {_f(1 / beta)}",
    ]
    shown = [
        rf"\text{{{_tex_name(data.worker_names[data.worker[o]])}}}:\ \sigma({_f(params.alpha[data.worker[o]])}"
        rf"\cdot {_f(beta)}) = {_f(a)}"
        for o, a in zip(obs[:SHOW], acc[:SHOW])
    ]
    if shown:
        lines.append(",\\ ".join(shown) + (r",\ \ldots" if len(obs) > SHOW else ""))
    v = data.obs_weight
    parts = [
        [_pow(_f(a) if data.label[o] == k else _f((1 - a) / (K - 1)), v[o]) for o, a in zip(obs, acc)] for k in range(K)
    ]
    lead = [rf"{_f(params.pi[k])} \cdot" for k in range(K)]
    lj = GLAD(class_prior="estimate").log_joint(data, params)[item]
    return lines + _class_lines(data, lj, parts, lead)


def m_step_glad(
    data: Annotations, q: np.ndarray, params, worker: int, alpha_prior: tuple[float, float] | None = None
) -> list[str]:
    """GLAD M-step for worker j: the gradient of Q in alpha_j (ascended, not solved: generalised EM). With
    ``alpha_prior`` (mean, variance of the Gaussian prior on alpha_j, as the model uses it) the prior's term and
    the sum are shown too: at convergence the data term alone (e.g. -0.126) is not zero, the sum is."""
    from crowdlab.models.glad import sigmoid

    obs = np.flatnonzero(data.worker == worker)
    a = float(params.alpha[worker])
    beta = params.beta[data.item[obs]]
    w = q[data.item[obs], data.label[obs]]
    s = sigmoid(a * beta)
    v = data.obs_weight[obs]  # soft votes: each term times its label's weight
    grad = float(((w - s) * beta * v).sum())
    med = float(np.median(params.beta))
    terms = [
        rf"({_f(wi)} - {_f(si)})\cdot {_f(bi)}" + ("" if vi == 1 else rf"\cdot {_f(vi)}")
        for wi, si, bi, vi in zip(w, s, beta, v)
    ]
    shown = terms[:SHOW] + ([rf"\cdots (\text{{{len(terms) - SHOW} more}})"] if len(terms) > SHOW else [])
    return [  # each gradient over two lines, its prior's term on the second, sigma_ij named: one line ran off the tab
        r"\frac{\partial Q}{\partial \alpha_j} = \sum_i (q_{i,L_{ij}} - \sigma_{ij})\,\beta_i",
        r"\qquad - \frac{\alpha_j-\mu_\alpha}{\sigma^2_\alpha},",
        r"\frac{\partial Q}{\partial \log\beta_i} = \sum_j (q_{i,L_{ij}} - \sigma_{ij})\,\alpha_j\beta_i",
        r"\qquad - \frac{\log\beta_i-\mu_\beta}{\sigma^2_\beta},",
        r"\sigma_{ij} = \sigma(\alpha_j\beta_i)",
        r"\text{No closed form: the M-step climbs } Q",
        r"\text{(Newton steps, halved until } Q",
        r"\text{does not fall)}",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}\ ({len(obs)}\ \text{{labels}}):\ "
        rf"\alpha_j = {_f(a)},",
        # the sum sign with its limit draws wider than the estimate: a narrower budget for this line
        *_pack(r"\sum_i (q - \sigma)\beta_i =", shown, " + ", end=f" = {_f(grad)}", width=line_width() - 4),
        *_glad_prior_lines(a, grad, alpha_prior),
        r"\text{P(right) on an item of median difficulty}",
        rf"\sigma({_f(a)} \cdot {_f(med)}) = {_f(float(sigmoid(a * med)))}",
    ]


def _glad_prior_lines(a: float, grad: float, alpha_prior: tuple[float, float] | None) -> list[str]:
    """The prior's term of the gradient in alpha_j and the whole gradient (data term + prior term)."""
    if alpha_prior is None:
        return []
    mu, var = float(alpha_prior[0]), float(alpha_prior[1])
    pull = -(a - mu) / var
    return [
        rf"-\frac{{\alpha_j-\mu_\alpha}}{{\sigma^2_\alpha}} = -\frac{{{_f(a)} - {_f(mu)}}}{{{_f(var)}}} = {_f(pull)}",
        rf"\frac{{\partial Q}}{{\partial \alpha_j}} = {_f(grad)} + ({_f(pull)}) = {_f(grad + pull)}",
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
                _pow(
                    rf"({_f(th[data.worker[o]]) + ' + ' if data.label[o] == k else ''}"
                    rf"{_f(1 - th[data.worker[o]])}\cdot{_f(xi[data.worker[o], data.label[o]])})",
                    data.obs_weight[o],
                )
                for o in obs
            ]
        )
    lead = [rf"{_f(params.pi[k])} \cdot" for k in range(K)]
    lj = class_log_joint(data, params.pi, params.gamma)[item]
    return lines + _class_lines(data, lj, parts, lead)


def m_step_mace(data: Annotations, q: np.ndarray, params, worker: int) -> list[str]:
    """MACE M-step for worker j: expected honest labels and the spam strategy (Hovy et al. 2013, Sec. 2.1)."""
    from crowdlab.models.mace import spam_responsibility

    K = data.n_responses  # xi runs over the classes and any "can't tell" response (never honest)
    obs = np.flatnonzero(data.worker == worker)
    v = data.obs_weight[obs]  # soft votes: each label counts its weight
    cls = data.label[obs] < data.n_classes
    honest_q = np.where(cls, q[data.item[obs], np.minimum(data.label[obs], data.n_classes - 1)], 0.0)
    D = np.bincount(data.label[obs], weights=honest_q * v, minlength=K)
    n_lab = np.bincount(data.label[obs], weights=v, minlength=K)
    r = spam_responsibility(params.theta[worker : worker + 1], params.xi[worker : worker + 1])[0]
    honest = float((D * r).sum())
    spam = D * (1 - r) + (n_lab - D)
    top = np.argsort(-params.xi[worker])[:3]
    return [
        r"P(S_{ij}=0 \mid A_{ij}=a, T_i=a) = \frac{\theta_j}{\theta_j + (1-\theta_j)\xi_j(a)},\qquad "
        r"\theta_j = \frac{E[\#\text{honest labels}]}{\#\text{labels}},\qquad "
        r"\xi_j(a) = \frac{E[\#\text{spam labels } a]}{E[\#\text{spam labels}]}",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}:\ E[\#\text{{honest}}] = {_f(honest)}"
        rf"\ \text{{of}}\ {_f(float(v.sum()))},\quad \theta_j \approx {_f(honest / max(float(v.sum()), 1e-300))},\quad"
        rf"\text{{stored}}\ \theta_j = {_f(float(params.theta[worker]))}\ (\text{{P(spamming)}} = "
        rf"{_f(float(1 - params.theta[worker]))})",
        r"\text{spam strategy } \xi_j:\qquad "  # a break there, where the line is too long
        + ",\\ ".join(
            rf"\text{{{_tex_name((data.class_names + data.response_names)[k])}}}\ {_f(float(params.xi[worker, k]))}"
            rf"\ (E[\#] = {_f(float(spam[k]))})"
            for k in top
        ),
        r"\text{(the stored values include the prior's}",
        r"\text{pseudo-counts and the inner EM over } S\text{,}",
        r"\text{run from the previous } \theta, \xi)",
    ]


def e_step_mace_vb(data: Annotations, params, item: int) -> list[str]:
    """MACE's variational E-step for item i (Hovy et al. 2013, Sec. 2.2): MACE's E-step with expected logs."""
    K = data.n_classes
    obs = np.flatnonzero(data.item == item)
    w = data.worker[obs]
    th, sp, xi = np.exp(params.e_theta), np.exp(params.e_spam), np.exp(params.e_xi)
    lines = [
        r"q_{it} \propto \pi_t \prod_j \big(\tilde\theta_j\, I(A_{ij}=t) + \tilde s_j\,\tilde\xi_j(A_{ij})\big),",
        r"\tilde\theta_j = e^{\psi(a_j)-\psi(a_j+b_j)},\ \tilde s_j = e^{\psi(b_j)-\psi(a_j+b_j)},\ "
        r"\tilde\xi_j(a) = e^{\psi(c_j(a))-\psi(\sum_{a'} c_j(a'))}",
        r"\tilde\theta_j + \tilde s_j < 1:",
        r"\text{uncertainty about } \theta_j \text{ costs weight}",
        rf"\text{{item {_tex_name(data.item_names[item])}}}\ ({len(obs)}\ \text{{labels}}):",
    ]
    parts = [
        [
            _pow(
                rf"({_f(th[j]) + ' + ' if data.label[o] == k else ''}{_f(sp[j])}\cdot{_f(xi[j, data.label[o]])})",
                data.obs_weight[o],
            )
            for o, j in zip(obs, w)
        ]
        for k in range(K)
    ]
    lead = [rf"{_f(params.pi[k])} \cdot" for k in range(K)]
    lj = safe_log(params.pi) + (params.log_tilde[w, data.label[obs], :] * data.obs_weight[obs][:, None]).sum(axis=0)
    return lines + _class_lines(data, lj, parts, lead)


def m_step_mace_vb(data: Annotations, q: np.ndarray, params, worker: int) -> list[str]:
    """MACE's variational M-step for worker j: Beta and Dirichlet posteriors from the expected counts."""
    a0, b0, c0 = params.prior
    a, b = (float(v) for v in params.ab[worker])
    n = int(np.count_nonzero(data.worker == worker))
    c = params.c[worker]
    top = np.argsort(-c)[:3]
    return [
        r"\theta_j \sim \mathrm{Beta}\big(a + E[\#\text{honest}],\ b + E[\#\text{spam}]\big),\qquad "
        r"\xi_j \sim \mathrm{Dir}\big(c + E[\#\text{spam labels } a]\big),",
        r"P(S_{ij}=0 \mid A_{ij}=a, T_i=a) = \frac{\tilde\theta_j}{\tilde\theta_j + \tilde s_j\tilde\xi_j(a)}",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}\ ({n}\ \text{{labels}}):",
        rf"\mathrm{{Beta}}({_f(a0)} + {_f(a - a0)},\, {_f(b0)} + {_f(b - b0)})",
        rf"\qquad = \mathrm{{Beta}}({_f(a)},\, {_f(b)}),",
        rf"E[\theta_j] = {_f(a / (a + b))}\ (\text{{P(spamming)}} = {_f(b / (a + b))}),\ "
        rf"\tilde\theta_j = {_f(float(np.exp(params.e_theta[worker])))}",
        r"\text{spam strategy } \xi_j:\qquad "  # a break there, where the line is too long
        + ",\\ ".join(
            rf"\text{{{_tex_name((data.class_names + data.response_names)[k])}}}:\ {_f(c0)} + {_f(float(c[k] - c0))}"
            rf" \Rightarrow E[\xi_j] = {_f(float(c[k] / c.sum()))}"
            for k in top
        ),
        r"\text{(the counts come from the inner rounds}",
        r"\text{over } S\text{, from the previous posteriors;}",
        r"\text{they add up to the number of labels:}",
        rf"{_f(a - a0)} + {_f(b - b0)} = {n})",
    ]


def e_step_ibcc(data: Annotations, params, item: int) -> list[str]:
    """IBCC's variational E-step for item n (Kim & Ghahramani 2012): expected logs under the Dirichlets."""
    from crowdlab.models.ibcc import IBCC, expected_log

    K = data.n_classes
    obs = np.flatnonzero(data.item == item)
    el = expected_log(params.A, axis=1)
    if getattr(params, "abstain", None) is not None:  # "can't tell": log rho, and log(1 - rho) on the class rows
        from crowdlab.models.dawid_skene import log_response_rows

        el = log_response_rows(el, params.abstain)
    ek = expected_log(params.nu)
    lines = [  # the general formula over two lines: KaTeX draws it about 40 % wider than visible_width estimates
        r"q_{nk} \propto \exp\Big(E[\log\kappa_k]",
        r"\qquad + \sum_m E[\log\Gamma_m(f_m(x_n), k)]\Big),",
        r"E[\log x_a] = \psi(a_a) - \psi\big(\textstyle\sum_b a_b\big)",
        rf"\text{{item {_tex_name(data.item_names[item])}}}\ ({len(obs)}\ \text{{labels}}),"
        r"\ \text{terms written as } e^{E\log}:",
    ]
    v = data.obs_weight
    parts = [[_pow(_f(float(np.exp(el[data.worker[o], data.label[o], k]))), v[o]) for o in obs] for k in range(K)]
    lead = [rf"e^{{E\log\kappa}} = {_f(float(np.exp(ek[k])))} \cdot" for k in range(K)]
    lj = IBCC().log_joint(data, params)[item]
    return lines + _class_lines(data, lj, parts, lead)


def m_step_ibcc(data: Annotations, q: np.ndarray, params, worker: int) -> list[str]:
    """IBCC's update of worker m's Dirichlet posteriors: prior plus expected counts (Kim & Ghahramani 2012)."""
    K = data.n_classes
    obs = np.flatnonzero(data.worker == worker)
    counts = np.zeros((data.n_responses, K))
    np.add.at(counts, data.label[obs], q[data.item[obs]] * data.obs_weight[obs][:, None])
    A = params.A[worker]
    A0 = A - counts[:K]
    lines = [
        r"A_m(k', k) = A^0_m(k', k)\quad + \sum_n q_{nk}\, I(f_m(x_n) = k'),\qquad "
        r"E[\Gamma_m(k', k)] = \frac{A_m(k', k)}{\sum_{k''} A_m(k'', k)},\qquad \nu_k = \nu^0_k + \sum_n q_{nk}",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}\ ({len(obs)}\ \text{{labels}}),\ "
        r"\text{column = true class,}\quad \text{prior + counts = } A:",
    ]
    for k in range(min(K, 6)):
        cells = ",\\ ".join(rf"{_f(A0[kp, k])}+{_f(counts[kp, k])}" for kp in range(min(K, 6)))
        lines.append(
            rf"A(\cdot, \text{{{_tex_name(data.class_names[k])}}}) = ({cells}),\quad "
            rf"E[\Gamma(k,k)] = {_f(A[k, k] / A[:, k].sum())}"
        )
    if getattr(params, "abstain", None) is not None:
        rho = params.abstain[worker].sum(axis=0)
        lines += _pack(
            r"\rho_m(\text{can't tell} \mid k) = \frac{\sum_n q_{nk} \#\text{abstained}}"
            r"{\sum_n q_{nk} \#\text{answers}}\ (\text{a point estimate}) = (",
            [_f(v) for v in rho[:6]],
            ",\\ ",
            end=")",
        )
    return lines


def e_step_ebcc(data: Annotations, params, item: int) -> list[str]:
    """EBCC's variational E-step for item n (Li, Rubinstein & Cohn 2019): IBCC's with a subtype l beside the class."""
    from crowdlab.models.ebcc import EBCC

    K, L = data.n_classes, params.n_subtypes
    obs = np.flatnonzero(data.item == item)
    model = EBCC(subtypes=L)
    lj = model.joint_log_joint(data, params)[item].reshape(L, K)  # (l, k)
    r = softmax_rows(lj.reshape(1, -1))[0].reshape(L, K)
    q = r.sum(axis=0)
    e_phi = model._terms(data, params)[1].reshape(L, K)
    lines = [
        r"r_{nlk} \propto \exp\Big(E[\log\kappa_k] + E[\log\phi_k(l)]",
        r"\qquad + \sum_m E[\log V_{ml}(f_m(x_n), k)]\Big),",
        r"q_{nk} = \textstyle\sum_l r_{nlk}\quad(l:\ \text{the item's subtype})",
        rf"\text{{item {_tex_name(data.item_names[item])}}}\ ({len(obs)}\ \text{{labels}}),\ {L}\ \text{{subtypes}}:",
    ]
    for k in range(min(K, 6)):
        top = np.argsort(-r[:, k])[:2]
        parts = ",\\ ".join(
            rf"r_{{n{int(l) + 1}k}} = {_f(r[l, k])}\ (e^{{E\log\kappa\phi}} = {_f(np.exp(e_phi[l, k]))})" for l in top
        )
        lines += _pack(rf"\text{{class {_tex_name(data.class_names[k])}}}:", [parts], " ")
    if K > 6:
        lines.append(rf"\cdots\ (\text{{{K - 6} more classes}})")
    lines += _pack(r"\Rightarrow\ q = (", [_f(v) for v in q], ",\\ ", end=")")
    return lines


def m_step_ebcc(data: Annotations, q: np.ndarray, params, worker: int) -> list[str]:
    """EBCC's update of worker m's Dirichlet posteriors, one per subtype: prior plus the counts weighted by r."""
    K, L = data.n_classes, params.n_subtypes
    obs = np.flatnonzero(data.worker == worker)
    A = params.A[worker]  # (L, K', K)
    used = params.eta.sum(axis=1) - K * params.eta0  # items per subtype
    lines = [
        r"A_{ml}(k', k) = A^0(k', k) + \sum_n r_{nlk}\, I(f_m(x_n) = k'),",
        r"\eta_{lk} = \eta^0 + \sum_n r_{nlk},\qquad \nu_k = \nu^0_k + \sum_n q_{nk}",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}\ ({len(obs)}\ \text{{labels}}),\ "
        r"\text{the subtypes most used:}",
    ]
    for l in np.argsort(-used)[: min(L, 3)]:
        acc = np.diagonal(A[l]) / A[l].sum(axis=0)
        counts = A[l] - params.A0
        lines.append(
            rf"l={int(l) + 1}\ ({_f(used[l])}\ \text{{items}}):\ E[V(k,k)] = ("
            + ",\\ ".join(_f(v) for v in acc[:6])
            + r"),\ \text{counts on the diagonal} = ("
            + ",\\ ".join(_f(v) for v in np.diagonal(counts)[:6])
            + ")"
        )
    g = np.diagonal(params.gamma[worker])
    lines += _pack(r"\text{averaged over subtypes: } E[\Gamma_m(k,k)] = (", [_f(v) for v in g[:6]], ",\\ ", end=")")
    return lines


def e_step_ordinal(data: Annotations, params, item: int) -> list[str]:
    """The ordinal model's E-step for item n: Dawid-Skene's eq. (9) with the binned-Gaussian confusions."""
    lines = e_step_classes(data, params, item, "ordinal")
    return [
        r"\Gamma_m(l \mid k) = \Phi\big(\tfrac{l + 1/2 - k - b_m}{s_m}\big) - "
        r"\Phi\big(\tfrac{l - 1/2 - k - b_m}{s_m}\big)\quad(\text{levels by index})",
        *lines,
    ]


def m_step_ordinal(data: Annotations, q: np.ndarray, params, worker: int) -> list[str]:
    """The ordinal model's M-step for worker m (Lakshminarayanan & Teh 2013's annotator, by generalised EM): the
    expected counts C_m(l, k), their mean error and spread, and the (b_m, s_m) the Newton steps reached."""
    K = data.n_classes
    obs = np.flatnonzero(data.worker == worker)
    C = np.zeros((K, K))
    np.add.at(C, data.label[obs], q[data.item[obs]] * data.obs_weight[obs][:, None])
    d = np.arange(K)[:, None] - np.arange(K)[None, :]
    n = max(float(C.sum()), 1e-300)
    mean = float((C * d).sum() / n)
    sd = float(np.sqrt(max((C * d**2).sum() / n - mean**2, 0.0)))
    b, sp = float(params.extra["bias"][worker]), float(params.extra["spread"][worker])
    k = int(np.argmax(C.sum(axis=0))) if C.sum() > 0 else K // 2
    near = range(max(0, k - 2), min(K, k + 3))
    g = params.gamma[worker]
    return [
        r"(b_m, s_m) = \arg\max \sum_{l,k} C_m(l, k) \log \Gamma_m(l \mid k),\qquad "
        r"C_m(l, k) = \sum_n q_{nk}\, I(f_m(x_n) = l)",
        rf"\text{{worker {_tex_name(data.worker_names[worker])}}}\ ({len(obs)}\ \text{{labels}}):\ "
        rf"E[\text{{error in levels}}] = {_f(mean)},\ \text{{sd}} = {_f(sd)}",
        rf"\text{{Newton steps (generalised EM) reach}}\ b_m = {_f(b)},\ s_m = {_f(sp)}",
        rf"\Gamma_m(\cdot \mid \text{{{_tex_name(data.class_names[k])}}}):\ "
        + ",\\ ".join(rf"{_tex_name(data.class_names[l])}\!: {_f(float(g[l, k]))}" for l in near),
    ]


NEW_MODEL_EXPLAINERS = {
    key: (_fitted(e), _fitted(m))
    for key, (e, m) in {
        "glad": (e_step_glad, m_step_glad),
        "mace": (e_step_mace, m_step_mace),
        "mace_vb": (e_step_mace_vb, m_step_mace_vb),
        "ibcc": (e_step_ibcc, m_step_ibcc),
        "ebcc": (e_step_ebcc, m_step_ebcc),
        "ordinal": (e_step_ordinal, m_step_ordinal),
    }.items()
}
"""model key -> (e_lines(data, params, item), m_lines(data, q, params_after_the_M_step, worker))."""
