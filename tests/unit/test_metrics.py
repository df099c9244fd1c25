"""Metrics on tiny hand-computed cases (Traganitis & Giannakis eqs. 37 and 38, log-loss, Pearson, edge cases)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdlab.io.metrics import (
    accuracy,
    confusion_error,
    confusion_matrix,
    log_loss,
    macro_f,
    pearson,
    precision_recall_f,
    soft_accuracy,
)

# ------------------------------------------------------------ accuracy


def test_accuracy_uses_only_gold_items():
    pred = np.array([0, 1, 1, 2])
    gold = np.array([0, 1, 2, -1])  # last item has no gold: its (wrong-looking) prediction is ignored
    assert accuracy(pred, gold) == pytest.approx(2 / 3)


def test_accuracy_without_gold_is_nan():
    assert math.isnan(accuracy(np.array([0, 1]), np.array([-1, -1])))


def test_accuracy_shape_mismatch_raises():
    with pytest.raises(ValueError, match="one entry per item"):
        accuracy(np.array([0, 1, 2]), np.array([0, 1]))


def test_soft_accuracy_is_mean_posterior_on_gold():
    q = np.array([[0.5, 0.5], [0.2, 0.8], [1.0, 0.0]])
    gold = np.array([0, 1, -1])
    assert soft_accuracy(q, gold) == pytest.approx((0.5 + 0.8) / 2)


def test_soft_accuracy_splits_ties_of_a_majority_vote():
    votes = np.array([[2, 2, 0], [3, 1, 0], [1, 1, 1]], dtype=float)
    top = votes == votes.max(axis=1, keepdims=True)
    q = top / top.sum(axis=1, keepdims=True)
    gold = np.array([1, 0, 2])
    assert soft_accuracy(q, gold) == pytest.approx((0.5 + 1.0 + 1 / 3) / 3)
    assert math.isnan(soft_accuracy(q, np.full(3, -1)))


# ------------------------------------------------------------ confusion matrix


def test_confusion_matrix_rows_predicted_columns_true():
    pred = np.array([0, 0, 1, 2, 2, 1])
    gold = np.array([0, 1, 1, 2, 0, -1])
    C = confusion_matrix(pred, gold, 3)
    expected = np.array(
        [
            [1, 1, 0],  # predicted 0: one true 0, one true 1
            [0, 1, 0],
            [1, 0, 1],  # predicted 2: one true 0, one true 2
        ]
    )
    np.testing.assert_array_equal(C, expected)
    assert C.sum() == 5  # the item without gold is not counted


def test_confusion_matrix_rejects_out_of_range_codes():
    with pytest.raises(ValueError, match="pred codes"):
        confusion_matrix(np.array([0, 3]), np.array([0, 1]), 3)


# ------------------------------------------------------------ eq. (37)


def test_precision_recall_f_hand_computed():
    gold = np.array([0, 0, 0, 1, 1, 2])
    pred = np.array([0, 0, 1, 1, 2, 2])
    prf = precision_recall_f(pred, gold, 3)
    np.testing.assert_allclose(prf.precision, [1.0, 0.5, 0.5])
    np.testing.assert_allclose(prf.recall, [2 / 3, 0.5, 1.0])
    np.testing.assert_allclose(prf.f, [0.8, 0.5, 2 / 3])
    # eq. (37) written out: (2/K) sum_k P_k R_k / (P_k + R_k)
    eq37 = (2 / 3) * ((2 / 3) / (5 / 3) + 0.25 / 1.0 + 0.5 / 1.5)
    assert prf.macro_f == pytest.approx(eq37)
    assert prf.macro_f == pytest.approx(0.6555555555555556)
    assert macro_f(pred, gold, 3) == pytest.approx(eq37)


def test_precision_recall_f_unpacks_as_four_values():
    p, r, f, m = precision_recall_f(np.array([0, 1]), np.array([0, 1]), 2)
    np.testing.assert_allclose(p, [1, 1])
    np.testing.assert_allclose(r, [1, 1])
    np.testing.assert_allclose(f, [1, 1])
    assert m == 1.0


def test_class_with_zero_precision_and_recall_contributes_zero():
    prf = precision_recall_f(np.array([1, 0]), np.array([0, 1]), 2)
    np.testing.assert_array_equal(prf.f, [0.0, 0.0])
    assert prf.macro_f == 0.0


def test_class_absent_from_truth_and_prediction_is_left_out():
    prf = precision_recall_f(np.array([0, 1]), np.array([0, 1]), 3)
    assert math.isnan(prf.precision[2]) and math.isnan(prf.recall[2]) and math.isnan(prf.f[2])
    assert prf.macro_f == 1.0  # K in eq. (37) counts only the two classes that occur


def test_class_predicted_but_never_true_counts_as_zero():
    prf = precision_recall_f(np.array([0, 2]), np.array([0, 0]), 3)
    np.testing.assert_allclose(prf.precision[[0, 2]], [1.0, 0.0])
    np.testing.assert_allclose(prf.recall[[0, 2]], [0.5, 0.0])
    assert math.isnan(prf.f[1])
    assert prf.macro_f == pytest.approx((2 / 3 + 0.0) / 2)


def test_precision_recall_f_without_gold_is_nan():
    prf = precision_recall_f(np.array([0, 1]), np.array([-1, -1]), 2)
    assert np.isnan(prf.f).all() and math.isnan(prf.macro_f)
    assert math.isnan(macro_f(np.array([0]), np.array([-1]), 2))


# ------------------------------------------------------------ eq. (38)


def test_confusion_error_is_induced_one_norm():
    G = np.eye(2)
    H = np.array([[0.9, 0.2], [0.1, 0.8]])
    # G - H = [[.1, -.2], [-.1, .2]]: column sums 0.2 and 0.4 -> induced 1-norm 0.4
    # (the entrywise sum would be 0.6, the max row sum 0.3)
    assert confusion_error(G, H) == pytest.approx(0.4)


def test_confusion_error_averages_over_workers():
    G = np.stack([np.eye(2), np.full((2, 2), 0.5)])
    H = np.stack([np.array([[0.9, 0.2], [0.1, 0.8]]), np.full((2, 2), 0.5)])
    assert confusion_error(G, H) == pytest.approx((0.4 + 0.0) / 2)
    assert confusion_error(G, G) == 0.0


def test_confusion_error_maximal_for_swapped_classes():
    G = np.eye(3)
    H = np.eye(3)[[1, 2, 0]]
    assert confusion_error(G, H) == pytest.approx(2.0)


def test_confusion_error_divides_by_norm_of_true_matrix():
    G = np.array([[2.0, 0.0], [0.0, 1.0]])  # ||G||_1 = 2
    H = np.eye(2)  # ||G - H||_1 = 1
    assert confusion_error(G, H) == pytest.approx(0.5)


def test_confusion_error_shape_mismatch_raises():
    with pytest.raises(ValueError, match="differ in shape"):
        confusion_error(np.eye(2), np.eye(3))


# ------------------------------------------------------------ log-loss


def test_log_loss_hand_computed_and_clipped():
    q = np.array([[0.5, 0.5], [0.2, 0.8], [0.0, 1.0], [0.3, 0.7]])
    gold = np.array([0, 1, 0, -1])
    expected = -(math.log(0.5) + math.log(0.8) + math.log(1e-15)) / 3
    assert log_loss(q, gold) == pytest.approx(expected)
    assert math.isfinite(log_loss(q, gold))
    assert log_loss(q, gold, eps=1e-3) == pytest.approx(-(math.log(0.5) + math.log(0.8) + math.log(1e-3)) / 3)


def test_log_loss_perfect_and_no_gold():
    q = np.eye(3)
    assert log_loss(q, np.array([0, 1, 2])) == 0.0
    assert math.isnan(log_loss(q, np.full(3, -1)))


# ------------------------------------------------------------ pearson


def test_pearson_hand_computed():
    assert pearson(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])) == pytest.approx(0.5)
    assert pearson(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)


def test_pearson_ignores_nan_gold():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([2.0, 4.0, 6.0, np.nan])
    assert pearson(x, y) == pytest.approx(1.0)


def test_pearson_degenerate_is_nan():
    assert math.isnan(pearson(np.array([1.0, 2.0]), np.array([np.nan, 1.0])))
    assert math.isnan(pearson(np.array([1.0, 2.0, 3.0]), np.array([5.0, 5.0, 5.0])))
