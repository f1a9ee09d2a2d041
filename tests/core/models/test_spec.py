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


def test_loader_options_follow_a_question_mark_and_are_part_of_the_canonical_form(tmp_path):
    parsed = parse_spec("Salesforce/blip-itm-base-coco?head=contrastive")
    assert (parsed.source, parsed.name, parsed.options) == ("hf", "Salesforce/blip-itm-base-coco",
                                                            (("head", "contrastive"),))
    assert parsed.canonical == "hf:Salesforce/blip-itm-base-coco?head=contrastive"
    assert parse_spec(parsed.canonical).canonical == parsed.canonical
    # sorted: two spellings of one choice are one model; the hub id itself never carries the options
    assert parse_spec("hf:org/m?b=2&a=1").canonical == parse_spec("org/m?a=1&b=2").canonical == "hf:org/m?a=1&b=2"
    assert locate("org/m?a=1") == "org/m"
    tiny = parse_spec("tiny:blip?head=itm")
    assert (tiny.source, tiny.name, tiny.canonical) == ("tiny", "blip", "tiny:blip?head=itm")
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    local = parse_spec(f"{checkpoint}?head=itm")
    assert (local.source, local.name, local.canonical) == ("local", str(checkpoint.resolve()),
                                                           f"{checkpoint.resolve()}?head=itm")
    relative = parse_spec("checkpoint?head=itm", base=tmp_path)
    assert relative.canonical == local.canonical and relative.display == local.canonical
    clip = parse_spec("ViT-B-32/openai?x=1")
    assert (clip.source, clip.name, clip.tag, clip.options) == ("open_clip", "ViT-B-32", "openai", (("x", "1"),))
    # a trained recipe's options are its training options, kept with the recipe as before
    trained = parse_spec("trained:world-clip?red_named=0.1")
    assert (trained.name, trained.options) == ("world-clip?red_named=0.1", ())


@pytest.mark.parametrize("spec", ["org/m?head", "org/m?", "org/m?head=", "org/m?=itm", "org/m?head=a&&b=c",
                                  "org/m?head=a=b"])
def test_a_malformed_option_list_is_refused_naming_the_spec(spec):
    with pytest.raises(ValueError, match=r"must be name=value pairs joined by '&'") as error:
        parse_spec(spec)
    assert repr(spec) in str(error.value)


def test_an_option_given_twice_is_refused():
    with pytest.raises(ValueError, match=r"gives an option more than once"):
        parse_spec("org/m?head=itm&head=contrastive")


@pytest.mark.parametrize("loader, spec, what", [
    ("load_language_model", "tiny:mlm?head=itm", "language models"),
    ("load_vision_language_model", "tiny:llava?head=itm", "generative vision-language models"),
    ("load_text_to_image", "tiny:sd?head=itm", "text-to-image pipelines"),
    ("load_text_classifier", "tiny:mlm?head=itm", "text classifiers"),
    ("load_sentence_encoder", "tiny:mlm?head=itm", "sentence encoders"),
])
def test_loaders_without_options_refuse_a_spec_that_carries_one(loader, spec, what):
    import vlbias.models as models

    with pytest.raises(ValueError, match=rf"{what} take no options after '\?' \('head=itm'\).*Remove them"):
        getattr(models, loader)(spec)
