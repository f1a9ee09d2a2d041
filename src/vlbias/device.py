"""Device, precision and torch thread-count choice shared by every model backend and trainer."""

from __future__ import annotations

import os
from contextlib import contextmanager

import torch

#: the CPU cores a process may use, set by ``python -m vlbias run`` for each notebook it runs
#: (the machine's cores divided among the notebooks running at once)
CPU_BUDGET_VARIABLE = "VLBIAS_CPUS"


def cpu_budget() -> int:
    """The cores this process is given: ``VLBIAS_CPUS`` when set (the runner sets it for each notebook,
    so that notebooks run side by side do not oversubscribe the machine), else the cores it may run on.

    Work that runs side by side (training several models, decoding images) uses this many workers.
    """
    text = os.environ.get(CPU_BUDGET_VARIABLE, "").strip()
    if text:
        try:
            count = int(text)
        except ValueError:
            count = 0
        if count < 1:
            raise ValueError(f"{CPU_BUDGET_VARIABLE}={text!r}: expected a whole number of cores, 1 or more "
                             "(the cores this process may use), or unset it to use the machine's")
        return count
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """Return the requested device, or the best available one: cuda, then mps, then cpu."""
    if device not in (None, "", "auto"):
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve_dtype(device: torch.device, half: bool | None = None) -> torch.dtype:
    """float32 unless ``half`` is true (``None`` is false), for every kind of model alike: the papers'
    reference precision. ``half=True`` gives fp16 on any device (on the CPU it is slow and less
    accurate: the tests use it there to check fp16 paths)."""
    return torch.float16 if half else torch.float32


@contextmanager
def torch_threads(count: int | None):
    """Run the block with ``count`` torch intra-op threads, restored after; ``None`` (or 0) keeps
    the current setting.

    Small models train and decode fastest on one thread: token-by-token decoding and tiny
    training steps run many small matrix products, and on a small shared CPU the threads'
    synchronisation costs more than they save (measured: 6 stories x 48 tokens of SmolLM2-135M
    took 54 s with 2 threads on a busy 2-core machine, 7 s with 1). Trainers also run on one
    thread so that their weights do not depend on the machine's thread count.
    """
    before = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
