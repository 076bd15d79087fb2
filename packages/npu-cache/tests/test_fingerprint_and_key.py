"""The software fingerprint (torch, Triton, and torch_npu/CANN/SoC when present, found without
importing torch_npu) and where the HMAC key comes from."""

import json
import os
import stat
import subprocess
import sys
import textwrap
import types

import pytest
import torch

from npu_cache import ConfigError, SignedCache, Settings, fingerprint
from npu_cache.signing import load_key


@pytest.mark.feature("X01")
def test_fingerprint_names_this_software():
    import triton

    fp = fingerprint.compute()
    assert fp["torch"] == torch.__version__
    assert fp["triton"] == f"triton {triton.__version__}"
    assert fp["python"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert not {"torch_npu", "cann"} & set(fp)  # absent here, so not claimed
    npu = getattr(torch, "npu", None)  # the SoC is claimed only when a device is up
    assert fp.get("soc") == (npu.get_device_name() if npu is not None else None)


@pytest.mark.feature("X01")
def test_ascend_stack_is_detected_without_importing_torch_npu(tmp_path):
    """A fake torch_npu distribution whose import would fail, and a fake CANN toolkit."""
    site = tmp_path / "site"
    (site / "torch_npu").mkdir(parents=True)
    (site / "torch_npu" / "__init__.py").write_text(
        "raise ImportError('torch_npu must not be imported')\n"
    )
    dist = site / "torch_npu-2.13.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.13.0\n")
    cann = tmp_path / "ascend-toolkit" / "8.1.RC1"
    cann.mkdir(parents=True)
    (cann / "version.cfg").write_text("# CANN\nversion=8.1.RC1\n")
    script = textwrap.dedent("""
        import json, sys
        from npu_cache import fingerprint
        print(json.dumps({"fp": fingerprint.compute(), "imported": "torch_npu" in sys.modules}))
    """)
    # keep the caller's PYTHONPATH (where npu_cache may be installed) behind the fake site
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = dict(
        os.environ,
        PYTHONPATH=path,
        ASCEND_TOOLKIT_HOME=str(cann),
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["imported"] is False
    assert out["fp"]["torch_npu"] == "2.13.0" and out["fp"]["cann"] == "8.1.RC1"


@pytest.mark.feature("X01")
def test_soc_comes_from_a_loaded_device_module_and_changes_the_fingerprint(
    monkeypatch, make_settings, writer
):
    cache = SignedCache("autotune", make_settings(), writer=writer)
    fingerprint.reset()
    cache.put("k", b"tuned on a 910B")
    fake_npu = types.SimpleNamespace(
        is_available=lambda: True, device_count=lambda: 1, get_device_name=lambda i: "Ascend910B3"
    )
    monkeypatch.setattr(torch, "npu", fake_npu, raising=False)
    try:
        fingerprint.reset()
        assert fingerprint.current()["soc"] == "Ascend910B3"
        assert cache.get("k") is None  # written without that SoC: foreign here
        assert cache.counters["refused_foreign-fingerprint"] == 1
    finally:
        monkeypatch.undo()
        fingerprint.reset()
    assert cache.get("k") == b"tuned on a 910B"


def test_key_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert load_key(Settings(hmac_key="x" * 16)).secret == b"x" * 16
    kf = tmp_path / "key"
    kf.write_text("y" * 40 + "\n")
    kf.chmod(0o600)
    key = load_key(Settings(hmac_key_file=str(kf)))
    assert key.secret == b"y" * 40 and "y" * 40 not in repr(key)
    with pytest.raises(ConfigError, match="at least 16"):
        load_key(Settings(hmac_key="short"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_key(Settings(hmac_key_file=str(tmp_path / "missing")))
    with pytest.raises(ConfigError, match="no cache HMAC key"):
        load_key(Settings(), create=False)
    default = load_key(Settings())  # created on first use, private to the user, stable
    path = tmp_path / "config" / "npu-inductor" / "cache-hmac.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_key(Settings()).secret == default.secret and len(default.secret) == 64


def test_entries_signed_with_another_key_are_refused(make_settings, writer):
    a = SignedCache("fx-graph", make_settings(), writer=writer)
    b = SignedCache(
        "fx-graph", make_settings(hmac_key="another key, same directory"), writer=writer
    )
    a.put("k", b"v")
    assert a.get("k") == b"v"
    assert b.get("k") is None and b.counters["refused_bad-signature"] == 1
