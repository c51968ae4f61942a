import json
import os
import warnings

import pytest

from attnlab.core import store as store_mod
from attnlab.core.store import ResultStore, keeps_corrupt, quarantined

DAMAGE = {
    "truncate": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "garbage": lambda text: b"\x00\xff{ not json",
    "edit_result": lambda text: text.replace('"acc": 0.5', '"acc": 0.9'),
    "edit_config": lambda text: text.replace('"d": 2', '"d": 3'),
    "not_an_object": lambda text: "[1, 2, 3]",
    "no_checksum": lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "checksum"}),
}


def _damage(path, how):
    text = path.read_text()
    new = DAMAGE[how](text)
    assert new != text
    path.write_bytes(new if isinstance(new, bytes) else new.encode())


def test_put_then_get_resumes_across_instances(tmp_path):
    store = ResultStore(tmp_path, "x/y")
    assert store.get({"d": 2}) is None
    store.put({"d": 2}, {"acc": 0.5})
    again = ResultStore(tmp_path, "x/y")
    assert again.get({"d": 2}) == {"acc": 0.5} and again.hits == 1
    assert again.get({"d": 3}) is None
    assert not hasattr(ResultStore, "get_or_compute")  # one way to compute a unit: Context.unit


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_corrupt_cache_entry_is_detected_removed_and_recomputed(tmp_path, damage):
    store = ResultStore(tmp_path / "ci", "r")
    assert not store.keep_corrupt
    path = store.put({"d": 2}, {"acc": 0.5})
    _damage(path, damage)
    with pytest.warns(UserWarning, match="corrupt.*removed"):
        assert store.get({"d": 2}) is None
    assert not path.exists() and not list(path.parent.iterdir())
    store.put({"d": 2}, {"acc": 0.5})
    assert store.get({"d": 2}) == {"acc": 0.5}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_corrupt_paper_scale_entry_is_moved_aside_never_deleted(tmp_path, damage):
    root = tmp_path / "results" / "full"
    store = ResultStore(root, "004-x/fig")
    assert store.keep_corrupt and keeps_corrupt(root)
    path = store.put({"d": 2}, {"acc": 0.5})
    _damage(path, damage)
    damaged = path.read_bytes()
    with pytest.warns(UserWarning, match="moved aside"):
        assert store.get({"d": 2}) is None
    aside = quarantined(root)
    assert len(aside) == 1 and aside[0].read_bytes() == damaged  # every byte kept, for inspection
    assert aside[0].name.startswith(path.name + ".corrupt-") and not path.exists()
    store.put({"d": 2}, {"acc": 0.5})  # recomputed beside it; the quarantined file stays ignored
    assert store.get({"d": 2}) == {"acc": 0.5}
    assert [e["result"] for e in store.entries()] == [{"acc": 0.5}]
    assert quarantined(root) == aside


def test_quarantined_scans_entries_nobody_has_read_yet(tmp_path):
    root = tmp_path / "full"
    store = ResultStore(root, "p/a")
    good = store.put({"d": 1}, {"acc": 1.0})
    bad = store.put({"d": 2}, {"acc": 0.5})
    _damage(bad, "edit_result")
    assert quarantined(root, scan=False) == []
    with pytest.warns(UserWarning, match="moved aside"):
        found = quarantined(root)
    assert [p.parent for p in found] == [bad.parent] and good.exists() and not bad.exists()


def test_renamed_entry_is_corrupt_too(tmp_path):
    store = ResultStore(tmp_path / "full", "r")
    path = store.put({"d": 2}, {"acc": 0.5})
    path.rename(path.with_name("0123456789abcdef.json"))
    with pytest.warns(UserWarning, match="file name is not the hash"):
        assert store.entries() == []


def test_entries_ignore_temporary_and_quarantined_files(tmp_path):
    store = ResultStore(tmp_path / "full", "r")
    path = store.put({"d": 2}, {"acc": 0.5})
    text = path.read_text()
    (path.parent / ".tmp-abc.json").write_text(text)           # a writer killed before its rename
    (path.parent / (path.name + ".corrupt-20260101T000000Z")).write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(store.entries()) == 1


def test_a_fresh_entry_written_while_a_corrupt_one_is_set_aside_is_not_lost(tmp_path, monkeypatch):
    """Process A reads a corrupt entry; before A moves it aside, process B replaces it with a valid
    one. A must not quarantine (or delete) B's entry."""
    store = ResultStore(tmp_path / "full", "r")
    path = store.put({"d": 2}, {"acc": 0.5})
    good = path.read_bytes()
    path.write_text("{broken")
    real_rename = os.rename

    def rename_after_another_writer(src, dst):
        if str(dst).count(".corrupt-") and not str(src).count(".corrupt-"):
            path.write_bytes(good)  # B's atomic replace lands between A's read and A's rename
        return real_rename(src, dst)

    monkeypatch.setattr(store_mod.os, "rename", rename_after_another_writer)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.get({"d": 2}) is None  # A saw garbage: it recomputes, which is harmless
    assert path.read_bytes() == good and quarantined(tmp_path / "full", scan=False) == []
    assert store.get({"d": 2}) == {"acc": 0.5}


def test_writes_are_atomic_json_with_provenance(tmp_path):
    store = ResultStore(tmp_path, "r")
    path = store.put({"d": 2}, {"acc": 0.5}, seconds=1.5, device="cpu")
    entry = json.loads(path.read_text())
    assert entry["provenance"]["device"] == "cpu" and "commit" in entry["provenance"]
    assert not list(path.parent.glob(".tmp-*"))


def test_sets_and_numpy_values_are_stored_as_json_lists(tmp_path):
    import numpy as np

    store = ResultStore(tmp_path, "r")
    store.put({"d": 2}, {"h": {3, 1}, "a": np.arange(3)})
    assert ResultStore(tmp_path, "r").get({"d": 2}) == {"h": [1, 3], "a": [0, 1, 2]}


def test_a_failed_write_leaves_no_temporary_file_and_the_old_entry(tmp_path, monkeypatch):
    store = ResultStore(tmp_path, "r")
    path = store.put({"d": 2}, {"acc": 0.5})

    def dump_half_then_fail(obj, f, **kw):
        f.write('{"config": ')
        raise KeyboardInterrupt

    monkeypatch.setattr(store_mod.json, "dump", dump_half_then_fail)
    with pytest.raises(KeyboardInterrupt):
        store.put({"d": 2}, {"acc": 0.7})
    monkeypatch.undo()
    assert store.get({"d": 2}) == {"acc": 0.5} and sorted(p.name for p in path.parent.iterdir()) == [path.name]
