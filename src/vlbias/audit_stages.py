"""Part V's notebooks, the model cards and the leaderboard, declared as the parts declare theirs
(:mod:`vlbias.stages`); ``vlbias.plan.declarations()`` gathers them with the parts'.

``05a_model_card`` runs once per model of its ``model_specs`` (``per_spec``), each run a page of its
own; it audits that model (:func:`vlbias.audit.audit_model`) through the notebooks whose measures the
audit runs, so it starts after them and reads their caches. Its heavy work is theirs: a model the book
has not run is embedded or drawn by the audit, at the cost the plan gives those notebooks. The
leaderboard, ``05b_leaderboard``, reads every card, so it starts after the cards.
"""

from __future__ import annotations

from .stages import NotebookDeclaration, register

NOTEBOOKS: dict[str, NotebookDeclaration] = {}

#: the notebooks whose parameters, functions and caches the audit's measures use (vlbias.audit.MEASURES)
AUDITED_NOTEBOOKS = ("01a_self_similarity", "01b_markedness", "01d_generative_markedness", "02b_colorfoil_evaluation",
                     "02d_colorfoil_generative", "03a_stereotyping", "03b_weat", "03c_erasure",
                     "04b_annotation_and_metrics", "04c_cads")

register(
    NOTEBOOKS,
    NotebookDeclaration("05a_model_card", model_parameters=("model_specs", "model_spec"),
                        per_spec=("model_specs", "model_spec"), reads=AUDITED_NOTEBOOKS),
    NotebookDeclaration("05b_leaderboard", reads=("05a_model_card",), memory_gb=1.0),
)
