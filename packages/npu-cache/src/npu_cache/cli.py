"""``npu-inductor cache stats|verify|clear`` (entry point group ``npu_inductor.commands``).

stats   entries and bytes per kind in the local directory and in Redis, server reachability,
        the settings in force (password redacted) and this software's fingerprint.
verify  checks every entry's signature and fingerprint without unpickling anything; lists
        the bad ones. Exit 0: all good; 1: bad entries; 2: a configured store or the key
        could not be read.
clear   deletes our entries (all kinds, or --kind) from the local directory and/or Redis.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import entry, fingerprint
from .local_store import LocalStore
from .redis_store import RedisStore
from .settings import ConfigError, Settings, redact
from .signing import load_key

ACTIONS = ("stats", "verify", "clear")


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument("--kind", help="only entries of this kind (e.g. fx-graph, kernel-binary)")
    parser.add_argument(
        "--where",
        choices=("all", "local", "remote"),
        default="all",
        help="local directory, Redis, or both (default)",
    )
    parser.add_argument(
        "--dir",
        help="local cache directory (default: $NPU_CACHE_DIR or <inductor cache dir>/npu-cache)",
    )
    parser.add_argument(
        "--redis-url", help="Redis URL (default: $NPU_CACHE_REDIS_URL or $TORCHINDUCTOR_REDIS_URL)"
    )
    parser.add_argument(
        "--delete-bad", action="store_true", help="verify: also delete the bad entries"
    )


def _stores(args, settings: Settings) -> dict:
    stores = {}
    if args.where in ("all", "local") and settings.cache_dir:
        stores["local"] = LocalStore(settings.cache_dir)
    if args.where in ("all", "remote") and settings.redis_url:
        stores["remote"] = RedisStore(settings)
    return stores


def _reachable(stores: dict, data: dict):
    """(name, store) for each store that can be listed; the others are reported in data."""
    for name, store in stores.items():
        if name == "remote" and not store.ping():
            data[name] = {"reachable": False, "error": store.last_error or "unreachable"}
        else:
            yield name, store


def _exit_code(data: dict, code: int = 0) -> int:
    """2 when a store could not be reached, else the command's own code."""
    return 2 if any(not v["reachable"] for v in data.values()) else code


def _stats(args, settings, stores) -> tuple[int, dict]:
    data = {}
    for name, store in _reachable(stores, data):
        kinds: dict[str, dict] = {}
        for loc in store.locations(args.kind):
            k = kinds.setdefault(loc.split("/", 1)[0], {"entries": 0, "bytes": 0})
            k["entries"] += 1
            k["bytes"] += store.size(loc)
        data[name] = {
            "reachable": True,
            "kinds": kinds,
            "entries": sum(k["entries"] for k in kinds.values()),
            "bytes": sum(k["bytes"] for k in kinds.values()),
        }
        if name == "remote":
            data[name]["server"] = store.server_info()
    return _exit_code(data), data


def _verify(args, settings, stores) -> tuple[int, dict]:
    key = load_key(settings, create=False)
    fp = fingerprint.canonical(fingerprint.current())
    data, code = {}, 0
    for name, store in _reachable(stores, data):
        checked, bad = 0, []
        for loc in store.locations(args.kind):
            blob = store.read(loc)
            if blob is None:  # deleted since listed
                continue
            checked += 1
            try:
                entry.decode(blob, location=loc, secret=key.secret, fingerprint=fp)
            except entry.Refused as r:
                where = str(store.path(loc)) if name == "local" else store.key(loc)
                item = {"location": loc, "at": where, "reason": r.reason, "detail": r.detail}
                if args.delete_bad:
                    item["deleted"] = bool(store.delete(loc))
                bad.append(item)
        data[name] = {"reachable": True, "checked": checked, "ok": checked - len(bad), "bad": bad}
        if bad:
            code = 1
    return _exit_code(data, code), data


def _clear(args, settings, stores) -> tuple[int, dict]:
    data = {}
    for name, store in _reachable(stores, data):
        data[name] = {
            "reachable": True,
            "deleted": sum(1 for loc in list(store.locations(args.kind)) if store.delete(loc)),
        }
    return _exit_code(data), data


def _run(args: argparse.Namespace):
    try:
        overrides = {}
        if args.dir:
            overrides["cache_dir"] = Path(args.dir).absolute()
        if args.redis_url:
            overrides["redis_url"] = args.redis_url
        settings = Settings.from_env(**overrides)  # a command: $NPU_CACHE_* as the shell set them
        stores = _stores(args, settings)
        code, stores_data = {"stats": _stats, "verify": _verify, "clear": _clear}[args.action](
            args, settings, stores
        )
    except ConfigError as exc:
        data = {"action": args.action, "error": str(exc)}
        return 2, data, f"npu-inductor cache {args.action}: {exc}"
    data = {
        "action": args.action,
        "settings": {
            "cache_dir": str(settings.cache_dir) if settings.cache_dir else None,
            "redis_url": redact(settings.redis_url),
            "redis_prefix": settings.redis_prefix,
            "kind": args.kind,
            "where": args.where,
        },
        "fingerprint": fingerprint.current(),
        "stores": stores_data,
        "status": {0: "ok", 1: "bad entries", 2: "store unreachable"}[code],
    }
    return code, data, _text(data)


def _text(d: dict) -> str:
    s = d["settings"]
    lines = [
        f"local dir   {s['cache_dir'] or 'off'}",
        f"redis       {s['redis_url'] or 'off'} (prefix {s['redis_prefix']})",
        "fingerprint " + " ".join(f"{k}={v}" for k, v in d["fingerprint"].items()),
    ]
    for name, st in d["stores"].items():
        if not st["reachable"]:
            lines.append(f"{name:<11} unreachable: {st['error']}")
        elif d["action"] == "stats":
            lines.append(f"{name:<11} {st['entries']} entries, {st['bytes']} bytes")
            lines += [
                f"  {k:<20} {v['entries']:>8} entries {v['bytes']:>12} bytes"
                for k, v in sorted(st["kinds"].items())
            ]
        elif d["action"] == "verify":
            lines.append(f"{name:<11} {st['checked']} checked, {st['ok']} ok, {len(st['bad'])} bad")
            lines += [
                f"  BAD {b['reason']:<20} {b['at']}  {b['detail']}"
                + ("  (deleted)" if b.get("deleted") else "")
                for b in st["bad"]
            ]
        else:
            lines.append(f"{name:<11} {st['deleted']} entries deleted")
    if not d["stores"]:
        lines.append("no cache configured (set NPU_CACHE_DIR and/or NPU_CACHE_REDIS_URL)")
    lines.append(f"cache {d['action']}: {d['status']}")
    return "\n".join(lines)


class _CacheCommand:
    help = (
        "inspect, verify (signatures and fingerprints) or clear npu-cache's local and Redis entries"
    )
    # the fingerprint includes the SoC of a started device: verify must see what compiles saw
    needs_components = True
    configure = staticmethod(_configure)
    run = staticmethod(_run)


COMMAND = _CacheCommand()
