#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""docs/cli.md (docs/launcher.md for the launcher) against every tool's
--help: each option --help shows must be in the tool's section of the
docs, and each option the section's tables list must be in --help.
  cli_doc.py APPS_BUILD_DIR DOCS_DIR [VERSION]

With VERSION (meson's project version), every tool and every other name
of one (the symlinks) must also answer --version with exactly
"NAME (uroce) VERSION" and exit 0.

A tool is every executable uroce* in APPS_BUILD_DIR (symlinks, which are
other names of a tool, left out), so a tool added later is checked too,
and one without a section fails. Its options in --help: those that start
an option line (the column before the description) and those of its
usage lines. Its section: `## TOOL` up to the next `## `, plus every
`### ` heading elsewhere that names the tool (the subsections the tools
share); its options there: the first cell of every table row."""
import os
import re
import subprocess
import sys

OPT = re.compile(r'(?<![\w-])(--?[A-Za-z][\w-]*)')


def help_options(path, tool):
    p = subprocess.run([path, '--help'], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, ASAN_OPTIONS='detect_leaks=0'))
    if p.returncode != 0:
        raise SystemExit(f'FAIL: {os.path.basename(path)} --help exited {p.returncode}: {p.stderr.strip()}')
    opts = set()
    for line in p.stdout.splitlines():
        s = line.strip()
        if re.match(r'(?i)usage:', s) or (line[:1].isspace() and (s.startswith('[') or s.startswith(tool + ' '))):
            opts.update(OPT.findall(s))       # usage lines and their continuations
        elif line[:1].isspace() and re.match(r'-{1,2}[A-Za-z]', s):
            spec = re.split(r'\s{2,}', s, maxsplit=1)[0]   # the option column
            opts.update(OPT.findall(spec))
    return opts, p.stdout


def section_lines(md, tool):
    """`## TOOL` to the next `## `, and every `### ` subsection elsewhere
    whose heading names the tool."""
    lines = open(md, encoding='utf-8').read().splitlines()
    named = re.compile(r'(?<![\w-])' + re.escape(tool) + r'(?![\w-])')
    out, in_h2, in_h3, found = [], False, False, False
    for line in lines:
        if line.startswith('## '):
            in_h2 = bool(re.match(r'## ' + re.escape(tool) + r'(\s|$)', line))
            in_h3 = False
        elif line.startswith('### '):
            in_h3 = bool(named.search(line))
        if in_h2 or in_h3:
            out.append(line)
            found = True
    return out if found else None


def doc_options(lines):
    opts = set()
    for line in lines:
        if not line.startswith('|'):
            continue
        cells = re.split(r'(?<!\\)\|', line)
        if len(cells) < 3:
            continue
        for span in re.findall(r'`([^`]*)`', cells[1]):
            opts.update(OPT.findall(span))
    return opts


def main():
    apps, docs = sys.argv[1], sys.argv[2]
    version = sys.argv[3] if len(sys.argv) > 3 else None
    tools = sorted(f for f in os.listdir(apps)
                   if f.startswith('uroce') and not os.path.islink(os.path.join(apps, f))
                   and os.path.isfile(os.path.join(apps, f)) and os.access(os.path.join(apps, f), os.X_OK))
    if not tools:
        print(f'FAIL: no uroce* tool in {apps}')
        return 1
    fail = 0
    if version:
        names = sorted(f for f in os.listdir(apps) if f.startswith('uroce') and
                       os.path.isfile(os.path.join(apps, f)) and os.access(os.path.join(apps, f), os.X_OK))
        for name in names:
            p = subprocess.run([os.path.join(apps, name), '--version'], capture_output=True, text=True,
                               timeout=30, env=dict(os.environ, ASAN_OPTIONS='detect_leaks=0'))
            want = f'{name} (uroce) {version}'
            if p.returncode != 0 or p.stdout.strip() != want:
                print(f'FAIL: {name} --version: exit {p.returncode}, {p.stdout.strip()!r}; expected {want!r}')
                fail = 1
        if not fail:
            print(f'ok: --version of {len(names)} names: "NAME (uroce) {version}"')
    for tool in tools:
        md = os.path.join(docs, 'launcher.md' if tool == 'uroce' else 'cli.md')
        if tool == 'uroce':
            # the launcher's page: its options come before the first `## `
            text = open(md, encoding='utf-8').read().split('\n## ')[0]
            sect = text.splitlines()
        else:
            sect = section_lines(md, tool)
        name = os.path.basename(md)
        if sect is None:
            print(f'FAIL: {tool}: no section "## {tool}" in docs/{name}')
            fail = 1
            continue
        hopts, _ = help_options(os.path.join(apps, tool), tool)
        dopts = doc_options(sect)
        undocumented = sorted(hopts - dopts)
        unknown = sorted(dopts - hopts)
        for o in undocumented:
            print(f'FAIL: {tool}: {o} is in --help but not in its section of docs/{name}')
        for o in unknown:
            print(f'FAIL: {tool}: docs/{name} lists {o}, which its --help does not have')
        if undocumented or unknown:
            fail = 1
        else:
            print(f'ok: {tool}: {len(hopts)} options, the same in --help and docs/{name}')
    return fail


if __name__ == '__main__':
    sys.exit(main())
