"""Shared fixtures for the Python tests: the built library, loaded through
the libmoe package (python/libmoe), and seeded random generators."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def _lib_path():
    p = os.environ.get("MOE_LIB")
    if p:
        return p
    return os.path.join(ROOT, "build", "libmoe.so")


@pytest.fixture(scope="session")
def lib():
    """ctypes.CDLL of the shared library under test."""
    import ctypes

    path = _lib_path()
    if not os.path.exists(path):
        pytest.fail(f"libmoe shared library not found at {path}: build first (make) or set MOE_LIB")
    return ctypes.CDLL(path)


@pytest.fixture
def rng(request):
    """A numpy Generator with a fresh seed per test, printed on failure."""
    import numpy as np

    seed = int(os.environ.get("MOE_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("seed", seed))
    print(f"seed = {seed} (set MOE_TEST_SEED={seed} to repeat)")
    return np.random.default_rng(seed)
