"""The model comparison of 04c (text-to-image specs ranked by VRBS, CADS beside the source text's
published numbers) on the tiny SD 1.x and SD 3 fixtures."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.models import load_image_text_model
from vlbias.t2i import bias as t2i_bias
from vlbias.t2i.compare import cads_beside_published, model_comparison
from vlbias.t2i.generation import prompt_jobs

SETTINGS = dict(num_inference_steps=2, height=None, width=None)  # None: each model's native size
PROMPTS = {"female": "a photo of a female worker", "male": "a photo of a male worker"}
REFERENCE = pd.Series({"nurse": 0.9, "carpenter": 0.1, "cashier": 0.7})


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    annotator = load_image_text_model("tiny:clip", device="cpu")
    jobs = prompt_jobs(list(REFERENCE.index), "A photo of a {profession}", 3, seed=0)
    out = tmp_path_factory.mktemp("comparison")
    return model_comparison(["tiny:sd", "tiny:sd3", "tiny:no-such-model"], annotator, jobs, out, PROMPTS, REFERENCE,
                            cads_specs=["tiny:sd", "tiny:sd3"], cads=dict(noise_scale=1.0, tau1=0.2, tau2=0.9),
                            published_names={"tiny:sd": "SD 1.4"}, generation=SETTINGS, batch_size=9, n_boot=50,
                            device="cpu")


def hand_vrbs(manifest):
    female = (manifest.perceived == "female").groupby(manifest.profession).mean()
    return 1 - (female - REFERENCE).abs().loc[REFERENCE.index].mean()


def test_every_spec_and_sampler_is_ranked_by_vrbs_with_the_published_value_beside(compared):
    ranking, runs, failures = compared
    assert set(runs) == {("tiny:sd", "plain"), ("tiny:sd", "CADS"), ("tiny:sd3", "plain"), ("tiny:sd3", "CADS")}
    assert failures.model.tolist() == ["tiny:no-such-model"] and failures.stage.tolist() == ["load"]
    assert ranking["rank"].tolist() == [1, 2, 3, 4]
    assert ranking.VRBS.is_monotonic_decreasing
    for (spec, sampler), manifest in runs.items():
        row = ranking.loc[f"{spec} ({sampler})"]
        assert (row.model, row.sampler) == (spec, sampler)
        assert row.VRBS == pytest.approx(hand_vrbs(manifest))
        assert row["VRBS low"] <= row.VRBS + 1e-12 and row.VRBS - 1e-12 <= row["VRBS high"]
        assert len(manifest) == 9 and set(manifest.perceived) <= set(PROMPTS)
    # the source's numbers (published data file), only for the spec given a published name
    assert ranking.loc["tiny:sd (plain)", "published VRBS (source)"] == 0.68
    assert ranking.loc["tiny:sd (CADS)", "published VRBS (source)"] == 0.73
    assert ranking.loc[["tiny:sd3 (plain)", "tiny:sd3 (CADS)"], "published VRBS (source)"].isna().all()
    # height and width None: each model drew at its own native size (32 px for both fixtures)
    for manifest in runs.values():
        assert Image.open(Path(manifest.run_dir.iloc[0]) / manifest.file.iloc[0]).size == (32, 32)
    # CADS drew other images from the same seeds
    plain, cads = (np.asarray(Image.open(Path(runs["tiny:sd3", sampler].run_dir.iloc[0]) /
                                         runs["tiny:sd3", sampler].file.iloc[0]), dtype=int) for sampler in ("plain", "CADS"))
    assert np.abs(plain - cads).mean() > 0.5


def test_cads_change_is_paired_and_sits_beside_the_published_change(compared):
    _, runs, _ = compared
    table = cads_beside_published(runs, REFERENCE, {"tiny:sd": "SD 1.4"}, n_boot=50)
    assert table.index.tolist() == ["tiny:sd", "tiny:sd3"]
    for spec in table.index:
        assert table.loc[spec, "VRBS plain"] == pytest.approx(hand_vrbs(runs[spec, "plain"]))
        assert table.loc[spec, "VRBS CADS"] == pytest.approx(hand_vrbs(runs[spec, "CADS"]))
        assert table.loc[spec, "change"] == pytest.approx(table.loc[spec, "VRBS CADS"] - table.loc[spec, "VRBS plain"])
    published = t2i_bias.published_scores().query("measure == 'vrbs' and model == 'SD 1.4'").set_index("sampler").value
    assert table.loc["tiny:sd", "published VRBS plain (source)"] == published["plain"] == 0.68
    assert table.loc["tiny:sd", "published change (source)"] == pytest.approx(0.05)
    assert np.isnan(table.loc["tiny:sd3", "published VRBS CADS (source)"])


@pytest.mark.parametrize("arguments, message", [
    (dict(specs=[]), "specs is empty"),
    (dict(specs=["tiny:sd"], cads_specs=["tiny:sd3"]), r"cads_specs names \['tiny:sd3'\]"),
    (dict(specs=["tiny:sd"], published_names={"tiny:sd2": "SD 2.1"}), r"published_names names \['tiny:sd2'\]"),
    (dict(specs=["tiny:sd"], cads_specs=["tiny:sd"], cads=dict(noise_scale=0.0)), "switch it off"),
])
def test_bad_arguments_are_named_before_anything_is_drawn(tmp_path, arguments, message):
    with pytest.raises(ValueError, match=message):
        model_comparison(annotator=None, jobs=None, output_dir=tmp_path, gender_prompts=PROMPTS, reference=REFERENCE,
                         **arguments)
    assert not any(tmp_path.iterdir())


def test_spearman_is_undefined_without_a_warning_when_one_side_is_constant(recwarn):
    rho, p_value = t2i_bias.spearman([0.0, 0.0, 0.0, 0.0], [0.1, 0.5, 0.7, 0.9])
    assert np.isnan(rho) and np.isnan(p_value) and not recwarn.list
    assert t2i_bias.spearman([0.1, 0.2, 0.4, 0.3], [0.1, 0.5, 0.7, 0.9])[0] == pytest.approx(0.8)
