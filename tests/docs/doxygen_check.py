#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every function of uroce.h documented, every parameter with @param and
every non-void return with @return. Doxygen (1.9) warns about a missing
@param only when another parameter has one, and about neither an
undocumented function nor a missing @return, so this reads its XML.
  doxygen_check.py UROCE_H DOXYGEN_XML_DIR"""
import re
import sys
import xml.etree.ElementTree as ET


def declared(header):
    """uroce_* functions the header declares or defines (comments and
    string literals removed; a function pointer typedef is no function)."""
    text = open(header, encoding='utf-8').read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return sorted({n for ptr, n in re.findall(r'(\(\s*\*\s*)?\b(uroce_\w+)\s*\(', text) if not ptr})


def text_of(e):
    return ''.join(e.itertext()).strip() if e is not None else ''


def main():
    header, xmldir = sys.argv[1], sys.argv[2]
    want = declared(header)
    if not want:
        print(f'FAIL: no uroce_* function found in {header}')
        return 1
    root = ET.parse(f'{xmldir}/uroce_8h.xml').getroot()
    funcs = {}
    for m in root.iter('memberdef'):
        if m.get('kind') == 'function':
            funcs[m.findtext('name')] = m
    problems = []
    for name in want:
        m = funcs.get(name)
        if m is None or not (text_of(m.find('briefdescription')) or text_of(m.find('detaileddescription'))):
            problems.append(f'{name}: no doc comment')
            continue
        params = [p.findtext('declname') for p in m.findall('param') if p.findtext('declname')]
        documented = set()
        for pl in m.iter('parameterlist'):
            if pl.get('kind') == 'param':
                for pn in pl.iter('parametername'):
                    documented.add(text_of(pn))
        for p in params:
            if p not in documented:
                problems.append(f'{name}: no @param {p}')
        for p in sorted(documented - set(params)):
            problems.append(f'{name}: @param {p} names no parameter')
        rtype = re.sub(r'\s+', ' ', text_of(m.find('type')))
        rtype = re.sub(r'^static (inline )?', '', rtype)
        returns = any(s.get('kind') == 'return' for s in m.iter('simplesect'))
        if rtype != 'void' and not returns:
            problems.append(f'{name}: returns {rtype} but has no @return')
        if rtype == 'void' and returns:
            problems.append(f'{name}: returns void but has a @return')
    for p in problems:
        print('FAIL:', p)
    if problems:
        print(f'{len(problems)} problem(s) in the doc comments of {header}')
        return 1
    print(f'ok: {len(want)} functions, each with its @param and @return')
    return 0


if __name__ == '__main__':
    sys.exit(main())
