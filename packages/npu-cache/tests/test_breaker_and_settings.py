"""The circuit breaker's states on a fake clock, and settings defaults."""

import os

import torch._inductor  # noqa: F401  (importing it sets $TORCHINDUCTOR_CACHE_DIR, as in any compile)

from npu_cache import Settings
from npu_cache.breaker import CLOSED, HALF_OPEN, OPEN, Breaker


def test_breaker_opens_cools_down_and_lets_one_trial_through():
    now = [0.0]
    b = Breaker(cooldown=5, clock=lambda: now[0])
    assert b.allow() and b.state == CLOSED
    b.failure()
    assert b.state == OPEN and not b.allow() and b.opened == 1
    now[0] = 4.9
    assert not b.allow()
    now[0] = 5.0
    assert b.allow() and b.state == HALF_OPEN
    assert not b.allow()  # only one trial at a time
    b.failure()  # trial failed: another cool-down from now
    assert b.state == OPEN and b.opened == 1
    now[0] = 9.9
    assert not b.allow()
    now[0] = 10.0
    assert b.allow()
    b.success()
    assert b.state == CLOSED and b.recovered == 1 and b.allow()


def test_settings_defaults_do_not_touch_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # a user who never set it
    before = dict(os.environ)
    s = Settings.from_env({})
    assert s.cache_dir.name == "npu-cache" and s.cache_dir.parent.name.startswith("torchinductor_")
    assert (
        dict(os.environ) == before
    )  # upstream's cache_dir() would have set TORCHINDUCTOR_CACHE_DIR
    assert s.redis_url is None and s.write_queue == 64 and s.redis_timeout == 1.0
    assert (
        Settings.from_env({"TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}).cache_dir
        == tmp_path / "npu-cache"
    )
    assert Settings.from_env({"NPU_CACHE_DIR": "off"}).cache_dir is None
    e = {
        "NPU_CACHE_WRITE_QUEUE": "3",
        "NPU_CACHE_REDIS_COOLDOWN": "0",
        "NPU_CACHE_EXIT_FLUSH_TIMEOUT": "1.5",
    }
    s = Settings.from_env(e)
    assert (s.write_queue, s.redis_cooldown, s.exit_flush_timeout) == (3, 0.0, 1.5)
