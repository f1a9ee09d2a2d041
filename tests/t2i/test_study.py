"""One VRBS and ρ per model and setting (``vlbias.t2i.study``): computed once, read back identically, by
04b, 04c and the model card; the weighted statistics behind the intervals against scipy's."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from scipy import stats

from vlbias.models.base import TextToImageModel
from vlbias.t2i import bias as t2i_bias
from vlbias.t2i import study
from vlbias.t2i.runs import study_jobs

REFERENCE = t2i_bias.reference_shares()
PROMPTS = {"female": ["a red shape"], "male": ["a blue shape"]}


class ColourPipeline(TextToImageModel):
    """Draws a red square with the profession's labour share (by a hash of the seed), a blue one otherwise;
    ``broken``: fails if asked to draw (a cache read must not draw)."""

    spec = "fake:colour-t2i"

    def __init__(self, broken: bool = False):
        jobs = study_jobs("A photo of a {profession}", 1, include_source_cases=False)
        self.shares = dict(zip(jobs.prompt, jobs.profession.map(REFERENCE)))
        self.broken, self.drawn = broken, 0

    def generate(self, prompts, seeds, **kwargs):
        if self.broken:
            raise AssertionError("drew an image: the study should have been read from the cache")
        self.drawn += len(prompts)
        colours = [(200, 20, 20) if (seed * 2654435761 % 1000) / 1000 < self.shares[prompt] else (20, 20, 200)
                   for prompt, seed in zip(prompts, seeds)]
        return [Image.fromarray(np.full((4, 4, 3), colour, np.uint8)) for colour in colours]


class ColourReader:
    """A zero-shot annotator that reads the red and blue channels (its prompts name the colour)."""

    spec = "fake:colour-reader"
    kind = "matcher"

    def __init__(self, broken: bool = False):
        self.broken, self.read = broken, 0

    def score(self, images, texts, batch_size=32, progress=True):
        if self.broken:
            raise AssertionError("labelled an image: the study should have been read from the cache")
        self.read += len(images)
        means = np.array([np.asarray(image.convert("RGB"), float).mean(axis=(0, 1)) for image in images])
        return np.array([[row[0] if "red" in text else row[2] for text in texts] for row in means])


def parameters(tmp_path, **changes) -> dict:
    return {"output_dir": str(tmp_path / "out"), "prompt_template": "A photo of a {profession}",
            "images_per_profession": 6, "include_source_cases": False, "seed": 0, "num_inference_steps": 2,
            "guidance_scale": 3, "height": None, "width": None, "annotator_spec": "fake:colour-reader",
            "annotator_half": None, "gender_prompts": PROMPTS, "batch_size": 64, "annotation_batch_size": 64,
            "device": "cpu", "half": False, **changes}


def test_a_study_is_computed_once_and_read_back_identically(tmp_path):
    model, annotator = ColourPipeline(), ColourReader()
    first = study.study_run("fake:colour-t2i", parameters(tmp_path), model=model, annotator=annotator)
    assert model.drawn == 240 and annotator.read == 240 and first.labels["perceived"].notna().all()
    shares = (first.labels.perceived == "female").groupby(first.labels.profession).mean().reindex(REFERENCE.index)
    assert first.scores["spearman_rho"].value == pytest.approx(stats.spearmanr(shares, REFERENCE).statistic)
    assert first.scores["VRBS"].value == pytest.approx(t2i_bias.vrbs(shares, REFERENCE))
    assert first.scores["VRBS"].low < first.scores["VRBS"].value < first.scores["VRBS"].high
    # a second page, or the model card, asking for the same setting: read, nothing drawn or labelled
    again = study.study_run("fake:colour-t2i", parameters(tmp_path), model=ColourPipeline(broken=True),
                            annotator=ColourReader(broken=True))
    assert again.scores == first.scores and again.key == first.key and again.run_dir == first.run_dir
    assert again.labels.drop(columns="run_dir").equals(first.labels.drop(columns="run_dir"))
    # an integer and a float guidance name the same setting and folder; loaders given as functions are not called
    same = study.study_run("fake:colour-t2i", parameters(tmp_path, guidance_scale=3.0),
                           model=lambda: pytest.fail("loaded the model"), annotator=lambda: pytest.fail("loaded"))
    assert same.key == first.key
    # another setting is another entry: other prompts label again (the images are found), another guidance draws
    relabelled = ColourReader()
    other = study.study_run("fake:colour-t2i", parameters(tmp_path, gender_prompts={"female": ["red"], "male": ["blue"]}),
                            model=ColourPipeline(broken=True), annotator=relabelled)
    assert other.key != first.key and relabelled.read == 240
    drawn = ColourPipeline()
    guided = study.study_run("fake:colour-t2i", parameters(tmp_path, guidance_scale=1.0), model=drawn, annotator=ColourReader())
    assert drawn.drawn == 240 and guided.run_dir != first.run_dir and guided.key != first.key


def test_a_cache_entry_whose_images_were_replaced_is_made_again(tmp_path):
    first = study.study_run("fake:colour-t2i", parameters(tmp_path), model=ColourPipeline(), annotator=ColourReader())
    (first.run_dir / "manifest.csv").unlink()  # the images are gone: drawn and labelled again
    model, annotator = ColourPipeline(), ColourReader()
    again = study.study_run("fake:colour-t2i", parameters(tmp_path), model=model, annotator=annotator)
    assert model.drawn == 240 and annotator.read == 240 and again.scores == first.scores


def test_the_setting_names_what_it_lacks():
    with pytest.raises(ValueError, match=r"needs the parameters \['annotator_spec', 'gender_prompts'\]"):
        study.StudySetting.from_parameters({"prompt_template": "A photo of a {profession}", "images_per_profession": 2,
                                            "seed": 0, "num_inference_steps": 2, "guidance_scale": 3, "height": 8,
                                            "width": 8})
    with pytest.raises(ValueError, match="images_per_profession must be at least 1"):
        study.StudySetting.from_parameters({**parameters(Path(".")), "images_per_profession": 0})
    assert study.generation_settings({"num_inference_steps": 2.0, "guidance_scale": 3, "height": 8.0, "width": None}) == {
        "num_inference_steps": 2, "guidance_scale": 3.0, "height": 8, "width": None}


def test_weighted_spearman_and_vrbs_rows_are_scipys_and_vrbs_on_each_row():
    rng = np.random.default_rng(0)
    reference = rng.random(9)
    values = np.round(rng.random((5, 9)), 1)  # ties, ranked by their average as scipy ranks them
    values[3, [1, 4]] = np.nan  # a replicate in which two professions show no person
    values[4] = 0.5  # a constant row: undefined
    rows = study.spearman_rows(values, reference)
    for row, value in zip(values[:3], rows[:3]):
        assert value == pytest.approx(stats.spearmanr(row, reference).statistic)
    ok = np.isfinite(values[3])
    assert rows[3] == pytest.approx(stats.spearmanr(values[3, ok], reference[ok]).statistic)
    assert np.isnan(rows[4])
    vrbs = study.vrbs_rows(values, reference)
    assert vrbs[0] == pytest.approx(t2i_bias.vrbs(values[0], reference))
    assert vrbs[3] == pytest.approx(t2i_bias.vrbs(values[3, ok], reference[ok]))


def test_the_cached_rho_is_the_one_a_contrast_resamples_and_pairing_follows_the_jobs(tmp_path):
    planted = study.study_run("fake:colour-t2i", parameters(tmp_path), model=ColourPipeline(), annotator=ColourReader())
    flat = planted.labels.assign(perceived=np.where(np.arange(len(planted.labels)) % 2, "female", "male"))
    control = study.StudyRun.from_labels("fake:control", flat, REFERENCE)
    rho, theirs, contrast = study.rho_contrast(planted, control)
    assert (rho.value, rho.low, rho.high) == (planted.scores["spearman_rho"].value, planted.scores["spearman_rho"].low,
                                              planted.scores["spearman_rho"].high)
    assert study.paired(planted, control) and contrast.how.startswith("paired bootstrap over 240 images")
    other = study.StudyRun.from_labels("fake:control", flat.assign(seed=flat.seed + 1), REFERENCE)
    assert not study.paired(planted, other)
    assert study.rho_contrast(planted, other)[2].how.startswith("independent bootstrap")
    # the fidelity the pages print: the slope of the labelled shares on the planted ones (planted shares halved
    # towards a half: twice the slope); least squares as numpy's polyfit
    half = pd.Series(0.5 + 0.5 * (REFERENCE - 0.5))
    slope = study.share_slope(planted.labels, REFERENCE)
    assert study.share_slope(planted.labels, half) == pytest.approx(2 * slope, rel=1e-9)
    shares = (planted.labels.perceived == "female").groupby(planted.labels.profession).mean().reindex(REFERENCE.index)
    assert slope == pytest.approx(np.polyfit(REFERENCE, shares, 1)[0])


def test_the_declared_runs_are_the_study_runs_the_pages_read_each_once():
    """What precompute draws is what the pages' study runs read: in the demo 04a's folders are 04b's, 04c's
    grid at s = 0 and its model comparison's plain runs are 04b's (one study per model and setting), each
    declared once; the model card's units are the same folders, its control's, its unguided study and 04c's
    CADS run."""
    from vlbias import profiles
    from vlbias.stages import Context
    from vlbias.t2i.compare import cads_config, comparison_parameters
    from vlbias.t2i.stages import annotated_plain_units, cads_units, card_units, plain_units

    root = Path(__file__).resolve().parents[2]
    context = Context(root / "notebooks")
    read = {name: dict(profiles.notebook_parameters(root, name, profiles.plan_run(root, "demo", [name])))
            for name in ("04a_generation", "04b_annotation_and_metrics", "04c_cads")}
    folders = lambda stages: [(stage.spec, stage.call["run_dir"]) for stage in stages]  # noqa: E731
    drawn, labelled = folders(plain_units(read["04a_generation"], context)), \
        folders(annotated_plain_units(read["04b_annotation_and_metrics"], context))
    assert drawn == labelled and len(drawn) == 2
    comparison = folders(cads_units(read["04c_cads"], context))
    assert len(comparison) == len(set(comparison))  # each run declared once
    assert set(labelled) <= set(comparison)  # the grid's plain run and the comparison's plain runs are 04b's
    page = read["04c_cads"]
    for s in page["noise_scales"]:
        where = study.study_directory({**page, "output_dir": context.folder(page["output_dir"])}, page["t2i_spec"],
                                      cads_config(page, s))
        assert (page["t2i_spec"], str(where)) in comparison
    card = folders(card_units(page["t2i_spec"], read["04b_annotation_and_metrics"], page, context))
    assert set(labelled) <= set(card) and len(card) == len(set(card)) == 4  # + unguided; CADS is the grid's s=1
    setting = comparison_parameters(page)
    cads = study.study_directory({**setting, "output_dir": context.folder(page["output_dir"])}, page["t2i_spec"],
                                 cads_config(page, page["comparison_noise_scale"]))
    assert (page["t2i_spec"], str(cads)) in card
