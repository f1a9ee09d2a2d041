"""#26 item 2: generative vision-language models through our spec path against Hugging Face's own code path on
the same random weights, at the hub checkpoints' real widths (configs in ``resources/hf_configs/``) and
reduced depth (which layers, and why, in tests/conformance/README.md).

Reference: the answer's log-likelihood is ``-model(**inputs, labels=labels).loss`` times the number of labelled
tokens, where the processor builds ``inputs`` as a training example is built (the chat template's own rendering of
a started assistant turn, ``continue_final_message=True``; LLaVA-OneVision's rendered question followed by the
answer; PaliGemma's ``suffix=``; BLIP-2's prompt and text) and
``labels`` cover the answer's tokens only; generation is ``model.generate(do_sample=False)`` on
``processor.apply_chat_template(..., add_generation_prompt=True, tokenize=True)``, the model cards' call. The model
is scored, saved and freed before our loader reads the directory, so one copy is in memory at a time.

Tokenizers are stand-ins in the hub tokenizers' classes and layouts with the real special ids (their vocabularies
are not available offline); every id of the model's table decodes to a token of its own, so generated ids are
compared through their text.
"""

import gc

import numpy as np
import pytest
import torch
from PIL import Image

from vlbias.models import load_vision_language_model
from vlbias.models.conversion import recorded_hf_config
from vlbias.models.tiny.tokenizers import bytes_to_unicode
from vlbias.models.tiny.vision_language import chat_template

pytestmark = pytest.mark.conformance

TEXTS = ["A red bus driving down a street.", "a white dog lying on the grass"]
PROMPT = "Describe the image in one sentence."


@pytest.fixture(scope="module")
def images():
    """Two RGB images of different shapes with smooth structure and noise."""
    rng = np.random.default_rng(0)
    made = []
    for height, width in [(96, 128), (120, 80)]:
        y, x = np.mgrid[0:height, 0:width]
        base = np.stack([x / width, y / height, (x + y) / (width + height)], axis=-1) * 200
        made.append(Image.fromarray((base + rng.integers(0, 55, (height, width, 3))).astype(np.uint8)))
    return made


def build(hub_id, text_layers, vision_layers, vision_key="num_hidden_layers", **vision):
    """The recorded architecture at ``text_layers`` and ``vision_layers`` of its depth, random weights (seed 0);
    ``vision``: vision-config values the reduced depth needs besides (Qwen2.5-VL's full-attention blocks)."""
    import transformers

    recorded = recorded_hf_config(hub_id)
    values = {key: value for key, value in recorded["config"].items() if key != "model_type"}
    values["text_config"] = values["text_config"] | {"num_hidden_layers": text_layers}
    values["vision_config"] = values["vision_config"] | {vision_key: vision_layers} | vision
    config = transformers.AutoConfig.for_model(recorded["config"]["model_type"], **values)
    torch.manual_seed(0)
    return getattr(transformers, recorded["model_class"])(config).eval(), recorded


def filled_vocabulary(vocab: dict, size: int) -> dict:
    """``vocab`` with every id below ``size`` that it lacks given a token of its own, so that any id the model
    generates decodes to text (unreachable by encoding: no merge builds them)."""
    taken = set(vocab.values())
    return vocab | {f"<unused{i}>": i for i in range(size) if i not in taken}


def word_merges(words, start: str):
    """Merges that build each word after the word-start mark ``start`` (``Ġ`` byte-level, ``▁`` SentencePiece)."""
    merges, pieces = [], []
    for word in sorted(set(words)):
        symbol = start
        for character in word:
            if symbol + character not in pieces:
                merges.append((symbol, character))
                pieces.append(symbol + character)
            symbol += character
    return merges, pieces


def words_of(*texts):
    return {word.strip(".") for text in texts for word in text.split()}


def llama_stand_in(recorded):
    """LlamaTokenizer in Llama's layout: ``<unk> <s> </s>``, then characters with and without the word-start
    mark, merges building the test's words, the real special ids beyond; BOS before every text."""
    from transformers import LlamaTokenizer

    characters = [chr(c) for c in range(33, 127)] + ["\n"]
    merges, pieces = word_merges(words_of(*TEXTS, PROMPT, "USER ASSISTANT"), "▁")
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for piece in ["▁"] + characters + ["▁" + c for c in characters] + pieces:
        vocab.setdefault(piece, len(vocab))
    merges = [("▁", c) for c in characters] + merges
    specials = recorded["tokenizer"]["specials"]
    vocab = filled_vocabulary(vocab | specials, recorded["config"]["text_config"]["vocab_size"])
    tokenizer = LlamaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, pad_token=recorded["tokenizer"]["pad_token"])
    tokenizer.add_special_tokens({"additional_special_tokens": [t for t in specials if t not in ("<unk>", "<s>", "</s>", "<pad>")]})
    return tokenizer


def qwen_stand_in(recorded):
    """Qwen2Tokenizer in Qwen2's layout: the 256 byte symbols, merges building the test's words after a space,
    the real special ids."""
    from transformers import Qwen2Tokenizer

    merges, pieces = word_merges(words_of(*TEXTS, PROMPT, "system user assistant You are a helpful"), "Ġ")
    vocab = {symbol: i for i, symbol in enumerate(bytes_to_unicode().values())}
    for piece in pieces:
        vocab.setdefault(piece, len(vocab))
    specials = recorded["tokenizer"]["specials"]
    vocab = filled_vocabulary(vocab | specials, recorded["config"]["text_config"]["vocab_size"])
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, eos_token=recorded["tokenizer"]["eos_token"],
                               pad_token=recorded["tokenizer"]["pad_token"],
                               model_max_length=recorded["tokenizer"]["model_max_length"])
    tokenizer.add_special_tokens({"additional_special_tokens": [t for t in specials if t not in ("<|endoftext|>", "<|im_end|>")]})
    return tokenizer


def image_processor(recorded):
    import transformers

    values = dict(recorded["image_processor"])
    return getattr(transformers, values.pop("class"))(**values)


def conversation(image, prompt, answer=None):
    turns = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": prompt}]}]
    if answer is not None:
        turns.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
    return turns


def chat_inputs(processor):
    """The model cards' call for a chat family: the question with the generation prompt, or the question followed
    by a started assistant turn (``continue_final_message``), as a training example is rendered."""
    def ask(image, answer=None):
        if answer is None:
            return processor.apply_chat_template(conversation(image, PROMPT), add_generation_prompt=True,
                                                 tokenize=True, return_dict=True, return_tensors="pt")
        return processor.apply_chat_template(conversation(image, PROMPT, answer), continue_final_message=True,
                                             tokenize=True, return_dict=True, return_tensors="pt")
    return ask


def reference(model, processor, ask, images, max_new_tokens=6):
    """(log-likelihoods of TEXTS[i] given images[i], their token counts, the greedy answer about the first image,
    the log-likelihoods of every text given the first image) on Hugging Face's path (one answer: a prefill at real
    width is the slowest step here). ``ask(image, answer)`` gives the processor's inputs for the question, with the
    answer after it when one is given."""

    def score(image, text):
        question, full = ask(image), ask(image, text)
        start = question["input_ids"].shape[1]
        assert torch.equal(full["input_ids"][:, :start], question["input_ids"])
        labels = full["input_ids"].clone()
        labels[:, :start] = -100
        count = labels.shape[1] - start
        return -model(**full, labels=labels).loss.item() * count, count

    scores, counts, answers = [], [], []
    with torch.inference_mode():
        for image, text in zip(images, TEXTS):
            value, count = score(image, text)
            scores.append(value)
            counts.append(count)
            if answers:
                continue
            question = ask(image)
            output = model.generate(**question, do_sample=False, max_new_tokens=max_new_tokens)
            new = output[0, question["input_ids"].shape[1]:]
            assert len(new) == max_new_tokens  # no end-of-turn at once: every step compared
            answers.append(processor.tokenizer.decode(new, skip_special_tokens=True).strip())
        first_image = [scores[0]] + [score(images[0], text)[0] for text in TEXTS[1:]]
    return scores, counts, answers, first_image


def conform(model, processor, directory, images, ask=None, prompt=PROMPT):
    """Score and generate on Hugging Face's path (``ask``: :func:`chat_inputs` by default), save, free, load
    through our spec path, compare."""
    want, counts, answers, first_image = reference(model, processor, ask or chat_inputs(processor), images)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    del model
    gc.collect()
    ours = load_vision_language_model(str(directory), device="cpu", half=False)
    got = ours.log_likelihood(images, TEXTS, prompt=prompt, batch_size=2, progress=False)  # one padded batch
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    assert ours.answer_token_counts(TEXTS, prompt).tolist() == counts
    assert abs(want[0] - want[1]) > 1.0  # the two texts score apart: the comparison can fail
    assert ours.generate(images[:1], prompt, max_new_tokens=6, progress=False) == answers
    # every text about one image: read after one pass over the image and question where the family shares it
    # (vlbias.models.vision_language.SHARED_PREFIX_FAMILIES), the answers in one padded batch
    shared = ours.log_likelihood([images[0]] * len(TEXTS), TEXTS, prompt=prompt, batch_size=2, progress=False)
    np.testing.assert_allclose(shared, first_image, rtol=1e-5, atol=1e-3)
    assert abs(first_image[0] - first_image[1]) > 1.0
    return ours


def test_llava_1_5_scores_and_generates_as_hugging_face(images, tmp_path):
    from transformers import LlavaProcessor

    model, recorded = build("llava-hf/llava-1.5-7b-hf", text_layers=1, vision_layers=2)
    settings = {key: value for key, value in recorded["processor"].items() if key != "class"}
    processor = LlavaProcessor(image_processor(recorded), llama_stand_in(recorded), chat_template=chat_template("llava"),
                               **settings)
    ours = conform(model, processor, tmp_path / "llava-1.5-7b-1-layer", images)
    assert ours.model.config.text_config.hidden_size == 4096 and ours.question(PROMPT)[1] == " "


def test_qwen2_vl_scores_and_generates_as_hugging_face(images, tmp_path):
    from transformers import Qwen2VLProcessor, Qwen2VLVideoProcessor

    model, recorded = build("Qwen/Qwen2-VL-2B-Instruct", text_layers=1, vision_layers=2, vision_key="depth")
    pixels = {key: recorded["image_processor"][key] for key in ("min_pixels", "max_pixels", "patch_size", "merge_size")}
    processor = Qwen2VLProcessor(image_processor(recorded), qwen_stand_in(recorded), Qwen2VLVideoProcessor(**pixels),
                                 chat_template=chat_template("qwen2_vl"))
    ours = conform(model, processor, tmp_path / "qwen2-vl-2b-1-layer", images)
    assert ours.model.config.text_config.hidden_size == 1536 and ours.question(PROMPT)[1] == ""


def test_llava_next_scores_and_generates_as_hugging_face(images, tmp_path):
    """LLaVA-NeXT (Mistral-7B): each image tiled at the best of the real grid pinpoints (336 x 672 for both
    images here: a base view and two tiles), features unpadded to the image's aspect ratio, a newline per row."""
    from transformers import LlavaNextProcessor

    model, recorded = build("llava-hf/llava-v1.6-mistral-7b-hf", text_layers=1, vision_layers=2)
    settings = {key: value for key, value in recorded["processor"].items() if key != "class"}
    processor = LlavaNextProcessor(image_processor(recorded), llama_stand_in(recorded),
                                   chat_template=chat_template("llava_next"), **settings)
    tiles = processor.image_processor(images=images, return_tensors="np")["pixel_values"].shape[1]
    assert tiles == 3  # the base view and two 336 px tiles: anyres is exercised
    ours = conform(model, processor, tmp_path / "llava-v1.6-mistral-7b-1-layer", images)
    assert ours.model.config.text_config.hidden_size == 4096 and ours.question(PROMPT)[1] == " "


def test_llava_onevision_scores_and_generates_as_hugging_face(images, tmp_path):
    """LLaVA-OneVision (Qwen2-0.5B): SigLIP tiles at 384 px (anyres_max_9), every patch feature kept ('full').
    Its template writes an answer's turn as ``<|im_start|>assistant \\n`` but asks with ``...assistant\\n``
    (``continue_final_message`` would not continue the question), so Hugging Face's path for an answer is the
    processor on the rendered question followed by the answer, as generation continues it."""
    from transformers import LlavaOnevisionProcessor, LlavaOnevisionVideoProcessor

    model, recorded = build("llava-hf/llava-onevision-qwen2-0.5b-ov-hf", text_layers=1, vision_layers=2)
    settings = {key: value for key, value in recorded["processor"].items() if key != "class"}
    video = {key: recorded["image_processor"][key] for key in ("size", "resample", "image_mean", "image_std")}
    processor = LlavaOnevisionProcessor(image_processor(recorded), qwen_stand_in(recorded),
                                        LlavaOnevisionVideoProcessor(**video),
                                        chat_template=chat_template("llava_onevision"), **settings)
    views = processor.image_processor(images=images, return_tensors="np")["pixel_values"].shape[1]
    assert views == 2  # a base view and one 384 px tile each (1317 and 1269 image tokens): anyres is exercised
    ask_question = chat_inputs(processor)

    def ask(image, answer=None):
        if answer is None:
            return ask_question(image)
        rendered = processor.apply_chat_template(conversation(image, PROMPT), add_generation_prompt=True)
        return processor(images=[image], text=[rendered + answer], return_tensors="pt")

    ours = conform(model, processor, tmp_path / "llava-onevision-0.5b-1-layer", images, ask=ask)
    assert ours.model.config.text_config.hidden_size == 896 and ours.question(PROMPT)[1] == ""


def test_qwen2_5_vl_scores_and_generates_as_hugging_face(images, tmp_path):
    """Qwen2.5-VL-3B: two vision blocks, the first windowed and the second full attention (the checkpoint's
    blocks 6 and 7 of each group of eight: ``fullatt_block_indexes`` [1] here for [7, 15, 23, 31])."""
    from transformers import Qwen2_5_VLProcessor, Qwen2VLVideoProcessor

    model, recorded = build("Qwen/Qwen2.5-VL-3B-Instruct", text_layers=1, vision_layers=2, vision_key="depth",
                            fullatt_block_indexes=[1])
    pixels = {key: recorded["image_processor"][key] for key in ("min_pixels", "max_pixels", "patch_size", "merge_size")}
    processor = Qwen2_5_VLProcessor(image_processor(recorded), qwen_stand_in(recorded), Qwen2VLVideoProcessor(**pixels),
                                    chat_template=chat_template("qwen2_5_vl"))
    vision = model.config.vision_config
    grid = processor.image_processor(images=images, return_tensors="np")["image_grid_thw"]
    window = vision.window_size // vision.patch_size  # patches a window spans
    assert (grid[:, 1:] > window).any()  # the first image spans two windows: the windowed block differs from full
    ours = conform(model, processor, tmp_path / "qwen2.5-vl-3b-1-layer", images)
    assert ours.model.config.text_config.hidden_size == 2048 and ours.question(PROMPT)[1] == ""
    assert list(ours.model.config.vision_config.fullatt_block_indexes) == [1]


def test_blip_2_scores_and_generates_as_hugging_face(images, tmp_path):
    """BLIP-2 has no chat template: the query tokens, BOS, the prompt as given (the paper's VQA format), the answer
    after one space; Hugging Face's path is its processor on the joined string."""
    from transformers import Blip2Processor, GPT2Tokenizer

    model, recorded = build("Salesforce/blip2-opt-2.7b", text_layers=1, vision_layers=2)
    prompt = "Question: what is in the image? Answer:"
    merges, pieces = word_merges(words_of(*TEXTS, prompt), "Ġ")
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in list(bytes_to_unicode().values()) + pieces:
        vocab.setdefault(piece, len(vocab))
    vocab = filled_vocabulary(vocab | {"<image>": recorded["config"]["image_token_index"]},
                              recorded["config"]["text_config"]["vocab_size"])
    tokenizer = GPT2Tokenizer(vocab=vocab, merges=merges, bos_token="</s>", eos_token="</s>", pad_token="<pad>",
                              unk_token="<unk>", add_bos_token=True)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    processor = Blip2Processor(image_processor(recorded), tokenizer, num_query_tokens=recorded["config"]["num_query_tokens"])

    def ask(image, answer=None):
        return processor(images=[image], text=[prompt + (" " + answer if answer else "")], return_tensors="pt")

    ours = conform(model, processor, tmp_path / "blip2-opt-2.7b-1-layer", images, ask=ask, prompt=prompt)
    assert ours.model.config.text_config.hidden_size == 2560 and ours.question(prompt) == (prompt, " ")


def test_paligemma_scores_and_generates_as_hugging_face(images, tmp_path):
    """PaliGemma has no chat template: its prefix (``<image>``s, BOS, the prompt, a newline) is read
    bidirectionally and the answer is its suffix; Hugging Face's path is its processor's ``suffix=`` (labels on
    the suffix, less the EOS the processor ends it with)."""
    from transformers import GemmaTokenizer, PaliGemmaProcessor

    model, recorded = build("google/paligemma-3b-pt-224", text_layers=1, vision_layers=2)
    prompt = "caption en"
    merges, pieces = word_merges(words_of(*TEXTS, prompt), "▁")
    characters = [chr(c) for c in range(33, 127)] + ["\n"]
    vocab = dict(recorded["tokenizer"]["specials"])  # <image> among them: ids from 5 below are len(vocab) - 1
    for piece in ["▁"] + characters + ["▁" + c for c in characters] + pieces:
        vocab.setdefault(piece, len(vocab) - 1)
    vocab |= {f"<loc{i:0>4}>": 256000 + i for i in range(1024)} | {f"<seg{i:0>3}>": 257024 + i for i in range(128)}
    vocab = filled_vocabulary(vocab, recorded["config"]["text_config"]["vocab_size"])
    tokenizer = GemmaTokenizer(vocab=vocab, merges=[("▁", c) for c in characters] + merges)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    values = dict(recorded["image_processor"])
    seq_length = values.pop("image_seq_length")
    processor_of_images = image_processor({"image_processor": values})
    processor_of_images.image_seq_length = seq_length
    processor = PaliGemmaProcessor(processor_of_images, tokenizer)
    assert len(tokenizer) <= recorded["config"]["text_config"]["vocab_size"]

    def ask(image, answer=None):
        inputs = processor(images=[image], text=["<image>" + prompt], suffix=None if answer is None else [answer],
                           return_tensors="np")
        inputs.pop("labels", None)
        tensors = {key: torch.as_tensor(np.asarray(value)) for key, value in inputs.items()}
        if answer is not None:  # drop the <eos> the processor ends a suffix with: not the text's
            tensors = {key: value[:, :-1] if value.dim() == 2 else value for key, value in tensors.items()}
            assert (tensors["token_type_ids"][0, -1] == 1) and (tensors["token_type_ids"][0, 0] == 0)
        return tensors

    ours = conform(model, processor, tmp_path / "paligemma-3b-1-layer", images, ask=ask, prompt=prompt)
    assert ours.model.config.text_config.hidden_size == 2048 and ours.question(prompt) == ("<image>" + prompt, "")


def test_smolvlm_scores_and_generates_as_hugging_face(images, tmp_path):
    """SmolVLM-256M (an Idefics3 model): images split into 512 px tiles plus a global view, SmolLM2's own tokenizer
    with the image tokens added, the SmolVLM chat template."""
    from transformers import AutoTokenizer, Idefics3Processor

    from vlbias import assets

    try:
        gguf = assets.smollm2_gguf()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model, recorded = build("HuggingFaceTB/SmolVLM-256M-Instruct", text_layers=1, vision_layers=1)
    added = recorded["tokenizer"]["added"] + [f"<row_{r}_col_{c}>" for r in range(1, 5) for c in range(1, 5)]
    tokenizer.add_special_tokens({"additional_special_tokens": added})
    assert len(tokenizer) <= recorded["config"]["text_config"]["vocab_size"]
    model.config.image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    model.model.image_token_id = model.config.image_token_id
    processor = Idefics3Processor(image_processor(recorded), tokenizer, image_seq_len=recorded["processor"]["image_seq_len"],
                                  chat_template=chat_template("idefics3"))
    ours = conform(model, processor, tmp_path / "smolvlm-256m-1-layer", images)
    assert ours.model.config.text_config.hidden_size == 576 and ours.question(PROMPT)[1] == " "
