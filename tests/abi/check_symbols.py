#!/usr/bin/env python3
"""Compare what libgpumem.so exports with src/gpumem.sym and the header's GPUMEM_API declarations.

usage: check_symbols.py NM LIBGPUMEM.so gpumem.sym gpumem.h

All three lists of names must agree, and the library must export nothing that is
not gpumem_* (version-node names such as GPUMEM_0 and GPUMEM_0.2 aside).  Exit 0 when they do.
SPDX-License-Identifier: MIT
"""
import re
import subprocess
import sys


def exported(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    names, nodes = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        name = name.split("@")[0]
        if kind == "A":  # version definitions (GPUMEM_0) are absolute symbols
            nodes.add(name)
            continue
        names.add(name)
    return names, nodes


def version_script(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"#.*", "", text)
    names, nodes = set(), set()
    for node in re.finditer(r"([\w.]+)\s*\{(.*?)\}\s*([\w.]*)\s*;", text, flags=re.S):
        nodes.add(node.group(1))
        body = node.group(2)
        m = re.search(r"global\s*:(.*?)(local\s*:|$)", body, flags=re.S)
        if m:
            for entry in m.group(1).split(";"):
                entry = entry.strip()
                if entry:
                    names.add(entry)
    return names, nodes


def header(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return set(re.findall(r"\bGPUMEM_API\b[^;{]*?\b(gpumem_\w+)\s*\(", text, flags=re.S))


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    nm, lib, sym, hdr = sys.argv[1:]
    so, so_nodes = exported(nm, lib)
    script, script_nodes = version_script(sym)
    decl = header(hdr)
    ok = True

    def diff(a_name, a, b_name, b):
        nonlocal ok
        for name in sorted(a - b):
            print(f"{name}: in {a_name} but not in {b_name}")
            ok = False

    diff("the library", so, "gpumem.sym", script)
    diff("gpumem.sym", script, "the library", so)
    diff("gpumem.h", decl, "gpumem.sym", script)
    diff("gpumem.sym", script, "gpumem.h", decl)
    for name in sorted(so):
        if not name.startswith("gpumem_"):
            print(f"{name}: exported but not a gpumem_ name")
            ok = False
    for node in sorted(so_nodes - script_nodes):
        print(f"{node}: a version node of the library that gpumem.sym does not define")
        ok = False
    if not decl:
        print("no GPUMEM_API declarations found in the header")
        ok = False
    print(f"{len(so)} exported, {len(script)} in gpumem.sym, {len(decl)} declared: {'agree' if ok else 'DISAGREE'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
