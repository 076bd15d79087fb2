"""Settings have one reader (issue 35): the environment is read only by
``npu_inductor_core.env_config``; every ``NPU_*`` variable is the default of a key of its
package's config module; at most 25 variables in all are user settings, the C/C++ ones below
included, each in its package README (the internal ones, messages between our own processes
and test hooks, are listed there too).

C/C++ sources in src are held to an explicit allow-list (``C_ENV_ALLOWED``): code compiled
into C++ wrappers and AOTInductor models runs at serve time without Python, so the environment
is its only setting channel; every variable read there has its reason and a README row."""

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
# issue 35: the variables users need to know, the config modules' (not internal) and the C/C++
# serve-time ones (C_ENV_ALLOWED) counted together
MAX_USER_VARIABLES = 25

C_SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp")
# The only environment accesses allowed in C/C++ sources: file (under packages/) -> variable
# -> why it is read there and not through a config module.
_SERVE_TIME = (
    "read by compiled C++ wrappers / AOTInductor models at serve time, "
    "where no Python config module runs"
)
C_ENV_ALLOWED = {
    "npu-lowering/src/npu_lowering/include/npu_common.h": {
        "NPU_LAUNCHER_DIRECT": f"{_SERVE_TIME} (0: npu-launcher's Python capsule, not the C ABI)",
        "NPU_LAUNCHER_DIRECT_LIB": f"{_SERVE_TIME} (the direct launcher library to open first)",
    },
}
# C/C++: comments, string and character literals (not a digit separator, 1'000); an
# environment function or ``environ``.
_C_SPANS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|(?<!\w)\'(?:\\.|[^\'\\\n])*\'', re.S)
_C_ENV = re.compile(r"\b(?:\w*getenv|setenv|putenv|unsetenv|clearenv|environ)\b")
_C_NAME = re.compile(r'\s*\(\s*"([^"\\]*)"\s*\)')


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


def _c_src_files(root: Path = PACKAGES):
    return sorted(p for p in root.glob("*/src/**/*") if p.suffix in C_SUFFIXES and p.is_file())


def _c_env_reads(path: Path) -> list[tuple[int, str | None]]:
    """(line, variable) of each environment access in the C/C++ source ``path``, comments and
    literals left out; variable: the name a call reads as a string literal, else None."""
    text = path.read_text(errors="replace")
    blank = lambda m: re.sub(r"[^\n]", " ", m[0])  # noqa: E731
    # the same length as text: comments blanked, literals kept (kept) or blanked (code)
    kept = _C_SPANS.sub(lambda m: m[0] if m[0][0] in "\"'" else blank(m), text)
    code = _C_SPANS.sub(blank, text)
    reads = []
    for m in _C_ENV.finditer(code):
        name = _C_NAME.match(kept, m.end())
        reads.append((text.count("\n", 0, m.start()) + 1, name[1] if name else None))
    return reads


def _c_offenders(root: Path = PACKAGES) -> tuple[list[str], set]:
    """The C/C++ environment accesses under ``root`` that ``C_ENV_ALLOWED`` does not name,
    and the allowed (file, variable) pairs found."""
    offenders, allowed = [], set()
    for path in _c_src_files(root):
        rel = path.relative_to(root).as_posix()
        for line, name in _c_env_reads(path):
            if name is not None and name in C_ENV_ALLOWED.get(rel, {}):
                allowed.add((rel, name))
            else:
                offenders.append(f"{rel}:{line} ({name or 'no literal variable name'})")
    return offenders, allowed


def test_c_sources_read_only_the_allowed_variables():
    offenders, found = _c_offenders()
    assert not offenders, (
        "C/C++ sources in src read the environment only where no Python config module runs "
        f"(C_ENV_ALLOWED, with the reason; else a config key passed in): {offenders}"
    )
    listed = {(f, v) for f, variables in C_ENV_ALLOWED.items() for v in variables}
    assert found == listed, f"allowed but no longer read: {sorted(listed - found)}"


def test_the_c_check_finds_a_planted_read(tmp_path):
    common = tmp_path / "npu-lowering/src/npu_lowering/include/npu_common.h"
    common.parent.mkdir(parents=True)
    common.write_text(
        '// std::getenv("NPU_X") in a comment is fine\n'
        '/* getenv("NPU_Y")\n   across lines */ const char* s = "getenv(\\"NPU_Z\\")";\n'
        'auto a = std::getenv("NPU_LAUNCHER_DIRECT");\n'
        'auto b = std::getenv( "NPU_LAUNCHER_DIRECT_LIB" );\n'
        'auto c = std::getenv("NPU_NEW");\n'
    )
    other = tmp_path / "npu-sim/src/npu_sim/csrc/planted.cpp"
    other.parent.mkdir(parents=True)
    other.write_text(
        '#include <cstdlib>\nint f() { return getenv("NPU_LAUNCHER_DIRECT") != nullptr; }\n'
        'void g(const char* n) { setenv(n, "1", 1); }\nextern char** environ;\n'
    )
    (tmp_path / "npu-sim/src/npu_sim/csrc/planted.py").write_text('getenv("NPU_PY")\n')
    assert _c_env_reads(common) == [
        (4, "NPU_LAUNCHER_DIRECT"),
        (5, "NPU_LAUNCHER_DIRECT_LIB"),
        (6, "NPU_NEW"),
    ]
    offenders, allowed = _c_offenders(tmp_path)
    assert offenders == [
        "npu-lowering/src/npu_lowering/include/npu_common.h:6 (NPU_NEW)",
        "npu-sim/src/npu_sim/csrc/planted.cpp:2 (NPU_LAUNCHER_DIRECT)",
        "npu-sim/src/npu_sim/csrc/planted.cpp:3 (no literal variable name)",
        "npu-sim/src/npu_sim/csrc/planted.cpp:4 (no literal variable name)",
    ]
    assert len(allowed) == 2


def test_c_variables_are_documented():
    missing = [
        f"{var} ({path.split('/')[0]}/README.md)"
        for path, variables in C_ENV_ALLOWED.items()
        for var in variables
        if f"| `{var}` |" not in (PACKAGES / path.split("/")[0] / "README.md").read_text()
    ]
    assert not missing, f"C++ runtime variables missing from their README's config table: {missing}"


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
    # the C++ serve-time variables are user settings too (each in a README config table:
    # test_c_variables_are_documented)
    c_variables = {v for per_file in C_ENV_ALLOWED.values() for v in per_file}
    user = sorted({v for v, (_, internal) in variables.items() if not internal} | c_variables)
    assert len(user) <= MAX_USER_VARIABLES, (len(user), user)
    missing = []
    for var, (module, _) in variables.items():
        package = Path(importlib.import_module(module).__file__).resolve().parents[2]
        if f"`{var}`" not in (package / "README.md").read_text():
            missing.append(f"{var} ({package.name}/README.md)")
    assert not missing, f"variables missing from their package README: {missing}"
