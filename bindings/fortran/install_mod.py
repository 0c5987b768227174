#!/usr/bin/env python3
"""Install gpumem.mod (meson installs no Fortran modules itself).

Usage (from meson.add_install_script): install_mod.py BUILD_DIR INSTALL_SUBDIR
Copies the gpumem.mod that the compiler wrote somewhere under BUILD_DIR to
$MESON_INSTALL_DESTDIR_PREFIX/INSTALL_SUBDIR (INSTALL_SUBDIR may be absolute).
SPDX-License-Identifier: MIT
"""
import os
import shutil
import sys


def main():
    build_dir, subdir = sys.argv[1], sys.argv[2]
    found = []
    for root, _dirs, files in os.walk(build_dir):
        if 'gpumem.mod' in files:
            found.append(os.path.join(root, 'gpumem.mod'))
    if not found:
        sys.exit('install_mod.py: no gpumem.mod under ' + build_dir)
    prefix = os.environ.get('MESON_INSTALL_DESTDIR_PREFIX', os.environ.get('MESON_INSTALL_PREFIX', ''))
    if os.path.isabs(subdir):
        destdir = os.environ.get('DESTDIR', '')
        dest = destdir + subdir if destdir else subdir
    else:
        dest = os.path.join(prefix, subdir)
    os.makedirs(dest, exist_ok=True)
    newest = max(found, key=os.path.getmtime)
    shutil.copy2(newest, os.path.join(dest, 'gpumem.mod'))
    print('Installing ' + newest + ' to ' + dest)


if __name__ == '__main__':
    main()
