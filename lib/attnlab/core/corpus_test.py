import pytest

from attnlab.core import corpus


def test_corpus_is_deterministic_english():
    a = corpus.stdlib_docstrings(200_000)
    corpus.stdlib_docstrings.cache_clear()
    b = corpus.stdlib_docstrings(200_000)
    assert a == b and len(a) == 200_000
    words = corpus.word_frequencies(a)
    assert words.most_common(1)[0][0] == "the" and len(words) > 2000
    assert corpus.fingerprint(a) == corpus.fingerprint(b) and len(corpus.fingerprint(a)) == 12
    assert "standard library" in corpus.describe(a)


def test_prefixes_agree_and_bad_size():
    assert corpus.stdlib_docstrings(200_000).startswith(corpus.stdlib_docstrings(1_000))
    with pytest.raises(ValueError, match="max_chars"):
        corpus.stdlib_docstrings(0)
