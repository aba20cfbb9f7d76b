#!/bin/sh
# SPDX-License-Identifier: MIT
# meson install: the header's man3 pages that Doxygen made, the header's
# own (uroce.h.3) and one per uroce_* function, struct and enum (the
# functions' are .so links to uroce.h.3). Doxygen also writes a page per
# struct field and enum value (addr.3, UROCE_MTU_1024.3): those would
# crowd man3 with generic names, so they stay out.
#   install_man3.sh DOXYGEN_MAN3_DIR MANDIR
set -eu
from=$1 to=${DESTDIR:-}$2/man3
[ -f "$from/uroce.h.3" ] || { echo "install_man3: no $from/uroce.h.3 (was doxygen run?)" >&2; exit 1; }
mkdir -p "$to"
for f in "$from"/uroce.h.3 "$from"/uroce_*.3; do
	install -m 0644 "$f" "$to/"
done
echo "Installing man3 pages from $from to $to"
