import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from scipy import stats

from vlbias.colorfoil import construction, evaluation
from vlbias.book import published
from vlbias.data import load_dataset
from vlbias.colorfoil.foils import distinct_foils


def test_css3_vocabulary_and_curated_selection():
    names = construction.colour_vocabulary("css3")
    assert len(names) == 147 and {"red", "gray", "grey", "snow", "tan", "mintcream"} <= set(names)
    curated = construction.colour_vocabulary("curated")
    assert {"snow", "tan", "olive"}.isdisjoint(curated) and set(construction.FOIL_TARGETS) <= set(curated)
    changed = construction.selection_differences(["A man skiing in the snow.", "A red bus",
                                                  "A tan dog and a white cat"])
    assert changed["caption"].tolist() == ["A man skiing in the snow.", "A tan dog and a white cat"]
    assert changed["curated words"].tolist() == ["(none: caption dropped)", "white"]


def _write_coco(root, captions_by_image, grayscale_ids=()):
    (root / "annotations").mkdir(parents=True)
    (root / "val2017").mkdir()
    images, annotations = [], []
    for image_id, captions in captions_by_image.items():
        name = f"{image_id:012d}.jpg"
        Image.new("L" if image_id in grayscale_ids else "RGB", (8, 8)).save(root / "val2017" / name)
        images.append({"id": image_id, "file_name": name, "height": 8, "width": 8})
        annotations += [{"image_id": image_id, "id": 100 * image_id + k, "caption": c} for k, c in enumerate(captions)]
    (root / "annotations" / "captions_val2017.json").write_text(json.dumps({"images": images, "annotations": annotations}))


@pytest.fixture
def coco(tmp_path):
    _write_coco(tmp_path, {
        1: ["A red bus.", "A bus"],
        2: ["A colored kite covered in dust", "A blue kite"],   # substrings only in the first
        3: ["Black and white photo of a dog", "x"],              # grayscale image
        4: ["A man standing near a tan dog", "A GRAY cat"],       # "tan" twice as a substring
        5: ["Nothing here", "A green car"],
    }, grayscale_ids={3})
    return load_dataset("coco", tmp_path, split="val2017")


def test_counts_on_a_coco_format_fixture(coco):
    first = construction.build_benchmark(coco, seed=0, caption_choice="first", progress=False)
    assert first["image_id"].tolist() == [1, 3, 4]
    assert first["words"].tolist() == [["red"], ["black", "white"], ["tan"]]
    counts = construction.construction_counts(coco, first)
    assert counts["captions considered"] == 5
    assert counts["with a colour word (substring test)"] == 4  # "colored" holds "red"
    assert counts["with a colour word (whole word, ours)"] == 3
    assert counts["grayscale images (kept here, dropped in the paper)"] == 1 and first["grayscale"].tolist() == [False, True, False]
    curated = construction.build_benchmark(coco, colour_selection="curated", seed=0, caption_choice="first",
                                           progress=False)
    assert curated["image_id"].tolist() == [1, 3]
    # per-caption generators: the captions both keep have the same foils
    assert curated["foils"].tolist() == first["foils"].tolist()[:2]
    every = construction.build_benchmark(coco, caption_choice="first_with_word", progress=False)
    assert every["caption"].tolist() == ["A red bus.", "A blue kite", "Black and white photo of a dog",
                                         "A man standing near a tan dog", "A green car"]
    assert len(construction.build_benchmark(coco, caption_choice="all", progress=False)) == 6
    gender = construction.build_benchmark(coco, foil_type_name="gender", caption_choice="first", progress=False)
    assert gender["foils"].tolist() == [["A woman standing near a tan dog"]]
    negation = construction.foil_type("negation").alternatives
    foils = distinct_foils("A dog IS running and cats are asleep.", negation, 4, np.random.default_rng(0))
    assert [f for f, _ in foils] == ["A dog IS NOT running and cats are not asleep."]


def test_benchmark_is_deterministic_and_round_trips(coco, tmp_path):
    a = construction.build_benchmark(coco, seed=5, progress=False)
    b = construction.build_benchmark(coco, seed=5, progress=False)
    assert a.equals(b) and not a["foils"].equals(construction.build_benchmark(coco, seed=6, progress=False)["foils"])
    path = construction.save_benchmark(a, tmp_path / "out", "colorfoil-coco")
    assert path.name == f"colorfoil-coco-v{construction.BENCHMARK_VERSION}.jsonl"
    back = construction.load_benchmark(path)
    assert back["foils"].tolist() == a["foils"].tolist() and back["image_id"].tolist() == a["image_id"].tolist()
    assert back.attrs["seed"] == 5 and back.attrs["n_pairs"] == 5


# --------------------------------------------------------------------------- measures

def test_f1_relation_reproduces_the_published_table():
    check = evaluation.published_f1_check(published("colorfoil_table1_samin2024"))
    assert len(check) == 42
    # 40 of 42 printed F1s are 2a/(1+a) of the printed accuracy; the two 1-foil COCO rows of ALIGN
    # and AltCLIP are not (0.9249 printed 0.93, 0.9095 printed 0.92): pinned so a change shows
    wrong = check[~check["agrees at 2 decimals"]]
    assert sorted(zip(wrong["model"], wrong["dataset"], wrong["foils"])) == [("ALIGN", "coco", 1), ("AltCLIP", "coco", 1)]
    assert check["2a/(1+a)"].sub(check["published F1"]).abs().max() < 0.011


def test_f1_relation_is_f1_of_the_all_positive_reading():
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    for p in (0.1, 0.5, 0.83, 1.0):
        correct = rng.random(200) < p
        assert evaluation.f1_all_positive(correct) == pytest.approx(f1_score(np.ones(200), correct))
        assert evaluation.f1_from_accuracy(correct.mean()) == pytest.approx(evaluation.f1_all_positive(correct))


def test_accuracy_auroc_and_margin_on_hand_built_scores():
    from sklearn.metrics import roc_auc_score

    scores = np.array([[0.9, 0.1, 0.2, 0.3, 0.95],
                       [0.5, 0.6, 0.1, 0.1, 0.1],
                       [0.4, 0.3, 0.4, 0.2, 0.1],   # a tie with foil 2 counts as wrong
                       [0.7, 0.2, np.nan, np.nan, np.nan]])
    usable, correct = evaluation.correct_at(scores, 1)
    assert usable.all() and correct.tolist() == [True, False, True, True]
    usable, correct = evaluation.correct_at(scores, 2)
    assert usable.tolist() == [True, True, True, False] and correct.tolist() == [True, False, False]
    assert evaluation.correct_at(scores, 4)[1].tolist() == [False, False, False]
    row = evaluation.evaluation_row(scores, 2)
    assert row["n"] == 3 and row["accuracy_%"] == pytest.approx(100 / 3)
    low, high = stats.binomtest(1, 3).proportion_ci(method="wilson")
    assert (row["ci_low_%"], row["ci_high_%"]) == pytest.approx((100 * low, 100 * high))
    labels = np.r_[np.ones(3), np.zeros(6)]
    values = np.r_[scores[:3, 0], scores[:3, 1:3].ravel()]
    assert row["detection_auroc"] == pytest.approx(roc_auc_score(labels, values))
    assert row["mean_margin"] == pytest.approx(np.mean([0.9 - 0.2, 0.5 - 0.6, 0.0]))


def _benchmark(words, replacements):
    return pd.DataFrame({"image_id": range(len(words)), "caption": [f"c{i}" for i in range(len(words))],
                         "words": words, "replacements": replacements,
                         "foils": [[f"f{i}{j}" for j in range(len(r))] for i, r in enumerate(replacements)]})


def test_confusion_matrix_and_per_colour_accuracy():
    bench = _benchmark([["red"], ["red"], ["gray"], ["red", "blue"]],
                       [["red->blue", "red->green"], ["red->blue", "red->grey"], ["gray->red", "gray->blue"],
                        ["red->pink; blue->black", "red->white; blue->red"]])
    scores = np.array([[1.0, 2.0, 0.0], [1.0, 0.5, 1.0], [0.0, -1.0, 0.0], [1.0, 2.0, 0.0]])
    rates, counts = evaluation.colour_confusion(bench, scores, k=2)
    assert counts.loc["red", "blue"] == 2 and rates.loc["red", "blue"] == 0.5
    assert rates.loc["red", "green"] == 0 and rates.loc["red", "grey"] == 1  # ties are errors
    assert rates.loc["grey", "blue"] == 1 and "pink" not in rates.columns     # gray -> grey; two-colour row left out
    both, _ = evaluation.colour_confusion(bench, scores, k=2, single_word_only=False)
    assert both.loc["red", "pink"] == 1 and both.loc["blue", "black"] == 1 and both.loc["red", "white"] == 0
    per = evaluation.per_colour_accuracy(bench, scores, k=1).set_index("colour")
    assert per.loc["red", "n"] == 3 and per.loc["red", "accuracy_%"] == pytest.approx(100 / 3)
    assert per.loc["grey", "accuracy_%"] == 100 and per.loc["blue", "n"] == 1
    wrong = evaluation.wrong_examples(bench, scores, k=1, n=5)
    assert wrong["caption"].tolist() == ["c0", "c3"] and wrong["foil"].tolist() == ["f00", "f30"]


# --------------------------------------------------------------------------- scoring through the model layer

def test_dual_and_pairwise_paths_score_alike(coco):
    """A matcher whose match logit is the dual encoder's cosine must give the very same scores."""
    from vlbias.models import load_image_text_model
    from vlbias.models.image_text import PairwiseMatcher

    dual = load_image_text_model("tiny:clip", device="cpu")

    class CosineMatcher(PairwiseMatcher):
        def _match(self, images, texts):
            import torch

            a = dual.encode_images(images, progress=False)
            b = dual.encode_texts(texts, progress=False)
            return torch.from_numpy((a * b).sum(axis=1))

    matcher = CosineMatcher("cosine-matcher", dual.device, dual.torch_dtype, "same")
    bench = construction.build_benchmark(coco, progress=False)
    by_dual = evaluation.score_benchmark(dual, coco, bench, cache=False, progress=False)
    by_pairs = evaluation.score_benchmark(matcher, coco, bench, batch_size=3, cache=False, progress=False)
    np.testing.assert_allclose(by_dual, by_pairs, atol=1e-5)
    # and both equal the cosines computed by hand from the embeddings
    image = dual.encode_images([coco.image(int(bench["image_index"].iat[1]))], progress=False)[0]
    texts = dual.encode_texts([bench["caption"].iat[1]] + bench["foils"].iat[1], progress=False)
    np.testing.assert_allclose(by_dual[1], texts @ image, atol=1e-5)
    cached = evaluation.score_benchmark(dual, coco, bench, chunk_size=2, progress=False)
    np.testing.assert_allclose(cached, by_dual, atol=1e-6)


def test_benchmarks_are_read_where_construction_saved_them_or_rebuilt_alike(coco, tmp_path):
    options = dict(colour_selection="css3", seed=3, max_foils=2, progress=False)
    built = construction.benchmarks_for({"coco": coco}, None, foil_type_name="colour",
                                        caption_choices={"coco": "first"}, **options)
    construction.save_benchmark(built["coco"], tmp_path / "bench", construction.benchmark_name("colour", "coco"))
    read = construction.benchmarks_for({"coco": coco}, tmp_path / "bench", foil_type_name="colour")
    assert read["coco"]["foils"].tolist() == built["coco"]["foils"].tolist() == \
        construction.build_benchmark(coco, caption_choice="first", **options)["foils"].tolist()
    every = construction.benchmarks_for({"coco": coco}, caption_choices={"coco": "all"}, progress=False)
    assert len(every["coco"]) == 6  # the data set's own caption choice is used


def test_data_sets_without_a_foilable_caption_are_left_out_and_none_left_is_an_error(coco):
    benchmarks = {"coco": construction.build_benchmark(coco, progress=False),
                  "other": construction.build_benchmark(coco, progress=False).iloc[:0]}
    kept, empty = construction.with_foils({"coco": coco, "other": coco}, benchmarks, "colour")
    assert list(kept) == ["coco"] and empty == ["other"]
    with pytest.raises(ValueError, match="No caption of any data set holds a colour word"):
        construction.with_foils({"other": coco}, benchmarks, "colour")
# --------------------------------------------------------------------------- issue 9: precision and ties

def test_ties_are_counted_and_scored_as_errors():
    scores = np.array([[0.5, 0.5], [0.6, 0.4], [0.3, 0.3], [0.1, 0.2]])
    row = evaluation.evaluation_row(scores, k=1)
    assert row["ties"] == 2 and row["n"] == 4 and row["accuracy_%"] == pytest.approx(25.0)


def test_precision_is_part_of_the_score_cache_key(coco, tmp_path, monkeypatch):
    """fp32 scores cached first must not come back for the same model run in fp16."""
    from vlbias.models import load_image_text_model

    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    bench = construction.build_benchmark(coco, progress=False)
    full = load_image_text_model("tiny:clip", device="cpu")
    half = load_image_text_model("tiny:clip", device="cpu", half=True)
    assert (full.dtype, half.dtype) == ("float32", "float16") and full.weights_id != half.weights_id
    by_full = evaluation.score_benchmark(full, coco, bench, progress=False)
    by_half = evaluation.score_benchmark(half, coco, bench, progress=False)
    fresh_half = evaluation.score_benchmark(half, coco, bench, cache=False, progress=False)
    np.testing.assert_array_equal(by_half, fresh_half)
    assert not np.array_equal(by_full, by_half)


# --------------------------------------------------------------------------- issue 9: truncation, failures

LONG_PREFIX = " ".join(["a man and a dog walk along the old road near the park"] * 4)  # > 40 WordPiece tokens


def test_foils_identical_after_truncation_are_excluded_and_counted(tmp_path):
    from vlbias.models import load_image_text_model

    _write_coco(tmp_path, {1: ["A red bus."], 2: [f"{LONG_PREFIX} and a red kite"]})
    coco = load_dataset("coco", tmp_path, split="val2017")
    bench = construction.build_benchmark(coco, max_foils=1, progress=False)
    vilt = load_image_text_model("tiny:vilt", device="cpu")  # reads 40 tokens, as ViLT does
    cut = evaluation.truncated_foils(vilt, bench, max_foils=1)
    assert cut[:, 0].tolist() == [False, True]
    kept = evaluation.score_benchmark(vilt, coco, bench, max_foils=1, cache=False, progress=False)
    raw = evaluation.score_benchmark(vilt, coco, bench, max_foils=1, cache=False, progress=False,
                                     exclude_truncated=False)
    assert raw[1, 0] == raw[1, 1]            # the tie the truncation makes: an "error" before
    assert np.isnan(kept[1, 1]) and not np.isnan(kept[0, 1])
    usable, _ = evaluation.correct_at(kept, 1)
    assert usable.tolist() == [True, False]


def test_a_failing_model_gives_a_failure_row_and_the_others_still_score(coco):
    bench = construction.build_benchmark(coco, progress=False)
    scores, kinds, failures, truncated = evaluation.score_models(
        ["tiny:clip", "tiny:no-such-model", "tiny:vilt"], {"coco": coco}, {"coco": bench},
        device="cpu", progress=False)
    assert sorted(kinds) == ["tiny:clip", "tiny:vilt"] and ("tiny:vilt", "coco") in scores
    assert failures["model"].tolist() == ["tiny:no-such-model"] and failures["stage"].tolist() == ["load"]
    assert "no-such-model" in failures["error"].iat[0]
    assert truncated["model"].tolist() == ["tiny:clip", "tiny:vilt"] and (truncated["dtype"] == "float32").all()


# --------------------------------------------------------------------------- issue 9: construction


def test_default_is_the_papers_first_caption_with_a_colour_word(coco):
    default = construction.build_benchmark(coco, progress=False)
    assert default.attrs["caption_choice"] == "first_with_word"
    assert default["caption"].tolist() == ["A red bus.", "A blue kite", "Black and white photo of a dog",
                                           "A man standing near a tan dog", "A green car"]


def test_released_code_detection_is_exact_case_sensitive_tokens():
    names = construction.colour_vocabulary("css3")
    assert construction.released_code_colours("A red bus.", names) == ["red"]
    assert construction.released_code_colours("A bus that is red.", names) == []       # "red." is not a token
    assert construction.released_code_colours("Red and white kite", names) == ["white"]  # "Red" is not "red"
    assert construction.released_code_colours("A colored kite", names) == []           # no substring matches
    assert construction.substring_colours("A colored kite", names) == ["red"]


def test_released_code_replacement_has_the_substring_bug():
    rng = np.random.default_rng(0)
    foils = construction.released_code_foils("a red bird on a colored red fence", ["red", "red"],
                                             ["blue"] * 1 + ["red"], 4, rng)
    assert foils == [("a blue bird on a coloblue blue fence", {"red": "blue"})]
    several = construction.released_code_foils("a red car", ["red"], list(construction.FOIL_TARGETS), 4,
                                               np.random.default_rng(1))
    assert len({f for f, _ in several}) == 4 and all("red" not in f for f, _ in several)


def test_released_code_construction_and_its_counts(tmp_path):
    _write_coco(tmp_path, {
        1: ["A bus that is red.", "A red bus"],           # released code: caption #1 (token "red")
        2: ["A Red kite", "A kite"],                      # ours finds "Red"; the released code nothing
        3: ["a red bird on a colored fence", "x"],        # both find "red"; its str.replace hits "colored"
    })
    coco = load_dataset("coco", tmp_path, split="val2017")
    ours = construction.build_benchmark(coco, progress=False)
    released = construction.build_benchmark(coco, construction="released-code", max_foils=1, progress=False)
    assert ours["caption"].tolist() == ["A bus that is red.", "A Red kite", "a red bird on a colored fence"]
    assert released["caption"].tolist() == ["A red bus", "a red bird on a colored fence"]
    assert "colo" + released["replacements"].iat[1][0].split("->")[1] in released["foils"].iat[1][0]
    counts = construction.construction_counts(coco, ours, released_code=released)
    assert counts["images"] == 3 and counts["with a colour word (whole word, ours)"] == 3
    assert counts["with a colour word (released code: exact token)"] == 2
    assert counts["benchmark pairs (released-code construction)"] == 2
    table = construction.counts_beside_published({"coco": counts}, published("colorfoil_counts_samin2024"))
    assert table.loc["with a colour word (released code: exact token)", "coco (published)"] == 2511
    assert table.loc["images", "coco (published)"] == 5000
    with pytest.raises(ValueError, match="construction"):
        construction.build_benchmark(coco, construction="substring", progress=False)


def test_foil_comparisons_row_by_row_with_missing_foils_and_defaults():
    # a two-colour caption first (skipped, the others still counted); row 1 lacks its first foil
    # (the second still counts); row 2 has five foils (the default k = 4 reads four)
    bench = _benchmark([["red", "blue"], ["red"], ["pink"]],
                       [["red->pink; blue->black"], ["red->blue", "red->green"],
                        ["pink->a", "pink->b", "pink->c", "pink->d", "pink->e"]])
    scores = np.array([[1.0, 2.0, np.nan, np.nan, np.nan, np.nan],
                       [1.0, np.nan, 1.0, np.nan, np.nan, np.nan],
                       [1.0, 0.0, 2.0, 0.5, 1.0, 3.0]])
    expected = pd.DataFrame({"row": [1, 2, 2, 2, 2], "original": ["red"] + ["pink"] * 4,
                             "foil": ["green", "a", "b", "c", "d"], "error": [True, False, True, False, True]})
    pd.testing.assert_frame_equal(evaluation.foil_comparisons(bench, scores), expected)
    # a missing second foil is skipped (not read as a comparison with the caption); no rows keep the columns
    second_missing = _benchmark([["red"]], [["red->blue", "red->pink"]])
    assert evaluation.foil_comparisons(second_missing, np.array([[1.0, 0.5, np.nan]]))["foil"].tolist() == ["blue"]
    columns = evaluation.foil_comparisons(bench.iloc[:1], scores[:1]).columns.tolist()
    assert columns == ["row", "original", "foil", "error"]
    rates, counts = evaluation.colour_confusion(bench, scores)
    pd.testing.assert_frame_equal(counts, pd.DataFrame([[1, 1, 1, 1, 0], [0, 0, 0, 0, 1]], dtype="int64",
                                                       index=pd.Index(["pink", "red"], name="original"),
                                                       columns=pd.Index(list("abcd") + ["green"], name="foil")),
                                  check_like=True)
    assert rates.loc["pink", "b"] == 1.0 and rates.loc["pink", "a"] == 0.0 and np.isnan(rates.loc["red", "a"])
    assert rates.loc["red", "green"] == 1.0
    everything = evaluation.foil_comparisons(bench, scores, k=1, single_word_only=False)
    assert everything[["row", "original", "foil"]].values.tolist() == [
        [0, "red", "pink"], [0, "blue", "black"], [2, "pink", "a"]]


def test_per_colour_accuracy_defaults_order_and_confidence():
    bench = _benchmark([["red"], ["blue"], ["red"], ["blue"], ["green"]], [["x->y", "x->z"]] * 5)
    scores = np.array([[1.0, 0.0, 2.0], [1.0, 0.0, 2.0], [0.0, 1.0, 2.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    table = evaluation.per_colour_accuracy(bench, scores)
    # k = 1 by default; most frequent first, ties alphabetical; a fresh 0..n-1 index
    assert table["colour"].tolist() == ["blue", "red", "green"] and table.index.tolist() == [0, 1, 2]
    assert table.columns.tolist() == ["colour", "n", "accuracy_%", "ci_low_%", "ci_high_%"]
    assert table["n"].tolist() == [2, 2, 1] and table["accuracy_%"].tolist() == [50.0, 50.0, 100.0]
    ci = stats.binomtest(1, 2).proportion_ci(confidence_level=0.95, method="wilson")
    assert table.loc[0, "ci_low_%"] == pytest.approx(100 * ci.low)
    at_90 = evaluation.per_colour_accuracy(bench, scores, confidence=0.90)
    ci = stats.binomtest(1, 2).proportion_ci(confidence_level=0.90, method="wilson")
    assert at_90.loc[0, "ci_high_%"] == pytest.approx(100 * ci.high)


def test_k_range_auroc_of_one_row_ties_and_empty_rows():
    with pytest.raises(ValueError, match="^k must be between 1 and 2, got 3$"):
        evaluation.correct_at(np.zeros((2, 3)), 3)
    one = np.array([[0.5, 0.2, 0.9], [0.3, np.nan, 0.1]])
    assert evaluation.detection_auroc(one, 2) == 0.5  # one usable row: the caption beats one of its two foils
    assert np.isnan(evaluation.detection_auroc(np.array([[0.5, np.nan]]), 1))
    row = evaluation.evaluation_row(np.array([[0.5, 0.5, 0.1], [0.7, 0.2, 0.1], [0.4, 0.4, 0.6]]), 1)
    assert row["ties"] == 2 and row["accuracy_%"] == pytest.approx(100 / 3)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no mean of an empty array behind the NaNs
        empty = evaluation.evaluation_row(np.array([[0.5, np.nan]]), 1)
    assert empty["n"] == 0 and np.isnan(empty["f1"]) and np.isnan(empty["mean_margin"])


def test_score_benchmark_caches_by_candidates_and_images_under_its_kind(coco, tmp_path, monkeypatch):
    from vlbias.models import load_image_text_model

    model = load_image_text_model("tiny:clip", device="cpu")
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    score_candidates = model.score_candidates
    monkeypatch.setattr(model, "score_candidates", lambda *a, **k: calls.append(1) or score_candidates(*a, **k))
    bench = construction.build_benchmark(coco, progress=False)
    assert len(bench) >= 2

    def fresh(table):
        return evaluation.score_benchmark(model, coco, table, cache=False, progress=False)

    uncached = fresh(bench)
    assert not (tmp_path / "cache").exists()  # cache=False writes nothing
    scores = evaluation.score_benchmark(model, coco, bench, progress=False)
    np.testing.assert_array_equal(scores, uncached)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["colorfoil"]  # under its own kind only
    n_calls = len(calls)
    np.testing.assert_array_equal(evaluation.score_benchmark(model, coco, bench, progress=False), scores)
    assert len(calls) == n_calls  # cached by default: no new scoring
    # other candidates (the foils reversed) or other images (two rows' images swapped): not the cached scores
    reversed_foils = bench.assign(foils=[list(reversed(f)) for f in bench["foils"]],
                                  replacements=[list(reversed(r)) for r in bench["replacements"]])
    images = bench["image_index"].to_numpy()
    other = int(np.flatnonzero(images != images[0])[0])  # a row of another image
    swapped = bench.assign(image_index=images[[other, *range(1, other), 0, *range(other + 1, len(bench))]])
    for table in (reversed_foils, swapped):
        n_calls = len(calls)
        np.testing.assert_allclose(evaluation.score_benchmark(model, coco, table, progress=False), fresh(table),
                                   atol=1e-6)
        assert len(calls) == n_calls + 2  # scored (not read from the cache), then scored fresh
    assert evaluation.score_benchmark(model, coco, bench.iloc[:0], progress=False).shape == (0, 5)
    # one row alone (float32 sums in another batch order)
    np.testing.assert_allclose(evaluation.score_benchmark(model, coco, bench.iloc[:1], progress=False), scores[:1],
                               atol=1e-6)


def test_f1_of_the_all_positive_reading_from_zeros_and_ones():
    assert evaluation.f1_all_positive([1, 0, 1]) == pytest.approx(2 * 2 / (2 * 2 + 1))  # integers, not only booleans
