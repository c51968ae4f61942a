"""Attention variants as small, replica-batched functions.

Inputs are token tables: an input vector x_s = e(t_s) + pos_s takes only S*N distinct values,
so projections are computed once per (position, token) and gathered per sequence, which is
far cheaper than projecting every sequence. Heads of all replicas are packed along one axis
G (no padding of the head count); `heads_to_replicas` sums them back per replica.

Shapes: G packed heads, R replicas, B sequences, S positions, N tokens, D model dims, K head dims.
"""

from __future__ import annotations

import torch


def last_query_attention(x_tab: torch.Tensor, tokens: torch.Tensor, W_Q: torch.Tensor, W_K: torch.Tensor,
                         W_V: torch.Tensor, W_O: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """One head per row g, read at the last position only (paper 004, Eq. 1 with query x_S).

    a_s = softmax_s(scale * (W_Q x_S)^T (W_K x_s)),  out = W_O W_V sum_s a_s x_s.
    x_tab: [G,S,N,D] (x for each position and token, of the head's replica); tokens: [B,S];
    W_Q, W_K, W_V: [G,K,D]; W_O: [G,D,K]; scale: [G].
    Returns [G,D,B]: the batch axis last, so that every elementwise op and reduction runs over a
    long contiguous axis (over short axes such as S = 2 or D = 2, CPU kernels do not vectorize).
    """
    G, S, N, D = x_tab.shape
    B = tokens.shape[0]
    flat = x_tab.reshape(G, S * N, D)
    keys = tokens.T + (torch.arange(S, device=tokens.device) * N).unsqueeze(1)  # [S,B]: row (s, t_s) of flat
    # Score table over (query token, key position and token), then only the S*B scores needed.
    q_tab = torch.bmm(flat[:, (S - 1) * N:], W_Q.transpose(1, 2)) * scale.view(-1, 1, 1)  # [G,N,K]
    k_tab = torch.bmm(flat, W_K.transpose(1, 2))  # [G,SN,K]
    score_tab = torch.bmm(q_tab, k_tab.transpose(1, 2)).reshape(G, N * S * N)
    scores = score_tab.index_select(1, (tokens[:, -1] * (S * N) + keys).reshape(-1)).view(G, S, B)
    if S == 2:  # softmax over two scores is a sigmoid of their difference: fewer full-size ops
        a1 = torch.sigmoid(scores[:, 1] - scores[:, 0]).unsqueeze(1)
        a = torch.cat([1 - a1, a1], dim=1)
    else:
        a = _softmax(scores, dim=1)  # [G,S,B]
    # Values W_O W_V x per (position, token), gathered one position at a time.
    ov_tab = torch.bmm(W_O, torch.bmm(W_V, flat.transpose(1, 2)))  # [G,D,SN]
    out = a[:, :1] * ov_tab.index_select(2, keys[0])
    for s in range(1, S):
        out = out + a[:, s:s + 1] * ov_tab.index_select(2, keys[s])
    return out


def _softmax(z: torch.Tensor, dim: int) -> torch.Tensor:
    """softmax written out (stable): faster than torch.softmax over a short axis of many rows."""
    e = (z - z.detach().amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)


def heads_to_replicas(out: torch.Tensor, head_replica: torch.Tensor, n_replicas: int) -> torch.Tensor:
    """Sum packed head outputs [G,...] into their replicas [R,...] (a 0/1 [R,G] matrix product,
    much faster on CPU than index_add and its backward)."""
    assign = (head_replica.unsqueeze(0) == torch.arange(n_replicas, device=out.device).unsqueeze(1)).to(out.dtype)
    return (assign @ out.reshape(out.shape[0], -1)).view(n_replicas, *out.shape[1:])


def causal_attention(x: torch.Tensor, W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor,
                     W_O: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Causal self-attention at every position, one head per row g (for deeper models).

    out_t = W_O W_V sum_{s<=t} softmax_s(scale * (W_Q x_t)^T (W_K x_s)) x_s.
    x: [G,B,S,D]; weights as in `last_query_attention`. Returns [G,B,S,D].
    """
    G, B, S, D = x.shape
    flat = x.reshape(G, B * S, D)
    q = torch.bmm(flat, W_Q.transpose(1, 2)).view(G, B, S, -1)
    k = torch.bmm(flat, W_K.transpose(1, 2)).view(G, B, S, -1)
    v = torch.bmm(flat, W_V.transpose(1, 2)).view(G, B, S, -1)
    scores = torch.einsum("gbtk,gbsk->gbts", q, k) * scale.view(-1, 1, 1, 1)
    mask = torch.ones(S, S, dtype=torch.bool, device=x.device).tril()
    a = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    o = torch.einsum("gbts,gbsk->gbtk", a, v)
    return torch.bmm(o.reshape(G, B * S, -1), W_O.transpose(1, 2)).view(G, B, S, D)
