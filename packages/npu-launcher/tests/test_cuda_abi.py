"""The CUDA driver API functions and constants we declare ourselves (no cuda.h at build
time) equal those of the cuda.h bundled with the installed Triton, and none of them is a
macro for a versioned symbol (cuX -> cuX_v2), which dlsym by plain name would miss."""

import importlib.util
import re
from pathlib import Path

import pytest

from npu_launcher import _native

CSRC = Path(__file__).resolve().parents[1] / "csrc"


@pytest.fixture(scope="module")
def cuda_h():
    spec = importlib.util.find_spec("triton")
    path = Path(spec.origin).parent / "backends" / "nvidia" / "include" / "cuda.h" if spec else None
    if path is None or not path.exists():
        pytest.skip("no NVIDIA Triton with a bundled cuda.h")
    return path.read_text()


def test_prototypes_match_cuda_h(cuda_h, c_decls):
    for name, proto in _native.cuda_symbols():
        ours = c_decls.parse_prototype(proto)
        theirs = c_decls.header_prototype(cuda_h, name)
        assert theirs == ours, f"{name}: we declare {ours}, cuda.h has {theirs}"
        assert not re.search(rf"#define\s+{name}\s+{name}_v\d", cuda_h), (
            f"{name} is a versioned macro"
        )


def test_constants_match_cuda_h(cuda_h):
    ours = re.findall(r"constexpr \w+ (CU\w+) = (\d+);", (CSRC / "cuda_api.h").read_text())
    assert len(ours) >= 9
    for name, value in ours:
        m = re.search(rf"\b{name}\s*=\s*(\d+)", cuda_h)
        assert m and m.group(1) == value, f"{name} = {value}, cuda.h says {m and m.group(1)}"
