"""The measures the book reports, in one place: each is defined beside its part (or in
:mod:`vlbias.stats` when parts share it) and listed here.

This module is the public index above the parts; the core layers (models, data, cache, runner)
never import it or any part.
"""

from .colorfoil.benchmark import colour_confusion, correct_at, detection_auroc, f1_from_accuracy, per_colour_accuracy
from .harms.measures import amplification_slope, erasure_index, false_positive_rates
from .harms.weat import weat_effect_size, weat_p_value, weat_test
from .markedness import (
    balanced_moments,
    rate_gap_test,
    released_code_expectation,
    released_code_moments,
    self_similarity_gap_test,
    self_similarity_table,
    unmarked_flags,
    unmarked_table,
)
from .stats import self_similarity
from .t2i.annotation import cohen_kappa, fleiss_kappa
from .t2i.bias import bootstrap_bias_scores, mean_pairwise_distance, spearman, vrbs

__all__ = [
    "self_similarity", "vrbs",
    "self_similarity_table", "balanced_moments", "released_code_moments", "released_code_expectation",
    "unmarked_table", "unmarked_flags", "rate_gap_test", "self_similarity_gap_test",
    "f1_from_accuracy", "detection_auroc", "correct_at", "colour_confusion", "per_colour_accuracy",
    "weat_effect_size", "weat_p_value", "weat_test",
    "amplification_slope", "erasure_index", "false_positive_rates",
    "spearman", "bootstrap_bias_scores", "mean_pairwise_distance",
    "fleiss_kappa", "cohen_kappa",
]
