"""The test command provides a real redis-server on loopback for the cache tests."""

import os

import pytest

URL_ENV = "NPU_INDUCTOR_TEST_REDIS_URL"


@pytest.mark.skipif(
    URL_ENV not in os.environ, reason="run through the test command (hatch run test)"
)
def test_redis_server_answers():
    import redis

    client = redis.Redis.from_url(os.environ[URL_ENV], socket_timeout=5)
    assert client.ping()
    client.set("npu-inductor:test", b"\x00\xff", ex=30)
    assert client.get("npu-inductor:test") == b"\x00\xff"
    assert client.info("server")["tcp_port"] == int(
        os.environ[URL_ENV].rsplit(":", 1)[1].split("/")[0]
    )
