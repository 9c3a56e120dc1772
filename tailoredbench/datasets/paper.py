"""Every number quoted from the paper (Yuan et al., ACL 2025, arXiv:2502.13576), in one place.

Values are (Kendall's tau, MAE) averaged over the paper's benchmarks unless said otherwise.
"""

#: The main table's MAE at 30 inferences, per benchmark: (best baseline, TailoredBench).
MAE_AT_30 = {
    "arc_challenge": (0.036, 0.028),
    "hellaswag": (0.043, 0.018),
    "gsm8k": (0.041, 0.033),
    "winogrande": (0.038, 0.024),
    "pope": (0.034, 0.031),
}

#: The analysis studies' values.
STUDIES = {
    "distance": {"correlation": (0.720, 0.032), "cosine": (0.736, 0.028), "manhattan": (0.740, 0.027)},
    "calibration": {"off": (0.724, 0.030), "on": (0.740, 0.027)},
    "g_size": {5: (0.734, 0.030), 10: (0.740, 0.027), 15: (0.736, 0.028), 25: (0.731, 0.029)},
    # HellaSwag at budget 150
    "budget_scaling": {
        "random": (0.935, 0.030),
        "anchor_points": (0.940, 0.040),
        "gp_irt": (0.936, 0.012),
        "tailoredbench": (0.943, 0.012),
    },
    # HellaSwag: mean item-to-medoid distance of the static coreset
    "embedding": {"source models": 10.09, "target models": 12.48},
}
