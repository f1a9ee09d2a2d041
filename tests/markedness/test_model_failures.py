"""Item 5 of issue 9: one model that fails does not take the others' rows with it."""

from vlbias import markedness as mk
from vlbias.data import load_dataset


def test_model_comparison_reports_a_failed_model_and_keeps_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    dataset = load_dataset("fairface", root="fixture", split="train")
    table = mk.model_comparison(["tiny:clip", "tiny:vilt", "tiny:open-clip"], dataset, device="cpu", batch_size=16)
    assert table["model"].unique().tolist() == ["tiny:clip", "tiny:open-clip"]
    assert set(table["dtype"]) == {"float32"}
    failures = table.attrs["failures"]
    assert failures["model"].tolist() == ["tiny:vilt"] and failures["stage"].tolist() == ["run"]
    assert "pairwise" in failures["error"].iat[0]  # ViLT has no embeddings: the reason is named


def test_models_trained_in_the_book_train_side_by_side_first_and_a_bad_one_is_its_own_failure_row(monkeypatch):
    """``for_each_model`` hands the ``trained:`` specs it can parse to ``build_trained`` at once (side by
    side, before loading one by one); an unknown recipe and a training that fails are each reported as
    their own model's row, and the others still run."""
    import vlbias.models as models
    import vlbias.models.trained as trained

    calls = []

    def build(specs, workers=None, progress=False):
        calls.append(list(specs))
        raise RuntimeError("a worker died")  # the loads below report what went wrong, model by model

    def load(spec, **_):
        if "no-such" in spec or "seed=9" in spec:
            raise KeyError(f"cannot build {spec}")
        return spec

    monkeypatch.setattr(trained, "build_trained", build)
    specs = ["trained:world-clip?seed=1", "trained:no-such-recipe", "tiny:clip", "trained:world-clip?seed=9"]
    results, failures = models.for_each_model(specs, lambda spec, model: model.upper(), load=load)
    assert calls == [["trained:world-clip?seed=1", "trained:world-clip?seed=9"]]
    assert results == {"trained:world-clip?seed=1": "TRAINED:WORLD-CLIP?SEED=1", "tiny:clip": "TINY:CLIP"}
    assert failures["model"].tolist() == ["trained:no-such-recipe", "trained:world-clip?seed=9"]
    assert (failures["stage"] == "load").all()
    calls.clear()
    models.for_each_model(["trained:world-clip?seed=1", "tiny:clip"], lambda spec, model: model, load=load)
    assert calls == []  # one model to train: it trains when it loads
