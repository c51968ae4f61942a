import itertools

import numpy as np
import pytest
import torch

from attnlab.core.experiment import Incomplete

from . import khop as K
from .programs import ReplicaAdamW, run_program


def no_repeat_strings(letters: int, length: int) -> np.ndarray:
    return np.array([s for s in itertools.product(range(letters), repeat=length)
                     if all(a != b for a, b in zip(s, s[1:]))]).reshape(-1, length)


@pytest.mark.parametrize("length", range(1, 8))
def test_hops_equal_the_definition_on_every_short_string(length):
    s = no_repeat_strings(3, length)  # every string over 3 letters with no immediate repetition
    for k in range(4):
        got = K.hop(s, k)
        for row, g in zip(s, got):
            ref = K.hop_bruteforce(list(row), k)
            assert [None if v < 0 else int(v) for v in g] == ref, (row, k)


def test_hops_with_mixed_k_and_five_letters_equal_the_definition():
    rng = np.random.default_rng(1)
    s = K.sample_strings(rng, 300, 12)
    k = rng.integers(0, 4, size=300)
    got = K.hop(s, k)
    for row, kk, g in zip(s, k, got):
        assert [None if v < 0 else int(v) for v in g] == K.hop_bruteforce(list(row), int(kk))


def test_bruteforce_by_hand():
    # a b a c b a: hop_1 at the last a -> the char after the previous a (index 2) = c
    s = [0, 1, 0, 2, 1, 0]
    assert K.hop_bruteforce(s, 0) == s
    assert K.hop_bruteforce(s, 1) == [None, None, 1, None, 0, 2]
    assert K.hop_bruteforce(s, 2) == [None, None, None, None, 1, None]  # b(4) -> a(2) -> b(1)


def test_strings_have_no_immediate_repetition_and_use_every_letter():
    s = K.sample_strings(np.random.default_rng(0), 2000, 28)
    assert (s[:, 1:] != s[:, :-1]).all()
    counts = np.bincount(s.ravel(), minlength=5) / s.size
    assert np.abs(counts - 0.2).max() < 0.01


def test_generate_layout_tilde_and_hop_zero():
    rng = np.random.default_rng(2)
    x, y, k = K.generate(rng, 500, seq_len=30)
    assert x.shape == y.shape == (500, 29)
    assert (x[:, 0] == k).all() and (y[:, 0] == K.INDEX[K.BLANK]).all()
    assert set(np.unique(x[:, 1:])) <= set(K.char_ids("id"))
    zero = k == 0
    assert (y[zero, 1:] == x[zero, 1:]).all()  # hop 0 = copy
    letters = {int(t): i for i, t in enumerate(K.char_ids("id"))}
    for row_x, row_y, kk in zip(x[:50], y[:50], k[:50]):
        ref = K.hop_bruteforce([letters[int(t)] for t in row_x[1:]], int(kk))
        assert [(K.INDEX[K.TILDE] if r is None else int(K.char_ids("id")[r])) for r in ref] == row_y[1:].tolist()
    xo, yo, _ = K.generate(np.random.default_rng(2), 500, alphabet="ood")
    assert set(np.unique(xo[:, 1:])) <= set(K.char_ids("ood"))
    assert set(np.unique(yo[:, 1:])) <= set(K.char_ids("ood")) | {K.INDEX[K.TILDE]}
    assert len(K.VOCAB) == 16 and K.decode(x[0])[0] == str(k[0])


def _model(kinds_layers, dtype=torch.float64, seeds=None):
    cfgs = [K.KHopConfig(kind=k, layers=l, embed=12, heads=3, block=9) for k, l in kinds_layers]
    return K.KHopGPT(cfgs, seeds or [0] * len(cfgs), dtype=dtype)


def test_replica_alone_equals_replica_in_a_mixed_batch():
    tok = torch.randint(0, 16, (5, 9), generator=torch.Generator().manual_seed(0))
    mixed = _model([("standard", 3), ("positional", 2), ("standard", 1)])
    out = mixed(tok)
    for r, kl in enumerate([("standard", 3), ("positional", 2), ("standard", 1)]):
        alone = _model([kl])(tok)[0]
        assert torch.allclose(out[r], alone, atol=1e-12, rtol=0)


def test_causal_and_positional_attention_is_input_free():
    m = _model([("positional", 2), ("standard", 2)])
    a = torch.randint(0, 16, (4, 9), generator=torch.Generator().manual_seed(1))
    b = a.clone()
    b[:, 5:] = (b[:, 5:] + 1) % 16  # change the future only
    la, ma = m(a, return_attention=True)
    lb, mb = m(b, return_attention=True)
    assert torch.allclose(la[:, :, :5], lb[:, :, :5], atol=1e-12)
    assert not torch.allclose(la[:, :, 5:], lb[:, :, 5:])
    c = torch.randint(0, 16, (4, 9), generator=torch.Generator().manual_seed(2))
    _, mc = m(c, return_attention=True)
    for l in range(2):
        assert torch.equal(ma[l][0], mc[l][0])  # positional replica: bit-identical maps
        assert not torch.allclose(ma[l][1], mc[l][1])  # standard: not
        assert float(ma[l][0].detach().triu(1).abs().max()) == 0.0


def test_replica_adamw_with_clip_equals_torch_adamw_for_each_replica():
    x = torch.randint(0, 16, (6, 9), generator=torch.Generator().manual_seed(3))
    y = torch.randint(0, 16, (6, 9), generator=torch.Generator().manual_seed(4))
    both = _model([("standard", 2), ("positional", 2)], seeds=[5, 6])
    opt = ReplicaAdamW(list(both.named_parameters()), both.decay_names(), betas=(0.9, 0.95), weight_decay=0.1,
                       clip=0.05)
    for _ in range(4):
        for p in opt.params:
            p.grad = None
        K.replica_token_loss(both(x), y.expand(2, -1, -1)).sum().backward()
        opt.step(torch.full((2,), 1e-2, dtype=torch.float64))
    for r, (kind, seed) in enumerate([("standard", 5), ("positional", 6)]):
        m = _model([(kind, 2)], seeds=[seed])
        dec = [p for n, p in m.named_parameters() if n in m.decay_names()]
        nod = [p for n, p in m.named_parameters() if n not in m.decay_names()]
        t = torch.optim.AdamW([{"params": dec, "weight_decay": 0.1}, {"params": nod, "weight_decay": 0.0}],
                              lr=1e-2, betas=(0.9, 0.95))
        for _ in range(4):
            t.zero_grad()
            K.replica_token_loss(m(x), y.unsqueeze(0)).sum().backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 0.05)
            t.step()
        for n, p in m.named_parameters():
            assert torch.allclose(p[0], getattr(both, n)[r], atol=1e-10), n


def test_run_program_resumes_exactly_from_its_checkpoint(tmp_path):
    x = torch.randint(0, 16, (40, 9), generator=torch.Generator().manual_seed(7))
    y = torch.randint(0, 16, (40, 9), generator=torch.Generator().manual_seed(8))

    def make():
        m = _model([("positional", 1), ("standard", 1)])
        return m, ReplicaAdamW(list(m.named_parameters()), m.decay_names(), weight_decay=0.1, clip=1.0)

    def loss_fn(m):
        def f(gen):
            idx = torch.randint(0, 40, (8,), generator=gen)
            return K.replica_token_loss(m(x[idx]), y[idx].expand(2, -1, -1))
        return f

    m1, o1 = make()
    run_program(m1, o1, loss_fn(m1), 10, lambda s: 1e-2, torch.Generator().manual_seed(0), progress=False)
    m2, o2 = make()
    ck = str(tmp_path / "ck.pt")
    with pytest.raises(Incomplete):
        run_program(m2, o2, loss_fn(m2), 10, lambda s: 1e-2, torch.Generator().manual_seed(0), checkpoint=ck,
                    checkpoint_every=4, deadline=0.0, progress=False)
    m3, o3 = make()  # a fresh process: resumes from step 4
    run_program(m3, o3, loss_fn(m3), 10, lambda s: 1e-2, torch.Generator().manual_seed(0), checkpoint=ck,
                checkpoint_every=4, progress=False)
    for (n, p), q in zip(m1.named_parameters(), m3.parameters()):
        assert torch.equal(p, q), n


def test_evaluate_and_chance():
    x, y, _ = K.generate(np.random.default_rng(0), 64, seq_len=10)
    m = _model([("standard", 1), ("positional", 1)])
    ev = K.evaluate(m, x, y)
    assert len(ev["loss"]) == 2 and all(0 <= a <= 1 for a in ev["accuracy"])
    assert ev["loss"][0] == pytest.approx(np.log(16), rel=0.05)  # near-uniform logits at initialisation
    _, y30, _ = K.generate(np.random.default_rng(0), 4000)
    assert 0.28 < K.chance_accuracy(y30) < 0.36  # measured 0.32 at length 30 (mostly '~' at late hops)
