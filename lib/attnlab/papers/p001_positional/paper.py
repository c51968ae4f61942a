"""Every number the paper prints that the theory chapters check (no logic).

Section / appendix and equation numbers refer to arXiv 2410.01686 (ICML 2025 version).
"""

# §3, App. D.1.1: the experimental model (n = 8)
N_DEFAULT = 8
EMBED_DIM = 64  # embedding and MLP hidden dimension
HEADS = 2
LAYERS_FORMULA = "ceil(log2 n) + 1"
LR = 5e-4
EPOCHS = 2000
RUNS = 10

# App. A.3: odd–even transposition sort "runs for a total of n − 1 rounds"
OETS_ROUNDS_PRINTED = "n - 1"

# Lemma B.3: |Ā_ij − A_ij| ≤ exp(ln n − 2T); T ≥ ½ ln(n/ε) ⇒ error ≤ ε
LEMMA_B3_BOUND = "exp(ln n - 2T)"

# Theorem 5.1: MPC (R rounds, N machines, memory s) -> n = N + 1 nodes, 2R⌈log N⌉ layers, 2s heads
# Lemma B.2: PCOC (R, N, s) -> n = N + 1 nodes, R layers, s heads
# Lemma B.1: MPC (R, N, s) -> PCOC with 2R⌈log N⌉ rounds, N machines, memory 2s

# Def. A.4: a Beneš network on n = 2^k labels has L = 2k layers and 2n edges between layers

# App. E, worked examples after Eq. (29)
APP_E_EXAMPLES = (
    # (N test samples, n, c, printed p_in bound, eps, printed probability)
    (1000, 2, 2, 0.4375, 0.0625, 0.9995),
    (1000, 8, 10, 0.0034, 0.0466, 0.98),
)
FIG35_N = (2, 4, 8, 16, 32)
FIG35_C = tuple(range(1, 11))

# App. G: L_train = 3, z = 1; "with probability at least 0.8" (later 0.81 = 0.9²)
APP_G_L_TRAIN = 3
APP_G_Z = 1
APP_G_PROB_PRINTED = 0.8
APP_G_PROB_PRINTED_LATER = 0.81
APP_G_RELATIVE_ERROR = 0.25  # "loss up to 1, i.e. relative error up to 25%"
