"""Generative vision-language models (vlbias.models.vision_language) on every family's tiny fixture, loaded
through load_vision_language_model: the answer's log-likelihood against Hugging Face's own causal-LM loss
on inputs its processor builds (labels only on the answer's tokens), batches against one pair at a time,
greedy generation against ``generate(do_sample=False)``, and the refusals of bad input."""

import json
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

from vlbias.models import VisionLanguageModel, load_vision_language_model, tiny_checkpoint
from vlbias.models.vision_language import SHARED_PREFIX_FAMILIES

FAMILIES = ["llava", "llava-next", "llava-onevision", "qwen2-vl", "qwen2.5-vl", "idefics3", "paligemma", "blip-2"]
TEXTS = ["A red bus.", "a dog lying on the grass", "Two people"]
PROMPT = "Describe the image."


@pytest.fixture(scope="module")
def images():
    """Three RGB images of different shapes: LLaVA-NeXT and OneVision cut them into different numbers of
    tiles, Qwen-VL into different numbers of patches, Idefics3 into different splits."""
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in [(40, 60), (28, 28), (70, 30)]]


@pytest.fixture(scope="module", params=FAMILIES)
def model(request):
    return load_vision_language_model(f"tiny:{request.param}", device="cpu")


def _as_tensors(inputs) -> dict:
    return {key: torch.as_tensor(np.asarray(value)) for key, value in inputs.items()}


def _user(image, prompt):
    return [{"role": "user", "content": [{"type": "image", "image": image}]
             + ([{"type": "text", "text": prompt}] if prompt else [])}]


def reference_question(model, image, prompt):
    """The inputs Hugging Face's documented call builds for a question about ``image``."""
    processor = model.processor
    if model.family == "paligemma":
        return _as_tensors(processor(images=[image], text=["<image>" + (prompt or "")], return_tensors="np"))
    if model.family == "blip-2":
        return _as_tensors(processor(images=[image], text=[prompt or ""], return_tensors="np"))
    return _as_tensors(processor.apply_chat_template(_user(image, prompt), add_generation_prompt=True, tokenize=True,
                                                     return_dict=True, return_tensors="np"))


def reference_answer(model, image, prompt, text):
    """(inputs, labels) of the question followed by ``text`` as Hugging Face lays out a training example:
    PaliGemma's ``suffix=``, the chat template's own rendering of a started assistant turn
    (``continue_final_message``), BLIP-2's prompt and text; labels on the answer's tokens only."""
    processor = model.processor
    if model.family == "paligemma":
        inputs = processor(images=[image], text=["<image>" + (prompt or "")], suffix=[text], return_tensors="np")
        labels = np.array(inputs.pop("labels"))
        labels[0, -1] = -100  # the <eos> the processor ends a suffix with: not the text's
        return _as_tensors(inputs), torch.as_tensor(labels)
    if model.family == "blip-2":
        inputs = _as_tensors(processor(images=[image], text=[prompt + " " + text if prompt else text], return_tensors="np"))
    elif model.family == "llava_onevision":
        # its template writes an answer's turn as "<|im_start|>assistant \n" but asks with "...assistant\n":
        # the answer follows the question as generation continues it (checked below)
        rendered = processor.apply_chat_template(_user(image, prompt), add_generation_prompt=True)
        inputs = _as_tensors(processor(images=[image], text=[rendered + text], return_tensors="np"))
    else:
        conversation = _user(image, prompt) + [{"role": "assistant", "content": [{"type": "text", "text": text}]}]
        inputs = _as_tensors(processor.apply_chat_template(conversation, continue_final_message=True, tokenize=True,
                                                           return_dict=True, return_tensors="np"))
    question = reference_question(model, image, prompt)["input_ids"][0]
    assert inputs["input_ids"][0, :len(question)].tolist() == question.tolist()
    labels = inputs["input_ids"].clone()
    labels[0, :len(question)] = -100
    return inputs, labels


@pytest.mark.parametrize("prompt", [PROMPT, None])
def test_log_likelihood_is_the_hf_loss_on_the_answer_tokens(model, images, prompt):
    """Our sum over the answer's tokens equals HF's mean causal-LM loss times the number of labelled tokens."""
    assert isinstance(model, VisionLanguageModel) and model.kind == "generative" and model.dtype == "float32"
    want, counts = [], []
    with torch.inference_mode():
        for image, text in zip(images, TEXTS):
            inputs, labels = reference_answer(model, image, prompt, text)
            n = int((labels != -100).sum())
            want.append(-model.model(**inputs, labels=labels).loss.item() * n)
            counts.append(n)
    got = model.log_likelihood(images, TEXTS, prompt=prompt, batch_size=1, progress=False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert model.answer_token_counts(TEXTS, prompt).tolist() == counts
    assert np.ptp(want) > 1.0  # the texts score apart: the comparison can fail


def test_a_padded_batch_scores_and_generates_as_one_pair_at_a_time(model, images):
    single = [model.log_likelihood([image], [text], prompt=PROMPT, progress=False)[0] for image, text in zip(images, TEXTS)]
    batched = model.log_likelihood(images, TEXTS, prompt=PROMPT, batch_size=3, progress=False)
    np.testing.assert_allclose(batched, single, rtol=1e-5, atol=1e-4)
    one_by_one = [model.generate([image], PROMPT, max_new_tokens=4, progress=False)[0] for image in images]
    assert model.generate(images, PROMPT, max_new_tokens=4, batch_size=3, progress=False) == one_by_one


def _vision_tower(model):
    names = [name for name, _ in model.model.named_modules() if name.rsplit(".", 1)[-1] in
             ("vision_tower", "visual", "vision_model")]
    return model.model.get_submodule(min(names, key=len))


def test_texts_about_one_image_are_scored_after_one_pass_over_it(model, images):
    """Several texts about one image (01d's prompts per face, 02d's caption and its foils): where the family
    reads the answer causally after the image, the image and question run once and each text continues a copy
    of that pass's cache (the vision tower runs once per image); every score equals the pair scored alone,
    which the test above checks against HF's loss, with texts of different lengths in one batch. The
    language model's attention is sharpened (queries and keys x 30): at random initialisation it is nearly
    uniform, and a text read at positions one off would score the same."""
    model = load_vision_language_model(model.spec, device="cpu")  # a copy of its own: its weights change
    with torch.no_grad():
        for name, parameter in model.model.named_parameters():
            if "vision" not in name and "visual" not in name and name.endswith(("q_proj.weight", "k_proj.weight")):
                parameter.mul_(30.0)
    texts = TEXTS + ["a cat", "Red.", "A"]
    pairs = [(images[0], text) for text in texts] + [(images[1], text) for text in TEXTS[:2]] + [(images[2], TEXTS[2])]
    single = [model.log_likelihood([image], [text], prompt=PROMPT, progress=False)[0] for image, text in pairs]
    calls = []
    hook = _vision_tower(model).register_forward_hook(lambda module, args, output: calls.append(1))
    try:
        for batch_size in (1, 4):
            calls.clear()
            got = model.log_likelihood([image for image, _ in pairs], [text for _, text in pairs], prompt=PROMPT,
                                       batch_size=batch_size, progress=False)
            np.testing.assert_allclose(got, single, rtol=1e-5, atol=1e-4)
            if batch_size == 1:
                shared = model.family in SHARED_PREFIX_FAMILIES
                assert len(calls) == (3 if shared else len(pairs)), (model.family, len(calls))
    finally:
        hook.remove()
    assert np.ptp(single[:len(texts)]) > 1.0  # the texts about one image score apart: the comparison can fail


def test_generation_is_hf_greedy_generate(model, images):
    for image in images[:2]:
        inputs = reference_question(model, image, PROMPT)
        output = model.model.generate(**inputs, do_sample=False, max_new_tokens=6, pad_token_id=model.pad_id)
        new = output[0, inputs["input_ids"].shape[1]:]
        assert len(new) == 6  # no end-of-turn at once: six tokens compared
        want = model.tokenizer.decode(new, skip_special_tokens=True).strip()
        assert model.generate([image], PROMPT, max_new_tokens=6, progress=False) == [want]


def test_the_answer_follows_the_template_as_an_assistant_turn():
    """What each family writes between its question and an answer, read from its template (LLaVA-1.5,
    LLaVA-NeXT and SmolVLM put a space after the assistant's tag; Qwen's and OneVision's answer starts on the
    generation prompt's new line), and the layouts of the families without a template."""
    between = {"llava": " ", "llava-next": " ", "llava-onevision": "", "qwen2-vl": "", "qwen2.5-vl": "", "idefics3": " "}
    for name, expected in between.items():
        model = load_vision_language_model(f"tiny:{name}", device="cpu")
        rendered, written = model.question(PROMPT)
        assert written == expected, name
        assert PROMPT in rendered and rendered.count(model.processor.image_token) == 1
    onevision = load_vision_language_model("tiny:llava-onevision", device="cpu")
    rendered, _ = onevision.question(PROMPT)
    answered = onevision.processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": PROMPT}]},
         {"role": "assistant", "content": [{"type": "text", "text": "x"}]}])
    assert rendered.endswith("<|im_start|>assistant\n") and "<|im_start|>assistant \nx" in answered
    blip = load_vision_language_model("tiny:blip-2", device="cpu")
    assert blip.question("Question: what is it? Answer:") == ("Question: what is it? Answer:", " ")
    assert blip.question(None) == ("", "")
    # BLIP-2's caption after no prompt has no leading space: the text's own characters only
    assert blip.answer_token_counts(["a cat"], None).tolist() == [5]
    assert blip.answer_token_counts(["a cat"], "A photo of").tolist() == [6]


def test_a_local_directory_loads_as_its_tiny_spec_and_identity_follows_the_template(tmp_path, images):
    by_spec = load_vision_language_model("tiny:qwen2-vl", device="cpu")
    copy = tmp_path / "qwen2-vl"
    shutil.copytree(tiny_checkpoint("qwen2-vl"), copy)
    by_path = load_vision_language_model(str(copy), device="cpu")
    assert by_path.identity.weights == by_spec.identity.weights and by_path.preprocess_id == by_spec.preprocess_id
    np.testing.assert_allclose(by_path.log_likelihood(images, TEXTS, progress=False),
                               by_spec.log_likelihood(images, TEXTS, progress=False), rtol=1e-6)
    template = copy / "chat_template.jinja"
    assert template.is_file()
    template.write_text(template.read_text().replace("You are a helpful assistant.", "You are terse."))
    changed = load_vision_language_model(str(copy), device="cpu")
    assert changed.preprocess_id != by_spec.preprocess_id  # another layout, other cache keys
    assert changed.cache_identity() != by_spec.cache_identity()
    assert not np.allclose(changed.log_likelihood(images, TEXTS, progress=False),
                           by_spec.log_likelihood(images, TEXTS, progress=False))


def test_the_model_kind_is_vision_language_and_the_audit_measures_it_as_01d_and_02d_do(tmp_path):
    from pathlib import Path

    from vlbias import audit
    from vlbias.models.kinds import MODEL_KINDS, model_kind

    assert "vision-language" in MODEL_KINDS
    assert model_kind("tiny:llava") == "vision-language"
    assert model_kind(str(tiny_checkpoint("paligemma"))) == "vision-language"  # read from config.json
    measures = audit.applicable("tiny:blip-2", "vision-language")
    assert [(m.name, m.notebook) for m in measures] == [("generative markedness", "01d_generative_markedness"),
                                                         ("colorfoil by likelihood", "02d_colorfoil_generative")]
    root = Path(__file__).resolve().parents[3]
    with pytest.raises(ValueError, match=r"'tiny:blip-2' is a vision-language model, and no audit measure applies to "
                                         r"it among --parts t2i"):
        audit.audit_model("tiny:blip-2", parts=["t2i"], root=root, out_dir=tmp_path / "cards")
    assert not (tmp_path / "cards").exists()


def test_a_family_without_a_backend_is_refused_with_the_families_that_have_one(tmp_path):
    from vlbias.models.kinds import model_kind

    for name, config in {"clip": {"model_type": "clip", "architectures": ["CLIPModel"]},
                         "blip2-itm": {"model_type": "blip-2", "architectures": ["Blip2ForImageTextRetrieval"]},
                         "fuyu": {"model_type": "fuyu", "architectures": ["FuyuForCausalLM"]}}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
        with pytest.raises(ValueError, match=r"not a generative vision-language model of a family with a backend; "
                                             r"backends exist for blip-2, idefics3, llava, llava_next, llava_onevision, "
                                             r"paligemma, qwen2_5_vl, qwen2_vl, smolvlm\."):
            load_vision_language_model(str(tmp_path / name), device="cpu")
    assert model_kind(str(tmp_path / "clip")) == "image-text"
    with pytest.raises(ValueError, match=r"vision-language backends exist for blip-2, idefics3"):
        model_kind(str(tmp_path / "blip2-itm"))  # a matcher without an image-text backend: no kind
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        load_vision_language_model(str(tmp_path / "empty"), device="cpu")


def test_a_blip2_checkpoint_with_an_encoder_decoder_language_model_is_refused_before_loading(tmp_path):
    """DALL-Eval's BLIP-2 FlanT5: its question is the encoder's and its answer the decoder's, so the
    decoder-only layout would score the wrong thing; refused from config.json alone (no processor files)."""
    folder = tmp_path / "blip2-flan-t5"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "blip-2", "architectures": ["Blip2ForConditionalGeneration"],
                                                    "text_config": {"model_type": "t5", "is_encoder_decoder": True}}))
    with pytest.raises(ValueError, match=r"language model is an encoder-decoder \('t5', e\.g\. FlanT5\).*blip2-opt-2\.7b"):
        load_vision_language_model(str(folder), device="cpu")


def test_a_chat_family_without_a_chat_template_is_refused(tmp_path):
    copy = tmp_path / "idefics3"
    shutil.copytree(tiny_checkpoint("idefics3"), copy)
    (copy / "chat_template.jinja").unlink()
    for name in ("processor_config.json", "tokenizer_config.json"):
        assert "chat_template" not in json.loads((copy / name).read_text())
    with pytest.raises(ValueError, match=r"is a idefics3 checkpoint without a chat template .* Add the template"):
        load_vision_language_model(str(copy), device="cpu")
    load_vision_language_model("tiny:paligemma", device="cpu")  # no template, and none needed: its layout is fixed


def test_bad_images_and_texts_get_one_clear_error(images):
    model = load_vision_language_model("tiny:llava", device="cpu")
    rgba, grey = images[0].convert("RGBA"), images[1].convert("L")
    with pytest.raises(ValueError, match=r"images\[1\] is a 'RGBA' image; .*\(image.convert\('RGB'\)"):
        model.log_likelihood([images[0], rgba], TEXTS[:2], progress=False)
    with pytest.raises(ValueError, match=r"images\[0\] is a 'L' image"):
        model.generate([grey], PROMPT, progress=False)
    with pytest.raises(TypeError, match=r"images\[0\] is a ndarray; give PIL images"):
        model.log_likelihood([np.asarray(images[0])], TEXTS[:1], progress=False)
    with pytest.raises(TypeError, match="a single image; wrap it in a list"):
        model.generate(images[0], PROMPT, progress=False)
    with pytest.raises(TypeError, match="a single string; wrap it in a list"):
        model.log_likelihood(images[:1], TEXTS[0], progress=False)
    with pytest.raises(ValueError, match="Got 3 images and 2 texts: log_likelihood scores text i given image i"):
        model.log_likelihood(images, TEXTS[:2], progress=False)
    with pytest.raises(TypeError, match="prompt must be a string or None"):
        model.generate(images[:1], ["a prompt"], progress=False)


def test_a_text_longer_than_the_model_reads_is_refused_not_cut(images):
    model = load_vision_language_model("tiny:qwen2-vl", device="cpu")
    assert model.max_length == 512
    long_text = "a dog " * 100  # 600 characters, a token each
    fits = "a dog " * 60
    with pytest.raises(ValueError, match=r"texts\[1\] after the prompt is \d+ tokens with the image's, but 'tiny:qwen2-vl' "
                                         r"reads at most 512: shorten the text or the prompt. Nothing is cut."):
        model.log_likelihood(images[:2], [fits, long_text], progress=False)
    assert np.isfinite(model.log_likelihood(images[:1], [fits], progress=False)).all()
    with pytest.raises(ValueError, match=r"images\[0\] plus max_new_tokens is \d+ tokens .* lower max_new_tokens"):
        model.generate(images[:1], PROMPT, max_new_tokens=1000, progress=False)
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1"):
        model.generate(images[:1], PROMPT, max_new_tokens=0, progress=False)
    assert model.log_likelihood(images[:1], [""], progress=False).tolist() == [0.0]  # no tokens, log 1
