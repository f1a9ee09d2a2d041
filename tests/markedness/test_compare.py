"""Per-family and per-model summaries of markedness, against cosines and pairwise means by hand."""

import numpy as np
import pandas as pd
import pytest

from vlbias.markedness import label_prompts
from vlbias.markedness.compare import family_summary, model_comparison


def mean_pairwise_cosine(x):
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    return np.mean([unit[i] @ unit[j] for i in range(len(x)) for j in range(len(x)) if i != j])


def test_family_summary_rows_by_hand():
    rng = np.random.default_rng(0)
    records = pd.DataFrame({"gender": ["Male", "Female", "Male", "Male", "Female"],
                            "age": ["0-2", "0-2", "3-9", "0-2", "more than 70"]})
    embeddings = rng.normal(size=(5, 4))
    flags = pd.DataFrame({"gender": [True, False, False, True, True], "age": [False, True, True, True, False]})
    table = family_summary(records, embeddings, flags)
    assert table[["family", "group", "n"]].values.tolist() == [
        ["gender", "Female", 2], ["gender", "Male", 3], ["age", "0-2", 3], ["age", "3-9", 1], ["age", "more than 70", 1]]
    male = table.iloc[1]
    assert male["self_similarity"] == pytest.approx(mean_pairwise_cosine(embeddings[[0, 2, 3]]))
    assert male["unmarked_%"] == pytest.approx(200 / 3)
    assert table.iloc[2]["unmarked_%"] == pytest.approx(200 / 3)
    assert np.isnan(table.iloc[3]["self_similarity"]) and table.iloc[3]["unmarked_%"] == 100


def test_model_comparison_summarises_each_model_from_its_own_embeddings():
    from vlbias.data import load_dataset
    from vlbias.embeddings import embed_images
    from vlbias.models import load_image_text_model

    dataset = load_dataset("fairface", root="fixture")
    specs = ["tiny:clip", "tiny:open-clip"]
    table = model_comparison(specs, dataset, device="cpu", decode_workers=0)
    assert table["model"].unique().tolist() == specs
    gender_prompts = label_prompts()["gender"]
    genders = dataset.records["gender"].to_numpy()
    for spec in specs:
        model = load_image_text_model(spec, device="cpu")
        images = embed_images(model, dataset, progress=False)  # cached by model_comparison: not encoded twice
        texts = model.encode_texts(["a photo of a person"] + list(gender_prompts.values()), progress=False)
        unit_i = images / np.linalg.norm(images, axis=1, keepdims=True)
        unit_t = texts / np.linalg.norm(texts, axis=1, keepdims=True)
        cosines = unit_i @ unit_t.T
        unmarked = cosines[:, 0] > cosines[:, 1:].max(axis=1)
        rows = table[(table.model == spec) & (table.family == "gender")].set_index("group")
        for gender in ("Female", "Male"):
            members = genders == gender
            assert rows.loc[gender, "n"] == members.sum()
            assert rows.loc[gender, "unmarked_%"] == pytest.approx(100 * unmarked[members].mean(), abs=1e-9)
            unit = unit_i[members]
            total = unit.sum(axis=0)
            expected = (total @ total - len(unit)) / (len(unit) * (len(unit) - 1))
            assert rows.loc[gender, "self_similarity"] == pytest.approx(expected, abs=1e-5)
    first, second = (table[table.model == s]["self_similarity"].to_numpy() for s in specs)
    assert not np.allclose(first, second)


def test_model_comparison_refuses_a_pairwise_model():
    from vlbias.data import load_dataset

    # a pairwise matcher gives a failure row that says why; it never reaches the measures
    result = model_comparison(["tiny:vilt"], load_dataset("fairface", root="fixture"), device="cpu")
    assert result.empty
    assert result.attrs["failures"]["error"].str.contains("dual encoder").any()
