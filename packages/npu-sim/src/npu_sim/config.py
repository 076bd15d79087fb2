"""npu-sim's settings that may change while the device runs (the SoC, device count and visible
devices are fixed at start, environment only: see README). A torch config module
(``install_config_module``): ``npu_sim.config.patch(capture_rules=False)`` works; a key's
default is its environment variable, read when this module is first imported (``import
torch`` under autoload). Both keys are read at each ``NPUGraph.capture_begin``.
"""

from npu_inductor_core import env_config as _env

# The device's capture rules (csrc/capture.cpp): during capture an op outside the capturable set
# (capturable_ops.tsv), a host synchronization or read, a synchronous host-to-device copy raise
# torch_npu's capture error and invalidate the capture. NPU_SIM_CAPTURE_RULES=off relaxes them:
# npu-sim then records anything it can (an NPU would refuse it).
capture_rules: bool = _env.flag("NPU_SIM_CAPTURE_RULES", True, false=("off", "0"), true=("on", "1"))

# Streams per device (CANN: 2048 hardware streams per device; each live captured graph holds
# one, vllm-ascend's MAX_CAPTURE_SIZE note): beyond it capture_begin and Stream() raise the
# runtime's 207008 (ACL_ERROR_RT_NO_STREAM_RESOURCE), as the device does.
max_streams_per_device: int = _env.integer("NPU_SIM_MAX_STREAMS", 2048)

_env.install(__name__)


def rules_on() -> bool:
    """``capture_rules`` now (``patch()`` is honoured), or ValueError naming the variable."""
    return _env.check(_this(), "capture_rules", _env.is_bool, "on or off", "NPU_SIM_CAPTURE_RULES")


def stream_budget() -> int:
    return _env.check(_this(), "max_streams_per_device", lambda v: _env.is_int(v, 2), "an integer >= 2",
                      "NPU_SIM_MAX_STREAMS")


def _this():
    import sys

    return sys.modules[__name__]
