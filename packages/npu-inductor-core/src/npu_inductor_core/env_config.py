"""Environment defaults for the components' typed config modules (issue 18).

Each component's ``config.py`` is a torch config module
(``torch.utils._config_module.install_config_module``): typed keys, ``patch()``,
``save_config`` / ``load_config``, ``get_config_copy``. A key's default comes from the
component's ``NPU_*`` environment variable, read once when the module is installed, as torch
reads its own ``TORCHINDUCTOR_*`` defaults; set the variable before the first import, or use
the module (``config.patch(...)``, ``config.key = value``) afterwards.

Why these readers and not ``Config(env_name_default=...)``: torch's environment support
takes only bool and str keys and turns every "0" / "1" into a bool, which would change what
our variables mean (``NPU_CACHE_DIR=0`` is "off", a "1" prefix would become True, sizes and
seconds are numbers). Each reader parses the variable as the component did before. A value
that does not parse is kept as the raw string, so ``import torch`` (autoload imports the
components) never fails on it; ``check`` at the point of use names the key and the variable.
A component that rejected bad values when set keeps doing so through ``install(module, rules)``
(assignments and ``patch()`` are checked, and the environment's values at install).

This module is the one place in src that touches ``os.environ`` (a test greps for any other):
the readers above for a key's default, ``snapshot`` for the variables a child process must
inherit, and ``setdefault`` / ``overlay`` for the few places that set a variable for a
library or a child process (upstream's own ``TORCHINDUCTOR_*`` / ``TRITON_*`` variables are
read through ``text`` / ``flag`` too, where a torch lacks the config key).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any

# key -> (check, what it may be, its environment variable or None)
Rules = dict[str, tuple[Callable[[Any], bool], str, "str | None"]]

# Every NPU_* variable a config module reads -> (the module, internal). Internal variables are
# messages between our own processes or test hooks, not user settings: a package README lists
# them apart from its config table (test_env_reads checks both lists).
VARIABLES: dict[str, tuple[str, bool]] = {}


def _raw(name: str, internal: bool = False) -> str | None:
    if name.startswith("NPU_"):
        VARIABLES[name] = (sys._getframe(2).f_globals.get("__name__", "?"), internal)
    value = os.environ.get(name)
    return None if value is None or value == "" else value


def text(name: str, default: str | None = None, internal: bool = False) -> str | None:
    """The variable as it is; unset or empty: ``default``."""
    raw = _raw(name, internal)
    return default if raw is None else raw


def flag(
    name: str,
    default: bool,
    false: Iterable[str] = ("0",),
    true: Iterable[str] = ("1",),
    internal: bool = False,
) -> Any:
    """A bool from the spellings the component accepted before (``false`` / ``true``);
    anything else is kept as the raw string for ``check`` to reject."""
    raw = _raw(name, internal)
    if raw is None:
        return default
    if raw in tuple(false):
        return False
    if raw in tuple(true):
        return True
    return raw


def integer(name: str, default: int, internal: bool = False) -> Any:
    raw = _raw(name, internal)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        return raw


def number(name: str, default: float, internal: bool = False) -> Any:
    raw = _raw(name, internal)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        return raw


def snapshot(names: Iterable[str] | None = None) -> dict[str, str]:
    """The variables among ``names`` that are set (every variable when None), as a new dict:
    what a child process is given, or a settings parser reads."""
    if names is None:
        return dict(os.environ)
    return {n: os.environ[n] for n in names if n in os.environ}


def setdefault(name: str, value: str) -> str:
    """Set ``name`` for this process and its children unless it is set already."""
    return os.environ.setdefault(name, value)


@contextlib.contextmanager
def overlay(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (or, for None, unset) variables for the block, then restore what was there."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        _apply(values)
        yield
    finally:
        _apply(saved)


def _apply(values: Mapping[str, str | None]) -> None:
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def check(
    config: ModuleType, key: str, ok: Callable[[Any], bool], allowed: str, env: str | None = None
) -> Any:
    """``config.<key>`` read now (so ``config.patch`` is honoured), or ValueError naming the
    key, its environment variable and what it may be."""
    value = getattr(config, key)
    if not ok(value):
        where = f"{config.__name__}.{key}" + (f" (${env})" if env else "")
        raise ValueError(f"{where} must be {allowed}, got {value!r}")
    return value


def is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def is_number(value: Any, minimum: float = 0.0) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= minimum


def is_int(value: Any, minimum: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def is_text(value: Any, optional: bool = True) -> bool:
    return isinstance(value, str) or (optional and value is None)


def install(module_name: str, rules: Rules | None = None) -> ModuleType:
    """``install_config_module`` on ``sys.modules[module_name]``; with ``rules``, every
    assignment (``patch()`` included) is checked before it lands, and so are the values the
    environment gave (ValueError naming the variable)."""
    from torch.utils._config_module import install_config_module

    module = sys.modules[module_name]
    install_config_module(module)
    if not rules:
        return module
    base = type(module)

    class CheckedConfigModule(base):  # our module's own class, nothing upstream changes
        _npu_rules = dict(rules)

        def __setattr__(self, name, value):
            rule = self._npu_rules.get(name)
            if rule is not None and not rule[0](value):
                raise ValueError(f"{self.__name__}.{name} must be {rule[1]}, got {value!r}")
            super().__setattr__(name, value)

    ModuleType.__setattr__(
        module, "__class__", CheckedConfigModule
    )  # past ConfigModule's own setattr
    for key, (ok, allowed, env) in rules.items():
        check(module, key, ok, allowed, env)
    return module
