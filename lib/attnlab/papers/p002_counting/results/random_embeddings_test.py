import pytest

from .random_embeddings import region_means


def test_region_means_split_at_d_equals_T():
    runs = lambda acc: [{"d": d, "p": 4, "seed": 0, "final_accuracy": a} for d, a in zip([2, 8], acc)]  # noqa: E731
    result = {"config": {"T": 8}, "d_list": [2, 8], "p_list": [4],
              "models": [{"variant": "dot", "diff": [[0.3], [0.0]], "learned": {"runs": runs([0.9, 1.0])},
                          "random": {"runs": runs([0.6, 1.0])}}]}
    assert region_means(result, "dot") == pytest.approx((0.3, 0.0))
    assert region_means(result, "dot", seed=0) == pytest.approx((0.3, 0.0))
