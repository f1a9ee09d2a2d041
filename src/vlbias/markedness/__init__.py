"""Part I: markedness in CLIP (Wolfe & Caliskan 2022) -- prompts, estimators, tests, tables and figures.

The names below are this package's, each read from its module on first use (``mk.unmarked_flags``,
``from vlbias.markedness import RACES``): importing the package, as reading the notebooks'
declarations does, imports neither pandas nor scipy.
"""

from importlib import import_module
from importlib.util import find_spec

#: module -> the names the package gives from it
_EXPORTS = {
    "prompts": ("PERSON_PROMPT", "RACES", "GENDERS", "AGES", "RACE_PHRASES", "FAMILIES", "LABEL_ORDER",
        "label_prompts", "OLDEST_AGE_WORDINGS", "prompt_set"),
    "groups": ("_in_label_order", "group_indices", "sample_per_group", "select", "selected", "with_group_label"),
    "self_similarity": ("self_similarity_by_group", "subset_self_similarity", "_row_sums", "draw_subsets",
        "balanced_draws", "GroupMoments", "group_moments", "CellMoments", "cell_moments", "_as_moments",
        "balanced_moments", "released_code_moments", "released_code_draws", "released_code_expectation",
        "self_similarity_table", "_cells_by_group", "extremes", "self_similarity_by", "picture_spread"),
    "unmarked": ("is_unmarked", "unmarked_flags", "unmarked_rates", "unmarked_table", "prompt_sensitivity",
        "unmarked_by", "unmarked_columns", "unmarked_gap"),
    "significance": ("rate_gap_test", "self_similarity_gap_test", "headline_comparisons", "rate_gap_table",
        "self_similarity_gap_table"),
    "published": ("published_as_unmarked", "bounds_check", "table4_counts", "styled_beside_published"),
    "plots": ("plot_by_age", "plot_bars", "plot_family_bars", "plot_families_by_age", "plot_across",
        "plot_unmarked_by_reporting_gap"),
    "compare": ("family_summary", "model_comparison"),
    "controlled": ("world_prompts", "world_unmarked_flags", "reporting_conditions", "reporting_experiment"),
    "findings": ("ranking_sentence", "across_models_sentence"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str):
    if name in _MODULE_OF:
        value = getattr(import_module(f".{_MODULE_OF[name]}", __name__), name)
        globals()[name] = value  # found once
        return value
    if not name.startswith("_") and find_spec(f"{__name__}.{name}") is not None:
        return import_module(f".{name}", __name__)  # a module of the package (``mk.plots``), as when all were imported
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
