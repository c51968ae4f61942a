import pytest

from attnlab.core.params import ParameterError

from .key_slices import slice_dims


def test_slice_dims_names_the_parameter_out_of_place():
    cfg = dict(T=8, d_big=16, d_small=4, p_small=4, p_big=16)
    assert slice_dims(cfg) == {"relation": (16, 4), "inventory": (16, 16), "entangled": (4, 16), "p=1": (16, 1)}
    with pytest.raises(ParameterError, match="'d_small'"):
        slice_dims({**cfg, "d_small": 8})
    with pytest.raises(ParameterError, match="'p_big'"):
        slice_dims({**cfg, "p_big": 7})
