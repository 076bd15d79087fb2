"""C declaration helpers for the ABI fidelity tests: an ELF import-table reader and a small
parser for C prototypes and call sites (enough for the CANN / CUDA headers we compare with).
Loaded by path through the ``c_decls`` fixture (tests/ is not a package)."""

import re
import struct


def undefined_dynamic_symbols(elf: bytes) -> set[str]:
    """Names in .dynsym with st_shndx == SHN_UNDEF: the ELF's import table (64-bit LE)."""
    assert elf[:4] == b"\x7fELF" and elf[4] == 2 and elf[5] == 1
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    out = set()
    for _name, sh_type, _f, _a, offset, size, link, _i, _al, _es in sections:
        if sh_type != 11:  # SHT_DYNSYM
            continue
        strtab = sections[link][4]
        for j in range(size // 24):
            st_name, _info, _other, shndx, _v, _s = struct.unpack_from(
                "<IBBHQQ", elf, offset + j * 24
            )
            if shndx == 0 and st_name:
                end = elf.index(b"\0", strtab + st_name)
                out.add(elf[strtab + st_name : end].decode())
    return out


def param_types(params: str) -> list[str]:
    """'const void *stubFunc, uint32_t n' -> ['const void*', 'uint32_t'] (names dropped)."""
    out = []
    for p in [p.strip() for p in params.split(",") if p.strip() and p.strip() != "void"]:
        toks = re.findall(r"\w+|\*", p)
        if (
            len(toks) > 1
            and re.fullmatch(r"\w+", toks[-1])
            and toks[-1] not in ("int", "char", "long")
        ):
            toks = toks[:-1]
        out.append(" ".join(toks).replace(" *", "*"))
    return out


def parse_prototype(text: str) -> tuple[str, str, list[str]]:
    m = re.fullmatch(r"\s*(.*?)\s*\b(\w+)\s*\((.*)\)\s*", text, re.S)
    ret = " ".join(re.findall(r"\w+|\*", m.group(1))).replace(" *", "*")
    return ret, m.group(2), param_types(m.group(3))


def header_prototype(headers: str, name: str):
    """The declaration of ``name`` in C header text, export macros stripped."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", headers, flags=re.S)
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    for stmt in text.split(";"):
        stmt = re.split(r"[{}]", stmt)[-1]
        if re.search(rf"\b{name}\s*\(", stmt) and "typedef" not in stmt:
            stmt = re.sub(r"\b(RTS_API|ACL_FUNC_VISIBILITY|CUDAAPI|extern)\b|\"C\"", " ", stmt)
            return parse_prototype(stmt)
    return None


def call_sites(source: str, name: str) -> list[list[str]]:
    """Argument expressions of every call ``name(...)`` in C/C++ (or generated) source."""
    calls = []
    for m in re.finditer(rf"(?<![\w.]){name}\s*\(", source):
        depth, i, args, cur = 1, m.end(), [], ""
        while depth and i < len(source):
            c = source[i]
            depth += (c == "(") - (c == ")")
            if depth == 1 and c == ",":
                args.append(cur.strip())
                cur = ""
            elif depth:
                cur += c
            i += 1
        if cur.strip():
            args.append(cur.strip())
        calls.append(args)
    return calls


def expression_is_pointer(expr: str):
    """True / False for call-site expressions whose kind is evident, None otherwise."""
    if (
        re.match(r"^(&|NULL$|nullptr$|static_cast<\s*\w+\s*\*|\(\s*\w+\s*\*+\s*\))", expr)
        or ".c_str()" in expr
    ):
        return True
    if re.match(r"^(sizeof\s*\(|\d+$)", expr):
        return False
    return None
