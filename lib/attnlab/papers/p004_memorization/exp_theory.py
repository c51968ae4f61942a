"""Theory chapters of paper 004: the formalism (Eqs. 1-2), Propositions 1-3 (the rank-d bottleneck
and the circle encoder), Lemmas 2-3 (rank of the attention features) and Theorem 1 with eps > 0.

Every unit of work (one model config, one encoder fit, one construction) is stored by its config,
so reruns resume; a read-only context (`Experiment.stored`) raises MissingResult when one is missing.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError
from attnlab.core.progress import tqdm
from attnlab.core.train import MaskedAdam, linear_lr

from . import approx, construction, encoders
from .models import AoTConfig, ReplicaAoT

EXACT = 1e-12  # max |difference| between two float64 evaluations of the same AoT


# =============================================================================================
# Setup and formalism: Eqs. (1)-(2), per head and stacked.

SETUP = (
    Param("configs", "int_rows", "model configs [N, S, d, d_h, H]; d_h <= d", min=1, width=5),
    Param("n_seq", "int", "sequences evaluated per config (all N^S when fewer)", min=1, max=100_000),
    Param("seed", "int", "seed of the random weights and sequences", min=0),
)


def random_weights(N: int, S: int, d: int, d_h: int, H: int, seed: int) -> construction.AoTWeights:
    """A random AoT of Eq. (2) with full W_QK^h = (W_Q^h)^T W_K^h (W_Q^h, W_K^h in R^{d_h x d})."""
    rng = np.random.default_rng(seed)
    return construction.AoTWeights(
        e=rng.standard_normal((N, d)), pos=rng.standard_normal((S, d)),
        W_Q=rng.standard_normal((H, d_h, d)) / d**0.5, W_K=rng.standard_normal((H, d_h, d)) / d**0.5,
        W_V=rng.standard_normal((H, d_h, d)) / d**0.5, W_O=rng.standard_normal((H, d, d_h)) / d_h**0.5,
        W_U=rng.standard_normal((N, d)) / d**0.5)


def forward_per_head(w: construction.AoTWeights, tokens: np.ndarray, query: str = "last") -> np.ndarray:
    """Eqs. (1)-(2) head by head, as written: raw_s = x_q^T W_QK^h x_s, a^h = softmax_s(raw),
    A^h = sum_s a^h_s x_s, T(t) = W_U (x_S + sum_h W_O^h W_V^h A^h). query="last": x_q = x_S
    (App. A.1, the reading used everywhere); query="same": x_q = x_s, Eq. (1) as printed (erratum 1)."""
    x = w.e[tokens] + w.pos  # [T, S, d]
    out = x[:, -1].copy()
    for h in range(w.H):
        W_QK = w.W_Q[h].T @ w.W_K[h]
        if query == "last":
            raw = np.einsum("ti,ij,tsj->ts", x[:, -1], W_QK, x)
        else:
            raw = np.einsum("tsi,ij,tsj->ts", x, W_QK, x)
        a = np.exp(raw - raw.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        A_h = np.einsum("ts,tsd->td", a, x)
        out += A_h @ (w.W_O[h] @ w.W_V[h]).T
    return out @ w.W_U.T


def stacked_matrices(w: construction.AoTWeights) -> tuple[np.ndarray, np.ndarray]:
    """W_O = [W_O^1 ... W_O^H] in R^{d x H d_h} and W_V = blockdiag(W_V^h) in R^{H d_h x H d} (§2)."""
    H, d_h, d = w.W_V.shape
    W_O = np.concatenate(list(w.W_O), axis=1) if H else np.zeros((d, 0))
    W_V = np.zeros((H * d_h, H * d))
    for h in range(H):
        W_V[h * d_h:(h + 1) * d_h, h * d:(h + 1) * d] = w.W_V[h]
    return W_O, W_V


def forward_stacked(w: construction.AoTWeights, tokens: np.ndarray) -> np.ndarray:
    """Eq. (2) in the stacked form T(t) = W_U (x_S + W_O W_V A(t)), A(t) = [A^1; ...; A^H] in R^{Hd}."""
    x = w.e[tokens] + w.pos
    a = construction.attention_pattern(w, tokens)  # [T, H, S]
    A = np.einsum("ths,tsd->thd", a, x).reshape(len(tokens), -1)  # [T, H d]
    W_O, W_V = stacked_matrices(w)
    return (x[:, -1] + A @ (W_O @ W_V).T) @ w.W_U.T


def forward_replica(w: construction.AoTWeights, tokens: np.ndarray, seed: int = 0) -> np.ndarray:
    """The same weights in models.ReplicaAoT (float64). ReplicaAoT scores are (W_Q x_S)^T (W_K x_s) / sqrt(d_h);
    W_Q is multiplied by sqrt(d_h) so that its W_QK is the paper's."""
    model = ReplicaAoT([AoTConfig(w.N, w.S, w.d, w.d_h, w.H, seed)], dtype=torch.float64)
    for name, value in (("E", w.e), ("P", w.pos), ("W_Q", w.W_Q * math.sqrt(w.d_h)), ("W_K", w.W_K),
                        ("W_V", w.W_V), ("W_O", w.W_O), ("W_U", w.W_U)):
        model.place(name, 0, torch.as_tensor(value))
    with torch.no_grad():
        return model(torch.as_tensor(tokens))[0].numpy()


def compute_setup(ctx: Context) -> dict:
    cfg = ctx.config
    rows = []
    for N, S, d, d_h, H in tqdm(cfg["configs"], desc="Eqs. 1-2", disable=not ctx.progress):
        if d_h > d:
            raise ParameterError(f"parameter 'configs': row {[N, S, d, d_h, H]} has d_h={d_h} > d={d} (footnote 1)")
        key = {"unit": "setup", "N": N, "S": S, "d": d, "d_h": d_h, "H": H, "n_seq": cfg["n_seq"], "seed": cfg["seed"]}

        def compute(N=N, S=S, d=d, d_h=d_h, H=H):
            tokens, _ = construction.random_association_task(N, S, min(cfg["n_seq"], N**S), seed=cfg["seed"])
            w = random_weights(N, S, d, d_h, H, cfg["seed"])
            per_head = forward_per_head(w, tokens)
            stacked = forward_stacked(w, tokens)
            ref = construction.aot_forward(w, tokens)
            rep = forward_replica(w, tokens)
            same = forward_per_head(w, tokens, query="same")
            sv = np.linalg.svd(per_head, compute_uv=False)
            W_O, W_V = stacked_matrices(w)
            return {"n_seq": len(tokens), "scale": float(np.abs(per_head).max()),
                    "stacked": float(np.abs(per_head - stacked).max()),
                    "construction": float(np.abs(per_head - ref).max()),
                    "replica": float(np.abs(per_head - rep).max()),
                    "erratum": float(np.abs(per_head - same).max()),
                    "logit_rank": int(np.sum(sv > 1e-10 * sv[0])), "logit_sv": (sv / sv[0]).tolist(),
                    "W_O_shape": list(W_O.shape), "W_V_shape": list(W_V.shape)}

        rows.append({"N": N, "S": S, "d": d, "d_h": d_h, "H": H, **ctx.unit(key, compute)})
    return {"config": cfg, "rows": rows}


def claims_setup(result: dict) -> ClaimsTable:
    rows = result["rows"]
    t = ClaimsTable()
    for key, name, text in (("E1", "stacked", "stacked form W_U(x_S + W_O W_V A) = per-head Eqs. (1)–(2)"),
                            ("E2", "construction", "construction.aot_forward = per-head Eqs. (1)–(2)"),
                            ("E3", "replica", "models.ReplicaAoT (√d_h folded into W_QK) = per-head Eqs. (1)–(2)")):
        worst = max(r[name] for r in rows)
        t.add(key, f"{text}, largest abs. difference over {len(rows)} configs", paper="equal", ours=float(f"{worst:.2g}"),
              holds=worst < EXACT, tolerance="< 1e-12", asserted=True)
    shapes = all(r["W_O_shape"] == [r["d"], r["H"] * r["d_h"]] and r["W_V_shape"] == [r["H"] * r["d_h"], r["H"] * r["d"]]
                 for r in rows)
    t.add("E4", "W_O ∈ R^{d×H d_h}, block-diagonal W_V ∈ R^{H d_h×H d}, A(t) ∈ R^{Hd}", paper="§2",
          ours="all shapes match" if shapes else "mismatch", holds=shapes, tolerance="exact", asserted=True)
    least = min(r["erratum"] for r in rows)
    t.add("err1", "Eq. (1) as printed (query x_s, not x_S) is a different model: least abs. difference", paper="x_S (App. A.1)",
          ours=least, holds=least > 1e-3, tolerance="> 1e-3", asserted=True)
    ok = all(r["logit_rank"] <= r["d"] for r in rows)
    t.add("P1", "the logit matrix [T(t)]_t has rank ≤ d: the AoT is a rank-d sequence encoder (§3)",
          paper="≤ d", ours=", ".join(f"{r['logit_rank']}/{r['d']}" for r in rows), holds=ok, tolerance="exact",
          asserted=True)
    return t


# =============================================================================================
# Propositions 1-3: the rank-d bottleneck and the circle encoder.

PROPS = (
    Param("N", "int", "vocabulary size", min=2, max=64),
    Param("S", "int", "context length; the sequences are all N^S of them", min=1, max=4),
    Param("alpha", "float", "Dirichlet concentration of the conditionals pi_t", min=1e-3, max=1e3),
    Param("pi_seed", "int", "seed of the conditionals", min=0),
    Param("d_list", "int_list", "embedding dimensions of the optimal-encoder fits", min=1, max=64),
    Param("restarts", "int", "LBFGS runs per d (the first from the SVD start)", min=1, max=20),
    Param("max_iter", "int", "LBFGS iterations per run", min=1, max=100_000),
    Param("aot_d_list", "int_list", "d = d_h of the trained AoTs (Prop. 1 check)", min=1, max=64),
    Param("aot_H", "int", "heads of the trained AoTs", min=1, max=256),
    Param("aot_steps", "int", "full-batch Adam steps on the KL loss", min=1, max=1_000_000),
    Param("aot_lr", "float", "Adam learning rate (linear decay to lr/10)", min=1e-6, max=1.0),
    Param("circle_N", "int_list", "vocabulary sizes of the circle construction (Prop. 3)", min=2, max=100_000),
    Param("n_lam", "int", "lambda grid points, log-spaced in [0.1, 1e4]", min=2, max=10_000),
)


def _pi(N: int, S: int, alpha: float, pi_seed: int, prior: str = "uniform", exponent: float = 1.5):
    T = N**S
    p = encoders.uniform_prior(T) if prior == "uniform" else encoders.zipf_prior(T, exponent, pi_seed)
    return p, encoders.dirichlet_conditionals(T, N, alpha, pi_seed)


def train_aot_kl(configs: list[AoTConfig], tokens: torch.Tensor, prior: torch.Tensor, cond: torch.Tensor,
                 steps: int, lr: float, device="cpu", curve_every: int = 25, progress: bool = False) -> dict:
    """Full-batch Adam on d_KL(pi, T) (soft targets), replica-batched, float64.
    Returns the final KL per replica and the curve (every `curve_every` steps)."""
    model = ReplicaAoT(configs, dtype=torch.float64, device=device)
    params = list(model.parameters())
    opt = MaskedAdam(params)
    prior, cond, tokens = prior.to(device), cond.to(device), tokens.to(device)
    neg_h = encoders.negative_entropy(prior, cond)
    schedule = linear_lr(lr, lr / 10, steps)
    active = torch.ones(len(configs), dtype=torch.bool, device=device)
    curve, steps_at = [], []

    def kl():
        return -(prior[None, :, None] * cond[None] * torch.log_softmax(model(tokens), -1)).sum((1, 2)) + neg_h

    for step in tqdm(range(steps), desc="AoT on the KL loss", disable=not progress, mininterval=5.0, leave=False):
        for p in params:
            p.grad = None
        loss = kl()
        if step % curve_every == 0:
            curve.append(loss.detach().cpu().tolist())
            steps_at.append(step)
        loss.sum().backward()
        opt.step(torch.full((len(configs),), schedule(step), dtype=torch.float64, device=device), active)
    with torch.no_grad():
        final = kl().cpu().tolist()
    curve.append(final)
    steps_at.append(steps)
    return {"kl": final, "curve": curve, "steps": steps_at}


def compute_props(ctx: Context) -> dict:
    cfg = ctx.config
    N, S = cfg["N"], cfg["S"]
    if N**S > 4096:
        raise ParameterError(f"parameters 'N', 'S': N^S = {N**S} sequences; at most 4096 allowed")
    bad = [d for d in cfg["aot_d_list"] if d not in cfg["d_list"]]
    if bad:
        raise ParameterError(f"parameter 'aot_d_list': value {bad} is not allowed; each d must be in d_list {cfg['d_list']}")
    pi_key = {"N": N, "S": S, "alpha": cfg["alpha"], "pi_seed": cfg["pi_seed"], "prior": "uniform"}
    prior, cond = _pi(N, S, cfg["alpha"], cfg["pi_seed"])
    fits = {}
    for d in tqdm(cfg["d_list"], desc="optimal encoders (LBFGS)", disable=not ctx.progress):
        key = {"unit": "encoder", **pi_key, "d": d, "restarts": cfg["restarts"], "max_iter": cfg["max_iter"]}

        def compute(d=d):
            f = encoders.fit_encoder(prior, cond, d, cfg["restarts"], cfg["max_iter"], seed=cfg["pi_seed"])
            exact = None
            if d >= N - 1:
                W, E = encoders.exact_encoder(cond, d)
                exact = encoders.encoder_kl(prior, cond, W, E)
            return {"kl": f.kl, "kl_restarts": f.kl_restarts, "evaluations": f.evaluations, "exact_kl": exact}

        fits[d] = ctx.unit(key, compute)

    aot_key = {"unit": "aot", **pi_key, "d_list": cfg["aot_d_list"], "H": cfg["aot_H"], "steps": cfg["aot_steps"],
               "lr": cfg["aot_lr"]}

    def train():
        tokens = torch.as_tensor(approx.all_sequences(N, S))
        configs = [AoTConfig(N, S, d, d, cfg["aot_H"], seed=0) for d in cfg["aot_d_list"]]
        return train_aot_kl(configs, tokens, prior, cond, cfg["aot_steps"], cfg["aot_lr"], ctx.device,
                            progress=ctx.progress)

    aot = ctx.unit(aot_key, train)

    lam = np.geomspace(0.1, 1e4, cfg["n_lam"]).tolist()
    circle = {}
    for Nc in cfg["circle_N"]:
        key = {"unit": "circle", "N": Nc, "lam": lam, "seed": cfg["pi_seed"]}

        def circ(Nc=Nc):
            g = construction.random_association_task(Nc, 2, min(Nc * Nc, 1000), seed=cfg["pi_seed"])[1]
            points = [1.0, 10.0, 100.0, 1000.0]
            return {"closed": encoders.circle_kl_closed_form(Nc, lam).tolist(),
                    "direct": encoders.circle_kl_direct(Nc, lam, g).tolist(),
                    "points": points, "closed_points": encoders.circle_kl_closed_form(Nc, points).tolist(),
                    "direct_points": encoders.circle_kl_direct(Nc, points, g).tolist(), "n_seq": len(g)}

        circle[Nc] = ctx.unit(key, circ)
    return {"config": cfg, "fits": {str(d): v for d, v in fits.items()}, "aot": aot, "lam": lam,
            "circle": {str(n): v for n, v in circle.items()}}


def circle_agreement(result: dict) -> tuple[float, float]:
    """Largest relative |closed - direct| / closed where closed >= 1e-6, and largest absolute difference."""
    rel = absdiff = 0.0
    for c in result["circle"].values():
        a, b = np.array(c["closed"]), np.array(c["direct"])
        m = a >= 1e-6
        rel = max(rel, float(np.max(np.abs(a[m] - b[m]) / a[m])))
        absdiff = max(absdiff, float(np.max(np.abs(a - b))))
    return rel, absdiff


def claims_props(result: dict) -> ClaimsTable:
    """Digest claims 9 (Prop. 3) and 10 (Prop. 2), and Prop. 1 on trained AoTs."""
    cfg = result["config"]
    N = cfg["N"]
    ds = sorted(int(d) for d in result["fits"])
    kl = {d: result["fits"][str(d)]["kl"] for d in ds}
    t = ClaimsTable()
    rises = [(a, b) for a, b in zip(ds, ds[1:]) if kl[b] > kl[a] + 1e-9]
    t.add("10a", "Prop. 2: min-KL(d) is non-increasing in d", paper="non-increasing",
          ours="yes" if not rises else f"rises at d = {rises[0][1]}", holds=not rises, tolerance="1e-9",
          asserted=True)
    below = [d for d in ds if d <= N - 2]
    if below:
        least = min(kl[d] for d in below)
        t.add("10b", f"Prop. 2: min-KL > 0 for d ≤ N − 2 = {N - 2} (least, at d = {max(below)})", paper="> 0",
              ours=least, holds=least > 1e-3, tolerance="> 1e-3", asserted=True)
    if N - 1 in kl:
        v = max(kl[N - 1], 0.0)
        t.add("10c", f"Prop. 2: min-KL = 0 at d = N − 1 = {N - 1} (LBFGS)", paper=0.0, ours=float(f"{v:.1e}"),
              holds=v < 1e-6, tolerance="< 1e-6", asserted=True)
        ex = max(abs(result["fits"][str(d)]["exact_kl"]) for d in ds if d >= N - 1)
        t.add("10d", "Prop. 2's explicit encoder (W spans 1⊥, E = centred log π_t) for d ≥ N − 1", paper=0.0,
              ours=float(f"{ex:.1e}"), holds=ex < 1e-12, tolerance="< 1e-12", asserted=True)
    aot = result["aot"]
    margins = [aot["kl"][i] - kl[d] for i, d in enumerate(cfg["aot_d_list"])]
    t.add("P1", f"Prop. 1: a trained AoT (H = {cfg['aot_H']}, d = d_h ∈ {cfg['aot_d_list']}) has KL ≥ KL*(d) "
          "(least margin)", paper="≥ 0", ours=min(margins), holds=min(margins) >= -1e-9, tolerance="≥ −1e-9",
          asserted=True)
    circ = result["circle"]
    dec = all(np.all(np.diff(np.array(c["closed"])[np.array(c["closed"]) > 0]) < 0) for c in circ.values())
    t.add("9a", "Prop. 3: KL(λ) of the circle encoder is strictly decreasing in λ (where > 0 in float64)",
          paper="→ 0", ours="yes" if dec else "no", holds=dec, tolerance="strict", asserted=True)
    rel, absdiff = circle_agreement(result)
    t.add("9b", "closed form log(1 + Σ_k e^{−λ(1 − cos 2πk/N)}) = direct softmax: largest rel. diff (KL ≥ 1e-6)",
          paper="equal", ours=float(f"{rel:.1g}"), holds=rel < 1e-9, tolerance="< 1e-9", asserted=True)
    t.add("9b", "… and largest absolute diff over the whole λ grid (float64 cancellation in the direct form)",
          paper="equal", ours=float(f"{absdiff:.1g}"), holds=absdiff < 1e-10, tolerance="< 1e-10", asserted=True)
    if "10" in circ:
        c = circ["10"]
        for lam_, ref, tol, tol_text in ((10.0, 0.2610, 0.01 * 0.2610, "1 %"),
                                         (100.0, 1.0e-8, 0.05e-8, "± 0.05e-8 (its 2 digits)")):
            v = c["closed_points"][c["points"].index(lam_)]
            t.add("9c", f"N = 10: KL(λ = {lam_:g}) (digest's measured value; the paper gives no number)", paper=ref,
                  ours=v, holds=abs(v - ref) <= tol,
                  tolerance=tol_text, asserted=True)
    return t


# =============================================================================================
# Lemmas 2-3: rank of the attention features A = [A^1; ...; A^H] in R^{Hd x T_0}.

LEMMA2 = (
    Param("configs", "int_rows", "[N, S, d, H, T_0] rows", min=1, width=5),
    Param("seeds", "int", "independent draws per config and W_QK choice (Lemma 3: generic draws)", min=1, max=1000),
    Param("sweep", "int_rows", "configs [N, S, d, H, T_0max] whose rank is traced for T_0 = 1 ... T_0max", min=1, width=5),
)


def compute_lemma2(ctx: Context) -> dict:
    cfg = ctx.config
    rows = []
    jobs = [(c, qk, s) for c in cfg["configs"] for qk in construction.LEMMA2_QK_VARIANTS for s in range(cfg["seeds"])]
    for (N, S, d, H, T_0), qk, s in tqdm(jobs, desc="Lemma 2 ranks", disable=not ctx.progress):
        if T_0 > N**S:
            raise ParameterError(f"parameter 'configs': row {[N, S, d, H, T_0]} has T_0 > N^S = {N**S}")
        key = {"unit": "lemma2", "N": N, "S": S, "d": d, "H": H, "T_0": T_0, "qk": qk, "seed": s}

        def compute(N=N, S=S, d=d, H=H, T_0=T_0, qk=qk, s=s):
            tokens, _ = construction.random_association_task(N, S, T_0, seed=s)
            r = construction.attention_feature_rank(tokens, N, d, H, qk=qk, seed=s)
            return {"rank": r.rank, "expected": r.expected, "ratio": r.ratio, "sv": r.singular_values.tolist()}

        rows.append({"N": N, "S": S, "d": d, "H": H, "T_0": T_0, "qk": qk, "seed": s, **ctx.unit(key, compute)})
    sweep = []
    for N, S, d, H, T_max in cfg["sweep"]:
        for T_0 in range(1, min(T_max, N**S) + 1):
            key = {"unit": "lemma2", "N": N, "S": S, "d": d, "H": H, "T_0": T_0, "qk": "rank1", "seed": 0}

            def compute(N=N, S=S, d=d, H=H, T_0=T_0):
                tokens, _ = construction.random_association_task(N, S, T_0, seed=0)
                r = construction.attention_feature_rank(tokens, N, d, H, qk="rank1", seed=0)
                return {"rank": r.rank, "expected": r.expected, "ratio": r.ratio, "sv": r.singular_values.tolist()}

            sweep.append({"N": N, "S": S, "d": d, "H": H, "T_0": T_0, **ctx.unit(key, compute)})
    return {"config": cfg, "rows": rows, "sweep": sweep}


def claims_lemma2(result: dict) -> ClaimsTable:
    """Digest claim 5 (random rank-1 and full W_QK, asserted) and the proof's own choice (reported)."""
    rows = result["rows"]
    t = ClaimsTable()
    for qk, text, asserted in (("rank1", "random rank-1 W_QK (Remark 2)", True),
                               ("full", "random full W_QK", True),
                               ("proof", "the proof's choice W = w_h e₁e₁ᵀ, positive embeddings", False)):
        sel = [r for r in rows if r["qk"] == qk]
        ok = sum(r["rank"] == r["expected"] for r in sel)
        t.add("5" if qk != "proof" else "5c", f"Lemma 2: rank A = min(T₀, Hd), {text}", paper="min(T₀, Hd)",
              ours=f"{ok}/{len(sel)} draws", holds=ok == len(sel), tolerance="exact (rtol 1e-10)", asserted=asserted)
    med = {qk: float(np.median([r["ratio"] for r in rows if r["qk"] == qk])) for qk in ("rank1", "full", "proof")}
    worse = med["proof"] < 1e-2 * min(med["rank1"], med["full"])
    t.add("5d", "conditioning: median σ_min/σ_max of the proof's choice vs random W_QK",
          paper="(not stated)", ours=f"{med['proof']:.1e} vs {min(med['rank1'], med['full']):.1e}", holds=worse,
          tolerance="≥ 100× worse", asserted=False)
    sw = result["sweep"]
    if sw:
        ok = all(r["rank"] == r["expected"] for r in sw)
        t.add("5e", "rank follows min(T₀, Hd) as T₀ grows (random rank-1 W_QK)", paper="min(T₀, Hd)",
              ours="all T₀" if ok else "mismatch", holds=ok, tolerance="exact", asserted=True)
    return t


# =============================================================================================
# Theorem 1 with eps > 0: approximate distribution memorization.

THM1EPS = (
    Param("N", "int", "vocabulary size", min=2, max=32),
    Param("S", "int", "context length (all N^S sequences)", min=1, max=6),
    Param("d", "int", "embedding dimension (d < N - 1: KL* > 0)", min=2, max=64),
    Param("d_h", "int", "head dimension (<= d)", min=1, max=64),
    Param("H_list", "int_list", "numbers of heads; K = H d_h + d sequences are interpolated", min=0, max=10_000),
    Param("zipf", "float", "Zipf exponent of the prior over sequences (ranks in random order)", min=0.0, max=10.0),
    Param("alpha", "float", "Dirichlet concentration of the conditionals", min=1e-3, max=1e3),
    Param("pi_seed", "int", "seed of the prior and the conditionals", min=0),
    Param("restarts", "int", "LBFGS runs of the optimal-encoder fit", min=1, max=20),
    Param("max_iter", "int", "LBFGS iterations per run", min=1, max=100_000),
    Param("seed", "int", "seed of the generic draws of the construction", min=0),
    Param("qk", "str", "W_QK of each head", choices=("rank1", "full")),
)


def compute_thm1eps(ctx: Context) -> dict:
    cfg = ctx.config
    N, S, d, d_h = cfg["N"], cfg["S"], cfg["d"], cfg["d_h"]
    if d_h > d:
        raise ParameterError(f"parameter 'd_h': value {d_h} is not allowed; must be <= d = {d} (footnote 1)")
    if N**S > 5000:
        raise ParameterError(f"parameters 'N', 'S': N^S = {N**S} sequences; at most 5000 allowed")
    pi_key = {"N": N, "S": S, "alpha": cfg["alpha"], "pi_seed": cfg["pi_seed"], "prior": "zipf", "zipf": cfg["zipf"]}
    prior, cond = _pi(N, S, cfg["alpha"], cfg["pi_seed"], "zipf", cfg["zipf"])
    enc_key = {"unit": "encoder", **pi_key, "d": d, "restarts": cfg["restarts"], "max_iter": cfg["max_iter"]}

    def fit():
        f = encoders.fit_encoder(prior, cond, d, cfg["restarts"], cfg["max_iter"], seed=cfg["pi_seed"])
        return {"kl": f.kl, "kl_restarts": f.kl_restarts, "W": f.W.tolist(), "E": f.E.tolist()}

    enc = ctx.unit(enc_key, fit)
    tokens = approx.all_sequences(N, S)
    builds = []
    for H in tqdm(cfg["H_list"], desc="constructions", disable=not ctx.progress):
        key = {"unit": "thm1eps", **enc_key, "d_h": d_h, "H": H, "seed": cfg["seed"], "qk": cfg["qk"]}

        def build(H=H):
            out = {}
            for solve in approx.SOLVES:
                _, r = approx.build_distribution_aot(tokens, prior.numpy(), cond.numpy(), enc["W"], enc["E"], d_h, H,
                                                     seed=cfg["seed"], qk=cfg["qk"], solve=solve)
                out[solve] = {k: getattr(r, k) for k in ("K", "eps", "kl_aot", "kl_encoder", "eq13_inf", "eq13",
                                                         "eq14_app", "eq14_main", "C_app", "C_main", "norm_WE",
                                                         "max_fit_error", "cond_W_OV", "rank_F")}
            return out

        builds.append({"H": H, **ctx.unit(key, build)})
    p = np.sort(prior.numpy())[::-1]
    return {"config": cfg, "T": len(tokens), "kl_star": enc["kl"], "kl_restarts": enc["kl_restarts"],
            "builds": builds, "mass_curve": np.cumsum(p).tolist()}


def claims_thm1eps(result: dict) -> ClaimsTable:
    """Digest claim 12 (asserted), the constant-C erratum, and the honest ε > 0 behaviour (reported)."""
    T, ks = result["T"], result["kl_star"]
    b = [r["interpolate"] for r in result["builds"]]
    H = [r["H"] for r in result["builds"]]
    t = ClaimsTable()
    gaps = [abs(r["kl_aot"] - r["kl_encoder"]) for r in b]
    ok = all(g <= r["eq13_inf"] + 1e-12 for g, r in zip(gaps, b))
    t.add("12a", f"gap abs(KL(AoT) − KL*) ≤ Eq. (13) bound at every H ({len(b)} values)", paper="≤",
          ours="all" if ok else "violated", holds=ok, tolerance="+1e-12", asserted=True)
    chain = all(r["eq13_inf"] <= r["eq13"] + 1e-9 and r["eq13"] <= r["eq14_app"] * (1 + 1e-9) + 1e-9
                and r["eq14_app"] <= r["eq14_main"] * (1 + 1e-9) + 1e-12 for r in b)
    t.add("12b", "chain (13) ≤ 2Σπ‖W(W_O W_V A′ − E)‖ ≤ 2ε‖WE‖C_app (Eq. 14) ≤ 2ε‖WE‖C_main", paper="≤",
          ours="all" if chain else "violated", holds=chain, tolerance="1e-9", asserted=True)
    exact = [r for r in b if r["K"] >= T]
    if exact:
        worst = max(abs(r["kl_aot"] - ks) for r in exact)
        t.add("12c", f"KL(AoT) = KL* once H d_h + d ≥ T = {T}", paper=ks, ours=min(r["kl_aot"] for r in exact),
              holds=worst < 1e-6, tolerance="± 1e-6", asserted=True)
    below = min(r["kl_aot"] - ks for r in b)
    t.add("P1", "Prop. 1: KL(AoT) ≥ KL* at every H (least margin)", paper="≥ 0", ours=below,
          holds=below >= -1e-6, tolerance="≥ −1e-6", asserted=True)
    app_le_main = all(r["C_app"] <= r["C_main"] * (1 + 1e-9) for r in b if r["eps"] > 0)
    t.add("err3", "constant C: App. Eq. (14)'s ≤ the main text's (both valid; they differ)", paper="differ",
          ours="C_app ≤ C_main" if app_le_main else "violated", holds=app_le_main, tolerance="exact", asserted=True)
    pos = [(h, r) for h, r in zip(H, b) if r["eps"] > 0]
    g = [abs(r["kl_aot"] - ks) for _, r in pos]
    rise = next((pos[i + 1][0] for i in range(len(g) - 1) if g[i + 1] > g[i]), None)
    t.add("12d", "the gap abs(KL(AoT) − KL*) shrinks monotonically as ε → 0 (more heads)", paper="bound ∝ ε",
          ours="yes" if rise is None else f"rises at H = {rise}", holds=rise is None, tolerance="monotone",
          asserted=False)
    if pos:
        logN = math.log(result["config"]["N"])
        least = min(r["eq14_app"] for _, r in pos)
        t.add("12e", f"the Eq. (14) bound is informative for ε > 0 (< log N = {logN:.2f}; least over H)",
              paper="C 'hard to control'", ours=least, holds=least < logN, tolerance="< log N", asserted=False)
    return t


# =============================================================================================

EXPERIMENTS = [
    Experiment(
        id="004-memorization/setup-formalism",
        label="Eqs. 1–2",
        title="The one-layer attention-only Transformer, per head and stacked",
        params=SETUP,
        presets={"ci": dict(configs=[[10, 2, 4, 2, 3], [20, 8, 4, 4, 5], [7, 16, 3, 2, 6], [50, 4, 8, 4, 10],
                                     [5, 3, 2, 1, 1]], n_seq=256, seed=0),
                 "full": dict(configs=[[10, 2, 4, 2, 3], [20, 8, 4, 4, 5], [7, 16, 3, 2, 6], [50, 4, 8, 4, 10],
                                       [5, 3, 2, 1, 1], [50, 2, 10, 10, 31], [100, 64, 16, 8, 32]],
                               n_seq=2500, seed=0)},
        compute=compute_setup,
        summary="Eqs. (1)-(2) per head, stacked, and in the library's two models agree to 1e-12.",
    ),
    Experiment(
        id="004-memorization/props1-3-rank-bottleneck",
        label="Propositions 1–3",
        title="The rank-d bottleneck of sequence encoders, and the circle encoder",
        params=PROPS,
        presets={"ci": dict(N=8, S=2, alpha=1.0, pi_seed=0, d_list=[1, 2, 3, 4, 5, 6, 7, 8], restarts=1,
                            max_iter=400, aot_d_list=[2, 4, 6], aot_H=4, aot_steps=600, aot_lr=0.02,
                            circle_N=[10, 50], n_lam=121),
                 "full": dict(N=16, S=2, alpha=1.0, pi_seed=0, d_list=list(range(1, 17)), restarts=3,
                              max_iter=3000, aot_d_list=[2, 4, 8, 12], aot_H=8, aot_steps=5000, aot_lr=0.02,
                              circle_N=[10, 50, 1000], n_lam=401)},
        compute=compute_props,
        summary="min-KL over rank-d encoders vanishes exactly at d = N - 1; the circle encoder reaches 0 at d = 2.",
    ),
    Experiment(
        id="004-memorization/lemma2-attention-rank",
        label="Lemmas 2–3",
        title="Rank of the attention features for generic and for the proof's W_QK",
        params=LEMMA2,
        presets={"ci": dict(configs=[[20, 8, 4, 5, 40], [20, 8, 4, 10, 40], [20, 12, 3, 10, 25], [50, 16, 4, 8, 100]],
                            seeds=3, sweep=[[20, 8, 4, 5, 40]]),
                 "full": dict(configs=[[20, 8, 4, 5, 40], [20, 8, 4, 10, 40], [20, 12, 3, 10, 25],
                                       [50, 16, 4, 8, 100], [50, 16, 8, 64, 1000], [100, 32, 8, 250, 2000]],
                              seeds=10, sweep=[[20, 8, 4, 5, 40], [50, 16, 4, 8, 100]])},
        compute=compute_lemma2,
        summary="Generic W_QK give rank min(T_0, Hd); the proof's (1,1)-only matrices do too, but barely.",
    ),
    Experiment(
        id="004-memorization/thm1-eps-approximate",
        label="Theorem 1 (ε > 0)",
        title="Approximate distribution memorization: KL(AoT) against KL* as the heads grow",
        params=THM1EPS,
        presets={"ci": dict(N=5, S=3, d=3, d_h=2, H_list=[0, 5, 10, 20, 30, 40, 50, 60, 61], zipf=1.5, alpha=1.0,
                            pi_seed=0, restarts=1, max_iter=1000, seed=0, qk="rank1"),
                 "full": dict(N=6, S=3, d=3, d_h=2, H_list=[0, 5, 10, 20, 40, 60, 80, 100, 106, 107], zipf=1.5,
                              alpha=1.0, pi_seed=0, restarts=3, max_iter=3000, seed=0, qk="rank1")},
        compute=compute_thm1eps,
        summary="Exact at eps = 0 (KL = KL*); for eps > 0 the Eq.-13 bound holds but is vacuous and the gap is not monotone.",
    ),
]
