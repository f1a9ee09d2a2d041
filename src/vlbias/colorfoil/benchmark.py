"""ColorFoil (Samin et al. 2024): colour-word foils of captions, and how models rank caption against foils.

Construction
    :func:`build_benchmark` takes one caption per image (or all of them), finds its colour words as
    whole words (case-insensitive; "colored" and "covered" hold none, "Red." does), and writes up to
    ``max_foils`` foils, distinct from each other and from the caption, in which every colour word is
    replaced by one of the ten targets that names another colour. Each caption draws from its own
    seeded generator, so a caption's foils do not depend on which other captions are in the set.
    ``foil_type`` swaps the same machinery to gender, size, emotion words or negation (the paper's
    future work).

Evaluation
    :func:`score_benchmark` scores every image against its caption and foils once (chunked and
    cached), and the 1/2/4-foil tasks read the first 1, 2, 4 foil columns: the foils are nested.
    An example is correct when the caption strictly outscores every foil.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from PIL import Image
from tqdm import tqdm

from .foils import COLOUR_ALIASES, alternatives_from_targets, distinct_foils, find_words, swap_alternatives

#: bump when the construction changes what a given seed produces
BENCHMARK_VERSION = 1

#: the ten foil targets of the paper, in its order
FOIL_TARGETS = ("blue", "black", "red", "pink", "yellow", "grey", "orange", "white", "green", "brown")

#: CSS3 names that captions mostly use for something else (food, plants, materials, places, "tan
#: lines", "snow"): left out by ``colour_selection="curated"``
NOT_USUALLY_COLOURS = (
    "snow", "tan", "olive", "chocolate", "salmon", "tomato", "lime", "orchid", "plum", "peru", "linen",
    "wheat", "bisque", "moccasin", "honeydew", "seashell", "thistle", "coral", "gold",
)


def css3_colour_names() -> list[str]:
    """The 147 CSS3 colour names, from ``webcolors.names("css3")`` (webcolors >= 24.6; the paper
    used webcolors 1.3's ``CSS3_NAMES_TO_HEX``, the same 147 names)."""
    import webcolors

    return sorted(webcolors.names("css3"))


def webcolors_version() -> str:
    from importlib.metadata import version

    return version("webcolors")


def colour_vocabulary(selection: str = "css3") -> list[str]:
    """The colour words searched for: ``"css3"`` (all 147 names, as the paper) or ``"curated"``
    (CSS3 less :data:`NOT_USUALLY_COLOURS`)."""
    names = css3_colour_names()
    if selection == "css3":
        return names
    if selection == "curated":
        return [name for name in names if name not in NOT_USUALLY_COLOURS]
    raise ValueError(f"colour_selection must be 'css3' or 'curated', got {selection!r}")


@dataclass(frozen=True)
class FoilType:
    name: str
    description: str
    alternatives: dict[str, list[str]]


_GENDER_PAIRS = [("man", "woman"), ("men", "women"), ("boy", "girl"), ("boys", "girls"), ("he", "she"),
                 ("his", "her"), ("him", "her"), ("male", "female"), ("gentleman", "lady"),
                 ("gentlemen", "ladies"), ("father", "mother"), ("son", "daughter"), ("husband", "wife")]
_SIZE_PAIRS = [("small", "large"), ("small", "big"), ("little", "big"), ("little", "large"), ("tall", "short"),
               ("huge", "tiny"), ("giant", "tiny")]
_EMOTION_PAIRS = [("smiling", "crying"), ("smiling", "frowning"), ("happy", "sad"), ("laughing", "crying"),
                  ("smiles", "cries")]


_NEGATIONS = {"is": ["is not"], "are": ["are not"]}


def foil_type(name: str = "colour", colour_selection: str = "css3",
              targets: Sequence[str] = FOIL_TARGETS) -> FoilType:
    """What gets replaced, and by what: ``"colour"`` (ColorFoil), ``"gender"``, ``"size"``, ``"emotion"``,
    ``"negation"``.

    Colour words become any target naming another colour; the others swap with their counterparts
    (man <-> woman), so a caption with one such word has a single foil.
    """
    if name in ("colour", "color"):
        return FoilType("colour", f"{colour_selection} colour names -> the {len(targets)} targets",
                        alternatives_from_targets(colour_vocabulary(colour_selection), targets))
    if name == "negation":
        # "a man is playing" -> "a man is not playing": every "is"/"are" of the caption is negated
        return FoilType("negation", "is -> is not, are -> are not", dict(_NEGATIONS))
    pairs = {"gender": _GENDER_PAIRS, "size": _SIZE_PAIRS, "emotion": _EMOTION_PAIRS}.get(name)
    if pairs is None:
        raise ValueError(f"foil_type must be one of colour, gender, size, emotion, negation; got {name!r}")
    return FoilType(name, f"{name} swaps (" + ", ".join(f"{a}<->{b}" for a, b in pairs[:3]) + ", ...)",
                    swap_alternatives(pairs))


# --------------------------------------------------------------------------- construction

CAPTION_CHOICES = ("first", "first_with_word", "all")


def _caption_rows(dataset, caption_choice: str) -> list[tuple[int, object, object, int, str]]:
    """(image_index, image_id, caption_id, caption_number, caption) for the captions considered."""
    if caption_choice not in CAPTION_CHOICES:
        raise ValueError(f"caption_choice must be one of {CAPTION_CHOICES}, got {caption_choice!r}")
    frame = dataset.captions_frame()
    frame["caption_number"] = frame.groupby("image_index").cumcount()
    if caption_choice == "first":
        frame = frame[frame["caption_number"] == 0]
    return list(frame[["image_index", "image_id", "caption_id", "caption_number", "caption"]]
                .itertuples(index=False, name=None))


def grayscale_flags(dataset, positions: Iterable[int]) -> np.ndarray:
    """Whether each image file is stored with one channel (grayscale), read from its header only.

    The loaders hand every image to models as RGB; this only counts them, as the paper dropped four.
    """
    flags = []
    for position in positions:
        with Image.open(Path(dataset.root) / dataset.records["file"].iat[int(position)]) as image:
            flags.append(image.mode in ("1", "L", "LA", "I", "I;16", "F"))
    return np.asarray(flags, dtype=bool)


def substring_colours(text: str, vocabulary: Iterable[str]) -> list[str]:
    """Colour names occurring anywhere in ``text`` as substrings (a plain ``name in text`` test,
    which finds "red" in "colored" and "tan" in "standing"): the matching whole words replace."""
    lowered = text.lower()
    return [word for word in vocabulary if word.lower() in lowered]


def released_code_colours(caption: str, vocabulary: Iterable[str]) -> list[str]:
    """The colour words the released ColorFoil notebook detects: tokens of ``caption.split(' ')``
    that equal a CSS3 name exactly (case-sensitive: "Red" and "red." are not found), in order."""
    names = set(vocabulary)
    return [token for token in caption.split(" ") if token in names]


def released_code_foils(caption: str, words: Sequence[str], targets: Sequence[str], k: int,
                        rng: np.random.Generator) -> list[tuple[str, dict[str, str]]]:
    """Up to ``k`` distinct foils as the released notebook writes them: each detected word is replaced
    by a random target naming another colour with ``str.replace``, which also rewrites the word
    inside longer words ("red" in "colored" becomes "coloblue" when "red" is a token of the caption).
    The detection and the ``str.replace`` follow the reading of the released notebook in issue 9
    (the notebook itself was not available here); how targets are drawn for k distinct foils is ours.
    """
    words = list(dict.fromkeys(words))
    options = [[t for t in targets if t != word] for word in words]
    total = int(np.prod([len(o) for o in options], dtype=object)) if words else 0
    foils, seen = [], {caption}
    for number in (rng.permutation(total)[:4 * k] if total else []):
        number, mapping, foil = int(number), {}, caption
        for word, choices in zip(words, options):
            number, digit = divmod(number, len(choices))
            mapping[word] = choices[digit]
        for word, target in mapping.items():
            foil = foil.replace(word, target)
        if foil not in seen:
            seen.add(foil)
            foils.append((foil, mapping))
        if len(foils) == k:
            break
    return foils


CONSTRUCTIONS = ("ours", "released-code")


def build_benchmark(dataset, foil_type_name: str = "colour", colour_selection: str = "css3",
                    targets: Sequence[str] = FOIL_TARGETS, max_foils: int = 4, seed: int = 0,
                    caption_choice: str = "first_with_word", max_pairs: int | None = None,
                    progress: bool = True, construction: str = "ours") -> pd.DataFrame:
    """The benchmark rows of a caption data set (COCO or Flickr30k loader).

    ``caption_choice``: ``"first_with_word"`` (the paper's choice, and the default: each image's first
    caption that holds a word to foil; the paper's 5,000 COCO images of which 2,511 have one),
    ``"first"`` (each image's caption #0, kept when it holds one) or ``"all"`` (every caption).
    ``construction``: ``"ours"`` (whole words, any case, replaced in the caption's casing) or
    ``"released-code"`` (the released notebook: exact case-sensitive tokens of ``caption.split(' ')``,
    replaced with ``str.replace``; colour foils only; see :func:`released_code_colours` and
    :func:`released_code_foils`). Columns: ``dataset, image_index, image_id, caption_id, caption, words,
    foils, replacements, n_foils, grayscale``; ``foils`` holds up to ``max_foils`` foils, nested (the
    k-foil task uses the first k). ``attrs`` record the settings.
    """
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"construction must be one of {CONSTRUCTIONS}, got {construction!r}")
    kind = foil_type(foil_type_name, colour_selection, targets)
    if construction == "released-code" and kind.name != "colour":
        raise ValueError("construction='released-code' reproduces the colour foils only; use foil_type_name='colour'.")
    vocabulary = list(kind.alternatives)
    rows, taken_images = [], set()
    for image_index, image_id, caption_id, number, caption in tqdm(
            _caption_rows(dataset, caption_choice), desc=f"foiling {dataset.name}", disable=not progress,
            leave=False):
        if caption_choice == "first_with_word" and image_index in taken_images:
            continue
        # one generator per caption, keyed by its place: adding or removing other captions (another
        # colour selection, another max_pairs) never changes this caption's foils
        rng = np.random.default_rng([seed, int(image_index), int(number)])
        if construction == "released-code":
            words = released_code_colours(caption, colour_vocabulary(colour_selection))
            made = released_code_foils(caption, words, list(targets), max_foils, rng)
        else:
            words = find_words(caption, vocabulary)
            made = distinct_foils(caption, kind.alternatives, max_foils, rng, vocabulary)
        if not made:
            continue
        taken_images.add(image_index)
        rows.append({
            "dataset": dataset.name, "image_index": int(image_index), "image_id": image_id,
            "caption_id": caption_id, "caption": caption, "words": list(dict.fromkeys(words)),
            "foils": [foil for foil, _ in made],
            "replacements": ["; ".join(f"{a}->{b}" for a, b in mapping.items()) for _, mapping in made],
            "n_foils": len(made),
        })
        if max_pairs is not None and len(rows) >= max_pairs:
            break
    frame = pd.DataFrame(rows, columns=["dataset", "image_index", "image_id", "caption_id", "caption", "words",
                                        "foils", "replacements", "n_foils"])
    frame["grayscale"] = grayscale_flags(dataset, frame["image_index"]) if len(frame) else np.zeros(0, bool)
    frame.attrs.update(version=BENCHMARK_VERSION, dataset=dataset.name, split=dataset.split,
                       dataset_identity=dataset.identity, foil_type=kind.name, colour_selection=colour_selection,
                       targets=list(targets), max_foils=max_foils, seed=seed, caption_choice=caption_choice,
                       max_pairs=max_pairs, construction=construction)
    return frame


def construction_counts(dataset, benchmark: pd.DataFrame, colour_selection: str = "css3",
                        released_code: pd.DataFrame | None = None) -> dict[str, int]:
    """How many images and captions were considered, how many hold a colour word as a whole word
    (ours), as an exact token of ``caption.split(' ')`` (the released notebook's test) and as a
    substring (a plain ``in`` test), and how many grayscale images were kept. With the images counted
    per image when the benchmark takes each image's first caption that holds a colour word.
    ``released_code``: the same data set built with ``construction="released-code"``, whose pair
    count is added."""
    choice = benchmark.attrs.get("caption_choice", "first")
    # "first_with_word" looks through all captions; compare the matchers on the same ones
    considered = _caption_rows(dataset, "all" if choice == "first_with_word" else choice)
    vocabulary = colour_vocabulary(colour_selection)

    def holding(test) -> int:
        if choice == "first_with_word":  # images with such a caption, as the paper counts pairs
            return len({row[0] for row in considered if test(row[4])})
        return sum(bool(test(row[4])) for row in considered)

    counts = {"images": len(dataset), "captions considered": len(considered),
              "with a colour word (substring test)": holding(lambda c: substring_colours(c, vocabulary)),
              "with a colour word (released code: exact token)": holding(lambda c: released_code_colours(c, vocabulary)),
              "with a colour word (whole word, ours)": holding(lambda c: find_words(c, vocabulary)),
              "benchmark pairs": len(benchmark)}
    if released_code is not None:
        counts["benchmark pairs (released-code construction)"] = len(released_code)
    counts.update({"grayscale images (kept here, dropped in the paper)": int(benchmark["grayscale"].sum()),
                   "pairs with 4 distinct foils": int((benchmark["n_foils"] >= 4).sum())})
    return counts


def selection_differences(captions: Iterable[str]) -> pd.DataFrame:
    """The captions whose colour words differ between the CSS3 and the curated selection."""
    css3, curated = colour_vocabulary("css3"), colour_vocabulary("curated")
    rows = []
    for caption in captions:
        a, b = find_words(caption, css3), find_words(caption, curated)
        if a != b:
            rows.append({"caption": caption, "css3 words": ", ".join(a),
                         "curated words": ", ".join(b) or "(none: caption dropped)"})
    return pd.DataFrame(rows, columns=["caption", "css3 words", "curated words"])


def considered_captions(dataset, caption_choice: str = "first") -> list[str]:
    """The captions :func:`build_benchmark` looks at for this ``caption_choice``."""
    choice = "all" if caption_choice == "first_with_word" else caption_choice
    return [row[4] for row in _caption_rows(dataset, choice)]


def word_frequencies(benchmark: pd.DataFrame) -> pd.Series:
    """How many benchmark captions hold each word (canonical spelling: gray -> grey)."""
    words = benchmark["words"].explode().dropna().map(lambda w: COLOUR_ALIASES.get(w, w))
    return words.value_counts()


def save_benchmark(benchmark: pd.DataFrame, directory: str | Path, name: str) -> Path:
    """``<directory>/<name>-v<version>.jsonl`` (one row per caption) and a ``.meta.json`` beside it
    with the settings; both written whole to a temporary name first."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-v{BENCHMARK_VERSION}.jsonl"
    columns = ["image_index", "image_id", "caption_id", "caption", "words", "foils", "replacements", "n_foils",
               "grayscale"]
    records = benchmark[columns].to_dict(orient="records")
    text = "".join(json.dumps(_plain(r), ensure_ascii=False) + "\n" for r in records)
    for target, content in ((path, text), (path.with_suffix(".meta.json"),
                                           json.dumps(_plain(dict(benchmark.attrs, n_pairs=len(benchmark))),
                                                      indent=1))):
        temporary = target.with_name("." + target.name + ".tmp")
        temporary.write_text(content, encoding="utf-8")
        temporary.replace(target)
    return path


def benchmark_name(foil_type_name: str, dataset_name: str) -> str:
    """The file stem under which the construction page (02a) saves a benchmark and 02b finds it."""
    return f"colorfoil-{foil_type_name}-{dataset_name}"


def benchmarks_for(datasets: Mapping[str, object], benchmark_dir: str | Path | None = None, *,
                   foil_type_name: str = "colour", caption_choices: Mapping[str, str] | None = None,
                   **build_options) -> dict[str, pd.DataFrame]:
    """The benchmark of every data set (name -> COCO or Flickr30k loader): read from ``benchmark_dir``
    where the construction page saved them, or, when it is None, built again with
    :func:`build_benchmark` (``build_options``: ``seed``, ``targets``, ... ; the same seed gives the
    same foils). ``caption_choices`` gives each data set's ``caption_choice``.

    Defined for ``02b_colorfoil_evaluation``.
    """
    if benchmark_dir:
        return {name: load_benchmark(Path(benchmark_dir) / f"{benchmark_name(foil_type_name, name)}-v{BENCHMARK_VERSION}.jsonl")
                for name in datasets}
    choices = caption_choices or {}
    return {name: build_benchmark(dataset, foil_type_name=foil_type_name, caption_choice=choices.get(name, "first"),
                                  **build_options)
            for name, dataset in datasets.items()}


def with_foils(datasets: Mapping[str, object], benchmarks: Mapping[str, pd.DataFrame],
               foil_type_name: str = "colour") -> tuple[dict[str, object], list[str]]:
    """The data sets whose benchmark has at least one pair, and the names of those left out.

    Raises ``ValueError`` when none is left: no caption holds a word of the foil type, so there is
    nothing to evaluate. Defined for ``02b_colorfoil_evaluation``.
    """
    empty = [name for name in datasets if not len(benchmarks[name])]
    kept = {name: dataset for name, dataset in datasets.items() if name not in empty}
    if not kept:
        raise ValueError(f"No caption of any data set holds a {foil_type_name} word: nothing to evaluate. "
                         "Choose another foil_type or data set.")
    return kept, empty


def load_benchmark(path: str | Path) -> pd.DataFrame:
    """A benchmark written by :func:`save_benchmark`, with its settings in ``attrs``."""
    path = Path(path)
    frame = pd.read_json(path, lines=True, dtype=False)
    meta_path = path.with_suffix(".meta.json")
    if meta_path.exists():
        frame.attrs.update(json.loads(meta_path.read_text(encoding="utf-8")))
    frame.insert(0, "dataset", frame.attrs.get("dataset", ""))
    return frame


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# --------------------------------------------------------------------------- scoring


def candidate_lists(benchmark: pd.DataFrame, max_foils: int) -> list[list[str]]:
    """``[caption, foil_1, ..., foil_max]`` per row; rows with fewer foils repeat the caption in the
    missing places (their scores are blanked by :func:`score_benchmark`)."""
    return [[caption] + list(foils[:max_foils]) + [caption] * (max_foils - min(len(foils), max_foils))
            for caption, foils in zip(benchmark["caption"], benchmark["foils"])]


def score_benchmark(model, dataset, benchmark: pd.DataFrame, max_foils: int = 4, batch_size: int = 32,
                    chunk_size: int = 256, cache: bool = True, progress: bool = True,
                    exclude_truncated: bool = True) -> np.ndarray:
    """(n_rows, 1 + max_foils) scores: column 0 the caption, then the foils; NaN where a row has no
    such foil, and (``exclude_truncated``) where the model's text truncation makes the foil identical
    to the caption (:func:`truncated_foils`). Dual encoders embed each image and each distinct text once per chunk; matchers score
    the pairs in batches. Chunks are cached, so an interrupted run resumes."""
    from ..cache import cache_key, compute_chunked
    from ..embeddings import texts_identity

    candidates = candidate_lists(benchmark, max_foils)
    positions = benchmark["image_index"].to_numpy()
    images = dataset.images(positions)
    key = cache_key("colorfoil-scores", BENCHMARK_VERSION, model, images=images.identity,
                    candidates=texts_identity([json.dumps(row) for row in candidates]))

    def compute(start: int, stop: int) -> np.ndarray:
        return np.asarray(model.score_candidates(list(images[start:stop]), candidates[start:stop],
                                                 batch_size=batch_size, progress=False), dtype=np.float32)

    scores = compute_chunked(key, len(candidates), compute, chunk_size=chunk_size, progress=progress,
                             cache=cache, kind="colorfoil", desc=f"ColorFoil scores ({model.spec})").astype(np.float64)
    if len(scores) == 0:
        return np.zeros((0, 1 + max_foils))
    n_foils = np.minimum(benchmark["n_foils"].to_numpy(), max_foils)
    scores[np.arange(max_foils + 1)[None, :] > n_foils[:, None]] = np.nan
    if exclude_truncated:
        scores[:, 1:][truncated_foils(model, benchmark, max_foils)] = np.nan
    return scores


def truncated_foils(model, benchmark: pd.DataFrame, max_foils: int = 4) -> np.ndarray:
    """(n_rows, max_foils) bool: the foils that reach the model as the very same tokens as their
    caption, because the colour word lies past the model's text limit (ViLT reads 40 tokens, CLIP
    77). Their caption/foil scores tie and would count as errors; :func:`score_benchmark` leaves
    them out (NaN), so the row drops out of the k-foil tasks that include that foil. A model without
    ``text_token_ids`` is taken to read every text whole."""
    captions = list(benchmark["caption"])
    foils = [list(f[:max_foils]) for f in benchmark["foils"]]
    flags = np.zeros((len(captions), max_foils), dtype=bool)
    if not captions:
        return flags
    distinct = list(dict.fromkeys(captions + [f for row in foils for f in row]))
    try:
        ids = dict(zip(distinct, model.text_token_ids(distinct)))
    except (NotImplementedError, AttributeError):  # a model that does not expose its tokens: taken to read them whole
        return flags
    for row, (caption, row_foils) in enumerate(zip(captions, foils)):
        for j, foil in enumerate(row_foils):
            flags[row, j] = ids[foil] == ids[caption]
    return flags


def score_models(model_specs: Sequence[str], datasets: Mapping[str, object], benchmarks: Mapping[str, pd.DataFrame],
                 max_foils: int = 4, batch_size: int = 32, device=None, half: bool = False,
                 progress: bool = True) -> tuple[dict, dict, pd.DataFrame, pd.DataFrame]:
    """:func:`score_benchmark` for every model on every data set.

    Returns ``(scores, kinds, failures, truncated)``: ``scores[(spec, dataset)]``, ``kinds[spec]``
    (dual or pairwise), ``failures`` (one row per model that failed to load or run, with the reason;
    the others still score) and ``truncated`` (per model and data set, the foils that the model's
    text truncation made identical to their caption, left out of the scores; see
    :func:`truncated_foils`).
    """
    from ..models import for_each_model

    def score_all(spec, model):
        out, cut = {}, {}
        for name, dataset in datasets.items():
            out[name] = score_benchmark(model, dataset, benchmarks[name], max_foils=max_foils,
                                        batch_size=batch_size, progress=progress)
            cut[name] = truncated_foils(model, benchmarks[name], max_foils)
        return model.kind, model.dtype, out, cut

    results, failures = for_each_model(model_specs, score_all, device=device, half=half)
    scores, kinds, truncated = {}, {}, []
    for spec, (kind, dtype, out, cut) in results.items():
        kinds[spec] = kind
        for name in out:
            scores[spec, name] = np.asarray(out[name])
            truncated.append({"model": spec, "dtype": dtype, "dataset": name, "rows": len(out[name]),
                              "rows with a foil identical after truncation": int(cut[name].any(axis=1).sum()),
                              "foils identical after truncation": int(cut[name].sum())})
    truncated = pd.DataFrame(truncated, columns=["model", "dtype", "dataset", "rows",
                                                 "rows with a foil identical after truncation",
                                                 "foils identical after truncation"])
    return scores, kinds, failures, truncated


def correct_at(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows that have k foils, whether the caption strictly beats each of its first k foils there)."""
    scores = np.asarray(scores, dtype=float)
    if not 1 <= k < scores.shape[1]:
        raise ValueError(f"k must be between 1 and {scores.shape[1] - 1}, got {k}")
    usable = ~np.isnan(scores[:, 1:k + 1]).any(axis=1)
    correct = scores[usable, 0] > scores[usable, 1:k + 1].max(axis=1)
    return usable, correct


def f1_from_accuracy(accuracy):
    """Table 1's F1 from its accuracy (a fraction): ``2a / (1 + a)``.

    Read each example as a positive ("the caption is the true one"), a correct ranking as a true
    positive and a wrong one as a false negative. There are no negatives, so no false positives:
    precision is 1, recall is the accuracy, and F1 = 2·1·a / (1 + a). It adds nothing to accuracy.
    """
    accuracy = np.asarray(accuracy, dtype=float)
    return 2 * accuracy / (1 + accuracy)


def f1_all_positive(correct) -> float:
    """F1 from its definition for the reading in :func:`f1_from_accuracy` (true label 1 everywhere,
    prediction 1 where the caption won)."""
    correct = np.asarray(correct, dtype=bool)
    true_positive, false_negative, false_positive = correct.sum(), (~correct).sum(), 0
    return float(2 * true_positive / (2 * true_positive + false_positive + false_negative))


def detection_auroc(scores: np.ndarray, k: int) -> float:
    """Caption-versus-foil detection, threshold-free: the probability that a caption, taken at random,
    scores above a foil taken at random from any image (ties count one half), over the rows with k
    foils. Unlike accuracy it compares across images, so it asks whether a score means "true" on
    its own (VALSE's caption/foil detection without a threshold), and is not a function of accuracy."""
    scores = np.asarray(scores, dtype=float)
    usable, _ = correct_at(scores, k)
    captions, foils = scores[usable, 0], scores[usable, 1:k + 1].ravel()
    if len(captions) == 0:
        return float("nan")
    # Mann-Whitney U through average ranks: O(n log n), exact with ties
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([captions, foils]))
    u = ranks[:len(captions)].sum() - len(captions) * (len(captions) + 1) / 2
    return float(u / (len(captions) * len(foils)))


def evaluation_row(scores: np.ndarray, k: int, confidence: float = 0.95) -> dict:
    """n, accuracy with its Wilson interval (percent), F1 as the paper computes it, detection AUROC,
    the mean caption-minus-best-foil margin, and ``ties``: examples whose caption and best foil score
    exactly the same (counted as errors; half precision makes them common, so they are reported)."""
    from ..stats import accuracy_summary

    usable, correct = correct_at(scores, k)
    summary = accuracy_summary(correct, confidence)
    margin = scores[usable, 0] - scores[usable, 1:k + 1].max(axis=1)
    return {**summary, "ties": int((margin == 0).sum()),
            "f1": float(f1_from_accuracy(correct.mean())) if correct.size else float("nan"),
            "detection_auroc": detection_auroc(scores, k),
            "mean_margin": float(margin.mean()) if margin.size else float("nan")}


def evaluation_table(scores: Mapping[tuple[str, str], np.ndarray], foil_counts: Sequence[int] = (1, 2, 4),
                     confidence: float = 0.95) -> pd.DataFrame:
    """One row per (model, dataset, k) from ``{(model, dataset): scores}``."""
    rows = [{"model": model, "dataset": dataset, "foils": k, **evaluation_row(matrix, k, confidence)}
            for (model, dataset), matrix in scores.items() for k in foil_counts if k < matrix.shape[1]]
    return pd.DataFrame(rows)


def published_f1_check(published_table: pd.DataFrame) -> pd.DataFrame:
    """Every published (model, dataset, foils): its accuracy, its printed F1, ``2a/(1+a)`` from the
    printed accuracy, and whether the two agree at the printed two decimals."""
    wide = published_table.pivot_table(index=["model", "dataset", "foils"], columns="measure", values="value")
    wide = wide.reset_index().rename(columns={"accuracy_%": "published accuracy_%", "f1": "published F1"})
    wide["2a/(1+a)"] = f1_from_accuracy(wide["published accuracy_%"] / 100)
    # half-up rounding at two decimals, as a table prints; a tiny epsilon absorbs binary fractions
    wide["agrees at 2 decimals"] = np.floor(wide["2a/(1+a)"] * 100 + 0.5 + 1e-9) / 100 == wide["published F1"]
    return wide


# --------------------------------------------------------------------------- errors, confusions


def wrong_examples(benchmark: pd.DataFrame, scores: np.ndarray, k: int = 1, n: int = 5,
                   seed: int = 0) -> pd.DataFrame:
    """Up to ``n`` rows (seeded sample) where a foil scored at least as high as the caption: the
    caption, the foil that won, and the two scores (Table 2)."""
    usable, correct = correct_at(scores, k)
    rows = np.flatnonzero(usable)[~correct]
    if len(rows) > n:
        rows = np.sort(np.random.default_rng(seed).choice(rows, size=n, replace=False))
    out = []
    for row in rows:
        best = int(np.nanargmax(scores[row, 1:k + 1]))
        out.append({"image_id": benchmark["image_id"].iat[row], "caption": benchmark["caption"].iat[row],
                    "foil": benchmark["foils"].iat[row][best], "caption score": scores[row, 0],
                    "foil score": scores[row, 1 + best]})
    return pd.DataFrame(out, columns=["image_id", "caption", "foil", "caption score", "foil score"])


def _canonical(word: str) -> str:
    return COLOUR_ALIASES.get(word, word)


def foil_comparisons(benchmark: pd.DataFrame, scores: np.ndarray, k: int = 4,
                     single_word_only: bool = True) -> pd.DataFrame:
    """One row per (caption, foil) comparison among the first ``k`` foils: ``original``, ``foil``
    colour and whether the foil scored at least as high as the caption (``error``).

    With ``single_word_only`` only captions with one colour word count, so each error belongs to
    one (original, foil) pair; otherwise every replacement of a foil shares its error."""
    rows = []
    for row, replacements in enumerate(benchmark["replacements"]):
        if single_word_only and len(benchmark["words"].iat[row]) != 1:
            continue
        for j, text in enumerate(replacements[:k]):
            if np.isnan(scores[row, 1 + j]):
                continue
            error = bool(scores[row, 1 + j] >= scores[row, 0])
            for pair in text.split("; "):
                original, _, foil = pair.partition("->")
                rows.append({"row": row, "original": _canonical(original), "foil": _canonical(foil),
                             "error": error})
    return pd.DataFrame(rows, columns=["row", "original", "foil", "error"])


def colour_confusion(benchmark: pd.DataFrame, scores: np.ndarray, k: int = 4, single_word_only: bool = True,
                     min_count: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(error rate, count) matrices, original colour (rows) x foil colour (columns): how often a
    foil naming that colour scored at least as high as the caption. Cells with fewer than
    ``min_count`` comparisons are NaN in the rate matrix."""
    pairs = foil_comparisons(benchmark, scores, k, single_word_only)
    counts = pairs.pivot_table(index="original", columns="foil", values="error", aggfunc="size", fill_value=0)
    rates = pairs.pivot_table(index="original", columns="foil", values="error", aggfunc="mean")
    rates = rates.reindex_like(counts).where(counts >= min_count)
    return rates, counts


def per_colour_accuracy(benchmark: pd.DataFrame, scores: np.ndarray, k: int = 1,
                        confidence: float = 0.95) -> pd.DataFrame:
    """k-foil accuracy (Wilson interval) of the captions holding each colour word (a caption with
    two colours counts for both), most frequent colour first."""
    from ..stats import accuracy_summary

    usable, correct = correct_at(scores, k)
    words = benchmark["words"][usable].reset_index(drop=True)
    table = pd.DataFrame({"colour": words.map(lambda ws: sorted({_canonical(w) for w in ws})), "correct": correct})
    table = table.explode("colour")
    rows = [{"colour": colour, **accuracy_summary(group["correct"].to_numpy(), confidence)}
            for colour, group in table.groupby("colour")]
    return pd.DataFrame(rows).sort_values(["n", "colour"], ascending=[False, True]).reset_index(drop=True)


#: paper's name of each full-profile model, to match our rows with the published Table 1
#: our construction counts -> the paper's count of the same thing (colorfoil_counts_samin2024.csv)
COUNTS_BESIDE_PUBLISHED = {
    "images": "image_caption_pairs",
    "with a colour word (released code: exact token)": "pairs_with_colour_word",
    "with a colour word (whole word, ours)": "pairs_with_colour_word",
    "benchmark pairs (released-code construction)": "pairs_with_colour_word",
    "grayscale images (kept here, dropped in the paper)": "grayscale_dropped",
    "benchmark pairs": "benchmark_pairs",
}


def counts_beside_published(counts: Mapping[str, Mapping[str, int]], published_counts: pd.DataFrame) -> pd.DataFrame:
    """Rows: the counts of :func:`construction_counts`; per data set a column of ours and one of the
    paper's count of the same thing (empty where the paper gives none)."""
    table = {}
    for dataset, values in counts.items():
        table[f"{dataset} (ours)"] = pd.Series(values)
        paper = published_counts[published_counts["dataset"] == dataset].set_index("measure")["value"]
        table[f"{dataset} (published)"] = pd.Series(
            {name: paper.get(COUNTS_BESIDE_PUBLISHED.get(name), "") for name in values}).replace(np.nan, "")
    return pd.DataFrame(table)
