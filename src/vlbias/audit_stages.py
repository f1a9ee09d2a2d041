"""Part V's notebooks, the model cards and the leaderboard, declared as the parts declare theirs
(:mod:`vlbias.stages`); ``vlbias.plan.declarations()`` gathers them with the parts'.

``05a_model_card`` runs once per model of its ``model_specs`` (``per_spec``), each run a page of its
own; it audits that model (:func:`vlbias.audit.audit_model`) through the notebooks whose measures the
audit runs, so it starts after them and reads their caches. Its heavy work is mostly theirs, except a
text-to-image card's draws: 04b's study again without guidance, and, for a model the book has not run,
04b's and 04c's images too. Those are declared here (:func:`card_units`, built with 04b's and 04c's own
parameters and functions), so the plan counts what a book run has not drawn and precompute draws it.
The leaderboard, ``05b_leaderboard``, reads every card, so it starts after the cards.
"""

from __future__ import annotations

from .stages import Context, NotebookDeclaration, Parameters, Stage, StageDeclaration, register, specs_of

NOTEBOOKS: dict[str, NotebookDeclaration] = {}

#: the notebooks whose parameters, functions and caches the audit's measures use (vlbias.audit.MEASURES)
AUDITED_NOTEBOOKS = ("01a_self_similarity", "01b_markedness", "01d_generative_markedness", "02b_colorfoil_evaluation",
                     "02d_colorfoil_generative", "03a_stereotyping", "03b_weat", "03c_erasure",
                     "04b_annotation_and_metrics", "04c_cads")

#: the kinds ``resources/hub_models.json`` records, as the interfaces load them (vlbias.models.kinds)
RECORDED_KINDS = {"text-to-image pipeline": "text-to-image", "generative vision-language model": "vision-language",
                  "image-text dual encoder": "image-text", "image-text pairwise matcher": "image-text",
                  "causal language model": "language", "masked language model": "language"}


def planned_kind(spec: str) -> str | None:
    """The kind of model ``spec`` loads as, told offline and before any download: a hub id by the kind
    ``resources/hub_models.json`` records for it, any other spec by :func:`vlbias.models.kinds.model_kind`;
    ``None`` where neither can tell (the plan's model rows say why)."""
    from .models.kinds import model_kind
    from .models.spec import hub_location, parse_spec
    from .plan import hub_models

    try:
        parsed = parse_spec(spec)
        if parsed.source == "hf":
            recorded = hub_models().get(parsed.name) or hub_models().get(hub_location(parsed.name))
            if recorded is not None:
                return RECORDED_KINDS.get(recorded["kind"])
        return model_kind(parsed)
    except Exception:  # noqa: BLE001 -- an unreadable spec is the plan's model row's problem, not this estimate's
        return None


def card_units(parameters: Parameters, context: Context) -> list[Stage]:
    """The images the cards of 05a's text-to-image models draw (:func:`vlbias.t2i.stages.card_units`),
    with 04b's and 04c's parameters under the same profile, as the audit reads them; none where the
    caller gives no other notebook's parameters or the card's ``parts`` leave Part IV out."""
    from .t2i.stages import card_units as t2i_card_units

    if context.parameters_of is None or (parameters["parts"] and "t2i" not in parameters["parts"]):
        return []
    study, comparison = context.parameters_of("04b_annotation_and_metrics"), context.parameters_of("04c_cads")
    return [stage for spec in specs_of(parameters, ("model_specs",)) if planned_kind(spec) == "text-to-image"
            for stage in t2i_card_units(spec, study, comparison, context)]


def _card_generation() -> StageDeclaration:
    from .t2i.stages import generation

    return generation(card_units, ("model_specs",))


register(
    NOTEBOOKS,
    NotebookDeclaration("05a_model_card", model_parameters=("model_specs", "model_spec"),
                        per_spec=("model_specs", "model_spec"), reads=AUDITED_NOTEBOOKS,
                        stages=(_card_generation(),)),
    NotebookDeclaration("05b_leaderboard", reads=("05a_model_card",), memory_gb=1.0),
)
