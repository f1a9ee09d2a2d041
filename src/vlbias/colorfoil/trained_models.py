"""``trained:easy-vqa-colour``: 02c's easy-VQA colour model as a ``trained:`` spec, so 02b can compare
it with the models trained on the caption world (one training, in 02c's cache directory).

It lives in Part II because it trains Part II's model; :data:`vlbias.models.trained.RECIPE_MODULES`
names this module, so the spec resolves wherever it is used.
"""

from __future__ import annotations

from pathlib import Path

from ..models.trained import register_trained
from ..paths import cache_dir
from .colour_model import ColourModelConfig, _key, train_colour_model

EASY_VQA_COLOUR_DEFAULTS = {"epochs": 4, "early_epochs": 2, "batch_size": 128, "learning_rate": 0.002, "seed": 0}


def _explain_colour(**options) -> str:
    return (f"02c's easy-VQA colour model: a mini-CLIP trained on easy-VQA's shapes and their colours "
            f"({options['epochs']} epochs, seed {options['seed']}); it never saw the caption world")


def _colour_config(epochs: int, early_epochs: int, batch_size: int, learning_rate: float, seed: int):
    return ColourModelConfig(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, seed=seed)


def _colour_target(**options) -> Path:
    return cache_dir() / "colour_model" / f"easy-vqa-clip-{_key(_colour_config(**options))}"


@register_trained("easy-vqa-colour", "image-text", EASY_VQA_COLOUR_DEFAULTS, target=_colour_target,
                  explain=_explain_colour)
def easy_vqa_colour(**options) -> Path:
    """02c's easy-VQA colour model, in 02c's cache directory with the snapshots 02c shows (after 0 and
    ``early_epochs`` epochs), so the two pages train it once."""
    return train_colour_model(_colour_config(**options), snapshots=(0, options["early_epochs"]), progress=False)
