#!/usr/bin/env python3
"""The public API as a table, read from include/gpumem/gpumem.h (the one description of it).

usage: api_table.py [HEADER] [--json | --python]
  HEADER     include/gpumem/gpumem.h (default: the one beside this script's source tree)
  --json     the table as JSON
  --python   the ctypes prototypes block that bindings/python/gpumem/_lib.py holds
  (neither)  one line per function, struct, field and constant

The table holds every GPUMEM_API function (name, return type, parameters in order,
the #if it sits under), every public struct (fields in order with their types, and
their x86-64 offsets and sizes), every typedef, and every #define constant with its
value.  tests/api/check_drift.py compares the bindings with it.

This reads this header's style, not C in general: declarations end at ';', structs are
`typedef struct x { ... } x_t;`, #if conditions use only defined().  A declaration it
cannot read is an error, so a new style in the header shows here first.
Python 3 standard library only.
SPDX-License-Identifier: MIT
"""
import json
import os
import re
import sys

# Macros a consumer of the header never defines: the C (not C++) view, not the library's build,
# on a POSIX system.  The C++ branches hold only the _INIT initialisers and extern "C".
UNDEFINED = {"__cplusplus", "GPUMEM_BUILDING_LIBRARY", "_WIN32"}

# x86-64 (LP64, System V): size and alignment of each scalar the header uses.
SCALARS = {
    "char": (1, "char"), "unsigned char": (1, "u8"), "signed char": (1, "i8"),
    "int8_t": (1, "i8"), "uint8_t": (1, "u8"), "int16_t": (2, "i16"), "uint16_t": (2, "u16"),
    "int32_t": (4, "i32"), "uint32_t": (4, "u32"), "int64_t": (8, "i64"), "uint64_t": (8, "u64"),
    "int": (4, "i32"), "unsigned": (4, "u32"), "unsigned int": (4, "u32"), "long": (8, "i64"),
    "size_t": (8, "u64"), "ssize_t": (8, "i64"), "float": (4, "f32"), "double": (8, "f64"),
    "void": (0, "void"),
}
POINTER_SIZE = 8


class HeaderError(Exception):
    pass


def _read(path, seen):
    """The header's text with the gpumem headers it includes spliced in where they are included."""
    path = os.path.abspath(path)
    if path in seen:
        return ""
    seen.add(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    include_root = os.path.dirname(os.path.dirname(path))  # include/ (for "gpumem/x.h")

    def splice(m):
        inc = os.path.join(include_root, m.group(1))
        return _read(inc, seen) if os.path.isfile(inc) else m.group(0)
    return re.sub(r'^[ \t]*#[ \t]*include[ \t]*"(gpumem/[^"]+)"', splice, text, flags=re.M)


def _strip_comments(text):
    # Comments become one space (or their newlines, so line structure survives).
    def blank(m):
        return "\n" * m.group(0).count("\n") or " "
    text = re.sub(r"/\*.*?\*/", blank, text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _eval_condition(cond, defined):
    expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)",
                  lambda m: " 1 " if (m.group(1) or m.group(2)) in defined else " 0 ", cond)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if not re.fullmatch(r"[\s\d()]*(?:(?:and|or|not)[\s\d()]*)*", expr):
        raise HeaderError("cannot evaluate #if %s (only defined(), !, && and || are read)" % cond)
    return bool(eval(expr, {"__builtins__": {}}))  # digits, parentheses and boolean words only


def _preprocess(text):
    """(code lines of the C view, [(name, value, condition)] of the #defines in it).
    Each code line is (line, condition): the #if it sits under, as written ('' at the top)."""
    text = re.sub(r"\\\n", " ", text)
    defined = set()
    stack = []  # (active, taken, condition text)
    code, defines = [], []

    def active():
        return all(s[0] for s in stack)

    def condition():
        # The conditions a consumer could see differently (the include guard is always true).
        return " && ".join(s[2] for s in stack if s[2] and not s[2].endswith("_H)"))

    for line in text.split("\n"):
        m = re.match(r"\s*#\s*(\w+)\s*(.*)$", line)
        if not m:
            if active() and line.strip():
                code.append((line, condition()))
            continue
        directive, rest = m.group(1), m.group(2).strip()
        if directive in ("if", "ifdef", "ifndef"):
            cond = {"if": rest, "ifdef": "defined(%s)" % rest, "ifndef": "!defined(%s)" % rest}[directive]
            value = _eval_condition(cond, defined) if active() else False
            stack.append((value, value, cond))
        elif directive == "elif":
            if not stack:
                raise HeaderError("#elif without #if")
            _, taken, cond = stack[-1]
            value = not taken and _eval_condition(rest, defined)
            stack[-1] = (value, taken or value, "!(%s) && (%s)" % (cond, rest))
        elif directive == "else":
            if not stack:
                raise HeaderError("#else without #if")
            _, taken, cond = stack[-1]
            stack[-1] = (not taken, True, "!(%s)" % cond)
        elif directive == "endif":
            if not stack:
                raise HeaderError("#endif without #if")
            stack.pop()
        elif directive == "define" and active():
            dm = re.match(r"(\w+)(\([^)]*\))?\s*(.*)$", rest)
            name, params, value = dm.group(1), dm.group(2), dm.group(3).strip()
            if name not in UNDEFINED:
                defined.add(name)
            defines.append((name, params, value, condition()))
    if stack:
        raise HeaderError("an #if is never closed")
    return code, defines


def _int_value(value, constants):
    """The integer a #define's text stands for (literals, other constants, + - * and parentheses)."""
    expr = re.sub(r"\b(GPUMEM_\w+)\b", lambda m: str(constants[m.group(1)]) if m.group(1) in constants
                  else m.group(0), value)
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", lambda m: str(int(m.group(1), 0)), expr)
    if not re.fullmatch(r"[\s\d()+\-*]+", expr):
        return None
    return eval(expr, {"__builtins__": {}})  # digits and + - * ( ) only


def parse_decl(decl, typedefs=None):
    """One declarator ("const void *const *srcs", "char name[256]") as a type dict and a name.
    type: {'c': the C spelling, 'base': 'void', 'pointers': 2, 'array': None or its length text,
    'const': whether the object pointed at is const}."""
    decl = " ".join(decl.split())
    m = re.fullmatch(r"(.*?)\s*\b([A-Za-z_]\w*)\s*(?:\[\s*([^\]]+?)\s*\])?", decl)
    if not m or not m.group(1):
        raise HeaderError("cannot read the declaration %r" % decl)
    spec, name, array = m.group(1), m.group(2), m.group(3)
    pointers = spec.count("*")
    words = re.findall(r"[A-Za-z_]\w*", spec)
    const = bool(re.match(r"\s*const\b", spec)) or bool(re.search(r"\bconst\s*\*", spec.split("*")[0] + "*"))
    base = " ".join(w for w in words if w not in ("const", "struct", "volatile"))
    if not base:
        raise HeaderError("no type in the declaration %r" % decl)
    c = re.sub(r"(\w)\*", r"\1 *", re.sub(r"\s*\*", "*", spec.strip()))
    return {"c": c, "base": base, "pointers": pointers, "array": array, "const": const}, name


def _split_params(params):
    params = " ".join(params.split())
    if params in ("", "void"):
        return []
    return [p.strip() for p in params.split(",")]


def _statements(code):
    """Top-level declarations, each (text without its ';', condition)."""
    out, buf, depth, cond = [], [], 0, ""
    for line, line_cond in code:
        for ch in line + "\n":
            if not buf or not "".join(buf).strip():
                cond = line_cond
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == ";" and depth == 0:
                out.append((" ".join("".join(buf).split()), cond))
                buf = []
            else:
                buf.append(ch)
    rest = "".join(buf).strip()
    if rest:
        raise HeaderError("the header ends inside a declaration: %r" % rest[:80])
    return out


def parse_header(path):
    code, defines = _preprocess(_strip_comments(_read(path, set())))
    table = {"header": os.path.basename(path), "functions": [], "structs": {}, "typedefs": {},
             "callbacks": {}, "handles": [], "constants": {}, "initialisers": {}, "macros": []}

    for name, params, value, cond in defines:
        if name == "GPUMEM_API" or not value and name.endswith("_H"):
            continue
        if params is not None:
            table["macros"].append(name)
        elif name.endswith("_INIT"):
            table["initialisers"][name] = value
        else:
            v = _int_value(value, table["constants"])
            if v is None:
                raise HeaderError("the constant %s = %s is not an integer this script can read" % (name, value))
            table["constants"][name] = v

    for stmt, cond in _statements(code):
        m = re.fullmatch(r"typedef struct (\w+) \{(.*)\} (\w+)", stmt)
        if m:
            fields = []
            for decl in m.group(2).split(";"):
                if decl.strip():
                    ftype, fname = parse_decl(decl)
                    fields.append({"name": fname, "type": ftype})
            table["structs"][m.group(3)] = {"tag": m.group(1), "fields": fields}
            continue
        m = re.fullmatch(r"typedef struct (\w+) ?\* ?(\w+)", stmt)
        if m:
            table["handles"].append(m.group(2))
            table["typedefs"][m.group(2)] = {"c": "struct %s *" % m.group(1), "base": m.group(1),
                                             "pointers": 1, "array": None, "const": False}
            continue
        m = re.fullmatch(r"typedef (.+?) ?\( ?\* ?(\w+) ?\) ?\((.*)\)", stmt)
        if m:
            ret, _ = parse_decl(m.group(1) + " _")
            params = [dict(zip(("type", "name"), parse_decl(p))) for p in _split_params(m.group(3))]
            table["callbacks"][m.group(2)] = {"returns": ret, "params": params}
            continue
        m = re.fullmatch(r"typedef (.+)", stmt)
        if m:
            t, name = parse_decl(m.group(1))
            table["typedefs"][name] = t
            continue
        m = re.fullmatch(r"GPUMEM_API (.+?)\b(gpumem_\w+) ?\((.*)\)", stmt)
        if m:
            ret, _ = parse_decl(m.group(1) + " _")
            params = []
            for i, p in enumerate(_split_params(m.group(3))):
                t, pname = parse_decl(p)
                params.append({"name": pname, "type": t})
            table["functions"].append({"name": m.group(2), "returns": ret, "params": params,
                                       "condition": cond})
            continue
        if stmt.startswith('extern "C"') or stmt in ("}",):
            continue
        raise HeaderError("cannot read this declaration of the header: %r" % stmt[:120])

    for name, s in table["structs"].items():
        _layout(table, name)
    return table


def resolve(table, t):
    """A type with its typedef'd base followed to what it names (pointers and arrays added up)."""
    t = dict(t)
    seen = set()
    while t["base"] in table["typedefs"] and t["base"] not in seen:
        seen.add(t["base"])
        inner = table["typedefs"][t["base"]]
        if inner["array"]:
            raise HeaderError("a typedef of an array (%s) is not read" % t["base"])
        t["pointers"] += inner["pointers"]
        t["base"] = inner["base"]
    return t


def array_length(table, t):
    if not t["array"]:
        return None
    n = _int_value(t["array"], table["constants"])
    if n is None:
        raise HeaderError("cannot read the array length [%s]" % t["array"])
    return n


def size_align(table, t, array=True):
    r = resolve(table, t)
    n = array_length(table, t) if array else None
    if r["pointers"]:
        size = align = POINTER_SIZE
    elif r["base"] in SCALARS:
        size = align = SCALARS[r["base"]][0]
    elif r["base"] in table["structs"]:
        s = _layout(table, r["base"])
        size, align = s["sizeof"], s["alignof"]
    else:
        raise HeaderError("unknown type %s" % r["base"])
    return (size * n if n is not None else size), align


def _layout(table, name):
    s = table["structs"][name]
    if "sizeof" in s:
        return s
    offset, max_align = 0, 1
    for f in s["fields"]:
        size, align = size_align(table, f["type"])
        offset = (offset + align - 1) // align * align
        f["offset"], f["size"] = offset, size
        offset += size
        max_align = max(max_align, align)
    s["sizeof"] = (offset + max_align - 1) // max_align * max_align
    s["alignof"] = max_align
    return s


def default_header():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "include", "gpumem", "gpumem.h")


# ----------------------------------------------------------------------------------------------
# The ctypes prototypes block (--python)
# ----------------------------------------------------------------------------------------------
# Typedefs and struct names as _lib.py spells them.
PY_TYPEDEFS = {"gpumem_status_t": "_S", "gpumem_stream_t": "stream_t", "gpumem_event_t": "event_t",
               "gpumem_pool_t": "pool_t", "gpumem_buffer_t": "buffer_t", "gpumem_mem_handle_t": "mem_handle_t",
               "gpumem_trace_fn": "TRACE_FN", "gpumem_host_fn_t": "HOST_FN"}
PY_SCALARS = {"i32": "_i32", "u32": "_u32", "u64": "_u64", "f32": "ctypes.c_float", "i64": "ctypes.c_int64"}
PY_EXACT = {"size_t": "_sz", "ssize_t": "ctypes.c_ssize_t", "int": "ctypes.c_int"}


def python_class(struct_name):
    """The ctypes.Structure class name for a struct: gpumem_device_info_t -> DeviceInfo."""
    parts = struct_name[len("gpumem_"):-len("_t")].split("_")
    return "".join(p[:1].upper() + p[1:] for p in parts).replace("3d", "3D")


def python_type(table, t):
    """The ctypes spelling _lib.py uses for a parameter or return type."""
    if t["pointers"] == 0:
        if t["base"] in PY_TYPEDEFS:
            return PY_TYPEDEFS[t["base"]]
        if t["base"] == "void":
            return "None"
        if t["base"] in PY_EXACT:
            return PY_EXACT[t["base"]]
        r = resolve(table, t)
        if r["base"] in SCALARS and r["pointers"] == 0:
            return PY_SCALARS[SCALARS[r["base"]][1]]
        raise HeaderError("no ctypes spelling for %s" % t["c"])
    inner = dict(t, pointers=t["pointers"] - 1)
    if t["pointers"] == 1 and t["base"] == "char":
        return "ctypes.c_char_p"
    if t["pointers"] == 1 and t["base"] == "void":
        return "_vp"
    if t["base"] in table["structs"] and t["pointers"] == 1:
        # Structs the package reads field by field get their class; a snapshot is read
        # through its JSON, so it travels as an opaque pointer.
        return "_vp" if t["base"].startswith("gpumem_snapshot") else "_P(%s)" % python_class(t["base"])
    if t["base"] in table["structs"]:
        return "_P(_vp)"
    if t["pointers"] >= 2 and t["base"] == "void" or t["pointers"] == 2 and t["base"] == "char":
        return "_P(%s)" % python_type(table, inner)
    return "_P(%s)" % python_type(table, inner)


def python_prototypes(table, cxx_only=()):
    lines = ["PROTOTYPES = [", "    # name, restype, argtypes"]
    for f in table["functions"]:
        if f["name"] in cxx_only:
            continue
        args = ", ".join(python_type(table, p["type"]) for p in f["params"])
        lines.append('    ("%s", %s, [%s]),' % (f["name"], python_type(table, f["returns"]), args))
    lines.append("]")
    return "\n".join(lines)


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    flags = [a for a in argv if a.startswith("--")]
    if len(args) > 1 or set(flags) - {"--json", "--python"}:
        sys.stderr.write(__doc__)
        return 2
    try:
        table = parse_header(args[0] if args else default_header())
    except (OSError, HeaderError) as e:
        sys.stderr.write("api_table.py: %s\n" % e)
        return 1
    if "--json" in flags:
        json.dump(table, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif "--python" in flags:
        print(python_prototypes(table, ("gpumem_pluggable_malloc_or_throw",)))
    else:
        for f in table["functions"]:
            print("function %s %s(%s)%s" % (f["returns"]["c"], f["name"],
                  ", ".join("%s %s" % (p["type"]["c"], p["name"]) for p in f["params"]),
                  "  [#if %s]" % f["condition"] if f["condition"] else ""))
        for name, s in table["structs"].items():
            print("struct %s size %d" % (name, s["sizeof"]))
            for fl in s["fields"]:
                print("  field %-28s %-28s offset %d" % (fl["name"], fl["type"]["c"] +
                      ("[%s]" % fl["type"]["array"] if fl["type"]["array"] else ""), fl["offset"]))
        for name, v in table["constants"].items():
            print("constant %s %d" % (name, v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
