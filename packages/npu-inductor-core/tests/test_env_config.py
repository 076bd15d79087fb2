"""env_config: environment defaults for the components' torch config modules, read once when
a module is installed, parsed as the components did; install(rules) checks every value set."""

import importlib
import sys

import pytest

from npu_inductor_core import env_config

SOURCE = """
from typing import Optional
from npu_inductor_core import env_config as _env

# a bool
on: bool = _env.flag("NPU_TEST_ON", False)
# an int
size: int = _env.integer("NPU_TEST_SIZE", 8)
# seconds
wait: float = _env.number("NPU_TEST_WAIT", 1.5)
# a folder
folder: Optional[str] = _env.text("NPU_TEST_FOLDER")

_env.install(__name__, {"size": (_env.is_int, "an int >= 0", "NPU_TEST_SIZE")})
"""


@pytest.fixture
def load(tmp_path, monkeypatch):
    (tmp_path / "npu_test_cfg.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))

    def load_(**env):
        for name in ("NPU_TEST_ON", "NPU_TEST_SIZE", "NPU_TEST_WAIT", "NPU_TEST_FOLDER"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        sys.modules.pop("npu_test_cfg", None)
        return importlib.import_module("npu_test_cfg")

    yield load_
    sys.modules.pop("npu_test_cfg", None)


def test_defaults_and_environment(load):
    c = load()
    assert c.get_config_copy() == {"on": False, "size": 8, "wait": 1.5, "folder": None}
    c = load(NPU_TEST_ON="1", NPU_TEST_SIZE="3", NPU_TEST_WAIT="0.25", NPU_TEST_FOLDER="/x")
    assert c.get_config_copy() == {"on": True, "size": 3, "wait": 0.25, "folder": "/x"}
    assert c.get_config_copy()["on"] is True  # typed, not the string "1"
    assert (
        load(NPU_TEST_ON="maybe", NPU_TEST_WAIT="later").get_config_copy()["wait"] == "later"
    )  # kept for check()


def test_patch_and_checks(load):
    c = load()
    with c.patch(size=2, folder="/y"):
        assert (c.size, c.folder) == (2, "/y")
    assert (c.size, c.folder) == (8, None)
    with pytest.raises(ValueError, match=r"npu_test_cfg\.size must be an int >= 0, got -1"):
        c.size = -1
    with pytest.raises(ValueError, match="got 'big'"), c.patch(size="big"):
        pass
    assert c.size == 8
    with (
        c.patch(wait="soon"),
        pytest.raises(ValueError, match=r"npu_test_cfg\.wait \(\$NPU_TEST_WAIT\) must be"),
    ):
        env_config.check(c, "wait", env_config.is_number, "a number >= 0", "NPU_TEST_WAIT")
    with pytest.raises(ValueError, match=r"\(\$NPU_TEST_SIZE\) must be an int >= 0, got 'many'"):
        load(NPU_TEST_SIZE="many")  # a checked key's bad environment value fails at install
