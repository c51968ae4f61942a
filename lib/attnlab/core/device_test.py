import sys

import pytest
import torch

from attnlab.core.device import keep_freed_memory, select_device, set_threads


def test_set_threads_validates_and_sets():
    assert set_threads(1) == 1 and torch.get_num_threads() == 1
    with pytest.raises(ValueError, match="threads=0"):
        set_threads(0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_takes_effect_on_linux_and_is_idempotent():
    assert keep_freed_memory() is True
    assert keep_freed_memory() is True


def test_select_device_rejects_unknown_names():
    assert select_device("cpu").type == "cpu"
    with pytest.raises(ValueError, match="not allowed"):
        select_device("tpu")


def test_provenance_names_the_device_whether_given_as_a_string_or_a_device():
    from attnlab.core.device import provenance

    assert provenance("cpu") == provenance(torch.device("cpu")) == "cpu"
