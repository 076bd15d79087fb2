"""npu-cache's settings: a torch config module (``install_config_module``).

    import npu_cache.config as c
    c.redis_url = "redis://cache-host:6379/0"     # before the first compile opens a cache

Defaults come from the ``NPU_CACHE_*`` variables (for the keys that have one), read when this
module is first imported (``import torch`` under autoload). ``settings.Settings.from_config()``
reads and checks the keys when a cache is opened (a bad value is a ``ConfigError`` naming the
key and variable); an open cache keeps its settings (``routing.reset()`` reopens). Upstream's
variables ($TORCHINDUCTOR_REDIS_URL / _HOST / _PORT, $TORCHINDUCTOR_CACHE_DIR) are read then
too. None of these changes generated code, so none is in the FX graph cache key.
"""

from typing import Optional

from npu_inductor_core import env_config as _env

# Redis (redis://, rediss://, unix://); None: $TORCHINDUCTOR_REDIS_URL, then _HOST/_PORT, else no remote cache
redis_url: Optional[str] = _env.text("NPU_CACHE_REDIS_URL")

# The TLS files and the timeout have no variable (issue 35): outside Python, give them in
# the URL's query (rediss://h:6380/0?ssl_ca_certs=/ca.pem&ssl_certfile=/c.pem&ssl_keyfile=/k.pem
# &socket_timeout=2). A key and the URL that both give one must agree (else ConfigError);
# redis_timeout at its default 1.0 yields to the URL's socket_timeout.

# CA bundle for rediss:// (or ?ssl_ca_certs= in the URL)
redis_ca_file: Optional[str] = None

# client certificate for rediss:// (or ?ssl_certfile=)
redis_cert_file: Optional[str] = None

# the client certificate's key (or ?ssl_keyfile=)
redis_key_file: Optional[str] = None

# seconds, per Redis connect and per command (>= 0.001; or ?socket_timeout=)
redis_timeout: float = 1.0

# seconds the circuit stays open after a Redis failure before one retry
redis_cooldown: float = _env.number("NPU_CACHE_REDIS_COOLDOWN", 5.0, internal=True)

# namespace of our Redis keys (letters, digits, '_', '.', '-')
redis_prefix: str = _env.text("NPU_CACHE_REDIS_PREFIX", "npu-cache")

# local directory cache; None: <inductor cache dir>/npu-cache; "off" / "0" / "none": no local cache
cache_dir: Optional[str] = _env.text("NPU_CACHE_DIR")

# HMAC key signing every entry (a secret: kept out of save_config / codegen_config)
hmac_key: Optional[str] = _env.text("NPU_CACHE_HMAC_KEY")

# a file holding the HMAC key (used when hmac_key is None)
hmac_key_file: Optional[str] = _env.text("NPU_CACHE_HMAC_KEY_FILE")

# pending remote writes, entries (>= 1); beyond it a new put is dropped and counted
write_queue: int = _env.integer("NPU_CACHE_WRITE_QUEUE", 64, internal=True)

# pending remote writes, bytes (>= 1)
write_queue_bytes: int = _env.integer("NPU_CACHE_WRITE_QUEUE_BYTES", 256 << 20, internal=True)

# seconds the process waits at exit for pending remote writes
exit_flush_timeout: float = _env.number("NPU_CACHE_EXIT_FLUSH_TIMEOUT", 10.0, internal=True)

# one compile for all ranks (ranks.py): under a process group of 2+ ranks with Redis, ranks > 0
# wait (bounded) for rank 0's fx-graph, aot-autograd, kernel-binary and gemm-autotune entries
rank_share: bool = _env.flag("NPU_CACHE_RANK_SHARE", False)

# seconds a rank > 0 waits for rank 0 to publish one entry before compiling it itself
rank_share_timeout: float = _env.number("NPU_CACHE_RANK_SHARE_TIMEOUT", 300.0, internal=True)

# keys save_config() and codegen_config() (repro scripts) leave out
_save_config_ignore: list = ["hmac_key"]

_env.install(__name__)
