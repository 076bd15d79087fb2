"""npu-sim's settings. A torch config module (``install_config_module``):
``npu_sim.config.patch(capture_rules=False)`` works; a key's default is its environment
variable, read when this module is first imported (``import torch`` under autoload).

``soc`` and ``device_count`` are read when the device starts (``import torch`` under
autoload), so in practice they are set in the environment: child processes (compile and
tuning workers, ranks) must start as the same device, and only the environment carries that
to them. Which of those devices a process sees is torch_npu's ``ASCEND_RT_VISIBLE_DEVICES``
(soc.py). The capture keys are read at each ``NPUGraph.capture_begin``.
"""

from npu_inductor_core import env_config as _env

# The Ascend part the device pretends to be (soc.SOCS; default Ascend910B2).
soc: str = _env.text("NPU_SIM_SOC", "Ascend910B2")

# Simulated devices in this process's machine (1 to 16), before ASCEND_RT_VISIBLE_DEVICES.
device_count: int = _env.integer("NPU_SIM_DEVICE_COUNT", 1)

# The device's capture rules (csrc/capture.cpp): during capture an op outside the capturable set
# (capturable_ops.tsv), a host synchronization or read, a synchronous host-to-device copy raise
# torch_npu's capture error and invalidate the capture. NPU_SIM_CAPTURE_RULES=off relaxes them:
# npu-sim then records anything it can (an NPU would refuse it).
capture_rules: bool = _env.flag("NPU_SIM_CAPTURE_RULES", True, false=("off", "0"), true=("on", "1"))

# Streams per device (CANN: 2048 hardware streams per device; each live captured graph holds
# one, vllm-ascend's MAX_CAPTURE_SIZE note): beyond it capture_begin and Stream() raise the
# runtime's 207008 (ACL_ERROR_RT_NO_STREAM_RESOURCE), as the device does.
max_streams_per_device: int = 2048

_env.install(__name__)


def rules_on() -> bool:
    """``capture_rules`` now (``patch()`` is honoured), or ValueError naming the variable."""
    return _env.check(_this(), "capture_rules", _env.is_bool, "on or off", "NPU_SIM_CAPTURE_RULES")


def stream_budget() -> int:
    return _env.check(
        _this(), "max_streams_per_device", lambda v: _env.is_int(v, 2), "an integer >= 2"
    )


def _this():
    import sys

    return sys.modules[__name__]
