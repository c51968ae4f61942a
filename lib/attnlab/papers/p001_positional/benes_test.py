import itertools

import numpy as np
import pytest

from . import benes as B


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_def_a4_counts(k):
    n = 1 << k
    E = B.edges(k)
    assert len(E) == 2 * k - 1  # 2k layers, so 2k − 1 stages of edges
    for stage in E:
        assert len(stage) == 2 * n  # "2n directed edges between two sequential layers"
        out = np.bincount([i for i, _ in stage], minlength=n)
        inn = np.bincount([j for _, j in stage], minlength=n)
        assert np.all(out == 2) and np.all(inn == 2)


def test_hamming_neighbours_msb_first():
    assert B.hamming_neighbours(0b000, 0b100, 1, 3) and B.hamming_neighbours(0b101, 0b100, 3, 3)
    assert not B.hamming_neighbours(0b000, 0b011, 2, 3) and not B.hamming_neighbours(5, 5, 1, 3)
    assert [B.stage_bit(3, l) for l in range(1, 6)] == [1, 2, 3, 2, 1]


@pytest.mark.parametrize("k", [1, 2])
def test_every_permutation_is_routed_node_disjointly(k):
    for perm in itertools.permutations(range(1 << k)):
        assert B.check_paths(B.route_permutation(np.array(perm), k), k)


def test_random_permutations_of_8_and_16_are_routed():
    rng = np.random.default_rng(0)
    for k in (3, 4):
        for _ in range(200):
            assert B.check_paths(B.route_permutation(rng.permutation(1 << k), k), k)


def test_check_paths_rejects_a_collision_and_a_non_edge():
    paths = B.route_permutation(np.arange(4), 2)
    bad = paths.copy(); bad[0, 1] = bad[1, 1]
    assert not B.check_paths(bad, 2)
    bad = paths.copy(); bad[:, 1] = bad[:, 1] ^ 3  # flips two bits in one step
    assert not B.check_paths(bad, 2)


def test_lemma_b1_exhaustive_p4_and_loads():
    rng = np.random.default_rng(1)
    for units in (1, 2):
        s = 2 * units
        for C in B.all_count_matrices(2, units):
            send = B.messages(C, rng)
            tr = B.route_mpc_round(send, 2, s)
            assert tr.received == B.expected_received(send)  # every tuple exactly once, at its destination
            assert max(tr.max_received) <= s and max(tr.max_half) <= s  # ≤ s received, memory ≤ 2s
            assert tr.steps == 3


def test_lemma_b1_random_p8_p16():
    rng = np.random.default_rng(2)
    for k in (3, 4):
        s = 3 << (k - 1)
        for _ in range(30):
            send = B.messages(B.random_counts(rng, k, s), rng)
            tr = B.route_mpc_round(send, k, s)
            assert tr.received == B.expected_received(send)
            assert max(tr.max_received) <= s and max(tr.max_half) <= s


def test_oracle_is_data_agnostic():
    rng = np.random.default_rng(3)
    traces = [B.route_mpc_round(B.messages(B.random_counts(rng, 3, 8), rng), 3, 8) for _ in range(5)]
    assert all(t.oracle == traces[0].oracle for t in traces)


def test_without_assumption_2_a_machine_can_receive_more_than_s():
    rng = np.random.default_rng(4)
    worst = max(max(B.route_mpc_round(B.messages(C, rng), 2, 2).max_received)
                for C in B.all_count_matrices(2, 2, unit=1))
    assert worst > 2


def test_route_permutation_rejects_non_permutations():
    with pytest.raises(ValueError):
        B.route_permutation(np.array([0, 0, 1, 2]), 2)
