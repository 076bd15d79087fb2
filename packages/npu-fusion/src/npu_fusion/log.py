"""The ``npu_fusion`` log: ``TORCH_LOGS=+npu_fusion`` (or
``torch._logging.set_logs(modules={"npu_fusion": logging.DEBUG})``) shows every fusion the
policy refused, with the rule and the numbers that decided it."""

from __future__ import annotations

import logging

NAME = "npu_fusion"
log = logging.getLogger(NAME)


def register() -> None:
    """Name the log in torch's registry (``TORCH_LOGS=help`` lists it). Torch also accepts
    ``TORCH_LOGS=+npu_fusion`` before this runs, as the name of an importable module."""
    from torch._logging._internal import log_registry, register_log

    if not log_registry.is_log(NAME):
        register_log(NAME, NAME)
