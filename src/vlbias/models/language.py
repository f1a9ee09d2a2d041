"""Language-model backend: masked LMs (BERT, RoBERTa, ...) and causal LMs (GPT-2, Llama, SmolLM2, ...).

Conventions (the numbers in the book depend on them, so they are spelled out):

* **Masked ``fill_logprobs``**: the ``{slot}`` becomes the mask token and the model reads the
  whole context. A candidate must be a *single* token of the vocabulary, tokenised with the
  leading space that the slot has in the context (RoBERTa/GPT-2 style ``Ġshe``, SentencePiece
  ``▁she``; WordPiece needs none). Multi-token candidates raise ``ValueError`` rather than
  silently switching to a different estimator: use :meth:`sequence_logprob` (pseudo-log-
  likelihood) on the filled sentences instead.
* **Causal context**: BOS + the text's tokens, except that text already opening with BOS (a
  chat template's output) gets no second one (:meth:`HFLanguageModel.context_ids`).
* **Causal ``fill_logprobs``**: ``log P(candidate tokens | BOS + text before the slot)``, summed
  over the candidate's tokens. A space before the slot moves into the candidate (``" she"``),
  as the tokenizer would have split the full sentence. Text *after* the slot is ignored; to
  compare whole sentences, score them with :meth:`sequence_logprob`.
* **Causal ``sequence_logprob``**: the sum of every token's log-probability given the tokens
  before it, starting after a BOS token that is prepended when the tokenizer has one (GPT-2's
  ``<|endoftext|>``, Llama's ``<s>``). Without a BOS token the first token is not scored.
* **Masked ``sequence_logprob``**: pseudo-log-likelihood (Salazar et al., 2020): each non-special
  token is masked in turn and scored given all the others.
* **``sentence_embeddings``**: the last layer's hidden state of one token, as SEAT (May et al.,
  2019) reads sentence encoders that are language models: a masked LM's first token (BERT's
  ``[CLS]``, RoBERTa's ``<s>``, with the tokenizer's special tokens added), a causal LM's last token
  of BOS + the text (the one that has read the whole sentence).
* **Causal ``generate``**: sampling with temperature and nucleus (top-p) filtering, our own
  decoding loop so that every sequence draws from its own ``torch.Generator`` (seeded from the
  seed, the prompt text and the sample index). A prompt's samples are therefore the same
  alone or in any batch, at any position. Continuations stop at EOS and exclude the prompt.

Batches are right-padded for scoring (positions of real tokens are then unchanged and the
causal mask keeps padding out of view) and left-padded with explicit position ids for
generation, so batched results equal one-at-a-time results up to float rounding.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ..device import resolve_device, resolve_dtype
from ..errors import ModelUnavailableError
from ._batching import batches
from .base import LanguageModel
from .identity import identify
from .spec import ModelSpec, locate, parse_spec, refuse_options

KINDS = ("masked", "causal")


# --------------------------------------------------------------------------- locating checkpoints

@dataclass(frozen=True)
class CheckpointLocation:
    """Where ``from_pretrained`` should look: a directory or hub id, plus an optional GGUF file."""

    path: str
    gguf_file: str | None = None

    def kwargs(self) -> dict:
        return {"gguf_file": self.gguf_file} if self.gguf_file else {}


def locate_checkpoint(spec: str | ModelSpec) -> CheckpointLocation:
    """Resolve a spec to a ``from_pretrained`` location (GGUF files included)."""
    parsed = parse_spec(spec)
    location = locate(parsed)
    return CheckpointLocation(location) if parsed.source == "hf" else locate_local(Path(location))


def locate_local(path: Path) -> CheckpointLocation:
    """A ``.gguf`` file, a directory holding one, or a ``save_pretrained`` directory."""
    if path.is_file():
        if path.suffix != ".gguf":
            raise ValueError(f"{path} is a file but not a .gguf file; give its directory instead.")
        return CheckpointLocation(str(path.parent), path.name)
    if (path / "config.json").exists():
        return CheckpointLocation(str(path))
    ggufs = sorted(p.name for p in path.glob("*.gguf"))
    if len(ggufs) == 1:
        return CheckpointLocation(str(path), ggufs[0])
    if ggufs:
        raise ValueError(f"{path} holds several .gguf files ({', '.join(ggufs)}); name one of them as the spec.")
    raise FileNotFoundError(f"{path} has neither a config.json nor a .gguf file.")


def unavailable_error(spec: str, error: Exception) -> ModelUnavailableError:
    return ModelUnavailableError(
        f"Could not load language model {spec!r}: {type(error).__name__}: {error}\n"
        "If it is a Hugging Face hub id, download it first while online (e.g. `hf download <id>`) "
        "or give the path of a local directory or .gguf file; offline runs (HF_HUB_OFFLINE=1) only "
        "find models already in the Hugging Face cache. Tests should use 'tiny:mlm' or 'tiny:causal-lm'.")


# --------------------------------------------------------------------------- choosing masked/causal

def infer_kind(config) -> str:
    """``"masked"`` or ``"causal"`` from a config's architectures, else from its model type."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    for architecture in getattr(config, "architectures", None) or []:
        if architecture.endswith("ForMaskedLM"):
            return "masked"
        if architecture.endswith(("ForCausalLM", "LMHeadModel")):
            return "causal"
    model_type = getattr(config, "model_type", None)
    # encoder models (BERT) also have a causal head class; only decoders default to causal
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not getattr(config, "is_decoder", False):
        return "masked"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    raise ValueError(f"Cannot tell whether model type {model_type!r} is a masked or a causal LM; "
                     "pass kind='masked' or kind='causal'.")


def load_language_model(spec: str | ModelSpec, device=None, half: bool | None = None,
                        kind: str | None = None) -> "HFLanguageModel":
    """Load a masked or causal LM by spec; ``kind`` overrides the guess from the config.

    float32 unless ``half=True`` (fp16, on a GPU or MPS device), as for every model kind: ``None``
    no longer means fp16 on a GPU. ``model.identity`` says what was loaded and keys every cache.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    parsed = parse_spec(spec)
    refuse_options(parsed, "language models")
    spec = parsed.raw  # errors quote the spelling given
    location = locate_checkpoint(parsed)
    device = resolve_device(device)
    dtype = resolve_dtype(device, bool(half))
    try:
        config = AutoConfig.from_pretrained(location.path, **location.kwargs())
    except (OSError, ValueError) as error:  # missing files, offline hub, unknown id
        raise unavailable_error(spec, error) from error
    kind = kind or infer_kind(config)
    model_class = AutoModelForMaskedLM if kind == "masked" else AutoModelForCausalLM
    try:
        tokenizer = AutoTokenizer.from_pretrained(location.path, **location.kwargs())
        model = model_class.from_pretrained(location.path, dtype=dtype, **location.kwargs())
    except (OSError, ValueError) as error:  # e.g. a directory without tokenizer files
        raise unavailable_error(spec, error) from error
    model.to(device).eval()
    wrapper = HFLanguageModel(parsed.display, kind, model, tokenizer)
    files = None if parsed.source == "hf" else Path(location.path) / (location.gguf_file or "")
    wrapper.identity = identify(parsed, wrapper, files)
    return wrapper


# --------------------------------------------------------------------------- helpers

def split_at_slot(context: str, slot: str) -> tuple[str, str]:
    """Text before and after the single slot of ``context``."""
    if context.count(slot) != 1:
        raise ValueError(f"Each context needs exactly one {slot}: {context!r}")
    before, after = context.split(slot)
    return before, after


def pad_right(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention_mask), padding at the end so real tokens keep positions 0..n-1."""
    length = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), length), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        mask[row, :len(sequence)] = 1
    return ids, mask


def pad_left(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention_mask), padding at the start so every prompt ends at the last column."""
    length = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), length), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, length - len(sequence):] = torch.tensor(sequence, dtype=torch.long)
        mask[row, length - len(sequence):] = 1
    return ids, mask


def sample_seed(seed: int, prompt: str, sample_index: int) -> int:
    """A generator seed that depends only on (seed, prompt text, sample index)."""
    digest = hashlib.sha256(f"{seed}\x00{sample_index}\x00{prompt}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") & (2 ** 63 - 1)


def sample_token(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator) -> int:
    """Draw one token id from a row of logits.

    Inverse-CDF sampling in vocabulary order with one uniform from the row's own CPU generator:
    the draw is the same on any device, and float noise from batching only matters when the
    uniform falls within rounding of a bucket boundary.
    """
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True, stable=True)
        before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # mass of higher-ranked tokens
        keep_sorted = before < top_p  # the smallest set reaching top_p; the top token always stays
        keep = torch.zeros_like(keep_sorted).scatter(0, order, keep_sorted)
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    cdf = torch.cumsum(probs, dim=-1).cpu()
    uniform = torch.rand((), generator=generator, dtype=torch.float64) * cdf[-1]
    return int(min(torch.searchsorted(cdf, uniform, right=True).item(), len(cdf) - 1))


# --------------------------------------------------------------------------- the backend

class HFLanguageModel(LanguageModel):
    """A transformers masked or causal LM behind the :class:`LanguageModel` interface."""

    def __init__(self, spec: str, kind: str, model, tokenizer):
        self.spec = spec
        self.kind = kind
        self.model = model
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        # padding positions are masked out, so any id will do when the tokenizer has no pad
        self.pad_id = next((i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id) if i is not None), 0)

    def __repr__(self) -> str:
        return f"HFLanguageModel({self.spec!r}, kind={self.kind!r})"

    # ---- tokenisation

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without any special tokens."""
        return self.tokenizer.encode(text, add_special_tokens=False)

    def encode_word(self, word: str, after_space: bool) -> list[int]:
        """Ids of ``word`` as it appears mid-sentence (``after_space``) or at the very start.

        Byte-level BPE (GPT-2, RoBERTa, SmolLM2) marks the space in the word's first token, so
        ``" she"`` is encoded (``Ġshe``). SentencePiece tokenizers that add a word-boundary
        marker themselves (``▁she``) encode the bare word, since ``" she"`` may give an extra
        ``▁`` token; they therefore also treat a slot glued to the previous character
        (``"said:{slot}"``) as a word start, so keep a space before slots. WordPiece ignores the
        space either way.
        """
        plain = self.encode(word)
        if not plain:
            raise ValueError(f"Candidate {word!r} encodes to no tokens.")
        if not after_space or self.tokenizer.convert_ids_to_tokens(plain[:1])[0].startswith("\u2581"):
            return plain
        return self.encode(" " + word)

    def causal_prefix(self) -> list[int]:
        bos = self.tokenizer.bos_token_id
        return [bos] if bos is not None else []

    def context_ids(self, text: str) -> list[int]:
        """What a causal LM conditions on for ``text``: BOS + its tokens, the one place this is built
        (slot scoring, sequence scores and generation all use it).

        Text that already opens with the BOS token, as a chat template's output does (SmolLM2's
        BOS *is* ``<|im_start|>``; Llama's templates write ``<s>``), is not given a second one.
        """
        ids = self.encode(text)
        prefix = self.causal_prefix()
        if prefix and ids[:len(prefix)] == prefix:
            return ids
        return prefix + ids

    # ---- forward passes

    @torch.no_grad()
    def logprobs(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Log-softmax over the vocabulary at every position, in float32."""
        logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
        return torch.log_softmax(logits.float(), dim=-1)

    def score_continuations(self, pairs: Sequence[tuple[list[int], list[int]]], batch_size: int,
                            progress: bool, description: str) -> np.ndarray:
        """Causal: sum of log P(continuation tokens | prefix tokens), one value per pair."""
        if any(not prefix for prefix, _ in pairs):
            raise ValueError("Cannot score the first token of a text without a BOS token before it.")
        totals = []
        for batch in batches(list(pairs), batch_size, progress, description):
            ids, mask = pad_right([prefix + continuation for prefix, continuation in batch], self.pad_id)
            logprobs = self.logprobs(ids, mask)
            for row, (prefix, continuation) in enumerate(batch):
                # token at position t is predicted by the logits at position t - 1
                positions = torch.arange(len(prefix) - 1, len(prefix) + len(continuation) - 1)
                targets = torch.tensor(continuation, dtype=torch.long)  # may be empty: sums to 0
                totals.append(logprobs[row, positions, targets].sum().item())
        return np.asarray(totals, dtype=np.float64)

    # ---- LanguageModel interface

    def fill_logprobs(self, contexts: Sequence[str], candidates: Sequence[str],
                      batch_size: int = 16, progress: bool = True) -> np.ndarray:
        contexts, candidates = list(contexts), list(candidates)
        if not candidates or not contexts:
            return np.zeros((len(contexts), len(candidates)))
        if self.kind == "masked":
            return self.masked_fill_logprobs(contexts, candidates, batch_size, progress)
        return self.causal_fill_logprobs(contexts, candidates, batch_size, progress)

    def masked_fill_logprobs(self, contexts, candidates, batch_size, progress) -> np.ndarray:
        candidate_ids = []
        for context in contexts:
            after_space = split_at_slot(context, self.SLOT)[0].endswith(" ")
            candidate_ids.append(torch.tensor([self.single_token(c, after_space) for c in candidates]))
        rows = self.masked_slot_distributions(contexts, batch_size, progress)
        return np.stack([row[ids].numpy() for row, ids in zip(rows, candidate_ids)]).astype(np.float64)

    def masked_slot_distributions(self, contexts, batch_size, progress):
        """Yield, per context, the log-softmax over the vocabulary at the masked slot (on the CPU)."""
        mask_token = self.tokenizer.mask_token
        if mask_token is None:
            raise ValueError(f"{self.spec!r} has no mask token.")
        filled = [mask_token.join(split_at_slot(c, self.SLOT)) for c in contexts]
        for batch in batches(filled, batch_size, progress, "fill (masked)"):
            encoded = self.tokenizer(batch, return_tensors="pt", padding=True)
            logprobs = self.logprobs(encoded["input_ids"], encoded["attention_mask"])
            for i in range(len(batch)):
                positions = (encoded["input_ids"][i] == self.tokenizer.mask_token_id).nonzero().flatten()
                if len(positions) != 1:
                    raise ValueError(f"Expected one mask token in {batch[i]!r}, found {len(positions)}.")
                yield logprobs[i, positions[0]].cpu()

    def slot_logprobs(self, contexts: Sequence[str], batch_size: int = 16, progress: bool = True) -> np.ndarray:
        """(n_contexts, vocab_size) log-probabilities of every token as the slot's first token.

        Masked: the distribution at the mask. Causal: the next-token distribution after the text
        before the slot (with the space before the slot left out of the prefix, so word-initial
        tokens such as ``Ġshe`` carry it). Useful for top-k fillers and for checking that the
        probabilities are normalised.
        """
        contexts = list(contexts)
        if self.kind == "masked":
            return np.stack([row.numpy() for row in self.masked_slot_distributions(contexts, batch_size, progress)])
        prefixes = [self.causal_slot_prefix(c) for c in contexts]
        return np.stack([row.numpy() for row in self.causal_slot_distributions(prefixes, batch_size, progress)])

    def causal_slot_distributions(self, prefixes: Sequence[list[int]], batch_size: int, progress: bool,
                                  label: str = "slot (causal)"):
        """Yield, per prefix (token ids, :meth:`causal_slot_prefix`), the log-softmax over the vocabulary of
        the token that follows it (on the CPU): the causal counterpart of :meth:`masked_slot_distributions`."""
        for batch in batches(list(prefixes), batch_size, progress, label):
            ids, mask = pad_right(batch, self.pad_id)
            logprobs = self.logprobs(ids, mask)
            for row, prefix in enumerate(batch):
                yield logprobs[row, len(prefix) - 1].cpu()

    def causal_slot_prefix(self, context: str) -> list[int]:
        """BOS + tokens of the text before the slot, without the space that precedes the slot."""
        before, _after = split_at_slot(context, self.SLOT)  # text after the slot is ignored
        prefix = self.context_ids(before[:-1] if before.endswith(" ") else before)
        if not prefix:
            raise ValueError(f"{self.spec!r} has no BOS token, so a slot at the very start of "
                             f"{context!r} cannot be scored.")
        return prefix

    def single_token(self, candidate: str, after_space: bool) -> int:
        ids = self.encode_word(candidate, after_space)
        if len(ids) != 1:
            pieces = self.tokenizer.convert_ids_to_tokens(ids)
            raise ValueError(
                f"Candidate {candidate!r} is {len(ids)} tokens {pieces} for {self.spec!r}; a masked LM "
                "fills one token per slot. Use single-token candidates, or compare the filled "
                "sentences with sequence_logprob (pseudo-log-likelihood).")
        return ids[0]

    def causal_fill_logprobs(self, contexts, candidates, batch_size, progress) -> np.ndarray:
        """log P(candidate | text before the slot), summed over the candidate's tokens.

        A candidate of one token is read from its context's next-token distribution, one forward pass
        per context for all of them (the pronouns "she", "he", "they" are one token each in byte-level
        BPE); a longer one is scored as a continuation of the prefix. Under the causal mask the two are
        the same numbers (tests/core/models/test_language.py), the first at a third of the passes."""
        prefixes, encoded = [], []
        for context in contexts:
            after_space = split_at_slot(context, self.SLOT)[0].endswith(" ")
            prefixes.append(self.causal_slot_prefix(context))
            encoded.append([self.encode_word(candidate, after_space) for candidate in candidates])
        scores = np.zeros((len(contexts), len(candidates)))
        single = [(row, [column for column, ids in enumerate(words) if len(ids) == 1])
                  for row, words in enumerate(encoded)]
        single = [(row, columns) for row, columns in single if columns]
        rows = self.causal_slot_distributions([prefixes[row] for row, _ in single], batch_size, progress,
                                              "fill (causal, one token)")
        for (row, columns), distribution in zip(single, rows):
            tokens = torch.tensor([encoded[row][column][0] for column in columns], dtype=torch.long)
            scores[row, columns] = distribution[tokens].double().numpy()
        longer = [(row, column) for row, words in enumerate(encoded) for column, ids in enumerate(words) if len(ids) > 1]
        if longer:
            values = self.score_continuations([(prefixes[row], encoded[row][column]) for row, column in longer],
                                              batch_size, progress, "fill (causal)")
            for (row, column), value in zip(longer, values):
                scores[row, column] = value
        return scores

    def sequence_logprob(self, texts: Sequence[str], batch_size: int = 16,
                         progress: bool = True) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros(0)
        if self.kind == "masked":
            return self.pseudo_log_likelihood(texts, batch_size, progress)
        pairs = []
        for text in texts:
            ids = self.context_ids(text)
            pairs.append((ids[:1], ids[1:]))  # without BOS the first token goes unscored
        return self.score_continuations(pairs, batch_size, progress, "sequence (causal)")

    def pseudo_log_likelihood(self, texts: list[str], batch_size: int, progress: bool) -> np.ndarray:
        """Sum over non-special tokens of log P(token | all other tokens), one masked copy each."""
        special = set(self.tokenizer.all_special_ids)
        copies = []  # (text index, ids with one position masked, position, original id)
        for index, text in enumerate(texts):
            ids = self.tokenizer(text)["input_ids"]
            for position, token in enumerate(ids):
                if token not in special:
                    masked = list(ids)
                    masked[position] = self.tokenizer.mask_token_id
                    copies.append((index, masked, position, token))
        totals = np.zeros(len(texts))
        for batch in batches(copies, batch_size, progress, "sequence (pseudo-log-likelihood)"):
            ids, mask = pad_right([masked for _, masked, _, _ in batch], self.pad_id)
            logprobs = self.logprobs(ids, mask)
            for row, (index, _, position, token) in enumerate(batch):
                totals[index] += logprobs[row, position, token].item()
        return totals

    @torch.no_grad()
    def sentence_embeddings(self, texts: Sequence[str], batch_size: int = 16, progress: bool = True) -> np.ndarray:
        """(n_texts, hidden size) float32: the last layer's hidden state of a masked LM's first token
        or a causal LM's last token (see the module docstring); right padding leaves both unchanged."""
        texts = list(texts)
        if self.kind == "masked":
            sequences = [self.tokenizer(text)["input_ids"] for text in texts]
            positions = [0] * len(texts)
        else:
            sequences = [self.context_ids(text) for text in texts]
            positions = [len(ids) - 1 for ids in sequences]
        if any(not ids for ids in sequences):
            raise ValueError(f"{self.spec!r} encodes an empty text to no tokens; give each text a word")
        rows = []
        indexed = list(zip(sequences, positions))
        for batch in batches(indexed, batch_size, progress, "sentence embeddings"):
            ids, mask = pad_right([ids for ids, _ in batch], self.pad_id)
            # the body without its language-model head: the head's logits over the vocabulary at every
            # position would cost most of the time and are not wanted here
            output = self.model.base_model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))
            last = output.last_hidden_state.float()
            rows.extend(last[row, position].cpu().numpy() for row, (_, position) in enumerate(batch))
        if not rows:
            return np.zeros((0, self.model.config.hidden_size), dtype=np.float32)
        return np.stack(rows).astype(np.float32)

    @torch.no_grad()
    def generate(self, prompts: Sequence[str], max_new_tokens: int = 40, temperature: float = 1.0,
                 top_p: float = 1.0, num_return_sequences: int = 1, seed: int = 0,
                 batch_size: int = 8, progress: bool = True) -> list[list[str]]:
        if self.kind != "causal":
            raise TypeError(f"{self.spec!r} is a masked LM; only causal LMs generate text.")
        prompts = list(prompts)
        jobs = [(p, j) for p in range(len(prompts)) for j in range(num_return_sequences)]
        outputs: list[list[str]] = [[] for _ in prompts]
        for batch in batches(jobs, batch_size, progress, "generate"):
            texts = self.sample_batch([prompts[p] for p, _ in batch],
                                      [sample_seed(seed, prompts[p], j) for p, j in batch],
                                      max_new_tokens, temperature, top_p)
            for (p, _), text in zip(batch, texts):
                outputs[p].append(text)
        return outputs

    def sample_batch(self, prompts: list[str], seeds: list[int], max_new_tokens: int,
                     temperature: float, top_p: float) -> list[str]:
        """Sample continuations of left-padded prompts, each row with its own generator."""
        ids, mask = pad_left([self.context_ids(p) for p in prompts], self.pad_id)
        if ids.shape[1] == 0:
            raise ValueError("Cannot generate from an empty prompt without a BOS token.")
        ids, mask = ids.to(self.device), mask.to(self.device)
        generators = [torch.Generator().manual_seed(s) for s in seeds]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding must not shift positions
        eos = self.tokenizer.eos_token_id
        output = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
        new_tokens = [[] for _ in prompts]
        finished = [False] * len(prompts)
        for _step in range(max_new_tokens):
            last_logits = output.logits[:, -1, :]
            step_tokens = []
            for row, generator in enumerate(generators):
                token = sample_token(last_logits[row], temperature, top_p, generator)
                if not finished[row]:
                    if token == eos:
                        finished[row] = True
                    else:
                        new_tokens[row].append(token)
                step_tokens.append(token if not finished[row] else self.pad_id)
            if all(finished):
                break
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            positions = positions[:, -1:] + 1
            output = self.model(input_ids=torch.tensor(step_tokens, device=self.device)[:, None],
                                attention_mask=mask, position_ids=positions,
                                past_key_values=output.past_key_values, use_cache=True)
        return [self.tokenizer.decode(tokens, skip_special_tokens=True) for tokens in new_tokens]
