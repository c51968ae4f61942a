import numpy as np
import pytest
import torch

from . import mixed as M


@pytest.mark.parametrize("variant", ["min", "sum", "max", "multitask"])
@pytest.mark.parametrize("c", [1.0, 2.0, 10.0])
def test_answers_ids_noise_and_values(variant, c):
    p = M.generate(np.random.default_rng(0), 200, variant, c, readable=200)
    lo, hi = M.TEST_IDS if c > 1 else M.TRAIN_IDS
    sym = M.TEST_NOISE if c > 1 else M.TRAIN_NOISE
    for items, f, y in zip(p.items, p.features, p.targets):
        assert abs(M.prompt_answer(items) - y) <= 0.021  # the printed values are rounded to 2 decimals
        assert M.decode(f) == items  # the node features say exactly what the printed prompt says
        cats = [int(s[3:]) for s in items[:-1] if isinstance(s, str) and s[3:].isdigit()]
        noise = [s for s in items[:-1] if isinstance(s, str) and not s[3:].isdigit()]
        vals = [v for v in items[:-1] if not isinstance(v, str)]
        assert len(cats) == 8 == len(set(cats)) and cats == sorted(cats) and lo <= min(cats) and max(cats) <= hi
        assert len(noise) == 2 and all(s[3] in sym and int(s[4:]) in cats for s in noise)
        assert len(vals) == 8 and 0 <= min(vals) and max(vals) <= 5 * c + 0.005
        q = items[-1].split()[1]
        assert q in M.VARIANTS[variant]
    assert p.features.shape == (200, M.NODES, M.FEATURES)


def test_noise_lands_everywhere_and_rejection():
    p = M.generate(np.random.default_rng(1), 3000, "min", 1.0)
    noise = np.isin(np.argmax(p.features[:, :18, :len(M.MARKERS)], axis=2), [M.MK["+"], M.MK["-"]])
    assert noise.sum(1).tolist() == [2] * 3000 and noise.any(0).all()  # every list slot sometimes
    v = M._values(np.random.default_rng(2), 20000, 4.0)
    assert v.max() <= 20 and (v.max(1) > 0).all()
    g = np.random.default_rng(3)
    hi = [M._values(g, 1, 4.0).max() for _ in range(300)]
    assert np.mean(np.array(hi) > 5) > 0.6  # bounds with γ_u <= 5 are rejected, most lists leave [0, 5]


def test_replica_alone_equals_in_batch_and_positional_attention_is_input_free():
    x = torch.tensor(M.generate(np.random.default_rng(0), 16, "sum", 1.0).features)
    x2 = torch.tensor(M.generate(np.random.default_rng(5), 16, "sum", 3.0).features)
    for kind in ("positional", "standard"):
        cs = [M.MixedConfig(kind=kind, embed=8, hidden=8), M.MixedConfig(kind=kind, embed=16, hidden=4)]
        both = M.MixedTransformer(cs, [3, 4], dtype=torch.float64)
        for r in range(2):
            alone = M.MixedTransformer([cs[r]], [3 + r], dtype=torch.float64)
            assert torch.allclose(both.predict(x)[r], alone.predict(x)[0], atol=1e-12)
        _, a1 = both(x, return_attention=True)
        _, a2 = both(x2, return_attention=True)
        same = all(torch.equal(p, q) for p, q in zip(a1, a2))
        assert same == (kind == "positional")
    assert both.predict(x).shape == (2, 16)


def test_training_reduces_the_loss_and_tests_every_scale():
    proto = dict(embed=8, hidden=8, layers=2, heads=2, steps=40, batch=16, lr=5e-3, scales=[1, 3], test_samples=50)
    rows = M.train_program("positional", "min", 200, [0, 1], proto, progress=False)
    assert len(rows) == 2 and set(rows[0]["test_mse"]) == {"1", "3"}
    for r in rows:
        assert r["curve"][-1][1] < r["curve"][0][1]
    assert M.baseline_mse("min", 200, 1.0) > M.heuristic_mse("min", 200, 1.0)


def test_per_seed_data_streams_train_each_replica_as_alone():
    """data = one stream per seed: replica r trains exactly as a program on stream data[r] alone (its training
    prompts and batches), so seeds are independent runs; a shared stream differs from per-seed streams."""
    proto = dict(embed=8, hidden=8, layers=2, heads=2, steps=12, batch=16, lr=5e-3, scales=[1, 3], test_samples=40)
    for kind in ("positional", "standard"):
        both = M.train_program(kind, "sum", 120, [0, 1], proto, progress=False, data=[0, 1])
        for r in range(2):
            alone = M.train_program(kind, "sum", 120, [r], proto, progress=False, data=r)[0]
            assert np.isclose(both[r]["train_mse"], alone["train_mse"], rtol=1e-4)
            for c in ("1", "3"):
                assert np.isclose(both[r]["test_mse"][c], alone["test_mse"][c], rtol=1e-4)
        shared = M.train_program(kind, "sum", 120, [0, 1], proto, progress=False, data=0)
        assert np.isclose(shared[0]["test_mse"]["1"], both[0]["test_mse"]["1"], rtol=1e-4)
        assert not np.isclose(shared[1]["test_mse"]["1"], both[1]["test_mse"]["1"], rtol=1e-4)
    with pytest.raises(ValueError, match="one per seed"):
        M.train_program("positional", "sum", 120, [0, 1], proto, progress=False, data=[0])
