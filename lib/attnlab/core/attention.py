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
    W_Q, W_K, W_V: [G,K,D]; W_O: [G,D,K]; scale: [G]. Returns [G,B,D].
    """
    G, S, N, D = x_tab.shape
    B = tokens.shape[0]
    flat = x_tab.reshape(G, S * N, D)
    rows = (tokens + torch.arange(S, device=tokens.device) * N).reshape(-1)  # rows of the flat table

    def gather(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return table.index_select(1, index)  # backward is an index_add: much faster than index_put

    q = gather(torch.bmm(flat[:, (S - 1) * N:], W_Q.transpose(1, 2)), tokens[:, -1])  # [G,B,K]
    k = gather(torch.bmm(flat, W_K.transpose(1, 2)), rows).view(G, B, S, -1)
    ov = gather(torch.bmm(torch.bmm(flat, W_V.transpose(1, 2)), W_O.transpose(1, 2)), rows).view(G, B, S, D)
    scores = (q.unsqueeze(2) * k).sum(-1) * scale.view(-1, 1, 1)  # [G,B,S]
    a = _softmax_last(scores)
    return (a.unsqueeze(-1) * ov).sum(2)


def _softmax_last(z: torch.Tensor) -> torch.Tensor:
    """softmax over a short last axis (torch.softmax is slow on very many rows of length 2)."""
    e = (z - z.detach().amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def heads_to_replicas(out: torch.Tensor, head_replica: torch.Tensor, n_replicas: int) -> torch.Tensor:
    """Sum packed head outputs [G,...] into their replicas [R,...]."""
    total = out.new_zeros((n_replicas, *out.shape[1:]))
    return total.index_add(0, head_replica, out)


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
