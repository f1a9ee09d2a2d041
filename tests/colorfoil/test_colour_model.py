import json
import re

import pytest

pytest.importorskip("easy_vqa")

from vlbias.colorfoil import construction, evaluation  # noqa: E402
from vlbias.colorfoil import colour_model as cm  # noqa: E402


def test_labels_agree_with_every_question():
    labels = cm.easy_vqa_labels("test").set_index("image_id")
    assert len(labels) > 800 and set(labels["colour"]) == set(cm.EASY_VQA_COLOURS)
    root = cm._easy_vqa_root()
    checked = 0
    for question, answer, image_id in json.loads((root / "test" / "questions.json").read_text()):
        if image_id not in labels.index:
            continue
        colour = labels.at[image_id, "colour"]
        words = re.findall(r"[a-z]+", question)
        if question.startswith("what") and "color" in words:
            assert answer == colour
            checked += 1
        elif answer in ("yes", "no") and colour in words:  # "is there (not) a <colour> shape?"
            negated = "not" in words or "no" in words
            assert (answer == "yes") != negated, question
            checked += 1
    assert checked > 1500


def test_a_small_colour_model_trains_loads_and_beats_chance(tmp_path):
    from vlbias.models import load_image_text_model

    config = cm.ColourModelConfig(epochs=3, max_train_images=1200, width=32, batch_size=100)
    directory = cm.train_colour_model(config, directory=tmp_path / "model", snapshots=(0,), progress=False)
    assert (directory / "training.json").exists() and cm.snapshot(directory, 0).is_dir()
    written = (directory / "training.json").stat().st_mtime_ns
    assert cm.train_colour_model(config, directory=tmp_path / "model", snapshots=(0,)) == directory
    assert (directory / "training.json").stat().st_mtime_ns == written  # cached, not retrained

    test = cm.easy_vqa_captions("test", max_images=300)
    benchmark = construction.build_benchmark(test, targets=cm.EASY_VQA_COLOURS, max_foils=1, progress=False)
    assert len(benchmark) == 300 and all(set(r[0].split("->")[1:]) <= set(cm.EASY_VQA_COLOURS)
                                         for r in benchmark["replacements"])
    model = load_image_text_model(str(directory), device="cpu")  # the ordinary loading path
    assert model.kind == "dual"
    scores = evaluation.score_benchmark(model, test, benchmark, max_foils=1, cache=False, progress=False)
    trained = evaluation.evaluation_row(scores, 1)
    assert trained["ci_low_%"] > 60, trained  # chance is 50%
