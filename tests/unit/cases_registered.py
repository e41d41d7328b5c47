#!/usr/bin/env python3
"""cases_registered.py BUILD_DIR — every case of a unit test program is run.

A unit test program (tests/unit/**) keeps its cases in a table of
{"name", function} entries and runs the one named by its argument; meson
runs it once per name listed in a meson.build. A case added to the table
and not to the list compiles, passes by never running, and holds nothing
(two cases of tests/unit/policy and three of tests/unit/fnprice did so).
This reads the configured build's test list (meson-info/intro-tests.json)
and its targets (intro-targets.json) and fails, naming them, when a case
of a unit program's table is named by no test's arguments (the program
itself or a script it is passed to). The simulator's programs are not
checked: their tables also hold the modes of child processes.
"""
import json
import os
import re
import sys

CASE = re.compile(r'\{\s*"([A-Za-z0-9_]+)"\s*,\s*[A-Za-z0-9_]+\s*\}')


def main():
    build = os.path.abspath(sys.argv[1])
    info = os.path.join(build, 'meson-info')
    with open(os.path.join(info, 'intro-tests.json')) as f:
        tests = json.load(f)
    with open(os.path.join(info, 'intro-targets.json')) as f:
        targets = json.load(f)
    sources = {}   # a unit test program's path -> its C sources under tests/unit
    for t in targets:
        srcs = [s for ts in t.get('target_sources', []) for s in ts.get('sources', [])
                if s.endswith('.c') and '/tests/unit/' in s]
        for path in t.get('filename', []):
            if srcs and '/tests/unit/' in path:
                sources[os.path.normpath(path)] = srcs
    named = {path: set() for path in sources}
    for t in tests:
        cmd = [os.path.normpath(c if os.path.isabs(c) else os.path.join(build, c)) for c in t['cmd']]
        for i, c in enumerate(cmd):
            if c in named:
                named[c].update(os.path.basename(a) for a in t['cmd'][i + 1:])
    bad = 0
    for path, srcs in sorted(sources.items()):
        cases = set()
        for s in srcs:
            with open(s) as f:
                cases |= set(CASE.findall(f.read()))
        missing = sorted(cases - named[path]) if named[path] else []
        if missing:
            bad += 1
            print('%s: cases no test runs: %s' % (os.path.relpath(path, build), ', '.join(missing)))
    checked = sum(1 for p in named if named[p])
    print('%d unit programs checked, %d with cases never run' % (checked, bad))
    return 1 if bad or checked == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
