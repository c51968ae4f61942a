"""Fig. 34 (App. D.3.4): a pretrained language model on the mixed-type task, next to the positional
Transformer.

The paper fine-tunes GPT-2-large (HuggingFace) on the mixed-type prompts written as text: input
numbers with 4 digits (2 integer, 2 decimal), answers with 4 digits (min, max) or 5 (sum: 3 integer
digits), byte-pair tokens, 50,000 prompts, 3 epochs; it generates the answer, parses the number, and
reports MSE and MAPE ignoring the outputs that do not parse.

Two paths here, both on `attnlab.core.pretrained`:
- the paper's: `causal_lm(path)` loads GPT-2-large from a local folder (`find_local("gpt2-large")`),
  `finetune` trains it on "prompt = answer<eos>" with the loss on the answer tokens only (AdamW),
  `generate_numbers` decodes greedily and parses;
- the offline substitute (default): the pretrained MiniLM-L6 encoder of `pretrained.minilm()` is not a
  generator, so `encoder_features` reads its frozen last hidden states (the [CLS] vector and the mean
  over tokens) and a ridge-regression head (`ridge_fit`, closed form) maps them to the answer. A
  different model class and a much weaker adaptation than the paper's fine-tuning: a labelled
  substitute, not a reproduction.
"""

from __future__ import annotations

import math
import re

import numpy as np
import torch

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def render_number(v: float, digits: int = 4) -> str:
    """Zero-padded with 2 decimals: 4 digits 'dd.dd', 5 digits 'ddd.dd' (App. D.3.4)."""
    return f"{v:0{digits + 1}.2f}"


def render_prompt(items: list) -> str:
    """The prompt as text: items separated by spaces, numbers as 4 digits, then ' ='."""
    return " ".join(render_number(x) if not isinstance(x, str) else x for x in items) + " ="


def answer_digits(variant: str) -> int:
    return 5 if variant == "sum" else 4


def render_answer(y: float, variant: str) -> str:
    return " " + render_number(y, answer_digits(variant))


def parse_number(text: str) -> float | None:
    """The first number in `text`, or None when there is none (such outputs are ignored, App. D.3.4)."""
    m = NUMBER.search(text)
    return float(m.group()) if m else None


def _pad_id(tok) -> int:
    return tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id


def answer_batch(tok, prompts: list[str], answers: list[str], device="cpu") -> dict:
    """input_ids / attention_mask / labels for "prompt answer<eos>", right-padded; labels are −100 on
    the prompt and the padding, so the loss is on the answer (and its end-of-text) only."""
    eos = tok.eos_token or ""
    ids, labels = [], []
    for p, a in zip(prompts, answers):
        pi = tok(p, add_special_tokens=False)["input_ids"]
        ai = tok(a + eos, add_special_tokens=False)["input_ids"]
        ids.append(pi + ai)
        labels.append([-100] * len(pi) + ai)
    T = max(len(x) for x in ids)
    pad = _pad_id(tok)
    out = {"input_ids": torch.tensor([x + [pad] * (T - len(x)) for x in ids], device=device),
           "attention_mask": torch.tensor([[1] * len(x) + [0] * (T - len(x)) for x in ids], device=device),
           "labels": torch.tensor([y + [-100] * (T - len(y)) for y in labels], device=device)}
    return out


def finetune(p, prompts: list[str], answers: list[str], *, epochs: int = 3, batch: int = 8, lr: float = 5e-5,
             seed: int = 0, device="cpu", progress: bool = True) -> list[float]:
    """Fine-tune the causal LM `p` (a `Pretrained`) in place: AdamW, linear decay to 0, the loss on the
    answer tokens. Returns the mean loss of each epoch."""
    from attnlab.core.progress import tqdm

    model = p.model.to(device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    n = len(prompts)
    total = epochs * math.ceil(n / batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / total))
    losses = []
    bar = tqdm(total=total, desc="fine-tune", disable=not progress, mininterval=5.0, leave=False)
    for _ in range(epochs):
        order = torch.randperm(n, generator=g).tolist()
        tot = 0.0
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            b = answer_batch(p.tokenizer, [prompts[j] for j in idx], [answers[j] for j in idx], device)
            loss = model(**b).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss.detach()) * len(idx)
            bar.update()
        losses.append(tot / n)
    bar.close()
    model.eval()
    return losses


@torch.no_grad()
def generate_numbers(p, prompts: list[str], *, max_new_tokens: int = 8, batch: int = 16,
                     device="cpu") -> list[float | None]:
    """Greedy continuation of each prompt (left-padded batches), parsed to a number or None."""
    tok, model = p.tokenizer, p.model.to(device)
    pad = _pad_id(tok)
    out: list[float | None] = []
    for i in range(0, len(prompts), batch):
        enc = [tok(s, add_special_tokens=False)["input_ids"] for s in prompts[i:i + batch]]
        T = max(len(x) for x in enc)
        ids = torch.tensor([[pad] * (T - len(x)) + x for x in enc], device=device)
        mask = torch.tensor([[0] * (T - len(x)) + [1] * len(x) for x in enc], device=device)
        gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                             pad_token_id=pad, eos_token_id=tok.eos_token_id)
        for row in gen[:, T:]:
            out.append(parse_number(tok.decode(row.tolist(), skip_special_tokens=True)))
    return out


def lm_metrics(pred: list[float | None], y: np.ndarray) -> dict:
    """MSE and MAPE over the outputs that parse, and the share that parse (App. D.3.4)."""
    ok = np.array([v is not None for v in pred])
    if not ok.any():
        return {"mse": float("nan"), "mape": float("nan"), "parsed": 0.0}
    v = np.array([x for x in pred if x is not None], dtype=float)
    t = np.asarray(y, dtype=float)[ok]
    return {"mse": float(((v - t) ** 2).mean()), "mape": float((np.abs(v - t) / np.maximum(np.abs(t), 1e-3)).mean()),
            "parsed": float(ok.mean())}


@torch.no_grad()
def encoder_features(p, texts: list[str], *, batch: int = 32, device="cpu") -> np.ndarray:
    """Frozen features of an encoder (the MiniLM substitute): [CLS] ⊕ the mean of the last hidden states
    over the prompt's tokens → [N, 2D] float64."""
    model = p.model.to(device)
    feats = []
    for i in range(0, len(texts), batch):
        enc = p.tokenizer(texts[i:i + batch], return_tensors="pt", padding=True).to(device)
        h = model(**enc).last_hidden_state
        m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
        feats.append(torch.cat([h[:, 0], (h * m).sum(1) / m.sum(1)], dim=1).double().cpu())
    return torch.cat(feats).numpy()


def ridge_fit(F: np.ndarray, y: np.ndarray, alpha: float) -> dict:
    """Ridge regression on standardised features (closed form): w = (XᵀX + αI)⁻¹ Xᵀ(y − ȳ)."""
    mu, sd = F.mean(0), F.std(0) + 1e-8
    X = (F - mu) / sd
    w = np.linalg.solve(X.T @ X + alpha * np.eye(X.shape[1]), X.T @ (y - y.mean()))
    return {"mu": mu, "sd": sd, "w": w, "b": float(y.mean())}


def ridge_predict(head: dict, F: np.ndarray) -> np.ndarray:
    return ((F - head["mu"]) / head["sd"]) @ head["w"] + head["b"]
