#!/bin/bash
# The main demo: install what is needed, build uroce, then move RoCEv2
# traffic between two network namespaces over a veth pair with a uroce
# AF_XDP port on each end, and print what arrived: rates, ICRC-checked
# frames, drops by reason. Run as root.
#
#   sudo scripts/demo.sh [--size BYTES] [--duration SEC]
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=1024
DURATION=3
while [ $# -gt 0 ]; do
	case "$1" in
	--size) SIZE=$2; shift 2 ;;
	--duration) DURATION=$2; shift 2 ;;
	-h|--help) sed -n '2,8p' "$0"; exit 0 ;;
	*) echo "demo: unknown option $1 (accepted: --size BYTES, --duration SEC)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "demo: must run as root (namespaces, XDP)" >&2; exit 2; }

./scripts/install-deps.sh >/dev/null
BUILD=build-demo
[ -d "$BUILD" ] || meson setup "$BUILD" -Dbuildtype=release >/dev/null
ninja -C "$BUILD" apps/uroce-perf apps/uroce-pcap >/dev/null

NA=uroce-demo-a-$$ NB=uroce-demo-b-$$
RPID=
cleanup() {
	[ -n "$RPID" ] && kill "$RPID" 2>/dev/null || true
	ip netns del "$NA" 2>/dev/null || true
	ip netns del "$NB" 2>/dev/null || true
}
trap cleanup EXIT

mtu=$(( SIZE + 100 < 1500 ? 1500 : SIZE + 100 ))
ip netns add "$NA"
ip netns add "$NB"
ip link add va netns "$NA" type veth peer name vb netns "$NB"
ip -n "$NA" addr add 10.98.0.1/24 dev va
ip -n "$NB" addr add 10.98.0.2/24 dev vb
ip -n "$NA" link set va mtu $mtu up
ip -n "$NB" link set vb mtu $mtu up
ip -n "$NA" link set lo up
ip -n "$NB" link set lo up

echo "== uroce demo: namespace $NA (va, 10.98.0.1) -> namespace $NB (vb, 10.98.0.2), veth, AF_XDP on both ends"
out=$(mktemp)
# The receiver also dumps its first frames to a pcap, decoded by uroce-pcap below.
ip netns exec "$NB" "$BUILD/apps/uroce-perf" raw recv --port afxdp:vb --duration $((DURATION + 20)) \
	--pcap "$out.pcap" --pcap-count 4 >"$out" 2>"$out.err" &
RPID=$!
for _ in $(seq 100); do grep -q receiving "$out.err" && break; sleep 0.05; done
ip netns exec "$NA" "$BUILD/apps/uroce-perf" raw send --port afxdp:va --dst-ip 10.98.0.2 \
	--size "$SIZE" --duration "$DURATION"
wait "$RPID" || true
RPID=
cat "$out"
if [ -s "$out.pcap" ]; then
	echo "== the first frames the receiver got, decoded by uroce-pcap:"
	"$BUILD/apps/uroce-pcap" "$out.pcap" || true
fi
rm -f "$out" "$out.err" "$out.pcap"
