"""App. D.1.9, Table 2: GCN and GAT baselines on complete and star graphs, and the analytic
position-agnostic baseline that explains Table 2's in-distribution column.

**Models.** The tasks have no native graph, so the paper runs message passing on a complete
graph and on a star. Nodes: the n inputs and one extra node holding 0 (the scratchpad of
App. D.1.1), which is the hub of the star (the paper does not say which node is the hub; with
the extra node every input node plays the same role on both graphs). Self-loops everywhere.

- GCN (Kipf & Welling 2017): h' = ReLU(Â h W + b), Â = D^{-1/2}(A + I)D^{-1/2}.
- GAT (Veličković et al. 2018): per head k, z = h W_k, e_ij = LeakyReLU_0.2(a_k·z_i + a'_k·z_j),
  α = softmax over the neighbours j of i (self included), h'_i = ELU(⊕_k Σ_j α_ij z_j + b).

A linear encoder (value → E) and decoder (E → 1 per node) surround L = ⌈log₂ n⌉ + 1 layers, as the
Transformers of App. D.1.1; the extra node's output is dropped. Replicas (leading axis R) share
n, kind, width, heads and depth and may differ in graph and seed: `GNN(configs, seeds)`,
forward(x [B, n]) → [R, B, n], a `ReplicaModule` that `sweeps.train` trains like a Transformer.

Both models are permutation-equivariant over the input nodes (on either graph every input node
has the same neighbourhood), so the output at node i is g(x_i, {x_1..x_n}): a function of the
node's own value and of the multiset of all values, never of the position i.

**The position-agnostic bound.** Under the §7 data (γ_l ≤ γ_u uniform in [−2, 2], entries iid
uniform in [γ_l, γ_u]) the best such g is linear in (x_i, S = Σ_j x_j) for both tasks of Table 2
(proof: given the multiset and x_i, the other values sit in uniformly random positions), so the
best *pooled linear predictor* of y_i from (x_i, S) is the Bayes-optimal equivariant predictor:
  cumsum: E[y_i | x_i, multiset] = x_i + (S − x_i)/2; MSE = 35/9 ≈ 3.889 at n = 8;
  sort:   E[y_i | x_i, multiset] = S/n;              MSE = 7/36 ≈ 0.1944 at n = 8
(our derivation; Table 2 prints 3.7–4.0 and 0.19 at c = 1). Every moment it needs is a rational function of
a = E[m²] and b = E[h²]/12 (m, h the midpoint and width of [γ_l, γ_u]): a = 2/3, b = 2/9 in
training, and at an OOD scale c > 1 with App. E's rejection both are multiplied by c² + 1
(the pairs inside [−2, 2], rejected, carry mass 1/c² and the training moments). So the bound at
scale c is (c² + 1)·MSE_ID for any equivariant model, since the Bayes predictors above do not
depend on the distribution of γ: the "OOD growth ∝ c²" of Table 2.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np
import torch

from attnlab.core.replica import ReplicaModule, replica_generator, uniform_init

from .tasks import sample_lists, targets

KINDS = ("gcn", "gat")
GRAPHS = ("complete", "star")
BASELINE_TASKS = ("cumsum", "sort")


@dataclass(frozen=True)
class GNNConfig:
    n: int = 8  # input length
    kind: str = "gcn"  # gcn | gat
    graph: str = "complete"  # complete | star (hub: the extra node)
    embed: int = 64  # E: every layer's width (GAT: heads × E/heads, concatenated)
    heads: int = 2  # GAT heads (GCN: unused)
    layers: int | None = None  # None: ⌈log₂ n⌉ + 1, as the Transformers of App. D.1.1

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r}: choose one of {', '.join(KINDS)}")
        if self.graph not in GRAPHS:
            raise ValueError(f"graph {self.graph!r}: choose one of {', '.join(GRAPHS)}")
        if self.n < 1 or self.embed < 1 or self.heads < 1:
            raise ValueError(f"n {self.n}, embed {self.embed}, heads {self.heads}: each must be >= 1")
        if self.kind == "gat" and self.embed % self.heads:
            raise ValueError(f"embed {self.embed} must be a multiple of heads {self.heads} for GAT")

    @property
    def nodes(self) -> int:
        return self.n + 1

    @property
    def depth(self) -> int:
        return self.layers if self.layers is not None else math.ceil(math.log2(max(self.n, 2))) + 1


def adjacency(graph: str, n: int) -> np.ndarray:
    """0/1 adjacency with self-loops of the n inputs and the extra node (index n, the star's hub)."""
    N = n + 1
    if graph == "complete":
        return np.ones((N, N))
    if graph == "star":
        A = np.eye(N)
        A[n, :] = A[:, n] = 1
        return A
    raise ValueError(f"graph {graph!r}: choose one of {', '.join(GRAPHS)}")


def gcn_norm(A: np.ndarray) -> np.ndarray:
    """Â = D^{-1/2} A D^{-1/2} (A already holds the self-loops)."""
    d = A.sum(1) ** -0.5
    return d[:, None] * A * d[None, :]


def _glorot(gen: torch.Generator, shape: tuple[int, ...], fan_in: int, fan_out: int) -> torch.Tensor:
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound


class GNN(ReplicaModule):
    """R replicas of a GCN or GAT on the complete or star graph. forward(x [B, n]) → [R, B, n]."""

    def __init__(self, configs: list[GNNConfig], seeds: list[int], dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu"):
        super().__init__(len(configs), dtype, device)
        c0 = configs[0]
        shared = ("n", "kind", "embed", "heads", "depth")
        for c in configs:
            if any(getattr(c, a) != getattr(c0, a) for a in shared):
                raise ValueError(f"replicas must share {shared}; got {c} and {c0}")
        self.configs, self.seeds = list(configs), list(seeds)
        self.kind, self.n, self.L, self.E = c0.kind, c0.n, c0.depth, c0.embed
        self.H = c0.heads if c0.kind == "gat" else 1
        E, H, d = self.E, self.H, self.E // self.H
        self.add("enc_W", (1, E)); self.add("enc_b", (E,))
        self.add("dec_W", (E, 1)); self.add("dec_b", (1,))
        for l in range(self.L):
            self.add(f"W{l}", (H, E, d)); self.add(f"b{l}", (E,))
            if self.kind == "gat":
                self.add(f"a_dst{l}", (H, d)); self.add(f"a_src{l}", (H, d))
        A = np.stack([adjacency(c.graph, c.n) for c in configs])
        self.register_buffer("A", torch.as_tensor(A, dtype=dtype, device=self.device))
        self.register_buffer("neg", torch.where(self.A > 0, 0.0, float("-inf")).to(dtype))  # GAT's mask
        self.register_buffer("A_hat", torch.as_tensor(np.stack([gcn_norm(a) for a in A]), dtype=dtype,
                                                      device=self.device))
        for r, (c, s) in enumerate(zip(configs, seeds)):
            self._init_replica(r, c, s)

    def _init_replica(self, r: int, c: GNNConfig, seed: int) -> None:
        g = replica_generator(asdict(c), seed)
        E, H, d = self.E, self.H, self.E // self.H
        self.place("enc_W", r, uniform_init(g, (1, E), 1))
        self.place("enc_b", r, uniform_init(g, (E,), 1))
        for l in range(self.L):
            W = _glorot(g, (E, H * d), E, H * d)  # one Linear(E, H·d) as in PyG, split by head
            self.place(f"W{l}", r, W.reshape(E, H, d).transpose(0, 1))
            self.place(f"b{l}", r, torch.zeros(E))
            if self.kind == "gat":
                self.place(f"a_dst{l}", r, _glorot(g, (H, d), 1, d))
                self.place(f"a_src{l}", r, _glorot(g, (H, d), 1, d))
        self.place("dec_W", r, uniform_init(g, (E, 1), E))
        self.place("dec_b", r, uniform_init(g, (1,), E))

    def attention(self, l: int, z: torch.Tensor) -> torch.Tensor:
        """GAT layer l's coefficients α [R, B, H, N, N] (row i: over the neighbours j) from z [R, B, N, H, d]."""
        e_dst = (z * self.w(f"a_dst{l}")[:, None, None]).sum(-1).transpose(-1, -2)  # [R, B, H, N]
        e_src = (z * self.w(f"a_src{l}")[:, None, None]).sum(-1).transpose(-1, -2)
        e = torch.nn.functional.leaky_relu(e_dst.unsqueeze(-1) + e_src.unsqueeze(-2), 0.2)
        return torch.softmax(e + self.neg[:, None, None], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Values [B, n] (or one batch per replica, [R, B, n]) → predictions [R, B, n]."""
        B = x.shape[-2]
        R, N, E, H, d = self.R, self.n + 1, self.E, self.H, self.E // self.H
        v = torch.cat([x.to(self.dtype), torch.zeros(x.shape[:-1] + (1,), dtype=self.dtype, device=x.device)], dim=-1)
        v = v if v.dim() == 3 else v[None]  # [R or 1, B, N]
        h = v[..., None] * self.w("enc_W")[:, None, None, 0, :] + self.w("enc_b")[:, None, None, :]
        for l in range(self.L):
            W = self.w(f"W{l}").transpose(1, 2).reshape(R, E, H * d)  # the heads side by side
            z = (h.reshape(R, B * N, E) @ W).view(R, B, N, H * d)
            if self.kind == "gcn":
                m = self.A_hat.unsqueeze(1) @ z
            else:
                z = z.view(R, B, N, H, d)
                m = (self.attention(l, z) @ z.transpose(2, 3)).transpose(2, 3).reshape(R, B, N, E)
            m = m + self.w(f"b{l}")[:, None, None, :]
            h = torch.relu(m) if self.kind == "gcn" else torch.nn.functional.elu(m)
        y = (h.reshape(R, B * N, E) @ self.w("dec_W")).view(R, B, N) + self.w("dec_b")[:, None, :]
        return y[:, :, : self.n]

    def n_params(self, r: int) -> int:
        return int(sum(getattr(self, nm + "_mask")[r].sum().item() for nm in self._names))


def program_of(config: GNNConfig) -> tuple:
    """What the replicas of one GNN program share (graph and seed may differ): for `sweeps.sweep`."""
    return (config.n, config.kind, config.embed, config.heads, config.depth)


# ------------------------------------------------------------------------ position-agnostic bound

def moments(c: float | Fraction = 1, reject: bool = True) -> tuple[Fraction, Fraction]:
    """(a, b) = (E[m²], E[h²]/12) of the §7 lists at scale c, exactly: m, h the midpoint and width of
    [γ_l, γ_u]. Training (c = 1): γ's uniform in [−2, 2], a = 2/3, b = 2/9. At c > 1 both scale by
    c² without rejection and by c² + 1 with App. E's rejection (which removes the pairs inside
    [−2, 2]: probability 1/c², training moments)."""
    c = Fraction(c)
    if c < 1:
        raise ValueError(f"scale c = {c}: must be >= 1")
    a, b = Fraction(2, 3), Fraction(2, 9)
    f = c * c if (c == 1 or not reject) else (c ** 4 - 1) / (c ** 2 - 1)
    return a * f, b * f


def pooled_moments(task: str, n: int, c: float | Fraction = 1, reject: bool = True):
    """Exact pooled second moments over positions i (uniform in 1..n) of the features (x_i, S)
    and the target y_i: the Gram matrix G (2×2), the cross moments q (2) and E[y_i²]. All means
    are 0 (the data are symmetric under x → −x), so no intercept is needed."""
    a, b = moments(c, reject)
    n = Fraction(n)
    G = [[a + b, n * a + b], [n * a + b, n * n * a + n * b]]
    if task == "cumsum":  # y_i = Σ_{j≤i} x_j; E[x_j x_k] = a + b·[j = k]
        i1 = (n + 1) / 2  # mean of i
        i2 = (n + 1) * (2 * n + 1) / 6  # mean of i²
        q = [i1 * a + b, i1 * (n * a + b)]
        yy = i2 * a + i1 * b
    elif task == "sort":  # ranks are independent of the sorted values: pooled E[y x_i] = E[S²]/n²
        ES2 = n * n * a + n * b
        q = [ES2 / (n * n), ES2 / n]
        yy = a + b
    else:
        raise ValueError(f"task {task!r}: the baseline is defined for {', '.join(BASELINE_TASKS)}")
    return G, q, yy


def _solve2(G, q):
    det = G[0][0] * G[1][1] - G[0][1] * G[1][0]
    return [(G[1][1] * q[0] - G[0][1] * q[1]) / det, (G[0][0] * q[1] - G[1][0] * q[0]) / det]


def baseline(task: str, n: int = 8, features: str = "xs") -> dict:
    """The best pooled linear predictor of y_i from (x_i, S) ('xs'), or from S alone ('s': what a
    GCN on the complete graph can use, where Â = 11ᵀ/N gives every node the same features), under
    the training distribution; exact (Fractions). Returns {'coef': (β_x, β_S), 'mse': Fraction}."""
    G, q, yy = pooled_moments(task, n)
    if features == "xs":
        beta = _solve2(G, q)
    elif features == "s":
        beta = [Fraction(0), q[1] / G[1][1]]
    else:
        raise ValueError(f"features {features!r}: choose 'xs' or 's'")
    return {"coef": tuple(beta), "mse": predictor_mse(task, n, beta, 1)}


def predictor_mse(task: str, n: int, beta, c: float | Fraction = 1, reject: bool = True) -> Fraction:
    """Exact pooled MSE of the predictor β_x x_i + β_S S on the lists at scale c."""
    G, q, yy = pooled_moments(task, n, c, reject)
    beta = [Fraction(v) for v in beta]
    quad = sum(beta[i] * G[i][j] * beta[j] for i in range(2) for j in range(2))
    return yy - 2 * (beta[0] * q[0] + beta[1] * q[1]) + quad


def baseline_curve(task: str, n: int, c_list, features: str = "xs") -> list[float]:
    """The ID-fitted baseline's exact MSE at each scale c (App. E's rejection for c > 1)."""
    beta = baseline(task, n, features)["coef"]
    return [float(predictor_mse(task, n, beta, Fraction(c).limit_denominator(10**6))) for c in c_list]


def pooled_features(x: np.ndarray) -> np.ndarray:
    """[B·n, 2] rows (x_i, S) of the lists x [B, n], position-major within each list."""
    S = np.broadcast_to(x.sum(1, keepdims=True), x.shape)
    return np.stack([x.reshape(-1), S.reshape(-1)], axis=1)


def baseline_least_squares(task: str, n: int, samples: int, seed: int, c: float = 1.0,
                           extra: bool = False) -> dict:
    """The pooled least-squares predictor fitted on `samples` training lists (seeded), and its MSE on
    `samples` fresh lists at scale c with the standard error of that estimate (per-list losses are
    iid). extra=True adds symmetric nonlinear features (x_i², S², x_i S, Σx², max, min, mean of |x|
    and products with x_i): a richer equivariant predictor, which must not beat the bound."""
    rng = np.random.default_rng(seed)
    xtr = sample_lists(rng, samples, n, 1.0)
    xte = sample_lists(rng, samples, n, c)

    def design(x):
        F = pooled_features(x)
        cols = [np.ones(len(F)), F[:, 0], F[:, 1]]
        if extra:
            xi, S = F[:, 0], F[:, 1]
            rep = lambda v: np.repeat(v, n)  # noqa: E731  (per-list statistic, repeated per node)
            q2, mx, mn, ab = rep((x ** 2).sum(1)), rep(x.max(1)), rep(x.min(1)), rep(np.abs(x).mean(1))
            cols += [xi ** 2, S ** 2, xi * S, q2, mx, mn, ab, xi * mx, xi * mn, S * mx, S * mn, mx * mn]
        return np.stack(cols, axis=1)

    coef, *_ = np.linalg.lstsq(design(xtr), targets(task, xtr).reshape(-1), rcond=None)
    err = (design(xte) @ coef - targets(task, xte).reshape(-1)).reshape(samples, n)
    per_list = (err ** 2).mean(1)
    return {"coef": coef.tolist(), "mse": float(per_list.mean()),
            "stderr": float(per_list.std(ddof=1) / math.sqrt(samples))}
