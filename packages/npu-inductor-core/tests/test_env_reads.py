"""Settings have one reader (issue 35): the environment is read only by
``npu_inductor_core.env_config``; every ``NPU_*`` variable is the default of a key of its
package's config module; at most 25 of them are user settings, each in its package README
(the internal ones, messages between our own processes and test hooks, are listed there too)."""

import importlib
import sys
import io
import re
import tokenize
from pathlib import Path

import pytest

from npu_inductor_core import env_config

PACKAGES = Path(__file__).resolve().parents[2]
READER = PACKAGES / "npu-inductor-core" / "src" / "npu_inductor_core" / "env_config.py"
ENV_READ = re.compile(
    r"\bos\.(environ|getenv|putenv|unsetenv)\b|\bfrom os import\b.*\b(environ|getenv)\b"
)
NPU_NAME = re.compile(r"\bNPU_[A-Z0-9_]*[A-Z0-9]\b")
# NPU_* names in src that are not environment variables: Python constants and the C macros of
# the generated C++ wrapper (cpp_wrapper.py).
NOT_VARIABLES = {
    "NPU_HEURISTICS",
    "NPU_MATH",
    "NPU_AOTI_ASCEND",
    "NPU_DIRECT_LAUNCH",
    "NPU_DIRECT_LIBRARY",
}
CONFIG_MODULES = (
    "npu_autotune.config",
    "npu_cache.config",
    "npu_fusion.config",
    "npu_graphtree.config",
    "npu_launcher.config",
    "npu_lowering.config",
    "npu_sim.config",
    "npu_inductor.config",
)
MAX_USER_VARIABLES = 25


def _src_files():
    return sorted(p for p in PACKAGES.glob("*/src/**/*.py") if p != READER)


def _code(path: Path):
    """The tokens of ``path``."""
    with tokenize.open(path) as f:
        source = f.read()
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def _env_lines(path: Path) -> list[int]:
    """Lines of ``path`` whose code (comments and strings left out) touches ``os.environ``."""
    line_code: dict[int, str] = {}
    for tok in _code(path):
        if tok.type not in (tokenize.COMMENT, tokenize.STRING, tokenize.NL, tokenize.NEWLINE):
            line_code[tok.start[0]] = (
                line_code.get(tok.start[0], "") + tok.string + ("" if tok.string == "." else " ")
            )
    return [n for n, code in line_code.items() if ENV_READ.search(code.replace(" .", "."))]


def test_only_env_config_reads_the_environment():
    offenders = [f"{p.relative_to(PACKAGES)}:{n}" for p in _src_files() for n in _env_lines(p)]
    assert not offenders, (
        "read or set the environment through npu_inductor_core.env_config "
        f"(a config key, or text/snapshot/setdefault/overlay): {offenders}"
    )


def test_the_check_finds_a_planted_read(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        'import os\n# os.environ in a comment is fine\nX = "os.environ"\n'
        'Y = os.environ.get("NPU_X")\nZ = os.getenv("HOME")\n'
    )
    assert _env_lines(planted) == [4, 5]


def _loaded_variables() -> dict[str, tuple[str, bool]]:
    for name in CONFIG_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pytest.skip(f"{name} is not installed")
    return {
        var: (module, internal)
        for var, (module, internal) in env_config.VARIABLES.items()
        if _in_src(module)
    }


def _in_src(module: str) -> bool:
    """Whether ``module`` is one of the packages' source modules (a test's own config module,
    e.g. test_env_config's, registers its variables too)."""
    path = getattr(sys.modules.get(module), "__file__", None)
    return path is not None and Path(path).resolve().is_relative_to(PACKAGES) and "/src/" in path


def test_every_npu_variable_is_a_config_key_default():
    variables = _loaded_variables()
    wrong_module = {v: m for v, (m, _) in variables.items() if m not in CONFIG_MODULES}
    assert not wrong_module, f"NPU_* variables read outside a config module: {wrong_module}"
    named = set()
    for path in _src_files():
        for tok in _code(path):
            if tok.type == tokenize.STRING:
                named.update(NPU_NAME.findall(tok.string))
    unread = sorted(named - set(variables) - NOT_VARIABLES)
    assert not unread, (
        f"NPU_* names in src that no config module reads (a dead variable, or a new one): {unread}"
    )


def test_user_variables_are_few_and_documented():
    variables = _loaded_variables()
    user = sorted(v for v, (_, internal) in variables.items() if not internal)
    assert len(user) <= MAX_USER_VARIABLES, user
    missing = []
    for var, (module, _) in variables.items():
        package = Path(importlib.import_module(module).__file__).resolve().parents[2]
        if f"`{var}`" not in (package / "README.md").read_text():
            missing.append(f"{var} ({package.name}/README.md)")
    assert not missing, f"variables missing from their package README: {missing}"
