#!/usr/bin/env python3
"""Writes a man page from its template, with the ENVIRONMENT section made from gpumem's one
options table (src/base/options.cpp, k_options), so that the page cannot drift from it.

    gen_man.py TEMPLATE OPTIONS_CPP OUTPUT VERSION

The template's line "@ENVIRONMENT@" becomes one .TP entry per option: its name, the values it
takes, its default and what it does, in the table's order; "@VERSION@" becomes VERSION (the
project's, from meson).

SPDX-License-Identifier: MIT
"""
import re
import sys


def c_strings(text):
    """The C string literals at the start of `text`, adjacent ones joined, and where they end."""
    out, pos = [], 0
    lit = re.compile(r'\s*((?:"(?:[^"\\]|\\.)*"\s*)+),?', re.S)
    while True:
        m = lit.match(text, pos)
        if not m:
            return out, pos
        out.append("".join(bytes(s, "utf-8").decode("unicode_escape") for s in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))))
        pos = m.end()


def options(cpp):
    """(name, default, form, help) for each entry of k_options[]."""
    body = cpp[cpp.index("k_options[] = {"):]
    body = body[: body.index("\n};")]
    found = []
    for m in re.finditer(r'\{\s*(?="GPUMEM_)', body):
        fields, _ = c_strings(body[m.end():])
        if len(fields) < 4:
            sys.exit("gen_man: an entry of k_options has %d strings, not 4: %r" % (len(fields), fields))
        found.append(tuple(fields[:4]))
    if not found:
        sys.exit("gen_man: no entry found in k_options")
    return found


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line if line[:1] in ".'" else line) for line in text.split("\n"))


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    template, cpp_path, output, version = argv[1:5]
    with open(cpp_path, encoding="utf-8") as f:
        table = options(f.read())
    entries = []
    for name, default, form, help_text in table:
        shown = default if default else "unset"
        entries.append(".TP\n.B %s\n%s.  %s (default: %s)." % (name, roff(help_text[:1].upper() + help_text[1:]),
                                                                roff("Takes " + form), roff(shown)))
    with open(template, encoding="utf-8") as f:
        page = f.read()
    if "@ENVIRONMENT@" not in page:
        sys.exit("gen_man: %s has no @ENVIRONMENT@ line" % template)
    page = page.replace("@ENVIRONMENT@", "\n".join(entries)).replace("@VERSION@", version)
    with open(output, "w", encoding="utf-8") as f:
        f.write(page)


if __name__ == "__main__":
    main(sys.argv)
