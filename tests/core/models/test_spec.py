"""One parser owns the spec grammar (``asset:`` included); every loader fails the same way."""

from pathlib import Path

import pytest
from huggingface_hub.errors import LocalEntryNotFoundError

from vlbias.errors import ModelUnavailableError, is_unavailable
from vlbias.models import load_language_model, locate, parse_spec, tiny_checkpoint
from vlbias.models.language import locate_checkpoint


def test_asset_specs_parse_to_their_own_source_and_unknown_names_are_listed():
    parsed = parse_spec("asset:minilm-l6")
    assert (parsed.source, parsed.name, str(parsed)) == ("asset", "minilm-l6", "asset:minilm-l6")
    with pytest.raises(ValueError, match="asset:minilm-l6"):
        parse_spec("asset:no-such-asset")


def test_locate_gives_the_place_from_pretrained_reads():
    assert locate("asset:minilm-l6").endswith("model") and (Path(locate("asset:minilm-l6")) / "config.json").is_file()
    assert locate("tiny:mlm") == str(tiny_checkpoint("mlm"))
    assert locate("hf:some-org/some-model") == "some-org/some-model"
    with pytest.raises(ValueError, match="open_clip spec"):
        locate("open_clip:ViT-B-32/openai")
    # the language loader reads the same place, GGUF detection included
    assert locate_checkpoint("asset:minilm-l6").path == locate("asset:minilm-l6")


def test_an_asset_spec_loads_without_resolving_it_first():
    model = load_language_model("asset:minilm-l6", device="cpu", kind="masked")
    assert model.spec == "asset:minilm-l6" and model.kind == "masked"


def test_unavailability_is_read_from_the_error_chain_by_type():
    # open_clip's shape: RuntimeError from FileNotFoundError from the hub's LocalEntryNotFoundError
    try:
        try:
            try:
                raise LocalEntryNotFoundError("not in the local cache")
            except LocalEntryNotFoundError as hub_error:
                raise FileNotFoundError("Failed to download file") from hub_error
        except FileNotFoundError as wrapped:
            raise RuntimeError("Failed to download weights for tag 'openai'") from wrapped
    except RuntimeError as error:
        assert is_unavailable(error)
    # a broken checkpoint whose message merely mentions downloading is not "unavailable"
    assert not is_unavailable(RuntimeError("size mismatch after download of layer 3"))
    assert not is_unavailable(OSError("permission denied"))


def test_model_unavailable_error_is_an_os_error():
    # callers that caught the loaders' former OSError keep working
    assert issubclass(ModelUnavailableError, OSError)
