#!/usr/bin/env python3
"""Every place that states gpumem's version states the same one.

usage: check_versions.py VERSION_EXE LIBGPUMEM SOURCE_ROOT PROJECT_VERSION [--readelf READELF]
                         [--info GPUMEM_INFO]

VERSION_EXE (tests/abi/version.c) prints the header's version and gpumem_version() at run time.
Compared with them:
  - meson's project version (PROJECT_VERSION) and the library's file name and SONAME
    (libgpumem.so.MAJOR.MINOR.PATCH, SONAME libgpumem.so.MAJOR: docs/versioning.md);
  - the newest release of CHANGELOG.md (the first "## [X.Y.Z]" after "## [Unreleased]");
  - the version script src/gpumem.sym: its newest node (the one no other node inherits) is the
    newest release's MAJOR.MINOR when that release's CHANGELOG section names a node, and never
    newer than the release unless the CHANGELOG's [Unreleased] section names it (the next
    release's additions); GPUMEM_0 is 0.1's node; every node the CHANGELOG names exists;
  - the Python package (__version__, HEADER_VERSION; gpumem-viz's __version__), the Fortran module's GPUMEM_VERSION_*,
    the Lmod module file and the Spack recipe;
  - docs/versioning.md's "current release" and docs/gpumem-info-json.md's example;
  - the man pages' .TH lines (each takes @VERSION@ from meson) and what gpumem-info prints (its version line,
    --json's "gpumem_version" and --version);
  - links in CHANGELOG.md to release tags name tags that exist (checked in a git checkout).
Exit 0 when all agree; otherwise one line per disagreement.
SPDX-License-Identifier: MIT
"""
import argparse
import json
import os
import re
import subprocess
import sys

problems = []


def fail(msg):
    problems.append(msg)


def read(root, *parts):
    with open(os.path.join(root, *parts), encoding="utf-8") as f:
        return f.read()


def node_version(name):
    """(major, minor) of a version node: GPUMEM_0 is 0.1, GPUMEM_M.N is M.N."""
    m = re.fullmatch(r"GPUMEM_(\d+)(?:\.(\d+))?", name)
    if not m:
        return None
    if m.group(2) is None:
        return (int(m.group(1)), 1) if m.group(1) == "0" else (int(m.group(1)), 0)
    return (int(m.group(1)), int(m.group(2)))


def symbol_nodes(text):
    """{node: parent or ''} of a version script."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"#.*", "", text)
    return {m.group(1): m.group(3) for m in re.finditer(r"([\w.]+)\s*\{(.*?)\}\s*([\w.]*)\s*;", text, flags=re.S)}


def changelog_releases(text):
    """[(version, section text)] of every "## [X.Y.Z]" section, newest first."""
    heads = list(re.finditer(r"^## \[([^\]]+)\](.*)$", text, flags=re.M))
    out = []
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((h.group(1), h.group(2), text[h.end():end]))
    return out


def git_tags(root):
    if not os.path.exists(os.path.join(root, ".git")):
        return None
    try:
        r = subprocess.run(["git", "-C", root, "tag", "--list"], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return set(r.stdout.split()) if r.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1])
    for name in ("exe", "lib", "root", "project"):
        ap.add_argument(name)
    ap.add_argument("--readelf")
    ap.add_argument("--info")
    args = ap.parse_args()
    exe, lib, root, project, readelf = args.exe, args.lib, args.root, args.project, args.readelf

    # The header and the run-time library.
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^header (\d+)\.(\d+)\.(\d+) (\d+)$", out, flags=re.M)
    hv = tuple(int(x) for x in m.group(1, 2, 3))
    version = "%d.%d.%d" % hv
    number = hv[0] * 10000 + hv[1] * 100 + hv[2]
    if int(m.group(4)) != number:
        fail("GPUMEM_VERSION is %s, not %d for %s" % (m.group(4), number, version))
    runtime = int(re.search(r"^runtime (\d+)$", out, flags=re.M).group(1))
    if runtime != number:
        fail("gpumem_version() returns %d, the header says %d (%s)" % (runtime, number, version))
    if project != version:
        fail("meson.build's project version is %s, the header's %s" % (project, version))

    # The shared library's file and SONAME.
    libname = os.path.basename(lib)
    if libname != "libgpumem.so." + version:
        fail("the library is %s, not libgpumem.so.%s" % (libname, version))
    if readelf:
        dyn = subprocess.run([readelf, "-d", lib], capture_output=True, text=True).stdout
        so = re.search(r"\(SONAME\).*\[(.*)\]", dyn)
        if not so or so.group(1) != "libgpumem.so.%d" % hv[0]:
            fail("SONAME %s, want libgpumem.so.%d (docs/versioning.md)" % (so.group(1) if so else None, hv[0]))

    # CHANGELOG.md: the newest release is this version; the nodes it names exist.
    changelog = read(root, "CHANGELOG.md")
    releases = changelog_releases(changelog)
    if not releases or releases[0][0] != "Unreleased":
        fail("CHANGELOG.md does not begin with an \"## [Unreleased]\" section")
    released = [r for r in releases if r[0] != "Unreleased"]
    newest, section = (released[0][0], released[0][2]) if released else (None, "")
    if newest != version:
        fail("CHANGELOG.md's newest release is %s, the header says %s" % (newest, version))
    if released and not re.fullmatch(r" - \d{4}-\d{2}-\d{2}", released[0][1]):
        fail("CHANGELOG.md: \"## [%s]\" has no \" - YYYY-MM-DD\" release date" % newest)

    nodes = symbol_nodes(read(root, "src", "gpumem.sym"))
    for name in nodes:
        if node_version(name) is None:
            fail("gpumem.sym: node %s is not GPUMEM_MAJOR[.MINOR]" % name)
    tips = [n for n in nodes if n not in set(nodes.values())]
    if len(tips) != 1:
        fail("gpumem.sym: %d newest nodes (%s), want one chain" % (len(tips), ", ".join(tips)))
    elif node_version(tips[0]):
        tip = node_version(tips[0])
        unreleased = releases[0][2] if releases and releases[0][0] == "Unreleased" else ""
        # Functions of the next release land before it: its node may be the tip while the
        # CHANGELOG's Unreleased section names it (the release then moves the version up).
        upcoming = tip == (hv[0], hv[1] + 1) and re.search(r"\b%s\b" % re.escape(tips[0]), unreleased)
        if tip > hv[:2] and not upcoming:
            fail("gpumem.sym's newest node %s is newer than release %s (name it in the CHANGELOG's "
                 "Unreleased section while it is the next release's)" % (tips[0], version))
        elif re.search(r"\bGPUMEM_\d+(?:\.\d+)?\b", section) and tip != hv[:2] and not upcoming:
            fail("release %s added functions (its CHANGELOG section names a node) but gpumem.sym's newest node is %s"
                 % (version, tips[0]))
    for name in sorted(set(re.findall(r"\bGPUMEM_\d+(?:\.\d+)?\b", changelog))):
        if name not in nodes:
            fail("CHANGELOG.md names symbol version %s, which gpumem.sym does not define (%s)"
                 % (name, ", ".join(sorted(nodes))))

    tags = git_tags(root)
    for label, url in re.findall(r"^\[([^\]]+)\]:\s*(\S+)", changelog, flags=re.M):
        for tag in re.findall(r"\bv\d+\.\d+\.\d+\b", url):
            if tags is not None and tag not in tags:
                fail("CHANGELOG.md: the link [%s] names tag %s, which does not exist" % (label, tag))

    # The bindings.
    init_py = read(root, "bindings", "python", "gpumem", "__init__.py")
    m = re.search(r'^__version__ = "([^"]+)"', init_py, flags=re.M)
    if not m or m.group(1) != version:
        fail("bindings/python/gpumem/__init__.py: __version__ %s, want %s" % (m and m.group(1), version))
    m = re.search(r'^__version__ = "([^"]+)"', read(root, "bindings", "python", "gpumem", "viz.py"), flags=re.M)
    if not m or m.group(1) != version:
        fail("bindings/python/gpumem/viz.py (gpumem-viz --version): __version__ %s, want %s"
             % (m and m.group(1), version))
    m = re.search(r"^HEADER_VERSION = (\d+)", read(root, "bindings", "python", "gpumem", "_lib.py"), flags=re.M)
    if not m or int(m.group(1)) != number:
        fail("bindings/python/gpumem/_lib.py: HEADER_VERSION %s, want %d" % (m and m.group(1), number))
    f90 = os.path.join(root, "bindings", "fortran", "gpumem.f90")
    if os.path.isfile(f90):
        text = read(root, "bindings", "fortran", "gpumem.f90")
        got = tuple(int(re.search(r"GPUMEM_VERSION_%s = (\d+)" % p, text).group(1)) for p in ("MAJOR", "MINOR", "PATCH"))
        if got != hv:
            fail("bindings/fortran/gpumem.f90: GPUMEM_VERSION_* say %d.%d.%d, want %s" % (got + (version,)))

    # Packaging: the Lmod file is named after the version; the Spack recipe names no other
    # release and no tag.
    lmod_dir = os.path.join(root, "packaging", "lmod", "gpumem")
    if os.path.isdir(lmod_dir):
        files = sorted(f for f in os.listdir(lmod_dir) if f.endswith(".lua"))
        if files != [version + ".lua"]:
            fail("packaging/lmod/gpumem: %s, want %s.lua" % (", ".join(files) or "nothing", version))
        else:
            for v in set(re.findall(r"\b\d+\.\d+\.\d+\b", read(root, "packaging", "lmod", "gpumem", files[0]))):
                if v != version:
                    fail("packaging/lmod/gpumem/%s names version %s" % (files[0], v))
    spack = os.path.join(root, "packaging", "spack", "gpumem", "package.py")
    if os.path.isfile(spack):
        text = read(root, "packaging", "spack", "gpumem", "package.py")
        for v in set(re.findall(r"gpumem@=?(\d+\.\d+\.\d+)|version\(\"(\d+\.\d+\.\d+)\"", text)):
            v = v[0] or v[1]
            if v != version:
                fail("packaging/spack/gpumem/package.py names version %s, want %s" % (v, version))
        code = re.sub(r"#.*", "", text)  # the comments' example tag is no fetch
        for tag in re.findall(r"tag\s*=\s*\"([^\"]+)\"|/tags/([^/\"]+)", code):
            t = tag[0] or tag[1]
            if tags is None or t not in tags:
                fail("packaging/spack/gpumem/package.py fetches tag %s, which does not exist" % t)

    # The man pages' title lines: every page is a template (docs/man/*.1.in) whose .TH line takes
    # the version from meson (@VERSION@), so that no release has to remember to type it.
    man_dir = os.path.join(root, "docs", "man")
    if os.path.isdir(man_dir):
        for name in sorted(os.listdir(man_dir)):
            if name.endswith(".1"):
                fail("docs/man/%s: a page written by hand; make it %s.in with \"gpumem @VERSION@\" in its .TH "
                     "line, filled in by docs/meson.build" % (name, name))
            if not (name.endswith(".1") or name.endswith(".1.in")):
                continue
            for th in re.findall(r"^\.TH .*$", read(root, "docs", "man", name), flags=re.M):
                for v in re.findall(r"\bgpumem (\d+\.\d+\.\d+)\b", th):
                    fail("docs/man/%s: its .TH line types gpumem %s by hand; write gpumem @VERSION@" % (name, v))
                if "@VERSION@" not in th:
                    fail("docs/man/%s: its .TH line does not take the version from meson (@VERSION@)" % name)

    # The docs that state the current release: docs/versioning.md and the example of
    # docs/gpumem-info-json.md.
    m = re.search(r"The current release is \*\*(\d+\.\d+\.\d+)\*\* \(`GPUMEM_VERSION` (\d+)\)",
                  read(root, "docs", "versioning.md"))
    if not m or m.group(1) != version or int(m.group(2)) != number:
        fail("docs/versioning.md: \"The current release is **%s** (`GPUMEM_VERSION` %d)\" not found"
             % (version, number))
    for key in ("gpumem_version", "gpumem_version_compiled"):
        for v in re.findall(r'"%s": "([^"]*)"' % key, read(root, "docs", "gpumem-info-json.md")):
            if v != version:
                fail("docs/gpumem-info-json.md: its example says \"%s\": \"%s\", want %s" % (key, v, version))

    # gpumem-info.
    if args.info:
        env = dict(os.environ, GPUMEM_BACKEND="host", GPUMEM_LOG="error")
        r = subprocess.run([args.info], capture_output=True, text=True, env=env)
        want = "gpumem %s (compiled against %s)" % (version, version)
        if want not in r.stdout.splitlines():
            line = [ln for ln in r.stdout.splitlines() if ln.startswith("gpumem ")]
            fail("gpumem-info prints %r, want %r" % (line[0] if line else (r.stdout + r.stderr)[-300:], want))
        r = subprocess.run([args.info, "--json"], capture_output=True, text=True, env=env)
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            doc = {}
            fail("gpumem-info --json printed no JSON: %s" % (r.stdout + r.stderr)[-300:])
        for key in ("gpumem_version", "gpumem_version_compiled"):
            if doc and doc.get(key) != version:
                fail("gpumem-info --json: %s is %s, want %s" % (key, doc.get(key), version))
        r = subprocess.run([args.info, "--version"], capture_output=True, text=True, env=env)
        want = "gpumem-info (gpumem) %s, library %s\n" % (version, version)
        if r.stdout != want:
            fail("gpumem-info --version prints %r, want %r" % ((r.stdout + r.stderr)[-300:], want))

    for p in problems:
        print(p)
    print("version %s: %s" % (version, "header, library, CHANGELOG, gpumem.sym, bindings and packaging agree"
                              if not problems else "%d disagreements" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
