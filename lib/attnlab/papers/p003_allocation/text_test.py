import numpy as np
import pytest
import torch

from attnlab.papers.p003_allocation import text as T

TRAIN = " = Valkyria Chronicles = \n The game 's <unk> began in 2010 , carrying over a large portion . \n"
VALID = " = Tower Building = \n The building is <unk> tall . \n"


def _wikitext(folder, name="wikitext-103"):
    d = folder / name
    d.mkdir(parents=True)
    (d / "wiki.train.tokens").write_text(TRAIN * 20, encoding="utf-8")
    (d / "wiki.valid.tokens").write_text(VALID * 10, encoding="utf-8")
    return d


def test_wikitext_loader_reads_local_files(tmp_path, monkeypatch):
    d = _wikitext(tmp_path)
    assert T.wikitext(d) == TRAIN * 20 and T.wikitext(d, "valid", max_chars=10) == VALID[:10]
    assert T.wikitext(d / "wiki.valid.tokens") == VALID * 10
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path))
    assert T.wikitext_dir() == d
    c = T.load("wikitext", max_chars=100)
    assert not c.substitute and c.train == (TRAIN * 20)[:100] and c.valid == (VALID * 10)[:10]
    data = T.prepare("wikitext", 10_000, "word", 20)
    assert data.vocab.itos[0] == T.UNK and len(data.valid) > 0
    assert "<unk>" in data.vocab.decode(data.train[:80]) or data.vocab.encode("<unk>")[0] == 0


def test_wikitext_missing_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nowhere")):
        T.wikitext(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="wiki.train.tokens"):
        T.wikitext(tmp_path / "empty")
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ATTNLAB_DATA"):
        T.load("wikitext")
    with pytest.raises(ValueError, match="corpus"):
        T.load("ptb")


def test_vocabularies_encode_and_decode():
    v = T.build_vocab("abracadabra!", "char", 4)  # a, b, r kept (most frequent), the rest unknown
    assert v.itos == (T.UNK, "a", "b", "r") and v.size == 4
    ids = v.encode("abc")
    assert ids.tolist() == [1, 2, 0] and v.decode(ids) == "ab" + T.UNK
    w = T.build_vocab(TRAIN * 3, "word", 8)
    assert w.itos[0] == T.UNK and w.size == 8 and "=" in w.itos
    assert w.decode(w.encode("= the =")) == "= " + (("the" if "the" in w.itos else T.UNK)) + " ="
    assert T.build_vocab("hello world", "char", 100).size == len(set("hello world")) + 1
    with pytest.raises(ValueError):
        T.build_vocab("x", "byte", 4)


def test_split_partitions_the_stream_in_blocks():
    ids = np.arange(1000)
    train, valid = T.split(ids, valid_every=4, block=50)
    assert len(train) + len(valid) == 1000 and len(valid) == 250
    assert sorted(np.concatenate([train, valid]).tolist()) == list(range(1000))
    assert valid[:50].tolist() == list(range(150, 200))


def test_batches_are_seeded_shifted_windows():
    ids = np.arange(100)
    a = T.batches(ids, 8, 4, seed=3)
    b = T.batches(ids, 8, 4, seed=3)
    x1, y1 = next(a)
    x2, y2 = next(b)
    assert torch.equal(x1, x2) and x1.shape == (4, 8) and torch.equal(y1, x1 + 1)
    assert not torch.equal(next(T.batches(ids, 8, 4, seed=4))[0], x1)
    xe, ye = T.eval_windows(ids, 8, 5)
    assert xe[0].tolist() == list(range(8)) and ye[-1].tolist() == list(range(92, 100))
    with pytest.raises(ValueError):
        next(T.batches(np.arange(5), 8, 1, 0))


def test_stdlib_corpus_prepares():
    data = T.prepare("stdlib", 30_000, "char", 64)
    assert data.corpus.substitute and "docstrings" in data.describe()
    assert data.vocab.size == 64 and len(data.train) + len(data.valid) == 30_000
    assert data.train.max() < 64 and data.train.min() >= 0


def test_span_corpus_keeps_the_stdlib_key_and_names_a_local_wikitext(tmp_path, monkeypatch):
    """Figs. 3/10 and 4: the stdlib default keeps the store key the chapters always had (and reads nothing
    until asked); WikiText's key names its folder and fingerprint; an absent one is a one-line ParameterError."""
    import sys

    from attnlab.core.params import ParameterError

    key, text = T.span_corpus("stdlib", 20_000)
    assert key == {"corpus": "stdlib-docstrings", "python": list(sys.version_info[:2])}
    t, note = text()
    assert len(t) <= 20_000 and note.startswith("substitute for WikiText-103")
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path))
    with pytest.raises(ParameterError, match="parameter 'corpus': corpus='wikitext' needs") as e:
        T.span_corpus("wikitext", 20_000)
    assert "\n" not in str(e.value)
    _wikitext(tmp_path)
    key, text = T.span_corpus("wikitext", 500)
    assert key["corpus"] == "wikitext" and key["folder"] == "wikitext-103" and len(key["fingerprint"]) > 4
    assert text()[0] == (TRAIN * 20)[:500] and "WikiText" in text()[1]
