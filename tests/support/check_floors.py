#!/usr/bin/env python3
"""Fails when an #include in agent/src runs up or sideways between the floors of
docs/ARCHITECTURE.md ("The floors of agent/src/"). Usage: check_floors.py ROOT"""
import os
import re
import sys

FLOORS = {
    'util': 0, 'log': 0,
    'segment': 1, 'symbol': 1,
    'encode': 2, 'config': 2, 'propagation': 2,
    'report': 3,
    'meter': 4, 'applog': 4,
    'kafka': 5, 'grpc': 5,
    'pipeline': 6, 'profile': 6,
    'core': 7,
    'crash': 8,
    '.': 9,
    'instrument': 10,
}


def main(root):
    src = os.path.join(root, 'agent', 'src')
    bad = []
    for d, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(('.c', '.h')):
                continue
            path = os.path.join(d, f)
            here = os.path.relpath(d, src)
            if here not in FLOORS:
                bad.append(f'{os.path.relpath(path, root)}: folder {here!r} has no floor in '
                           'check_floors.py and docs/ARCHITECTURE.md')
                continue
            text = open(path, encoding='utf-8').read()
            for m in re.finditer(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
                target = os.path.normpath(os.path.join(d, m.group(1)))
                if not os.path.exists(target):
                    target = os.path.normpath(os.path.join(src, m.group(1)))
                    if not os.path.exists(target):
                        continue  # another library's header, common/, generated code
                there = os.path.relpath(os.path.dirname(target), src)
                if there == here or there.startswith('..'):
                    continue
                if FLOORS.get(there, 99) >= FLOORS[here]:
                    way = 'sideways' if FLOORS.get(there) == FLOORS[here] else 'up'
                    bad.append(f'{os.path.relpath(path, root)}: #include "{m.group(1)}" runs '
                               f'{way} ({here} is floor {FLOORS[here]}, {there} is floor '
                               f'{FLOORS.get(there, "?")})')
    for line in bad:
        print('check_floors:', line)
    if bad:
        return 1
    print('check_floors: every include of agent/src runs down')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
