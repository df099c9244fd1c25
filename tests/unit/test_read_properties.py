"""Property-based tests of every reader (Hypothesis): generated files either load to exactly the observations they
contain or raise DataError; never another exception, never a hang (a per-example deadline); writing data out and
reading it back gives it back. 500 examples per property, the whole file runs in well under two minutes.
"""

from __future__ import annotations

import csv
import io
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from crowdlab.errors import DataError
from crowdlab.io.data import Annotations, read_annotations, read_sequences, to_long_dataframe
from crowdlab.io.features import read_features
from crowdlab.io.graph import read_edges
from crowdlab.io.readers import INVISIBLE, MISSING_LOWER

EXAMPLES = settings(
    max_examples=500,
    deadline=2000,  # ms per example: a hang fails the test
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)

HEADERS = {
    "item": ("item", "task", "Question"),
    "worker": ("worker", "annotator", "Rater"),
    "label": ("label", "answer", "Response"),
}
RESERVED = {h.lower() for names in HEADERS.values() for h in names} | {"sequence", "position", "source", "target"}


def _ok_name(s: str) -> bool:
    return (
        s == s.strip(INVISIBLE)
        and s.lower() not in MISSING_LOWER
        and s.lower() not in RESERVED
        and not s.startswith(("{", "[", "<", '"'))
    )


# names as a person types them: letters, digits, punctuation and some non-ASCII, never blank
NAME = st.text(
    alphabet=st.sampled_from(list("abcdefghijkXYZ0123456789_-. ,;\t'\"é猫Ω")), min_size=1, max_size=8
).filter(_ok_name)
TEXT_NAME = NAME.filter(lambda s: not _is_number(s))


def _is_number(s: str) -> bool:
    try:
        float(s.replace(",", "."))
    except ValueError:
        return False
    return True


@st.composite
def observations(draw, min_rows: int = 1):
    n = draw(st.integers(min_rows, 30))
    items = draw(st.lists(NAME, min_size=1, max_size=8, unique=True))
    workers = draw(st.lists(NAME, min_size=1, max_size=5, unique=True))
    classes = draw(st.lists(TEXT_NAME, min_size=1, max_size=4, unique=True))
    return [
        (draw(st.sampled_from(items)), draw(st.sampled_from(workers)), draw(st.sampled_from(classes))) for _ in range(n)
    ]


@st.composite
def rendering(draw):
    """How a CSV is written: delimiter, quoting, line ending, encoding, header spelling, blank rows, padding."""
    return dict(
        delimiter=draw(st.sampled_from([",", ";", "\t"])),
        quoting=draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL])),
        newline=draw(st.sampled_from(["\n", "\r\n"])),
        encoding=draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"])),
        header=tuple(draw(st.sampled_from(HEADERS[k])) for k in ("item", "worker", "label")),
        blank_after=draw(st.sets(st.integers(0, 30), max_size=3)),
        pad=draw(st.sampled_from(["", " "])),
    )


def render(rows: list[tuple], how: dict, header: tuple[str, ...] | None = None) -> tuple[bytes, int]:
    """CSV bytes and the number of blank rows written."""
    out = io.StringIO()
    w = csv.writer(out, delimiter=how["delimiter"], quoting=how["quoting"], lineterminator=how["newline"])
    pad = how["pad"]
    w.writerow([f"{pad}{h}{pad}" if how["quoting"] == csv.QUOTE_ALL else h for h in (header or how["header"])])
    blanks = 0
    for k, row in enumerate(rows):
        w.writerow(row)
        if k in how["blank_after"]:
            out.write(how["newline"])
            blanks += 1
    return out.getvalue().encode(how["encoding"]), blanks


def triples(ann: Annotations) -> Counter:
    items = np.asarray(ann.item_names, dtype=object)[ann.item]
    workers = np.asarray(ann.worker_names, dtype=object)[ann.worker]
    labels = np.asarray(ann.class_names, dtype=object)[ann.label]
    return Counter(zip(items.tolist(), workers.tolist(), labels.tolist()))


# ---------------------------------------------------------------------------- long label files
@EXAMPLES
@given(rows=observations(), how=rendering())
def test_long_files_load_exactly_what_they_contain(rows, how):
    data, blanks = render(rows, how)
    n_classes = len({r[2] for r in rows})
    try:
        ann = read_annotations(data)
    except DataError as exc:
        assert n_classes < 2, str(exc)  # the only refusal a clean file can meet
        return
    assert n_classes >= 2
    assert triples(ann) == Counter(rows)
    assert len(ann.notes) == (1 if blanks else 0), ann.notes
    if blanks:
        assert "empty row" in ann.notes[0]


@EXAMPLES
@given(rows=observations(), how=rendering(), cuts=st.data())
def test_damaged_files_load_or_raise_data_error(rows, how, cuts):
    """Random damage (inserted bytes, NULs, quotes, delimiters, truncation): DataError or a sane load."""
    data, _ = render(rows, how)
    data = bytearray(data)
    for _ in range(cuts.draw(st.integers(1, 4))):
        pos = cuts.draw(st.integers(0, len(data)))
        junk = cuts.draw(
            st.sampled_from([b"\x00", b'"', b",", b";", b"\n", b"\xff", b"\xe9", b"None", b"\xef\xbb\xbf", b"1e308"])
        )
        data[pos:pos] = junk
    if cuts.draw(st.booleans()):
        data = data[: cuts.draw(st.integers(0, len(data)))]
    fmt = cuts.draw(st.sampled_from(["auto", "long", "wide"]))
    kind = cuts.draw(st.sampled_from(["auto", "classes", "continuous"]))
    try:
        ann = read_annotations(bytes(data), fmt=fmt, kind=kind)
    except DataError:
        return
    assert 0 < ann.n_obs <= bytes(data).count(b"\n") * max(len(ann.worker_names), 1) + 1
    if ann.is_continuous:
        assert np.isfinite(ann.value).all() and (np.abs(ann.value) <= 1e12).all()


PLAIN = st.text(alphabet=st.sampled_from(list("abcdefghijkXYZ0123456789_-. 'é猫Ω")), min_size=1, max_size=8).filter(
    _ok_name
)


@st.composite
def plain_observations(draw):
    """Names without delimiters or quotes: a wide file's header is then unambiguous to any delimiter sniffer."""
    n = draw(st.integers(1, 30))
    items = draw(st.lists(PLAIN, min_size=1, max_size=8, unique=True))
    workers = draw(st.lists(PLAIN.filter(lambda s: s != "item"), min_size=1, max_size=5, unique=True))
    classes = draw(st.lists(PLAIN.filter(lambda s: not _is_number(s)), min_size=1, max_size=4, unique=True))
    return [
        (draw(st.sampled_from(items)), draw(st.sampled_from(workers)), draw(st.sampled_from(classes))) for _ in range(n)
    ]


@EXAMPLES
@given(rows=plain_observations(), how=rendering())
def test_wide_files_load_exactly_what_they_contain(rows, how):
    """The same observations written as a wide table (one row per item, one column per worker)."""
    cells: dict = {}
    for item, worker, label in rows:
        cells[(item, worker)] = label  # a wide table holds one label per (item, worker)
    workers = sorted({w for _, w in cells})
    items = sorted({i for i, _ in cells})
    table = [[i] + [cells.get((i, w), "") for w in workers] for i in items]
    data, _ = render(table, how, header=("item", *workers))
    expected = Counter((i, w, lab) for (i, w), lab in cells.items())
    try:
        ann = read_annotations(data, fmt="wide")
    except DataError as exc:
        assert len(set(cells.values())) < 2, str(exc)
        return
    assert triples(ann) == expected


# ---------------------------------------------------------------------------- round trips
@EXAMPLES
@given(rows=observations())
def test_annotations_round_trip(rows):
    assume(len({r[2] for r in rows}) >= 2)
    items, workers, labels = zip(*rows)
    ann = Annotations.from_labels(list(items), list(workers), list(labels))
    assume(len(ann.item_names) == len(set(items)))  # from_labels merges ids that are equal numbers
    assume(len(ann.worker_names) == len(set(workers)))
    back = read_annotations(to_long_dataframe(ann).to_csv(index=False).encode())
    assert back.item_names == ann.item_names and back.worker_names == ann.worker_names
    assert back.class_names == ann.class_names
    np.testing.assert_array_equal(back.item, ann.item)
    np.testing.assert_array_equal(back.worker, ann.worker)
    np.testing.assert_array_equal(back.label, ann.label)


@EXAMPLES
@given(
    rows=observations(),
    values=st.lists(st.floats(-1e12, 1e12, allow_nan=False, allow_subnormal=False), min_size=30, max_size=30),
)
def test_scores_round_trip(rows, values):
    items, workers, _ = zip(*rows)
    frame = pd.DataFrame({"item": items, "worker": workers, "score": values[: len(rows)]})
    ann = read_annotations(frame.to_csv(index=False).encode())
    assert ann.is_continuous
    back = read_annotations(to_long_dataframe(ann).to_csv(index=False).encode(), kind="continuous")
    np.testing.assert_array_equal(back.value, ann.value)
    got = sorted(zip(np.asarray(ann.item_names)[ann.item], np.asarray(ann.worker_names)[ann.worker], ann.value))
    assert got == sorted(zip(items, workers, values[: len(rows)]))


# ---------------------------------------------------------------------------- sequences
@st.composite
def sequences(draw):
    names = draw(st.lists(TEXT_NAME.filter(lambda s: ":" not in s), min_size=1, max_size=4, unique=True))
    tags = draw(st.lists(TEXT_NAME, min_size=2, max_size=4, unique=True))
    workers = draw(st.lists(NAME, min_size=1, max_size=3, unique=True))
    rows = []
    for s in names:
        start = draw(st.integers(0, 3))
        for p in range(start, start + draw(st.integers(1, 6))):
            for w in draw(st.sets(st.sampled_from(workers), min_size=1)):
                rows.append((s, p, w, draw(st.sampled_from(tags))))
    return rows


@EXAMPLES
@given(rows=sequences(), how=rendering())
def test_sequence_files_load_exactly_what_they_contain(rows, how):
    data, _ = render(rows, how, header=("sequence", "position", "worker", "label"))
    try:
        ann = read_sequences(data)
    except DataError as exc:
        assert len({r[3] for r in rows}) < 2, str(exc)
        return
    got = Counter(
        zip(
            np.asarray(ann.item_names, dtype=object)[ann.item].tolist(),
            np.asarray(ann.worker_names, dtype=object)[ann.worker].tolist(),
            np.asarray(ann.class_names, dtype=object)[ann.label].tolist(),
        )
    )
    assert got == Counter((f"{s}:{p}", w, lab) for s, p, w, lab in rows)
    assert ann.n_sequences == len({r[0] for r in rows})


@EXAMPLES
@given(rows=sequences(), how=rendering(), gap=st.integers(0, 10**12))
def test_sequence_positions_of_any_size_load_or_raise(rows, how, gap):
    rows = rows + [(rows[0][0], rows[-1][1] + gap, rows[0][2], rows[0][3])]
    data, _ = render(rows, how, header=("sequence", "position", "worker", "label"))
    try:
        ann = read_sequences(data)
    except DataError as exc:
        assert gap > 1000 or len({r[3] for r in rows}) < 2, str(exc)
        return
    assert ann.n_items <= 10**7


# ---------------------------------------------------------------------------- edges and features
BASE = Annotations.from_labels([f"n{k}" for k in range(8)] * 2, ["a"] * 8 + ["b"] * 8, ["x", "y"] * 8)


@EXAMPLES
@given(
    edges=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 7), st.floats(1e-3, 1e6, allow_nan=False)), min_size=1, max_size=20
    ),
    how=rendering(),
    header=st.booleans(),
)
def test_edge_lists_load_exactly_what_they_contain(edges, how, header):
    rows = [(f"n{u}", f"n{v}", repr(w)) for u, v, w in edges]
    if header:
        data, _ = render(rows, how, header=("source", "target", "weight"))
    else:
        data, _ = render(rows[1:], how, header=rows[0])
    out = read_edges(data, BASE)
    expected = np.zeros((8, 8))
    for u, v, w in edges:
        if u != v and (header or True):
            expected[u, v] = expected[v, u] = max(expected[u, v], w)
    if not header:
        expected_nohdr = np.zeros((8, 8))
        for u, v, _ in edges:  # without a header the weight column is not named: weights are 1
            if u != v:
                expected_nohdr[u, v] = expected_nohdr[v, u] = 1.0
        expected = expected_nohdr
    np.testing.assert_allclose(out.graph.toarray(), expected)


@EXAMPLES
@given(
    X=st.lists(
        st.lists(st.floats(-1e12, 1e12, allow_nan=False, allow_subnormal=False), min_size=2, max_size=2),
        min_size=8,
        max_size=8,
    ),
    how=rendering(),
    order=st.permutations(range(8)),
)
def test_features_load_exactly_what_they_contain(X, how, order):
    rows = [(f"n{k}", repr(X[k][0]), repr(X[k][1])) for k in order]
    how = {**how, "delimiter": "," if how["delimiter"] == ";" else how["delimiter"]}  # ';' allows decimal commas
    data, _ = render(rows, how, header=("item", "f1", "f2"))
    feats = read_features(data, BASE, add_intercept=False)
    np.testing.assert_array_equal(feats.X, np.asarray(X))


@pytest.mark.parametrize("junk", [b"\x00" * 10, b"\xff\xfe\x00\x00", b"PK\x03\x04", b"\x1f\x8b\x08", b"{}"])
def test_binary_starts_are_data_errors_for_every_reader(junk):
    for read in (
        lambda d: read_annotations(d),
        lambda d: read_sequences(d),
        lambda d: read_edges(d, BASE),
        lambda d: read_features(d, BASE),
    ):
        with pytest.raises(DataError):
            read(junk + b"item,worker,label\n")
