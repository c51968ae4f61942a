import itertools

import numpy as np
import pytest

from . import pcoc
from .reference import forward


def _run(prog, mem, mode="hardmax", variant="corrected", T=30.0):
    P, layers = pcoc.compile_program(prog, T=T, variant=variant)
    return pcoc.decode(forward(pcoc.encode(mem), P, layers, mode)), layers


def _mem(x, s):
    return np.repeat(np.asarray(x, float)[..., None], s, axis=2)


@pytest.mark.parametrize("N", [2, 3, 5, 8])
def test_prefix_programs_simulate_and_compile_exactly(N):
    x = np.array(list(itertools.permutations(range(N))))[:200].astype(float) - N / 2
    for op, ref in (("sum", np.cumsum(x, 1)), ("min", np.minimum.accumulate(x, 1))):
        prog = pcoc.prefix_program(N, op)
        sim = pcoc.simulate(prog, _mem(x, 2))
        assert np.array_equal(sim[:, :, 0], ref)
        out, layers = _run(prog, _mem(x, 2))
        assert np.abs(out - sim).max() < 1e-9
        assert len(layers) == prog.R and all(l.heads == prog.s for l in layers)  # Lemma B.2: R layers, s heads
        assert layers[0].W_Q.shape[1] == N + 1  # n = N + 1 nodes


def test_oets_program_uses_machine_specific_functions():
    for N in range(2, 7):
        x = np.array(list(itertools.permutations(range(N))), float)
        prog = pcoc.oets_program(N)
        sim = pcoc.simulate(prog, _mem(x, 2))
        assert np.array_equal(sim[:, :, 0], np.sort(x, 1))
        for mode in ("hardmax", "softmax"):
            assert np.abs(_run(prog, _mem(x, 2), mode)[0] - sim).max() < 1e-9


def test_benes_permutation_program_moves_every_value():
    rng = np.random.default_rng(0)
    for k in (1, 2, 3):
        perm = rng.permutation(1 << k)
        prog = pcoc.benes_permutation_program(perm, k)
        x = rng.normal(size=(10, 1 << k)) * 100
        sim = pcoc.simulate(prog, _mem(x, 1))[:, :, 0]
        expected = np.empty_like(x)
        expected[:, perm] = x
        assert np.array_equal(sim, expected)
        assert np.abs(_run(prog, _mem(x, 1))[0][:, :, 0] - expected).max() < 1e-9
        assert prog.R == 2 * k - 1


def test_paper_literal_sink_fails_when_a_machine_receives_nothing():
    prog = pcoc.prefix_program(4, "sum")  # machine 0 receives nothing in slot 1 in round 1
    x = _mem(np.array([[1.0, 2.0, 3.0, 4.0]]), 2)
    sim = pcoc.simulate(prog, x)
    assert np.abs(_run(prog, x, variant="paper")[0] - sim).max() > 1.0
    assert np.abs(_run(prog, x, variant="corrected")[0] - sim).max() < 1e-9


def test_gate_is_exact_only_within_the_bound():
    prog = pcoc.oets_program(3)
    x = _mem(np.array([[3e6, -2e6, 1.0]]), 2)  # beyond the default bound 1e6
    assert np.abs(_run(prog, x)[0] - pcoc.simulate(prog, x)).max() > 1.0


def test_program_validation():
    with pytest.raises(ValueError, match="Assumption B.4"):
        pcoc.Program(2, 1, (pcoc.Round(((0, 1, 0), (1, 1, 0)), ((("copy", 0),), (("copy", 0),))),))
    with pytest.raises(ValueError, match="out of range"):
        pcoc.Program(2, 1, (pcoc.Round(((0, 2, 0),), ((("copy", 0),), (("copy", 0),))),))
