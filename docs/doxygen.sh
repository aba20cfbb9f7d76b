#!/bin/sh
# SPDX-License-Identifier: MIT
# Run doxygen on docs/Doxyfile from the source root, its output in OUT
# (man/man3 and xml). Warnings go to stderr. In the test (no STAMP) any
# warning fails the run (the Doxyfile's WARN_AS_ERROR); the build (with
# STAMP, the custom target's output) only prints them, so a doc comment
# fails its test, not everyone's build.
#   doxygen.sh SRC_ROOT OUT [STAMP]
set -eu
src=$1 out=$2 stamp=${3:-}
mkdir -p "$out"
# absolute: the paths meson gives are relative to the build dir
out=$(cd "$out" && pwd)
[ -z "$stamp" ] || stamp=$(cd "$(dirname "$stamp")" && pwd)/$(basename "$stamp")
rm -rf "$out/man" "$out/xml"
cd "$src"
{
	cat docs/Doxyfile
	echo "OUTPUT_DIRECTORY = $out"
	[ -z "$stamp" ] || echo "WARN_AS_ERROR = NO"
} | doxygen -
[ -z "$stamp" ] || touch "$stamp"
