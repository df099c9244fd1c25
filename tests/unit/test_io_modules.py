"""Issue 41, section 5: ``crowdlab/io/data.py`` (2,178 lines of several jobs) was split by job into
``crowdlab/io/{annotations,columns,layout,values,soft,abstain,gold,tables,sequences}.py``. ``crowdlab.io.data`` stays
the reading front door: every name it held before the split still imports from it, and is the very object of its
new home (so ``isinstance`` checks and monkeypatches of the new home see the same thing)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import crowdlab.io.data as data

NEW_MODULES = ("annotations", "columns", "layout", "values", "soft", "abstain", "gold", "tables", "sequences")

# every name crowdlab/io/data.py defined or imported from crowdlab before the split (module-level, in file order)
OLD_NAMES = """
DataError lazy get_limits limits_how _SHOW UPLOADED Column Source check_where column_listing limit_error
missing_values no_worker_columns_error read_table spell to_floats _Table _count _listing _load_source
_rows_error _rows_phrase _names Annotations _encode _fmt_number ITEM_ALIASES WORKER_ALIASES LABEL_ALIASES
SCORE_ALIASES GOLD_ALIASES _GENERIC_STEMS _read_table _norm ANSWER_PREFIX _answer_column _find
_missing_columns_error _score_column _long_columns _ROLE_WORDS _words _similar_columns ColumnsUnclear
_named_columns _roles_note _Shape _shape _choose_layout _unclear_why _looks_long _ignored_note _as_numbers
_string_order _name_order _number_key _encode_col _encode_names _to_float _number_hint _checked_scores
_required_col _required_ids _resolve_kind _check_choice _as_col _check_sizes _class_annotations soft_votes
CONFIDENCE_ALIASES WEIGHT_ALIASES soft_vote_column soft_votes_elsewhere ABSTAIN_TOKENS _abstain_note
with_abstentions _soft_columns _soft_from_table _soft_numbers _merge_note _continuous_annotations _class_lookup
_gold_classes _check_gold_conflicts _attach_gold GOLD_CHECK_MIN _below_chance_note _check_labels_present
infinite_labels INFINITE_HINT _check_labels_finite _long_from_table _long_read _ROLE_NAMES _header_as_data_note
_wide_worker_columns _wide_present _wide_from_table _wide_read _wide_continuous _default_name _LONG_NEEDS
read_long_csv read_wide_csv read_annotations _ordinal _responses _rereadable _gold_says_scores _gold_columns
read_gold _KNOWN_WORDS _known_words known_error no_known_error read_known to_long_dataframe to_gold_dataframe
SEQUENCE_ALIASES POSITION_ALIASES _SEQ_NEEDS _positions _sequence_keys _check_layout _sequence_items
read_sequences read_sequence_gold
""".split()

STILL_IN_DATA = {"read_annotations", "_ordinal", "_rereadable"}  # the front door's own code


def test_every_name_of_the_old_module_still_imports_from_crowdlab_io_data():
    missing = [n for n in OLD_NAMES if not hasattr(data, n)]
    assert not missing, missing
    assert len(OLD_NAMES) == len(set(OLD_NAMES)) == 127
    for name in data.__all__:  # the public face is unchanged
        assert name in OLD_NAMES


@pytest.mark.parametrize("module", NEW_MODULES)
def test_each_function_and_class_is_the_object_of_its_one_home(module):
    mod = importlib.import_module(f"crowdlab.io.{module}")
    own = [n for n, obj in vars(mod).items() if inspect.isfunction(obj) or inspect.isclass(obj)]
    own = [n for n in own if getattr(mod, n).__module__ == mod.__name__]
    assert own, module
    for name in own:
        if name in OLD_NAMES:
            assert getattr(data, name) is getattr(mod, name), (module, name)
    assert not any(n in STILL_IN_DATA for n in own)


def test_the_front_door_defines_only_the_reading_it_chooses():
    defined = {
        n
        for n, obj in vars(data).items()
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == data.__name__
    }
    assert defined == STILL_IN_DATA
    homes = {getattr(data, n).__module__ for n in OLD_NAMES if inspect.isfunction(getattr(data, n))}
    assert {f"crowdlab.io.{m}" for m in NEW_MODULES} <= homes


def test_the_data_model_needs_nothing_of_the_reading_path():
    """``crowdlab.io.annotations`` is what the models import: it needs numpy and the errors, not the readers."""
    tree = ast.parse(Path(inspect.getfile(importlib.import_module("crowdlab.io.annotations"))).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module.startswith("crowdlab")}
    assert imported == {"crowdlab.errors", "crowdlab.io._lazy"}
