"""Generate images to disk with a manifest, resumably, by one or several processes at once.

Each job (a row with at least ``prompt`` and ``seed``) becomes one PNG. Images are written to a
temporary name and renamed into place, and the manifest gains a line only after its image is on
disk, so a killed run loses at most the batch in flight and a rerun skips finished jobs.

Rows are appended as whole lines, one write per batch, under a file lock (``.manifest.lock``);
a process generating a job holds that job's lock in ``.claims/``, so two runs on one folder share
the jobs instead of drawing them twice. A last line cut off by a crash is dropped with a warning
and its job is drawn again.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import warnings
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
from filelock import FileLock, Timeout
from tqdm import tqdm  # text bars: widgets would need ipywidgets

from ..cache import write_atomically
from ..embeddings import FileImages
from ..models.base import TextToImageModel

MANIFEST = "manifest.csv"


#: occupation words that name something else in an image prompt, with the prompt word used instead
IMAGE_PROMPT_WORDS = {
    # WinoBias's "sewer" is a person who sews (BLS: sewing machine operators); a text-to-image model
    # reads "A photo of a sewer" as a drain
    "sewer": "sewing machine operator",
}

# words whose first letter's sound is not what the letter suggests
_VOWEL_SOUND_WORDS = ("hour", "honest", "honor", "honour", "heir")
_CONSONANT_SOUND_PREFIXES = ("uni", "use", "usu", "uti", "uro", "eu", "ewe", "one", "once", "ubiq")
_VOWEL_SOUND_LETTERS = set("AEFHILMNORSX")  # initialisms: "an HVAC installer", "an MRI technician"


def indefinite_article(phrase: str) -> str:
    """``"a"`` or ``"an"`` for the first word of ``phrase``, by its sound (spelled-out initialisms too)."""
    word = phrase.strip().split(" ")[0] if phrase.strip() else ""
    if not word:
        raise ValueError("indefinite_article needs a word")
    spelled = word.split("-")[0]
    if spelled.isupper():  # read letter by letter: "HVAC", "X-ray"
        return "an" if word[0] in _VOWEL_SOUND_LETTERS else "a"
    lower = word.lower()
    if lower.startswith(_VOWEL_SOUND_WORDS):
        return "an"
    if lower.startswith(_CONSONANT_SOUND_PREFIXES):
        return "a"
    return "an" if lower[0] in "aeiou" else "a"


def subject_prompt(template: str, subject: str, field: str = "profession", articles: str = "follow",
                   prompt_words: dict[str, str] | None = None) -> str:
    """``template`` filled with ``subject``.

    ``articles="follow"``: an ``a``/``an`` right before the placeholder agrees with the word put
    there ("A photo of an accountant", "an HVAC installer"); ``"literal"`` keeps the template's
    article as written (the source text's ``A photo of a {profession}`` read literally).
    ``prompt_words`` maps subjects to the words drawn instead (default :data:`IMAGE_PROMPT_WORDS`).
    """
    import re

    if articles not in ("follow", "literal"):
        raise ValueError(f"articles must be 'follow' or 'literal', got {articles!r}")
    placeholder = "{" + field + "}"
    if placeholder not in template:
        raise ValueError(f"template needs {placeholder}: {template!r}")
    word = (IMAGE_PROMPT_WORDS if prompt_words is None else prompt_words).get(subject, subject)
    if articles == "follow":
        def agree(match):
            article = indefinite_article(word)
            return (article.capitalize() if match.group(1)[0].isupper() else article) + " " + placeholder
        template = re.sub(r"\b([Aa]n?) " + re.escape(placeholder), agree, template)
    return template.replace(placeholder, word)


def prompt_jobs(subjects: list[str], template: str, per_subject: int, seed: int = 0,
                field: str = "profession", articles: str = "follow",
                prompt_words: dict[str, str] | None = None) -> pd.DataFrame:
    """``per_subject`` jobs per subject with the prompt :func:`subject_prompt` (``template`` filled
    with the subject, the article agreeing with it unless ``articles="literal"``, ambiguous words
    such as WinoBias's "sewer" replaced, see :data:`IMAGE_PROMPT_WORDS`; ``prompt_words={}`` keeps
    every word).

    Seeds are ``seed * 1_000_000 + subject_index * 1_000 + k``: distinct for up to 1,000 images
    per subject, and a subject's seeds do not change when others are added after it.
    """
    if per_subject > 1_000:
        raise ValueError("per_subject is at most 1,000 with this seed layout")
    prompts = {subject: subject_prompt(template, subject, field, articles, prompt_words) for subject in subjects}
    return pd.DataFrame([{field: subject, "prompt": prompts[subject], "seed": seed * 1_000_000 + i * 1_000 + k}
                         for i, subject in enumerate(subjects) for k in range(per_subject)])


def job_file_name(job_id: int, seed: int) -> str:
    return f"{job_id:06d}_seed{seed}.png"


def read_manifest(out_dir: Path) -> pd.DataFrame:
    """The finished jobs of ``out_dir``, one row per job (the first if a job was recorded twice).

    A last line without its end (a crash while it was written) is dropped with a warning; a ``file``
    that is not a plain name inside ``out_dir`` is refused.
    """
    path = Path(out_dir) / MANIFEST
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    whole, _, partial = text.rpartition("\n")
    if partial:
        warnings.warn(f"{path}: dropped a cut-off last line ({partial[:60]!r}); its job is generated again.",
                      stacklevel=2)
    if not whole.strip():
        return pd.DataFrame(columns=["job_id", "file", "prompt", "seed"])
    manifest = pd.read_csv(io.StringIO(whole + "\n"), keep_default_na=False)
    for name in manifest["file"]:
        _check_file_name(name, path)
    return manifest.drop_duplicates("job_id", ignore_index=True)


def _check_file_name(name: str, where: Path) -> None:
    """Refuse file names that would reach outside the run's folder (``../x.png``, ``/etc/x``)."""
    if not name or Path(name).name != name or name in {".", ".."}:
        raise ValueError(f"{where}: file {name!r} is not a plain file name inside its folder; "
                         "the manifest was edited or damaged. Fix that row or use a new output folder.")


def _append_rows(out_dir: Path, columns: list[str], rows: list[dict]) -> None:
    """Append whole lines under the manifest lock, writing the header first into a new manifest and
    cutting off a partial last line left by a crash, so a new row is never glued to it."""
    path = out_dir / MANIFEST
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    with FileLock(out_dir / ".manifest.lock"):
        size = path.stat().st_size if path.exists() else 0
        if size == 0:
            writer.writeheader()
        else:
            _check_header(path, columns)
            _cut_partial_line(path)
        writer.writerows(rows)
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, buffer.getvalue().encode("utf-8"))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _cut_partial_line(path: Path) -> None:
    """Truncate ``path`` after its last newline (appends hold the lock, so a partial line is a crash's)."""
    with open(path, "rb+") as stream:
        stream.seek(-1, os.SEEK_END)
        if stream.read(1) != b"\n":
            stream.seek(0)
            stream.truncate(stream.read().rfind(b"\n") + 1)


def _check_header(path: Path, columns: list[str]) -> None:
    with open(path, encoding="utf-8") as existing:
        header = next(csv.reader(existing), [])
    if header != columns:
        raise ValueError(f"{path} was written with columns {header}, this run's are {columns}: "
                         "the jobs or settings changed. Use a new output folder, or restore the settings.")


def _finished_jobs(out_dir: Path) -> set[int]:
    """Job ids whose row and image are both on disk (read under the manifest lock)."""
    with FileLock(out_dir / ".manifest.lock"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a cut-off line was reported when the run started
        done = read_manifest(out_dir)
    return {int(j) for j, f in zip(done["job_id"], done["file"]) if (out_dir / f).exists()}


def generate_to_disk(model: TextToImageModel, jobs: pd.DataFrame, out_dir: str | Path, batch_size: int = 4,
                     progress: bool = True, only: Iterable[int] | None = None, **settings: Any) -> pd.DataFrame:
    """Generate every job not yet on disk; return the manifest of all finished jobs.

    ``settings`` (num_inference_steps, guidance_scale, height, width, ...) go to
    ``model.generate`` and are recorded in the manifest, one column each. Several processes may
    run this on one folder at once: each draws the jobs no other is drawing, then waits for those.
    ``only`` (job ids, i.e. row positions of ``jobs``) draws just those jobs of the list: a worker
    of ``python -m vlbias precompute`` takes one batch this way.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    missing = {"prompt", "seed"} - set(jobs.columns)
    if missing:
        raise ValueError(f"jobs need columns {sorted(missing)}")
    jobs = jobs.reset_index(drop=True)
    with FileLock(out_dir / ".manifest.lock"):  # not while another run appends
        done = read_manifest(out_dir)
    _check_same_jobs(done, jobs, out_dir)
    weights = model_weights(model)
    _check_same_settings(done, {"model": model.spec, "weights": weights, **settings}, out_dir)
    columns = ["job_id", "file", *jobs.columns, "model", "weights", *sorted(settings)]
    if (out_dir / MANIFEST).exists() and (out_dir / MANIFEST).stat().st_size:
        _check_header(out_dir / MANIFEST, columns)
    finished = _finished_jobs(out_dir)
    wanted = range(len(jobs)) if only is None else sorted({int(i) for i in only} & set(range(len(jobs))))
    pending = [i for i in wanted if i not in finished]

    claims = out_dir / ".claims"
    claims.mkdir(exist_ok=True)
    wait = False
    with tqdm(total=len(pending), desc="generating", unit="image", disable=not progress) as bar:
        while pending:
            busy = []  # jobs another process is drawing: wait for them afterwards
            for begin in range(0, len(pending), batch_size):
                held = {}
                for job_id in pending[begin:begin + batch_size]:
                    lock = FileLock(claims / f"{job_id:06d}.lock", timeout=-1 if wait else 0)
                    try:
                        lock.acquire()
                        held[job_id] = lock
                    except Timeout:
                        busy.append(job_id)
                try:
                    finished = _finished_jobs(out_dir) if held else finished
                    batch = [job_id for job_id in held if job_id not in finished]
                    if batch:
                        _generate_batch(model, jobs, batch, out_dir, columns, batch_size, settings)
                    for job_id in held:  # waiters re-read the manifest before drawing: safe to remove
                        (claims / f"{job_id:06d}.lock").unlink(missing_ok=True)
                finally:
                    for lock in held.values():
                        lock.release()
                bar.update(len(held))
            pending, wait = busy, True
    manifest = read_manifest(out_dir)
    manifest = manifest[manifest["job_id"].astype(int) < len(jobs)]  # a folder may hold a longer job list
    return manifest.sort_values("job_id").reset_index(drop=True)


def _generate_batch(model: TextToImageModel, jobs: pd.DataFrame, batch: list[int], out_dir: Path,
                    columns: list[str], batch_size: int, settings: dict[str, Any]) -> None:
    """Draw one batch, put its images in place, then record them in the manifest."""
    rows = jobs.iloc[batch]
    images = model.generate(list(rows["prompt"]), [int(s) for s in rows["seed"]],
                            batch_size=batch_size, progress=False, **settings)
    records = []
    for job_id, (_, row), image in zip(batch, rows.iterrows(), images):
        name = job_file_name(job_id, int(row["seed"]))
        png = io.BytesIO()
        image.save(png, format="PNG")
        write_atomically(out_dir / name, png.getvalue())
        records.append({"job_id": job_id, "file": name, **row.to_dict(), "model": model.spec,
                        "weights": model_weights(model), **settings})
    _append_rows(out_dir, columns, records)


def model_weights(model: TextToImageModel) -> str:
    """What the weights drawing into a folder are (:attr:`ModelIdentity.weights`: a fingerprint or the
    hub snapshot's revision), for the manifest's ``weights`` column; a wrapper (CADS) names its base
    model's, a model no loader identified its spec. Other weights under the same spec (a hub snapshot
    updated, a local folder retrained, a rehearsal's random weights) are then refused by the folder
    instead of resumed beside its images."""
    inner = model
    while getattr(inner, "identity", None) is None and getattr(inner, "model", None) is not None \
            and getattr(inner.model, "generate", None) is not None:
        inner = inner.model
    identity = getattr(inner, "identity", None)
    return identity.weights if identity is not None else f"spec:{getattr(model, 'spec', type(model).__name__)}"


def _check_same_settings(done: pd.DataFrame, settings: dict[str, Any], out_dir: Path) -> None:
    """Refuse to add images made with other settings (or another model) to a folder's manifest."""
    for name, value in settings.items():
        if name not in done.columns or done.empty:
            continue  # a new column is caught by the header check
        recorded = {str(v) for v in done[name]}
        if recorded != {"" if value is None else str(value)}:  # the CSV holds None as an empty field
            if name == "weights":
                raise ValueError(f"{out_dir} holds images drawn by other weights under the same spec ({sorted(recorded)}); "
                                 f"this run's model has {value}. Use a new output folder (output_dir) for these "
                                 "weights, or load the weights that drew the folder.")
            raise ValueError(f"{out_dir} holds images made with {name}={sorted(recorded)}, this run asks for "
                             f"{name}={value!r}: the settings changed. Use a new output folder, or restore the settings.")


def _check_same_jobs(done: pd.DataFrame, jobs: pd.DataFrame, out_dir: Path) -> None:
    """Refuse a folder whose finished jobs are other (prompt, seed) pairs than this run's same job ids:
    resuming there would mix two experiments under one manifest."""
    if done.empty:
        return
    ids = done["job_id"].astype(int).to_numpy()
    inside = ids < len(jobs)
    expected = jobs.iloc[ids[inside]]
    same = ((done["prompt"].astype(str).to_numpy()[inside] == expected["prompt"].astype(str).to_numpy())
            & (done["seed"].astype("int64").to_numpy()[inside] == expected["seed"].astype("int64").to_numpy()))
    if not same.all():
        row = done[inside][~same].iloc[0]
        raise ValueError(f"{out_dir} holds job {row['job_id']} as ({row['prompt']!r}, seed {row['seed']}), but this run's "
                         f"job {row['job_id']} is ({jobs.iloc[int(row['job_id'])]['prompt']!r}, seed "
                         f"{jobs.iloc[int(row['job_id'])]['seed']}): the job list changed. Use a new output folder.")


def run_directory(output_dir: str | Path, model_spec: str, sampler: str = "plain") -> Path:
    """``output_dir/<model>/<sampler>``, with characters that do not belong in folder names replaced.

    A ``trained:`` spec's folder also names its checkpoint's key (the recipe's version and every
    option, defaults included: the end of the trained directory's name), found without training: a
    model retrained under other defaults or a new recipe draws into a folder of its own instead of
    resuming beside the old model's images, which stay where they are.
    """
    def safe(text: str) -> str:
        return "".join(c if c.isalnum() or c in "-_.=," else "_" for c in str(text)).strip("_") or "_"

    key = _trained_key(str(model_spec))
    return Path(output_dir) / safe(f"{model_spec}@{key}" if key else model_spec) / safe(sampler)


def _trained_key(spec: str) -> str | None:
    """The key ending a ``trained:`` spec's checkpoint directory name (``None`` for other specs, for a
    weights label that already names them, and for a recipe that cannot tell without training)."""
    if not spec.startswith("trained:") or "@" in spec:
        return None
    from ..models.trained import trained_options

    recipe, options = trained_options(spec.removeprefix("trained:"))
    return None if recipe.target is None else Path(recipe.target(**options)).name.rsplit("-", 1)[-1]


class ImageFiles(FileImages):
    """The images of a manifest as a lazy sequence (:class:`~vlbias.embeddings.FileImages`): indexing opens
    files (RGB), nothing is held.

    ``identity`` names the images for embedding caches by what produced them (model, prompt,
    seed and settings of every row), so a regenerated identical run reuses its embeddings.
    """

    def __init__(self, manifest: pd.DataFrame, out_dir: str | Path):
        self.out_dir = Path(out_dir)
        names = list(manifest["file"])
        for name in names:
            _check_file_name(name, self.out_dir)
        recipe = manifest.drop(columns=["job_id", "file"], errors="ignore").to_csv(index=False)
        super().__init__([self.out_dir / name for name in names],
                         identity=f"t2i-images/{len(names)}@{hashlib.sha256(recipe.encode()).hexdigest()[:16]}")


def redraw_check(model: TextToImageModel, manifest: pd.DataFrame, out_dir: str | Path, n: int = 8,
                 batch_size: int = 4, **settings: Any) -> pd.DataFrame:
    """Draw the manifest's first ``n`` images again from their recorded prompts and seeds, as one run
    draws them (``batch_size`` and ``settings`` as there), and compare each with its file on disk: the
    source text's fixed seed per image claims that this gives the same picture. One row per image:
    ``file``, ``prompt``, ``seed`` and the largest and mean absolute difference of its pixels, in 8-bit
    levels (0: the same picture). Nothing on disk is written."""
    import numpy as np

    if n < 1:
        raise ValueError(f"redraw_check: n={n!r} images to draw again; give at least 1.")
    rows = manifest.sort_values("job_id").head(n) if "job_id" in manifest else manifest.head(n)
    if rows.empty:
        raise ValueError("redraw_check: the manifest is empty; generate images first (generate_to_disk).")
    images = model.generate(list(rows["prompt"]), [int(s) for s in rows["seed"]], batch_size=batch_size,
                            progress=False, **settings)
    files = ImageFiles(rows, out_dir)
    out = []
    for (_, row), image, stored in zip(rows.iterrows(), images, files):
        difference = np.abs(np.asarray(image.convert("RGB"), dtype=np.int16) - np.asarray(stored, dtype=np.int16))
        out.append({"file": row["file"], "prompt": row["prompt"], "seed": int(row["seed"]),
                    "max_difference": int(difference.max()), "mean_difference": float(difference.mean())})
    return pd.DataFrame(out)
