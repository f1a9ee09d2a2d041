"""ColorFoil (Samin et al. 2024), construction: colour-word foils of captions, and the benchmark files.

:func:`build_benchmark` takes one caption per image (or all of them), finds its colour words as
whole words (case-insensitive; "colored" and "covered" hold none, "Red." does), and writes up to
``max_foils`` foils, distinct from each other and from the caption, in which every colour word is
replaced by one of the ten targets that names another colour. Each caption draws from its own
seeded generator, so a caption's foils do not depend on which other captions are in the set.
``foil_type`` swaps the same machinery to gender, size, emotion words or negation (the paper's
future work). :func:`save_benchmark` and :func:`load_benchmark` write and read the benchmark
files that the construction page (02a) leaves for the evaluation page (02b); how models rank a
caption against its foils is :mod:`vlbias.colorfoil.evaluation`.
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
