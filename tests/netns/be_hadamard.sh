#!/bin/bash
# SPDX-License-Identifier: MIT
# be with OptiNIC's Hadamard coding on real AF_XDP through a lossy router:
# A -- M -- B, uroce-impair dropping 1% of RoCEv2 on both of M's ingress
# interfaces. hd_peer (tests/bench/hd_mse.c) sends 40 messages of 1 MiB of
# float32 data encoded with block 256 and stride 256 (the floats of a
# 1024-byte packet: each lost packet is one coefficient of each of 256
# blocks); B's QP decodes them (rel.hd_block: the engine zeroes what never
# arrived, uroce_poll_cq decodes) into a buffer that starts as 0x7f bytes.
# The receiver holds every message to the transform's model (--check:
# re-encoded, each packet is either as sent or zero, the zero ones are
# exactly the bytes the completion says are missing, and the error's
# energy is the lost coefficients'), so the error is bounded as the model
# predicts. Then the loss figures: the share lost near 1%, the NMSE near
# the share lost (an orthonormal transform keeps energy), and the largest
# error a small fraction of the raw run's at the same loss (raw: a lost
# float is off by its whole value; coded: by its block's lost coefficients
# / 16). Bad arguments are refused. No rate is asserted.
#   be_hadamard.sh HD_PEER UROCE_IMPAIR
set -u
. "$(dirname "$0")/../lib/netns.sh"
PEER=${1:?usage: be_hadamard.sh HD_PEER UROCE_IMPAIR}
IMPAIR=${2:?usage: be_hadamard.sh HD_PEER UROCE_IMPAIR}
netns_test uroce-hd

netns_usage_error "--block '12': accepted 0 (raw) or a power of two" "$PEER" --role send --dev afxdp:x --shm "$TMP/x" \
	--floats 1024 --count 1 --block 12
netns_usage_error "--floats '(given)': accepted a multiple of --block x --stride" "$PEER" --role send --dev afxdp:x \
	--shm "$TMP/x" --floats 1024 --count 1 --block 256 --stride 8
netns_usage_error "--check '(given)': accepted with --block" "$PEER" --role recv --dev afxdp:x --shm "$TMP/x" \
	--floats 1024 --count 1 --check

netns_routed 10.77
for dev in m0 m1; do
	ip netns exec "$NM" "$IMPAIR" $dev --drop 0.01 --seed 7 >/dev/null || fail "uroce-impair $dev"
done

# run TAG ARGS...: one transfer, the receiver's result line in $TMP/TAG.res
run() {
	local tag=$1 rpid src rrc
	shift
	local args=(--shm "$TMP/$tag.shm" --floats 262144 --count 40 --timeout-us 300000 --max-sec 60 "$@")
	netns_start "$NB" "$TMP/$tag-recv.log" timeout -k 5 120 "$PEER" --role recv --dev afxdp:b0 "${args[@]}"
	rpid=$NETNS_PID
	ip netns exec "$NA" timeout -k 5 120 "$PEER" --role send --dev afxdp:a0 "${args[@]}" >"$TMP/$tag-send.log" 2>&1
	src=$?
	netns_wait $rpid
	rrc=$?
	[ $src = 0 ] && [ $rrc = 0 ] || {
		tail -5 "$TMP/$tag-send.log" "$TMP/$tag-recv.log"
		fail "$tag: sender exited $src, receiver $rrc"
	}
	grep '^hd_mse result ' "$TMP/$tag-recv.log" >"$TMP/$tag.res" || fail "$tag: no result line"
	cat "$TMP/$tag.res"
}
val() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$TMP/$1.res"; }

run coded --block 256 --stride 256 --check
run raw
[ "$(val coded check_fail)" = 0 ] && [ "$(val coded decoded)" = 40 ] ||
	fail "coded: $(val coded check_fail) messages off the model, $(val coded decoded) of 40 decoded"
echo "ok: every coded message fits the transform's model (lost packets as zeros, error energy = lost energy)"
python3 - "$(val coded lost_frac)" "$(val coded nmse)" "$(val coded max_err_rms)" "$(val raw lost_frac)" \
	"$(val raw nmse)" "$(val raw max_err_rms)" <<'PY' || fail "the loss figures are off (above)"
import sys
cl, cn, cm, rl, rn, rm = map(float, sys.argv[1:])
ok = True
for tag, lost, nmse in (("coded", cl, cn), ("raw", rl, rn)):
    # 1% on each of two hops, of about 41000 data packets: 0.4% .. 3%
    if not 0.004 <= lost <= 0.03:
        print(f"{tag}: {lost:.4%} lost, wanted 0.4% .. 3% at 1% loss"); ok = False
    # what is lost is the lost share of the energy, give or take
    if not 0.5 * lost <= nmse <= 2 * lost:
        print(f"{tag}: nmse {nmse:.3g} against {lost:.3g} lost"); ok = False
if not cm * 5 < rm:
    print(f"largest error: coded {cm:.3g} rms, raw {rm:.3g} rms (wanted coded 5x below raw)"); ok = False
print(f"ok: lost {cl:.3%} / {rl:.3%}, nmse {cn:.3g} / {rn:.3g}, largest error {cm:.3g} / {rm:.3g} rms (coded / raw)")
sys.exit(0 if ok else 1)
PY
echo "be_hadamard: all passed"
