"""hatchling build hook: compiles the C++ device into the wheel (build_device.py) and pins
the wheel to the torch release series it was built against, as torch_npu pins its torch, and to
that series' Triton (pyproject.toml's triton-for-torch)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _build_device():
    spec = importlib.util.spec_from_file_location(
        "npu_sim_build_device", Path(__file__).with_name("build_device.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class DeviceBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        import torch

        device = _build_device()
        build_data["pure_python"] = False
        build_data["infer_tag"] = (
            True  # cp311-cp311-linux_x86_64: the extension is CPython- and platform-bound
        )
        series = device.series(torch.__version__)
        triton_for = self.config.get("triton-for-torch", {})
        if series not in triton_for:
            raise RuntimeError(
                f"npu-sim: torch {torch.__version__} in the build environment is not a supported "
                f"torch (supported series: {', '.join(sorted(triton_for))}; pyproject.toml triton-for-torch)"
            )
        build_data["dependencies"].append(f"torch=={series}.*")
        build_data["dependencies"].append(f"triton~={triton_for[series]}")
        if version == "editable":
            device.build(
                device.in_place_dir(torch.__version__)
            )  # in place, one folder per torch series
            return
        for path in device.build(Path(self.root) / "build" / "lib"):
            build_data["force_include"][str(path)] = f"npu_sim/{path.name}"
