"""The numbers paper 002 prints (and the authors' code fixes) that this package uses, and the
paper's training protocol. No logic: the chapters import these instead of repeating them.

Sources: the paper's text and figures (arXiv 2407.11542), the authors' released code ([repo]:
github.com/SPOC-group/counting-attention), and, where a value is derived from the paper's formulas
rather than printed, our evaluation of them, said so (the derivations are written out in the chapters).
"""

# --- the task and the main setting (§3-§4) --------------------------------------------------------
T = 32  # alphabet size of Figs. 1-6, 10-12
L = 10  # sequence length

# --- the training protocol (§4, App. D; [repo]) ---------------------------------------------------
EPOCHS = 500
BATCHES_PER_EPOCH = 313  # 10,000 fresh sequences per epoch in batches of 32
STEPS = EPOCHS * BATCHES_PER_EPOCH  # 156,500 Adam steps per model
BATCH_SIZE = 32
LR = 1e-3  # constant
ADAM_BETAS = (0.9, 0.98)
ADAM_EPS = 1e-9
EVAL_N = 3000  # eval sequences
EVAL_EVERY = BATCHES_PER_EPOCH  # an eval every epoch (the "best_val_acc" of Fig. 10)
EVAL_SEED = 12  # the code's eval-set seed
RUNS = 5  # independent runs per configuration
SEEDS = [0, 1, 2, 3, 4]

# The keys of a sweep's training protocol (sweeps.TRAINING_PARAMS) at the paper's values.
PROTOCOL = dict(steps=STEPS, batch_size=BATCH_SIZE, lr=LR, lr_end=LR, eval_n=EVAL_N, eval_every=EVAL_EVERY)

# --- the (d, p) grid of Figs. 1, 2, 10-14 -------------------------------------------------------
GRID = [1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128]  # the code's grid (the text says 12 values)

# Fig. 2 (§5, read off the figure): parameters at which the running best first reaches ≈ 100 %,
# (low, high) of the read-off range, per model.
FIG2_PARAMS_AT_100 = {"bos+sftm": (300, 400), "dot+sftm": (2000, 2000), "lin+sftm": (4000, 5000),
                      "dot": (700, 1000), "bos": (700, 1000), "lin": (3000, 3000)}
FIG2_FLOOR = 0.2  # the accuracy floor of Fig. 2 (≈ 20 %, read off the figure)

# Fig. 12 (App. D.3, read off the figure): learned − random accuracy for d < T, up to about +0.5 for
# bos+sftm (d ≈ 4-8); ≈ 0 for d ≥ T.
FIG12_BOS_SFTM_GAIN = 0.5
FIG12_BOS_SFTM_GAIN_D = (4, 8)  # the d range of that gain (read off Fig. 12, T = 32)

# Phase boundaries the paper states in words (it prints no numbers for the heat maps of Figs. 1,
# 10-14), drawn on the chapters' heat maps; "T" stands for the alphabet size of the run.
# §5.1 ("d ≥ T: orthogonal token embeddings are separable"): the regime (d from, p from) where the
# paper's constructions reach 100 % and which it says the trained models of Fig. 1 follow.
# Relation-based counting needs one hidden neuron: bos and bos+sftm ("a single hidden neuron p = 1
# suffices ... The same principle applies to bos+sftm"), dot ("a perfect accuracy implementation in the
# regime where d ≥ T with only a single hidden neuron"). Inventory-based counting needs p ≥ T: lin
# ("100% accuracy when d ≥ T and p ≥ T"), lin+sftm and dot+sftm ("the same ideas", App. A.3).
SEC51_REGIME = {"bos": ("T", 1), "bos+sftm": ("T", 1), "dot": ("T", 1),
                "lin": ("T", "T"), "lin+sftm": ("T", "T"), "dot+sftm": ("T", "T")}
# App. D.2 (Fig. 11): "in the p, d < T regime where bos+sftm is able to reach an accuracy relatively
# close to 100%, the variability of the accuracies ... is quite large".
APP_D2_HIGH_STD_VARIANT = "bos+sftm"  # over d < T and p < T
# App. D.3 (Fig. 12): "In the regime d < T ... the random embeddings result in worse performance than
# the learned ones" (for every model, at every p).
APP_D3_LEARNED_BETTER_BELOW_D = "T"

# Fig. 1's rows, left to right: with softmax (top), without (bottom).
FIG1_TOP_ROW = ("bos+sftm", "dot+sftm", "lin+sftm")
FIG1_BOTTOM_ROW = ("bos", "dot", "lin")

# Figs. 13, 14 (App. D.4, D.5): [T, L] settings, Fig. 1's first; T = 64 is swept on the powers of two.
FIG13_14_SETTINGS = [[32, 10], [64, 10], [32, 15]]
FIG13_POW2_T = [64]

# --- the variants in the order of the §5.1 plots: relation-capable first, inventory-only last ----
ORDER = ("dot", "bos", "bos+sftm", "dot+sftm", "lin", "lin+sftm")

# --- Fig. 3, Fig. 15 (§5.1, App. D.6): bos+sftm, T = 32, L = 10, d = 45, p = 2 ---------------------
FIG3_MODEL = dict(T=32, L=10, d=45, p=2)
FIG3_ACCURACY = 0.999
FIG3_SEQUENCE = [1, 1, 2, 1, 1, 1, 3, 4, 4, 4]  # B B C B B B D E E E
PROBE_TOKENS = [1, 2, 3, 4]  # B, C, D, E
FIG3_ALPHAS = [0.33, 0.38, 0.46]  # [repo] the BOS weights the authors mark in Figs. 3 (right) and 15

# --- Figs. 4, 5 (§5.1): dot+sftm [T, d, p] = [32, 32, 32], lin+sftm [64, 128, 128] ---------------
FIG4_MODEL = [32, 32, 32]
FIG4_ACCURACY = 0.9947
FIG5_MODEL = [64, 128, 128]
FIG5_ACCURACY = 0.9997
FIG5_DIAG, FIG5_OFF = 0.08, 0.11  # Fig. 5 left (L = 10): the learned softmax(A), diagonal and off-diagonal
SIMPLEX_TOKENS = [1, 2, 3]  # B, C, D

# --- Fig. 7 (§5.2): the caption (dot, T = 64, L = 10, p = 128) and the authors' notebook -----------
FIG7_T = 64
FIG7_D = [4, 8, 16, 32, 64]
FIG7_P = 128
FIG7_NOTEBOOK_P = 64  # dot+sftm in the notebook
FIG7_NOTEBOOK_WORST = {8: 0.815, 32: 0.972}  # worst of 5 dot+sftm runs, by d

# --- §5.2, App. B: bounds and the binary-code construction --------------------------------------
WELCH_32_12 = 0.2319  # W(T = 32, d = 12)
THRESHOLD_LIN = 0.0588  # 1/(2L − 3) at L = 10
THRESHOLD_DOT = 0.2425  # (2L − 3)^(−1/2) at L = 10
MIN_D_LIN, MIN_D_DOT_P1, MIN_D_DOT_PT = 29, 30, 12  # §5.2: "for T = 32, L = 10 we obtain ... d ≥ 29, 30, 12"
# eqs. 50 / 62 / 72 / 93 at the Fig. 13 and Fig. 14 settings (our evaluation of the formulas)
MIN_D_FIG13_14 = {(64, 10): (53, 54, 14, 9), (32, 15): (31, 32, 15, 8)}
BINARY_ALPHA = 0.01  # the α coordinate of the token embeddings (App. B.3.1)
CIRCLE_ALPHA = 1e-5  # the authors' α for the d' = 2 frame
KAPPA_STAR = 25.22  # eq. 92 at T = 32, L = 10 with the bound ε of eq. 78 (our evaluation)
KAPPA_STAR_CIRCLE = 4494  # eq. 92 at the d' = 2 frame's ε (the remark after eq. 93; our evaluation)
