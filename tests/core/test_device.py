"""Device and precision choice: an explicit device wins; "auto" takes cuda, then mps, then cpu."""

import pytest
import torch

from vlbias.device import resolve_device, resolve_dtype, torch_threads


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


def test_float32_unless_half_is_asked_for_on_every_device():
    assert resolve_dtype(torch.device("cuda")) == torch.float32  # None is float32 on every device
    assert resolve_dtype(torch.device("cuda"), half=True) == torch.float16
    assert resolve_dtype(torch.device("mps"), half=True) == torch.float16
    assert resolve_dtype(torch.device("cpu")) == torch.float32
    assert resolve_dtype(torch.device("cpu"), half=True) == torch.float16
    assert resolve_dtype(torch.device("cuda"), half=False) == torch.float32


def test_torch_threads_sets_and_restores_the_thread_count():
    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    with torch_threads(target):
        assert torch.get_num_threads() == target
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError):
        with torch_threads(target):
            raise RuntimeError("inside")
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before
