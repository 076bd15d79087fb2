"""Kernel descriptors: versioned schema, bytes round trip with no Triton object."""

import subprocess
import sys

import pytest

from npu_launcher import DescriptorError, GridRule, KernelDescriptor, UnsupportedKernel
from npu_launcher.descriptor import MAGIC, ArgSpec, Target


def test_cuda_descriptor_from_a_real_cubin(cuda_add_kernel):
    from npu_launcher import descriptor_from_compiled

    d = descriptor_from_compiled(cuda_add_kernel, grid=(("cdiv", "n", 1024), 1, 1))
    assert d.name == "add_kernel" and d.binary_format == "cubin"
    assert d.binary == cuda_add_kernel.asm["cubin"] and d.binary[:4] == b"\x7fELF"
    assert d.target == Target("cuda", "90", 32, "cuda")
    assert [(a.name, a.type, a.align) for a in d.args] == [
        ("x", "*fp32", 16),
        ("y", "*fp32", 16),
        ("out", "*fp32", 16),
        ("n", "i32", 1),
    ]
    assert d.constexprs == {"BLOCK": 1024}
    assert (d.num_warps, d.shared) == (
        cuda_add_kernel.metadata.num_warps,
        cuda_add_kernel.metadata.shared,
    )
    # the kernel's PTX entry takes the runtime args plus Triton's trailing scratch pointers
    ptx = cuda_add_kernel.asm["ptx"]
    entry = ptx[ptx.index(".entry") : ptx.index(")", ptx.index(".entry"))]
    assert entry.count(".param") == len(d.args) + d.trailing_null_params
    assert d.grid.evaluate({"n": 3000}) == (3, 1, 1)


def test_round_trip_is_exact_and_needs_no_triton(cuda_add_kernel, tmp_path):
    from npu_launcher import descriptor_from_compiled

    d = descriptor_from_compiled(cuda_add_kernel, grid=(("cdiv", "n", 1024), 1, 1))
    blob = d.to_bytes()
    assert blob.startswith(MAGIC) and b"pickle" not in blob
    assert KernelDescriptor.from_bytes(blob) == d
    path = tmp_path / "k.nplkd"
    path.write_bytes(blob)
    # a process where importing triton (or torch) fails still reads every field back
    code = (
        "import sys; sys.modules['triton'] = None; sys.modules['torch'] = None\n"
        "from npu_launcher.descriptor import KernelDescriptor\n"
        f"d = KernelDescriptor.from_bytes(open({str(path)!r}, 'rb').read())\n"
        "print(d.name, d.target.arch, [a.name for a in d.args], d.constexprs, len(d.binary))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "add_kernel",
        "90",
        "['x',",
        "'y',",
        "'out',",
        "'n']",
        "{'BLOCK':",
        "1024}",
        str(len(d.binary)),
    ]


def _desc(**kw):
    base = dict(
        name="k",
        target=Target("cuda", "90", 32),
        binary_format="cubin",
        binary=b"\x7fELFxyz",
        args=(ArgSpec("p", "*fp16", 16), ArgSpec("s", "fp32")),
        constexprs={"B": 4, "inf": float("inf")},
    )
    base.update(kw)
    return KernelDescriptor(**base)


def test_other_schema_version_is_refused_by_name():
    # version 1 (before specialized arguments were recorded) is another version too
    blob = bytearray(_desc().to_bytes())
    blob[:] = bytes(blob).replace(b'"version":2', b'"version":1')
    with pytest.raises(
        DescriptorError,
        match=r"kernel 'k': descriptor schema version 1; this npu-launcher reads version 2",
    ):
        KernelDescriptor.from_bytes(bytes(blob))


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda b: b[:-1], "truncated or corrupt"),
        (lambda b: b[:-1] + b"!", "truncated or corrupt"),
        (lambda b: b"NOTAKD" + b[6:], "bad magic"),
        (lambda b: b"NPLKD2" + b[6:], "wire format"),
        (lambda b: b[:11] + b"]" + b[12:], "not valid JSON"),
    ],
)
def test_corrupt_bytes_raise_descriptor_error(mutate, message):
    with pytest.raises(DescriptorError, match=message):
        KernelDescriptor.from_bytes(mutate(_desc().to_bytes()))


def test_non_finite_constexpr_and_grid_survive():
    d = _desc(grid=GridRule((("cdiv", "s", 8), 2, 1)))
    back = KernelDescriptor.from_bytes(d.to_bytes())
    assert back.constexprs["inf"] == float("inf") and back.grid == d.grid


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(args=(ArgSpec("t", "nvTmaDesc"),)), "cannot pass"),
        (dict(binary_format="npubin"), "takes 'cubin' binaries"),
        (dict(constexprs={"f": object()}), "cannot be stored"),
    ],
)
def test_bad_descriptors_are_refused(kw, message):
    with pytest.raises(DescriptorError, match=message):
        _desc(**kw).to_bytes()


def test_kernels_needing_scratch_are_unsupported(cuda_add_kernel):
    from npu_launcher import descriptor_from_compiled

    class WithScratch:
        src = cuda_add_kernel.src
        asm = cuda_add_kernel.asm
        metadata = cuda_add_kernel.metadata._replace(global_scratch_size=128)

    with pytest.raises(UnsupportedKernel, match="global_scratch_size=128"):
        descriptor_from_compiled(WithScratch())
