"""Text for the language models of Figs. 5, 6 and 9: a corpus, a small vocabulary, a split, batches.

The paper trains on 1% of WikiText-103 (about 1M tokens). Offline, the default corpus is the
docstrings of the Python standard library (`attnlab.core.corpus.stdlib_docstrings`): real English
on every machine, labelled as a substitute in each chapter. `wikitext(path)` is the real loader,
used when WikiText-103 (or WikiText-2, whose validation and test files are WikiText-103's) is
present locally: a folder with `wiki.{train,valid,test}.{tokens,raw}` (or `train.txt`,
`valid.txt`, `test.txt`), found under `$ATTNLAB_DATA/wikitext-103` or `$ATTNLAB_DATA/wikitext-2`.

Tokenisation is char-level (the characters of the text, the rarest beyond `vocab_size` mapped to
one unknown id 0) or word-level (`<unk>` | words | single punctuation marks, the `vocab_size - 1`
most frequent kept). No tokenizer file is downloaded.

The stdlib corpus has no official split: `split` takes every `valid_every`-th block of the token
stream as validation (blocks of `block` tokens), so both halves cover the whole library. WikiText
keeps its own train and validation files.
"""

from __future__ import annotations

import collections
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch

from attnlab.core.hashing import derive_seed

CORPORA = ("stdlib", "wikitext")
LEVELS = ("char", "word")
UNK = "<unk>"
_WORD = re.compile(r"<unk>|\w+|[^\w\s]")
_SPLITS = {"train": ("wiki.train.tokens", "wiki.train.raw", "train.txt"),
           "valid": ("wiki.valid.tokens", "wiki.valid.raw", "valid.txt"),
           "test": ("wiki.test.tokens", "wiki.test.raw", "test.txt")}


@dataclass(frozen=True)
class Corpus:
    """Training and validation text, and where it comes from (`note`: one line for a chapter)."""

    name: str
    train: str
    valid: str | None  # None: no official split (use `split`)
    source: str
    substitute: bool
    note: str


def wikitext_dir() -> Path | None:
    """$ATTNLAB_DATA/wikitext-103, else $ATTNLAB_DATA/wikitext-2 (the first that holds a training
    file); None when neither is there."""
    base = os.environ.get("ATTNLAB_DATA")
    if not base:
        return None
    for name in ("wikitext-103", "wikitext-103-raw", "wikitext-2", "wikitext-2-raw"):
        folder = Path(base) / name
        if any((folder / f).is_file() for f in _SPLITS["train"]):
            return folder
    return None


def _find(folder: Path, split: str) -> Path | None:
    for name in _SPLITS[split]:
        if (folder / name).is_file():
            return folder / name
    return None


def wikitext(path: str | Path, split: str = "train", max_chars: int | None = None) -> str:
    """The text of one WikiText split from a local folder (or the file itself): the real loader.
    Raises FileNotFoundError naming the path and the file names it looked for."""
    if split not in _SPLITS:
        raise ValueError(f"split {split!r}: choose one of {', '.join(_SPLITS)}")
    path = Path(path)
    file = path if path.is_file() else _find(path, split) if path.is_dir() else None
    if file is None:
        raise FileNotFoundError(
            f"no WikiText {split} file at {path} (looked for {', '.join(_SPLITS[split])}); put WikiText-103 or "
            "WikiText-2 there (e.g. $ATTNLAB_DATA/wikitext-103/wiki.train.tokens), or use corpus='stdlib'")
    with open(file, encoding="utf-8") as f:
        return f.read(max_chars) if max_chars else f.read()


def span_corpus(name: str, max_chars: int) -> tuple[dict, Callable[[], tuple[str, str]]]:
    """The text that Figs. 3/10 and 4 sample their spans from: (the part of a store key that names it,
    a function returning (text, a one-line note)). "stdlib" (the offline default, a substitute for
    WikiText-103) keeps the key the chapters always had, {"corpus": "stdlib-docstrings", "python":
    [major, minor]}, and reads the text only when called; "wikitext" reads the training split of the local
    WikiText (`load`) at once, to name its folder and fingerprint in the key. A missing WikiText folder
    raises ParameterError (one line: where to put it)."""
    import sys

    from attnlab.core import corpus
    from attnlab.core.params import ParameterError

    if name == "stdlib":
        def text():
            t = corpus.stdlib_docstrings(max_chars)
            return t, "substitute for WikiText-103: " + corpus.describe(t)
        return {"corpus": "stdlib-docstrings", "python": list(sys.version_info[:2])}, text
    try:
        c = load(name, max_chars)
    except FileNotFoundError as e:
        raise ParameterError(f"parameter 'corpus': {e}") from None
    return ({"corpus": name, "folder": Path(c.source).name, "fingerprint": corpus.fingerprint(c.train)},
            lambda: (c.train, c.note))


def load(name: str = "stdlib", max_chars: int = 2_000_000) -> Corpus:
    """The corpus `name` ("stdlib": the offline default; "wikitext": the local WikiText files,
    FileNotFoundError when absent), at most `max_chars` training characters (validation: at most
    a tenth of that)."""
    if name == "stdlib":
        from attnlab.core import corpus

        text = corpus.stdlib_docstrings(max_chars)
        return Corpus("stdlib", text, None, "Python standard-library docstrings", True,
                      "substitute for WikiText-103: " + corpus.describe(text))
    if name == "wikitext":
        folder = wikitext_dir()
        if folder is None:
            raise FileNotFoundError(
                f"corpus='wikitext' needs WikiText-103 or WikiText-2 under $ATTNLAB_DATA "
                f"(now {os.environ.get('ATTNLAB_DATA', 'unset')!r}): $ATTNLAB_DATA/wikitext-103/wiki.train.tokens "
                "and wiki.valid.tokens; or use corpus='stdlib'")
        train = wikitext(folder, "train", max_chars)
        valid = wikitext(folder, "valid", max(1, max_chars // 10)) if _find(folder, "valid") else None
        return Corpus("wikitext", train, valid, str(folder), False,
                      f"WikiText from {folder}: {len(train):,} training characters")
    raise ValueError(f"corpus {name!r}: choose one of {', '.join(CORPORA)}")


@dataclass(frozen=True)
class Vocab:
    """Token strings by id; id 0 is the unknown token."""

    level: str
    itos: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.itos)

    def pieces(self, text: str) -> list[str]:
        return list(text) if self.level == "char" else _WORD.findall(text)

    def encode(self, text: str) -> np.ndarray:
        stoi = {s: i for i, s in enumerate(self.itos)}
        return np.array([stoi.get(p, 0) for p in self.pieces(text)], dtype=np.int64)

    def decode(self, ids) -> str:
        sep = "" if self.level == "char" else " "
        return sep.join(self.itos[int(i)] for i in ids)


def build_vocab(text: str, level: str = "char", vocab_size: int = 128) -> Vocab:
    """The `vocab_size - 1` most frequent pieces of `text` (ties broken by the piece), after the
    unknown token; deterministic."""
    if level not in LEVELS:
        raise ValueError(f"level {level!r}: choose one of {', '.join(LEVELS)}")
    if vocab_size < 2:
        raise ValueError(f"vocab_size {vocab_size}: need at least 2 (the unknown token and one more)")
    counts = collections.Counter(list(text) if level == "char" else _WORD.findall(text))
    counts.pop(UNK, None)
    kept = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: vocab_size - 1]
    return Vocab(level, (UNK, *sorted(p for p, _ in kept)))


def split(ids: np.ndarray, valid_every: int = 10, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """(train, valid): every `valid_every`-th block of `block` tokens goes to validation."""
    if valid_every < 2 or block < 1:
        raise ValueError(f"split: need valid_every >= 2 and block >= 1; got {valid_every}, {block}")
    n = len(ids)
    starts = range(0, n, block)
    train = [ids[s:s + block] for i, s in enumerate(starts) if i % valid_every != valid_every - 1]
    valid = [ids[s:s + block] for i, s in enumerate(starts) if i % valid_every == valid_every - 1]
    empty = np.zeros(0, dtype=ids.dtype)
    return (np.concatenate(train) if train else empty), (np.concatenate(valid) if valid else empty)


@dataclass(frozen=True)
class Data:
    """Token ids of the training and validation text, their vocabulary and the corpus."""

    corpus: Corpus
    vocab: Vocab
    train: np.ndarray
    valid: np.ndarray

    def describe(self) -> str:
        return (f"{self.corpus.note}; {self.vocab.level}-level vocabulary of {self.vocab.size}; "
                f"{len(self.train):,} training and {len(self.valid):,} validation tokens")


def prepare(name: str = "stdlib", max_chars: int = 2_000_000, level: str = "char", vocab_size: int = 128) -> Data:
    """Load the corpus, build the vocabulary on its training text, encode and split."""
    c = load(name, max_chars)
    vocab = build_vocab(c.train, level, vocab_size)
    if c.valid is None:
        train, valid = split(vocab.encode(c.train))
    else:
        train, valid = vocab.encode(c.train), vocab.encode(c.valid)
    return Data(c, vocab, train, valid)


def batches(ids: np.ndarray, L: int, batch: int, seed: int, config: dict | None = None) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless (inputs, targets) [batch, L] int64 from random windows of `ids` (targets: the next
    token), drawn from a generator seeded by (config, seed) only."""
    if len(ids) < L + 1:
        raise ValueError(f"a text of {len(ids)} tokens is shorter than one window of L + 1 = {L + 1}")
    gen = torch.Generator().manual_seed(derive_seed({"what": "lm-batches", **(config or {})}, seed))
    data = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))
    offsets = torch.arange(L + 1)
    while True:
        start = torch.randint(0, len(ids) - L, (batch,), generator=gen)
        w = data[start.unsqueeze(1) + offsets]
        yield w[:, :-1], w[:, 1:]


def eval_windows(ids: np.ndarray, L: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n windows of `ids` (inputs, targets) [n, L], evenly spaced and deterministic (they overlap
    only when the text is shorter than n (L + 1) tokens)."""
    if len(ids) < L + 1:
        raise ValueError(f"a text of {len(ids)} tokens is shorter than one window of L + 1 = {L + 1}")
    starts = np.linspace(0, len(ids) - L - 1, n).round().astype(np.int64)
    w = torch.from_numpy(np.stack([ids[s:s + L + 1] for s in starts]).astype(np.int64))
    return w[:, :-1], w[:, 1:]


def fingerprint(ids: np.ndarray) -> str:
    """The first 12 hex digits of the SHA-256 of a token stream (int64), for store keys."""
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest()[:12]


def data_key(corpus: str, max_chars: int, level: str, vocab_size: int) -> dict:
    """What identifies the token streams in a store key without reading the text: the parameters,
    and for the stdlib corpus the Python version whose library it is read from."""
    key = {"corpus": corpus, "max_chars": max_chars, "level": level, "vocab_size": vocab_size}
    if corpus == "stdlib":
        import sys

        key["python"] = list(sys.version_info[:2])
    return key
