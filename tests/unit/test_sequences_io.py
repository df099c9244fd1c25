"""Reading crowd-labelled sequences: layout, gaps, gold, and every error path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crowdlab.errors import DataError
from crowdlab.io.data import read_sequences

DATA = Path(__file__).resolve().parents[1] / "data"


def test_layout_gaps_and_gold():
    a = read_sequences(DATA / "seq_small.csv", gold=DATA / "seq_gold.csv")
    assert a.sequence_names == ("s1", "s2")
    assert list(a.sequence_starts) == [0, 4, 6]  # s1 has positions 0..3 (2 unlabelled), s2 0..1
    assert a.item_names == ("s1:0", "s1:1", "s1:2", "s1:3", "s2:0", "s2:1")
    assert a.labels_per_item.tolist() == [1, 2, 0, 1, 1, 1]
    assert any("1 position inside sequences had no labels" in n for n in a.notes)
    names = np.asarray(a.class_names)
    assert list(names[a.gold[a.gold >= 0]]) == ["O", "B-PER", "B-LOC"]
    assert a.gold[2] == -1


def test_gold_for_unknown_positions_is_an_error():
    with pytest.raises(DataError, match="no crowd labels") as e:
        read_sequences(DATA / "seq_small.csv", gold=DATA / "seq_gold_unknown.csv")
    assert e.value.row == 3 and "seq_gold_unknown.csv" in str(e.value)


def test_missing_position_column():
    with pytest.raises(DataError, match="no position column") as e:
        read_sequences(DATA / "seq_no_position.csv")
    assert "position, pos" in str(e.value)


def test_bad_positions_list_rows():
    with pytest.raises(DataError, match="not a whole number") as e:
        read_sequences(DATA / "seq_bad_position.csv")
    assert "rows 3, 4" in str(e.value)


def test_conll_sample_reads_with_gold():
    from crowdlab.io.samples import sample_paths

    labels, gold = sample_paths("ner")
    a = read_sequences(labels, gold=gold)
    assert a.is_sequential and a.n_classes == 9 and a.has_gold
    assert a.n_sequences == int(np.diff(a.sequence_starts).size)
    assert (a.labels_per_item > 0).all()
