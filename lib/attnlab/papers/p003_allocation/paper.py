"""Every number paper 003 prints, and its experimental protocols (no logic).

The paper has no tables and no numbers read off its figures; what it states is collected here
with the section it comes from. Where a protocol detail is missing, the value used by the book
is marked "assumed" and the chapter lists it under its deviations.
"""

# Lemma B.1: ||1(. = T) - phi_m||_l1 <= ATTN_CONST * exp(ATTN_RATE * T) / m   (App. B)
ATTN_CONST = 1.3
ATTN_RATE = 0.02
# ... specialised from Wang & E (2024), Lemma F.1: C(q) e^{0.01 (q + 1) T} / m^q, C(q) = M(q) / (1 - 1/e)^q
WANG_E_RATE = 0.01
C1_PAPER = 1.3  # "through direct computation, we have C(1) ≈ 1.3"

# §6.1, Fig. 1 ("Trade-off Trend"): E_128 = sqrt(1 - 8/H) + 1.3 e^{0.02} / H; "minimum ... near H = 8"
FIG1 = {"d": 16, "D": 128, "rho": 1.0, "B": 1.0, "M": 1, "argmin_H": 8}

# §4, the 4-gram example of Corollary 4.1: y_t = x_{t-1} + ... + x_{t-4}, rho_i = 1{1 <= i <= 4} I_d
NGRAM_LAGS = 4
NGRAM4 = {"d": 8, "D": 256, "B": 1.0, "M_max": 4}
NGRAM4_OPTIMUM = {"M": 4, "groups": ((8, 8), (8, 8), (8, 8), (8, 8))}  # (H_m, d_m), "found by search"

# §6.1, Fig. 2 ("4-gram Example"): one-layer Transformer encoder, sinusoidal PE, white-noise
# inputs, target = sum of the previous four inputs (zero padding) + Gaussian noise, D = 256,
# "multiple learning rates and random seeds", best configuration reported; optimum claimed at
# M = 4, d_m = H_m = 8, i.e. 32 heads of dimension 8 in a standard layer.
FIG2 = {"D": 256, "claimed_heads": 32, "claimed_head_dim": 8}
# Not stated (assumed by the book): d = 8 (the §4 example), sequence length, batch, steps,
# optimizer, learning rates, seeds, noise level, FFN width, norm placement, causal mask.

# §6.2, Fig. 3: TinyLlama layer 0 head 0, L in {4, ..., 1024}, 10 sequences per length
FIG3_LENGTHS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
FIG3_SEQUENCES = 10

# App. F, Fig. 8: reproduced from Jiang et al. (2025), arXiv 2506.05678, their Fig. 4:
# "Loss versus n_h for Transformers with fixed m = 128 and varying alpha".
FIG8_SOURCE = "https://arxiv.org/abs/2506.05678"
FIG8_WIDTH = 128
