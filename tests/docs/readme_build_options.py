#!/usr/bin/env python3
"""README.md's build section says what the build makes and installs (suite 'docs').

- every option of meson_options.txt has its row in README's options table (`-Dname=`);
- the `-Dtools=` row names every program tools/meson.build installs, and meson_options.txt's
  description of `tools` names them too;
- every man page in docs/man is named in README (`man NAME`);
- no `meson setup DIR` with options in README uses the folder tools/ci/run-main.sh sets up first:
  meson keeps that folder's options ("already configured"), so the install would go to
  /usr/local whatever --prefix said.

usage: readme_build_options.py SOURCE_ROOT
"""
import glob
import os
import re
import sys


def main():
    root = sys.argv[1]
    readme = open(os.path.join(root, 'README.md'), encoding='utf-8').read()
    options_txt = open(os.path.join(root, 'meson_options.txt'), encoding='utf-8').read()
    tools_build = open(os.path.join(root, 'tools', 'meson.build'), encoding='utf-8').read()
    problems = []
    rows = {}
    for line in readme.split('\n'):
        for name in re.findall(r'`-D(\w+)=`', line.split('|')[1] if line.startswith('|') and '|' in line[1:] else ''):
            rows[name] = line
    options = {m.group(1): m.group(2) for m in
               re.finditer(r"option\('(\w+)'.*?description\s*:\s*'((?:[^'\\]|\\.)*)'", options_txt, re.S)}
    for name in options:
        if name not in rows:
            problems.append('README.md: no row for -D%s= (meson_options.txt has it)' % name)
    installed = re.findall(r"executable\('([\w-]+)'[^)]*?install\s*:\s*true", tools_build, re.S)
    if not installed:
        problems.append('tools/meson.build: no installed program found (has its form changed?)')
    for prog in installed:
        if prog not in rows.get('tools', ''):
            problems.append('README.md: the -Dtools= row does not name %s, which it installs' % prog)
        if prog not in options.get('tools', ''):
            problems.append("meson_options.txt: the description of 'tools' does not name %s" % prog)
    for page in sorted(glob.glob(os.path.join(root, 'docs', 'man', '*.1*'))):
        name = os.path.basename(page).split('.1')[0]
        if not re.search(r'man %s\b' % re.escape(name), readme):
            problems.append('README.md: the man page of %s (%s) is not named ("man %s")'
                            % (name, os.path.relpath(page, root), name))
    run_main = open(os.path.join(root, 'tools', 'ci', 'run-main.sh'), encoding='utf-8').read()
    main_dirs = set(re.findall(r'^\s*configure_build\s+(\S+)', run_main, re.M))
    for n, line in enumerate(readme.split('\n'), 1):
        m = re.match(r'\s*meson setup (\S+)(.*)', line)
        if m and m.group(1) in main_dirs and re.search(r'(^|\s)(--\w|-D)', m.group(2).split('#')[0]):
            problems.append('README.md:%d: `meson setup %s` with options, but tools/ci/run-main.sh has set up %s/ '
                            'already and meson keeps its options: use another folder' % (n, m.group(1), m.group(1)))
    for p in problems:
        print(p)
    print('%d options, %d installed programs, %d problems' % (len(options), len(installed), len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
