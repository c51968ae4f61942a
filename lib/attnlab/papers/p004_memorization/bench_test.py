"""The plain baseline of the throughput benchmark computes the replica-batched model's function."""

import numpy as np
import torch

from .bench import PlainAoT
from .models import AoTConfig, ReplicaAoT
from .tasks import lookup_table_task


def test_plain_aot_computes_the_replica_models_function():
    cfgs = [AoTConfig(10, 2, d, d_h, H, s) for s, (d, d_h, H) in enumerate(((4, 4, 1), (6, 3, 5)))]
    model = ReplicaAoT(cfgs)
    tokens, _ = lookup_table_task(10)
    with torch.no_grad():
        want = model(tokens)
        for r, c in enumerate(cfgs):
            st = model.replica_state(r)
            plain = PlainAoT(10, 2, c.d, c.d_h, c.H)
            plain.E.weight.copy_(st["E"])
            plain.W_U.weight.copy_(st["W_U"])
            for name in ("P", "W_Q", "W_K", "W_V", "W_O"):
                getattr(plain, name).copy_(st[name])
            np.testing.assert_allclose(plain(tokens).numpy(), want[r].numpy(), rtol=1e-4, atol=1e-4)
