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
