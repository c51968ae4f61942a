import numpy as np
import pytest

from . import reference as R


def test_softmax_rows_sum_to_one_and_are_shift_invariant():
    Z = np.random.default_rng(0).normal(size=(5, 7)) * 50
    S = R.softmax(Z)
    assert np.allclose(S.sum(1), 1, atol=1e-15)
    assert np.allclose(R.softmax(Z + 1000.0), S, atol=1e-15)


def test_hardmax_is_eq6_with_ties():
    Z = np.array([[1.0, 3.0, 3.0], [0.0, -1.0, -2.0]])
    assert R.hardmax(Z).tolist() == [[0, 1, 1], [1, 0, 0]]


def test_layer_forward_matches_eq1_by_hand():
    rng = np.random.default_rng(1)
    n, dP, dX, dV, dO, H = 4, 4, 3, 2, 5, 2
    layer = R.Layer(rng.normal(size=(H, dP, 3)), rng.normal(size=(H, dP, 3)), rng.normal(size=(H, dX, dV)),
                    rng.normal(size=(H * dV, dO)), ((rng.normal(size=(dO + dX, 6)), rng.normal(size=6)),
                                                    (rng.normal(size=(6, 2)), rng.normal(size=2))))
    P, X = rng.normal(size=(n, dP)), rng.normal(size=(n, dX))
    A = [R.softmax(P @ layer.W_Q[h] @ layer.W_K[h].T @ P.T) for h in range(H)]
    Z = np.concatenate([A[h] @ X @ layer.W_V[h] for h in range(H)], 1) @ layer.W_O
    Y = np.maximum(np.concatenate([Z, X], 1) @ layer.mlp[0][0] + layer.mlp[0][1], 0) @ layer.mlp[1][0] + layer.mlp[1][1]
    assert np.allclose(R.layer_forward(X, P, layer), Y, atol=1e-12)
    # batched input gives the same rows
    XB = np.stack([X, 2 * X])
    assert np.allclose(R.layer_forward(XB, P, layer)[0], Y, atol=1e-12)


def test_attention_ignores_the_input():
    rng = np.random.default_rng(2)
    layer = R.Layer(rng.normal(size=(1, 3, 3)), rng.normal(size=(1, 3, 3)), np.ones((1, 1, 1)), np.eye(1),
                    R.select_mlp(2, [0]))
    P = np.eye(3)
    A = R.attention(P, layer)
    Y1 = R.layer_forward(np.ones((3, 1)), P, layer)
    Y2 = R.layer_forward(np.array([[5.0], [0.0], [-7.0]]), P, layer)
    assert np.allclose(Y1[:, 0], A[0] @ np.ones(3)) and np.allclose(Y2[:, 0], A[0] @ np.array([5.0, 0, -7]))


def test_select_mlp_copies_columns_exactly():
    x = np.array([[1e9, -3.5, 0.0, 7.0]])
    assert R.mlp(x, R.select_mlp(4, [3, 0]))[0].tolist() == [7.0, 1e9]


def test_bad_mode_raises():
    layer = R.Layer(np.zeros((1, 2, 2)), np.zeros((1, 2, 2)), np.ones((1, 1, 1)), np.eye(1), R.select_mlp(2, [0]))
    with pytest.raises(ValueError, match="mode"):
        R.attention(np.eye(2), layer, "argmax")
