#!/usr/bin/env python3
"""Every `GPUMEM_X=VALUE` the docs write is read as they say (suite 'docs').

README.md and docs/*.md give values of gpumem's variables as examples (`GPUMEM_LIMIT=256M`).
Each is set, alone, for `gpumem-info` on the host backend: a value gpumem warns about ("ignoring
GPUMEM_X=...") fails the check unless the line that shows it says it is malformed, refused or
ignored.  Values that name things of the reader's (paths, placeholders in capitals) are not tried.

usage: env_examples.py SOURCE_ROOT GPUMEM_INFO
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

# The variables whose values are syntax gpumem parses (not paths of the reader's).
CHECKED = ('GPUMEM_LIMIT', 'GPUMEM_PINNED_CACHE', 'GPUMEM_TRACE_MAX', 'GPUMEM_POOL_PAGED', 'GPUMEM_POOL_DECAY', 'GPUMEM_BACKTRACE',
           'GPUMEM_HOST_STRICT', 'GPUMEM_FALLBACK', 'GPUMEM_LOG', 'GPUMEM_DISABLE')
EXAMPLE = re.compile(r'\b(%s)=([^\s`\'"),;|]+)' % '|'.join(CHECKED))
SAYS_BAD = re.compile(r'malformed|refused|ignor|warn|rejected|invalid', re.I)


def main():
    root, info = sys.argv[1], sys.argv[2]
    pages = [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md')))
    pages = [p for p in pages if os.path.basename(p) != 'gpu-results.md']  # a record of past runs
    seen, failed = {}, 0
    with tempfile.TemporaryDirectory() as work:
        for page in pages:
            for n, line in enumerate(open(page, encoding='utf-8'), 1):
                for m in EXAMPLE.finditer(line):
                    name, value = m.group(1), m.group(2).rstrip('.:')
                    if re.fullmatch(r'[A-Z_]+', value) and value not in ('', ):
                        continue  # a placeholder (SIZE, N)
                    if (name, value) not in seen:
                        env = {k: v for k, v in os.environ.items() if not k.startswith('GPUMEM_')}
                        env.update(GPUMEM_BACKEND='host', GPUMEM_LOG='warn')
                        env[name] = value
                        r = subprocess.run([info], cwd=work, env=env, capture_output=True, text=True, timeout=60)
                        seen[(name, value)] = ('ignoring %s=' % name) in r.stderr
                    warned = seen[(name, value)]
                    where = '%s:%d' % (os.path.relpath(page, root), n)
                    if warned and not SAYS_BAD.search(line):
                        print('FAIL  %s: %s=%s is refused by gpumem, and the line does not say so' % (where, name, value))
                        failed += 1
    print('%d examples tried, %d refused where the docs take them' % (len(seen), failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
