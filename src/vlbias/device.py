"""Device and precision choice shared by every model backend."""

from __future__ import annotations

import torch


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
    """Half precision on GPUs by default (fp16 is what the papers' models were released in);
    float32 on the CPU, where half precision is slow and inaccurate."""
    if half is None:
        half = device.type in ("cuda", "mps")
    return torch.float16 if half else torch.float32
