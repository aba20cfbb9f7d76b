#!/bin/bash
# SPDX-License-Identifier: MIT
# The library as users get it: meson install into a DESTDIR, the installed
# liburoce.so checked (SONAME, exports), then tests/install/verbs_example.c
# built twice with `pkg-config --cflags --libs uroce` and nothing else: once
# against liburoce.so, once against liburoce.a (`pkg-config --static`). The
# two builds are the server and the client of one RC connection across a
# veth pair in namespaces this test creates (RDMA WRITE and SEND, verified).
#   install_verbs.sh BUILD_DIR VERBS_EXAMPLE_C [SANITIZER_CFLAGS]
# SANITIZER_CFLAGS: the build's -fsanitize=..., which a program linking a
# library built with sanitizers needs too.
set -euo pipefail
BUILD=${1:?usage: install_verbs.sh BUILD_DIR VERBS_EXAMPLE_C [SANITIZER_CFLAGS]}
SRC=${2:?usage: install_verbs.sh BUILD_DIR VERBS_EXAMPLE_C [SANITIZER_CFLAGS]}
SAN=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/netns.sh"

netns_need_root
netns_test h1-inst
D=$NETNS_TMP/destdir

meson install -C "$BUILD" --destdir "$D" --no-rebuild >"$NETNS_TMP/install.log" 2>&1 ||
	netns_die "meson install --destdir failed"
# (find -print -quit, not | head -n1: under pipefail find's SIGPIPE would
# end the test without a message)
pc=$(find "$D" -name uroce.pc -path '*/pkgconfig/*' -print -quit)
[ -n "$pc" ] || netns_die "meson install put no pkgconfig/uroce.pc under the DESTDIR"
libdir=$(dirname "$(dirname "$pc")")
header=$(find "$D" -path '*/include/uroce/uroce.h' -print -quit)
[ -n "$header" ] || netns_die "no include/uroce/uroce.h under the DESTDIR"
for f in liburoce.so liburoce.so.0 liburoce.a; do
	[ -e "$libdir/$f" ] || netns_die "$libdir/$f not installed"
done
[ "$(readlink "$libdir/liburoce.so.0")" = "$(basename "$(readlink -f "$libdir/liburoce.so")")" ] ||
	netns_die "liburoce.so and liburoce.so.0 point at different files"
"$HERE/check_symbols.sh" "$libdir/liburoce.so.0" "$header" liburoce.so.0 || netns_die "installed liburoce.so"

# pkg-config finds the installed uroce.pc and prefixes its paths with the
# DESTDIR, as a cross build's sysroot would.
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$D
echo "pkg-config --cflags --libs uroce: $(pkg-config --cflags --libs uroce)"
echo "pkg-config --static --libs uroce: $(pkg-config --static --libs uroce)"

# shellcheck disable=SC2046,SC2086 # pkg-config output is a list of words
cc -Wall -Wextra -Werror $SAN -o "$NETNS_TMP/verbs_shared" "$SRC" $(pkg-config --cflags --libs uroce) ||
	netns_die "cannot build verbs_example against liburoce.so"
# The static build: the same install without the shared library, so -luroce
# can only be liburoce.a and its private dependencies come from --static.
S=$NETNS_TMP/static
cp -a "$D" "$S"
rm -f "${libdir/#$D/$S}"/liburoce.so*
# shellcheck disable=SC2046,SC2086
PKG_CONFIG_PATH=$(dirname "${pc/#$D/$S}") PKG_CONFIG_SYSROOT_DIR=$S \
	cc -Wall -Wextra -Werror $SAN -o "$NETNS_TMP/verbs_static" "$SRC" \
	$(PKG_CONFIG_PATH=$(dirname "${pc/#$D/$S}") PKG_CONFIG_SYSROOT_DIR=$S pkg-config --static --cflags --libs uroce) ||
	netns_die "cannot build verbs_example against liburoce.a with pkg-config --static"

export LD_LIBRARY_PATH=$libdir
# The tools' output is captured and grepped, not piped into grep -q: under
# pipefail grep's early exit can kill the writer with SIGPIPE, and a
# negated check (! readelf | grep -q) would then pass whatever it read.
deps=$(ldd "$NETNS_TMP/verbs_shared" 2>&1) || netns_die "ldd verbs_shared failed: $deps"
grep -q "liburoce.so.0 => $libdir/liburoce.so.0" <<<"$deps" ||
	netns_die "verbs_shared does not load the installed liburoce.so.0: $deps"
dyn=$(readelf -d "$NETNS_TMP/verbs_static" 2>&1) || netns_die "readelf -d verbs_static failed: $dyn"
grep -q 'NEEDED' <<<"$dyn" || netns_die "readelf -d verbs_static lists no NEEDED entry (not a dynamic program?): $dyn"
! grep -q 'NEEDED.*liburoce' <<<"$dyn" ||
	netns_die "verbs_static needs liburoce.so; it should have linked liburoce.a"

NA=$NETNS_PREFIX-a NB=$NETNS_PREFIX-b
netns_add "$NA" "$NB"
netns_veth "$NA" h1iva "$NB" h1ivb --ip-a 10.93.0.1/24 --ip-b 10.93.0.2/24
mkdir "$NETNS_TMP/exchange"
netns_start "$NB" "$NETNS_TMP/server.log" timeout 60 "$NETNS_TMP/verbs_shared" server h1ivb "$NETNS_TMP/exchange"
srv=$NETNS_PID
netns_start "$NA" "$NETNS_TMP/client.log" timeout 60 "$NETNS_TMP/verbs_static" client h1iva "$NETNS_TMP/exchange"
cli=$NETNS_PID
rc=0
netns_wait "$cli" || rc=$?
[ $rc = 0 ] || netns_die "client (liburoce.a build) exited $rc"
netns_wait "$srv" || rc=$?
[ $rc = 0 ] || netns_die "server (liburoce.so build) exited $rc"
grep -q 'WRITE of 20000 bytes and SEND of 3000 bytes verified' "$NETNS_TMP/server.log" ||
	netns_die "the server did not verify the data"
grep -q 'torn down cleanly' "$NETNS_TMP/client.log" && grep -q 'torn down cleanly' "$NETNS_TMP/server.log" ||
	netns_die "teardown did not finish"
cat "$NETNS_TMP/client.log" "$NETNS_TMP/server.log"
echo "PASS"
