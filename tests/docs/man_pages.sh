#!/bin/bash
# SPDX-License-Identifier: MIT
# The man pages as meson install puts them: into a DESTDIR, a man1 page for
# every tool installed in bin (the pingpong symlinks' pages too) and the
# man3 pages of uroce.h (the header's, a function's, a struct's); each must
# render with groff -man (and man -l) without a warning.
#   man_pages.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: man_pages.sh BUILD_DIR}
for p in help2man doxygen groff man; do
	command -v $p >/dev/null || { echo "SKIP: $p not found; scripts/install-deps.sh installs it"; exit 77; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
D=$TMP/destdir
fail=0
bad() { echo "FAIL: $*"; fail=1; }

meson install -C "$BUILD" --destdir "$D" --no-rebuild >"$TMP/install.log" 2>&1 || {
	cat "$TMP/install.log"
	echo "FAIL: meson install --destdir"
	exit 1
}
bindir=$(dirname "$(find "$D" -path '*/bin/uroce-pingpong' -print -quit)")
[ "$bindir" != . ] || { echo "FAIL: no bin/uroce-pingpong under the DESTDIR"; exit 1; }
man=$(dirname "$(find "$D" -path '*/man1/uroce-pingpong.1' -print -quit)")
[ "$man" != . ] || { echo "FAIL: no man1/uroce-pingpong.1 under the DESTDIR"; exit 1; }
man=$(dirname "$man")

# Renders without a warning: groff's (-ww: all of them) and man's.
render() { # DIR PAGE (relative to DIR, as .so lines are)
	local out
	out=$(cd "$1" && groff -s -man -Tutf8 -ww -z "$2" 2>&1) || { bad "groff $2 exited non-zero: $out"; return; }
	[ -z "$out" ] || bad "groff warns on $2: $out"
	out=$(cd "$1" && MANWIDTH=80 man --warnings -l "$2" 2>&1 >/dev/null) || { bad "man -l $2 failed: $out"; return; }
	[ -z "$out" ] || bad "man -l warns on $2: $out"
}

n=0
for tool in "$bindir"/uroce*; do
	t=$(basename "$tool")
	page=man1/$t.1
	if [ ! -e "$man/$page" ]; then
		bad "$t is installed but $page is not"
		continue
	fi
	render "$man" "$page"
	# the page is the tool's own --help: its usage line and its version
	if [ ! -L "$tool" ]; then
		grep -q 'uroce' "$man/$page" || bad "$page does not name uroce"
		grep -qF "$(grep -o '[0-9]*\.[0-9]*\.[0-9]*' <<<"$("$tool" --version)")" "$man/$page" ||
			bad "$page does not carry $t --version's version"
	fi
	n=$((n + 1))
done
for page in man3/uroce.h.3 man3/uroce_qp_create.3 man3/uroce_post_send.3 man3/uroce_qp_attr.3 man3/uroce_wc.3; do
	[ -e "$man/$page" ] || { bad "$page not installed"; continue; }
	render "$man" "$page"
	n=$((n + 1))
done
grep -q 'uroce_qp_create' "$man/man3/uroce.h.3" || bad "uroce.h.3 does not describe uroce_qp_create"
# the doc comments' @param and @return reach the page
grep -q 'Parameters' "$man/man3/uroce.h.3" && grep -q 'Returns' "$man/man3/uroce.h.3" ||
	bad "uroce.h.3 has no Parameters/Returns sections"
stray=$(find "$man/man3" -name '*.3' ! -name 'uroce*' | head -3)
[ -z "$stray" ] || bad "man3 pages without the uroce prefix installed: $stray"
[ $fail = 0 ] || exit 1
echo "ok: $n man pages installed under $man, each renders without warnings;" \
	"$(find "$man/man3" -name '*.3' | wc -l) in man3"
