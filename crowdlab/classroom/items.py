"""What a live class labels, who plays whom, and what EM concluded about each student (no Streamlit here).

* Items with a truth that need no internet: :func:`dot_items` ("which colour has more dots?", drawn as SVG; hard
  when the counts are close) and :func:`prime_items` ("is this number prime?"; hard for 91 = 7 x 13, easy for 40).
  Each item has a difficulty in [0, 1] around the level the lecturer picks, so GLAD's item difficulty (Whitehill et
  al., 2009) has something to find in the class's data.
* Item sets the lecturer uploads (:func:`read_item_set`: a CSV of item id, prompt, optional truth and image file,
  the images in an optional zip), read through the one reading path (:func:`crowdlab.io.readers.read_table`) and its
  limits (:mod:`crowdlab.io.limits`).
* Secret roles by share (:func:`deal_role`): honest, spammer (answers at random), adversary (answers the opposite of
  what they believe), lazy (always the same answer): Raykar & Yu (2012) and Hovy et al. (2013, MACE) call the
  second kind spammers; :func:`scripted_answer` plays each role for simulated students.
* The class's votes as :class:`~crowdlab.io.annotations.Annotations` with gold (:func:`class_annotations`), the
  working dataset of the Step page, and the reveal (:func:`reveal`): Dawid & Skene (1979) and MACE fitted to the
  votes, each student's estimated accuracy with its 95% interval, and per role what the two estimated.
"""

from __future__ import annotations

import io
import math
import random
import secrets
import threading
import time
import warnings
import zipfile
from collections.abc import Sequence

import numpy as np

from crowdlab.classroom.store import ROLES, Item
from crowdlab.errors import DataError
from crowdlab.io.annotations import Annotations
from crowdlab.io.limits import get_limits
from crowdlab.io.readers import read_table

__all__ = [
    "DOT_CHOICES",
    "PRIME_CHOICES",
    "ROLE_CARDS",
    "accuracy_over_labels",
    "class_annotations",
    "deal_role",
    "dot_items",
    "prime_items",
    "pseudonym",
    "read_item_set",
    "reveal",
    "route_next",
    "routing_comparison",
    "scripted_answer",
    "simulate_class",
]

DOT_CHOICES = ("orange", "blue")  # told apart by most colour-blind viewers too
PRIME_CHOICES = ("prime", "not prime")
DOT_COLOURS = {"orange": "#e69f00", "blue": "#0072b2"}  # Okabe & Ito's palette
ANSWER_PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#56b4e9", "#e69f00", "#f0e442", "#000000")
DARK_INK = ("#e69f00", "#f0e442", "#56b4e9")  # light colours: black text on them, white on the others


def choice_colors(choices: Sequence[str]) -> dict[str, str]:
    """Each answer's colour, the same on the phone's buttons and the projector's bars: a dot item's answer is its
    own colour ("orange" orange, "blue" blue); other answers take Okabe & Ito's palette in order."""
    taken = {DOT_COLOURS[c] for c in choices if c in DOT_COLOURS}
    free = iter([c for c in ANSWER_PALETTE if c not in taken])
    return {c: DOT_COLOURS[c] if c in DOT_COLOURS else next(free, "#7f7f7f") for c in choices}


ROLE_CARDS = {
    "honest": "Answer every item as well as you can.",
    "spammer": "Secret role: spammer. Don't look at the items: tap answers at random.",
    "adversary": "Secret role: adversary. Work out the right answer, then tap the other one.",
    "lazy": "Secret role: lazy. Tap the first answer every time, whatever the item.",
}
ROLE_TITLES = {"honest": "Honest", "spammer": "Spammer", "adversary": "Adversary", "lazy": "Lazy"}
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}
MAX_IMAGE_MB = 5.0
MAX_IMAGE_PIXELS = 25_000_000  # an uploaded picture may have this many pixels (5000 x 5000); it is then made small
IMAGE_SIDE = 480  # the stored picture's longer side at most (the phone shows it 210 px wide, at 2x)
MAX_ITEMS = 500

_ADJECTIVES = (
    "Amber Brave Calm Clever Cosmic Crimson Curious Daring Eager Gentle Golden Happy Humble Jolly Keen Lively Lucky "
    "Mellow Misty Nimble Noble Patient Plucky Quick Quiet Rapid Rosy Shy Silver Sleepy Smart Snowy Sunny Swift Teal "
    "Tidy Vivid Witty Zesty"
).split()
_ANIMALS = (
    "Badger Beaver Bison Crane Dolphin Eagle Falcon Ferret Finch Fox Gecko Heron Ibis Jaguar Koala Lark Lemur Lynx "
    "Marten Moose Newt Otter Owl Panda Pelican Puffin Quail Raven Robin Seal Sparrow Stoat Swan Tapir Tiger Toucan "
    "Walrus Wombat Yak Zebra"
).split()


def pseudonym() -> str:
    """Two words, e.g. "Quiet Otter" (40 x 40 of them; the student may change it)."""
    return f"{secrets.choice(_ADJECTIVES)} {secrets.choice(_ANIMALS)}"


# ---------------------------------------------------------------------------- roles
def deal_role(counts: dict[str, int], shares: dict[str, float], *, rng: random.Random | None = None) -> str:
    """The next student's role: the one furthest below its share of the students so far plus this one (ties at
    random, from ``rng``; the operating system's random source when None), so a class of any size holds the shares
    as closely as whole students can. :meth:`crowdlab.classroom.store.ClassStore.join` passes the store's ``rng``."""
    total = sum(shares.values())
    if total <= 0:
        return "honest"
    n = sum(counts.get(r, 0) for r in shares) + 1
    deficit = {r: shares[r] / total * n - counts.get(r, 0) for r in shares if r in ROLES}
    best = max(deficit.values())
    return (rng or secrets.SystemRandom()).choice(sorted(r for r, d in deficit.items() if d >= best - 1e-9))


def scripted_answer(role: str, truth: str, choices: Sequence[str], difficulty: float, rng: np.random.Generator) -> str:
    """What a simulated student in ``role`` answers: an honest one is right with probability 1 - difficulty / 2
    (a coin toss on the hardest item), an adversary answers something other than what they believed, a spammer at
    random, a lazy one the first answer."""
    choices = list(choices)
    if role == "spammer":
        return str(rng.choice(choices))
    if role == "lazy":
        return choices[0]
    others = [c for c in choices if c != truth]
    believed = truth if rng.random() < 1.0 - 0.5 * float(difficulty) else str(rng.choice(others))
    if role == "adversary":
        return str(rng.choice([c for c in choices if c != believed]))
    return believed


# ---------------------------------------------------------------------------- generated items
def _difficulties(n: int, level: float, rng: np.random.Generator) -> np.ndarray:
    return np.clip(level + rng.uniform(-0.3, 0.3, n), 0.0, 1.0)


def dots_svg(n_orange: int, n_blue: int, rng: np.random.Generator, size: int = 240) -> str:
    """An SVG of ``n_orange`` orange and ``n_blue`` blue dots, scattered without overlapping."""
    r = 9
    placed: list[tuple[float, float]] = []
    tries = 0
    while len(placed) < n_orange + n_blue and tries < 20000:
        tries += 1
        x, y = rng.uniform(r + 2, size - r - 2, 2)
        if all((x - a) ** 2 + (y - b) ** 2 >= (2 * r + 3) ** 2 for a, b in placed):
            placed.append((x, y))
    colours = ["orange"] * n_orange + ["blue"] * n_blue
    rng.shuffle(colours)
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{DOT_COLOURS[c]}"/>'
        for (x, y), c in zip(placed, colours, strict=False)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {size}" width="{size}" height="{size}">'
        f'<rect width="{size}" height="{size}" fill="#ffffff" stroke="#cccccc"/>{dots}</svg>'
    )


def dot_items(n: int = 12, level: float = 0.5, seed: int | None = None) -> list[Item]:
    """``n`` "which colour has more dots?" items; difficulty d in [0, 1] around ``level``: about 30 dots whose
    counts differ by round(12 (1 - d)) + 1 (13 on the easiest, 1 on the hardest)."""
    rng = np.random.default_rng(seed)
    items = []
    for k, d in enumerate(_difficulties(n, level, rng)):
        diff = int(round(12 * (1 - d))) + 1
        total = int(rng.integers(26, 33))
        more, fewer = (total + diff) // 2, (total - diff) // 2
        truth = str(rng.choice(DOT_CHOICES))
        n_orange, n_blue = (more, fewer) if truth == "orange" else (fewer, more)
        items.append(
            Item(
                f"dots-{k + 1:02d}",
                "Which colour has more dots?",
                truth=truth,
                difficulty=float(round(d, 3)),
                svg=dots_svg(n_orange, n_blue, rng),
            )
        )
    return items


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % p for p in range(2, math.isqrt(n) + 1))


def _prime_difficulty(n: int) -> float:
    """How hard "is n prime?" is: even numbers and multiples of 5 are easy; products of two primes of 7 or more
    (91 = 7 x 13) and primes above 100 are hard."""
    if n % 2 == 0 or n % 5 == 0 or n < 10:
        return 0.05
    if _is_prime(n):
        return 0.2 if n < 50 else (0.5 if n < 100 else 0.85)
    if n % 3 == 0:
        return 0.45 if sum(map(int, str(n))) > 9 else 0.3
    return 0.95  # its least factor is 7 or more


def prime_items(n: int = 12, level: float = 0.5, seed: int | None = None) -> list[Item]:
    """``n`` "is this number prime?" items (half of them primes) whose difficulties lie near ``level``."""
    rng = np.random.default_rng(seed)
    pool = [(m, _prime_difficulty(m)) for m in range(4, 400)]
    picked: list[int] = []
    for want_prime in [k % 2 == 0 for k in range(n)]:
        cand = [(m, d) for m, d in pool if _is_prime(m) == want_prime and m not in picked]
        w = np.array([math.exp(-(((d - level) / 0.15) ** 2)) for _, d in cand])
        picked.append(cand[int(rng.choice(len(cand), p=w / w.sum()))][0])
    rng.shuffle(picked)
    return [
        Item(
            f"number-{k + 1:02d}",
            f"Is {m} a prime number?",
            truth=PRIME_CHOICES[0] if _is_prime(m) else PRIME_CHOICES[1],
            difficulty=_prime_difficulty(m),
        )
        for k, m in enumerate(picked)
    ]


# ---------------------------------------------------------------------------- uploaded items
_ID = ("item", "item_id", "id", "itemid", "question_id")
_PROMPT = ("prompt", "question", "text", "prompt_text")
_TRUTH = ("truth", "gold", "answer", "true_label", "correct")
_IMAGE = ("image", "image_file", "file", "picture")


def _column(header: Sequence[str], aliases: Sequence[str], file: str) -> int | None:
    hits = [j for j, h in enumerate(header) if "_".join(h.strip().lower().replace("-", " ").split()) in aliases]
    if len(hits) > 1:
        raise DataError(
            f"more than one column could be the {aliases[0]} column: {', '.join(repr(header[j]) for j in hits)}.",
            file=file,
            row=1,
            hint="Rename or delete all but one of them.",
        )
    return hits[0] if hits else None


def _images(zip_bytes: bytes | None, file: str) -> dict[str, bytes]:
    if zip_bytes is None:
        return {}
    lim = get_limits()
    if len(zip_bytes) > lim.max_file_mb * 1e6:
        raise DataError(f"the zip is larger than {lim.max_file_mb:g} MB.", file=file)
    try:
        zf = zipfile.ZipFile(io.BytesIO(zip_bytes))
    except zipfile.BadZipFile:
        raise DataError("this is not a zip archive.", file=file, hint="Zip the image files together.") from None
    out: dict[str, bytes] = {}
    total = 0.0
    for info in zf.infolist():
        if info.is_dir():
            continue
        base = info.filename.rsplit("/", 1)[-1]
        ext = "." + base.rsplit(".", 1)[-1].lower() if "." in base else ""
        if ext not in IMAGE_TYPES:
            continue
        if info.file_size > MAX_IMAGE_MB * 1e6:  # checked before reading: a zip bomb is never expanded
            raise DataError(f"the image {base!r} is larger than {MAX_IMAGE_MB:g} MB.", file=file)
        total += info.file_size
        if total > lim.max_file_mb * 1e6:
            raise DataError(f"the images add up to more than {lim.max_file_mb:g} MB.", file=file)
        out[base] = zf.read(info)
    return out


def small_image(data: bytes, name: str, file: str) -> bytes:
    """An uploaded picture decoded once, checked (PNG, JPEG or GIF by its content, whatever its name; at most
    :data:`MAX_IMAGE_PIXELS` pixels; not damaged) and made small (longer side :data:`IMAGE_SIDE`): PNG bytes, or
    JPEG for a JPEG. What is stored is only this small copy, so no phone ever decodes the upload itself."""
    from PIL import Image, UnidentifiedImageError

    def refuse(why: str) -> DataError:
        return DataError(f"the image {name!r} {why}", file=file, hint="Use PNG, JPEG or GIF pictures.")

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data), formats=["PNG", "JPEG", "GIF"])
            w, h = img.size
            if w * h > MAX_IMAGE_PIXELS:
                raise refuse(f"is {w:,} x {h:,} pixels; a picture may have at most {MAX_IMAGE_PIXELS:,} pixels.")
            fmt = img.format
            img.load()
    except DataError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise refuse(f"has more pixels than a picture may ({MAX_IMAGE_PIXELS:,} at most).") from None
    except UnidentifiedImageError:
        raise refuse("is not a PNG, JPEG or GIF picture (whatever its name says).") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:  # truncated or corrupt
        raise refuse(f"is damaged and cannot be read ({str(exc)[:80]}).") from None
    has_alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    img = img.convert("RGBA" if has_alpha else "RGB")
    img.thumbnail((IMAGE_SIDE, IMAGE_SIDE))
    out = io.BytesIO()
    if fmt == "JPEG" and not has_alpha:
        img.save(out, format="JPEG", quality=85)
    else:
        img.save(out, format="PNG", optimize=True)
    return out.getvalue()


def read_item_set(
    csv_source, choices: Sequence[str], images_zip: bytes | None = None, *, zip_name: str = "images.zip"
) -> list[Item]:
    """Items from a CSV with columns item id, prompt, optional truth (one of ``choices``) and optional image (a
    file name inside ``images_zip``: PNG, JPEG or GIF). Bad input raises DataError naming the file, row and column."""
    table = read_table(csv_source, needs="it needs columns item id and prompt (optional: truth, image)", where="app")
    file = table.file
    j_id, j_prompt = _column(table.header, _ID, file), _column(table.header, _PROMPT, file)
    j_truth, j_image = _column(table.header, _TRUTH, file), _column(table.header, _IMAGE, file)
    missing = [name for name, j in (("item id", j_id), ("prompt", j_prompt)) if j is None]
    if missing:
        raise DataError(
            f"no {' or '.join(missing)} column (found: {', '.join(repr(h) for h in table.header)}).",
            file=file,
            row=1,
            hint="Name the columns item_id, prompt and optionally truth and image.",
        )
    if table.n_rows > MAX_ITEMS:
        raise DataError(f"the file has {table.n_rows:,} items; a class labels at most {MAX_ITEMS}.", file=file)
    images = _images(images_zip, zip_name)
    ids, prompts = table.values(j_id), table.values(j_prompt)
    truths = table.values(j_truth) if j_truth is not None else None
    files = table.values(j_image) if j_image is not None else None
    choices = [str(c) for c in choices]
    seen: dict[str, int] = {}
    small: dict[str, bytes] = {}
    items = []
    for k in range(table.n_rows):
        row = int(table.rows[k])
        item_id, prompt = str(ids[k]), str(prompts[k])
        if not item_id:
            raise DataError("the item id is blank.", file=file, row=row, column=table.header[j_id])
        if item_id in seen:
            raise DataError(f"item {item_id!r} appears twice (rows {seen[item_id]} and {row}).", file=file, row=row)
        seen[item_id] = row
        if not prompt:
            raise DataError("the prompt is blank.", file=file, row=row, column=table.header[j_prompt])
        truth = str(truths[k]) if truths is not None and str(truths[k]) else None
        if truth is not None and truth not in choices:
            raise DataError(
                f"the truth {truth!r} is not one of the answers ({', '.join(choices)}).",
                file=file,
                row=row,
                column=table.header[j_truth],
                hint="Type the answers as the truth column spells them.",
            )
        image = None
        if files is not None and str(files[k]):
            name = str(files[k]).rsplit("/", 1)[-1]
            if name not in images:
                raise DataError(
                    f"the image {name!r} is not in the zip of images." + ("" if images_zip else " (no zip was given)"),
                    file=file,
                    row=row,
                    column=table.header[j_image],
                    hint="Upload a zip holding every image file the CSV names (PNG, JPEG or GIF).",
                )
            if name not in small:  # each picture decoded once, however many items show it
                small[name] = small_image(images[name], name, zip_name)
            image = small[name]
        items.append(Item(item_id, prompt[:500], truth=truth, image=image))
    return items


# ---------------------------------------------------------------------------- the class's data
def _worker_names(votes: list[dict]) -> dict[str, str]:
    """student id -> a unique worker name: the pseudonym, numbered when two students chose the same one."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for v in votes:
        sid = v["student_id"]
        if sid in names:
            continue
        base = name = v["pseudonym"]
        k = 2
        while name in used:
            name, k = f"{base} {k}", k + 1
        names[sid] = name
        used.add(name)
    return names


def class_annotations(
    votes: list[dict], items: Sequence[Item], choices: Sequence[str], name: str = "our class"
) -> tuple[Annotations, dict[str, str]]:
    """The class's votes (rows of :meth:`ClassStore.votes`) as Annotations with gold where items have a truth,
    and the map student id -> worker name. Items nobody labelled are left out."""
    if not votes:
        raise DataError("Nobody has voted yet.", hint="Wait for the class's answers, then try again.")
    names = _worker_names(votes)
    truth = {it.item_id: it.truth for it in items if it.truth is not None}
    data = Annotations.from_labels(
        [v["item_id"] for v in votes],
        [names[v["student_id"]] for v in votes],
        [v["label"] for v in votes],
        gold=truth or None,
        classes=list(choices),
        name=name,
    )
    return data, names


def _acc(pred: np.ndarray, gold: np.ndarray) -> float | None:
    known = gold >= 0
    return float((pred[known] == gold[known]).mean()) if known.any() else None


def reveal(votes: list[dict], items: Sequence[Item], choices: Sequence[str]) -> dict:
    """What Dawid-Skene and MACE estimated about each student and each role, as plain JSON-able numbers:

    ``students``: student id -> {accuracy, lower, upper (Dawid-Skene, 95%), mace_accuracy, mace_spamming (1 - theta,
    MACE's probability that the student answers at random), true_accuracy (against the items' truth), n};
    ``roles``: role -> the students' means of the same, and how many; ``class``: majority vote's, Dawid-Skene's and
    MACE's accuracies against the truth.
    """
    from crowdlab.analysis.reports import worker_report
    from crowdlab.engines.fit import fit

    data, names = class_annotations(votes, items, choices)
    index = {w: m for m, w in enumerate(data.worker_names)}
    roles = {v["student_id"]: v["role"] for v in votes}
    gold = data.gold if data.gold is not None else np.full(data.n_items, -1)
    hit = data.label == gold[data.item]
    known = gold[data.item] >= 0
    out: dict = {"students": {}, "roles": {}, "class": {"students": len(names), "votes": len(votes)}}
    mv = fit(data, "mv")
    out["class"]["mv_accuracy"] = _acc(mv.labels(), gold)
    fits = {}
    for method in ("ds", "mace"):
        try:
            run = fit(data, method, max_iter=500)
            fits[method] = (run, worker_report(run))
            out["class"][f"{method}_accuracy"] = _acc(run.labels(), gold)
        except Exception as exc:  # a class too small to fit: say so rather than fail the reveal
            out["class"][f"{method}_error"] = str(exc)
    for sid, wname in names.items():
        m = index[wname]
        mine = data.worker == m
        rec: dict = {"n": int(mine.sum()), "role": roles[sid]}
        rec["true_accuracy"] = float(hit[mine & known].mean()) if (mine & known).any() else None
        if "ds" in fits:
            row = fits["ds"][1].iloc[m]
            rec |= {"accuracy": float(row["accuracy"]), "lower": float(row["lower"]), "upper": float(row["upper"])}
        if "mace" in fits:
            run, rep = fits["mace"]
            rec["mace_accuracy"] = float(rep.iloc[m]["accuracy"])
            rec["mace_spamming"] = float(1.0 - np.asarray(run.params.theta)[m])
        out["students"][sid] = rec
    for role in ROLES:
        recs = [r for r in out["students"].values() if r["role"] == role]
        if not recs:
            continue
        summary: dict = {"students": len(recs)}
        for key in ("true_accuracy", "accuracy", "mace_accuracy", "mace_spamming"):
            vals = [r[key] for r in recs if r.get(key) is not None]
            summary[key] = float(np.mean(vals)) if vals else None
        out["roles"][role] = summary
    return out


# ---------------------------------------------------------------------------- next-item routing
ROUTE_REFIT_S = 1.0  # a router's fit is reused this long while votes arrive (one fit a second, not one a tap)
ROUTE_FLOOR = 3  # labels every item gets before uncertainty decides (a greedy router starves items it believes)
ROUTE_DS_FROM = 3.0  # votes per item before Dawid-Skene's posterior replaces the smoothed vote shares
_route_cache: dict[str, tuple[int, float, dict[str, np.ndarray]]] = {}
_route_lock = threading.Lock()


def item_posteriors(votes: Sequence[tuple], item_ids: Sequence[str], choices: Sequence[str]) -> dict[str, np.ndarray]:
    """Each item's class posterior under the current fit of the class's votes ((student id, item id, label) rows).

    Few votes (under :data:`ROUTE_DS_FROM` per item): the vote shares smoothed by one pseudo-vote per class, (n_ik +
    1) / (n_i + K). Then Dawid & Skene (1979), which also weighs each student by their estimated confusion matrix
    (so a spammer's vote moves an item less). An item nobody labelled has the uniform posterior."""
    choices = list(choices)
    k_of = {c: k for k, c in enumerate(choices)}
    K = len(choices)
    out = {i: np.full(K, 1.0 / K) for i in item_ids}
    rows = [(str(s), str(i), k_of[str(lab)]) for s, i, lab in votes if str(lab) in k_of and str(i) in out]
    if not rows:
        return out
    counts: dict[str, np.ndarray] = {}
    for _, i, k in rows:
        counts.setdefault(i, np.zeros(K))[k] += 1.0
    for i, c in counts.items():
        out[i] = (c + 1.0) / (c.sum() + K)
    if len(rows) < ROUTE_DS_FROM * len(item_ids):
        return out
    from crowdlab.engines.fit import fit

    try:
        data = Annotations.from_labels(
            [i for _, i, _ in rows], [s for s, _, _ in rows], [choices[k] for _, _, k in rows], classes=choices
        )
        run = fit(data, "ds", max_iter=200, tol=1e-6)
    except Exception:  # a degenerate class (one student, one class answered): keep the smoothed shares
        return out
    q = np.asarray(run.posterior)
    for n, name in enumerate(data.item_names):
        if np.all(np.isfinite(q[n])):
            out[str(name)] = q[n]
    return out


def route_next(
    candidates: Sequence[str],
    votes: Sequence[tuple],
    handed: dict[str, int],
    item_ids: Sequence[str],
    choices: Sequence[str],
    *,
    key: str | None = None,
    rng: np.random.Generator | None = None,
    posteriors: dict[str, np.ndarray] | None = None,
) -> str:
    """Uncertainty sampling (Lewis & Gale 1994): of the ``candidates`` (items this student has not had), the one whose
    label is least certain under the current fit: the largest entropy of its posterior (:func:`item_posteriors`),
    divided by 1 + the students it was handed to who have not answered yet (so a room asking at once is spread over
    the uncertain items instead of all sent to one); ties go to the item handed out least, then at random.
    ``key`` (a session id) lets the fit be reused for :data:`ROUTE_REFIT_S` seconds while votes arrive;
    ``posteriors`` gives the fit instead (a simulation's round)."""
    if not candidates:
        raise ValueError("no candidate items to route to")
    rng = rng or np.random.default_rng(secrets.randbits(32))
    post = posteriors
    if key is not None:
        with _route_lock:
            hit = _route_cache.get(key)
        if hit is not None and (hit[0] == len(votes) or time.monotonic() - hit[1] < ROUTE_REFIT_S):
            post = hit[2]
    if post is None:
        post = item_posteriors(votes, item_ids, choices)
        if key is not None:
            with _route_lock:
                if len(_route_cache) > 64:  # old sessions' fits
                    _route_cache.clear()
                _route_cache[key] = (len(votes), time.monotonic(), post)
    answered: dict[str, int] = {}
    for _, i, _ in votes:
        answered[str(i)] = answered.get(str(i), 0) + 1
    K = len(choices)
    uniform = np.full(K, 1.0 / K)

    def score(i: str) -> tuple:
        q = np.clip(post.get(i, uniform), 1e-300, 1.0)
        entropy = float(-(q * np.log(q)).sum())
        pending = max(0, handed.get(i, 0) - answered.get(i, 0))
        short = handed.get(i, 0) < ROUTE_FLOOR  # every item gets its floor of labels first
        return (not short, -round(entropy / (1.0 + pending), 9), handed.get(i, 0), float(rng.random()))

    return min(candidates, key=score)


def simulate_class(
    items: Sequence[Item],
    choices: Sequence[str],
    *,
    students: int = 30,
    per_student: int = 10,
    shares: dict[str, float] | None = None,
    routing: bool = False,
    seed: int = 0,
) -> list[dict]:
    """A class of scripted students (:func:`scripted_answer`, roles by :func:`deal_role`'s shares) taking turns, one
    answer each per round as a room does; with ``routing`` each next item comes from :func:`route_next` on the votes
    so far, without it from consecutive blocks of the item order, as :meth:`ClassStore.join` deals them. Returns
    vote rows (student_id, pseudonym, item_id, label, role, voted) in the order they were given."""
    rng = np.random.default_rng(seed)
    items = list(items)
    ids = [it.item_id for it in items]
    by_id = {it.item_id: it for it in items}
    per_student = max(1, min(int(per_student), len(items)))
    shares = shares or {"honest": 1.0}
    counts: dict[str, int] = {}
    roles, queues = [], []
    for s in range(students):
        total = sum(shares.values())
        deficit = {r: shares[r] / total * (s + 1) - counts.get(r, 0) for r in shares}
        role = max(sorted(deficit), key=deficit.get)  # deal_role without its random tie-break: reproducible
        counts[role] = counts.get(role, 0) + 1
        roles.append(role)
        start = (s * per_student) % len(ids)
        mine = [ids[(start + j) % len(ids)] for j in range(per_student)]
        rng.shuffle(mine)
        queues.append(mine)
    votes: list[dict] = []
    handed: dict[str, int] = {}
    had: list[set] = [set() for _ in range(students)]
    for step in range(per_student):
        # one fit a round, as the app refits about once a second while a room answers
        rows = [(v["student_id"], v["item_id"], v["label"]) for v in votes]
        post = item_posteriors(rows, ids, choices) if routing else None
        for s in range(students):
            if routing:
                cand = [i for i in ids if i not in had[s]]
                item_id = route_next(cand, rows, handed, ids, choices, rng=rng, posteriors=post)
            else:
                item_id = queues[s][step]
            had[s].add(item_id)
            handed[item_id] = handed.get(item_id, 0) + 1
            it = by_id[item_id]
            truth = it.truth if it.truth is not None else list(choices)[0]
            label = scripted_answer(roles[s], truth, choices, it.difficulty or 0.0, rng)
            votes.append({"student_id": f"s{s:03d}", "pseudonym": f"student {s + 1}", "item_id": item_id,
                          "label": label, "role": roles[s], "voted": float(len(votes))})  # fmt: skip
    return votes


def accuracy_over_labels(
    votes: Sequence[dict], items: Sequence[Item], choices: Sequence[str], points: int = 8
) -> dict[str, list]:
    """Majority vote's and Dawid-Skene's accuracy against the items' truth after the first n votes (in the order
    given), at ``points`` values of n up to all of them: what each label spent bought. Items nobody has labelled
    yet count as wrong (no answer), so both curves start low and end at the reveal's accuracies."""
    from crowdlab.engines.fit import fit

    votes = sorted(votes, key=lambda v: float(v["voted"]))
    truth = {it.item_id: it.truth for it in items if it.truth is not None}
    out: dict[str, list] = {"labels": [], "mv": [], "ds": []}
    if not votes or not truth:
        return out
    marks = sorted({int(round(x)) for x in np.linspace(len(votes) / points, len(votes), points)} - {0})
    for n in marks:
        data, _ = class_annotations(list(votes[:n]), items, choices)
        names = [str(x) for x in data.item_names]
        row = {"labels": n}
        for method in ("mv", "ds"):
            try:
                pred = fit(data, method, max_iter=500).labels()
                right = sum(1 for m, i in enumerate(names) if i in truth and list(choices)[pred[m]] == truth[i])
                row[method] = right / len(truth)
            except Exception:  # too few votes to fit
                row[method] = None
        for k, v in row.items():
            out[k].append(v)
    return out


def routing_comparison(
    items: Sequence[Item],
    choices: Sequence[str],
    *,
    students: int = 30,
    per_student: int = 10,
    shares: dict[str, float] | None = None,
    seeds: int = 3,
    points: int = 8,
) -> dict[str, dict[str, list]]:
    """What routing buys on a class like this one: :func:`simulate_class` with and without routing, ``seeds`` times
    each (the same seeds, so both meet the same students), and the mean of :func:`accuracy_over_labels`."""
    out: dict[str, dict[str, list]] = {}
    for name, routing in (("routing", True), ("fixed deal", False)):
        runs = [
            accuracy_over_labels(
                simulate_class(
                    items,
                    choices,
                    students=students,
                    per_student=per_student,
                    shares=shares,
                    routing=routing,
                    seed=seed,
                ),
                items,
                choices,
                points,
            )  # fmt: skip
            for seed in range(seeds)
        ]
        mean: dict[str, list] = {"labels": runs[0]["labels"]}
        for method in ("mv", "ds"):
            cols = zip(*(r[method] for r in runs), strict=True)
            mean[method] = [None if any(v is None for v in col) else float(np.mean(col)) for col in cols]
        out[name] = mean
    return out
