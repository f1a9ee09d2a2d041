"""Part I: markedness in CLIP (Wolfe & Caliskan 2022) -- prompts, estimators, tests, tables and figures."""

from .prompts import PERSON_PROMPT, RACES, GENDERS, AGES, RACE_PHRASES, FAMILIES, LABEL_ORDER, label_prompts, OLDEST_AGE_WORDINGS, prompt_set  # noqa: F401
from .groups import _in_label_order, group_indices, sample_per_group, select, selected, with_group_label  # noqa: F401
from .self_similarity import self_similarity_by_group, subset_self_similarity, _row_sums, draw_subsets, balanced_draws, GroupMoments, group_moments, CellMoments, cell_moments, _as_moments, balanced_moments, released_code_moments, released_code_draws, released_code_expectation, self_similarity_table, _cells_by_group, extremes, self_similarity_by  # noqa: F401
from .unmarked import is_unmarked, unmarked_flags, unmarked_rates, unmarked_table, prompt_sensitivity, unmarked_by, unmarked_columns, unmarked_gap  # noqa: F401
from .significance import rate_gap_test, self_similarity_gap_test, headline_comparisons, rate_gap_table, self_similarity_gap_table  # noqa: F401
from .published import published_as_unmarked, bounds_check, table4_counts, styled_beside_published  # noqa: F401
from .plots import plot_by_age, plot_bars, plot_family_bars, plot_families_by_age, plot_across, plot_unmarked_by_reporting_gap  # noqa: F401
from .compare import family_summary, model_comparison  # noqa: F401
from .controlled import world_prompts, world_unmarked_flags, reporting_conditions, reporting_experiment  # noqa: F401
from .findings import ranking_sentence, across_models_sentence  # noqa: F401
