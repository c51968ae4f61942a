"""The plain baseline of the throughput benchmark (torch's TransformerEncoderLayer) computes the
replica-batched encoder's function."""

import numpy as np
import torch

from .bench import PlainEncoder
from .models import EncoderConfig, ReplicaEncoder


def test_plain_encoder_computes_the_replica_models_function():
    cfgs = [EncoderConfig(3, 8, H, 8, s) for s, H in enumerate((1, 2, 8))]
    model = ReplicaEncoder(cfgs, 5)
    x = torch.randn(4, 5, 3, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(x.expand(3, -1, -1, -1))
        for r, c in enumerate(cfgs):
            st = model.replica_state(r)
            plain = PlainEncoder(3, 8, c.H, 8, 5)
            lay = plain.layer
            pairs = [(plain.embed.weight, "W_E"), (plain.embed.bias, "b_E"), (lay.self_attn.in_proj_weight, "W_in"),
                     (lay.self_attn.in_proj_bias, "b_in"), (lay.self_attn.out_proj.weight, "W_out"),
                     (lay.self_attn.out_proj.bias, "b_out"), (lay.norm1.weight, "ln1_g"), (lay.norm1.bias, "ln1_b"),
                     (lay.norm2.weight, "ln2_g"), (lay.norm2.bias, "ln2_b"), (lay.linear1.weight, "W_1"),
                     (lay.linear1.bias, "b_1"), (lay.linear2.weight, "W_2"), (lay.linear2.bias, "b_2"),
                     (plain.readout.weight, "W_R"), (plain.readout.bias, "b_R")]
            for param, name in pairs:
                param.copy_(st[name])
            np.testing.assert_allclose(plain(x).numpy(), want[r].numpy(), rtol=1e-4, atol=1e-5)
