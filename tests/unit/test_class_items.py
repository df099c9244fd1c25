"""Items, roles, uploaded item sets and the reveal of a live class (crowdlab.classroom.items)."""

from __future__ import annotations

import base64
import io
import random
import re
import zipfile
from collections import Counter

import numpy as np
import pytest

from crowdlab.classroom import items as ci
from crowdlab.classroom.store import ClassStore, Limits
from crowdlab.errors import DataError

PNG = base64.b64decode(  # a real 8 x 8 PNG: uploads are decoded and checked (tests/unit/test_class_images.py)
    "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAFUlEQVR4nGPcv38/AzbAhFV00EoAAMJFAk3KJSh2AAAAAElFTkSuQmCC"
)


def _count(svg: str, colour: str) -> int:
    return len(re.findall(f'fill="{ci.DOT_COLOURS[colour]}"', svg))


def test_dot_items_truth_and_difficulty():
    items = ci.dot_items(40, 0.5, seed=3)
    assert len({it.item_id for it in items}) == 40
    gaps, diffs = [], []
    for it in items:
        o, b = _count(it.svg, "orange"), _count(it.svg, "blue")
        assert it.truth == ("orange" if o > b else "blue") and o != b
        gaps.append(abs(o - b))
        diffs.append(it.difficulty)
    assert np.corrcoef(gaps, diffs)[0, 1] < -0.9  # hard items: close counts
    assert np.mean([it.difficulty for it in ci.dot_items(40, 0.9, seed=1)]) > np.mean(diffs) + 0.2


def test_prime_items_truth_and_level():
    easy, hard = ci.prime_items(20, 0.1, seed=1), ci.prime_items(20, 0.9, seed=1)
    for it in easy + hard:
        n = int(re.search(r"\d+", it.prompt).group())
        assert (it.truth == "prime") == all(n % p for p in range(2, n)), it.prompt
    assert Counter(it.truth for it in easy) == {"prime": 10, "not prime": 10}
    assert np.mean([it.difficulty for it in hard]) > np.mean([it.difficulty for it in easy]) + 0.4
    assert ci._prime_difficulty(91) > 0.9 and ci._prime_difficulty(40) < 0.1


def test_deal_role_holds_the_shares():
    shares = {"honest": 0.6, "spammer": 0.2, "adversary": 0.1, "lazy": 0.1}
    counts = {r: 0 for r in shares}
    for n in range(1, 101):
        counts[ci.deal_role(counts, shares)] += 1
        for r, s in shares.items():  # never more than one student away from the share
            assert abs(counts[r] - s * n) <= 1.0 + 1e-9
    assert counts == {"honest": 60, "spammer": 20, "adversary": 10, "lazy": 10}


def test_scripted_answers_play_their_roles():
    rng = np.random.default_rng(0)
    ch = ci.DOT_CHOICES
    spam = Counter(ci.scripted_answer("spammer", "blue", ch, 0.0, rng) for _ in range(2000))
    assert 900 < spam["blue"] < 1100
    assert {ci.scripted_answer("lazy", t, ch, 0.0, rng) for t in ch for _ in range(50)} == {ch[0]}
    assert all(ci.scripted_answer("adversary", "blue", ch, 0.0, rng) == "orange" for _ in range(100))
    assert all(ci.scripted_answer("honest", "blue", ch, 0.0, rng) == "blue" for _ in range(100))


def test_pseudonyms_are_two_words_and_pass_the_store():
    from crowdlab.classroom.store import check_pseudonym

    for _ in range(50):
        name = ci.pseudonym()
        assert len(name.split()) == 2 and check_pseudonym(name) == name


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_read_item_set_with_images():
    csv = b"item_id,prompt,truth,image\na,<b>Is this a cat?</b> $x$,yes,pics/a.png\nb,**Dog?**,no,\nc,Bird?,,\n"
    items = ci.read_item_set(csv, ["yes", "no"], _zip({"pics/a.png": PNG}))
    assert [(i.item_id, i.truth) for i in items] == [("a", "yes"), ("b", "no"), ("c", None)]
    assert items[0].prompt == "<b>Is this a cat?</b> $x$" and items[1].image is None
    assert items[0].image.startswith(b"\x89PNG") and ci.small_image(items[0].image, "a.png", "z") == items[0].image


@pytest.mark.parametrize(
    "csv, zip_files, message",
    [
        (b"id,question\n", None, "no data rows"),
        (b"id,label\na,b\n", None, "no prompt column"),
        (b"item,prompt,truth\na,p,maybe\n", None, "not one of the answers"),
        (b"item,prompt\na,p\na,q\n", None, "appears twice"),
        (b"item,prompt\na,\n", None, "prompt is blank"),
        (b"item,prompt,image\na,p,x.png\n", None, "not in the zip"),
        (b"item,prompt,image\na,p,x.png\n", {"y.png": PNG}, "not in the zip"),
        (b"\x1f\x8b\x08\x00binary", None, "gzip"),
    ],
)
def test_read_item_set_refusals(csv, zip_files, message):
    with pytest.raises(DataError, match=message):
        ci.read_item_set(csv, ["yes", "no"], _zip(zip_files) if zip_files else None)


def test_images_zip_is_checked_before_it_is_expanded():
    big = _zip({"a.png": b"\0" * int(ci.MAX_IMAGE_MB * 1e6 + 10)})
    assert len(big) < 100_000  # it compresses: the declared size is what counts
    with pytest.raises(DataError, match="larger than"):
        ci.read_item_set(b"item,prompt,image\na,p,a.png\n", ["yes", "no"], big)
    with pytest.raises(DataError, match="not a zip"):
        ci.read_item_set(b"item,prompt\na,p\n", ["yes", "no"], b"not a zip")


def test_class_annotations_and_duplicate_pseudonyms():
    votes = [
        {"student_id": "s1", "pseudonym": "Quiet Otter", "role": "honest", "item_id": "a", "label": "yes"},
        {"student_id": "s2", "pseudonym": "Quiet Otter", "role": "spammer", "item_id": "a", "label": "no"},
        {"student_id": "s2", "pseudonym": "Quiet Otter", "role": "spammer", "item_id": "b", "label": "no"},
    ]
    items = [ci.Item("a", "p", truth="yes"), ci.Item("b", "q"), ci.Item("c", "never labelled", truth="no")]
    data, names = ci.class_annotations(votes, items, ["yes", "no"])
    assert names == {"s1": "Quiet Otter", "s2": "Quiet Otter 2"}
    assert data.n_obs == 3 and data.n_workers == 2 and data.class_names == ("yes", "no")
    assert dict(zip(data.item_names, data.gold.tolist(), strict=True)) == {"a": 0, "b": -1}
    with pytest.raises(DataError, match="Nobody has voted"):
        ci.class_annotations([], items, ["yes", "no"])


def _simulated_class(tmp_path, shares, n_students=30, level=0.2, seed=0):
    """A class of scripted students; the same class every run: the store deals roles' ties and item orders from a
    seeded source (issue 41: with the operating system's, 'DS >= majority vote' failed about 1 run in 6)."""
    store = ClassStore(str(tmp_path / "class.db"), limits=Limits(votes_per_window=1000), rng=random.Random(seed))
    items = ci.dot_items(16, level, seed=seed)
    s, key = store.create_session(items, ci.DOT_CHOICES, per_student=12, shares=shares)
    rng = np.random.default_rng(seed)
    by = {it.item_id: it for it in items}
    for k in range(n_students):
        st, tok = store.join(s.join_code, f"Student {k}", deal=ci.deal_role)
        for i in st.assigned:
            store.vote(tok, i, ci.scripted_answer(st.role, by[i].truth, ci.DOT_CHOICES, by[i].difficulty, rng))
    return store, s, key


def test_reveal_singles_out_spammers_and_adversaries(tmp_path):
    shares = {"honest": 0.5, "spammer": 0.3, "adversary": 0.1, "lazy": 0.1}
    store, s, key = _simulated_class(tmp_path, shares)
    rev = ci.reveal(store.votes(s.id, key), store.items(s.id), ci.DOT_CHOICES)
    roles = rev["roles"]
    assert {r: roles[r]["students"] for r in roles} == {"honest": 15, "spammer": 9, "adversary": 3, "lazy": 3}
    # MACE gives the spammers a higher probability of spamming, Dawid-Skene a lower accuracy, than the honest
    assert roles["spammer"]["mace_spamming"] > roles["honest"]["mace_spamming"] + 0.2
    assert roles["spammer"]["accuracy"] < roles["honest"]["accuracy"] - 0.2
    assert roles["adversary"]["accuracy"] < 0.3
    assert rev["class"]["ds_accuracy"] >= rev["class"]["mv_accuracy"] - 1e-9
    me = next(iter(rev["students"].values()))
    assert 0 <= me["lower"] <= me["accuracy"] <= me["upper"] <= 1 and me["n"] == 12
    store.close()


def test_a_seeded_store_deals_the_same_class_every_time(tmp_path):
    """The store's random source decides the roles' ties and each student's item order: seeded, two classes are
    one class (what makes the reveal test above reproducible); tokens stay the operating system's."""

    def deal(folder, seed):
        folder.mkdir()
        store = ClassStore(str(folder / "class.db"), rng=random.Random(seed))
        s, _ = store.create_session(ci.dot_items(8, 0.2, seed=0), ci.DOT_CHOICES, per_student=5, shares=SHARES)
        joined = [store.join(s.join_code, f"S{k}", deal=ci.deal_role) for k in range(12)]
        store.close()
        return [(st.role, st.assigned) for st, _ in joined], {tok for _, tok in joined}

    SHARES = {"honest": 0.4, "spammer": 0.3, "adversary": 0.3}
    a, tokens_a = deal(tmp_path / "a", 7)
    b, tokens_b = deal(tmp_path / "b", 7)
    c, _ = deal(tmp_path / "c", 8)
    assert a == b and a != c
    assert not tokens_a & tokens_b
    assert ci.deal_role({"honest": 1}, {"honest": 0.5, "spammer": 0.5}, rng=random.Random(0)) == "spammer"
