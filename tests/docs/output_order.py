#!/usr/bin/env python3
"""One rule for where output parameters go, said the same way everywhere (suite 'docs').

The header's two overview comments and docs/porting.md each state the rule: outputs first, except
in a list of calls that name what they ask about first and give the answer last.  This reads
every declaration of include/gpumem/gpumem.h, finds the calls that take an input before an
output, and fails unless each of the three places lists exactly those calls.

An output is a non-const pointer to something other than bytes (`int32_t *`, `void **`, a handle
or struct pointer), or a non-const `void *` named `value` (an attribute's answer).

usage: output_order.py SOURCE_ROOT
"""
import os
import re
import sys

RULE = re.compile(r'Output parameters come first.*?give the answer last:(.*?)\(its count\)\.', re.S)


def is_output(param):
    param = ' '.join(param.split())
    m = re.match(r'(.*?)(\w+)$', param)
    if not m or '*' not in m.group(1):
        return False
    kind, name = m.group(1).strip(), m.group(2)
    if kind.startswith('const ') and kind.count('*') == 1:
        return False  # const T *: an input
    if re.search(r'\bconst\s*\*\s*$', kind):
        return False  # T *const *: an array of inputs
    if kind == 'void *':
        return name == 'value'
    return True


def late_outputs(header):
    code = re.sub(r'/\*.*?\*/', '', header, flags=re.S)
    late = set()
    for m in re.finditer(r'GPUMEM_API\s+[\w\s\*]+?\b(gpumem_\w+)\s*\(([^)]*)\)', code):
        params = [p.strip() for p in m.group(2).split(',') if p.strip() and p.strip() != 'void']
        seen_input = False
        for p in params:
            if is_output(p):
                if seen_input:
                    late.add(m.group(1))
                    break
            else:
                seen_input = True
    return late


def main():
    root = sys.argv[1]
    header = open(os.path.join(root, 'include', 'gpumem', 'gpumem.h'), encoding='utf-8').read()
    porting = open(os.path.join(root, 'docs', 'porting.md'), encoding='utf-8').read()
    want = late_outputs(header)
    problems = []
    places = [('include/gpumem/gpumem.h', m.group(1)) for m in RULE.finditer(header)]
    places += [('docs/porting.md', m.group(1)) for m in RULE.finditer(porting)]
    if len([p for p in places if p[0].endswith('.h')]) != 2:
        problems.append('include/gpumem/gpumem.h: the rule is not stated in both overview comments')
    if not any(p[0].endswith('.md') for p in places):
        problems.append('docs/porting.md: the rule is not stated')
    for where, text in places:
        listed = set(re.findall(r'gpumem_\w+', text))
        if listed != want:
            problems.append('%s lists %s; the header declares these with an output after an input: %s'
                            % (where, ', '.join(sorted(listed)), ', '.join(sorted(want))))
    for p in problems:
        print(p)
    print('%d calls give outputs last; %d places state the rule; %d problems' % (len(want), len(places), len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
