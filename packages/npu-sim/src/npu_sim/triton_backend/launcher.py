"""The launcher Triton's CompiledKernel calls for an eagerly launched @triton.jit kernel on
npu-sim: it hands the kernel's Python function, grid and arguments to npu_sim.launch, which
runs it in Triton's interpreter on CPU aliases of the npu memory (or records it while the
thread captures a graph)."""

from __future__ import annotations


class SimLauncher:
    def __init__(self, src, metadata) -> None:
        fn = getattr(src, "fn", None)
        if fn is None:  # an IR file compiled with triton.compile has no Python function to run
            raise RuntimeError(
                "npu-sim can only launch kernels compiled from a @triton.jit function"
            )
        from .. import (
            launch,
        )  # not at import: Triton loads this backend while torch may be importing

        self.launch = launch.launch
        self.fn = fn
        self.arg_names = list(fn.arg_names)

    def __call__(
        self,
        grid_x,
        grid_y,
        grid_z,
        stream,
        function,
        packed_metadata,
        launch_metadata,
        launch_enter_hook,
        launch_exit_hook,
        *args,
    ) -> None:
        # JITFunction.run passes every parameter of the kernel, constexprs included, in order;
        # by name they reach the interpreter exactly as the user's call named them
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        self.launch(self.fn, (grid_x, grid_y, grid_z), (), dict(zip(self.arg_names, args)))
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)
