"""Device and precision choice: an explicit device wins; "auto" takes cuda, then mps, then cpu."""

import pytest
import torch

from vlbias.device import resolve_device, resolve_dtype


def test_an_explicit_device_is_returned_as_asked():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)   # not checked for presence: the caller asked


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")])
@pytest.mark.parametrize("asked", [None, "", "auto"])
def test_auto_prefers_cuda_then_mps_then_cpu(monkeypatch, asked, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert resolve_device(asked) == torch.device(expected)


def test_half_precision_by_default_on_gpus_only():
    assert resolve_dtype(torch.device("cuda")) == torch.float16
    assert resolve_dtype(torch.device("mps")) == torch.float16
    assert resolve_dtype(torch.device("cpu")) == torch.float32
    assert resolve_dtype(torch.device("cpu"), half=True) == torch.float16
    assert resolve_dtype(torch.device("cuda"), half=False) == torch.float32
