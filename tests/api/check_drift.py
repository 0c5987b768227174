#!/usr/bin/env python3
"""The bindings and ABI tests against the header, the one description of the public API.

usage: check_drift.py SOURCE_ROOT [--only python,fortran,sym,layout]

Reads include/gpumem/gpumem.h into a table (tools/api/api_table.py) and compares with it:
  python   bindings/python/gpumem/_lib.py, read without loading libgpumem: PROTOTYPES
           (each function once; restype and argtypes of the header's widths, a c_void_p
           standing for any pointer), TRACE_FN and HOST_FN, each struct's ctypes.Structure
           (field names, order, types, offsets and size) and each constant's value;
  fortran  bindings/fortran/gpumem.f90: each function's bind(C) interface (name, argument
           count, each argument's kind and whether it is passed by value, the result), each
           struct's bind(C) type (fields in order, kinds, array lengths), each constant as a
           parameter of the same value, each GPUMEM_*_INIT as gpumem_*_init(), and no two
           names that differ only in case;
  sym      src/gpumem.sym: each function exported exactly once, under some version node, and
           nothing else;
  layout   tests/abi/layout.c: SIZE of each struct, OFF of each of its fields and VAL of each
           constant, each with the number the header gives on x86-64.
Functions a binding leaves out on purpose are listed in tests/api/unbound.txt with the reason.
Every difference is printed (binding, name, what the header says, what the binding says) and
the exit status is 1; 0 when none.
Python 3 standard library only.
SPDX-License-Identifier: MIT
"""
import ast
import ctypes
import os
import re
import sys

BINDINGS = ("python", "fortran", "sym", "layout")


class Drift:
    def __init__(self):
        self.items = []

    def __call__(self, where, what, header, binding):
        self.items.append("%s: %s: the header has %s, %s" % (where, what, header, binding))


# ------------------------------------------------------------------------------------------------
# The allow-list
# ------------------------------------------------------------------------------------------------
def read_unbound(path):
    """{(binding, function): reason} from lines 'binding function reason'."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[0] not in BINDINGS:
                raise SystemExit("%s:%d: want 'BINDING FUNCTION REASON' (BINDING one of %s)"
                                 % (path, n, ", ".join(BINDINGS)))
            out[(parts[0], parts[1])] = parts[2]
    return out


def check_unbound(table, unbound, bound, drift):
    """Stale entries: a function no longer in the header, or bound after all."""
    names = {f["name"] for f in table["functions"]}
    for (binding, name), reason in sorted(unbound.items()):
        if name not in names:
            drift("unbound.txt", name, "no such function", "the allow-list names it for %s" % binding)
        elif name in bound.get(binding, ()):
            drift("unbound.txt", name, "it", "%s binds it and the allow-list says it does not "
                  "(remove the line)" % binding)


# ------------------------------------------------------------------------------------------------
# Types the header's way: '*' per pointer, then the base ('i32', 'struct gpumem_x_t', 'fn name')
# ------------------------------------------------------------------------------------------------
def field_names_drift(where, cname, want, have, drift, fold=str):
    """Reports where the binding's field names differ from the header's; True when they do."""
    if [fold(w) for w in want] == [fold(h) for h in have]:
        return False
    for i in range(max(len(want), len(have))):
        w = want[i] if i < len(want) else None
        h = have[i] if i < len(have) else None
        if w is None:
            drift(where, "%s field %d" % (cname, i + 1), "no such field", "the binding has %s" % h)
        elif h is None:
            drift(where, "%s field %d" % (cname, i + 1), w, "the binding ends before it")
        elif fold(w) != fold(h):
            drift(where, "%s field %d" % (cname, i + 1), w, "the binding has %s" % h)
    return True


def c_spelling(table, api, t):
    n = api.array_length(table, t)
    return t["c"] + ("[%d]" % n if n is not None else "")


def header_canon(api, table, t):
    r = api.resolve(table, t)
    n = api.array_length(table, t)
    if r["base"] in api.SCALARS:
        base = api.SCALARS[r["base"]][1]
    elif r["base"] in table["callbacks"]:
        base = "fn " + r["base"]
    else:
        base = "struct " + r["base"]
    s = "*" * r["pointers"] + base
    return s + ("[%d]" % n if n is not None else "")


# ------------------------------------------------------------------------------------------------
# Python
# ------------------------------------------------------------------------------------------------
def load_python_declarations(path):
    """_lib.py's declarations (everything up to and including PROTOTYPES), run without the part
    that loads libgpumem, so the check needs no built library."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    body = []
    for node in tree.body:
        body.append(node)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PROTOTYPES" for t in node.targets):
            break
    else:
        raise SystemExit("%s: no PROTOTYPES list" % path)
    ns = {"__name__": "gpumem._lib_declarations"}
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), ns)
    return ns


def ctypes_canon(ctype, struct_names, callbacks):
    if ctype is None:
        return "void"
    for name, cb in callbacks.items():
        if ctype is cb:
            return "fn " + name
    if isinstance(ctype, type) and issubclass(ctype, ctypes.Array):
        return "%s[%d]" % (ctypes_canon(ctype._type_, struct_names, callbacks), ctype._length_)
    if isinstance(ctype, type) and issubclass(ctype, ctypes.Structure):
        return "struct " + struct_names.get(ctype, "?" + ctype.__name__)
    if isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer):
        return "*" + ctypes_canon(ctype._type_, struct_names, callbacks)
    code = getattr(ctype, "_type_", None)
    if code == "P":
        return "*void"
    if code == "z":
        return "*char"
    if code == "c":
        return "char"
    if code in ("f", "d"):
        return "f%d" % (8 * ctypes.sizeof(ctype))
    if isinstance(code, str) and code in "bhilqBHILQ?":
        return "%s%d" % ("u" if code.isupper() else "i", 8 * ctypes.sizeof(ctype))
    return "?" + getattr(ctype, "__name__", repr(ctype))


def types_match(header, binding):
    """A c_void_p (canon '*void') stands for any pointer at any depth: same width, opaque."""
    if header == binding:
        return True
    if header.startswith("*") and binding.startswith("*"):
        return binding == "*void" or types_match(header[1:], binding[1:])
    return False


def check_python(api, table, root, unbound, drift, bound):
    path = os.path.join(root, "bindings", "python", "gpumem", "_lib.py")
    where = "python (_lib.py)"
    ns = load_python_declarations(path)
    classes = {}
    for cname in table["structs"]:
        cls = ns.get(api.python_class(cname))
        if isinstance(cls, type) and issubclass(cls, ctypes.Structure):
            classes[cname] = cls
        else:
            drift(where, cname, "this struct", "no ctypes.Structure %s" % api.python_class(cname))
    struct_names = {cls: cname for cname, cls in classes.items()}
    callbacks = {}
    for cname in table["callbacks"]:
        pyname = api.PY_TYPEDEFS.get(cname)
        if pyname is None or pyname not in ns:
            drift(where, cname, "this callback type", "no CFUNCTYPE %s" % (pyname or "for it"))
        else:
            callbacks[cname] = ns[pyname]

    def canon(ctype):
        return ctypes_canon(ctype, struct_names, callbacks)

    # Structs: fields, their types, offsets and size.
    for cname, cls in classes.items():
        s = table["structs"][cname]
        want = [f["name"] for f in s["fields"]]
        have = [f[0] for f in cls._fields_]
        moved = field_names_drift(where, "%s (%s)" % (cname, cls.__name__), want, have, drift)
        for f, (fname, ftype) in zip(s["fields"], cls._fields_):
            if f["name"] != fname:
                continue
            h, b = header_canon(api, table, f["type"]), canon(ftype)
            if not types_match(h, b):
                drift(where, "%s.%s" % (cname, fname), "%s (%s)" % (c_spelling(table, api, f["type"]), h),
                      "the binding has %s" % b)
            elif not moved and getattr(cls, fname).offset != f["offset"]:
                drift(where, "offsetof(%s, %s)" % (cname, fname), f["offset"],
                      "the binding has %d" % getattr(cls, fname).offset)
        if not moved and ctypes.sizeof(cls) != s["sizeof"]:
            drift(where, "sizeof(%s)" % cname, s["sizeof"], "the binding has %d" % ctypes.sizeof(cls))

    # Callbacks.
    for cname, cb in callbacks.items():
        cbt = table["callbacks"][cname]
        want = [header_canon(api, table, cbt["returns"])] + [header_canon(api, table, p["type"]) for p in cbt["params"]]
        have = [canon(cb._restype_)] + [canon(a) for a in cb._argtypes_]
        if len(want) != len(have) or not all(types_match(h, b) for h, b in zip(want, have)):
            drift(where, cname, "(%s) -> %s" % (", ".join(want[1:]), want[0]),
                  "the binding has (%s) -> %s" % (", ".join(have[1:]), have[0]))

    # Functions.
    protos = {}
    for entry in ns["PROTOTYPES"]:
        if entry[0] in protos:
            drift(where, entry[0], "one declaration", "PROTOTYPES lists it twice")
        protos[entry[0]] = entry
    bound["python"] = set(protos)
    header_names = {f["name"] for f in table["functions"]}
    for name in sorted(set(protos) - header_names):
        drift(where, name, "no such function", "PROTOTYPES declares it")
    for f in table["functions"]:
        name = f["name"]
        if name not in protos:
            if ("python", name) not in unbound:
                drift(where, name, "this function", "PROTOTYPES lacks it (bind it, or list it in unbound.txt)")
            continue
        _, restype, argtypes = protos[name]
        h, b = header_canon(api, table, f["returns"]), canon(restype)
        if not types_match(h, b):
            drift(where, name + " return", "%s (%s)" % (f["returns"]["c"], h), "restype is %s" % b)
        if len(argtypes) != len(f["params"]):
            drift(where, name, "%d parameters" % len(f["params"]), "argtypes has %d" % len(argtypes))
            continue
        for i, (p, a) in enumerate(zip(f["params"], argtypes)):
            h, b = header_canon(api, table, p["type"]), canon(a)
            if not types_match(h, b):
                drift(where, "%s parameter %d (%s)" % (name, i + 1, p["name"]), "%s (%s)" % (p["type"]["c"], h),
                      "argtypes has %s" % b)

    # Constants (the binding drops the GPUMEM_ prefix; the version is the library's to say).
    for cname, value in table["constants"].items():
        if cname.startswith("GPUMEM_VERSION"):
            continue
        pyname = cname[len("GPUMEM_"):]
        if pyname not in ns:
            drift(where, cname, "= %d" % value, "no constant %s" % pyname)
        elif ns[pyname] != value:
            drift(where, cname, "= %d" % value, "%s = %r" % (pyname, ns[pyname]))


# ------------------------------------------------------------------------------------------------
# Fortran
# ------------------------------------------------------------------------------------------------
FORTRAN_KINDS = {  # kind -> (what, bytes)
    "c_int8_t": ("int", 1), "c_signed_char": ("int", 1), "c_char": ("int", 1),
    "c_int16_t": ("int", 2), "c_short": ("int", 2),
    "c_int32_t": ("int", 4), "c_int": ("int", 4),
    "c_int64_t": ("int", 8), "c_long": ("int", 8), "c_long_long": ("int", 8), "c_size_t": ("int", 8),
    "c_intptr_t": ("int", 8), "c_ptrdiff_t": ("int", 8),
    "c_float": ("real", 4), "c_double": ("real", 8),
    "c_ptr": ("ptr", 8), "c_funptr": ("fn", 8),
}


def fortran_code(path):
    """The module's text without comments, continuation lines joined."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out, quote = [], None
            for ch in line.rstrip("\n"):
                if quote:
                    quote = None if ch == quote else quote
                elif ch in "'\"":
                    quote = ch
                elif ch == "!":
                    break
                out.append(ch)
            lines.append("".join(out))
    return re.sub(r"&[ \t]*\n[ \t]*&?", " ", "\n".join(lines))


def fortran_decl(line):
    """'integer(c_int32_t), value :: a, b(*)' -> [(name, kind, attrs, dims)] ([] when not a declaration)."""
    m = re.match(r"\s*(integer|real|character|type|logical)\s*(\(([^)]*)\))?\s*((?:,[^:]*)?)::(.*)$", line, re.I)
    if not m:
        return []
    what, spec, attrs = m.group(1).lower(), (m.group(3) or "").strip().lower(), m.group(4).lower()
    kind = spec.split("=", 1)[1].strip() if "=" in spec else spec
    if what == "character" and not kind:
        kind = "character"
    attrs = {a.strip().split("(")[0] for a in attrs.split(",") if a.strip()}
    out = []
    names = m.group(5).split("=")[0] if "parameter" not in attrs else m.group(5)
    for nm in re.finditer(r"(\w+)\s*(\(([^)]*)\))?", names):
        out.append((nm.group(1), kind, attrs, nm.group(3)))
        if "parameter" in attrs:
            break
    return out


def fortran_dims(dims, params):
    """Elements of an explicit-shape array: '256' -> 256, '0:GPUMEM_KIND_COUNT - 1' -> 8."""
    if dims is None:
        return None
    if dims.strip() == "*":
        return "*"
    def value(expr):
        expr = re.sub(r"\b([A-Za-z_]\w*)\b", lambda m: str(params.get(m.group(1).upper(), m.group(0))), expr)
        if not re.fullmatch(r"[\s\d()+\-*]+", expr):
            return None
        return eval(expr, {"__builtins__": {}})  # digits and + - * ( ) only
    lo, _, hi = dims.rpartition(":")
    lo_v, hi_v = (value(lo) if lo else 1), value(hi)
    return None if lo_v is None or hi_v is None else hi_v - lo_v + 1


def parse_fortran(path):
    text = fortran_code(path)
    params, types, binds = {}, {}, {}
    for line in text.split("\n"):
        for name, kind, attrs, _ in fortran_decl(line):
            if "parameter" in attrs:
                m = re.search(r"::\s*\w+\s*=\s*(.+)$", line)
                value = m.group(1).strip() if m else ""
                params[name.upper()] = (name, int(value) if re.fullmatch(r"-?\d+", value) else value)
    numeric = {k: v[1] for k, v in params.items() if isinstance(v[1], int)}
    for m in re.finditer(r"^\s*type\s*,\s*bind\s*\(\s*c\s*\)\s*::\s*(\w+)(.*?)^\s*end\s+type", text, re.S | re.M | re.I):
        fields = []
        for line in m.group(2).split("\n"):
            for name, kind, attrs, dims in fortran_decl(line):
                fields.append((name, kind, fortran_dims(dims, numeric)))
        types[m.group(1).lower()] = (m.group(1), fields)
    for m in re.finditer(r"^\s*(?:[\w(), ]*?\s)?(function|subroutine)\s+(\w+)\s*\(([^)]*)\)\s*"
                         r"(?:result\s*\(\s*(\w+)\s*\)\s*)?bind\s*\(\s*c\s*,\s*name\s*=\s*\"(\w+)\"\s*\)"
                         r"(.*?)^\s*end\s+(?:function|subroutine)", text, re.S | re.M | re.I):
        kindof, fname, result = m.group(1).lower(), m.group(2), (m.group(4) or m.group(2)).lower()
        args = [a.strip().lower() for a in m.group(3).split(",") if a.strip()]
        decls = {}
        for line in m.group(6).split("\n"):
            for name, kind, attrs, dims in fortran_decl(line):
                decls[name.lower()] = (kind, attrs, dims)
        binds.setdefault(m.group(5), []).append({
            "fortran_name": fname, "subroutine": kindof == "subroutine", "args": args, "decls": decls,
            "result": decls.get(result) if kindof == "function" else None})
    procedures = {n.lower() for n in re.findall(r"^\s*(?:[\w(), ]*?\s)?(?:function|subroutine)\s+(\w+)",
                                                 text, re.M | re.I)}
    generics = re.findall(r"^\s*interface\s+(\w+)", text, re.M | re.I)
    return params, types, binds, procedures, generics


def fortran_want(api, table, t):
    """What a C object of type t is in Fortran: ('int', 4), ('ptr', 8), ('struct', name), ('fn', 8)."""
    r = api.resolve(table, t)
    if r["pointers"]:
        return ("ptr", 8)
    if r["base"] in table["callbacks"]:
        return ("fn", 8)
    if r["base"] in table["structs"]:
        return ("struct", r["base"])
    size, code = api.SCALARS[r["base"]]
    return ("real" if code.startswith("f") else "int", size)


def fortran_have(kind):
    if kind.lower() in FORTRAN_KINDS:
        return FORTRAN_KINDS[kind.lower()]
    return ("struct", kind.lower())


def fortran_arg_ok(api, table, t, decl):
    """Whether the Fortran dummy (kind, attrs, dims) passes what the C parameter of type t takes."""
    kind, attrs, dims = decl
    have = fortran_have(kind)
    r = api.resolve(table, t)
    if "value" in attrs:
        return dims is None and have == fortran_want(api, table, t)
    if r["pointers"] == 0:
        return False  # C takes it by value
    # By reference: the dummy is what the pointer points at (one object or an array of them).
    pointee = dict(r, pointers=r["pointers"] - 1, array=None)
    want = fortran_want(api, table, pointee)
    if want == ("struct", "void"):
        return False
    if want[0] == "int" and want[1] == 1:
        return have[1] == 1 and have[0] == "int"
    return have == want


def fortran_spelling(decl):
    kind, attrs, dims = decl
    return "%s%s%s" % (kind, ", value" if "value" in attrs else " by reference",
                       "(%s)" % dims if dims else "")


def check_fortran(api, table, root, unbound, drift, bound):
    path = os.path.join(root, "bindings", "fortran", "gpumem.f90")
    where = "fortran (gpumem.f90)"
    params, types, binds, procedures, generics = parse_fortran(path)
    bound["fortran"] = set(binds)
    header_names = {f["name"] for f in table["functions"]}
    for name in sorted(binds):
        if name.startswith("gpumem_") and name not in header_names:
            drift(where, name, "no such function", "the module binds it")
        if len(binds[name]) > 1:
            drift(where, name, "one function", "the module binds it %d times" % len(binds[name]))
    for f in table["functions"]:
        name = f["name"]
        if name not in binds:
            if ("fortran", name) not in unbound:
                drift(where, name, "this function", "no bind(C) interface (bind it, or list it in unbound.txt)")
            continue
        b = binds[name][0]
        if b["fortran_name"].lower() != name:
            drift(where, name, "this name", "bound as %s" % b["fortran_name"])
        if len(b["args"]) != len(f["params"]):
            drift(where, name, "%d parameters" % len(f["params"]), "the interface has %d" % len(b["args"]))
            continue
        for i, (p, a) in enumerate(zip(f["params"], b["args"])):
            decl = b["decls"].get(a)
            if decl is None:
                drift(where, "%s argument %s" % (name, a), "a declaration", "none")
            elif not fortran_arg_ok(api, table, p["type"], decl):
                drift(where, "%s parameter %d (%s)" % (name, i + 1, p["name"]), p["type"]["c"],
                      "the interface has %s" % fortran_spelling(decl))
        ret = api.resolve(table, f["returns"])
        if ret["base"] == "void" and not ret["pointers"]:
            if not b["subroutine"]:
                drift(where, name, "a void function", "the interface is a function")
        elif b["subroutine"] or b["result"] is None:
            drift(where, name + " result", f["returns"]["c"], "the interface returns nothing")
        elif fortran_have(b["result"][0]) != fortran_want(api, table, f["returns"]):
            drift(where, name + " result", f["returns"]["c"], "the interface returns %s" % b["result"][0])

    for cname, s in table["structs"].items():
        if cname.lower() not in types:
            drift(where, cname, "this struct", "no bind(C) type")
            continue
        _, fields = types[cname.lower()]
        want = [f["name"] for f in s["fields"]]
        have = [f[0] for f in fields]
        field_names_drift(where, cname, want, have, drift, fold=str.lower)
        for f, (fname, kind, n) in zip(s["fields"], fields):
            if f["name"].lower() != fname.lower():
                continue
            c_n = api.array_length(table, f["type"])
            w, h = fortran_want(api, table, dict(f["type"], array=None)), fortran_have(kind)
            ok = h == w or (w[0] == "int" and w[1] == 1 and h[1] == 1 and h[0] == "int")
            if not ok or c_n != n:
                drift(where, "%s%%%s" % (cname, fname), f["type"]["c"] + ("[%d]" % c_n if c_n else ""),
                      "the type has %s%s" % (kind, "(%s)" % n if n else ""))

    renamed = {"GPUMEM_VERSION": "GPUMEM_VERSION_NUMBER"}  # Fortran names ignore case: gpumem_version()
    for cname, value in table["constants"].items():
        fname = renamed.get(cname, cname)
        if fname not in params:
            drift(where, cname, "= %d" % value, "no parameter %s" % fname)
        elif isinstance(params[fname][1], int) and params[fname][1] != value:
            drift(where, cname, "= %d" % value, "%s = %d" % (fname, params[fname][1]))
    for init in table["initialisers"]:
        if init.lower() not in procedures:
            drift(where, init, "this initialiser", "no function %s()" % init.lower())

    seen = {}
    for name in [p[0] for p in params.values()] + [t[0] for t in types.values()] + sorted(procedures) + generics:
        seen.setdefault(name.lower(), set()).add(name)
    for names in seen.values():
        if len(names) > 1:
            drift(where, "/".join(sorted(names)), "names C tells apart", "Fortran, which ignores case, cannot")


# ------------------------------------------------------------------------------------------------
# The version script and the layout test
# ------------------------------------------------------------------------------------------------
def check_sym(table, root, drift, bound):
    path = os.path.join(root, "src", "gpumem.sym")
    where = "sym (src/gpumem.sym)"
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"#[^\n]*", "", re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S))
    where_listed = {}
    for node in re.finditer(r"([\w.]+)\s*\{(.*?)\}\s*[\w.]*\s*;", text, re.S):
        m = re.search(r"global\s*:(.*?)(?:local\s*:|$)", node.group(2), re.S)
        for entry in (m.group(1).split(";") if m else []):
            if entry.strip():
                where_listed.setdefault(entry.strip(), []).append(node.group(1))
    bound["sym"] = set(where_listed)
    header_names = {f["name"] for f in table["functions"]}
    for f in table["functions"]:
        nodes = where_listed.get(f["name"], [])
        if not nodes:
            drift(where, f["name"], "this function", "no version node exports it")
        elif len(nodes) > 1:
            drift(where, f["name"], "one export", "it is listed %d times (%s)" % (len(nodes), ", ".join(nodes)))
    for name in sorted(set(where_listed) - header_names):
        drift(where, name, "no such function", "it is exported under %s" % ", ".join(where_listed[name]))


def check_layout(table, root, drift):
    path = os.path.join(root, "tests", "abi", "layout.c")
    where = "layout (tests/abi/layout.c)"
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    sizes = {m.group(1): int(m.group(2)) for m in re.finditer(r"\bSIZE\((\w+),\s*(\d+)\)", text)}
    offs = {(m.group(1), m.group(2)): int(m.group(3)) for m in re.finditer(r"\bOFF\((\w+),\s*(\w+),\s*(\d+)\)", text)}
    vals = {m.group(1): int(m.group(2), 0) for m in re.finditer(r"\bVAL\((\w+),\s*\(?(-?\s*(?:0x[0-9a-fA-F]+|\d+))\)?\)", text)}
    for cname, s in table["structs"].items():
        if cname not in sizes:
            drift(where, "sizeof(%s)" % cname, s["sizeof"], "no SIZE check")
        elif sizes[cname] != s["sizeof"]:
            drift(where, "sizeof(%s)" % cname, s["sizeof"], "SIZE expects %d" % sizes[cname])
        for f in s["fields"]:
            key = (cname, f["name"])
            if key not in offs:
                drift(where, "offsetof(%s, %s)" % key, f["offset"], "no OFF check")
            elif offs[key] != f["offset"]:
                drift(where, "offsetof(%s, %s)" % key, f["offset"], "OFF expects %d" % offs[key])
    fields = {(c, f["name"]) for c, s in table["structs"].items() for f in s["fields"]}
    for key in sorted(set(offs) - fields):
        drift(where, "offsetof(%s, %s)" % key, "no such field", "OFF checks it")
    scalars = set(table["typedefs"])
    for name in sorted(set(sizes) - set(table["structs"]) - scalars):
        drift(where, "sizeof(%s)" % name, "no such type", "SIZE checks it")
    for cname, value in table["constants"].items():
        if cname.startswith("GPUMEM_VERSION"):
            continue  # the version is tests/abi/check_versions.py's
        if cname not in vals:
            drift(where, cname, "= %d" % value, "no VAL check")
        elif vals[cname] != value:
            drift(where, cname, "= %d" % value, "VAL expects %d" % vals[cname])
    for name in sorted(set(vals) - set(table["constants"])):
        drift(where, name, "no such constant", "VAL checks it")


def main(argv):
    if not argv or len(argv) > 3 or (len(argv) > 1 and argv[1] != "--only"):
        sys.stderr.write(__doc__)
        return 2
    root = os.path.abspath(argv[0])
    only = argv[2].split(",") if len(argv) == 3 else list(BINDINGS)
    sys.path.insert(0, os.path.join(root, "tools", "api"))
    import api_table as api
    try:
        table = api.parse_header(os.path.join(root, "include", "gpumem", "gpumem.h"))
    except api.HeaderError as e:
        print("check_drift.py: the header cannot be read: %s" % e)
        return 1
    unbound = read_unbound(os.path.join(root, "tests", "api", "unbound.txt"))
    drift, bound = Drift(), {}
    if "python" in only:
        check_python(api, table, root, unbound, drift, bound)
    if "fortran" in only:
        check_fortran(api, table, root, unbound, drift, bound)
    if "sym" in only:
        check_sym(table, root, drift, bound)
    if "layout" in only:
        check_layout(table, root, drift)
    check_unbound(table, {k: v for k, v in unbound.items() if k[0] in only}, bound, drift)
    if drift.items:
        print("The bindings drifted from include/gpumem/gpumem.h (%d differences):" % len(drift.items))
        for item in drift.items:
            print("  " + item)
        return 1
    print("No drift: %d functions, %d structs, %d constants checked against %s"
          % (len(table["functions"]), len(table["structs"]), len(table["constants"]), ", ".join(only)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
