"""Errors of npu-launcher. The native launcher raises these same classes (handed to it at
import), so callers catch them by name whether Python or C++ found the problem."""

from __future__ import annotations


class LauncherError(Exception):
    """Base class of every npu-launcher error."""


class KernelArgumentError(LauncherError, ValueError):
    """A launch argument has the wrong device, dtype, alignment or value range."""


class KernelArgumentTypeError(KernelArgumentError, TypeError):
    """Wrong number of launch arguments, or an argument of the wrong Python type."""


class DescriptorError(LauncherError, ValueError):
    """Descriptor bytes that are corrupt, of another schema version, or for another target."""


class UnsupportedKernel(LauncherError, NotImplementedError):
    """A compiled kernel the launcher cannot launch statically (e.g. needs scratch memory)."""


class DriverUnavailable(LauncherError, RuntimeError):
    """The driver's runtime library (libcuda, CANN, npu-sim's entry point) is not there."""


class LaunchFailed(LauncherError, RuntimeError):
    """The driver rejected a load or a launch."""
