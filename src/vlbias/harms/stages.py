"""Part III's notebooks declared once: which language models they score and generate with (see
:mod:`vlbias.stages`). Their work is short next to the other parts' and runs in the notebooks."""

from __future__ import annotations

from ..stages import Context, Estimate, NotebookDeclaration, Parameters, StageDeclaration, register, throughputs

NOTEBOOKS: dict[str, NotebookDeclaration] = {}
#: scenarios the generation estimate assumes at most (03c's default lists six)
MAX_SCENARIOS = 10
#: scoring prompts, templates and word lists: a few minutes on a GPU whatever the model
SCORING_HOURS = 0.05


def scoring_estimate(parameters: Parameters, context: Context) -> list[Estimate]:
    return [Estimate(None, 0, hours=SCORING_HOURS, line="language-model scoring")]


def generation_estimate(parameters: Parameters, context: Context) -> list[Estimate]:
    """Scoring, plus ``n_per_scenario`` generations of ``max_new_tokens`` for each scenario."""
    tokens = int(parameters["n_per_scenario"] or 0) * int(parameters["max_new_tokens"] or 0) * MAX_SCENARIOS
    hours = tokens / throughputs()["generated tokens/s"] / 3600 + SCORING_HOURS
    return [Estimate(None, tokens, hours=hours,
                     line=f"language-model scoring{f' and up to {tokens:,} generated tokens' if tokens else ''}")]


def _language(models: tuple[str, ...], generates: bool = False) -> tuple[StageDeclaration, ...]:
    return (StageDeclaration("lm-scoring", models, generation_estimate if generates else scoring_estimate,
                             writes="language-model scores and generations (cache)",
                             left="short next to the other parts' stages; the notebook computes it"),)


register(
    NOTEBOOKS,
    NotebookDeclaration("03a_stereotyping", model_parameters=("lm_spec",), stages=_language(("lm_spec",))),
    NotebookDeclaration("03b_weat", model_parameters=("sentence_encoder_spec",),
                        stages=_language(("sentence_encoder_spec",)), resource_parameters=("word_vector_specs",)),
    NotebookDeclaration("03c_erasure", model_parameters=("lm_spec",), stages=_language(("lm_spec",), generates=True)),
    NotebookDeclaration("03d_toxicity", model_parameters=("classifier_spec",), stages=_language(("classifier_spec",))),
    NotebookDeclaration("03e_summary", model_parameters=("lm_spec", "generator_spec", "classifier_spec"),
                        stages=_language(("lm_spec", "generator_spec"), generates=True), resource_parameters=("word_vector_spec",),
                        reads=("03a_stereotyping", "03c_erasure")),
)
