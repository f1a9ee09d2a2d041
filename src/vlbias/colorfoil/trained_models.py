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
    if not options["epochs"]:
        return (f"02c's easy-VQA colour model untrained: the same mini-CLIP at its random initialisation (seed "
                f"{options['seed']}), never shown a caption naming a colour")
    return (f"02c's easy-VQA colour model: a mini-CLIP trained on easy-VQA's shapes and their colours "
            f"({options['epochs']} epochs, seed {options['seed']}); it never saw the caption world")


def colour_model_plants(**options) -> dict[str, str]:
    """The causes behind ColorFoil's claims that the easy-VQA colour model plants: captions that name each
    shape's colour (``colour_named``, the caption world's key), once it has trained at all (``epochs`` > 0;
    the untrained network, 02c's control, plants none)."""
    from ..models.caption_world_models import COLOUR_NAMED

    if not options["epochs"]:
        return {}
    return {COLOUR_NAMED: "captions that name each shape's colour (easy-VQA's \"a red circle\")"}


def colour_model_spec(epochs: int, batch_size: int = EASY_VQA_COLOUR_DEFAULTS["batch_size"],
                      learning_rate: float = EASY_VQA_COLOUR_DEFAULTS["learning_rate"],
                      seed: int = EASY_VQA_COLOUR_DEFAULTS["seed"]) -> str:
    """The ``trained:easy-vqa-colour`` spec of 02c's network after ``epochs`` epochs (0: untrained, its
    control), by which its findings name what each one plants."""
    return (f"trained:easy-vqa-colour?epochs={int(epochs)}&batch_size={int(batch_size)}"
            f"&learning_rate={learning_rate:g}&seed={int(seed)}")


def _colour_config(epochs: int, early_epochs: int, batch_size: int, learning_rate: float, seed: int):
    return ColourModelConfig(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, seed=seed)


def _colour_target(**options) -> Path:
    return cache_dir() / "colour_model" / f"easy-vqa-clip-{_key(_colour_config(**options))}"


@register_trained("easy-vqa-colour", "image-text", EASY_VQA_COLOUR_DEFAULTS, target=_colour_target,
                  explain=_explain_colour, plants=colour_model_plants)
def easy_vqa_colour(**options) -> Path:
    """02c's easy-VQA colour model, in 02c's cache directory with the snapshots 02c shows (after 0 and
    ``early_epochs`` epochs), so the two pages train it once."""
    return train_colour_model(_colour_config(**options), snapshots=(0, options["early_epochs"]), progress=False)


def snapshot_roles(epochs: int, early_epochs: int, control_epochs: int | None, batch_size: int, learning_rate: float,
                   seed: int) -> tuple[str, str | None, dict[str, str]]:
    """02c's roles: the name of the trained model (``"<epochs> epochs"``), of its control (the snapshot after
    ``control_epochs`` epochs: ``"untrained"`` for 0, the early one, or the model itself; None: no control),
    and each snapshot's ``trained:easy-vqa-colour`` spec (:func:`colour_model_spec`), by which the findings
    know what each one plants."""
    names = {0: "untrained", early_epochs: f"{early_epochs} epochs", epochs: f"{epochs} epochs"}
    if control_epochs is not None and control_epochs not in names:
        raise ValueError(f"control_epochs={control_epochs!r}: the page keeps the network after 0, early_epochs="
                         f"{early_epochs} and epochs={epochs} epochs; give one of those, or None for no control.")
    specs = {name: colour_model_spec(count, batch_size, learning_rate, seed) for count, name in names.items()}
    return names[epochs], None if control_epochs is None else names[control_epochs], specs
