#!/usr/bin/env python3
"""docs/strict-mode.md's "real output" blocks are what its programs print today (suite 'docs').

Each "## Bug N" section holds one ```c program and blocks introduced by a paragraph ending in
"(real output):"; a paragraph that names strict mode runs the program with GPUMEM_HOST_STRICT=1,
one that names the plain host backend runs it without.  The program is built as ./touch (the name
the page's addr2line line uses) and run on the host backend.  Addresses, offsets and byte counts
differ from run to run and are compared as placeholders; a "Segmentation fault" line is the
shell's, so it is checked as the program dying of SIGSEGV.

usage: strict_mode_outputs.py PAGE LIBGPUMEM SOURCE_ROOT -- CC...
"""
import os
import re
import signal
import subprocess
import sys
import tempfile


def sections(text):
    parts = re.split(r'^## ', text, flags=re.M)
    return [p for p in parts if p.startswith('Bug ')]


def normalised(lines):
    out = []
    for line in lines:
        line = re.sub(r'0x[0-9a-f]+', '0xADDR', line)
        line = re.sub(r'\(\d+ bytes\)', '(N bytes)', line)
        line = re.sub(r'\b\d+-byte\b', 'N-byte', line)
        line = re.sub(r'\(offset \d+\)', '(offset N)', line)
        out.append(line.rstrip())
    return out


def main():
    argv = sys.argv[1:]
    page, lib, source_root = argv[:3]
    cc = argv[argv.index('--') + 1:]
    text = open(page, encoding='utf-8').read()
    failed = checked = 0
    work = tempfile.mkdtemp(prefix='gpumem-strict-doc-')
    for sec in sections(text):
        title = sec.split('\n', 1)[0]
        prog = re.search(r'```c\n(.*?)```', sec, re.S)
        if not prog:
            continue
        src = os.path.join(work, 'touch.c')
        open(src, 'w').write(prog.group(1))
        exe = os.path.join(work, 'touch')
        r = subprocess.run(cc + ['-std=c11', '-g', '-I', os.path.join(source_root, 'include'), src, '-o', exe, lib,
                                 '-Wl,-rpath,' + os.path.dirname(lib)], capture_output=True, text=True)
        if r.returncode:
            print('FAIL  %s: does not build:\n%s' % (title, r.stderr))
            failed += 1
            continue
        for m in re.finditer(r'([^\n]*(?:\n[^\n]+)*?)\(real output\):\s*\n\s*\n```\n(.*?)```', sec, re.S):
            intro, want = m.group(1), m.group(2).rstrip('\n').split('\n')
            strict = 'strict mode' in intro.lower()
            env = dict(os.environ, GPUMEM_BACKEND='host', GPUMEM_LOG='warn')
            env.pop('GPUMEM_HOST_STRICT', None)
            if strict:
                env['GPUMEM_HOST_STRICT'] = '1'
            r = subprocess.run(['./touch'], cwd=work, env=env, capture_output=True, text=True, timeout=60)
            got = (r.stdout + r.stderr).rstrip('\n').split('\n')
            segv = want and want[-1] == 'Segmentation fault'
            if segv:
                want = want[:-1]
            mode = 'strict' if strict else 'plain'
            checked += 1
            problems = []
            if normalised(got) != normalised(want):
                problems.append('prints:\n    ' + '\n    '.join(got) + '\n  the page says:\n    ' + '\n    '.join(want))
            if segv and r.returncode != -signal.SIGSEGV:
                problems.append('exit %d, the page says it dies of SIGSEGV' % r.returncode)
            if not segv and r.returncode != 0:
                problems.append('exit %d, the page shows no failure' % r.returncode)
            if problems:
                print('FAIL  %s (%s):\n  %s' % (title, mode, '\n  '.join(problems)))
                failed += 1
            else:
                print('ok    %s (%s)' % (title, mode))
    print('%d outputs checked, %d differ' % (checked, failed))
    return 1 if failed or not checked else 0


if __name__ == '__main__':
    sys.exit(main())
