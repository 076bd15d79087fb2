"""Cache policy every npu-inductor cache consults, built on upstream's own flags.

Read at every call, not at import (upstream's codecache.LOCK_TIMEOUT is frozen at import), so
``torch._inductor.config.patch(...)`` and ``torch.compiler.config.patch(...)`` take effect.
"""

from __future__ import annotations


def caches_disabled() -> bool:
    """``torch.compiler.config.force_disable_caches`` (alias
    ``torch._inductor.config.force_disable_caches``, env $TORCHINDUCTOR_FORCE_DISABLE_CACHES).
    When true no cache of ours reads or writes anything."""
    from torch._inductor import config

    return bool(config.force_disable_caches)


def lock_timeout() -> float:
    """Seconds to wait for a cache file lock, ``torch._inductor.config.file_lock_timeout``
    (env $TORCHINDUCTOR_FILE_LOCK_TIMEOUT, default 600)."""
    from torch._inductor import config

    return float(config.file_lock_timeout)
