import json

import pytest

from attnlab.core.store import ResultStore


def test_get_or_compute_resumes(tmp_path):
    store = ResultStore(tmp_path, "x/y")
    calls = []
    compute = lambda: calls.append(1) or {"acc": 0.5}
    assert store.get_or_compute({"d": 2}, compute) == {"acc": 0.5}
    assert ResultStore(tmp_path, "x/y").get_or_compute({"d": 2}, compute) == {"acc": 0.5}
    assert len(calls) == 1
    assert store.get({"d": 3}) is None


@pytest.mark.parametrize("damage", ["truncate", "edit_result", "edit_config"])
def test_corrupt_entry_is_detected_removed_and_recomputed(tmp_path, damage):
    store = ResultStore(tmp_path, "r")
    path = store.put({"d": 2}, {"acc": 0.5})
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    else:
        entry = json.loads(text)
        if damage == "edit_result":
            entry["result"]["acc"] = 0.9
        else:
            entry["config"]["d"] = 3
        path.write_text(json.dumps(entry))
    with pytest.warns(UserWarning, match="corrupt"):
        assert store.get({"d": 2}) is None
    assert not path.exists()
    assert store.get_or_compute({"d": 2}, lambda: {"acc": 0.5}) == {"acc": 0.5}


def test_writes_are_atomic_json_with_provenance(tmp_path):
    store = ResultStore(tmp_path, "r")
    path = store.put({"d": 2}, {"acc": 0.5}, seconds=1.5, device="cpu")
    entry = json.loads(path.read_text())
    assert entry["provenance"]["device"] == "cpu" and "commit" in entry["provenance"]
    assert not list(path.parent.glob(".tmp-*"))
