"""npu-inductor: a torch.compile backend for Ascend NPUs, assembled from components.

``enable()`` registers every installed component (entry-point group
``npu_inductor.components``) and returns the names of those that loaded.
"""

from .components import ComponentError, discover, enable, enabled

__all__ = ["ComponentError", "discover", "enable", "enabled"]
