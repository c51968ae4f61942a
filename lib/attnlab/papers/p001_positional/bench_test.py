"""The plain baseline of the throughput benchmark computes the replica-batched model's function."""

import numpy as np
import torch

from .bench import PlainPositional
from .models import ModelConfig, Transformer


def test_plain_positional_computes_the_replica_models_function():
    cfg = ModelConfig(n=6, kind="positional", heads=2, embed=8, hidden=12)
    model = Transformer([cfg, cfg], [0, 1])
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(x)
        for r in range(2):
            st = model.replica_state(r)
            plain = PlainPositional(6, 8, 12, 2, cfg.depth)
            plain.enc.weight.copy_(st["enc_W"].T); plain.enc.bias.copy_(st["enc_b"])
            plain.dec.weight.copy_(st["dec_W"].T); plain.dec.bias.copy_(st["dec_b"])
            for l in range(cfg.depth):
                for lin, nm in ((plain.q[l], "q"), (plain.k[l], "k")):  # [H, nodes, d_k] → Linear(nodes, H d_k)
                    lin.weight.copy_(st[f"{nm}_W{l}"].permute(0, 2, 1).reshape(-1, 7))
                    lin.bias.copy_(st[f"{nm}_b{l}"].reshape(-1))
                plain.v[l].weight.copy_(st[f"v_W{l}"].permute(1, 0, 2).reshape(8, -1).T)
                plain.v[l].bias.copy_(st[f"v_b{l}"].reshape(-1))
                plain.o[l].weight.copy_(st[f"o_W{l}"].reshape(-1, 8).T)
                plain.o[l].bias.copy_(st[f"o_b{l}"])
                plain.m1[l].weight.copy_(torch.cat([st[f"m1a_W{l}"], st[f"m1h_W{l}"]]).T)
                plain.m1[l].bias.copy_(st[f"m1_b{l}"])
                plain.m2[l].weight.copy_(st[f"m2_W{l}"].T); plain.m2[l].bias.copy_(st[f"m2_b{l}"])
            np.testing.assert_allclose(plain(x).numpy(), want[r].numpy(), rtol=1e-4, atol=1e-5)
