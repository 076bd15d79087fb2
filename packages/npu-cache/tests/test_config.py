"""npu_cache.config: a torch config module; NPU_CACHE_* environment defaults hold, and a
cache opened after a patch (Settings.from_config) uses the patched values."""

import json
import os
import subprocess
import sys

import pytest

from npu_cache import ConfigError, Settings, config


def test_environment_defaults_in_a_fresh_process(tmp_path):
    env = dict(
        os.environ,
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
        NPU_CACHE_REDIS_URL="redis://h:1/0?socket_timeout=2.5",
        NPU_CACHE_REDIS_TIMEOUT="9",  # no longer read: the timeout is in the URL
        NPU_CACHE_DIR="off",
        NPU_CACHE_WRITE_QUEUE="3",
        NPU_CACHE_REDIS_PREFIX="p1",
        NPU_CACHE_HMAC_KEY="k" * 16,
        NPU_CACHE_RANK_SHARE="1",
        NPU_CACHE_RANK_SHARE_TIMEOUT="7.5",
    )
    code = (
        "import json, pickle, npu_cache.config as c; from npu_cache import Settings; s = Settings.from_config(); "
        "print(json.dumps([c.get_config_copy(), sorted(pickle.loads(c.save_config())), "
        "[s.redis_url, s.redis_timeout, s.cache_dir, s.write_queue, s.redis_prefix]]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    copy, saved, settings = json.loads(out.stdout.strip().splitlines()[-1])
    assert (copy["redis_url"], copy["redis_timeout"], copy["cache_dir"], copy["write_queue"]) == (
        "redis://h:1/0?socket_timeout=2.5",
        1.0,  # the key keeps its default; the URL's timeout is merged when a cache is opened
        "off",
        3,
    )
    assert (copy["rank_share"], copy["rank_share_timeout"]) == (True, 7.5)
    assert settings == ["redis://h:1/0?socket_timeout=2.5", 2.5, None, 3, "p1"]
    assert "hmac_key" not in saved and "redis_url" in saved  # the secret stays out of saved configs


def test_patch_reaches_the_next_opened_cache(tmp_path):
    with config.patch(
        cache_dir=str(tmp_path / "c"), redis_prefix="mine", write_queue=5, redis_url=None
    ):
        s = Settings.from_config()
    assert (s.cache_dir, s.redis_prefix, s.write_queue, s.redis_url) == (
        tmp_path / "c",
        "mine",
        5,
        None,
    )
    with (
        config.patch(redis_timeout="soon"),
        pytest.raises(
            ConfigError,
            match=r"npu_cache\.config\.redis_timeout='soon' is not a number",
        ),
    ):
        Settings.from_config()
    with config.patch(cache_dir="off"):
        assert Settings.from_config().cache_dir is None
