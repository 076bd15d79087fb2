"""Entry format v1: a verified entry round-trips; every other byte string is refused with a
reason, and the payload is never handed out for one."""

import pytest

from npu_cache import entry, fingerprint

SECRET = b"s" * 32
FP = fingerprint.canonical({"torch": "2.13.0", "triton": "triton 3.8.0"})
LOC = "kernel-binary/" + "ab" * 32
PAYLOAD = b"\x80\x05payload bytes" * 10


def enc(payload=PAYLOAD, location=LOC, secret=SECRET, fp=FP):
    return entry.encode(payload, location=location, secret=secret, fingerprint=fp)


def dec(blob, location=LOC, secret=SECRET, fp=FP):
    return entry.decode(blob, location=location, secret=secret, fingerprint=fp)


def refused(blob, **kw) -> str:
    with pytest.raises(entry.Refused) as info:
        dec(blob, **kw)
    return info.value.reason


@pytest.mark.feature("X01")
def test_roundtrip_and_layout():
    blob = enc()
    assert dec(blob) == PAYLOAD
    assert blob[:4] == b"NPUC" and blob[4] == 1
    assert len(blob) == entry.HEADER_SIZE + len(FP) + len(PAYLOAD) + entry.MAC_SIZE
    assert blob[entry.HEADER_SIZE : entry.HEADER_SIZE + len(FP)] == FP
    assert dec(enc(b"")) == b""


@pytest.mark.feature("X01")
def test_every_single_byte_change_is_refused():
    blob = enc(b"0123456789")
    for i in range(len(blob)):
        bad = bytearray(blob)
        bad[i] ^= 0x01
        # header changes read as another format or length; all else fails the HMAC
        assert refused(bytes(bad)) in {
            entry.BAD_SIGNATURE,
            entry.NOT_AN_ENTRY,
            entry.UNSUPPORTED_VERSION,
            entry.TRUNCATED,
            entry.MALFORMED,
        }, i


@pytest.mark.feature("X01")
def test_every_truncation_is_refused():
    blob = enc(b"0123456789")
    for n in range(len(blob)):
        assert refused(blob[:n]) in {entry.TRUNCATED, entry.NOT_AN_ENTRY}, n
    assert refused(blob[:-1]) == entry.TRUNCATED
    assert refused(blob + b"x") == entry.MALFORMED


@pytest.mark.feature("X01")
def test_wrong_key_moved_entry_and_foreign_fingerprint():
    blob = enc()
    assert refused(blob, secret=b"t" * 32) == entry.BAD_SIGNATURE
    # the same bytes under another key (replayed or swapped) fail: the location is signed
    assert refused(blob, location="kernel-binary/" + "cd" * 32) == entry.BAD_SIGNATURE
    other = fingerprint.canonical({"torch": "2.11.0", "triton": "triton 3.6.0"})
    with pytest.raises(entry.Refused) as info:
        dec(enc(fp=other))
    assert info.value.reason == entry.FOREIGN
    assert "torch='2.11.0' (ours '2.13.0')" in info.value.detail


def test_not_an_entry_and_future_version():
    assert (
        refused(b"\x80\x04K\x01.") == entry.NOT_AN_ENTRY
    )  # a bare pickle, as upstream would store
    blob = bytearray(enc())
    blob[4] = 2
    assert refused(bytes(blob)) == entry.UNSUPPORTED_VERSION
