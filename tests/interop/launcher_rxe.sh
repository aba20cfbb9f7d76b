#!/bin/bash
# SPDX-License-Identifier: MIT
# The launcher against perftest on a real RoCE stack: a vmlab guest runs
# perftest's `ib_write_bw -d rxe0 -x 1` (the kernel's rdma_rxe) as the
# server; the launcher, on a uroce AF_XDP port in a host-side netns, runs a
# script: create qp rc, connect (perftest's exchange), start, stop. stop
# ends with perftest's closing exchange, so ib_write_bw prints its table
# row for the launcher's run and exits 0; the launcher reports no error and
# every message completed. No rate is asserted.
#
#   launcher_rxe.sh VMLAB_SH UROCE
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
[ $# -ge 2 ] || { echo "usage: $0 VMLAB_SH UROCE" >&2; exit 2; }
VMLAB=$1 LAUNCHER=$2
[ -x "$LAUNCHER" ] || { echo "FAIL: $LAUNCHER not found" >&2; exit 1; }

export UROCE_VMLAB_LAB=uvln$$
SUBNET=${UROCE_VMLAB_SUBNET:-10.47.0}
export UROCE_VMLAB_SUBNET=$SUBNET
SRV_IP=$SUBNET.11
HOST_IP=$SUBNET.2
IFACE=uvl0
WORK=$(mktemp -d /tmp/uroce-lnrxe.XXXXXX)
HOSTNS=
vm_case_traps

vm_boot_host

job=$("$VMLAB" start srv "ib_write_bw -d rxe0 -x 1 -F -s 65536")
wait_listening 18515 || fail "ib_write_bw never listened: $("$VMLAB" output srv "$job")"
cat >"$WORK/a.txt" <<EOF
create qp rc port 0
set traffic write size 65536 depth 16 verify off
connect qp 0 $SRV_IP timeout 30
start
sleep 2
stop
show qp 0
quit
EOF
rc=0
in_host env HOME="$WORK" timeout 120 "$LAUNCHER" -l 1 -p "afxdp:$IFACE" --cmdline-file "$WORK/a.txt" \
	--no-interactive --json >"$WORK/launcher.out" 2>&1 || rc=$?
sed 's/^/  uroce: /' "$WORK/launcher.out"
[ $rc = 0 ] || fail "the launcher exited $rc"
srv_rc=0
"$VMLAB" wait srv "$job" --timeout 60 >"$WORK/srv.out" 2>&1 || srv_rc=$?
sed 's/^/  ib_write_bw: /' "$WORK/srv.out"
[ $srv_rc = 0 ] || fail "ib_write_bw exited $srv_rc"
grep -Eq "^ 65536 +[1-9][0-9]* +[0-9.]+ +[0-9.]+" "$WORK/srv.out" || fail "ib_write_bw printed no row for the run"
python3 - "$WORK/launcher.out" <<'PY' || fail "the launcher's stop event is wrong"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"event":"stop"')]
assert len(ev) == 1, ev
e = ev[0]
assert e["errors"] == 0 and e["completed"] > 0 and e["completed"] == e["posted"] and e["in_flight_left"] == 0, e
print("  stop: %d writes of 64 KiB completed, %.1f MB/s" % (e["completed"], e["MBps"]))
PY
echo "PASS: the launcher ran perftest's exchange and ending against ib_write_bw on rdma_rxe"
