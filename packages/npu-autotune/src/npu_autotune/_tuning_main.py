"""Entry of an npu tuning worker (``python -m npu_autotune._tuning_main``).

Upstream's ``__autotune_main__`` with one difference: device "npu" has to exist here, so
every installed component (entry-point group ``npu_inductor.components``) registers first,
each after the ones it names in ``after`` (then, on torch 2.14+, upstream's visible-devices
table gets npu's variable: ``_compat.visible_devices_variable_for_npu``); then upstream's
``TuningProcess.process_main`` serves the parent's jobs.
"""

from __future__ import annotations

import argparse
import logging
import os
from importlib import metadata

log = logging.getLogger(__name__)
COMPONENTS = "npu_inductor.components"


def register_components() -> None:
    hooks = {ep.name: ep.load() for ep in metadata.entry_points(group=COMPONENTS)}
    done: set[str] = set()
    while len(done) < len(hooks):
        ready = [
            n
            for n, h in sorted(hooks.items())
            if n not in done and all(d in done or d not in hooks for d in getattr(h, "after", ()))
        ]
        if not ready:
            raise RuntimeError(
                f"cycle in component 'after' declarations among {sorted(set(hooks) - done)}"
            )
        for name in ready:
            hooks[name]()
            done.add(name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parent", type=int)
    parser.add_argument("--read-fd", type=int)
    parser.add_argument("--write-fd", type=int)
    args = parser.parse_args()
    read_pipe = os.fdopen(args.read_fd, "rb")
    write_pipe = os.fdopen(args.write_fd, "wb")
    try:
        from torch._inductor.autotune_process import TuningProcess
        from torch._inductor.compile_worker.utils import _async_compile_initializer

        _async_compile_initializer(args.parent)  # exits when the parent dies
        register_components()
        from ._compat import visible_devices_variable_for_npu

        visible_devices_variable_for_npu()  # torch 2.14+: upstream's table knows no npu
        TuningProcess.process_main(read_pipe, write_pipe)
    except Exception:
        log.exception("uncaught exception in npu tuning worker %d", os.getpid())
    finally:
        read_pipe.close()
        write_pipe.close()


if __name__ == "__main__":
    main()
