"""What each notebook computes, declared once by its part and read by ``plan`` and ``precompute``.

A part declares each of its notebooks as a :class:`NotebookDeclaration`: the data sets it reads,
the parameters that name models, its heavy stages (:class:`StageDeclaration`) and the notebooks
whose outputs it reads. A stage says what kind of work it is (:data:`KINDS`), what one item is,
how many items the notebook's parameters ask for (the plan's cost model), and, where the work can
run ahead of the notebook, how to cut it into units and compute one (``python -m vlbias
precompute``): the very function the notebook calls, on one cache chunk or one batch of images.

The declarations live with the parts (``vlbias.<part>.stages``), as open_clip's model configs live
beside its factory: adding a notebook means its declaration plus the notebook. This module is the
core's vocabulary only; it imports no part (``vlbias.plan.declarations()`` gathers them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

#: the kinds of heavy stage, with what one item of each is
KINDS = {
    "image-embeddings": "images",
    "text-embeddings": "texts",
    "pair-scores": "pairs",
    "lm-scoring": "tokens",
    "generation": "images",
    "vlm-scoring": "image-text pairs",
    "annotation": "images",
    "training": "models",
}

Parameters = Mapping[str, Any]

# --------------------------------------------------------------------------- the plan's cost model

#: throughputs the estimates assume (``resources/plan_throughputs.json``, whose ``_source`` says
#: where they come from: assumptions, not measurements); a slower GPU scales every figure alike
THROUGHPUT_FILE = "plan_throughputs.json"
#: decoded image sizes and cache footprints used for the disk column
BYTES_PER_PNG = 450_000
FLOAT_BYTES = 4
#: image counts of the full data sets, used when the data are not on this machine
KNOWN_SIZES = {("fairface", "train"): 86_744, ("fairface", "val"): 10_954, ("coco", "val2017"): 5_000,
               ("flickr30k", "val"): 1_000, ("flickr30k", "test"): 1_000}


def resource_json(name: str) -> dict:
    """A JSON file of ``vlbias/resources``."""
    return json.loads(resources.files("vlbias").joinpath("resources", name).read_text(encoding="utf-8"))


@cache
def throughputs() -> dict[str, Any]:
    """The assumed throughputs by name (``"image embeddings/s"``: per architecture, ...)."""
    return {key: value for key, value in resource_json(THROUGHPUT_FILE).items() if not key.startswith("_")}


def architecture(spec: str) -> str:
    """The open_clip architecture a spec names, for its assumed rate (``"default"`` otherwise)."""
    return next((name for name in ("ViT-L-14", "ViT-B-16", "ViT-B-32") if str(spec).startswith(name)), "default")


def image_embedding_rate(spec: str) -> float:
    rates = throughputs()["image embeddings/s"]
    return rates.get(architecture(spec), rates["default"])


@dataclass(frozen=True)
class DataNeed:
    """A data set a notebook reads: ``load_dataset(name, root=parameters[root], split=..., **options)``."""

    name: str
    split: str | Sequence[str] | None = None
    root_parameter: str | None = "data_root"
    options: Mapping[str, Any] = field(default_factory=dict)
    #: for data a package carries rather than a loader (easy-VQA): the module that must be importable
    package: str | None = None
    #: what to do when the package is missing
    how: str = ""


@dataclass(frozen=True)
class Estimate:
    """One line of the plan's cost model: ``items`` of a stage's unit with ``spec``.

    ``key`` identifies the result (two notebooks computing one key compute it once: the second
    reads the first's cache); ``hours`` and ``disk_gb`` are the estimate at the assumed throughputs.
    """

    spec: str | None
    items: int
    line: str
    key: tuple | None = None
    hours: float = 0.0
    disk_gb: float = 0.0
    #: the plan line when an earlier notebook computes ``key``
    cached_line: str = ""


@dataclass
class Stage:
    """A precomputable stage: a model, the arguments of its notebook's cached call, and its units.

    Built by a part's :attr:`StageDeclaration.units` from the notebook's parameters; every value
    is plain and picklable, so a Ray actor on another node runs ``run_unit(stage, model, index,
    threads)`` (a module-level function of the part) exactly as the notebook's call would.
    """

    kind: str
    spec: str
    notebooks: list[str]
    load: dict[str, Any]        # keyword arguments of the model loader (device, half)
    call: dict[str, Any]        # what the cached call needs: data set, batch size, jobs, ...
    n_items: int
    unit_size: int              # rows per cache chunk, or jobs per generation batch
    run_unit: Callable | None = None
    #: which loader builds the model: "image-text" or "text-to-image"
    loader: str = "image-text"
    #: the model method a unit's forward pass calls (the tests' fault injection replaces it)
    forward: str = ""

    @property
    def label(self) -> str:
        where = self.call.get("dataset_name") or self.call.get("run_dir", "")
        return f"{self.kind} {self.spec} ({where})"

    @property
    def key(self) -> tuple:
        """Two stages with one key compute the same result (two notebooks reading one cache entry)."""
        return (self.kind, self.spec, repr(sorted(self.load.items())), self.call.get("identity"))

    @property
    def n_units(self) -> int:
        return math.ceil(self.n_items / self.unit_size)

    def unit_items(self, index: int) -> int:
        return min(self.n_items, (index + 1) * self.unit_size) - index * self.unit_size


@dataclass(frozen=True)
class Context:
    """Where a notebook runs: relative folders in its parameters are read against ``notebooks_dir``,
    its working directory, and data set sizes the plan found (``sizes[name]``: images).
    ``parameters_of(name)``, where the plan or precompute gives it, is what another notebook runs with
    under the same profile: a model card (05a) reuses the work of the notebooks whose measures it runs."""

    notebooks_dir: Path
    sizes: Mapping[str, int] = field(default_factory=dict)
    parameters_of: Callable[[str], Parameters] | None = field(default=None, compare=False)

    def folder(self, value):
        """A folder parameter as the notebook resolves it (``None``, ``"fixture"`` and generated
        worlds, ``"world"`` or ``"world?..."``, stay as they are)."""
        from .data.registry import is_world_root

        if value in (None, "fixture") or is_world_root(value):
            return value
        return str((self.notebooks_dir / Path(value).expanduser()).resolve())


@dataclass(frozen=True)
class StageDeclaration:
    """One heavy stage of a notebook.

    ``estimate(parameters, context)`` gives the plan's lines (:class:`Estimate`); ``units``, where
    given, gives the :class:`Stage` objects precompute runs (``None``: the notebook runs this stage
    itself, for the reason in ``left``). ``writes`` says in words which caches or folders it fills.
    """

    kind: str
    models: tuple[str, ...]
    estimate: Callable[[Parameters, Context], list[Estimate]]
    writes: str
    units: Callable[[Parameters, Context], list[Stage]] | None = None
    left: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} is not one of {sorted(KINDS)}")

    @property
    def unit(self) -> str:
        return KINDS[self.kind]


#: the power a planted page must reach for each contrast it tests
REQUIRED_POWER = 0.9


@dataclass(frozen=True)
class Power:
    """The power of one planted claim's contrast (planted minus control) at a page's sample size, at
    α = 0.05: the chance its interval lies beyond 0 when the planted effect is ``effect``.

    ``effect_text`` says what the effect is and where its size comes from; ``n`` and ``n_text`` the
    sample size it rests on ("720 pictures per race"); ``method`` how the power was computed ("closed
    form", "simulation of 2,000 studies from the world's parameters"); ``needed``: the ``n`` that would
    reach :data:`REQUIRED_POWER`, where this one does not; ``why``: why the page runs at ``n`` all the
    same (the demo's speed limit)."""

    claim: str
    effect: float
    effect_text: str
    n: int
    n_text: str
    power: float
    method: str
    needed: int | None = None
    why: str = ""

    @property
    def enough(self) -> bool:
        return self.power >= REQUIRED_POWER


def power_line(claim: str, effect: float, effect_text: str, n: int, n_text: str, se: float, method: str,
               why: str = "") -> Power:
    """A :class:`Power` from a standard error ``se`` of the contrast at ``n`` (shrinking as 1/√n): the
    closed-form normal power (:func:`vlbias.stats.normal_power`) and, below :data:`REQUIRED_POWER`, the
    ``n`` that would reach it (:func:`vlbias.stats.needed_size`)."""
    from .stats import needed_size, normal_power

    power = normal_power(effect, se)
    needed = None if power >= REQUIRED_POWER else needed_size(effect, se, n, REQUIRED_POWER)
    return Power(claim, effect, effect_text, n, n_text, power, method, needed, why)


@dataclass(frozen=True)
class NotebookDeclaration:
    """What a notebook reads and computes (see the module docstring).

    ``datasets(parameters)`` lists its :class:`DataNeed`; ``model_parameters`` the parameters whose
    values are model specs (a string or a list of them); ``reads`` the notebooks whose outputs
    (caches, image folders) it reads, so that ``python -m vlbias run`` starts it once they have
    succeeded (two notebooks that merely compute one cache entry or checkpoint need no ``reads``:
    the cache's locks have it computed once); ``memory_gb`` the peak resident memory its run is
    assumed to need where the runner has no measurement (the last run's on this machine, or for the
    demo ``resources/notebook_costs.json``, written by ``benchmarks/notebook_times.py --record``).
    """

    name: str
    datasets: Callable[[Parameters], list[DataNeed]] = lambda parameters: []
    model_parameters: tuple[str, ...] = ()
    stages: tuple[StageDeclaration, ...] = ()
    reads: tuple[str, ...] = ()
    memory_gb: float = 1.5
    #: parameters that name word vectors or other non-model resources the plan lists
    resource_parameters: tuple[str, ...] = ()
    #: ``(LIST, ONE)`` for a notebook that runs once per model: the runner executes it once for each
    #: spec in parameter ``LIST``, with parameter ``ONE`` set to that spec, each run a page of its
    #: own (:func:`vlbias.paths.instance_page`); ``()``: one run, one page
    per_spec: tuple[str, ...] = ()
    #: ``power(parameters) -> [Power]``: for a page that judges a planted cause against its control, the
    #: power of each contrast at the sample size its parameters give (shown in its banner; ``plan`` lists it)
    power: Callable[[Parameters], list[Power]] | None = None

    def __post_init__(self):
        if self.per_spec and (len(self.per_spec) != 2 or self.per_spec[0] not in self.model_parameters
                              or self.per_spec[1] not in self.model_parameters):
            raise ValueError(f"notebook {self.name!r}: per_spec takes (LIST, ONE), two of its model_parameters "
                             f"{self.model_parameters}; got {self.per_spec}")

    def specs(self, parameters: Parameters) -> list[str]:
        """The model specs the parameters name, each once, in declaration order."""
        return specs_of(parameters, self.model_parameters)


def specs_of(parameters: Parameters, names: Sequence[str]) -> list[str]:
    """The specs under ``names`` in ``parameters`` (a string, a list, or None), each once, in order."""
    found: list[str] = []
    for name in names:
        value = parameters.get(name)
        for spec in ([value] if isinstance(value, str) else value or []):
            if spec not in found:
                found.append(spec)
    return found


def register(registry: dict[str, NotebookDeclaration], *declarations: NotebookDeclaration) -> None:
    """Add declarations to a part's ``NOTEBOOKS``; a name declared twice is an error."""
    for declaration in declarations:
        if declaration.name in registry:
            raise ValueError(f"notebook {declaration.name!r} is declared twice")
        registry[declaration.name] = declaration
