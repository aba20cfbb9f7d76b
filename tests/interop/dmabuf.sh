#!/bin/bash
# SPDX-License-Identifier: MIT
# dmabuf registration, on a guest whose kernel has /dev/udmabuf (Debian's
# 6.12; the lab's default 6.1 has none): uroce-pingpong --dmabuf takes its
# buffer from a udmabuf and registers it with uroce_mr_reg_dmabuf, against
# uroce-pingpong on the host's AF_XDP port, data checked (-c):
#   afxdp  the guest on afxdp:eth0: the dmabuf is mapped and the engine
#          copies through it; both roles;
#   verbs  the guest on verbs:rxe0: rxe has no dmabuf MRs, so the
#          registration fails with EOPNOTSUPP and a message saying what is
#          accepted, and the tool falls back to the udmabuf's pages as host
#          memory (as NCCL does), and the run completes.
# The guests of this test have their own cache (kernel and initramfs).
#
#   dmabuf.sh VMLAB_SH UROCE_PINGPONG_BIN
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
[ $# -ge 2 ] || { echo "usage: $0 VMLAB_SH UROCE_PINGPONG_BIN" >&2; exit 2; }
VMLAB=$1 PP=$2
[ -x "$PP" ] || { echo "FAIL: $PP not found" >&2; exit 1; }
command -v ping >/dev/null || { echo "FAIL: ping not found (apt-get install iputils-ping)" >&2; exit 1; }

vm_use_612
vm_lab_vars uvdma uvp0 dmabuf
N=200
SIZE=16384

vm_case_traps

vm_boot_host
"$VMLAB" exec srv --timeout 10 '[ -c /dev/udmabuf ] && uname -r' || fail "the guest has no /dev/udmabuf"
vm_put_uroce srv "$PP"
G="$vm_uroce_env /tmp/u/uroce-pingpong rc -g 1 -n $N -s $SIZE -c --dmabuf"
H="$PP rc -d afxdp:$IFACE -g 1 -n $N -s $SIZE -c"

CASE="afxdp: a udmabuf on the guest's AF_XDP port, guest serves"
vm_guest_serves "$G -d afxdp:eth0" "$H" "$N iters in" "dmabuf: $SIZE bytes of a udmabuf, mapped: the engine copies through it"
CASE="afxdp: a udmabuf on the guest's AF_XDP port, host serves"
vm_host_serves "$H" "$G -d afxdp:eth0" "$N iters in" "dmabuf: $SIZE bytes of a udmabuf, mapped: the engine copies through it"
CASE="verbs: rxe has no dmabuf MRs: the message, then host memory"
vm_guest_serves "$G -d verbs:rxe0" "$H" "$N iters in" "RDMA device 'rxe0' has no dmabuf memory regions \(ibv_reg_dmabuf_mr: EOPNOTSUPP\); accepted" \
	"registering the udmabuf's pages as host memory instead"

echo "dmabuf: $PASSED cases passed"
