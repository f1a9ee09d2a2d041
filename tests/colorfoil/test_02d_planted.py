"""02d_colorfoil_generative's planted signal: on the caption world, the small LLaVA captioner trained
with colour words tells a caption from its colour foil by likelihood beyond its interval of chance, under
both scores; the one trained with every colour word removed (the control: it never saw a colour named)
sits within its interval of chance. Neither was taught to answer a question, and the two-choice reading
says so: the same label wins in both orders for every pair, and the findings box cannot test it."""

from __future__ import annotations

import numpy as np
import pytest

from vlbias.colorfoil import findings as cff, generative as cfg

COLOUR, NO_COLOUR = "trained:caption-captioner?colour_words=1", "trained:caption-captioner?colour_words=0"


@pytest.fixture(scope="module")
def demo_readings(world_benchmarks):
    datasets, benchmarks, max_foils = world_benchmarks
    scores, choices, failures = cfg.score_generative_models([COLOUR, NO_COLOUR], datasets, benchmarks,
                                                            max_foils=max_foils, batch_size=32, device="cpu",
                                                            progress=False)
    assert failures.empty, failures
    return datasets, scores, choices


def test_02d_the_colour_trained_captioner_beats_chance_by_likelihood_and_the_blind_one_does_not(demo_readings):
    datasets, scores, _ = demo_readings
    for mode in ("sum", "mean"):
        pooled = {spec: np.concatenate([scores[mode][spec, name] for name in datasets]) for spec in (COLOUR, NO_COLOUR)}
        table = cff.against_chance(pooled, k=1).set_index("model")
        assert table.loc[COLOUR, "ci_low_%"] > 50, (mode, table)
        assert table.loc[NO_COLOUR, "ci_low_%"] <= 50 <= table.loc[NO_COLOUR, "ci_high_%"], (mode, table)
        assert table.loc[NO_COLOUR, "ties"] == 0  # chance by never having seen a colour, not by tied scores
        four = cff.against_chance(pooled, k=4).set_index("model")  # chance 20% with four foils
        assert four.loc[COLOUR, "ci_low_%"] > 20 and four.loc[NO_COLOUR, "ci_low_%"] <= 20, (mode, four)


def test_02d_an_uninstructed_captioner_answers_the_question_by_position_and_the_box_cannot_test_it(demo_readings):
    import vlbias

    datasets, scores, choices = demo_readings
    table = cfg.two_choice_table(choices)
    bias = table[table.reading == "same label in both orders (position bias)"]
    assert (bias["accuracy_%"] == 100).all(), bias
    assert "its 50% average is no finding" in cff.two_choice_sentences(table)
    chance = cff.against_chance({COLOUR: scores["sum"][COLOUR, "coco"]}, 1).assign(dataset="coco")
    published = vlbias.book.published("colorfoil_table1_samin2024")
    found = cff.generative_findings(chance, table, published, COLOUR)
    assert [f.verdict for f in found] == ["supports", "cannot test"]
    text, causes = cff.generative_planted(COLOUR)
    assert causes == [True, False] and "never asked a question" in text
    assert cff.generative_planted(NO_COLOUR)[1] == [False, False]
