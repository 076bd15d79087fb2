"""Entry format v1: what every value we store looks like, and its verification.

    offset  size  field
    0       4     magic b"NPUC"
    4       1     format version (1)
    5       4     fingerprint length F, big-endian
    9       8     payload length P, big-endian
    17      F     fingerprint: compact key-sorted JSON (fingerprint.canonical)
    17+F    P     payload: opaque bytes (often a pickle; never looked at here)
    17+F+P  32    HMAC-SHA256 over  b"npu-cache/1\\0" + location + b"\\0" + bytes [0, 17+F+P)

``location`` is where the entry lives ("<kind>/<sha256 of the caller's key>"), so a valid
entry copied under another key fails its signature. Checks run cheapest first and the
payload is only handed out after the HMAC and the fingerprint both match: nothing in this
module parses the payload, so nothing unverified can be unpickled.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct

MAGIC = b"NPUC"
VERSION = 1
_HEADER = struct.Struct(">4sBIQ")
HEADER_SIZE = _HEADER.size  # 17
MAC_SIZE = 32
_DOMAIN = b"npu-cache/1\0"

# reasons an entry is refused (stats count them under these names)
NOT_AN_ENTRY = "not-an-entry"
UNSUPPORTED_VERSION = "unsupported-version"
TRUNCATED = "truncated"
MALFORMED = "malformed"
BAD_SIGNATURE = "bad-signature"
FOREIGN = "foreign-fingerprint"
REASONS = (NOT_AN_ENTRY, UNSUPPORTED_VERSION, TRUNCATED, MALFORMED, BAD_SIGNATURE, FOREIGN)


class Refused(Exception):
    """An entry failed verification; ``reason`` is one of REASONS."""

    def __init__(self, reason: str, detail: str = ""):
        self.reason, self.detail = reason, detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


def _mac(secret: bytes, location: str, signed: bytes | memoryview) -> bytes:
    h = hmac.new(secret, _DOMAIN, hashlib.sha256)
    h.update(location.encode("utf-8") + b"\0")
    h.update(signed)
    return h.digest()


def encode(payload: bytes, *, location: str, secret: bytes, fingerprint: bytes) -> bytes:
    header = _HEADER.pack(MAGIC, VERSION, len(fingerprint), len(payload))
    body = b"".join((header, fingerprint, payload))
    return body + _mac(secret, location, body)


def decode(blob: bytes, *, location: str, secret: bytes, fingerprint: bytes) -> bytes:
    """The payload of a verified entry; raises :class:`Refused` otherwise."""
    if len(blob) < 5:
        raise Refused(
            TRUNCATED if MAGIC.startswith(bytes(blob[:4])) else NOT_AN_ENTRY, f"{len(blob)} bytes"
        )
    if blob[:4] != MAGIC:
        raise Refused(NOT_AN_ENTRY, "no NPUC magic")
    if blob[4] != VERSION:
        raise Refused(UNSUPPORTED_VERSION, f"format {blob[4]}, this build reads {VERSION}")
    if len(blob) < HEADER_SIZE + MAC_SIZE:
        raise Refused(TRUNCATED, f"{len(blob)} bytes")
    _, _, fp_len, payload_len = _HEADER.unpack_from(blob)
    expected = HEADER_SIZE + fp_len + payload_len + MAC_SIZE
    if len(blob) < expected:
        raise Refused(TRUNCATED, f"{len(blob)} of {expected} bytes")
    if len(blob) > expected:
        raise Refused(MALFORMED, f"{len(blob) - expected} trailing bytes")
    view = memoryview(blob)
    body_end = expected - MAC_SIZE
    if not hmac.compare_digest(_mac(secret, location, view[:body_end]), bytes(view[body_end:])):
        raise Refused(BAD_SIGNATURE, "HMAC mismatch (tampered, moved, or signed with another key)")
    stored_fp = bytes(view[HEADER_SIZE : HEADER_SIZE + fp_len])
    if stored_fp != fingerprint:
        raise Refused(FOREIGN, _fp_difference(stored_fp, fingerprint))
    return bytes(view[HEADER_SIZE + fp_len : body_end])


def _fp_difference(stored: bytes, ours: bytes) -> str:
    # JSON only (signed by us, so trusted input); the payload is never parsed
    try:
        a, b = json.loads(stored), json.loads(ours)
    except ValueError:
        return "unreadable fingerprint"
    diffs = [
        f"{k}={a.get(k)!r} (ours {b.get(k)!r})"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
    return "written by " + ", ".join(diffs)
