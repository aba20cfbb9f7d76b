#!/bin/bash
# SPDX-License-Identifier: MIT
# liburoce.so's ABI surface: SONAME liburoce.so.MAJOR, and its exported
# symbols exactly the uroce_* functions declared in uroce.h (none missing,
# no internal one leaking). Usage: check_symbols.sh LIBUROCE_SO UROCE_H SONAME
set -euo pipefail
lib=$1 header=$2 want_soname=$3

fail=0
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
if [ "$soname" != "$want_soname" ]; then
	echo "FAIL: $lib has SONAME '$soname', expected '$want_soname'"
	fail=1
fi

# Functions the header declares: identifiers followed by '(' once the
# preprocessor has removed comments.
# A static inline function (uroce_inc_rkey) lives in the header and in
# every program that includes it: it is no export.
pre=$(cc -E -P -x c "$header")
inline=$(grep -oE 'static inline [^(;]*\buroce_[A-Za-z0-9_]+[[:space:]]*\(' <<<"$pre" |
	grep -oE '\buroce_[A-Za-z0-9_]+[[:space:]]*\($' | sed 's/[[:space:]]*(//' | sort -u)
declared=$(grep -oE '\buroce_[A-Za-z0-9_]+[[:space:]]*\(' <<<"$pre" | sed 's/[[:space:]]*(//' | sort -u |
	comm -23 - <(echo "$inline"))
# Defined dynamic symbols, version suffix stripped; the version node itself
# is an absolute symbol (type A), not code.
exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)

[ -n "$declared" ] || { echo "FAIL: no uroce_* function found in $header"; exit 1; }
leaked=$(comm -13 <(echo "$declared") <(echo "$exported"))
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$leaked" ]; then
	echo "FAIL: exported but not declared in uroce.h (hide them, or declare them):"
	echo "$leaked" | sed 's/^/  /'
	fail=1
fi
if [ -n "$missing" ]; then
	echo "FAIL: declared in uroce.h but not exported (add them to uroce.map):"
	echo "$missing" | sed 's/^/  /'
	fail=1
fi
[ $fail = 0 ] || exit 1
echo "ok: SONAME $soname, $(echo "$exported" | wc -l) exported symbols, all uroce_* and all declared in uroce.h"
