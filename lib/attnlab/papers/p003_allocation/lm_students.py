"""Fig. 6: compressing one head of a trained decoder (`lm.py`) to a student of head dimension d_h.

The teacher head's logits are a bilinear form of its layer's normalised input a (no biases):
z_ij = a_i^T M a_j with M = W_Q^h W_K^h^T / sqrt(d_H). A student keeps the teacher's values and
replaces M by a rank-d_h product W^_Q W^_K^T, initialised by the truncated SVD of M
(`compression.svd_factors`) and trained by Adam on the mean squared error of the causal attention
weights (§5). Here a student is also put back into the decoder, so its cost is read in the
model's own loss, and the teacher's sharpness is measured (an undertrained teacher attends almost
uniformly, and then any student is trivially good).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.papers.p003_allocation import compression as C
from attnlab.papers.p003_allocation import lm


def bilinear(state: dict[str, torch.Tensor], cfg: lm.LMConfig, layer: int, head: int) -> np.ndarray:
    """M = W_Q^h W_K^h^T / sqrt(d_H) [D, D] (float64): the head's logits are a_i^T M a_j."""
    Wq, Wk = lm.head_qk(state, cfg, layer, head)
    return (Wq.double() @ Wk.double().T).cpu().numpy() / math.sqrt(cfg.head_dim)


@torch.no_grad()
def layer_inputs(state: dict[str, torch.Tensor], cfg: lm.LMConfig, tokens: torch.Tensor, layer: int,
                 chunk: int = 64) -> np.ndarray:
    """The normalised inputs a [N, L, D] (float64 numpy) of `layer`'s attention on windows tokens
    [N, L], computed on the device and in the dtype of `state`."""
    out = []
    dev = state["tok"].device
    for i in range(0, len(tokens), chunk):
        cap: dict = {}
        lm.plain_forward(state, cfg, tokens[i:i + chunk].to(dev), capture=cap)
        out.append(cap[(layer, "a")].double().cpu().numpy())
    return np.concatenate(out)


def causal_attention(X: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """softmax over keys j <= i of X_i^T M X_j, for X [N, L, D]."""
    return C.attention(X, M, torch.eye(M.shape[1], dtype=M.dtype, device=M.device), causal=True)


def sharpness(P: torch.Tensor) -> dict[str, float]:
    """How far attention P [N, L, L] (causal rows) is from uniform, over the queries with at least
    two keys: mean largest weight (uniform: mean 1/(i+1)), mean entropy as a fraction of the uniform
    entropy log(i+1), and the mean total-variation distance to uniform."""
    P = P.double()
    L = P.shape[-1]
    n = torch.arange(1, L + 1, dtype=torch.float64, device=P.device)
    U = torch.ones(L, L, dtype=torch.float64, device=P.device).tril() / n[:, None]
    rows = slice(1, L)
    ent = -(P * torch.log(P.clamp_min(1e-300))).sum(-1)
    return {"max_weight": float(P.max(-1).values[:, rows].mean()), "uniform_max_weight": float((1 / n[rows]).mean()),
            "entropy_ratio": float((ent[:, rows] / torch.log(n[rows])).mean()),
            "tv_to_uniform": float(0.5 * (P - U).abs().sum(-1)[:, rows].mean())}


def train_students(M: np.ndarray, X_train: np.ndarray, X_eval: np.ndarray, ranks: list[int], steps: int, batch: int,
                   lr: float, seed: int, progress: Callable | None = None, curve_every: int = 25) -> dict[str, dict]:
    """SVD-initialised students of every rank, trained together by Adam (one parameter pair each,
    each on its own loss) to match the teacher's causal attention on batches of X_train [N, L, D];
    evaluated in float64 on X_eval. Returns rank -> {init_mse, final_mse, best_mse, curve, and the
    factors A, B (lists, float64) of the better of the initial and the trained student}."""
    Xt = torch.as_tensor(X_train, dtype=torch.float32)
    Xe = torch.as_tensor(X_eval, dtype=torch.float64)
    M64 = torch.as_tensor(M, dtype=torch.float64)
    with torch.no_grad():
        T_train = causal_attention(Xt, M64.float())
        T_eval = causal_attention(Xe, M64)
    out: dict[str, dict] = {}
    params = {}
    for k in ranks:
        A, B, _ = C.svd_factors(M, k)
        with torch.no_grad():
            init = float(C.mse(C.attention(Xe, torch.as_tensor(A), torch.as_tensor(B), causal=True), T_eval))
        params[k] = (torch.tensor(A, dtype=torch.float32, requires_grad=True),
                     torch.tensor(B, dtype=torch.float32, requires_grad=True))
        out[str(k)] = {"init_mse": init, "curve": [], "init_factors": (A, B)}
    if steps > 0:
        opt = torch.optim.Adam([t for k in ranks for t in params[k]], lr=lr)
        gen = torch.Generator().manual_seed(seed)
        for step in (range(steps) if progress is None else progress(range(steps))):
            idx = torch.randint(0, len(Xt), (batch,), generator=gen)
            losses = [C.mse(C.attention(Xt[idx], *params[k], causal=True), T_train[idx]) for k in ranks]
            opt.zero_grad(set_to_none=True)
            torch.stack(losses).sum().backward()
            opt.step()
            if step % curve_every == 0 or step == steps - 1:
                for k, l in zip(ranks, losses):
                    out[str(k)]["curve"].append([step, float(l.detach())])
    for k in ranks:
        row = out[str(k)]
        A, B = (t.detach().double() for t in params[k])
        with torch.no_grad():
            row["final_mse"] = float(C.mse(C.attention(Xe, A, B, causal=True), T_eval))
        A0, B0 = row.pop("init_factors")
        best = (A0, B0) if row["init_mse"] <= row["final_mse"] else (A.numpy(), B.numpy())
        row["best_mse"] = min(row["init_mse"], row["final_mse"])
        row["A"], row["B"] = np.asarray(best[0]).tolist(), np.asarray(best[1]).tolist()
    return out


@torch.no_grad()
def loss_with_head(state: dict[str, torch.Tensor], cfg: lm.LMConfig, inputs: torch.Tensor, targets: torch.Tensor,
                   layer: int, head: int, probs: Callable[[torch.Tensor], torch.Tensor] | None = None,
                   chunk: int = 64) -> float:
    """Mean next-token cross-entropy of the decoder on windows (inputs, targets [N, L]) with head
    `head` of `layer` attending by probs(a) [B, L, L] instead of its own weights (None: unchanged)."""
    total, count = 0.0, 0
    dev = state["tok"].device
    for i in range(0, len(inputs), chunk):
        x, y = inputs[i:i + chunk].to(dev), targets[i:i + chunk].to(dev)

        def override(l, h, a, p):
            return probs(a) if probs is not None and (l, h) == (layer, head) else None

        logits = lm.plain_forward(state, cfg, x, override=override)
        total += float(F.cross_entropy(logits.reshape(-1, cfg.vocab), y.reshape(-1), reduction="sum"))
        count += y.numel()
    return total / count


def student_probs(A, B) -> Callable[[torch.Tensor], torch.Tensor]:
    """The attention of a student with factors A, B [D, d_h]: softmax_causal((a A)(a B)^T)."""
    A = torch.as_tensor(np.asarray(A), dtype=torch.float64)
    B = torch.as_tensor(np.asarray(B), dtype=torch.float64)
    return lambda a: C.attention(a, A.to(a), B.to(a), causal=True)


def uniform_probs(a: torch.Tensor) -> torch.Tensor:
    """Uniform causal attention (the student with W^_Q = 0): the ablation that shows what the head does."""
    L = a.shape[-2]
    U = torch.ones(L, L, dtype=a.dtype, device=a.device).tril()
    return (U / U.sum(-1, keepdim=True)).expand(a.shape[0], L, L)
