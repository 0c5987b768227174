#!/usr/bin/env python3
"""The Fortran module covers the whole C header.

Usage: check_interfaces.py INCLUDE_DIR gpumem.f90
  INCLUDE_DIR holds gpumem.h and gpumem_version.h.
Checks, failing with a list of every difference:
  - each GPUMEM_API function has a bind(C, name="...") interface of the same
    name, with as many arguments, and the module binds nothing else;
  - each #define GPUMEM_* constant is a parameter of the same name and value
    (GPUMEM_VERSION is GPUMEM_VERSION_NUMBER; GPUMEM_*_INIT are functions
    gpumem_*_init);
  - each typedef'd struct is a bind(C) type with the same fields in order;
  - no two module names differ only in case (Fortran would not tell them apart).
Python 3 standard library only.
SPDX-License-Identifier: MIT
"""
import os
import re
import sys

RENAMED = {'GPUMEM_VERSION': 'GPUMEM_VERSION_NUMBER'}
NOT_CONSTANTS = {'GPUMEM_API'}
# Functions that throw C++ exceptions (for C++ hosts such as PyTorch): Fortran cannot unwind
# them, so the module does not bind them.
CXX_ONLY = {'gpumem_pluggable_malloc_or_throw'}


def strip_c_comments(text):
    return re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)


def c_params(params):
    params = params.strip()
    if params in ('', 'void'):
        return 0
    return params.count(',') + 1


def parse_header(include_dir):
    text = ''
    for name in ('gpumem_version.h', 'gpumem.h'):
        with open(os.path.join(include_dir, 'gpumem', name) if os.path.isdir(
                os.path.join(include_dir, 'gpumem')) else os.path.join(include_dir, name)) as f:
            text += f.read() + '\n'
    code = strip_c_comments(text)
    functions = {}
    for m in re.finditer(r'^\s*GPUMEM_API\s+[^;(]*?\b(gpumem_\w+)\s*\(([^)]*)\)\s*;', code, flags=re.M):
        if m.group(1) not in CXX_ONLY:
            functions[m.group(1)] = c_params(m.group(2))
    constants, inits = {}, set()
    for m in re.finditer(r'^\s*#\s*define\s+(GPUMEM_\w+)[ \t]+(.+)$', code, flags=re.M):
        name, value = m.group(1), m.group(2).strip()
        if name in NOT_CONSTANTS:
            continue
        if name.endswith('_INIT'):
            inits.add(name.lower())
            continue
        lit = re.fullmatch(r'\(?\s*(-?\s*(?:0[xX][0-9a-fA-F]+|\d+))\s*\)?', value)
        constants[name] = int(lit.group(1).replace(' ', ''), 0) if lit else None
    structs = {}
    for m in re.finditer(r'typedef\s+struct\s+\w+\s*\{(.*?)\}\s*(gpumem_\w+_t)\s*;', code, flags=re.S):
        fields = []
        for decl in m.group(1).split(';'):
            decl = decl.strip()
            if decl:
                fields.append(re.search(r'(\w+)\s*(\[[^\]]*\])?\s*$', decl).group(1))
        structs[m.group(2)] = fields
    return functions, constants, inits, structs


def parse_module(path):
    with open(path) as f:
        text = f.read()
    text = re.sub(r'!.*$', '', text, flags=re.M)          # comments (no '!' in strings here)
    text = re.sub(r'&[ \t]*\n[ \t]*&?', ' ', text)           # continuation lines
    binds = {}
    for m in re.finditer(r'^\s*(?:[\w(), ]*?\s)?(function|subroutine)\s+(\w+)\s*\(([^)]*)\)\s*'
                         r'bind\s*\(\s*C\s*,\s*name\s*=\s*"(\w+)"\s*\)', text, flags=re.M | re.I):
        args = [a for a in m.group(3).split(',') if a.strip()]
        binds[m.group(4)] = (m.group(2), len(args))
    params = {}
    for m in re.finditer(r'parameter\s*::\s*(\w+)\s*=\s*([^\n]+)', text, flags=re.I):
        value = m.group(2).strip()
        params[m.group(1)] = int(value) if re.fullmatch(r'-?\d+', value) else None
    types = {}
    for m in re.finditer(r'type\s*,\s*bind\s*\(\s*C\s*\)\s*::\s*(\w+)(.*?)end\s+type', text, flags=re.S | re.I):
        types[m.group(1)] = re.findall(r'::\s*(\w+)', m.group(2))
    procedures = set(n.lower() for n in re.findall(r'^\s*(?:[\w(), ]*?\s)?(?:function|subroutine)\s+(\w+)',
                                                     text, flags=re.M | re.I))
    generics = re.findall(r'^\s*interface\s+(\w+)', text, flags=re.M | re.I)
    return binds, params, types, procedures, generics


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    functions, constants, inits, structs = parse_header(sys.argv[1])
    binds, params, types, procedures, generics = parse_module(sys.argv[2])
    problems = []

    for name, nargs in sorted(functions.items()):
        if name not in binds:
            problems.append('missing function: %s' % name)
            continue
        fname, fargs = binds[name]
        if fname.lower() != name:
            problems.append('%s is bound under the Fortran name %s' % (name, fname))
        if fargs != nargs:
            problems.append('%s takes %d arguments in C, %d in Fortran' % (name, nargs, fargs))
    for name in sorted(set(binds) - set(functions)):
        if name != 'strlen':
            problems.append('bound but not in the header: %s' % name)

    for name, value in sorted(constants.items()):
        fname = RENAMED.get(name, name)
        if fname not in params:
            problems.append('missing constant: %s' % fname)
        elif value is not None and params[fname] != value:
            problems.append('%s is %s in Fortran, %d in C' % (fname, params[fname], value))
    for name in sorted(inits):
        if name not in procedures:
            problems.append('missing initialiser function: %s()' % name)

    for name, fields in sorted(structs.items()):
        if name not in types:
            problems.append('missing bind(C) type: %s' % name)
        elif [f.lower() for f in types[name]] != fields:
            problems.append('%s fields differ:\n    C:       %s\n    Fortran: %s'
                            % (name, ' '.join(fields), ' '.join(types[name])))

    seen = {}
    for name in list(params) + list(types) + sorted(procedures) + generics:
        seen.setdefault(name.lower(), []).append(name)
    for names in seen.values():
        if len(names) > 1:
            problems.append('names differ only in case: %s' % ', '.join(names))

    if problems:
        print('The Fortran module does not match the header:')
        for p in problems:
            print('  ' + p)
        return 1
    print('Fortran module matches the header: %d functions, %d constants, %d structs, %d initialisers'
          % (len(functions), len(constants), len(structs), len(inits)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
