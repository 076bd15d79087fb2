"""Redis by URL against real redis-server processes: plain, TLS (CA made by the test, with and
without client certificates), ACL user + password, password only. Misconfiguration degrades
to misses that are counted, never to exceptions."""

import pytest
import redis

from npu_cache import ConfigError, SignedCache, Settings
from npu_cache.settings import redact


def roundtrip(cache) -> bytes | None:
    cache.put("key", b"payload")
    assert cache.flush(10)
    return cache.get("key")


def remote_only(make_settings, writer, url, **kw):
    return SignedCache("fx-graph", make_settings(url, cache_dir=None, **kw), writer=writer)


def test_plain_url(make_settings, writer, redis_url):
    cache = remote_only(make_settings, writer, redis_url)
    assert roundtrip(cache) == b"payload"
    assert cache.counters["hit_remote"] == 1
    keys = redis.Redis.from_url(redis_url).keys(f"{cache.settings.redis_prefix}:*")
    assert len(keys) == 1 and keys[0].startswith(
        f"{cache.settings.redis_prefix}:v1:fx-graph:".encode()
    )
    assert redis.Redis.from_url(redis_url).get(keys[0]).startswith(b"NPUC\x01")  # stored signed
    assert cache.remote.stats()["put_ok"] == 1


def test_tls_with_the_test_ca(make_settings, writer, redis_server, tls_certs):
    srv = redis_server(
        tls=True,
        conf=[
            f"tls-cert-file {tls_certs / 'server.crt'}",
            f"tls-key-file {tls_certs / 'server.key'}",
            f"tls-ca-cert-file {tls_certs / 'ca.crt'}",
            "tls-auth-clients no",
        ],
    )
    assert srv.url.startswith("rediss://")
    # CA in the URL (redis-py's query option: the one way outside Python)
    url = f"{srv.url}?ssl_ca_certs={tls_certs / 'ca.crt'}"
    assert roundtrip(remote_only(make_settings, writer, url)) == b"payload"
    # CA from the Python key (npu_cache.config.redis_ca_file)
    assert (
        roundtrip(
            remote_only(make_settings, writer, srv.url, redis_ca_file=str(tls_certs / "ca.crt"))
        )
        == b"payload"
    )
    # a CA that did not sign the server's certificate: the connection is refused, not trusted
    wrong = remote_only(
        make_settings, writer, f"{srv.url}?ssl_ca_certs={tls_certs / 'other-ca.crt'}"
    )
    assert roundtrip(wrong) is None
    assert wrong.remote.counters["put_connection"] + wrong.remote.counters["get_connection"] >= 1
    assert "certificate verify failed" in wrong.remote.last_error.lower()
    # plain redis:// to a TLS port gets nothing either
    plain_url = srv.url.replace("rediss://", "redis://") + "?socket_timeout=0.5"
    plain = remote_only(make_settings, writer, plain_url)
    assert plain.remote.timeout == 0.5
    assert roundtrip(plain) is None and plain.remote.breaker.opened >= 1


def test_mutual_tls_client_certificate(make_settings, writer, redis_server, tls_certs):
    srv = redis_server(
        tls=True,
        conf=[
            f"tls-cert-file {tls_certs / 'server.crt'}",
            f"tls-key-file {tls_certs / 'server.key'}",
            f"tls-ca-cert-file {tls_certs / 'ca.crt'}",
            "tls-auth-clients yes",
        ],
    )
    ca = f"{srv.url}?ssl_ca_certs={tls_certs / 'ca.crt'}"
    client = f"&ssl_certfile={tls_certs / 'client.crt'}&ssl_keyfile={tls_certs / 'client.key'}"
    with_cert = remote_only(make_settings, writer, ca + client)
    assert roundtrip(with_cert) == b"payload"
    without = remote_only(make_settings, writer, ca)
    assert roundtrip(without) is None and without.remote.last_error


def test_acl_user_and_password(make_settings, writer, redis_server):
    srv = redis_server(
        conf=[
            "user default off",
            "user cacher on >s3cret-pass ~npu-cache-test-* +@all",
            "user other on >other-pass ~someone-else:* +@all",
        ]
    )
    host = srv.url.split("://", 1)[1]
    good = remote_only(make_settings, writer, f"redis://cacher:s3cret-pass@{host}")
    assert roundtrip(good) == b"payload"
    assert "s3cret" not in str(good.remote.stats()) and "cacher:***@" in good.remote.stats()["url"]

    wrong = remote_only(make_settings, writer, f"redis://cacher:wrong@{host}")
    assert roundtrip(wrong) is None
    assert wrong.remote.counters["put_auth"] == 1 and wrong.remote.stats()["circuit"] == "open"
    assert "s3cret" not in str(wrong.remote.stats()) and "wrong" not in wrong.remote.stats()["url"]

    # a user whose ACL does not cover our key prefix: refused writes are counted, not raised,
    # and do not open the circuit (the server is healthy)
    denied = remote_only(make_settings, writer, f"redis://other:other-pass@{host}")
    assert roundtrip(denied) is None
    assert denied.remote.counters["put_denied"] == 1 and denied.remote.counters["get_denied"] == 1
    assert denied.remote.stats()["circuit"] == "closed"
    assert writer.stats()["failed"] >= 1


def test_password_only(make_settings, writer, redis_server):
    srv = redis_server(conf=["requirepass only-a-pass"])
    host = srv.url.split("://", 1)[1]
    assert (
        roundtrip(remote_only(make_settings, writer, f"redis://:only-a-pass@{host}")) == b"payload"
    )
    assert roundtrip(remote_only(make_settings, writer, f"redis://{host}")) is None


def test_url_configuration(monkeypatch):
    assert (
        Settings.from_env({"NPU_CACHE_REDIS_URL": "rediss://u:p@h:1/0"}).redis_url
        == "rediss://u:p@h:1/0"
    )
    # upstream's variables are honoured, ours win
    assert (
        Settings.from_env({"TORCHINDUCTOR_REDIS_URL": "redis://up:2/0"}).redis_url
        == "redis://up:2/0"
    )
    assert (
        Settings.from_env(
            {"TORCHINDUCTOR_REDIS_HOST": "h", "TORCHINDUCTOR_REDIS_PORT": "3"}
        ).redis_url
        == "redis://h:3/0"
    )
    assert (
        Settings.from_env(
            {"NPU_CACHE_REDIS_URL": "redis://a:1/0", "TORCHINDUCTOR_REDIS_URL": "redis://b:2/0"}
        ).redis_url
        == "redis://a:1/0"
    )
    assert Settings.from_env({}).redis_url is None
    with pytest.raises(ConfigError, match="scheme"):
        Settings.from_env({"NPU_CACHE_REDIS_URL": "http://h:1"})
    with pytest.raises(ConfigError, match="socket_timeout='soon' is not a number"):
        Settings.from_env({"NPU_CACHE_REDIS_URL": "redis://h:1/0?socket_timeout=soon"})
    with pytest.raises(ConfigError, match="socket_timeout='0' must be >= 0.001"):
        Settings.from_env({"NPU_CACHE_REDIS_URL": "redis://h:1/0?socket_timeout=0"})
    assert redact("redis://user:pw@h:1/0") == "redis://user:***@h:1/0"
    assert redact("redis://h:1/0") == "redis://h:1/0"


TLS_URL = (
    "rediss://u:pw@cache-host:6380/0"
    "?ssl_ca_certs=/ca.pem&ssl_certfile=/c.pem&ssl_keyfile=/k.pem&socket_timeout=2"
)


def _connection_kwargs(settings):
    """What the redis client's connections are made with (from_url connects nothing)."""
    from npu_cache.redis_store import RedisStore

    store = RedisStore(settings)
    return store, store._connect().connection_pool.connection_kwargs


def test_tls_files_and_timeout_in_the_url_reach_the_connection():
    s = Settings.from_env({"NPU_CACHE_REDIS_URL": TLS_URL})
    assert (s.redis_ca_file, s.redis_cert_file, s.redis_key_file, s.redis_timeout) == (
        "/ca.pem",
        "/c.pem",
        "/k.pem",
        2.0,
    )
    store, kw = _connection_kwargs(s)
    assert (kw["ssl_ca_certs"], kw["ssl_certfile"], kw["ssl_keyfile"]) == (
        "/ca.pem",
        "/c.pem",
        "/k.pem",
    )
    # the URL's timeout bounds the connect as well as each command
    assert kw["socket_timeout"] == kw["socket_connect_timeout"] == store.timeout == 2.0
    # nothing given: 1 s each, as before
    _, kw = _connection_kwargs(Settings.from_env({"NPU_CACHE_REDIS_URL": "redis://h:1/0"}))
    assert kw["socket_timeout"] == kw["socket_connect_timeout"] == 1.0
    assert "ssl_ca_certs" not in kw


def test_the_old_tls_and_timeout_variables_are_not_read():
    s = Settings.from_env(
        {
            "NPU_CACHE_REDIS_URL": "rediss://h:1/0",
            "NPU_CACHE_REDIS_CA_FILE": "/ca.pem",
            "NPU_CACHE_REDIS_CERT_FILE": "/c.pem",
            "NPU_CACHE_REDIS_KEY_FILE": "/k.pem",
            "NPU_CACHE_REDIS_TIMEOUT": "5",
            "redis_timeout": "5",  # a key's own name is not a variable either
        }
    )
    assert (s.redis_ca_file, s.redis_cert_file, s.redis_key_file, s.redis_timeout) == (
        None,
        None,
        None,
        1.0,
    )


def test_url_options_merge_with_the_keys():
    from npu_cache import config

    # one from each: both used
    with config.patch(redis_url="rediss://h:1/0?ssl_certfile=/c.pem", redis_ca_file="/ca.pem"):
        s = Settings.from_config()
    assert (s.redis_ca_file, s.redis_cert_file, s.redis_timeout) == ("/ca.pem", "/c.pem", 1.0)
    _, kw = _connection_kwargs(s)
    assert (kw["ssl_ca_certs"], kw["ssl_certfile"]) == ("/ca.pem", "/c.pem")
    # the same value twice is fine
    with config.patch(redis_url=TLS_URL, redis_ca_file="/ca.pem", redis_timeout=2):
        assert Settings.from_config().redis_timeout == 2.0
    # redis_timeout set (not the default) and a different URL timeout: an error naming both
    with (
        config.patch(redis_url=TLS_URL, redis_timeout=3.0),
        pytest.raises(
            ConfigError, match=r"redis_timeout=3\.0 and the Redis URL .*socket_timeout='2'"
        ),
    ):
        Settings.from_config()
    # two different CA files: an error, the password redacted
    with config.patch(redis_url=TLS_URL, redis_ca_file="/other.pem"):
        with pytest.raises(ConfigError, match="redis_ca_file='/other.pem'") as err:
            Settings.from_config()
    assert "pw" not in str(err.value) and "u:***@" in str(err.value)
    # a URL given to the CLI (an override) is merged the same way
    assert Settings.from_env({}, redis_url=TLS_URL).redis_timeout == 2.0
