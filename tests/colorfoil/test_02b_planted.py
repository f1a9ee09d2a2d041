"""02b_colorfoil_evaluation's planted signal: on the caption world, the dual encoder trained with
colour words beats chance beyond its interval, the one trained with every colour word removed (the
control: it never saw a colour named) sits within its interval of chance, and the pairwise matcher,
trained on colour foils, beats chance. The models are the demo's own (seconds to train each)."""

from __future__ import annotations

import numpy as np
import pytest

from vlbias.colorfoil import evaluation as cfe, findings as cff

COLOUR, NO_COLOUR, MATCHER = ("trained:caption-clip?colour_words=1", "trained:caption-clip?colour_words=0",
                              "trained:caption-matcher")


@pytest.fixture(scope="module")
def demo_scores(world_benchmarks):
    datasets, benchmarks, max_foils = world_benchmarks
    scores, kinds, failures, _ = cfe.score_models([COLOUR, NO_COLOUR, MATCHER], datasets, benchmarks,
                                                  max_foils=max_foils, batch_size=16, device="cpu", progress=False)
    assert failures.empty, failures
    pooled = {spec: np.concatenate([scores[spec, name] for name in datasets]) for spec in kinds}
    return pooled, kinds


def test_02b_the_colour_trained_dual_encoder_beats_chance_and_the_blind_one_does_not(demo_scores):
    pooled, kinds = demo_scores
    table = cff.against_chance(pooled, k=1).set_index("model")
    assert table.loc[COLOUR, "ci_low_%"] > 50, table
    assert table.loc[NO_COLOUR, "ci_low_%"] <= 50 <= table.loc[NO_COLOUR, "ci_high_%"], table
    assert table.loc[NO_COLOUR, "ties"] == 0  # chance by never having seen colour, not by tied scores
    assert kinds[COLOUR] == kinds[NO_COLOUR] == "dual"


def test_02b_the_matcher_is_a_vilt_pairwise_model_that_sees_colour(demo_scores):
    pooled, kinds = demo_scores
    assert kinds[MATCHER] == "pairwise"  # loaded by the ViLT backend, unchanged
    table = cff.against_chance(pooled, k=1).set_index("model")
    assert table.loc[MATCHER, "ci_low_%"] > 50, table


def test_02b_chance_holds_for_more_foils_too(demo_scores):
    pooled, _ = demo_scores
    for k in (2, 4):
        row = cff.against_chance({NO_COLOUR: pooled[NO_COLOUR]}, k=k).iloc[0]
        assert row["ci_low_%"] <= 100 / (k + 1) <= row["ci_high_%"], row
