# SPDX-License-Identifier: MIT
# The start the vmlab interop tests share. They source it, set VMLAB, then
# SRV_IP, HOST_IP, IFACE and WORK (themselves or with vm_lab_vars), and
# define fail (or call vm_case_traps):
#   vm_lab_vars PREFIX IFACE TAG the lab's names: UROCE_VMLAB_LAB (PREFIX and
#                                the script's pid), SUBNET, SRV_IP (.11),
#                                CLI_IP (.12), HOST_IP (.2), IFACE, WORK (a new
#                                /tmp/uroce-TAG.XXXXXX), HOSTNS, CASE, PASSED
#   vm_need_root                 not root: "SKIP: ..." and exit 77 (meson's skip)
#   vm_boot_host                 the lab up, guest srv booted at SRV_IP, the
#                                host netns attached (HOSTNS, in_host) and
#                                answering srv's ping
#   vm_console_tail RC           after a failure: the tail of srv's console
#   wait_listening PORT          until a TCP socket listens on PORT in srv
#                                (10 s), read from its socket table: the
#                                servers accept one connection only
#   rxe_counters                 srv's rxe0 hardware counters, "name=value ..."

vm_lab_vars() {
	export UROCE_VMLAB_LAB=$1$$
	SUBNET=${UROCE_VMLAB_SUBNET:-10.47.0}
	SRV_IP=$SUBNET.11
	CLI_IP=$SUBNET.12
	HOST_IP=$SUBNET.2
	IFACE=$2
	WORK=$(mktemp -d "/tmp/uroce-$3.XXXXXX")
	HOSTNS=
	CASE=
	PASSED=0
}

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

wait_listening() { wait_listening_in srv "$1"; }

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

# vm_case_traps [FIRST [KEEP]]: the fail and cleanup of a script of
# cases. fail says "FAIL: CASE: why" (CASE: the case running, if any) and
# exits 1; at exit FIRST RC (the script's own processes stopped), the guest
# console's tail after a failure, the lab down, KEEP RC (what a failure
# leaves for a look, copied out of WORK), WORK removed.
vm_case_traps() {
	VM_TRAP_FIRST=${1:-}
	VM_TRAP_KEEP=${2:-}
	fail() {
		echo "FAIL: ${CASE:+$CASE: }$*" >&2
		exit 1
	}
	cleanup() {
		local rc=$?
		[ -z "$VM_TRAP_FIRST" ] || "$VM_TRAP_FIRST" $rc
		vm_console_tail $rc
		"$VMLAB" down >/dev/null 2>&1 || true
		[ -z "$VM_TRAP_KEEP" ] || "$VM_TRAP_KEEP" $rc
		rm -rf "$WORK"
		exit $rc
	}
	trap cleanup EXIT
	trap 'exit 130' INT TERM
}

# vm_guest_serves GUEST_CMD HOST_CMD PATTERN...: GUEST_CMD serves in guest
# srv (TCP 18515), HOST_CMD (given srv's address last) is its client in
# the host netns. vm_host_serves HOST_CMD GUEST_CMD PATTERN...: the other
# way round (GUEST_CMD given HOST_IP). Both ends must exit 0; the first
# PATTERN (egrep) must be in both outputs, the others in the guest's.
# Outputs in $WORK/guest.out and $WORK/host.out; PASSED counts the case.
vm_guest_serves() {
	local gcmd=$1 hcmd=$2 job hrc=0 grc=0
	shift 2
	echo "=== $CASE"
	job=$("$VMLAB" start srv "$gcmd")
	wait_listening 18515 || fail "guest never listened: $("$VMLAB" output srv "$job")"
	# shellcheck disable=SC2086
	in_host timeout 120 $hcmd "$SRV_IP" >"$WORK/host.out" 2>&1 || hrc=$?
	"$VMLAB" wait srv "$job" --timeout 60 >"$WORK/guest.out" 2>&1 || grc=$?
	vm_pair_check $hrc $grc "$@"
}

vm_host_serves() {
	local hcmd=$1 gcmd=$2 hpid hrc=0 grc=0
	shift 2
	echo "=== $CASE"
	# shellcheck disable=SC2086
	in_host timeout 120 $hcmd >"$WORK/host.out" 2>&1 &
	hpid=$!
	for _ in $(seq 100); do
		in_host ss -ltn 2>/dev/null | grep -q ':18515 ' && break
		sleep 0.1
	done
	"$VMLAB" exec srv --timeout 120 "$gcmd $HOST_IP" >"$WORK/guest.out" 2>&1 || grc=$?
	wait $hpid || hrc=$?
	vm_pair_check $hrc $grc "$@"
}

vm_pair_check() {
	local hrc=$1 grc=$2 first=$3
	shift 2
	sed 's/^/  guest: /' "$WORK/guest.out"
	sed 's/^/  host: /' "$WORK/host.out"
	[ "$hrc" = 0 ] && [ "$grc" = 0 ] || fail "host exit $hrc, guest exit $grc"
	grep -Eq "$first" "$WORK/host.out" || fail "host output lacks /$first/"
	for pat in "$@"; do
		grep -Eq "$pat" "$WORK/guest.out" || fail "guest output lacks /$pat/"
	done
	PASSED=$((PASSED + 1))
}

# vm_use_612: the newest 6.12 kernel of the Debian release (bookworm ships
# it beside 6.1) in a cache of its own (UROCE_VMLAB_DMABUF_CACHE, shared
# by the tests that boot it); a cache pinned to an older 6.12 starts afresh.
vm_use_612() {
	local kpkg
	kpkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9.]+\+deb[0-9]+-amd64$' 2>/dev/null |
		awk '{ print $1 }' | sort -V | tail -1)
	[ -n "$kpkg" ] || { echo "FAIL: no linux-image-6.12.*-amd64 package in apt's lists (apt-get update)" >&2; exit 1; }
	export UROCE_VMLAB_CACHE=${UROCE_VMLAB_DMABUF_CACHE:-/var/cache/uroce-vmlab-dmabuf}
	if [ -s "$UROCE_VMLAB_CACHE/kpkg" ] && [ "$(cat "$UROCE_VMLAB_CACHE/kpkg")" != "$kpkg" ]; then
		rm -f "$UROCE_VMLAB_CACHE/kpkg"
		rm -rf "$UROCE_VMLAB_CACHE/kernel"
	fi
	export UROCE_VMLAB_KPKG=$kpkg
}

# vm_boot_pair SMP QUEUES MTU BIN...: the lab set up, guests srv (SRV_IP)
# and cli (CLI_IP) booted with SMP vCPUs, QUEUES queue pairs and eth0 at
# MTU (boot's profile line on stderr), and BIN... put into both
vm_boot_pair() {
	local smp=$1 queues=$2 mtu=$3 g
	shift 3
	"$VMLAB" setup
	"$VMLAB" up
	for g in "srv $SRV_IP" "cli $CLI_IP"; do
		# shellcheck disable=SC2086
		"$VMLAB" boot --smp "$smp" --queues "$queues" --mtu "$mtu" $g 2>&1 | tail -1 >&2
	done
	touch "$WORK/booted"
	for g in srv cli; do vm_put_uroce "$g" "$@"; done
}
