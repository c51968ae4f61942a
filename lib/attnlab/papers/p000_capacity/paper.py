"""Every number the paper prints that the chapters compare with, and its protocol. No logic.

Section / figure references are to the text in shared/papers/000_*.txt (arXiv 2509.22840).
"""

# Theorem B.1 (Algorithm 3): the example signature density and the constant the proof states.
BERNOULLI_P = 0.25           # "p in (0, 1/2), e.g. p = 1/4"
THM_B1_C_RULE = "C > max{3/c1, 2/c2}"
THM_B1_FAILURE = "m^-3"      # target failure probability of Theorems B.1, 4.1, B.5, B.9, 8.1

# Theorem 4.1 / B.2 proof: the separation the constants are chosen for.
THM41_TRUE_FRACTION = 3 / 4    # S_{i,pi(i)} > 3 d_k / 4
THM41_FALSE_FRACTION = 1 / 4   # |S_ij| < d_k / 4
LEMMA_B3_C2 = 2.0              # "for an absolute constant C2 (e.g., C2 = 2)"

# Theorem 8.1 proof, Step 5: A_true >= 7/8, A_false <= 1/8 + 1/8, threshold 1/2.
SOFTMAX_TAU = 0.5
SOFTMAX_TRUE_LOWER = 7 / 8
SOFTMAX_FALSE_UPPER = 1 / 4

# §9, Lemma 9.3 and Eq. (29): Lipschitz constants of the decision map (normalisation (26)).
LIPSCHITZ_MAX = 1.0       # |(S - tau) - (S~ - tau~)| <= ||dU||_F + ||dV||_F + |dtau|
LIPSCHITZ_SOFTMAX = 0.5   # |A - A~| <= (||dU||_F + ||dV||_F) / 2
SIGMOID_SLOPE = 0.25      # ||sigma'||_inf <= 1/4, Eq. (28)

# Fig. 8 (App. A.2): minimum total key dimension D_K*, (lower, upper) per (m, d_model).
FIG8_DKSTAR = {
    (64, 16): (18, 20), (64, 32): (6, 6), (64, 64): (5, 5),
    (128, 16): (56, 88), (128, 32): (21, 21), (128, 64): (7, 7),
    (256, 16): (128, 192), (256, 32): (48, 64), (256, 64): (24, 24),
    (512, 16): (384, 512), (512, 32): (144, 144), (512, 64): (56, 56),
    (1024, 32): (320, 320), (1024, 128): (40, 60), (2048, 256): (66, 66), (4096, 512): (72, 120),
}

# Table 1 (App. A.2): per-head key dimension d_k* at D_K*, main sweep; text: "d_k* in [5, 24] (median 11)".
TABLE1_DK = {
    (64, 16): 5, (64, 32): 6, (64, 64): 5,
    (128, 16): 11, (128, 32): 21, (128, 64): 7,
    (256, 16): 6, (256, 32): 16, (256, 64): 24,
    (512, 16): 7, (512, 32): 9, (512, 64): 14,
}
TABLE1_MEDIAN_STATED = 11

# Fig. 3 (§6.1): the empirical capacity law D_K* ~ 1.19 m log m / d_model, R^2 = 0.944.
FIG3_SLOPE = 1.19
FIG3_R2 = 0.944

# §6 / App. A.1 protocol of the trained experiments (for the footprint chapter's example).
CONTEXT_LENGTH = 16
RHO = 0.5

# §6.1 (text): the fit without the three (d_model = 16, m > 64) points, and Fig. 10's head-count law.
FIG3_SLOPE_EXCL = 0.966
FIG3_R2_EXCL = 0.992
FIG3_EXCLUDED = ((128, 16), (256, 16), (512, 16))
FIG10_SLOPE = 1.65       # h* ~ 1.65 m / d_model - 6.64 (least squares, not through the origin)
FIG10_INTERCEPT = -6.64
FIG10_R2 = 0.824
TABLE1_RANGE_STATED = (5, 24)   # "d_k* in [5, 24] on the base grid"

# §6.1 / App. A.2: the sweep. Base grid, head counts, the lambda = 8 diagonal and the extra lambda = 32 point.
BASE_M = (64, 128, 256, 512)
BASE_D = (16, 32, 64)
HEADS = (1, 2, 4, 8, 16, 32, 64)
DIAGONAL = ((128, 16), (256, 32), (512, 64), (1024, 128), (2048, 256), (4096, 512))
EXTRA_POINT = (1024, 32)
SEEDS = 10                 # per configuration ("3 seeds for the largest points" of the diagonal)
SEEDS_LARGEST = 3

# Table 2 (App. A.2): training-step cutoffs by (m, d_model); the default is 20,000.
TABLE2_STEPS = {
    (64, 16): 20000, (64, 32): 20000, (64, 64): 20000,
    (128, 16): 20000, (128, 32): 20000, (128, 64): 20000,
    (256, 32): 20000, (256, 64): 20000, (256, 16): 30000,
    (512, 32): 20000, (512, 64): 20000, (512, 16): 80000,
    (1024, 128): 80000, (2048, 256): 80000, (4096, 512): 200000,
}
TABLE2_DEFAULT = 20000

# App. A.1: the rest of the training protocol.
ALPHA = 10.0
LR = 1e-3
CHECK_EVERY = 500
PATIENCE = 5
STOP_F1 = 0.995
PASS_F1 = 0.99       # D_K* = min D_K with mean test micro-F1 >= 0.99 for some h
N_VAL = 500
N_TEST = 2000
HSTAR_WINDOW = 0.10  # h* interval: candidates whose tested D_K is within 10% of D_K*, paired t-test p > 0.05
HSTAR_ALPHA = 0.05
