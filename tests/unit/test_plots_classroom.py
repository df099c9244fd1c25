"""The projector's figures (issue 39 §2-3): live bars in the answers' colours, the reveal as dots per role, the
class's predictions, one half-step of EM on the class's votes; names escaped where they enter a figure."""

from __future__ import annotations

import json

from crowdlab.classroom import items as ci
from crowdlab.plots import classroom as pc

HOSTILE = "<b>x</b>"


def test_vote_bars_stack_each_answer_in_its_colour_with_names_escaped():
    fig = pc.vote_bars(
        ["dots-01", HOSTILE], ci.DOT_CHOICES, {"dots-01": {"orange": 2, "blue": 1}, HOSTILE: {"blue": 3}}
    )
    assert fig.layout.barmode == "stack"
    by = {t.name: t for t in fig.data}
    assert by["orange"].marker.color == "#e69f00" and by["blue"].marker.color == "#0072b2"
    assert list(by["orange"].x) == [2, 0] and list(by["blue"].x) == [1, 3]
    assert HOSTILE not in json.dumps(fig.to_plotly_json()) and "&lt;b&gt;" in "".join(by["blue"].y)


def test_choice_colors_are_distinct_and_keep_dot_colours():
    assert ci.choice_colors(["blue", "orange"]) == {"blue": "#0072b2", "orange": "#e69f00"}
    colors = ci.choice_colors(["a", "b", "c", "d", "e", "f", "g", "h"])
    assert len(set(colors.values())) == 8


def test_reveal_dots_put_every_student_in_their_roles_trace():
    rev = {
        "students": {
            "s1": {"role": "honest", "true_accuracy": 0.9, "accuracy": 0.88, "mace_spamming": 0.1},
            "s2": {"role": "spammer", "true_accuracy": 0.5, "accuracy": 0.52, "mace_spamming": 0.8},
            "s3": {"role": "spammer", "true_accuracy": 0.4, "accuracy": 0.45, "mace_spamming": 0.9},
        },
        "class": {"mv_accuracy": 0.7, "ds_accuracy": 0.8, "mace_accuracy": 0.85},
    }
    fig = pc.reveal_dots(rev, {"s1": HOSTILE})
    ds = {t.name: t for t in fig.data if t.xaxis in (None, "x") and t.mode == "markers"}
    mace = {t.name: t for t in fig.data if t.xaxis == "x2"}
    assert list(ds["Spammer"].x) == [0.5, 0.4] and list(ds["Spammer"].y) == [0.52, 0.45]
    assert list(mace["Spammer"].x) == [0.8, 0.9] and ds["Honest"].marker.color == pc.ROLE_COLORS["honest"]
    bars = next(t for t in fig.data if t.type == "bar")
    assert list(bars.y) == [0.7, 0.8, 0.85]
    assert HOSTILE not in json.dumps(fig.to_plotly_json())


def test_prediction_bars_show_the_right_answer_only_after_the_step():
    q = {"options": ["up", "stay", "down"], "counts": {"up": 5, "stay": 2}, "answer": "stay", "predicted": 7}
    before = pc.prediction_bars(q, shown=False).data[0]
    after = pc.prediction_bars(q, shown=True).data[0]
    assert list(before.y) == [5, 2, 0] and len(set(before.marker.color)) == 1
    assert list(after.marker.color) == [pc.WRONG_COLOR, pc.RIGHT_COLOR, pc.WRONG_COLOR]
    assert "✓ stay" in list(after.x)


def test_step_picture_has_the_same_traces_at_every_half_step():
    a = pc.step_picture(["A", HOSTILE], [0.7, 0.6], ["i1", "i2"], [0.2, 0.9], "orange", "t")
    b = pc.step_picture(["A", HOSTILE], [0.8, 0.5], ["i1", "i2"], [0.1, 0.95], "orange", "t")
    assert [t.type for t in a.data] == [t.type for t in b.data] == ["bar", "bar"]
    assert list(b.data[0].x) == [0.8, 0.5] and HOSTILE not in json.dumps(a.to_plotly_json())


def test_prediction_bars_wrap_long_answers_and_keep_alike_names_apart():
    q = {"options": ["yes, it changes", "no, it stays"], "answer": "yes, it changes", "counts": {}}
    fig = pc.prediction_bars(q, shown=True, height=180)
    assert list(fig.data[0].x) == ["✓ yes, it<br>changes", "no, it stays"]
    assert fig.layout.xaxis.tickangle == 0 and fig.layout.height == 180
    alike = {"options": ["Quiet Otter of the long name A", "Quiet Otter of the long name B"], "counts": {}}
    assert len(set(pc.prediction_bars(alike, shown=False).data[0].x)) == 2
