import pytest
import torch

from attnlab.papers.p003_allocation.devicecheck import DeviceMismatch, SameDevice, check_on_meta


class _Leaky(torch.nn.Module):
    """Keeps an index tensor in a plain attribute: .to() leaves it on the CPU."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3, 2))
        self.idx = torch.tensor([2, 0])

    def forward(self, x):
        return (x @ self.w).index_select(-1, self.idx.flip(0)[:1])


def test_a_cpu_index_next_to_meta_tensors_is_caught_and_a_0dim_cpu_scalar_is_not():
    with pytest.raises(DeviceMismatch, match="cpu"):
        check_on_meta(_Leaky(), torch.ones(4, 3))
    with SameDevice():
        y = torch.ones(3, device="meta") * torch.tensor(2.0)
    assert y.device.type == "meta"


def test_a_clean_module_passes_forward_and_backward():
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    out = check_on_meta(m, torch.ones(5, 3))
    assert out.shape == (5, 1) and out.device.type == "meta"
