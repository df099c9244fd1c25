"""Limits, the where-context of messages, and the continuous-score auto-detection on the classroom's datasets
(Snow et al. 2008: affect ratings -100..100 and word-similarity ratings 0..10 with averaged gold)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crowdlab.errors import DataError
from crowdlab.io import limits
from crowdlab.io.data import read_annotations, read_sequences
from crowdlab.io.readers import count, spell

DATASETS = Path("/work/shared/datasets")
SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
needs_shared = pytest.mark.skipif(not (DATASETS / "snow2008_affect").is_dir(), reason="shared datasets not here")


def _affect_dir() -> Path:
    return DATASETS / "snow2008_affect" if (DATASETS / "snow2008_affect").is_dir() else SAMPLE / "snow2008_affect"


def test_affect_ratings_are_read_as_scores_with_a_note():
    folder = _affect_dir()
    ann = read_annotations(folder / "labels.csv", gold=folder / "gold.csv")
    assert ann.is_continuous and ann.n_classes == 0
    assert ann.n_obs == 7000 and ann.n_items == 700 and ann.n_workers == 38
    assert int(ann.gold_mask.sum()) == 700
    (note,) = [n for n in ann.notes if "continuous scores" in n]
    assert "distinct numbers (more than 20)" in note and 'kind="classes"' in note
    assert "classs" not in " ".join(ann.notes)
    # the override: classes, as before, with a correct plural
    classes = read_annotations(folder / "labels.csv", kind="classes")
    assert not classes.is_continuous and classes.n_classes > 20
    assert not any("continuous" in n for n in classes.notes)


@needs_shared
def test_wordsim_ratings_with_averaged_gold_are_scores():
    folder = DATASETS / "snow2008_wordsim"
    labels_only = read_annotations(folder / "labels.csv")
    assert not labels_only.is_continuous  # 0..10: 11 distinct values, classes without more evidence
    ann = read_annotations(folder / "labels.csv", gold=folder / "gold.csv")
    assert ann.is_continuous and int(ann.gold_mask.sum()) == 30
    assert any("gold file holds numbers that are not among them" in n for n in ann.notes)
    assert np.isfinite(ann.value).all()
    with pytest.raises(DataError, match="gold classes never occur"):
        read_annotations(folder / "labels.csv", gold=folder / "gold.csv", kind="classes")


def test_few_distinct_numbers_stay_classes():
    text = "item,worker,label\n" + "".join(f"i{k},w{k % 4},{k % 5}\n" for k in range(100))
    ann = read_annotations(text.encode())
    assert not ann.is_continuous and ann.class_names == ("0", "1", "2", "3", "4") and not ann.notes


def test_threshold_is_a_limit():
    text = "item,worker,label\n" + "".join(f"i{k},w{k % 4},{k % 8}\n" for k in range(100))
    with limits.override(continuous_threshold=5):
        assert read_annotations(text.encode()).is_continuous
    assert not read_annotations(text.encode()).is_continuous


@pytest.mark.parametrize(
    "where, spelled",
    [("python", 'kind="continuous"'), ("cli", "--kind continuous"), ("app", "'Kind of labels' = continuous")],
)
def test_hints_use_the_spelling_of_where_the_user_is(where, spelled):
    text = "item,worker,label\n" + "".join(f"i{k},w{k % 4},c{k}\n" for k in range(150))
    with limits.override(max_classes=100), pytest.raises(DataError) as err:
        read_annotations(text.encode(), where=where)
    assert spelled in str(err.value) and "150 classes" in str(err.value)
    assert spell("fmt", "wide", where) in {'fmt="wide"', "--format wide", "'Format' = wide"}


def test_limits_raise_with_the_limit_named_and_how_to_change_it():
    text = b"item,worker,label\na,w1,x\nb,w2,y\nc,w3,x\n"
    with limits.override(max_workers=2), pytest.raises(DataError, match="3 workers.*max_workers") as err:
        read_annotations(text)
    assert "set_limits(max_workers=" in str(err.value) and "CROWDLAB_MAX_WORKERS" in str(err.value)
    with limits.override(max_file_mb=0.00001), pytest.raises(DataError, match="max_file_mb"):
        read_annotations(text)
    with limits.override(max_items=2), pytest.raises(DataError, match="max_items"):
        read_annotations(text)


def test_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv("CROWDLAB_MAX_CLASSES", "7")
    monkeypatch.setenv("CROWDLAB_MAX_ABS_VALUE", "5.5")
    lim = limits._from_env()
    assert lim.max_classes == 7 and lim.max_abs_value == 5.5
    monkeypatch.setenv("CROWDLAB_MAX_ROWS", "many")
    with pytest.raises(ValueError, match="CROWDLAB_MAX_ROWS"):
        limits._from_env()


def test_a_gap_is_refused_before_anything_is_allocated():
    text = "sequence,position,worker,label\ns,0,w,A\ns,1,w,B\ns,1000000000,w,A\n"
    with pytest.raises(DataError) as err:
        read_sequences(text.encode(), where="cli")
    assert (
        err.value.row == 4 and err.value.column == "position" and "999,999,998 unlabelled positions" in str(err.value)
    )


def test_plurals():
    assert count(54, "class") == "54 classes" and count(1, "class") == "1 class" and count(2, "row") == "2 rows"


@pytest.mark.parametrize(
    "where, spelled",
    [("python", "read_sequences"), ("cli", "--format sequences"), ("app", "Sequences page")],
)
def test_a_sequence_file_read_as_labels_points_to_the_sequence_reader(where, spelled):
    text = b"sequence,position,worker,tag\ns,0,w,A\ns,1,w,B\n"
    with pytest.raises(DataError) as err:
        read_annotations(text, where=where)
    assert spelled in str(err.value)
