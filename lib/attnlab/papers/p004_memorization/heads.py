"""The heads of paper 004's one-layer AoT, read at the last position, for R replicas at once.

For head h of replica r (one of its H_r heads, head dim d_h, in a space of dim e: e = d for
Eq. (1), e = d_h for the repo parametrization, whose heads act inside R^{d_h}), on the table
x_{s,n} (position s, token n) of its replica:

    score_s(b) = (W_Q^h x_{S-1, t_S(b)})^T (W_K^h x_{s, t_s(b)}) / sqrt(d_h),   s = 0 .. S-1,
    a_s(b)     = softmax_s(score_s(b)),
    out(b)     = skip(b) + sum_h sum_s a^h_s(b) W_O^h W_V^h x_{s, t_s(b)}            (in R^e).

Tokens take N values, so everything before the softmax weights is a table over tokens,
computed once per step and read per sequence b:
* the scores at the query's own position s = S-1 depend on the query token only: a [G,N] table;
* the scores at s < S-1: a [G, N, (S-1)N] table (one bmm over the G packed heads), gathered;
* the values W_O^h W_V^h x_{s,n}: OV^h = W_O^h W_V^h first ([E,E] per head), then one bmm per
  replica gives a table [C', SN] on exactly packed rows, one row per (head, i < e)
  (C' = sum_r H_r e_r rows; no padded head or dimension reaches the batch).
Only the weighted sum over s of the gathered values is per sequence: `weighted_rows`, whose
backward is written out (one pass per product; every gather's backward is an index_add).
Every sum over heads or rows runs over one replica's rows in a fixed order: a replica's result
does not depend on the other replicas of the program.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class PackedHeads(nn.Module):
    """Index maps of the packed heads and rows (non-persistent buffers: they follow the module's
    device and are not state), for replicas given as (H, d_h, e) under padded sizes (H_max, K, E).

    head_src [G]: padded head r*H_max + h of packed head g; head_scale [G]: 1/sqrt(d_h);
    ov_src [C']: row (r*H_max + h)*E + i of the padded value tables [R*H_max*E, .];
    ov_head [C']: the row's packed head g; ov_out [C']: the row's output row r*E + i.
    """

    def __init__(self, heads: list[tuple[int, int, int]], H_max: int, K: int, E: int, dtype, device):
        super().__init__()
        head_src, head_scale, ov_src, ov_head, ov_out = [], [], [], [], []
        for r, (H, d_h, e) in enumerate(heads):
            for h in range(H):
                for i in range(e):
                    ov_src.append((r * H_max + h) * E + i)
                    ov_head.append(len(head_src))
                    ov_out.append(r * E + i)
                head_src.append(r * H_max + h)
                head_scale.append(1 / math.sqrt(d_h))
        self.G, self.R, self.H_max, self.K, self.E = len(head_src), len(heads), H_max, K, E
        for name, value in (("head_src", head_src), ("ov_src", ov_src), ("ov_head", ov_head), ("ov_out", ov_out)):
            self.register_buffer(name, torch.tensor(value, dtype=torch.long, device=device), persistent=False)
        self.register_buffer("head_scale", torch.tensor(head_scale, dtype=dtype, device=device).view(-1, 1, 1),
                             persistent=False)

    def forward(self, x_tab, tokens, skip, W_Q, W_K, W_V, W_O) -> torch.Tensor:
        """`last_query_heads` with these maps."""
        return last_query_heads(x_tab, tokens, skip, W_Q, W_K, W_V, W_O, self)


def last_query_heads(x_tab: torch.Tensor, tokens: torch.Tensor, skip: torch.Tensor, W_Q: torch.Tensor,
                     W_K: torch.Tensor, W_V: torch.Tensor, W_O: torch.Tensor, lay: PackedHeads) -> torch.Tensor:
    """skip + sum over each replica's heads of W_O^h W_V^h sum_s a^h_s x_s (module docstring): [R,E,B].

    x_tab: [R,S,N,E], the heads' input for each (position, token), zero beyond each replica's e;
    tokens: [B,S]; skip: [R*E,B]; W_Q, W_K, W_V: [R,H_max,K,E]; W_O: [R,H_max,E,K] (zero-padded).
    """
    R, S, N, E = x_tab.shape
    H, K, G, B = lay.H_max, lay.K, lay.G, tokens.shape[0]
    xT = x_tab.reshape(R, S * N, E).transpose(1, 2)  # [R,E,SN]
    query = tokens[:, -1]
    # Query and key tables of the packed heads, [G,K,N] and [G,K,SN] (zero rows beyond d_h).
    q = torch.bmm(W_Q.reshape(R, H * K, E), xT[:, :, (S - 1) * N:]).view(R * H, K * N)
    q = q.index_select(0, lay.head_src).view(G, K, N)
    k = torch.bmm(W_K.reshape(R, H * K, E), xT).view(R * H, K * S * N).index_select(0, lay.head_src).view(G, K, S * N)
    # Value table W_O^h W_V^h x_{s,n} on packed rows [C', SN]: OV^h = W_O^h W_V^h first ([E,E] per head).
    OV = torch.bmm(W_O.reshape(R * H, E, K), W_V.reshape(R * H, K, E)).view(R, H * E, E)
    ov = torch.bmm(OV, xT).view(R * H * E, S * N).index_select(0, lay.ov_src)
    keys = (tokens.T + (torch.arange(S, device=tokens.device) * N).unsqueeze(1)).reshape(-1)  # [S*B]: (s, t_s)
    if S == 2:  # softmax over two scores is a sigmoid of their difference: a_0 = 1 - a_1
        a1 = torch.sigmoid(ScoreDifference.apply(q, k, lay.head_scale.view(-1), query, tokens[:, 0]))  # [G,B]
        out = TwoKeyRows.apply(a1, ov, keys[:B], keys[B:], lay.ov_head, lay.ov_out, skip)
    else:
        q = q * lay.head_scale
        last = (q * k[:, :, (S - 1) * N:]).sum(1).index_select(1, query)  # [G,B]: key = the query itself
        tab = torch.bmm(q.transpose(1, 2), k[:, :, :(S - 1) * N]).view(G, N * (S - 1) * N)
        early = tokens[:, :-1].T + (torch.arange(S - 1, device=tokens.device) * N).unsqueeze(1)  # [S-1,B]
        scores = torch.cat([tab.index_select(1, (query * ((S - 1) * N) + early).reshape(-1)).view(G, S - 1, B),
                            last.unsqueeze(1)], dim=1)  # [G,S,B]
        e = (scores - scores.detach().amax(1, keepdim=True)).exp()
        out = WeightedRows.apply(e / e.sum(1, keepdim=True), ov, keys, lay.ov_head, lay.ov_out, skip)
    return out.view(R, E, B)


class ScoreDifference(torch.autograd.Function):
    """S = 2: z[g,b] = scale_g (q_g(t_1)^T k_g(1, t_1) - q_g(t_1)^T k_g(0, t_0)), the score of the query's
    own position minus the first position's (a_1 = sigmoid(z)), from q [G,K,N] and k [G,K,2N]
    (columns: position 0's N tokens, then position 1's). The first scores come from the table
    q_g^T k_g(0, .) [G,N,N] (one bmm), the own-position ones from its N diagonal products.
    Backward: with g_tab [G,N,N] the scattered -scale*grad and g_own [G,N] the scattered
    scale*grad: grad_q = k_0 g_tabᵀ + k_1 g_own, grad_k = [q g_tab, q g_own]."""

    @staticmethod
    def forward(ctx, q, k, scale, query, first):
        G, K, N = q.shape
        k0, k1 = k[:, :, :N], k[:, :, N:]
        if K <= 4:  # a bmm of many tiny matrices with a transposed operand is slower than K products
            tab = q[:, 0, :, None] * k0[:, 0, None, :]
            for j in range(1, K):
                tab.addcmul_(q[:, j, :, None], k0[:, j, None, :])
        else:
            tab = torch.bmm(q.transpose(1, 2), k0)
        tab = tab.view(G, N * N)  # [G, query token, key token]
        own = (q * k1).sum(1)  # [G,N]
        pair = query * N + first
        ctx.save_for_backward(q, k, scale, query, pair)
        return (own.index_select(1, query) - tab.index_select(1, pair)) * scale.unsqueeze(1)

    @staticmethod
    def backward(ctx, grad):
        q, k, scale, query, pair = ctx.saved_tensors
        G, K, N = q.shape
        gs = grad * scale.unsqueeze(1)  # [G,B]
        g_tab = gs.new_zeros(G, N * N).index_add_(1, pair, gs, alpha=-1).view(G, N, N)
        g_own = gs.new_zeros(G, N).index_add_(1, query, gs).unsqueeze(1)  # [G,1,N]
        k0, k1 = k[:, :, :N], k[:, :, N:]
        grad_q = torch.baddbmm(k1 * g_own, k0, g_tab.transpose(1, 2))
        grad_k = torch.cat([torch.bmm(q, g_tab), q * g_own], dim=2)
        return grad_q, grad_k, None, None, None


class WeightedRows(torch.autograd.Function):
    """out = skip + index_add over rows c of  sum_s a[head(c), s, b] * T[c, keys[s, b]]  into row out_row(c).

    a: [G,S,B]; T: [C,M]; keys: [S*B] (s-major); head, out_row: [C]; skip: [Q,B] -> [Q,B].
    Written as one Function so that no [C,S,B] product is kept for autograd: the backward needs
    only the gathered values and weights (grad_a = sum_c<-g grad_o * T[., keys], grad_T =
    index_add of grad_o * a_rows at keys, grad_skip = grad_out).
    """

    @staticmethod
    def forward(ctx, a, T, keys, head, out_row, skip):
        G, S, B = a.shape
        C = T.shape[0]
        vals = T.index_select(1, keys).view(C, S, B)
        rows = a.index_select(0, head)  # [C,S,B]
        o = rows[:, 0] * vals[:, 0]
        for s in range(1, S):
            o.addcmul_(rows[:, s], vals[:, s])
        ctx.save_for_backward(vals, rows, keys, head, out_row)
        ctx.shapes = (G, T.shape[1])
        return skip.index_add(0, out_row, o)

    @staticmethod
    def backward(ctx, grad_out):
        vals, rows, keys, head, out_row = ctx.saved_tensors
        G, M = ctx.shapes
        C, S, B = vals.shape
        grad_o = grad_out.index_select(0, out_row).unsqueeze(1)  # [C,1,B]
        grad_a = grad_T = None
        if ctx.needs_input_grad[0]:
            grad_a = vals.new_zeros(G, S * B).index_add_(0, head, (grad_o * vals).view(C, S * B)).view(G, S, B)
        if ctx.needs_input_grad[1]:
            grad_T = vals.new_zeros(C, M).index_add_(1, keys, (grad_o * rows).view(C, S * B))
        return grad_a, grad_T, None, None, None, grad_out if ctx.needs_input_grad[5] else None


class TwoKeyRows(torch.autograd.Function):
    """`WeightedRows` for S = 2 with a_0 = 1 - a_1 given as a1 [G,B]: per row c,
    o = T[c, k0] + a1[head(c)] (T[c, k1] - T[c, k0]); out = skip + index_add of o into out_row(c).
    Backward: grad_a1 = sum_c<-g grad_o (T[., k1] - T[., k0]); grad_T = index_add of
    grad_o (1 - a1_rows) at k0 and of grad_o a1_rows at k1; grad_skip = grad_out. The products
    are formed in place in the saved [C,B] tensors (fresh full-size buffers cost more than the
    arithmetic here), so the backward runs once."""

    @staticmethod
    def forward(ctx, a1, T, k0, k1, head, out_row, skip):
        v0 = T.index_select(1, k0)  # [C,B]
        diff = T.index_select(1, k1).sub_(v0)
        rows = a1.index_select(0, head)
        o = v0.addcmul_(rows, diff)
        ctx.save_for_backward(diff, rows, k0, k1, head, out_row)
        ctx.shapes, ctx.spent = (a1.shape[0], T.shape[1]), False
        return skip.index_add(0, out_row, o)

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.spent:
            raise RuntimeError("TwoKeyRows: the backward overwrites its saved tensors; it runs once")
        ctx.spent = True
        diff, rows, k0, k1, head, out_row = ctx.saved_tensors
        G, M = ctx.shapes
        grad_o = grad_out.index_select(0, out_row)  # [C,B]
        grad_a1 = grad_T = None
        if ctx.needs_input_grad[0]:
            grad_a1 = grad_o.new_zeros(G, grad_o.shape[1]).index_add_(0, head, diff.mul_(grad_o))
        if ctx.needs_input_grad[1]:
            g1 = rows.mul_(grad_o)
            grad_T = grad_o.new_zeros(grad_o.shape[0], M).index_add_(1, k1, g1).index_add_(1, k0, grad_o.sub_(g1))
        return grad_a1, grad_T, None, None, None, None, grad_out if ctx.needs_input_grad[6] else None
