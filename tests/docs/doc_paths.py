#!/usr/bin/env python3
"""Every repository path the docs name exists (suite 'docs').

A doc that names `tools/device-run.sh` after the script moved sends a reader to nothing.  This
reads README.md, every docs/*.md, tools/README.md, the man pages, the public header's comments and
the Python package's docstrings, takes each word that begins with a top-level folder of the
repository (src/, include/, docs/, tests/, tools/, bindings/, examples/, packaging/, cmake/, .ci/)
and fails, naming file and line, when no file or folder of the tree matches it.  Braces
(`core/trace.{hpp,cpp}`) and wildcards (`tests/test_*.c`) are expanded; a path inside a build
folder (`build/tools/...`) or a git object (`52942c8:tools/x.c`) is not checked.  The CHANGELOG
and docs/gpu-results.md are records of the past and are not read.

usage: doc_paths.py SOURCE_ROOT
"""
import glob
import os
import re
import sys

TOP = ('src', 'include', 'docs', 'tests', 'tools', 'bindings', 'examples', 'packaging', 'cmake', '.ci')
# A path: a top folder, then at least one more component; a word boundary before it (not part of
# a longer path such as build/tools/x, a URL, or a git object name such as 52942c8:tools/x.c).
PATH = re.compile(r'(?<![\w./~$@:-])((?:%s)/[\w.*{},+-]+(?:/[\w.*{},+-]*)*)' % '|'.join(re.escape(t) for t in TOP))


# Records of past runs, each naming the commands as they were at its commit (as the CHANGELOG
# does): not read.
RECORDS = {os.path.join('docs', 'gpu-results.md')}


def documents(root):
    names = ['README.md', os.path.join('tools', 'README.md')]
    names += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, 'docs', '*.md')))
    names += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, 'docs', 'man', '*.1*')))
    names += [os.path.join('include', 'gpumem', 'gpumem.h')]
    names += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, 'bindings', 'python', 'gpumem', '*.py')))
    return [n for n in names if os.path.isfile(os.path.join(root, n)) and n not in RECORDS]


def expand(path):
    m = re.search(r'\{([^{}]*)\}', path)
    if not m:
        return [path]
    out = []
    for alt in m.group(1).split(','):
        out += expand(path[:m.start()] + alt + path[m.end():])
    return out


def placeholder(path):
    """tools/NAME, packaging/lmod/gpumem/X.Y.Z.lua: a pattern for the reader to fill in."""
    return any(re.fullmatch(r'[A-Z][A-Z_.]*(\.\w+)?', part) for part in path.split('/'))


def exists(root, path):
    for p in expand(path):
        full = os.path.join(root, p)
        if any(c in p for c in '*?['):
            if glob.glob(full):
                return True
        # A program is named by its source's path without the extension (tests/gpu/graph_test).
        elif os.path.exists(full) or glob.glob(glob.escape(full) + '.*'):
            return True
    return False


def main():
    root = sys.argv[1]
    missing = []
    checked = 0
    for name in documents(root):
        with open(os.path.join(root, name), encoding='utf-8', errors='replace') as f:
            for n, line in enumerate(f, 1):
                for m in PATH.finditer(line):
                    path = m.group(1).rstrip('.,;:)')
                    if path.endswith('/'):
                        path = path.rstrip('/')
                    if path.count('/') == 0 or placeholder(path):
                        continue
                    checked += 1
                    if not exists(root, path):
                        missing.append('%s:%d: %s does not exist' % (name, n, path))
    for m in missing:
        print(m)
    print('%d paths checked, %d missing' % (checked, len(missing)))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
