import numpy as np
import pytest

from attnlab.core.params import ParameterError

from .exp_entangled import confusion, overlap_stats
from .exp_random_embeddings import parse_variants, region_means


def test_overlap_stats_of_an_orthonormal_and_a_simplex_frame():
    ortho = overlap_stats(np.eye(5) * 3.0)  # scaled: the normalised overlaps do not see the scale
    np.testing.assert_allclose(ortho["same"], 1.0)
    assert ortho["spread_cos"] == pytest.approx(0.0) and ortho["coherence"] == pytest.approx(0.0)
    # regular simplex: T = d + 1 unit vectors with pairwise cosine -1/d
    d = 3
    V = np.eye(d + 1) - 1 / (d + 1)
    s = overlap_stats(V)
    np.testing.assert_allclose(s["cos_different"], -1 / d)
    assert s["coherence"] == pytest.approx(1 / d) and s["spread_cos"] == pytest.approx(0.0, abs=1e-12)
    assert len(s["different"]) == (d + 1) * d // 2


def test_confusion_counts_every_position_once():
    true = np.array([[1, 1, 2], [3, 3, 3]])
    pred = np.array([[1, 2, 2], [3, 3, 1]])
    m = confusion(pred, true, 4)
    assert m.sum() == true.size and m[1, 1] == 1 and m[1, 2] == 1 and m[2, 2] == 1 and m[3, 3] == 2 and m[3, 1] == 1


def test_parse_variants_rejects_unknown_and_repeated_names():
    assert parse_variants(" bos+sftm, dot ") == ["bos+sftm", "dot"]
    for bad in ("dot, dot", "attention", ""):
        with pytest.raises(ParameterError):
            parse_variants(bad)


def test_region_means_split_at_d_equals_T():
    runs = lambda acc: [{"d": d, "p": 4, "seed": 0, "final_accuracy": a} for d, a in zip([2, 8], acc)]  # noqa: E731
    result = {"config": {"T": 8}, "d_list": [2, 8], "p_list": [4],
              "models": [{"variant": "dot", "diff": [[0.3], [0.0]], "learned": {"runs": runs([0.9, 1.0])},
                          "random": {"runs": runs([0.6, 1.0])}}]}
    assert region_means(result, "dot") == pytest.approx((0.3, 0.0))
    assert region_means(result, "dot", seed=0) == pytest.approx((0.3, 0.0))
