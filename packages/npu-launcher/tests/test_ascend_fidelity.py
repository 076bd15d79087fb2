"""Item 4: the ascend driver's CANN symbols against what Ascend's own stack uses, without
hardware and without importing torch_npu:

- each symbol is imported by torch_npu 2.13.0's libtorch_npu.so (so the CANN that torch_npu
  runs with exports it),
- each prototype we declare equals the one in the headers the torch_npu wheel ships,
- the rt* calls are the ones triton-ascend 3.2.0's launcher makes, with the same arity and
  argument kinds at its call sites, and our constants/structs match the shipped header.

The wheels are downloaded once (pip download, no install) into ~/.cache/npu_launcher/wheels
(NPU_LAUNCHER_WHEEL_CACHE overrides).
"""

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from npu_launcher import _native

CACHE = Path(
    os.environ.get("NPU_LAUNCHER_WHEEL_CACHE") or Path.home() / ".cache" / "npu_launcher" / "wheels"
)
CSRC = Path(__file__).resolve().parents[1] / "csrc"


def wheel(requirement: str, glob: str) -> Path:
    hits = sorted(CACHE.glob(glob))
    if not hits:
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--implementation",
                "cp",
                "--platform",
                "manylinux_2_28_x86_64",
                "-d",
                str(CACHE),
                requirement,
            ],
            check=True,
            timeout=900,
        )
        hits = sorted(CACHE.glob(glob))
    assert hits, f"pip download {requirement} left no {glob} in {CACHE}"
    return hits[0]


@pytest.fixture(scope="module")
def torch_npu_wheel():
    return zipfile.ZipFile(wheel("torch_npu==2.13.0", "torch_npu-2.13.0-*.whl"))


@pytest.fixture(scope="module")
def triton_ascend_source():
    z = zipfile.ZipFile(wheel("triton-ascend==3.2.0", "triton_ascend-3.2.0-*.whl"))
    return "\n".join(
        z.read(n).decode()
        for n in ("triton/backends/ascend/npu_utils.cpp", "triton/backends/ascend/driver.py")
    )


def our_symbols(c_decls):
    return {name: c_decls.parse_prototype(proto) for name, proto in _native.ascend_symbols()}


def test_every_symbol_is_imported_by_libtorch_npu(torch_npu_wheel, c_decls):
    libs = [
        n
        for n in torch_npu_wheel.namelist()
        if n.startswith("torch_npu/lib/") and n.endswith(".so")
    ]
    assert "torch_npu/lib/libtorch_npu.so" in libs
    imported = set()
    for lib in libs:
        imported |= c_decls.undefined_dynamic_symbols(torch_npu_wheel.read(lib))
    assert "aclrtMalloc" in imported  # the parser reads the real import table
    missing = sorted(set(our_symbols(c_decls)) - imported)
    assert not missing, f"not imported by torch_npu 2.13.0's libraries: {missing}"


def test_prototypes_match_the_torch_npu_headers(torch_npu_wheel, c_decls):
    headers = "\n".join(
        torch_npu_wheel.read(n).decode(errors="replace")
        for n in torch_npu_wheel.namelist()
        if n.endswith(("hacl_rt.h", "acl/acl_rt.h", "acl/acl_base_rt.h"))
    )
    for name, ours in our_symbols(c_decls).items():
        theirs = c_decls.header_prototype(headers, name)
        assert theirs is not None, f"{name} not declared in the torch_npu wheel's headers"
        assert theirs == ours, f"{name}: we declare {ours}, torch_npu ships {theirs}"


def test_constants_and_binary_struct_match(torch_npu_wheel):
    hdr = next(
        torch_npu_wheel.read(n).decode()
        for n in torch_npu_wheel.namelist()
        if n.endswith("hacl_rt.h")
    )
    ours = (CSRC / "ascend_api.h").read_text()
    for name, value in re.findall(
        r"constexpr \w+ (RT_DEV_BINARY_MAGIC_\w+) = (0x[0-9a-fA-F]+);", ours
    ):
        assert re.search(rf"#define {name}\s+{value}\b", hdr), name
    fields = lambda text: re.findall(
        r"(\w+\s*\*?)\s*(\w+);", re.search(r"struct tagRtDevBinary \{(.*?)\}", text, re.S).group(1)
    )
    norm = lambda fs: [(t.replace(" ", ""), n) for t, n in fs]
    assert norm(fields(ours)) == norm(fields(hdr))


def test_rt_calls_are_triton_ascends_with_the_same_shapes(triton_ascend_source, c_decls):
    checked = 0
    for name, (_ret, _n, params) in our_symbols(c_decls).items():
        # torch_npu's ACL calls stand in for triton-ascend's rtSetDevice / rtGetSocVersion
        src_name = {"aclrtSetDevice": "rtSetDevice"}.get(name, name)
        if name == "aclrtGetSocName":
            assert c_decls.call_sites(triton_ascend_source, "rtGetSocVersion")
            continue
        calls = c_decls.call_sites(triton_ascend_source, src_name)
        assert calls, f"triton-ascend 3.2.0's launcher never calls {src_name}"
        for args in calls:
            assert len(args) == len(params), f"{src_name}{tuple(args)} vs our {params}"
            for expr, ty in zip(args, params):
                kind = c_decls.expression_is_pointer(expr)
                if kind is not None:
                    assert kind == ("*" in ty or ty == "rtStream_t"), (
                        f"{src_name}: {expr!r} vs {ty}"
                    )
                    checked += 1
    assert checked >= 8  # the evident-kind arguments really were compared
