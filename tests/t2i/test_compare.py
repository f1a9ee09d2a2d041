"""The CADS noise-scale grid (04c) on tiny models, and the small Part IV page helpers."""

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.models import load_image_text_model, load_text_to_image
from vlbias.t2i import annotation
from vlbias.t2i import bias as t2i_bias
from vlbias.t2i.compare import noise_scale_grid
from vlbias.t2i.generation import generate_to_disk, prompt_jobs

SETTINGS = dict(num_inference_steps=2, height=32, width=32)
# no "no person" label: a random tiny annotator would otherwise leave too few professions to score
PROMPTS = {"female": "a photo of a female worker", "male": "a photo of a male worker"}


@pytest.mark.slow  # three generation runs of six images
def test_noise_scale_grid_runs_plain_sampling_at_zero_and_reports_each_scale(tmp_path):
    sd = load_text_to_image("tiny:sd", device="cpu")
    annotator = load_image_text_model("tiny:clip", device="cpu")
    jobs = prompt_jobs(["nurse", "carpenter", "cashier"], "A photo of a {profession}", 2, seed=0)
    reference = pd.Series({"nurse": 0.9, "carpenter": 0.1, "cashier": 0.7})
    grid, runs = noise_scale_grid(sd, annotator, jobs, [0.0, 0.5], tmp_path / "out", PROMPTS, reference,
                                  cads=dict(tau1=0.6, tau2=0.9), generation=SETTINGS, batch_size=6, n_boot=50)
    assert grid.index.tolist() == [0.0, 0.5] and grid.sampler.tolist() == ["plain", "CADS"]
    # s = 0 is plain sampling: the same pixels as the plain model run on its own
    plain = generate_to_disk(sd, jobs, tmp_path / "plain", batch_size=6, **SETTINGS)
    for name_grid, name_plain in zip(runs[0.0]["manifest"].file, plain.file):
        a = np.asarray(Image.open(runs[0.0]["run_dir"] / name_grid))
        assert np.array_equal(a, np.asarray(Image.open(tmp_path / "plain" / name_plain)))
    assert "plain" in str(runs[0.0]["run_dir"]) and "plain" not in str(runs[0.5]["run_dir"])
    for s, run in runs.items():
        manifest = run["manifest"]
        assert set(manifest.perceived) <= set(PROMPTS)
        assert grid.loc[s, "no person"] == 0
        female = (manifest.perceived == "female").groupby(manifest.profession).mean()
        assert run["table"]["generated share"].to_dict() == pytest.approx(female.to_dict())
        boot = t2i_bias.bootstrap_bias_scores(manifest, reference, n_boot=50, seed=0)
        assert grid.loc[s, "VRBS"] == boot.loc["VRBS", "estimate"]
        assert grid.loc[s, "VRBS low"] <= grid.loc[s, "VRBS"] <= grid.loc[s, "VRBS high"]
        assert grid.loc[s, "diversity"] == pytest.approx(run["diversity"].mean())


def test_probe_prompts_default_or_given_and_unknown_probes_refused():
    assert annotation.probe_prompts("race") is annotation.RACE_PROMPTS
    mine = {"light": "a light-skinned person", "dark": "a dark-skinned person"}
    assert annotation.probe_prompts("skin tone", mine) is mine
    with pytest.raises(ValueError, match=r"probe must be one of \['skin tone', 'race'\] or None, got 'age'"):
        annotation.probe_prompts("age")


def test_simulated_annotators_err_at_their_rate_among_the_other_labels_and_read_back(tmp_path):
    labels = ["female", "male", "no person"]
    truth = pd.Series(labels * 1000, index=[f"{i}.png" for i in range(3000)])
    path = annotation.write_simulated_annotations(truth, tmp_path / "a.csv", seed=1)
    back = annotation.read_annotations(path)
    # three annotators and the arbiter each label every image once, in the import format
    assert back.groupby("annotator")["image"].apply(list).to_dict() == {
        who: list(truth.index) for who in ("a1", "a2", "a3", "senior")}
    wrong = back["label"].to_numpy() != truth.loc[back["image"]].to_numpy()
    share = pd.Series(wrong).groupby(back["annotator"].to_numpy()).mean()
    # 15% errors each (the arbiter half that): binomial sd < 0.007 at n = 3000, 4 sd of room
    assert share.drop("senior").to_numpy() == pytest.approx([0.15] * 3, abs=0.03)
    assert share["senior"] == pytest.approx(0.075, abs=0.02)
    # an error is one of the two other labels, each about half the time
    errors = back[wrong]
    for label in labels:
        given = errors.loc[truth.loc[errors["image"]].to_numpy() == label, "label"]
        assert label not in set(given) and given.value_counts(normalize=True).to_numpy() == pytest.approx(
            [0.5, 0.5], abs=0.1)
    exact = annotation.simulated_annotations(truth, error_rate=0.0)
    assert (exact["label"].to_numpy() == truth.loc[exact["image"]].to_numpy()).all()
    assert not annotation.simulated_annotations(truth, seed=2).equals(pd.read_csv(path))
