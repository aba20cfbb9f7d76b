# The start the vmlab interop tests share, sourced after they set VMLAB,
# SRV_IP, HOST_IP, IFACE and WORK and define fail:
#   vm_need_root                 not root: "SKIP: ..." and exit 77 (meson's skip)
#   vm_boot_host                 the lab up, guest srv booted at SRV_IP, the
#                                host netns attached (HOSTNS, in_host) and
#                                answering srv's ping
#   vm_console_tail RC           after a failure: the tail of srv's console
#   wait_listening PORT          until a TCP socket listens on PORT in srv
#                                (10 s), read from its socket table: the
#                                servers accept one connection only
#   rxe_counters                 srv's rxe0 hardware counters, "name=value ..."

vm_need_root() {
	[ "$(id -u)" = 0 ] && return 0
	echo "SKIP: needs root (network namespaces, XDP, QEMU)"
	exit 77
}

in_host() { ip netns exec "$HOSTNS" "$@"; }

vm_boot_host() {
	local ok=0
	"$VMLAB" setup
	"$VMLAB" up
	"$VMLAB" boot srv "$SRV_IP"
	touch "$WORK/booted"
	HOSTNS=$("$VMLAB" attach host "$HOST_IP" "$IFACE")
	# The bridge port needs a moment to forward; ARP also fills the
	# host-side neighbour table, though the peer resolves the MAC itself too.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		if in_host ping -c 1 -W 1 "$SRV_IP" >/dev/null 2>&1; then
			ok=1
			break
		fi
	done
	[ $ok = 1 ] || fail "guest $SRV_IP does not answer ping from the host netns"
}

vm_console_tail() {
	if [ "$1" != 0 ] && [ -f "$WORK/booted" ]; then
		echo "--- guest console (tail):" >&2
		"$VMLAB" console srv 2>/dev/null | tail -n 15 >&2 || true
	fi
}

wait_listening() {
	for _ in $(seq 100); do
		"$VMLAB" exec srv --timeout 10 "netstat -ltn | grep -q ':$1 '" && return 0
		sleep 0.1
	done
	return 1
}

rxe_counters() {
	"$VMLAB" exec srv --timeout 10 \
		'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f=$(cat $f)"; done' |
		tr '\n' ' '
}

# vm_put_uroce GUEST BIN...: the host-built programs (sanitizer build) and
# every shared library they need but libc's and libibverbs (the guest's
# rdma-core provides that one, with its rxe provider) go into the guest,
# under /tmp/u; run them there with vm_uroce_env in front. One tarball,
# since vmlab.sh put takes plain names and libstdc++ has a '+'.
vm_put_uroce() {
	local guest=$1 dir=$WORK/uroce-guest so
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	for bin in "$@"; do
		cp "$bin" "$dir/"
		ldd "$bin" | awk '/=>/ { print $3 }' | while read -r so; do
			case "$(basename "$so")" in
			libc.so* | libm.so* | libibverbs.so* | libnl* | ld-linux*) ;;
			*) cp -L "$so" "$dir/" ;;
			esac
		done
	done
	tar cf "$WORK/uroce-guest.tar" -C "$dir" .
	"$VMLAB" put "$guest" "$WORK/uroce-guest.tar" >/dev/null
	"$VMLAB" exec "$guest" --timeout 30 'mkdir -p /tmp/u && tar xf /mnt/host/uroce-guest.tar -C /tmp/u' ||
		fail "cannot unpack uroce's programs in guest $guest"
}
vm_uroce_env='env LD_LIBRARY_PATH=/tmp/u ASAN_OPTIONS=detect_leaks=0'

# wait_listening_in GUEST PORT: as wait_listening, in any guest
wait_listening_in() {
	for _ in $(seq 100); do
		"$VMLAB" exec "$1" --timeout 10 "netstat -ltn | grep -q ':$2 '" && return 0
		sleep 0.1
	done
	return 1
}
