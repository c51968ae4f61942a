"""The GPT-2 path of Fig. 34 on a tiny GPT-2 and a character tokenizer that the test builds and saves
itself, loaded back through the real loader (`attnlab.core.pretrained.causal_lm`); no network."""

import numpy as np
import pytest
import torch

from attnlab.core import pretrained

from . import finetune_lm as F
from . import mixed as M

CHARS = list("0123456789.=+-_* ,abcdefghijklmnopqrstuvwxyzCF")


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    tf = pytest.importorskip("transformers")
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(["<pad>", "<eos>", "<unk>"] + CHARS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = tf.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=len(vocab), n_embd=32, n_layer=2, n_head=4, n_positions=256,
                                             eos_token_id=1, bos_token_id=1, pad_token_id=0))
    path = tmp_path_factory.mktemp("models") / "gpt2-large"
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def test_rendering_and_parsing():
    p = M.generate(np.random.default_rng(0), 3, "sum", 10.0, readable=3)
    text = F.render_prompt(p.items[0])
    assert text.endswith(" =") and "Find sum of" in text
    nums = [t for t in text.split() if F.NUMBER.fullmatch(t)]
    assert len(nums) == 8 and all(len(t) == 5 and t[2] == "." for t in nums)  # 4 digits: dd.dd
    assert F.render_answer(70.656, "sum") == " 070.66" and F.render_answer(1.5, "min") == " 01.50"
    assert F.parse_number(" 012.30<eos>") == 12.3 and F.parse_number("abc") is None
    m = F.lm_metrics([1.0, None, 3.0], np.array([2.0, 5.0, 3.0]))
    assert m == {"mse": 0.5, "mape": 0.25, "parsed": pytest.approx(2 / 3)}


def test_real_loader_finetunes_and_generates(tiny_gpt2, monkeypatch):
    monkeypatch.setenv("ATTNLAB_MODELS", str(tiny_gpt2.parent))
    path = pretrained.find_local("gpt2-large")
    assert path == tiny_gpt2
    p = pretrained.causal_lm(path)
    assert not p.substitute
    prompts = ["Cat1 01.00 Find min of Cat1 ="] * 8
    answers = [" 01.00"] * 8
    b = F.answer_batch(p.tokenizer, prompts[:2], answers[:2])
    n_prompt = len(p.tokenizer(prompts[0], add_special_tokens=False)["input_ids"])
    assert (b["labels"][:, :n_prompt] == -100).all() and (b["labels"][:, n_prompt:] >= 0).all()
    losses = F.finetune(p, prompts, answers, epochs=30, batch=4, lr=3e-3, progress=False)
    assert losses[-1] < 0.2 * losses[0]
    out = F.generate_numbers(p, prompts[:2] + ["Cat1 02.00 Find min of Cat1 ="], max_new_tokens=7)
    assert out[:2] == [1.0, 1.0] and len(out) == 3


def test_missing_model_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path))
    assert pretrained.find_local("gpt2-large") is None
    with pytest.raises(FileNotFoundError, match="gpt2-large"):
        pretrained.causal_lm(tmp_path / "gpt2-large")


def test_ridge_head_recovers_a_linear_map():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + 4.0
    head = F.ridge_fit(X, y, alpha=1e-8)
    assert np.abs(F.ridge_predict(head, X) - y).max() < 1e-6
