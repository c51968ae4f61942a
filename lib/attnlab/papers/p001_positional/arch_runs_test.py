import numpy as np

from .arch_runs import summary


def test_summary_is_median_and_percentiles_per_setting():
    runs = [{"positional": {"cumsum": {"train": [1.0, 3.0, 2.0], "test": [[1, 10], [2, 20], [3, 30]]}}},
            {"positional": {"cumsum": {"train": [5.0], "test": [[4, 40]]}}}]
    s = summary(runs, "positional", "cumsum", "test", 1)
    assert s["median"] == [20.0, 40.0] and s["p10"][0] == np.percentile([10, 20, 30], 10) and s["p90"][1] == 40.0
    assert summary(runs, "positional", "cumsum", "train")["median"] == [2.0, 5.0]


def test_per_seed_is_one_row_per_setting_one_column_per_seed():
    from .arch_runs import per_seed

    runs = [{"standard": {"cumsum": {"train": [1.0, 2.0], "test": [[1, 10], [2, 20]]}}},
            {"standard": {"cumsum": {"train": [3.0, 4.0], "test": [[3, 30], [4, 40]]}}}]
    assert per_seed(runs, "standard", "cumsum", "test", 1).tolist() == [[10, 20], [30, 40]]
    assert per_seed(runs, "standard", "cumsum", "train").tolist() == [[1, 2], [3, 4]]
