import pytest

from .random_embeddings import region_means


def test_region_means_split_at_d_equals_T():
    runs = lambda acc: [{"d": d, "p": 4, "seed": 0, "final_accuracy": a} for d, a in zip([2, 8], acc)]  # noqa: E731
    result = {"config": {"T": 8}, "d_list": [2, 8], "p_list": [4],
              "models": [{"variant": "dot", "diff": [[0.3], [0.0]], "learned": {"runs": runs([0.9, 1.0])},
                          "random": {"runs": runs([0.6, 1.0])}}]}
    assert region_means(result, "dot") == pytest.approx((0.3, 0.0))
    assert region_means(result, "dot", seed=0) == pytest.approx((0.3, 0.0))


def test_claims_judge_each_seed_learned_against_random_of_the_same_seed():
    from .random_embeddings import claims_random_embeddings

    def runs(acc):
        return [{"d": d, "p": 4, "seed": s, "final_accuracy": a} for s, pair in enumerate(acc) for d, a in zip([2, 8], pair)]
    learned, random = runs([(0.9, 1.0), (0.5, 1.0)]), runs([(0.6, 1.0), (0.6, 1.0)])  # seed 1 loses at d < T
    result = {"config": {"T": 8, "scale": "ci", "seed_list": [0, 1]}, "d_list": [2, 8], "p_list": [4],
              "models": [{"variant": "dot", "diff": [[0.1], [0.0]], "learned": {"runs": learned},
                          "random": {"runs": random}}]}
    rows = {r.key: r for r in claims_random_embeddings(result).rows}
    assert rows["dot d<T"].verdict == "inconclusive" and not rows["dot d<T"].asserted  # +0.3 and −0.1
    assert rows["dot d≥T"].verdict == "reproduced"
