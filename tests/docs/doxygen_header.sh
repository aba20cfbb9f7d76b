#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce.h's doc comments: doxygen (docs/Doxyfile, WARN_AS_ERROR) must run
# without a single warning, then every function must have a comment with
# @param for each parameter and @return (doxygen_check.py, on its XML).
#   doxygen_header.sh SRC_ROOT
set -euo pipefail
SRC=${1:?usage: doxygen_header.sh SRC_ROOT}
HERE=$(cd "$(dirname "$0")" && pwd)
command -v doxygen >/dev/null || { echo "SKIP: doxygen not found; scripts/install-deps.sh installs it"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
rc=0
"$SRC/docs/doxygen.sh" "$SRC" "$TMP/out" 2>"$TMP/warnings" || rc=$?
if [ $rc != 0 ] || [ -s "$TMP/warnings" ]; then
	cat "$TMP/warnings"
	echo "FAIL: doxygen exited $rc with $(grep -c . "$TMP/warnings" || true) line(s) of warnings on include/uroce/uroce.h"
	exit 1
fi
echo "ok: doxygen $(doxygen --version): no warnings"
python3 "$HERE/doxygen_check.py" "$SRC/include/uroce/uroce.h" "$TMP/out/xml"
