"""Every number paper 004 prints that the chapters compare against, and its training protocol.

Sources: the paper's text and figures, and the authors' released CSVs and code where the text
prints no number (github.com/leodana2000/Transformer_Attentional_Memory: `Scaling laws/Data_exp_*.csv`,
`experiments.ipynb`, `EXP_*.py`); each block says which. No logic here.
"""

# The training protocol of Exps. 1-4 and 6 as the authors' released code runs it (App. B; the
# text's lr 0.1 -> 0.05 and 2^6 x 2^10 samples are erratum 8): Adam, lr decaying linearly per epoch
# from 1e-2 to 5e-4, 4096 steps of batches of 256 from a fixed sample of 2^8 x 2^6 sequences, 5 seeds.
PROTOCOL = dict(steps=4096, batch_size=256, n_batches=64, lr_start=1e-2, lr_end=5e-4, seeds=5)

# Fig. 1a / Exp. 1 (N = 50, d = d_h, H = 1, 6, ..., 31): accuracy per d.
EXP1_H = [1, 6, 11, 16, 21, 26, 31]
EXP1_ACCURACY = {
    3: [0.059, 0.065, 0.076, 0.086, 0.088, 0.095, 0.097],
    4: [0.068, 0.090, 0.114, 0.126, 0.146, 0.160, 0.174],
    5: [0.074, 0.119, 0.158, 0.192, 0.225, 0.257, 0.294],
    6: [0.086, 0.154, 0.210, 0.266, 0.314, 0.375, 0.423],
    7: [0.101, 0.189, 0.263, 0.344, 0.431, 0.513, 0.591],
    8: [0.112, 0.231, 0.335, 0.445, 0.560, 0.663, 0.783],
    9: [0.122, 0.276, 0.413, 0.552, 0.696, 0.834, 0.938],
    10: [0.130, 0.324, 0.506, 0.685, 0.861, 0.963, 0.997],
    11: [0.140, 0.371, 0.587, 0.802, 0.962, 0.999, 1.000],
    12: [0.147, 0.436, 0.679, 0.917, 0.997, 1.000, 1.000],
    13: [0.163, 0.482, 0.774, 0.988, 1.000, 1.000, 1.000],
}
# Fig. 2b / Exp. 4: slope of the linear fit in H, per d = d_h (N = 50).
EXP4_SLOPE = {3: 0.00134, 4: 0.00349, 5: 0.00716, 6: 0.01114, 7: 0.01634, 8: 0.02216, 9: 0.02749,
              10: 0.03404, 11: 0.04149, 12: 0.04361, 13: 0.05539}
EXP4_SLOPE_OVER_BOUND = {3: 1.1, 4: 2.2, 5: 3.7, 6: 4.7, 7: 6.0, 8: 7.1, 9: 7.8, 10: 8.7, 11: 9.6, 12: 9.3, 13: 10.9}


# Our earlier evaluation of the corrected Theorem 2 bound (App. A.3) with other random draws (measured
# coherence C_emp; 100 sequences, eta ~ U(0, eta_max)): mean bounds. The paper prints no number.
REFERENCE_MEAN_BOUND = {(1000, 256, 0.1): 1.524, (1000, 256, 0.01): 0.205}


# Fig. 4 from the authors' released data (`Scaling laws/Data_exp_6.csv`; 20 reps, d = d_h = 2, N = 10).
EXP6_H = [1, 5, 9, 13, 17, 21]


EXP6_ACCURACY = [0.330, 0.497, 0.633, 0.734, 0.857, 0.858]


EXP6_SLOPE_RATIO_TEXT = 1.3   # caption: "a slope relative difference of 1.3"


EXP6_SLOPE_RATIO_DATA = 1.51  # linear fit of the released numbers: 0.0273 / 0.0180


EXP2_DH = list(range(1, 11))  # Fig. 1b: d = 10, H = 20


EXP2_ACCURACY = [0.081, 0.110, 0.155, 0.209, 0.288, 0.357, 0.453, 0.546, 0.639, 0.804]


EXP2_FITS = {"quadratic": {"a": 0.00708, "b": 0.092, "sse": 1.8e-3}, "linear": {"a": 0.0786, "sse": 1.9e-2}}


EXP3_D = list(range(5, 16))  # Fig. 2a: d_h = 10, H = 20


EXP3_ACCURACY = [0.264, 0.362, 0.460, 0.578, 0.697, 0.809, 0.777, 0.789, 0.786, 0.812, 0.814]


EXP3_SLOPES = {"below": 0.110, "above": 0.0036}  # per dimension, d <= d_h and d >= d_h


EXP5_N = 70  # Fig. 3: N = 70 in the code (the paper does not say; erratum 9), H = 1, 6, ..., 31


EXP5_H = [1, 6, 11, 16, 21, 26, 31]


EXP5_AOT = {7: [0.054, 0.098, 0.128, 0.164, 0.200, 0.238, 0.270],
            10: [0.068, 0.151, 0.230, 0.301, 0.389, 0.490, 0.594],
            13: [0.085, 0.219, 0.363, 0.511, 0.686, 0.911, 0.999]}


EXP5_MLP = {7: [0.054, 0.122, 0.169, 0.185, 0.206, 0.228, 0.239],  # width w = 2d(H - 1) = 0, 10d, ..., 60d
            10: [0.070, 0.236, 0.374, 0.498, 0.578, 0.590, 0.693],
            13: [0.084, 0.395, 0.779, 0.944, 0.977, 0.986, 0.998]}


# App. B.1 (N = 200): Fig. 5 (Exp. 1, d = d_h), Fig. 6 (Exp. 2, d = 50, H = 11 in the code), Fig. 7 (Exp. 5).
B1_N = 200


B1_H = [1, 3, 5, 7, 9, 11]


B1_AOT = {40: [0.077, 0.148, 0.214, 0.278, 0.335, 0.395],
          50: [0.094, 0.203, 0.299, 0.393, 0.478, 0.559],
          60: [0.110, 0.259, 0.394, 0.515, 0.624, 0.727]}


B1_AOT_SLOPE = {40: 0.0316, 50: 0.0464, 60: 0.0614}


B1_DH = [1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50]


B1_DH_ACCURACY = [0.033, 0.057, 0.091, 0.130, 0.175, 0.223, 0.275, 0.330, 0.388, 0.445, 0.560]


B1_DH_SSE = {"linear": 6.8e-3, "quadratic": 5.1e-3}  # the caption says linear; the plotted fit is quadratic


B1_MLP = {40: [0.078, 0.274, 0.379, 0.378, 0.368, 0.371],  # width 0, 4d, ..., 20d = 2d(H - 1)
          50: [0.094, 0.408, 0.539, 0.519, 0.505, 0.509],
          60: [0.111, 0.548, 0.678, 0.638, 0.631, 0.625]}


PAPER_LAYERS_TEXT, PAPER_LAYERS_CODE = 5, 3


FIG8_H = [1, 5, 9, 13, 17, 21]


FIG8_ACCURACY = {  # d = d_h: accuracy at H = 1, 5, ..., 21 heads per layer (the figure shows d = 10)
    7: [0.066, 0.114, 0.152, 0.197, 0.240, 0.294],
    10: [0.088, 0.177, 0.289, 0.383, 0.464, 0.543],
    13: [0.114, 0.288, 0.434, 0.586, 0.696, 0.770],
}


FIG9_D, FIG9_H = 10, 21


FIG9_DH = list(range(1, 11))


FIG9_ACCURACY = [0.050, 0.060, 0.082, 0.126, 0.177, 0.238, 0.300, 0.374, 0.453, 0.545]


FIG9_SSE = {"quadratic": 3.5e-4, "linear": 1.1e-2}


FIG10_WIDTH_IN_D = [0, 8, 16, 24, 32, 40]  # w / d = 2(H - 1) for H = 1, 5, ..., 21


FIG10_MLP_ACCURACY = {
    7: [0.066, 0.139, 0.187, 0.227, 0.251, 0.304],
    10: [0.090, 0.291, 0.399, 0.493, 0.528, 0.570],
    13: [0.118, 0.452, 0.672, 0.728, 0.676, 0.710],
}
