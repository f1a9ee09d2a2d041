"""The measures the book reports, in one place: each is defined beside its part (or in the core,
:mod:`vlbias.stats` or :mod:`vlbias.weat`, when parts share it) and listed here.

This module is the public index above the parts; the core layers (models, data, cache, runner)
never import it or any part.
"""

from .colorfoil.evaluation import colour_confusion, correct_at, detection_auroc, f1_from_accuracy, per_colour_accuracy
from .harms.measures import amplification_slope, erasure_index, false_positive_rates
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
from .stats import cohen_kappa, holm_adjust, mcnemar_exact, paired_accuracy_difference, self_similarity, with_holm
from .t2i.annotation import fleiss_kappa
from .t2i.bias import bootstrap_bias_scores, mean_pairwise_distance, spearman, vrbs
from .weat import weat_effect_size, weat_p_value, weat_test

# the controls of each part (what a measure can and cannot mean)
from .colorfoil.controls import blind_comparison, paired_model_table
from .harms.controls import leave_one_word_out, template_sensitivity, weat_bootstrap
from .markedness.controls import text_encoder_weat, text_side_control
from .t2i.controls import (annotator_robustness, clip_score, clip_score_from_embeddings, face_annotator_robustness,
                           model_ranking, paired_bias_comparison, setting_summary)

__all__ = [
    "self_similarity", "vrbs",
    "self_similarity_table", "balanced_moments", "released_code_moments", "released_code_expectation",
    "unmarked_table", "unmarked_flags", "rate_gap_test", "self_similarity_gap_test",
    "f1_from_accuracy", "detection_auroc", "correct_at", "colour_confusion", "per_colour_accuracy",
    "weat_effect_size", "weat_p_value", "weat_test",
    "amplification_slope", "erasure_index", "false_positive_rates",
    "spearman", "bootstrap_bias_scores", "mean_pairwise_distance",
    "fleiss_kappa", "cohen_kappa",
    "mcnemar_exact", "paired_accuracy_difference", "holm_adjust",
    "text_side_control", "text_encoder_weat",
    "blind_comparison", "paired_model_table",
    "with_holm", "weat_bootstrap", "leave_one_word_out", "template_sensitivity",
    "paired_bias_comparison", "clip_score", "clip_score_from_embeddings", "setting_summary", "annotator_robustness",
    "face_annotator_robustness", "model_ranking",
]
