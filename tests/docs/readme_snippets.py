#!/usr/bin/env python3
"""Build and run the code blocks of README.md against the build tree (suite 'docs').

Which blocks run (the convention is written down in docs/snippets.md):
  ```c, ```fortran, ```python   run, unless marked otherwise
  ```sh                          runs only when marked <!-- snippet: run -->
  <!-- snippet: skip REASON -->  on the line before a fence: never run (REASON is printed)
  <!-- snippet: c-body -->       a C fragment: compiled and run as the body of main(),
                                 after #include <gpumem/gpumem.h>, <stdint.h>, <stdio.h>
                                 and the README's CHECK macro
  <!-- snippet: needs cuda -->   run only where gpumem's AUTO backend is CUDA (or HIP for "hip")
A Python block whose imports (numpy, cupy, torch...) are not installed is skipped, with the reason.
Every block is run on GPUMEM_BACKEND=host unless it needs a GPU.  Any failure fails the test;
exit 77 (skipped) only when no block could run at all.

usage: readme_snippets.py README BUILD_ROOT SOURCE_ROOT LIBGPUMEM [LIBGPUMEM_FORTRAN] -- CC... [-- FC...]
"""
import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

CHECK_MACRO = r'''
#define CHECK(call)                                                              \
    do {                                                                         \
        gpumem_status_t st = (call);                                             \
        if (st != GPUMEM_SUCCESS) {                                              \
            fprintf(stderr, "%s: %s: %s\n", #call, gpumem_status_string(st),     \
                    gpumem_last_error_message());                                \
            return 1;                                                            \
        }                                                                        \
    } while (0)
'''
RUN_BY_DEFAULT = {'c', 'fortran', 'python'}
SHELL = {'sh', 'bash', 'shell', 'console'}


def blocks(path):
    """(line, language, marker, text) for each fenced block."""
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = re.match(r'^```(\w*)\s*$', lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        marker = ''
        j = i - 1
        while j >= 0 and lines[j].strip() == '':
            j -= 1
        mm = re.match(r'^<!--\s*snippet:\s*(.*?)\s*-->$', lines[j].strip()) if j >= 0 else None
        if mm:
            marker = mm.group(1)
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith('```'):
            body.append(lines[i])
            i += 1
        i += 1
        yield start + 1, m.group(1).lower(), marker, '\n'.join(body) + '\n'


def run(cmd, env, cwd, timeout=120):
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout


def auto_backend(env, pyroot):
    """The backend AUTO picks here, asked through the Python package (no GPU: host)."""
    e = dict(env)
    e.pop('GPUMEM_BACKEND', None)
    rc, out = run([sys.executable, '-c', 'import gpumem; print(gpumem.backend())'], e, None)
    return out.strip().split('\n')[-1] if rc == 0 else 'host'


def main():
    argv = sys.argv[1:]
    sep = argv.index('--')
    readme, build_root, source_root, libgpumem = argv[:4]
    libfortran = argv[4] if sep > 4 else ''
    rest = argv[sep + 1:]
    if '--' in rest:
        k = rest.index('--')
        cc, fc = rest[:k], rest[k + 1:]
    else:
        cc, fc = rest, []
    libdir = os.path.dirname(libgpumem)
    pyroot = os.path.join(source_root, 'bindings', 'python')
    env = dict(os.environ)
    env.update({'GPUMEM_BACKEND': 'host', 'GPUMEM_LOG': 'error', 'GPUMEM_LIBRARY': libgpumem,
                'PYTHONPATH': pyroot, 'PYTHONDONTWRITEBYTECODE': '1',
                'PATH': os.path.join(build_root, 'tools') + os.pathsep + env.get('PATH', '')})
    backend = None
    valgrind = os.environ.get('GPUMEM_SNIPPET_VALGRIND', '')
    passed, failed, skipped = 0, 0, 0
    work = tempfile.mkdtemp(prefix='gpumem-readme-')
    try:
        for line, lang, marker, text in blocks(readme):
            where = '%s:%d (```%s)' % (os.path.basename(readme), line, lang)
            words = marker.split()
            kind = words[0] if words else ''
            if kind == 'skip':
                print('skip  %s: %s' % (where, ' '.join(words[1:]) or 'marked skip'))
                skipped += 1
                continue
            if lang in SHELL and kind != 'run':
                print('skip  %s: shell, not marked <!-- snippet: run -->' % where)
                skipped += 1
                continue
            if lang not in RUN_BY_DEFAULT | SHELL:
                print('skip  %s: language %s is not run' % (where, lang))
                skipped += 1
                continue
            if kind == 'needs':
                want = words[1] if len(words) > 1 else 'cuda'
                backend = backend or auto_backend(env, pyroot)
                if backend != want:
                    print('skip  %s: needs the %s backend (AUTO is %s here)' % (where, want, backend))
                    skipped += 1
                    continue
            e = dict(env)
            if kind == 'needs':
                e.pop('GPUMEM_BACKEND', None)
            d = os.path.join(work, 'line%d' % line)
            os.makedirs(d)
            if lang == 'c':
                src = text
                if kind == 'c-body':
                    src = ('#include <stdint.h>\n#include <stdio.h>\n#include <gpumem/gpumem.h>\n' +
                           CHECK_MACRO + 'int main(void)\n{\n' + text + '    return gpumem_finalize();\n}\n')
                open(os.path.join(d, 'snippet.c'), 'w').write(src)
                rc, out = run(cc + ['-std=c11', '-Wall', '-Werror', '-I', os.path.join(source_root, 'include'),
                                    'snippet.c', '-o', 'snippet', libgpumem, '-Wl,-rpath,' + libdir], e, d)
                if rc == 0:
                    rc, out2 = run(['./snippet'], e, d)
                    out += out2
                # Under valgrind too where the build found it: a C example a user runs under memcheck
                # must come out clean (no read of uninitialised bytes, no invalid access).
                if rc == 0 and valgrind:
                    rc, out2 = run([valgrind, '-q', '--error-exitcode=99', './snippet'], e, d, timeout=300)
                    out += out2
            elif lang == 'fortran':
                if not fc or not libfortran:
                    print('skip  %s: no Fortran compiler or module in this build' % where)
                    skipped += 1
                    continue
                open(os.path.join(d, 'snippet.f90'), 'w').write(text)
                moddir = libfortran + '.p'
                if not os.path.exists(os.path.join(moddir, 'gpumem.mod')):
                    # gpumem.mod is a side output meson does not track, and later
                    # steps (install, regeneration) may remove it: make the module
                    # interface here, from the same source.
                    moddir = os.path.join(work, 'mod')
                    os.makedirs(moddir, exist_ok=True)
                    source = os.path.join(source_root, 'bindings', 'fortran', 'gpumem.f90')
                    rc, out = run(fc + ['-c', '-J', moddir, source, '-o', os.path.join(moddir, 'gpumem.o')], e, d)
                    if rc != 0:
                        print('FAIL  %s: cannot build the gpumem module:\n%s' % (where, out.rstrip()))
                        failed += 1
                        continue
                rc, out = run(fc + ['-I', moddir, 'snippet.f90', '-o', 'snippet', libfortran, libgpumem,
                                    '-Wl,-rpath,' + libdir + ',-rpath,' + os.path.dirname(libfortran)], e, d)
                if rc == 0:
                    rc, out2 = run(['./snippet'], e, d)
                    out += out2
            elif lang == 'python':
                mods = set()
                for node in ast.walk(ast.parse(text)):
                    if isinstance(node, ast.Import):
                        mods.update(a.name.split('.')[0] for a in node.names)
                    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                        mods.add(node.module.split('.')[0])
                missing = sorted(m for m in mods - {'gpumem'} if importlib.util.find_spec(m) is None)
                if missing:
                    print('skip  %s: %s not installed' % (where, ', '.join(missing)))
                    skipped += 1
                    continue
                open(os.path.join(d, 'snippet.py'), 'w').write(text)
                rc, out = run([sys.executable, 'snippet.py'], e, d)
            else:
                open(os.path.join(d, 'snippet.sh'), 'w').write(text)
                rc, out = run(['bash', '-euo', 'pipefail', 'snippet.sh'], e, d)
            if rc == 0:
                print('ok    %s' % where)
                passed += 1
            else:
                print('FAIL  %s (exit %d):\n%s' % (where, rc, out.rstrip()))
                failed += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print('%d snippets ran, %d failed, %d not run' % (passed + failed, failed, skipped))
    if failed:
        return 1
    return 0 if passed else 77


if __name__ == '__main__':
    sys.exit(main())
