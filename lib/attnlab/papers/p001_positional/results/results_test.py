"""Every chapter of paper 001 runs on a small config and its asserted claims hold; bad parameters fail."""

import importlib

import pytest

from attnlab.core.params import ParameterError

SMALL = {
    "hardmax_softmax_patterns": {"ns": [4, 8], "patterns": 3, "b6_ns": [3, 9], "b6_trials": 3},
    "parallel_algorithms": {"n_max": 5, "samples": 50},
    "benes_routing": {"perms8": 50, "perms16": 50, "mpc_trials": 5},
    "pcoc_compiler": {"N": 4, "k": 2, "samples": 20},
    "architecture": {"ns": [2, 8], "seeds": 1, "samples": 8},
    "generalization_bound": {"pairs": 200, "c8_trials": 2, "seeds": 1},
    "ood_sampling": {"mc_ns": [2, 3, 8], "mc_cs": [2.0, 3.0, 10.0], "samples": 20000},
    "discrepancy_bound": {"trials": 50},
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_chapter_runs_and_its_asserted_claims_hold(name, tmp_path):
    mod = importlib.import_module(f"attnlab.papers.p001_positional.results.{name}")
    exp = mod.EXPERIMENTS[0]
    result = exp.run(exp.config("ci", **SMALL[name]), store_root=tmp_path, progress=False)
    table = mod.claims(result)
    table.check()
    assert table.rows and "nan" not in table.markdown()
    again = exp.run(exp.config("ci", **SMALL[name]), store_root=tmp_path, progress=False)  # from the store
    assert mod.claims(again).markdown() == table.markdown()


def test_bad_parameters_fail_with_the_parameter_named():
    from attnlab.papers.p001_positional.results import ood_sampling, pcoc_compiler

    with pytest.raises(ParameterError, match="'N'"):
        pcoc_compiler.EXPERIMENTS[0].config("ci", N=10**6)
    with pytest.raises(ParameterError, match="'samples'"):
        ood_sampling.EXPERIMENTS[0].config("ci", samples=10)
