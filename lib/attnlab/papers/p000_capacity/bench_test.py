"""The plain baseline of the throughput benchmark computes the replica-batched model's function."""

import numpy as np
import torch

from .bench import PlainMaxQK
from .models import MaxOverHeadsQK, init_weights


def test_plain_max_qk_computes_the_replica_models_function():
    specs = [(1, 8), (4, 16), (8, 64)]
    inits = [init_weights(16, h, D, 64, s) for s, (h, D) in enumerate(specs)]
    model = MaxOverHeadsQK(16, specs, inits)
    with torch.no_grad():
        model.tau.copy_(torch.tensor([[0.1], [-0.2], [0.3]]))
        Xc = torch.randn(2, 16, 16, generator=torch.Generator().manual_seed(0))
        want = model(Xc)
        for r, (h, D) in enumerate(specs):
            plain = PlainMaxQK(*inits[r], h)
            plain.tau.copy_(model.tau[r])
            np.testing.assert_allclose(plain(Xc).numpy(), want[r].numpy(), rtol=1e-5, atol=1e-5)
