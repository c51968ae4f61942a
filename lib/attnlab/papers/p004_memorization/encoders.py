"""Sequence encoders of paper 004 (Def. 1, Propositions 1-3), in torch float64.

A sequence encoder is f_{W,E}(t) = W E(t), W in R^{N x d} (the unembedding), E: [N]^S -> R^d.
Every Transformer with embedding dimension d is one (Prop. 1), so its distribution-task loss

    d_KL(pi, f) = sum_t pi(t) KL(pi_t || softmax(W E(t)))

is bounded below by d_KL(pi, L(N,S,d)) = inf over (W, E): a weighted rank-d softmax
factorization, fitted here with torch.optim.LBFGS in float64 (`fit_encoder`).

* Prop. 2: if d >= N - 1 the infimum is 0 (`exact_encoder`: columns of W span 1^perp, E(t) the
  coordinates of the centred log pi_t); for d < N - 1 a generic full-support pi has KL* > 0.
* Prop. 3 (App. A.5): under Assumption 1 (one-hot conditionals) the circle encoder
  W_j = (cos 2 pi j/N, sin 2 pi j/N), E(t) = W_{g(t)}, f_lam = lam W E has
  d_KL = log(1 + sum_{k=1}^{N-1} exp(-lam (1 - cos(2 pi k/N)))) for every t, -> 0 as lam -> inf.

Reimplemented from the paper (Def. 1, Props. 1-3, App. A.5); no code of the authors is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from attnlab.core.replica import replica_generator

DTYPE = torch.float64


# ----------------------------------------------------------------------------- generators


def _check_T_N(T: int, N: int) -> None:
    if T < 1 or N < 2:
        raise ValueError(f"T={T} sequences must be >= 1 and N={N} tokens >= 2")


def dirichlet_conditionals(T: int, N: int, alpha: float = 1.0, seed: int = 0) -> torch.Tensor:
    """T conditionals pi_t ~ Dirichlet(alpha 1_N), float64 [T, N], from (T, N, alpha, seed) alone.

    Full support (Assumption 2) almost surely; alpha = 1 is uniform on the simplex.
    """
    _check_T_N(T, N)
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha={alpha} must be a finite positive concentration")
    gen = replica_generator({"gen": "dirichlet", "T": T, "N": N, "alpha": alpha}, seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=gen)))
        p = torch.distributions.Dirichlet(torch.full((N,), float(alpha), dtype=DTYPE)).sample((T,))
    return p.clamp_min(1e-300) / p.clamp_min(1e-300).sum(1, keepdim=True)


def zipf_prior(T: int, exponent: float = 1.5, seed: int = 0, shuffle: bool = True) -> torch.Tensor:
    """pi(t) proportional to rank(t)^-exponent, float64 [T]; ranks in random order if `shuffle`."""
    if T < 1:
        raise ValueError(f"T={T} must be >= 1")
    if not (math.isfinite(exponent) and exponent >= 0):
        raise ValueError(f"exponent={exponent} must be finite and >= 0 (0 = uniform)")
    p = torch.arange(1, T + 1, dtype=DTYPE) ** -float(exponent)
    if shuffle:
        gen = replica_generator({"gen": "zipf", "T": T, "s": exponent}, seed)
        p = p[torch.randperm(T, generator=gen)]
    return p / p.sum()


def uniform_prior(T: int) -> torch.Tensor:
    if T < 1:
        raise ValueError(f"T={T} must be >= 1")
    return torch.full((T,), 1.0 / T, dtype=DTYPE)


def _check_pi(prior, cond) -> tuple[torch.Tensor, torch.Tensor]:
    prior = torch.as_tensor(prior, dtype=DTYPE)
    cond = torch.as_tensor(cond, dtype=DTYPE)
    if cond.ndim != 2 or prior.shape != (cond.shape[0],):
        raise ValueError(f"prior.shape={tuple(prior.shape)} and cond.shape={tuple(cond.shape)} must be (T,) and (T, N)")
    if prior.min() < 0 or abs(float(prior.sum()) - 1) > 1e-9:
        raise ValueError(f"prior must be a probability vector; min={float(prior.min()):.3g}, sum={float(prior.sum()):.12g}")
    if cond.min() < 0 or float((cond.sum(1) - 1).abs().max()) > 1e-9:
        raise ValueError("every row of cond must be a probability vector (non-negative, summing to 1)")
    return prior, cond


# ----------------------------------------------------------------------------- the KL objective


def negative_entropy(prior, cond) -> torch.Tensor:
    """sum_t pi(t) sum_j pi_t(j) log pi_t(j), with 0 log 0 = 0."""
    prior, cond = torch.as_tensor(prior, dtype=DTYPE), torch.as_tensor(cond, dtype=DTYPE)
    return (prior[:, None] * torch.xlogy(cond, cond)).sum()


def kl_of_logits(prior, cond, logits) -> torch.Tensor:
    """d_KL(pi, f) = sum_t pi(t) KL(pi_t || softmax(logits_t)); logits [T, N] (differentiable)."""
    prior, cond = torch.as_tensor(prior, dtype=DTYPE), torch.as_tensor(cond, dtype=DTYPE)
    logits = torch.as_tensor(logits, dtype=DTYPE)
    cross = -(prior[:, None] * cond * torch.log_softmax(logits, dim=1)).sum()
    return cross + negative_entropy(prior, cond)


def kl_per_sequence(cond, logits) -> torch.Tensor:
    """KL(pi_t || softmax(logits_t)) for each t, [T]."""
    cond, logits = torch.as_tensor(cond, dtype=DTYPE), torch.as_tensor(logits, dtype=DTYPE)
    return (torch.xlogy(cond, cond) - cond * torch.log_softmax(logits, dim=1)).sum(1)


def encoder_kl(prior, cond, W, E) -> float:
    """d_KL(pi, f_{W,E}), W [N, d], E [T, d]."""
    return float(kl_of_logits(prior, cond, torch.as_tensor(E, dtype=DTYPE) @ torch.as_tensor(W, dtype=DTYPE).T))


# ----------------------------------------------------------------------------- optimal encoders


@dataclass(frozen=True, eq=False)
class EncoderFit:
    """Best rank-d sequence encoder found: kl = d_KL(pi, f_{W,E}) (an upper estimate of KL*).

    kl_restarts: the final KL of every LBFGS run (run 0 starts from the weighted SVD of the
    centred log-probabilities, the others from random draws); evaluations: closure calls per run.
    """

    d: int
    kl: float
    W: np.ndarray
    E: np.ndarray
    kl_restarts: list = field(default_factory=list)
    evaluations: list = field(default_factory=list)


def centred_log(cond) -> torch.Tensor:
    """log pi_t - mean_j log pi_t(j): the logits of pi_t with the shift fixed (full support needed)."""
    cond = torch.as_tensor(cond, dtype=DTYPE)
    if cond.min() <= 0:
        raise ValueError("centred_log needs full-support conditionals (Assumption 2)")
    L = cond.log()
    return L - L.mean(1, keepdim=True)


def exact_encoder(cond, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Prop. 2's construction for d >= N - 1: W [N, d] whose first N - 1 columns are an orthonormal
    basis of 1^perp (the rest zero), E(t) = W^T (centred log pi_t), so W E(t) = centred log pi_t and
    softmax(W E(t)) = pi_t exactly."""
    cond = torch.as_tensor(cond, dtype=DTYPE)
    T, N = cond.shape
    if d < N - 1:
        raise ValueError(f"d={d} < N - 1 = {N - 1}: Prop. 2's exact encoder needs d >= N - 1")
    W = torch.zeros((N, d), dtype=DTYPE)
    W[:, : N - 1] = torch.linalg.svd(torch.eye(N, dtype=DTYPE) - 1.0 / N).U[:, : N - 1]  # basis of 1^perp
    E = centred_log(cond) @ W
    return W, E


def svd_init(prior, cond, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank-d truncation of the sqrt(pi)-weighted centred log-probabilities: W [N, d], E [T, d].

    Exact (KL = 0) when d >= N - 1 (Prop. 2); a good start for LBFGS otherwise.
    """
    prior, cond = _check_pi(prior, cond)
    w = prior.clamp_min(1e-300).sqrt()
    U, s, Vh = torch.linalg.svd(w[:, None] * centred_log(cond), full_matrices=False)
    k = min(d, s.numel())
    W = torch.zeros((cond.shape[1], d), dtype=DTYPE)
    E = torch.zeros((cond.shape[0], d), dtype=DTYPE)
    W[:, :k] = Vh[:k].T * s[:k].sqrt()
    E[:, :k] = U[:, :k] * s[:k].sqrt() / w[:, None]
    return W, E


def _lbfgs(prior, cond, W0, E0, max_iter: int) -> tuple[float, torch.Tensor, torch.Tensor, int]:
    W = W0.clone().requires_grad_(True)
    E = E0.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([W, E], lr=1.0, max_iter=max_iter, max_eval=int(max_iter * 1.25) + 10,
                            tolerance_grad=1e-13, tolerance_change=1e-16, history_size=20,
                            line_search_fn="strong_wolfe")
    calls = [0]

    def closure():
        opt.zero_grad()
        loss = kl_of_logits(prior, cond, E @ W.T)
        loss.backward()
        calls[0] += 1
        return loss

    opt.step(closure)
    with torch.no_grad():
        kl = float(kl_of_logits(prior, cond, E @ W.T))
    return kl, W.detach(), E.detach(), calls[0]


def fit_encoder(prior, cond, d: int, restarts: int = 1, max_iter: int = 1000, seed: int = 0,
                init: tuple | None = None) -> EncoderFit:
    """d_KL(pi, L(N, S, d)) estimated by LBFGS (float64) over W [N, d] and E [T, d].

    Run 0 starts from `svd_init` (or from `init` = (W, E) when given, e.g. a warm start);
    runs 1 .. restarts-1 from N(0, 1/d) draws seeded by (T, N, d, run, seed). The best run is kept.
    The returned KL is an upper estimate of the infimum (LBFGS finds a local minimum).
    """
    prior, cond = _check_pi(prior, cond)
    T, N = cond.shape
    if d < 1:
        raise ValueError(f"d={d} must be >= 1")
    if restarts < 1 or max_iter < 1:
        raise ValueError(f"restarts={restarts} and max_iter={max_iter} must both be >= 1")
    best = None
    kls, evals = [], []
    for run in range(restarts):
        if run == 0:
            W0, E0 = init if init is not None else svd_init(prior, cond, d)
            W0, E0 = torch.as_tensor(W0, dtype=DTYPE), torch.as_tensor(E0, dtype=DTYPE)
        else:
            gen = replica_generator({"encoder": "random-init", "T": T, "N": N, "d": d, "run": run}, seed)
            W0 = torch.randn((N, d), generator=gen, dtype=DTYPE) / math.sqrt(d)
            E0 = torch.randn((T, d), generator=gen, dtype=DTYPE)
        kl, W, E, calls = _lbfgs(prior, cond, W0, E0, max_iter)
        kls.append(kl)
        evals.append(calls)
        if best is None or kl < best[0]:
            best = (kl, W, E)
    return EncoderFit(d=d, kl=best[0], W=best[1].numpy(), E=best[2].numpy(), kl_restarts=kls, evaluations=evals)


def min_kl_curve(prior, cond, d_list, restarts: int = 1, max_iter: int = 1000, seed: int = 0) -> list[EncoderFit]:
    """fit_encoder for each d in d_list (Prop. 2: the curve reaches 0 at d = N - 1)."""
    return [fit_encoder(prior, cond, d, restarts, max_iter, seed) for d in d_list]


# ----------------------------------------------------------------------------- circle encoder (Prop. 3)


def circle_unembedding(N: int) -> np.ndarray:
    """W [N, 2], rows W_j = (cos 2 pi j/N, sin 2 pi j/N) (App. A.5)."""
    if N < 2:
        raise ValueError(f"N={N} must be >= 2")
    a = 2 * np.pi * np.arange(N) / N
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def circle_kl_closed_form(N: int, lam) -> np.ndarray:
    """log(1 + sum_{k=1}^{N-1} exp(-lam (1 - cos(2 pi k/N)))), the same for every sequence (Prop. 3)."""
    if N < 2:
        raise ValueError(f"N={N} must be >= 2")
    lam = np.asarray(lam, dtype=np.float64)
    if np.any(lam < 0) or not np.all(np.isfinite(lam)):
        raise ValueError("lam must be finite and >= 0")
    gaps = 1 - np.cos(2 * np.pi * np.arange(1, N) / N)
    return np.log1p(np.exp(-lam[..., None] * gaps).sum(-1))


def circle_kl_direct(N: int, lam, targets, prior=None) -> np.ndarray:
    """d_KL(pi, f_lam) evaluated directly: f_lam(t) = lam W W_{g(t)}, KL = -sum_t pi(t) log softmax(f)_g(t)
    (one-hot conditionals: the entropy term is 0). lam may be an array; prior defaults to uniform."""
    targets = np.asarray(targets)
    if targets.ndim != 1 or targets.min() < 0 or targets.max() >= N:
        raise ValueError(f"targets must be a 1-D array of tokens in [0, N={N})")
    T = len(targets)
    prior = uniform_prior(T) if prior is None else torch.as_tensor(prior, dtype=DTYPE)
    W = torch.as_tensor(circle_unembedding(N), dtype=DTYPE)
    E = W[torch.as_tensor(targets)]  # E(t) = W_{g(t)}, [T, 2]
    lam = torch.as_tensor(np.asarray(lam, dtype=np.float64))
    logits = lam.reshape(-1, 1, 1) * (E @ W.T)  # [L, T, N]
    logp = torch.log_softmax(logits, dim=-1)[:, torch.arange(T), torch.as_tensor(targets)]
    return (-(prior * logp).sum(-1)).reshape(lam.shape).numpy()
