"""The six counting models of paper 002 (§3, eqs. 1-6), replica-batched and trainable.

R models that share the variant, the alphabet size T and the length L (the task's) but differ
in embedding dimension d, MLP width p and seed train as one tensor program: every parameter is
padded to the largest replica with a 0/1 mask (`attnlab.core.replica`). Padded embedding
columns are zero, so the scores, the mixing and the hidden pre-activations of a replica do not
see them; padded hidden units have zero weights and bias, so ReLU(0) = 0 and they add nothing.

The forward pass follows `reference.forward` (the float64 reference), computed through token
tables: with no positional embedding every quantity before the mixing depends on the token
only, and since W1 is linear,
    z_l = (x̄_l + Σ_m 𝐀_lm x̄_m) W1 + b1 = Σ_t' W'[t', l] h_t' + b1,   h = E W1 [T', p],
    W'[t', l] = [x_l = t'] + Σ_{m : x_m = t'} 𝐀_lm        (`ReplicaCounting.mixing_t`),
so the hidden layer is one product per replica, z = H W' with H = [[0, 1], [hᵀ, b1]] (a bias
row of ones in W', and a constant unit 1 whose outgoing weights are b2), laid out units first
[R, p + 1, B·L]: the readout [b2, W2ᵀ] ReLU(z) is then the logits with the class axis second,
the layout the loss wants; the mixed vector x̄' is never formed. The hidden layer and readout
run per group of replicas of one padded width (p rounded up to a power of two, at least 4:
`_padded_width`), so a small-p replica is not padded to the largest p.

Initialisation (not in the paper; the authors' memory_exp.py: torch defaults for the embedding and
the MLP, kaiming_uniform_(a=√5) for W_Q, W_K, A), drawn in float64 from a generator
seeded by (config, seed) only: embedding N(0, 1); W_Q, W_K ~ U(±1/√d); A ~ U(±1/√L); W1, b1 ~
U(±1/√d); W2, b2 ~ U(±1/√p).

Training (`train_counting`): Adam (betas 0.9, 0.98, eps 1e-9 as in the authors' code), loss =
per-replica cross-entropy averaged over all (non-BOS) positions, summed over replicas; each
replica's gradient is its own. The dot-product variants compute it once per distinct (sequence,
query token) pair, weighted by the token's count (`ReplicaCounting.loss`): without positional
information those positions share their logits and their label. Accuracy is per position, BOS excluded.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator

import numpy as np
import torch

from attnlab.core.hashing import derive_seed
from attnlab.core.progress import tqdm
from attnlab.core.replica import ReplicaModule, replica_generator, uniform_init
from attnlab.core.train import EXP_FLOOR, MaskedAdam, class_axis_cross_entropy

from . import paper
from .reference import VARIANTS, CountingWeights, has_bos, has_softmax, is_linear, n_params
from .tasks import sample


@dataclass(frozen=True)
class CountingConfig:
    """One replica: variant (one of reference.VARIANTS), alphabet T, length L, embedding d,
    MLP width p, seed."""

    variant: str
    T: int
    L: int
    d: int
    p: int
    seed: int = 0

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"CountingConfig.variant={self.variant!r}: choose one of {', '.join(VARIANTS)}")
        for name in ("T", "L", "d", "p"):
            if getattr(self, name) < 1:
                raise ValueError(f"CountingConfig.{name}={getattr(self, name)} must be >= 1")

    @property
    def C(self) -> int:
        return self.L + 1

    @property
    def n_params(self) -> int:
        """Trainable parameters (`reference.n_params`)."""
        return n_params(self.variant, self.T, self.L, self.d, self.p)

    def seed_config(self) -> dict:
        c = asdict(self)
        del c["seed"]
        return {"model": "counting", **c}


class _HiddenReadout(torch.autograd.Function):
    """y = V ReLU(H W) per group of replicas: W [R, K, N], H [R, P, K], V [R, C, P] -> y [R, C, N];
    group (lo, hi, k) holds the replicas lo .. hi − 1 and uses their first k units (the others are
    padding, 0), y[lo:hi] = V_g ReLU(H_g W[lo:hi]) with H_g = H[lo:hi, :k], V_g = V[lo:hi, :, :k]
    (views: no copy). The same arithmetic as bmm(V_g, relu(bmm(H_g, W[lo:hi]))) under autograd,
    with two full-size passes fewer: the hidden layer is a tensor of this function alone, so ReLU
    runs in place on it and ReLU's backward in place on the gradient computed here; the gradients
    of H and V are 0 outside the groups' units."""

    @staticmethod
    def forward(ctx, W: torch.Tensor, groups: tuple, H: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        R, K, N = W.shape
        out = torch.empty(R, V.shape[1], N, dtype=W.dtype, device=W.device)
        acts = []
        for lo, hi, k in groups:
            acts.append(torch.bmm(H[lo:hi, :k], W[lo:hi]).relu_())
            torch.bmm(V[lo:hi, :, :k], acts[-1], out=out[lo:hi])
        ctx.groups = groups
        ctx.save_for_backward(W, H, V, *acts)
        return out

    @staticmethod
    def backward(ctx, gy: torch.Tensor):
        W, H, V, *acts = ctx.saved_tensors
        gW = torch.empty_like(W) if ctx.needs_input_grad[0] else None
        gH, gV = torch.zeros_like(H), torch.zeros_like(V)
        for (lo, hi, k), a in zip(ctx.groups, acts):
            _group_backward(W[lo:hi], H[lo:hi, :k], V[lo:hi, :, :k], a, gy[lo:hi],
                            None if gW is None else gW[lo:hi], gH[lo:hi, :k], gV[lo:hi, :, :k])
        return gW, None, gH, gV


def _group_backward(W, H, V, a, gy, gW, gH, gV) -> None:
    """One group's backward of y = V ReLU(H W) (a = ReLU(H W)): writes gV = gy aᵀ, gH = gz Wᵀ and
    gW = Hᵀ gz (if gW is given) with gz = [a > 0] Vᵀ gy."""
    gV.copy_(torch.bmm(gy, a.transpose(1, 2)))
    gz = torch.bmm(V.transpose(1, 2), gy)
    gz = torch.ops.aten.threshold_backward.grad_input(gz, a, 0, grad_input=gz)
    gH.copy_(torch.bmm(W, gz.transpose(1, 2)).transpose(1, 2))  # gz Wᵀ, faster as (W gzᵀ)ᵀ
    if gW is not None:
        torch.bmm(H.transpose(1, 2), gz, out=gW)


# exp(y − max) is evaluated at arguments >= core.train.EXP_FLOOR (−70; why there): with the floor
# every element also takes torch's vectorised exp (a vector holding a special value takes another
# path, whose results for its normal elements can differ in the last bit)


class _HiddenReadoutLoss(torch.autograd.Function):
    """loss_r = Σ_n w_n (log Σ_c exp y_rcn − y_r,t_n,n) with y = V ReLU(H W) per group of replicas
    (`_HiddenReadout`'s y and groups) -> [R], given the weighted one-hot labels O [C, N],
    O_cn = w_n [c = t_n], and the weights w [N]: the readout and the cross-entropy in one function,
    group by group (a group's logits stay in cache), the logits never gathered into one tensor.
    With per-replica data (`ReplicaCounting.set_streams`) the labels are [R, C, N] and the weights
    [R, N] (each replica its own columns; a padding column has weight 0).
    With m_rn = max_c y_rcn: loss_r = Σ_n w_n (log Σ_c exp(y_rcn − m_rn) + m_rn) − Σ_cn O_cn y_rcn,
    the label term one matrix-vector product. Backward: ∂loss_r/∂y_rcn = w_n softmax_c(y_r·n) − O_cn,
    written out (exp(y − m) kept from the forward and normalised in place, so it runs once), then
    `_HiddenReadout`'s backward."""

    @staticmethod
    def forward(ctx, W: torch.Tensor, groups: tuple, labels: torch.Tensor, weights: torch.Tensor,
                H: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        R, K, N = W.shape
        losses = torch.empty(R, dtype=W.dtype, device=W.device)
        saved = []
        for lo, hi, k in groups:
            a = torch.bmm(H[lo:hi, :k], W[lo:hi]).relu_()
            y = torch.bmm(V[lo:hi, :, :k], a)  # [R_g, C, N]
            if labels.dim() == 3:  # per-replica columns
                picked = torch.bmm(y.view(hi - lo, 1, -1), labels[lo:hi].reshape(hi - lo, -1, 1)).view(hi - lo)
            else:
                picked = torch.mv(y.view(hi - lo, -1), labels.view(-1))  # Σ_n w_n y_t_n,n
            mx = y.amax(1, keepdim=True)
            e = y.sub_(mx).clamp_min_(EXP_FLOOR).exp_()
            s = e.sum(1)  # [R_g, N]
            if weights.dim() == 2:
                lw = torch.bmm(s.log().add_(mx.squeeze(1))[:, None], weights[lo:hi, :, None]).view(hi - lo)
                torch.sub(lw, picked, out=losses[lo:hi])
            else:
                torch.mv(s.log().add_(mx.squeeze(1)), weights, out=losses[lo:hi]).sub_(picked)
            saved += [a, e, s]
        ctx.groups, ctx.spent = groups, False
        ctx.save_for_backward(W, labels, weights, H, V, *saved)
        return losses

    @staticmethod
    def backward(ctx, gl: torch.Tensor):
        if ctx.spent:
            raise RuntimeError("_HiddenReadoutLoss: the backward overwrites its saved tensors; it runs once")
        ctx.spent = True
        W, labels, weights, H, V, *acts = ctx.saved_tensors
        gW = torch.empty_like(W) if ctx.needs_input_grad[0] else None
        gH, gV = torch.zeros_like(H), torch.zeros_like(V)
        for g, (lo, hi, k) in enumerate(ctx.groups):
            a, e, s = acts[3 * g:3 * g + 3]
            w, lab = (weights[lo:hi], labels[lo:hi]) if weights.dim() == 2 else (weights[None], labels)
            gy = e.mul_((gl[lo:hi, None] * w / s)[:, None])  # softmax · g w
            gy.addcmul_(lab, gl[lo:hi, None, None], value=-1)  # − [c = t] · g w
            _group_backward(W[lo:hi], H[lo:hi, :k], V[lo:hi, :, :k], a, gy,
                            None if gW is None else gW[lo:hi], gH[lo:hi, :k], gV[lo:hi, :, :k])
        return gW, None, None, None, gH, gV


class _CountSoftmax(torch.autograd.Function):
    """W = softmax_t(S_t + log n_t) + O over axis 1 (S [R, T, N], counts n [T, N] >= 0 with a
    positive entry in every column, O [T, N] a constant), computed as n e^(S − m) / Σ_t n e^(S − m)
    with m the max of S over the types present (n > 0), so the exponents are <= 0 (and floored at
    `EXP_FLOOR`) and an absent
    type's term is 0 · e^(min(S − m, 0)) = 0: no log 0 = −∞ and no exp(−∞), slow special cases of
    torch's CPU log and exp (~40x and ~8x a normal input here). Backward (softmax p = W − O):
    ∂/∂S = p ⊙ (g − Σ_t p g), written out."""

    @staticmethod
    def forward(ctx, S: torch.Tensor, counts: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        m = S.masked_fill(counts == 0, -math.inf).amax(1, keepdim=True)  # [R, 1, N]
        e = torch.sub(S, m).clamp_(EXP_FLOOR, 0).exp_().mul_(counts)  # floored as in `_HiddenReadoutLoss`
        p = e.div_(e.sum(1, keepdim=True))
        ctx.save_for_backward(p)
        return p + onehot

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        (p,) = ctx.saved_tensors
        pg = p * g
        return torch.addcmul(pg, p, pg.sum(1, keepdim=True), value=-1), None, None


def _padded_width(p: int, P: int) -> int:
    """The hidden width a replica of width p is computed at: the next power of two (at least 4),
    at most the program's P (`ReplicaCounting` groups replicas by it)."""
    return min(P, max(4, 1 << (p - 1).bit_length()))


class ReplicaCounting(ReplicaModule):
    """R counting models in one program. forward(tokens [B, L]) -> logits [R, B, L, C] (C = L + 1;
    for the bos variants the BOS position is prepended inside and its output dropped)."""

    def __init__(self, configs: list[CountingConfig], dtype: torch.dtype = torch.float32, device="cpu"):
        super().__init__(len(configs), dtype, device)
        if not configs:
            raise ValueError("ReplicaCounting needs at least one config")
        shared = {(c.variant, c.T, c.L) for c in configs}
        if len(shared) != 1:
            raise ValueError(f"all replicas of one program must share (variant, T, L); got {sorted(shared)}")
        self.variant, self.T, self.L = configs[0].variant, configs[0].T, configs[0].L
        self.configs = list(configs)
        # replicas grouped by padded hidden width (`_padded_width`), in order of width: the hidden
        # layer and the readout run per group (the padding to the largest p costs more than the
        # extra products); order[i] = replica at sorted place i, bounds = the groups' first places
        P_max = max(c.p for c in configs)
        widths = [_padded_width(c.p, P_max) for c in configs]
        order = sorted(range(len(configs)), key=lambda r: widths[r])
        self.group_widths = sorted(set(widths))
        self.bounds = tuple([0] + [sum(w <= g for w in widths) for g in self.group_widths])
        # (first place, end, units used: the constant unit and the width) of each group
        self.groups = tuple((lo, hi, w + 1) for lo, hi, w in zip(self.bounds[:-1], self.bounds[1:], self.group_widths))
        self.register_buffer("order", torch.tensor(order, device=self.device), persistent=False)
        self.register_buffer("unorder", torch.argsort(self.order), persistent=False)
        self.sorted = order != list(range(len(configs)))
        self.bos, self.sftm, self.lin = has_bos(self.variant), has_softmax(self.variant), is_linear(self.variant)
        Tp = self.T + self.bos
        D, P, C = max(c.d for c in configs), max(c.p for c in configs), self.L + 1
        shapes = [("emb", (Tp, D))]
        shapes += [("A", (self.L, self.L))] if self.lin else [("W_Q", (D, D)), ("W_K", (D, D))]
        shapes += [("W1", (D, P)), ("b1", (P,)), ("W2", (P, C)), ("b2", (C,))]
        for name, shape in shapes:
            self.add(name, shape)
        self.register_buffer("types", torch.arange(Tp + 1, device=self.device), persistent=False)
        unit_row = torch.zeros(1, 1, Tp + 1, dtype=dtype)
        unit_row[..., -1] = 1
        self.register_buffer("unit_row", unit_row.to(self.device), persistent=False)  # [0 .. 0, 1]: H's constant unit
        eye_ones = torch.cat([torch.eye(self.L, dtype=dtype), torch.ones(1, self.L, dtype=dtype)])
        self.register_buffer("eye_ones", eye_ones.to(self.device), persistent=False)  # [[I], [1 .. 1]] [L+1, L]
        self.register_buffer("scale", torch.tensor([1 / math.sqrt(c.d) for c in configs], dtype=dtype,
                                                   device=self.device))
        for r, c in enumerate(configs):
            self.init_replica(r, c)
        self.stream_of = None  # per-replica data streams (`set_streams`)
        # no padding at all (one replica, or replicas of one size): w(name) is the parameter itself
        self.dense = all(bool(getattr(self, n + "_mask").all()) for n in self._names)

    def w(self, name: str) -> torch.Tensor:
        """The masked parameter (`ReplicaModule.w`); the parameter itself when no replica is padded
        (a product with a mask of ones is the identity, forward and backward, so skipping it changes
        no value)."""
        return getattr(self, name) if self.dense else super().w(name)

    def init_replica(self, r: int, c: CountingConfig) -> None:
        """Drawn from (config, seed) alone (module docstring)."""
        gen = replica_generator(c.seed_config(), c.seed)
        self.place("emb", r, torch.randn((c.T + self.bos, c.d), generator=gen, dtype=torch.float64))
        if self.lin:
            self.place("A", r, uniform_init(gen, (c.L, c.L), c.L))
        else:
            self.place("W_Q", r, uniform_init(gen, (c.d, c.d), c.d))
            self.place("W_K", r, uniform_init(gen, (c.d, c.d), c.d))
        self.place("W1", r, uniform_init(gen, (c.d, c.p), c.d))
        self.place("b1", r, uniform_init(gen, (c.p,), c.d))
        self.place("W2", r, uniform_init(gen, (c.p, c.C), c.p))
        self.place("b2", r, uniform_init(gen, (c.C,), c.p))

    def _with_bos(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 2 or tokens.shape[1] != self.L:
            raise ValueError(f"tokens must be [B, L = {self.L}]; got {tuple(tokens.shape)}")
        if self.bos:
            tokens = torch.cat([torch.full_like(tokens[:, :1], self.T), tokens], 1)
        return tokens

    def mixing_t(self, tokens: torch.Tensor, order: torch.Tensor | None = None) -> torch.Tensor:
        """The token-type weights of the hidden layer, W' [R, T' + 1, N] (N = B·L query positions in
        (b, l) order; BOS is never a query), such that z_l = Σ_t' W'[t', l] h_t' + b1 (h = E W1):
        W'[t', l] = [x_l = t'] + Σ_{m : x_m = t'} 𝐀_lm, the residual's one-hot plus the mixing row
        of position l summed per token type; the last row is 1 (it carries the bias b1).

        Dot-product variants: the score of (query l, key m) depends on the tokens only, so with the
        counts n_t' of token types in the sequence (BOS counts once):
            no softmax:  Σ_{m : x_m = t'} S(x_l, x_m) = n_t' S(x_l, t')
            softmax:     Σ_{m : x_m = t'} softmax_m(S(x_l, x_m)) = softmax_t'(S(x_l, t') + log n_t')
        (log 0 = −∞ removes absent tokens); S(x_l, t') is gathered per query as the product of the
        score table with the one-hot queries.
        lin variants: W'[t', (b, l)] = Σ_m (I + 𝐀)_lm [x_bm = t'] (the bias row: a one-hot column
        times a row of ones), one product of every replica's (I + 𝐀) [R·L, L + 1] with the one-hot
        tokens, their common factor, [L + 1, (T' + 1)·B], then one transposing copy to (b, l) columns:
        R products with 6-column outputs, forward and backward, took 3x as long (1.8 against 0.6 ms for
        64 replicas at B = 128, L = 6, on an AMD EPYC).
        With `order`, the replicas come in that order (the small per-replica factors are reordered)."""
        tokens = self._with_bos(tokens)
        B, Lp = tokens.shape
        first = 1 if self.bos else 0
        Tp, L, R = self.T + self.bos, self.L, self.R
        dtype, dev = self.scale.dtype, tokens.device
        types = self.types  # token types and the bias row, 0 .. T'
        if self.lin:
            # 𝐀ᵀ [R, L (m), L (l)]; softmax over m (axis 1 of 𝐀ᵀ: torch's softmax over a last axis
            # this short is ~3x slower here)
            A_t = self.w("A").transpose(1, 2)
            A_t = torch.softmax(A_t, 1) if self.sftm else A_t
            # [[(I + 𝐀)ᵀ], [1 .. 1]] [R, L+1 (m), L (l)]: [[𝐀ᵀ], [0]] plus the constant [[I], [1 .. 1]]
            M_t = torch.nn.functional.pad(A_t, (0, 0, 0, 1)) + self.eye_ones
            M_t = M_t if order is None else M_t.index_select(0, order)
            tok = torch.cat([tokens, torch.full_like(tokens[:, :1], Tp)], 1)  # bias column: "type" T'
            onehot = (tok[None] == types[:, None, None]).to(dtype)  # [x_bm = t'] [T'+1, B, L+1]
            W = torch.mm(M_t.transpose(1, 2).reshape(R * L, L + 1), onehot.view((Tp + 1) * B, L + 1).t())
            return W.view(R, L, Tp + 1, B).permute(0, 2, 3, 1).reshape(R, Tp + 1, B * L)  # [r, l, t', b] -> (b, l)
        counts = self._counts(tokens)  # [T'+1, B]
        q = tokens[:, first:].reshape(-1)  # query tokens [N]
        return self._score_mixing(q, counts[:, :, None].expand(Tp + 1, B, L).reshape(Tp + 1, B * L), order)

    def _counts(self, tokens: torch.Tensor) -> torch.Tensor:
        """n_t' [T'+1, B]: the count of each token type in each sequence of tokens [B, L'] (BOS
        included when the variant has it; the bias row T' is 0)."""
        counts = torch.zeros(self.T + self.bos + 1, tokens.shape[0], dtype=self.scale.dtype, device=tokens.device)
        return counts.scatter_add_(0, tokens.t(), torch.ones_like(tokens.t(), dtype=counts.dtype))

    def _score_mixing(self, q: torch.Tensor | None, counts: torch.Tensor, order: torch.Tensor | None,
                      onehot: torch.Tensor | None = None) -> torch.Tensor:
        """`mixing_t` of the dot-product variants for N queries: q [N] their tokens, counts [T'+1, N]
        the token counts n_t' of each query's sequence -> W' [R, T'+1, N]. Per-replica queries
        (`set_streams`): q None, onehot [R, T'+1, N] the one-hot queries (bias row 1) and counts
        [R, T'+1, N]."""
        Tp, R = self.T + self.bos, self.R
        dtype, dev = counts.dtype, counts.device
        E = self.w("emb")  # [R, T', D]
        S_t = torch.bmm(torch.bmm(E, self.w("W_K")), torch.bmm(E, self.w("W_Q")).transpose(1, 2))
        S_t = S_t * self.scale.view(-1, 1, 1)  # score of (key token, query token): [R, T', T']
        S_t = torch.cat([S_t, torch.zeros(1, 1, Tp, dtype=dtype, device=dev).expand(R, 1, Tp)], 1)  # [R, T'+1, T']
        S_t = S_t if order is None else S_t.index_select(0, order)
        if onehot is not None:
            Sq = torch.bmm(S_t, onehot[:, :Tp])
        else:
            N = q.shape[0]
            onehot = (q[None] == self.types[:, None]).to(dtype)  # [x_l = t'] [T'+1, N]
            onehot[Tp] = 1
            Sq = torch.bmm(S_t, onehot[None, :Tp].expand(R, Tp, N))  # S(x_l, t') [R, T'+1, N], last row 0
        if self.sftm:  # softmax_t'(S(x_l, t') + log n_t') + [x_l = t'] (`_CountSoftmax`)
            return _CountSoftmax.apply(Sq, counts, onehot)
        return torch.addcmul(onehot, Sq, counts)

    def query_pairs(self, tokens: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The distinct (sequence, query token) pairs of tokens [B, L], row-major: b [N'], q [N'],
        the counts n_t' of b's sequence [T'+1, N'] and n = n_q [N'] (as floats). Without positional
        information the logits of a position depend on its token and its sequence's counts only,
        so the n positions of token q in sequence b share their logits and their label n
        (`loss` computes each pair once, weighted by n)."""
        counts = self._counts(self._with_bos(tokens))  # [T'+1, B]
        b, q = counts[:self.T].t().nonzero(as_tuple=True)  # BOS and the bias row are never queries
        cols = counts.index_select(1, b)  # [T'+1, N']
        return b, q, cols, cols.gather(0, q[None]).squeeze(0)

    def _hidden_weights(self) -> torch.Tensor:
        """H = [[0, 1], [hᵀ, b1]] [R, P + 1, T' + 1] with h = E W1 [R, T', P]: z = H W' (`hidden_t`);
        unit 0 is the constant 1 (so a group's first k units are a slice of H)."""
        h_t = torch.bmm(self.w("emb"), self.w("W1")).transpose(1, 2)  # [R, P, T']
        H = torch.cat([h_t, self.w("b1")[:, :, None]], 2)  # [R, P, T'+1]
        return torch.cat([self.unit_row.expand(self.R, 1, -1), H], 1)  # [R, P+1, T'+1]

    def _readout_weights(self) -> torch.Tensor:
        """V = [b2, W2ᵀ] [R, C, P + 1]: the readout of the units of `_hidden_weights` (b2 on the constant unit)."""
        return torch.cat([self.w("b2")[:, :, None], self.w("W2").transpose(1, 2)], 2)

    def hidden_t(self, tokens: torch.Tensor) -> torch.Tensor:
        """Hidden pre-activations, units first: z [R, P + 1, B, L] (non-BOS positions; unit 0 is the
        constant 1 that carries b2; padded units are 0), z = H W' with W' = `mixing_t` and
        H = [[0, 1], [hᵀ, b1]] [R, P + 1, T' + 1], h = E W1 [R, T', P]: one product, the residual
        and the bias folded in; the mixing runs in the p hidden dimensions and the mixed vector x̄'
        is never formed."""
        return torch.bmm(self._hidden_weights(), self.mixing_t(tokens)).view(self.R, -1, tokens.shape[0], self.L)

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor:
        """Hidden pre-activations z [R, B, L, P] (a view of `hidden_t` without the constant unit)."""
        return self.hidden_t(tokens)[:, 1:].permute(0, 2, 3, 1)

    def logits_grouped(self, tokens: torch.Tensor) -> torch.Tensor:
        """`logits_t` with the replicas in the grouped order (replica order[i] at place i): per group
        of padded hidden width w (`_padded_width`), [b2, W2ᵀ] ReLU(z) with z = H W' on the constant
        unit and the first w units (the other units of the group's replicas are padding, 0), by
        `_HiddenReadout`."""
        W = self.mixing_t(tokens, self.order if self.sorted else None)  # [R, T'+1, N]
        return self._readout(W).view(self.R, -1, tokens.shape[0], self.L)

    def _readout(self, W: torch.Tensor) -> torch.Tensor:
        """Logits [R, C, N] = [b2, W2ᵀ] ReLU(H W) of the token-type weights W = W' [R, T'+1, N], both
        in the grouped order, by `_HiddenReadout` per width group."""
        return _HiddenReadout.apply(W, self.groups, *self._grouped_weights())

    def _grouped_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """H (`_hidden_weights`) and V (`_readout_weights`) in the grouped order."""
        H, V = self._hidden_weights(), self._readout_weights()
        if self.sorted:
            H, V = H.index_select(0, self.order), V.index_select(0, self.order)
        return H, V

    def _readout_loss(self, W: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Σ_n w_n cross-entropy(logits of column n, targets n) [R] (grouped order) of the token-type
        weights W [R, T'+1, N] (grouped order), by `_HiddenReadoutLoss`."""
        classes = torch.arange(self.L + 1, device=targets.device)
        if targets.dim() == 2:  # per-replica columns: [R, C, N]
            labels = (targets[:, None] == classes[None, :, None]) * weights[:, None]
        else:
            labels = (targets[None] == classes[:, None]) * weights  # [C, N]
        return _HiddenReadoutLoss.apply(W, self.groups, labels, weights, *self._grouped_weights())

    def logits_t(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits with the class axis second: [R, C, B, L] = [W2ᵀ, b2] ReLU(z), z = `hidden_t`
        (whose last unit is the constant 1 that carries b2), computed per width group
        (`logits_grouped`; the short class axis is not the contiguous one, so the loss's
        reductions over it vectorise)."""
        out = self.logits_grouped(tokens)
        return out.index_select(0, self.unorder) if self.sorted else out

    def loss(self, tokens: torch.Tensor) -> torch.Tensor:
        """Per-replica `counting_loss` [R] on the histogram labels of tokens [B, L] (computed in the
        grouped order, the [R] result put back in replica order), the readout and the cross-entropy
        fused per width group (`_HiddenReadoutLoss`, a weighted sum over columns).

        Dot-product variants: once per distinct (sequence, query token) pair (`query_pairs`), whose
        n positions share their logits and their label n: with the pair's cross-entropy ℓ,
            loss = (1 / (B·L)) Σ_positions ℓ = Σ_pairs (n / (B·L)) ℓ,
        the same value and gradient with about half the columns (3.3 distinct tokens per sequence of
        6 for T = 8, L = 6). lin variants mix by position: every position is computed."""
        if tokens.dim() == 3:
            return self._loss_streams(tokens)
        o = self.order if self.sorted else None
        if self.lin:
            y = hist_torch(tokens).view(-1)
            loss = self._readout_loss(self.mixing_t(tokens, o), y,
                                      torch.full(y.shape, 1 / y.numel(), dtype=self.scale.dtype, device=y.device))
        else:
            _, q, counts, n = self.query_pairs(tokens)
            loss = self._readout_loss(self._score_mixing(q, counts, o), n.long(), n / tokens.numel())
        return loss.index_select(0, self.unorder) if self.sorted else loss

    def set_streams(self, stream_of: list[int] | None) -> None:
        """Per-replica training data: `loss` of tokens [S, B, L] (S batches, one per data stream)
        trains replica r on batch stream_of[r] only (None: every replica on one batch [B, L])."""
        if stream_of is not None and len(stream_of) != self.R:
            raise ValueError(f"set_streams: {len(stream_of)} stream ids for {self.R} replicas")
        self.stream_of = None if stream_of is None else torch.tensor(stream_of, device=self.device)

    def _loss_streams(self, tokens: torch.Tensor) -> torch.Tensor:
        """`loss` with replica r trained on tokens[stream_of[r]] (tokens [S, B, L]): the same per-replica
        computation with an R axis on the data factors. Dot-product variants: each stream's distinct
        (sequence, query token) pairs, padded to the longest stream's count with weight-0 columns
        (query token 0, count 1 of token 0, label 0: a finite column that adds nothing to the loss or
        its gradient); lin variants: the one-hot tokens of each replica's stream in one batched product."""
        S, B, L = tokens.shape
        if self.stream_of is None or int(self.stream_of.max()) >= S:
            raise ValueError(f"tokens [S = {S}, B, L] need set_streams with stream ids < {S}")
        if L != self.L:
            raise ValueError(f"tokens must be [S, B, L = {self.L}]; got {tuple(tokens.shape)}")
        o = self.order if self.sorted else None
        sidx = self.stream_of if o is None else self.stream_of.index_select(0, o)  # grouped order
        dtype, dev = self.scale.dtype, tokens.device
        Tp, R = self.T + self.bos, self.R
        if self.lin:
            A_t = self.w("A").transpose(1, 2)
            A_t = torch.softmax(A_t, 1) if self.sftm else A_t
            M_t = torch.nn.functional.pad(A_t, (0, 0, 0, 1)) + self.eye_ones  # [R, L+1, L] (as `mixing_t`)
            M_t = M_t if o is None else M_t.index_select(0, o)
            tok = torch.cat([tokens, torch.full_like(tokens[:, :, :1], Tp)], 2)  # [S, B, L+1]
            onehot = (tok[:, None] == self.types[None, :, None, None]).to(dtype)  # [S, T'+1, B, L+1]
            per = onehot.view(S, (Tp + 1) * B, L + 1).index_select(0, sidx)  # [R, (T'+1)·B, L+1]
            W = torch.bmm(M_t.transpose(1, 2), per.transpose(1, 2))  # [R, L, (T'+1)·B]
            W = W.view(R, L, Tp + 1, B).permute(0, 2, 3, 1).reshape(R, Tp + 1, B * L)
            y = hist_torch(tokens.reshape(S * B, L)).view(S, B * L).index_select(0, sidx)  # [R, N]
            loss = self._readout_loss(W, y, torch.full(y.shape, 1 / (B * L), dtype=dtype, device=dev))
        else:
            # per stream, then one gather to the replicas: [one-hot query (bias row 1), counts n_t',
            # weighted one-hot label n / (B·L) [c = n], weight n / (B·L)], columns padded to Nmax
            counts = self._counts(self._with_bos(tokens.reshape(S * B, L)))  # [T'+1, S·B]
            sb, q = counts[:self.T].t().nonzero(as_tuple=True)  # the pairs, row-major: stream by stream
            s = torch.div(sb, B, rounding_mode="floor")
            n_s = torch.bincount(s, minlength=S)
            Nmax = int(n_s.max())
            col = s * Nmax + torch.arange(len(s), device=dev) - (torch.cumsum(n_s, 0) - n_s).index_select(0, s)
            K, C1 = Tp + 1, self.L + 1
            D = torch.zeros(2 * K + C1 + 1, S * Nmax, dtype=dtype, device=dev)
            D[0] = 1  # padding columns: query token 0 ...
            D[K] = 1  # ... that occurs once; label row and weight 0
            cnt = counts.index_select(1, sb)  # [T'+1, n]
            n = cnt.gather(0, q[None]).squeeze(0)
            w = n / (B * L)
            q1 = (q[None] == self.types[:, None]).to(dtype)
            q1[Tp] = 1
            lab = (n.long()[None] == torch.arange(C1, device=dev)[:, None]) * w
            D.index_copy_(1, col, torch.cat([q1, cnt, lab, w[None]]))
            D = D.view(-1, S, Nmax).transpose(0, 1)  # [S, 2K + C + 1, Nmax]
            onehot, C, labels, weights = (D[:, i:j].index_select(0, sidx)  # each [R, ·, Nmax], contiguous
                                          for i, j in ((0, K), (K, 2 * K), (2 * K, 2 * K + C1), (-1, None)))
            weights = weights.squeeze(1)
            W = self._score_mixing(None, C, o, onehot=onehot)
            loss = _HiddenReadoutLoss.apply(W, self.groups, labels, weights, *self._grouped_weights())
        return loss.index_select(0, self.unorder) if self.sorted else loss

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits [R, B, L, C] at every (non-BOS) position (a view of `logits_t`)."""
        return self.logits_t(tokens).permute(0, 2, 3, 1)

    def weights(self, r: int) -> CountingWeights:
        """Replica r's weights (padding removed) as a float64 reference `CountingWeights`."""
        c = self.configs[r]
        st = {k: v.double().cpu().numpy() for k, v in self.replica_state(r).items()}
        # replica_state cuts each tensor to its mask's extent; the explicit cuts below restate the shapes
        extra = {"A": st["A"][:c.L, :c.L]} if self.lin else {"W_Q": st["W_Q"][:c.d, :c.d],
                                                              "W_K": st["W_K"][:c.d, :c.d]}
        return CountingWeights(variant=self.variant, emb=st["emb"][:, :c.d], W1=st["W1"][:c.d, :c.p],
                               b1=st["b1"][:c.p], W2=st["W2"][:c.p], b2=st["b2"], **extra)


def hist_torch(tokens: torch.Tensor) -> torch.Tensor:
    """Labels y[b, l] = #{m : x[b, m] = x[b, l]} (the histogram task)."""
    return (tokens[:, :, None] == tokens[:, None, :]).sum(-1)


def counting_loss(logits_t: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-replica cross-entropy averaged over all positions: logits_t [R, C, B, L] (the layout of
    `ReplicaCounting.logits_t`), targets [B, L] -> [R]. The log-sum-exp over the short class axis
    runs over the contiguous (batch, position) axis; the gradient is the written-out
    (softmax − one-hot) / (B·L) (`core.train.class_axis_cross_entropy`)."""
    R, C, B, L = logits_t.shape
    return class_axis_cross_entropy(logits_t.reshape(R, C, B * L), targets.reshape(-1))


@torch.no_grad()
def counting_accuracy(model: ReplicaCounting, tokens: torch.Tensor, chunk: int = 1024) -> torch.Tensor:
    """Per-replica token-level accuracy [R] over all (non-BOS) positions of tokens [n, L]."""
    hits = torch.zeros(model.R, dtype=torch.float64)
    for i in range(0, tokens.shape[0], chunk):
        x = tokens[i:i + chunk]
        pred = model.logits_grouped(x).argmax(1)  # [R, B, L], grouped order
        hits += (pred == hist_torch(x)).to(torch.float64).sum((1, 2)).cpu()
    return (hits[model.unorder.cpu()] if model.sorted else hits) / tokens.numel()


def counting_batches(T: int, L: int, batch_size: int, seed: int = 0, sampler: str = "code",
                     chunk: int = 64, device="cpu", start: int = 0) -> Iterator[torch.Tensor]:
    """Endless stream of fresh token batches [batch_size, L] (online learning, §3.3), drawn
    `chunk` batches at a time from the vectorised sampler, seeded by (T, L, batch_size, sampler,
    seed) and the chunk index only; `start` skips that many batches (to resume a run)."""
    i = start // chunk
    skip = start % chunk
    while True:
        s = derive_seed({"stream": "counting-train", "T": T, "L": L, "B": batch_size, "sampler": sampler,
                         "chunk": i}, seed)
        x = torch.from_numpy(sample(sampler, chunk * batch_size, T, L, seed=s)).to(device)
        for b in x.split(batch_size)[skip:]:
            yield b
        i, skip = i + 1, 0


def eval_tokens(T: int, L: int, n: int = paper.EVAL_N, seed: int = paper.EVAL_SEED, sampler: str = "code",
                device="cpu") -> torch.Tensor:
    """A fixed eval set (§3.3: 3,000 sequences, seed 12 in the code; here the sampler's own seed
    stream, distinct from `counting_batches`'s derived seeds)."""
    return torch.from_numpy(sample(sampler, n, T, L, seed=seed)).to(device)


@dataclass
class CountingTrainLog:
    """Per-replica outcome of `train_counting` (lists indexed by replica)."""

    final_accuracy: list[float]
    final_loss: list[float]
    steps: int
    seconds: float
    loss_curve: list[list[float]] = field(default_factory=list)  # every `curve_every` steps
    eval_curve: list[list[float]] = field(default_factory=list)  # every `eval_every` steps (if set)
    best_accuracy: list[float] = field(default_factory=list)  # max over the eval curve and the final eval


def train_counting(model: ReplicaCounting, batches: Iterator[torch.Tensor], steps: int,
                   lr: Callable[[int], float | torch.Tensor], *, eval_set: torch.Tensor | None = None,
                   betas: tuple[float, float] = paper.ADAM_BETAS, eps: float = paper.ADAM_EPS,
                   eval_every: int | None = None,
                   curve_every: int = 50, progress: bool = False, desc: str = "train",
                   opt: MaskedAdam | None = None, start: int = 0) -> CountingTrainLog:
    """Train the R replicas for `steps` batches of tokens [B, L] (labels = hist of the batch).

    lr(step) gives a float or an [R] tensor (e.g. `core.train.linear_lr`). The final (and, with
    `eval_every`, periodic) per-position accuracy is measured on `eval_set` (default: a fresh
    3,000-sequence set, `eval_tokens(T, L)`). Parameters with requires_grad False stay frozen.
    To continue a run, pass its optimiser `opt` and the steps done so far as `start` (the
    schedule, the curves and the eval points then count from there)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = opt or MaskedAdam(params, betas=betas, eps=eps)
    R, dev, dtype = model.R, params[0].device, params[0].dtype
    active = torch.ones(R, dtype=torch.bool, device=dev)
    if eval_set is None:
        eval_set = eval_tokens(model.T, model.L, device=dev)
    curve, evals = [], []
    loss = torch.zeros(R)
    t0 = time.perf_counter()
    for step in tqdm(range(start, start + steps), desc=desc, disable=not progress, mininterval=5.0, leave=False):
        tokens = next(batches)
        loss = model.loss(tokens)
        if step % curve_every == 0:
            curve.append(loss.detach().cpu().tolist())
        for p in params:
            p.grad = None
        loss.sum().backward()
        lr_now = lr(step)
        lr_vec = lr_now if isinstance(lr_now, torch.Tensor) else torch.full((R,), float(lr_now))
        opt.step(lr_vec.to(dev, dtype), active)
        if eval_every and (step + 1) % eval_every == 0 and step + 1 < start + steps:
            evals.append(counting_accuracy(model, eval_set).tolist())
    final = counting_accuracy(model, eval_set).tolist()
    best = np.max(np.array(evals + [final]), axis=0).tolist()
    return CountingTrainLog(final_accuracy=final, final_loss=loss.detach().cpu().tolist(), steps=steps,
                            seconds=time.perf_counter() - t0, loss_curve=curve, eval_curve=evals,
                            best_accuracy=best)
