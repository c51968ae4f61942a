import numpy as np
import pytest

from attnlab.core.params import ParameterError

from . import models as M
from . import variant_runs as V


def test_task_list_and_protocol():
    assert V.task_list({"tasks": " cumsum, sort"}) == ["cumsum", "sort"]
    for bad in ("", "cumsum,cumsum", "cumsum,nope"):
        with pytest.raises(ParameterError, match="'tasks'"):
            V.task_list({"tasks": bad})
    p = V.protocol({**V.CI, "scale": "ci"})
    assert not p.joint and p.mix_seeds and p.steps == 300 and p.epochs is None  # every seed its own data
    p = V.protocol({**V.FULL, "scale": "full"})
    assert not p.joint and not p.mix_seeds and p.epochs == 2000 and p.batch == 1000 and p.lr == 5e-4 and p.scheduler == "plateau"
    with pytest.raises(ParameterError, match="'steps' and 'epochs'"):
        V.protocol({**V.CI, "scale": "ci", "epochs": 5})


def test_programs_group_every_model_one_transformer_can_hold():
    """mixable: equal keys exactly when models.Transformer accepts the replicas together."""
    cs = [M.ablation_config(v, n=4, embed=8, hidden=8) for v in M.ABLATIONS]
    cs += [M.ModelConfig(n=4, pe=pe, embed=e, hidden=8) for pe in ("binary", "sinusoidal") for e in (8, 16)]
    cs += [M.ModelConfig(n=4, kind="standard", layers=1, hidden=h) for h in (2, 16)]
    for a in cs:
        for b in cs:
            try:
                M.Transformer([a, b], [0, 1])
                ok = True
            except ValueError:
                ok = False
            assert ok == (V.mixable(a) == V.mixable(b)), (a, b)
    assert len({V.mixable(c) for c in cs[:7]}) == 4  # the seven ablations: four programs


def test_band_and_at():
    test = [[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]
    b = V.band(test)
    assert b["median"] == [2.0, 20.0] and np.allclose(b["p10"], [1.2, 12.0]) and np.allclose(b["p90"], [2.8, 28.0])
    assert V.at({"c_list": [1.0, 10.0]}, test, 10) == 20.0


def test_the_seed_offset_names_the_seeds_and_refuses_bad_values():
    assert list(V.seed_range({"seed": 0, "seeds": 3})) == [0, 1, 2]
    assert list(V.seed_range({"seed": 5, "seeds": 2})) == [5, 6]
    assert list(V.seed_range({"seeds": 2})) == [0, 1]  # a stored config from before the knob
    p = next(p for p in V.TRAIN_PARAMS if p.name == "seed")
    assert p.validate(7) == 7
    for bad in (-1, 1.5, "x", 2**31):
        with pytest.raises(ParameterError, match="'seed'"):
            p.validate(bad)


def test_add_direction_is_the_seed_rule_on_both_sides_of_a_band():
    from attnlab.core.claims import ClaimsTable

    def verdict(values):
        t = ClaimsTable(rtol=0.05)
        V.add_direction(t, "k", "a ratio claim", paper="> 1", values=values, separates=3, asserted=True)
        return t.rows[0]

    assert verdict([4.0, 10.0, 30.0]).verdict == "reproduced" and verdict([4.0, 10.0, 30.0]).asserted
    assert verdict([4.0, 10.0, 30.0]).ours == "10 (4–30, 3 seeds)"
    assert verdict([0.1, 0.2, 0.3]).verdict == "fails"
    mixed = verdict([0.5, 10.0, 30.0])  # one seed inside the band: neither
    assert mixed.verdict == "inconclusive" and not mixed.asserted and "2 of 3 seeds ≥ 3×" in mixed.tolerance
    assert verdict([2.95, 10.0, 30.0]).verdict == "inconclusive"  # within the row's precision of 3
