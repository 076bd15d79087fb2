"""test_aoti.py's fresh process: load an npu AOTInductor package and run it, with every way of
compiling a kernel or generating code forbidden (recorded, and raising), and every descriptor
file the model's C ABI loads recorded.

    python aoti_child.py <package.pt2> <case folder>...

Prints one JSON line: per case the batch, output device and max abs diff against the saved
eager outputs; the forbidden calls made; the descriptor files loaded; the package's constants.
"""

import json
import sys

FORBIDDEN: list = []


def forbid(owner, name):
    real = getattr(owner, name)

    def refuse(*args, **kwargs):
        FORBIDDEN.append(f"{getattr(owner, '__name__', owner)}.{name}")
        raise RuntimeError(f"{name} called while serving an AOTInductor package")

    setattr(owner, name, refuse)
    return real


def main():
    import triton
    import triton.compiler.compiler as triton_compiler
    from triton.runtime.jit import JITFunction

    forbid(triton, "compile")
    forbid(triton_compiler, "compile")
    forbid(JITFunction, "run")  # Triton's JIT compile-and-launch

    import torch  # autoload: npu-sim's device (and its AOTInductor runner), the backend
    import torch._inductor
    from torch._inductor import codecache, graph

    forbid(graph.GraphLowering, "codegen")  # Inductor's code generation
    forbid(
        codecache.PyCodeCache, "load_by_key_path"
    )  # a generated Python module (kernels, wrapper)
    forbid(codecache.CppCodeCache, "load")  # a C++ compile

    import npu_launcher.capi as capi

    loads = []
    bind_file = capi.bind_file

    def recording_bind_file(path, device):
        loads.append(path)
        return bind_file(path, device)

    capi.bind_file = recording_bind_file  # what the C ABI's load calls

    runner = torch._inductor.aoti_load_package(sys.argv[1])
    cases = []
    with torch.no_grad():
        for folder in sys.argv[2:]:
            saved = torch.load(f"{folder}/case.pt")
            out = runner(*(x.to("npu") for x in saved["inputs"]))
            outs = out if isinstance(out, (list, tuple)) else [out]
            diff = max(float((o.cpu() - r).abs().max()) for o, r in zip(outs, saved["outputs"]))
            cases.append(
                {
                    "batch": saved["inputs"][0].shape[0],
                    "device": str(outs[0].device),
                    "max_abs_diff": diff,
                }
            )
    print(
        json.dumps(
            {
                "cases": cases,
                "forbidden_calls": FORBIDDEN,
                "descriptor_loads": loads,
                "constant_fqns": runner.get_constant_fqns(),
            }
        )
    )


if __name__ == "__main__":
    main()
