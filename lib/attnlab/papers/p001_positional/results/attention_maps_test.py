"""Chapter attention-maps on a tiny config: the positional maps are bit-identical across the
probes, the TV measure is zero at c = 1, the store resumes."""

import numpy as np

from . import attention_maps as ex

SMALL = {"embed": 8, "hidden": 8, "samples": 256, "batch": 64, "steps": 10, "seeds": 1, "test_samples": 100}


def test_tiny_run(tmp_path):
    exp = ex.EXPERIMENTS[0]
    result = exp.run(exp.config("ci", **SMALL), store_root=tmp_path, progress=False)
    rows = {r.key: r for r in ex.claims(result).rows}
    assert rows["1"].verdict == "consistency check" and result["runs"]["positional"][0]["spread"] == 0.0
    assert result["runs"]["standard"][0]["spread"] > 0  # self-attention does move
    maps = np.array(result["runs"]["standard"][0]["maps"])
    assert maps.shape == (2, 8, 4, 2, 9, 9) and np.allclose(maps.sum(-1), 1, atol=1e-5)
    T = ex.tv([result["runs"]["standard"][0]["maps"]])
    assert T.shape == (1, 2, 8, 4) and np.all(T[:, :, 0] == 0) and np.all((T >= 0) & (T <= 1))
    again = exp.run(exp.config("ci", **SMALL), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0


def test_seed_offset(tmp_path):
    """-p seed 3: seed 3 on another shared training set; row 3 prints one value per seed."""
    exp = ex.EXPERIMENTS[0]
    a = exp.run(exp.config("ci", **SMALL), store_root=tmp_path, progress=False)
    b = exp.run(exp.config("ci", **SMALL, seed=3), store_root=tmp_path, progress=False)
    assert b["meta"]["computed"] == 2 and a["runs"]["standard"][0]["test_mse"] != b["runs"]["standard"][0]["test_mse"]
    assert next(r for r in ex.claims(b).rows if r.key == "3").ours.endswith("1 seed)")
