"""Part III's notebooks declared once: which language models they score and generate with (see
:mod:`vlbias.stages`). Their work is short next to the other parts' and runs in the notebooks."""

from __future__ import annotations

from ..stages import (Context, Estimate, NotebookDeclaration, Parameters, Power, StageDeclaration, power_line, register,
                      throughputs)

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


#: 03c's power: the share of stories whose protagonist's gender a gendered word reveals, assumed (03c prints
#: the share it measured), and the population's share of women the erasure index is measured from
DETECTED_SHARE = 0.6


def erasure_power(parameters: Parameters) -> list[Power]:
    """03c: the power to detect, in one scenario's stories, the erasure of women the chapter simulates for the
    scenarios its claims name (the smallest, in size), at ``n_per_scenario`` stories of which
    :data:`DETECTED_SHARE` have a gendered protagonist: a share tested against the population's, its standard
    error at the population's share (closed form). Nothing is planted in a real model: the effect is the
    chapter's, the claim's size."""
    from .chapter import simulated_erasure
    from .findings import MALE_TYPED_SCENARIOS

    stories = int(parameters.get("n_per_scenario") or 0)
    if parameters.get("source", "model") != "model" or stories < 1:
        return []
    chapter = simulated_erasure()
    women = chapter[["white_female", "nonwhite_female"]].sum(axis=1)
    effect = float(min(abs(women[scenario.replace(" ", "_")]) for scenario in MALE_TYPED_SCENARIOS
                       if scenario.replace(" ", "_") in women.index))
    population = float((parameters.get("population_reference") or {"female": 0.51}).get("female", 0.51))
    detected = max(1, round(stories * DETECTED_SHARE))
    se = (population * (1 - population) / detected) ** 0.5
    line = power_line("women erased from a scenario's stories (an erasure index below 0), per scenario", effect,
                      f"the smallest erasure the chapter simulates for these scenarios, {effect:.2f} (a share of women "
                      f"of {population - effect:.2f} against {population:.2f})", detected, "", se, "closed form",
                      why="a small model on a 2-core CPU writes a story in about two seconds, and the demo's pages "
                          "together should take about 15 minutes")
    from dataclasses import replace

    # counted in stories, not in the protagonists they reveal
    line = replace(line, n=stories, n_text=f"{stories} stories per scenario (about {detected} with a gendered "
                                          f"protagonist, {DETECTED_SHARE:.0%} assumed)",
                   needed=None if line.needed is None else int(-(-line.needed // DETECTED_SHARE)))
    return [line]


register(
    NOTEBOOKS,
    NotebookDeclaration("03a_stereotyping", model_parameters=("lm_spec",), stages=_language(("lm_spec",))),
    NotebookDeclaration("03b_weat", model_parameters=("sentence_encoder_spec",),
                        stages=_language(("sentence_encoder_spec",)), resource_parameters=("word_vector_specs",)),
    NotebookDeclaration("03c_erasure", model_parameters=("lm_spec",), stages=_language(("lm_spec",), generates=True),
                        power=erasure_power),
    NotebookDeclaration("03d_toxicity", model_parameters=("classifier_spec",), stages=_language(("classifier_spec",))),
    NotebookDeclaration("03e_summary", model_parameters=("lm_spec", "generator_spec", "classifier_spec"),
                        stages=_language(("lm_spec", "generator_spec"), generates=True), resource_parameters=("word_vector_spec",),
                        reads=("03a_stereotyping", "03c_erasure")),
)
