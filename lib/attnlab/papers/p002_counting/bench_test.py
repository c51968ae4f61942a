"""The plain baseline of the throughput benchmark computes the replica-batched model's function."""

import numpy as np
import pytest
import torch

from .bench import PlainCounting
from .models import CountingConfig, ReplicaCounting


@pytest.mark.parametrize("variant", ["dot", "lin+sftm", "dot+sftm", "lin"])
def test_plain_counting_model_computes_the_replica_models_function(variant):
    cfgs = [CountingConfig(variant, 8, 6, d, p, 0) for d, p in ((3, 5), (6, 2))]
    model = ReplicaCounting(cfgs)
    x = torch.randint(0, 8, (32, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(x)
        for r, c in enumerate(cfgs):
            w = model.weights(r)
            plain = PlainCounting(variant, 8, 6, c.d, c.p)
            plain.emb.weight.copy_(torch.from_numpy(w.emb))
            if variant.startswith("lin"):
                plain.A.copy_(torch.from_numpy(w.A))
            else:
                plain.W_Q.weight.copy_(torch.from_numpy(w.W_Q.T))
                plain.W_K.weight.copy_(torch.from_numpy(w.W_K.T))
            plain.W1.weight.copy_(torch.from_numpy(w.W1.T))
            plain.W1.bias.copy_(torch.from_numpy(w.b1))
            plain.W2.weight.copy_(torch.from_numpy(w.W2.T))
            plain.W2.bias.copy_(torch.from_numpy(w.b2))
            np.testing.assert_allclose(plain(x).numpy(), want[r].numpy(), rtol=1e-4, atol=1e-4)
