"""Signed entries in a local directory, safe for many processes at once.

Layout: <root>/v1/<kind>/<digest[:2]>/<digest>  (+ ``.lock`` beside it).
Writers take the entry's file lock (with a timeout) and publish with an atomic rename, so a
reader (which takes no lock) sees either the old entry or the new one, never a partial file.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from .locks import file_lock

LAYOUT = "v1"
_LOCK_SUFFIX = ".lock"


class LocalStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.base = self.root / LAYOUT

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"

    def path(self, location: str) -> Path:
        kind, digest = location.split("/", 1)
        return self.base / kind / digest[:2] / digest

    def lock_path(self, location: str) -> Path:
        path = self.path(location)
        return path.with_name(path.name + _LOCK_SUFFIX)

    def read(self, location: str) -> bytes | None:
        try:
            return self.path(location).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, location: str, blob: bytes) -> None:
        """Raises :class:`~npu_cache.locks.LockTimeout` when the lock stays held."""
        path = self.path(location)
        path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.lock_path(location)):
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
            try:
                with open(tmp, "wb") as f:
                    f.write(blob)
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)

    def delete(self, location: str) -> bool:
        path = self.path(location)
        with file_lock(self.lock_path(location)):
            try:
                path.unlink()
                return True
            except FileNotFoundError:
                return False

    def locations(self, kind: str | None = None) -> Iterator[str]:
        kinds = (
            [kind]
            if kind
            else sorted(p.name for p in self.base.iterdir() if p.is_dir())
            if self.base.is_dir()
            else []
        )
        for k in kinds:
            for shard in sorted((self.base / k).glob("??")):
                for entry in sorted(shard.iterdir()):
                    if not entry.name.startswith(".") and not entry.name.endswith(_LOCK_SUFFIX):
                        yield f"{k}/{entry.name}"

    def size(self, location: str) -> int:
        try:
            return self.path(location).stat().st_size
        except FileNotFoundError:
            return 0
