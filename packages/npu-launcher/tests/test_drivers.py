"""cuda and ascend drivers are opened at run time: on a machine without the runtime they fail
cleanly, naming what is missing; the Ascend argument struct matches triton-ascend's."""

import shutil
import subprocess
import sys
import textwrap

import pytest

from npu_launcher import DriverUnavailable, bind, _native
from npu_launcher.descriptor import ArgSpec, KernelDescriptor, Target
from npu_launcher.launcher import KINDS, driver_status


def _run(code, **env):
    import os

    full = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=full,
    )


NPU_DESC = KernelDescriptor(
    "triton_add",
    Target("npu", "Ascend910B3"),
    "npubin",
    b"\x7fELF",
    (ArgSpec("x", "*fp32", 16), ArgSpec("n", "i32")),
    extra={"mix_mode": "aiv"},
)


@pytest.mark.skipif(driver_status("ascend")[0], reason="CANN is installed here")
def test_ascend_without_cann_fails_cleanly():
    with pytest.raises(
        DriverUnavailable,
        match="ascend driver unavailable: no CANN runtime library could be opened",
    ):
        bind(NPU_DESC)


def test_ascend_runtime_lacking_a_symbol_is_named():
    out = _run(
        """
        from npu_launcher import bind, DriverUnavailable
        from npu_launcher.descriptor import ArgSpec, KernelDescriptor, Target
        d = KernelDescriptor("k", Target("npu", ""), "npubin", b"x", (ArgSpec("n", "i32"),))
        try:
            bind(d)
        except DriverUnavailable as e:
            print(e)
        """,
        NPU_LAUNCHER_CANN_LIBS="libm.so.6",
    )
    assert out.returncode == 0, out.stderr
    assert "CANN runtime lacks aclrtSetDevice" in out.stdout


def test_cuda_without_libcuda_fails_cleanly(cuda_add_kernel):
    from npu_launcher import descriptor_from_compiled

    blob = descriptor_from_compiled(cuda_add_kernel).to_bytes()
    code = """
        import sys
        from npu_launcher import bind, DriverUnavailable
        try:
            bind(sys.stdin.buffer.read(), device=0)
        except DriverUnavailable as e:
            print(e)
        """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        input=blob,
        capture_output=True,
        timeout=120,
        env={"NPU_LAUNCHER_LIBCUDA": "libnot_a_cuda.so.1", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert b"cuda driver unavailable: cannot dlopen libnot_a_cuda.so.1" in out.stdout
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        input=blob,
        capture_output=True,
        timeout=120,
        env={"NPU_LAUNCHER_LIBCUDA": "libm.so.6", "PATH": "/usr/bin:/bin"},
    )
    assert b"libm.so.6 lacks cuInit" in out.stdout, out.stderr


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
@pytest.mark.parametrize(
    "types, ffts, simt",
    [
        (["*fp32", "*fp32", "i32"], True, False),
        (["*fp16", "i8", "i64", "fp32", "i1", "i16", "fp64", "u32", "bf16", "u64"], True, False),
        (["i32", "*fp32"], False, False),
        (["i8", "*i8", "fp16"], False, True),
    ],
)
def test_ascend_arg_struct_matches_triton_ascend(tmp_path, types, ffts, simt):
    """Compile the struct triton-ascend 3.2's generate_npu_wrapper_src() writes (same member
    types and aligned() attributes) and compare offsets and size with ours."""
    cpp = {
        "*": "void*",
        "i1": "int32_t",
        "i8": "int8_t",
        "i16": "int16_t",
        "i32": "int32_t",
        "i64": "int64_t",
        "u32": "uint32_t",
        "u64": "uint64_t",
        "fp16": "float",
        "bf16": "float",
        "fp32": "float",
        "fp64": "double",
    }
    fields = []
    if ffts:
        fields.append("void* ffts_addr __attribute__((aligned(8)));")
    if not simt:
        fields += [
            "void* syncBlockLock __attribute__((aligned(8)));",
            "void* workspace_addr __attribute__((aligned(8)));",
        ]
    for i, ty in enumerate(types):
        c = cpp["*" if ty[0] == "*" else ty]
        align = 4 if ty[0] != "*" and ty[-2:] != "64" else 8
        fields.append(f"{c} arg{i} __attribute__((aligned({align})));")
    fields += [f"int32_t grid{m} __attribute__((aligned(4)));" for m in "XYZ"]
    offs = ", ".join(f"(int)offsetof(S, arg{i})" for i in range(len(types)))
    src = (
        f"#include <cstdio>\n#include <cstdint>\n#include <cstddef>\n"
        f"struct __attribute__((packed)) S {{ {' '.join(fields)} }};\n"
        f'int main() {{ int o[] = {{{offs}}}; for (int v : o) printf("%d ", v);'
        f' printf("| %d %d\\n", (int)offsetof(S, gridX), (int)sizeof(S)); }}\n'
    )
    (tmp_path / "s.cpp").write_text(src)
    subprocess.run(["g++", "-o", str(tmp_path / "s"), str(tmp_path / "s.cpp")], check=True)
    want = subprocess.run([str(tmp_path / "s")], capture_output=True, text=True).stdout.split()
    kinds = [KINDS["*" if t[0] == "*" else t] for t in types]
    offsets, grid_offset, size = _native.ascend_layout(kinds, ffts, simt)
    assert [str(o) for o in offsets] + ["|", str(grid_offset), str(size)] == want


def test_ascend_refuses_types_triton_ascend_cannot_pass():
    with pytest.raises(ValueError, match="index 1 has no Ascend C type"):
        _native.ascend_layout([KINDS["i32"], KINDS["u8"]], True, False)
