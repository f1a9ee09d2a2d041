"""02d_colorfoil_generative's planted signal, on the demo book's captioners and pairs (its cache: nothing is
trained again): the small LLaVA captioner trained with colour words tells a caption from its colour foil by
likelihood beyond its control, the same captioner trained with every colour word removed, on the same pairs,
under both scores; the placebo (the control's scores in its place) recovers nothing. Neither was taught to
answer a question, and the two-choice reading says so: the same label wins in both orders for every pair,
and the box says the world plants no such cause."""

from __future__ import annotations

import pytest

from vlbias import book
from vlbias.colorfoil import findings as cff, generative as cfg

COLOUR, NO_COLOUR = "trained:caption-captioner?colour_words=1", "trained:caption-captioner?colour_words=0"


@pytest.mark.slow
def test_02d_recovers_the_colour_words_beyond_the_control_and_the_placebo_nothing(generative_page, demo_cache):
    p, datasets, benchmarks, max_foils = generative_page
    assert p["controls"] == {COLOUR: NO_COLOUR}
    scores, choices, failures = cfg.score_generative_models([COLOUR, NO_COLOUR], datasets, benchmarks,
                                                            max_foils=max_foils, batch_size=32, device="cpu",
                                                            progress=False)
    assert failures.empty, failures
    published = book.published("colorfoil_table1_samin2024")
    for mode in ("sum", "mean"):
        first, second = cff.generative_findings(COLOUR, scores[mode], choices, p["controls"], published)
        # planted minus control by likelihood (the machine of 2026-12-08, summed: +37.4 points [+24.2, +50.5])
        assert first.verdict == "recovered" and first.estimates["contrast"].low > 0.1, (mode, first.contrast)
        assert second.verdict == "not planted" and "follow the position" in second.note, second
        swapped = {**scores[mode], **{(COLOUR, name): scores[mode][NO_COLOUR, name] for name in datasets},
                   **{(NO_COLOUR, name): scores[mode][COLOUR, name] for name in datasets}}
        assert cff.generative_findings(COLOUR, swapped, None, p["controls"], published)[0].verdict == "not recovered"
    table = cfg.two_choice_table(choices)
    bias = table[table.reading == "same label in both orders (position bias)"]
    assert (bias["accuracy_%"] == 100).all(), bias
    assert "its 50% average is no finding" in cff.two_choice_sentences(table)
