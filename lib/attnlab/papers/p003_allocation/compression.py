"""Corollary 5.1 and Fig. 4: compressing one head's W_Q^T W_K to a student of head dimension d_h.

Exact bounds (float64) for the error at SVD initialisation. For one query q and keys x_1..x_L
(||q||, ||x_i|| <= B), teacher logits z_i = q^T W x_i and student logits z'_i = q^T W_h x_i with
W_h the rank-d_h truncated SVD of W, Delta z = z' - z has |Delta z_i| <= B^2 sigma_{d_h+1}. Along
the segment z_t = z + t Delta z the range max - min is at most R = max(range z, range z'), so every
probability is at most e^R / L, ||J(z_t)||_2 <= p_(1)(z_t) <= e^R / L, and the mean-value theorem gives

    ||p' - p||_2   <= e^R / L * ||Delta z||_2    <= e^R B^2 sigma_{d_h+1} / sqrt(L)
    ||p' - p||_inf <= e^R / L * range(Delta z)  <= 2 e^R B^2 sigma_{d_h+1} / L

(the i-th row of J Delta z is p_i (Delta z_i - p . Delta z)). Since sigma_{d_h+1} <= Lambda_h^H
(the tail sum), Corollary 5.1's O(Lambda / L) holds entrywise; in l2 the rate is L^(-1/2).

Students of a pretrained head (Fig. 4): the teacher's logits with biases are a bilinear form of
the augmented input x~ = [x, 1]: z_ij = x~_i^T M x~_j with M = W~_Q W~_K^T / sqrt(d_H),
W~ = [W; b]. The student keeps rank d_h: W^_Q = U_k S_k^(1/2), W^_K = V_k S_k^(1/2) from the SVD of
M (exact at d_h = rank M), then Adam on the mean squared error of the attention weights.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.papers.p003_allocation import saturation as S


def svd_factors(M: np.ndarray, d_h: int, usv: tuple | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W^_Q, W^_K, singular values) with W^_Q W^_K^T the rank-d_h truncated SVD of M
    (W^_Q = U_k S_k^(1/2), W^_K = V_k S_k^(1/2); [n, d_h] each). `usv`: M's SVD (U, s, Vt) when it
    is already computed (one SVD for every rank of a sweep)."""
    U, s, Vt = usv if usv is not None else np.linalg.svd(np.asarray(M, dtype=np.float64))
    r = np.sqrt(s[:d_h])
    return U[:, :d_h] * r, Vt[:d_h].T * r, s


def init_errors(W: np.ndarray, W_h: np.ndarray, X: np.ndarray, q: np.ndarray, sigma_next: float) -> dict[str, float]:
    """Errors of one attention row at SVD initialisation and their exact bounds (module docstring).
    X [L, D] keys, q [D] the query; logits z = X W^T q (as `saturation.compression_errors`).
    Returns the l2 and l_inf errors, the mean-value bounds (`l2_mv`, `linf_mv`) and the
    sigma_{d_h+1} bounds (`l2_sigma`, `linf_sigma`, with B = the largest token norm), R and L."""
    z = X @ (W.T @ q)
    zh = X @ (W_h.T @ q)
    p, ph = S.softmax(z), S.softmax(zh)
    e = ph - p
    dz = zh - z
    L = len(z)
    R = max(np.ptp(z), np.ptp(zh))
    B2 = float(np.linalg.norm(q) * np.linalg.norm(X, axis=1).max())
    growth = np.exp(R) / L
    return {"l2": float(np.linalg.norm(e)), "linf": float(np.abs(e).max()), "mse": float(np.mean(e * e)),
            "l2_mv": float(growth * np.linalg.norm(dz)), "linf_mv": float(growth * np.ptp(dz)),
            "l2_sigma": float(np.exp(R) * B2 * sigma_next / np.sqrt(L)),
            "linf_sigma": float(2 * np.exp(R) * B2 * sigma_next / L), "dz_inf": float(np.abs(dz).max()),
            "dz_bound": B2 * sigma_next, "R": float(R), "L": L}


def augment(x: np.ndarray) -> np.ndarray:
    """[..., D] -> [..., D + 1]: the input with a constant 1 appended (absorbs the biases)."""
    return np.concatenate([x, np.ones(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)


def bilinear_form(W_Q: np.ndarray, b_Q: np.ndarray, W_K: np.ndarray, b_K: np.ndarray) -> np.ndarray:
    """M = [W_Q; b_Q] [W_K; b_K]^T / sqrt(d_H) for one head in the y = x W + b layout
    (W_Q, W_K [D, d_H]): the teacher's logits are x~_i^T M x~_j."""
    d_H = W_Q.shape[1]
    return np.vstack([W_Q, b_Q[None]]) @ np.vstack([W_K, b_K[None]]).T / np.sqrt(d_H)


def attention(Xa: torch.Tensor, A: torch.Tensor, B: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """softmax over keys of (Xa A)(Xa B)^T for inputs Xa [N, L, n] and factors A, B [n, k]."""
    z = (Xa @ A) @ (Xa @ B).transpose(-1, -2)
    if causal:
        L = z.shape[-1]
        z = z.masked_fill(torch.ones(L, L, dtype=torch.bool, device=z.device).triu(1), float("-inf"))
    return torch.softmax(z, dim=-1)


def mse(P: torch.Tensor, T: torch.Tensor) -> torch.Tensor:
    """Mean squared error of attention weights over all (sequence, query, key) entries."""
    return ((P - T) ** 2).mean()


def train_students(M: np.ndarray, X_train, X_eval: np.ndarray, ranks: list[int], steps: int, batch: int,
                   lr: float, seed, causal: bool = False, progress=None, curve_every: int = 25,
                   device="cpu", usv: tuple | None = None):
    """SVD-initialised students of every rank in `ranks`, trained together by Adam (each on its own
    loss; Adam is per-parameter, so they stay independent) to match the teacher's attention on
    batches of `X_train` [N, L, n] (augmented inputs); evaluated in float64 on `X_eval`; on `device`.
    Returns rank -> {init_mse, final_mse, best_mse = min(init, final), curve [[step, train loss]]}.
    Seeds as replicas: with `seed` a list of seeds and `X_train` a list of training sets (one per
    seed), the students of every seed train in the same program (`fit_students_seeds`) and a list of
    such dicts comes back, one per seed (each equal to that seed trained alone). `usv`: M's SVD if
    already computed."""
    many = isinstance(seed, (list, tuple))
    seeds, sets = (list(seed), list(X_train)) if many else ([seed], [X_train])
    if len(seeds) != len(sets):
        raise ValueError(f"{len(seeds)} seeds but {len(sets)} training sets")
    Xe = torch.as_tensor(X_eval, dtype=torch.float64).to(device)
    M64 = torch.as_tensor(M, dtype=torch.float64).to(device)
    Mt = M64.float()
    trains = []
    with torch.no_grad():
        for s, X in zip(seeds, sets):
            Xt = torch.as_tensor(X, dtype=torch.float32).to(device)
            trains.append((s, Xt, torch.softmax(_masked(Xt @ Mt @ Xt.transpose(1, 2), causal), dim=-1)))
        T_eval = torch.softmax(_masked(Xe @ M64 @ Xe.transpose(1, 2), causal), dim=-1)
    if usv is None:
        usv = np.linalg.svd(np.asarray(M, dtype=np.float64))  # once for every rank
    inits = {k: svd_factors(M, k, usv)[:2] for k in ranks}
    outs = fit_students_seeds(inits, lambda X, A, B, k: attention(X, A, B, causal), trains, Xe, T_eval, steps, batch,
                              lr, progress, curve_every)  # on the device of the training sets
    return outs if many else outs[0]


def fit_students(inits: dict, attn, Xt: torch.Tensor, Xe: torch.Tensor, T_train: torch.Tensor, T_eval: torch.Tensor,
                 steps: int, batch: int, lr: float, seed: int, progress=None, curve_every: int = 25) -> dict[str, dict]:
    """Train the students `inits` (rank -> (A, B) float64 arrays) together by Adam on the attention
    MSE against the teacher's T_train (float32 inputs Xt), `attn(X, A, B, rank)` giving a
    student's attention; each student is evaluated in float64 on (Xe, T_eval) before and after. Runs
    on the device of Xt (the batches' indices are drawn on the CPU, from `seed` alone)."""
    return fit_students_seeds(inits, attn, [(seed, Xt, T_train)], Xe, T_eval, steps, batch, lr, progress,
                              curve_every)[0]


def fit_students_seeds(inits: dict, attn, trains: list, Xe: torch.Tensor, T_eval: torch.Tensor, steps: int,
                       batch: int, lr: float, progress=None, curve_every: int = 25) -> list[dict[str, dict]]:
    """`fit_students` for several seeds as replicas of one program: `trains` holds (seed, Xt, T_train)
    per seed (its own training set and batch order, drawn from its seed alone); every seed's students
    start from the same `inits`, and all of them take one Adam step per step on the sum of their own
    losses (each student's gradient is its own loss's, so a seed trained here equals it trained
    alone). Returns one rank -> row dict per seed, in the order of `trains`. (Stacking a rank's
    students over the seeds into one batched product was measured no faster on one CPU thread: the
    products are arithmetic-bound, not launch-bound.)"""
    dev = trains[0][1].device
    ranks = list(inits)
    init = {}
    for k in ranks:
        A, B = inits[k]
        with torch.no_grad():
            init[k] = float(mse(attn(Xe, torch.as_tensor(A).to(dev), torch.as_tensor(B).to(dev), k), T_eval))
    params = [{k: (torch.tensor(inits[k][0], dtype=torch.float32, device=dev, requires_grad=True),
                   torch.tensor(inits[k][1], dtype=torch.float32, device=dev, requires_grad=True)) for k in ranks}
              for _ in trains]
    outs = [{str(k): {"init_mse": init[k], "curve": []} for k in ranks} for _ in trains]
    if steps > 0 and ranks:
        opt = torch.optim.Adam([t for group in params for k in ranks for t in group[k]], lr=lr)
        gens = [torch.Generator().manual_seed(seed) for seed, _, _ in trains]
        it = range(steps) if progress is None else progress(range(steps))
        for step in it:
            losses = []
            for (_, Xt, T_train), gen, group in zip(trains, gens, params):
                idx = torch.randint(0, len(Xt), (batch,), generator=gen).to(dev)
                xb, tb = Xt[idx], T_train[idx]
                losses.append([mse(attn(xb, *group[k], k), tb) for k in ranks])
            opt.zero_grad(set_to_none=True)
            torch.stack([l for ls in losses for l in ls]).sum().backward()
            opt.step()
            if step % curve_every == 0 or step == steps - 1:
                for out, ls in zip(outs, losses):
                    for k, l in zip(ranks, ls):
                        out[str(k)]["curve"].append([step, float(l.detach())])
    for out, group in zip(outs, params):
        for k in ranks:
            with torch.no_grad():
                A, B = (t.detach().double() for t in group[k])
                final = float(mse(attn(Xe, A, B, k), T_eval))
            row = out[str(k)]
            row["final_mse"] = final
            row["best_mse"] = min(row["init_mse"], final)
    return outs


# --- RoPE teachers (Llama layout: LiteLlama, TinyLlama) -----------------------------------------

def rope_theta(config) -> float:
    """The RoPE base of a transformers config (5.x: config.rope_parameters["rope_theta"]; 4.x:
    config.rope_theta); only plain RoPE is supported (no scaling variants)."""
    rp = getattr(config, "rope_parameters", None) or {}
    kind = rp.get("rope_type", "default")
    if kind != "default":
        raise ValueError(f"RoPE type {kind!r}: only plain rotary embeddings are supported")
    theta = rp.get("rope_theta")
    if theta is None:
        theta = getattr(config, "rope_theta", 10000.0)
    return float(theta)


def rope_tables(L: int, d: int, theta: float, dtype=torch.float64, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [L, d] of rotary embeddings for head dimension d (even), the Hugging Face Llama
    convention: frequencies theta^(-2k/d), k < d/2, repeated for the two halves."""
    if d % 2:
        raise ValueError(f"RoPE needs an even head dimension; got {d}")
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(L, dtype=torch.float64)[:, None] * inv[None]
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().to(device=device, dtype=dtype), emb.sin().to(device=device, dtype=dtype)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x * cos + rotate_half(x) * sin over the last axis (x [..., L, d])."""
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], dim=-1)
    return x * cos + rot * sin


def rope_attention(X: torch.Tensor, A: torch.Tensor, B: torch.Tensor, theta: float) -> torch.Tensor:
    """Causal softmax of rope(X A) rope(X B)^T for inputs X [N, L, D] and factors A, B [D, k] (k even):
    a student head of dimension k with its own rotary embeddings (head dimension k)."""
    L, k = X.shape[-2], A.shape[-1]
    cos, sin = rope_tables(L, k, theta, X.dtype, X.device)
    z = rope(X @ A, cos, sin) @ rope(X @ B, cos, sin).transpose(-1, -2)
    return torch.softmax(_masked(z, True), dim=-1)


def rope_students(W_Q: np.ndarray, W_K: np.ndarray, theta: float, X_train, X_eval: np.ndarray,
                  ranks: list[int], steps: int, batch: int, lr: float, seed, progress=None,
                  curve_every: int = 25, device="cpu", chunk: int = 64):
    """Students of a causal RoPE head (W_Q, W_K [D, d_H], no biases; inputs after the layer's norm)
    as the paper builds them: for d_h < d_H the truncated SVD of W_Q W_K^T / sqrt(d_H) (which
    ignores the rotation), with rotary embeddings of head dimension d_h; at d_h = d_H the teacher's
    own projections (exact). Trained by Adam on the causal attention MSE, on `device`; the teacher's
    attention on the training spans is computed `chunk` spans at a time (its logits, mask and softmax
    of all spans at once would need three times its size). A list of seeds with a list of training
    sets: the seeds train as replicas of one program, one result per seed (as `train_students`)."""
    d_H = W_Q.shape[1]
    if any(k % 2 or k > d_H for k in ranks):
        raise ValueError(f"RoPE students need even ranks <= d_H = {d_H}; got {ranks}")
    M = W_Q @ W_K.T / np.sqrt(d_H)
    usv = np.linalg.svd(M)  # once for every rank
    inits = {k: (svd_factors(M, k, usv)[:2] if k < d_H else (W_Q / d_H ** 0.25, W_K / d_H ** 0.25)) for k in ranks}
    many = isinstance(seed, (list, tuple))
    seeds, sets = (list(seed), list(X_train)) if many else ([seed], [X_train])
    if len(seeds) != len(sets):
        raise ValueError(f"{len(seeds)} seeds but {len(sets)} training sets")
    Xe = torch.as_tensor(X_eval, dtype=torch.float64).to(device)
    s = d_H ** 0.25
    trains = []
    with torch.no_grad():
        Aq, Ak = (torch.as_tensor(W / s, dtype=torch.float32).to(device) for W in (W_Q, W_K))
        for sd, X in zip(seeds, sets):
            Xt = torch.as_tensor(X, dtype=torch.float32).to(device)
            trains.append((sd, Xt, torch.cat([rope_attention(Xt[i:i + chunk], Aq, Ak, theta)
                                              for i in range(0, len(Xt), chunk)])))
        T_eval = rope_attention(Xe, torch.as_tensor(W_Q / s).to(device), torch.as_tensor(W_K / s).to(device), theta)
    outs = fit_students_seeds(inits, lambda X, A, B, k: rope_attention(X, A, B, theta), trains, Xe, T_eval, steps,
                              batch, lr, progress, curve_every)
    return outs if many else outs[0]


def rope_uniform_mse(W_Q: np.ndarray, W_K: np.ndarray, theta: float, X_eval: np.ndarray) -> float:
    """The MSE of uniform causal attention against the RoPE teacher."""
    s = W_Q.shape[1] ** 0.25
    Xe = torch.as_tensor(X_eval, dtype=torch.float64)
    T = rope_attention(Xe, torch.as_tensor(W_Q / s), torch.as_tensor(W_K / s), theta)
    U = torch.softmax(_masked(torch.zeros_like(T), True), dim=-1)
    return float(mse(U, T))


def _masked(z: torch.Tensor, causal: bool) -> torch.Tensor:
    if not causal:
        return z
    L = z.shape[-1]
    return z.masked_fill(torch.ones(L, L, dtype=torch.bool, device=z.device).triu(1), float("-inf"))


def uniform_mse(X_eval: np.ndarray, M: np.ndarray, causal: bool = False) -> float:
    """The MSE of uniform attention (a student with W^_Q = 0) against the teacher: the scale that
    makes a student's MSE readable."""
    Xe = torch.as_tensor(X_eval, dtype=torch.float64)
    T = torch.softmax(_masked(Xe @ torch.as_tensor(M, dtype=torch.float64) @ Xe.transpose(1, 2), causal), dim=-1)
    U = torch.softmax(_masked(torch.zeros_like(T), causal), dim=-1)
    return float(mse(U, T))
