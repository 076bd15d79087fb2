"""Where the HMAC key comes from.

Order: $NPU_CACHE_HMAC_KEY (the key itself), $NPU_CACHE_HMAC_KEY_FILE (a file holding it),
else a per-user key file created on first use. The default file is private to one user on
one machine: processes sharing a Redis across machines must be given the same key, or each
refuses the others' entries (counted as bad signatures, never trusted).
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from npu_inductor_core import env_config as _env

from .settings import HMAC_KEY, HMAC_KEY_FILE, ConfigError, Settings

log = logging.getLogger(__name__)
MIN_KEY_BYTES = 16


@dataclass(frozen=True)
class Key:
    secret: bytes
    source: str  # what the CLI and stats print; never the key itself

    def __repr__(self) -> str:
        return f"Key(source={self.source!r})"


def default_key_file() -> Path:
    base = _env.text("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "npu-inductor" / "cache-hmac.key"


def _read_file(path: Path) -> bytes:
    try:
        mode = path.stat().st_mode
        data = path.read_bytes().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the cache HMAC key file {path}: {exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "cache HMAC key file %s is readable by other users (mode %o): chmod 600 it",
            path,
            stat.S_IMODE(mode),
        )
    return data


def _create_default(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # written aside, then linked into place: a process starting at the same moment sees
    # either no file or the whole key, and link() keeps the first key when two race
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)


def load_key(settings: Settings, create: bool = True) -> Key:
    """The configured key; ``create=False`` (the CLI) refuses to invent a default one."""
    if settings.hmac_key:
        secret, source = settings.hmac_key.encode("utf-8"), f"${HMAC_KEY}"
    elif settings.hmac_key_file:
        path = Path(settings.hmac_key_file)
        secret, source = _read_file(path), f"${HMAC_KEY_FILE} ({path})"
    else:
        path = default_key_file()
        if not path.exists():
            if not create:
                raise ConfigError(
                    f"no cache HMAC key: set ${HMAC_KEY} or ${HMAC_KEY_FILE} "
                    f"(the default key file {path} does not exist)"
                )
            _create_default(path)
        secret, source = _read_file(path), f"default key file {path}"
    if len(secret) < MIN_KEY_BYTES:
        raise ConfigError(
            f"the cache HMAC key from {source} is {len(secret)} bytes; use at least "
            f"{MIN_KEY_BYTES} (e.g. `openssl rand -hex 32`)"
        )
    return Key(secret, source)
