#!/bin/bash
# SPDX-License-Identifier: MIT
# vmlab: the project's Soft-RoCE lab. Small QEMU guests running Debian's
# kernel with rdma_rxe, on a bridge inside a private network namespace, with
# host-side peers, captures and a command channel into the guests.
#
# Usage: vmlab.sh COMMAND [ARGS]      (root; `vmlab.sh help` for the list)
#
# Everything downloaded or built lives in $UROCE_VMLAB_CACHE (default
# /var/cache/uroce-vmlab), never in the source tree. One "lab" is one network
# namespace plus its run directory; several labs can exist side by side,
# named by UROCE_VMLAB_LAB.
set -euo pipefail

CACHE=${UROCE_VMLAB_CACHE:-/var/cache/uroce-vmlab}
LAB=${UROCE_VMLAB_LAB:-uvlab}
SUBNET=${UROCE_VMLAB_SUBNET:-10.47.0}          # a /24, private to the lab netns
SUBNET2=${UROCE_VMLAB_SUBNET2:-10.47.1}        # a second /24, for the guests' optional eth1
ACCEL=${UROCE_VMLAB_ACCEL:-auto}               # auto | tcg | kvm
GUEST_MEM=${UROCE_VMLAB_MEM:-384}              # MiB
BOOT_TIMEOUT=${UROCE_VMLAB_BOOT_TIMEOUT:-120}  # s, QEMU start to READY
JOB_TIMEOUT=${UROCE_VMLAB_JOB_TIMEOUT:-300}    # s, default bound of exec/wait

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUN=$CACHE/run/$LAB
NETNS=$LAB
BRIDGE=br0
BRIDGE2=br1
ARCH=x86_64-linux-gnu

die() { echo "vmlab: $*" >&2; exit 1; }
log() { echo "vmlab: $*" >&2; }
in_ns() { ip netns exec "$NETNS" "$@"; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (network namespaces, taps, QEMU)"; }

check_lab_name() {
	[[ $LAB =~ ^[a-z][a-z0-9-]{0,23}$ ]] ||
		die "UROCE_VMLAB_LAB='$LAB': use 1-24 chars of a-z, 0-9, '-', starting with a letter"
}

# Guest and peer names end up in interface names (15 chars max with a
# 3-char prefix), so they are short.
check_name() {
	[[ $1 =~ ^[a-z][a-z0-9]{0,11}$ ]] ||
		die "name '$1': use 1-12 chars of a-z and 0-9, starting with a letter"
}

# "A.B.C.D" inside the /24 SUBNET ($2, set by variable $3), not .0, .1 (the
# bridge) or .255.
check_ip_in() {
	local ip=$1 subnet=$2 var=$3 last
	[[ $ip =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ ]] || die "address '$ip': expected dotted IPv4, e.g. $subnet.11"
	[ "${ip%.*}" = "$subnet" ] || die "address '$ip' is outside the lab subnet $subnet.0/24 ($var)"
	last=${ip##*.}
	[ "$last" -ge 2 ] && [ "$last" -le 254 ] || die "address '$ip': last octet must be 2..254 ($subnet.1 is the bridge)"
}
check_ip() { check_ip_in "$1" "$SUBNET" UROCE_VMLAB_SUBNET; }
check_ip2() { check_ip_in "$1" "$SUBNET2" UROCE_VMLAB_SUBNET2; }

# Deterministic MAC from the address, so captures are reproducible.
mac_for() {
	local IFS=.
	# shellcheck disable=SC2086
	set -- $1
	printf '52:54:00:%02x:%02x:%02x' "$2" "$3" "$4"
}

lab_exists() { [ -e "/run/netns/$NETNS" ]; }
need_lab() { lab_exists || die "lab '$LAB' is not up (vmlab.sh up)"; }
need_setup() {
	[ -f "$CACHE/vmlinuz" ] && [ -f "$CACHE/initramfs.cpio" ] || die "no guest image in $CACHE (vmlab.sh setup)"
}

# Wait up to $2 seconds (tenths allowed) for command $1 to succeed.
wait_for() {
	local tries
	tries=$(awk -v s="$2" 'BEGIN { printf "%d", s * 10 }')
	while ! eval "$1"; do
		tries=$((tries - 1))
		[ $tries -gt 0 ] || return 1
		sleep 0.1
	done
}

# Kill a process we started, by the pid recorded for it, but only if that
# pid still runs the program we started ($2): a recycled pid is left alone.
kill_pidfile() {
	local pidfile=$1 comm=$2 pid
	[ -f "$pidfile" ] || return 0
	pid=$(cat "$pidfile")
	if [[ $pid =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] &&
		tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$comm"; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
}

# ------------------------------------------------------------------ setup
HOST_PKGS="qemu-system-x86 busybox-static cpio kmod iproute2 tcpdump xz-utils"
# What the guest runs; the libraries they need are found by closure below.
GUEST_TOP="busybox-static ibverbs-utils ibverbs-providers perftest iproute2 ethtool"
MODULES="virtio_pci virtio_net rdma_rxe 9pnet_virtio 9p 8021q crc32_generic crc32-pclmul"

host_install() {
	local missing="" p
	for p in $HOST_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done
	[ -n "$missing" ] || return 0
	[ -z "${UROCE_VMLAB_NO_APT:-}" ] || die "missing host packages:$missing (UROCE_VMLAB_NO_APT is set)"
	log "apt-get install$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >&2 ||
		die "apt-get install$missing failed (run apt-get update first?)"
}

# Download a package's .deb into $CACHE/debs unless a version is there.
fetch_debs() {
	local need="" p
	for p in "$@"; do
		ls "$CACHE/debs/${p}_"*.deb >/dev/null 2>&1 || need="$need $p"
	done
	[ -n "$need" ] || return 0
	log "apt-get download$need"
	(cd "$CACHE/debs" && apt-get download $need 2>&1 | grep -v 'unsandboxed' >&2) || true
	for p in $need; do
		ls "$CACHE/debs/${p}_"*.deb >/dev/null 2>&1 || die "apt-get download $p failed (apt-get update?)"
	done
}

deb_of() { ls "$CACHE/debs/${1}_"*.deb | head -1; }

cmd_setup() {
	local force=0
	[ "${1:-}" != --force ] || force=1
	need_root
	host_install
	mkdir -p "$CACHE/debs"
	# Labs and tests may run setup at the same time; one builds, the others
	# wait for it (bounded) and then find everything in place.
	exec 9>"$CACHE/.setup.lock"
	flock -w 600 9 || die "another setup held $CACHE/.setup.lock for 10 minutes"
	if [ $force = 1 ]; then
		rm -rf "$CACHE/debs" "$CACHE/kernel" "$CACHE/root" "$CACHE/kpkg" "$CACHE/initramfs.key"
		mkdir -p "$CACHE/debs"
	fi

	# The kernel is whatever linux-image-amd64 points at when the cache is
	# first filled (or UROCE_VMLAB_KPKG, a kernel package of its own); it
	# stays pinned until --force.
	if [ ! -s "$CACHE/kpkg" ]; then
		local kpkg=${UROCE_VMLAB_KPKG:-}
		[ -n "$kpkg" ] ||
			kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
		[ -n "$kpkg" ] || die "cannot resolve linux-image-amd64 (run apt-get update)"
		echo "$kpkg" >"$CACHE/kpkg"
	fi
	[ -z "${UROCE_VMLAB_KPKG:-}" ] || [ "$(cat "$CACHE/kpkg")" = "$UROCE_VMLAB_KPKG" ] ||
		die "$CACHE holds kernel $(cat "$CACHE/kpkg"), not UROCE_VMLAB_KPKG=$UROCE_VMLAB_KPKG (setup --force, or another UROCE_VMLAB_CACHE)"
	local KPKG KVER
	KPKG=$(cat "$CACHE/kpkg")
	KVER=${KPKG#linux-image-}

	# Guest packages: the tools plus their whole dependency closure; only
	# the files the loader check below finds needed go into the initramfs.
	# the closure is computed again when the top list changes
	[ "$(cat "$CACHE/guest-top" 2>/dev/null)" = "$GUEST_TOP" ] || rm -f "$CACHE/guest-pkgs" "$CACHE/root/.complete"
	if [ ! -s "$CACHE/guest-pkgs" ]; then
		apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
			--no-replaces --no-enhances $GUEST_TOP 2>/dev/null |
			awk '/^[a-z0-9]/ { print $1 }' |
			sort -u >"$CACHE/guest-pkgs.tmp"
		grep -qx libibverbs1 "$CACHE/guest-pkgs.tmp" || die "dependency closure of $GUEST_TOP looks wrong (apt-get update?)"
		mv "$CACHE/guest-pkgs.tmp" "$CACHE/guest-pkgs"
		echo "$GUEST_TOP" >"$CACHE/guest-top"
	fi
	local pkgs
	mapfile -t pkgs <"$CACHE/guest-pkgs"
	fetch_debs "$KPKG" "${pkgs[@]}"

	if [ ! -f "$CACHE/kernel/lib/modules/$KVER/modules.dep" ]; then
		log "extracting $KPKG"
		rm -rf "$CACHE/kernel"
		mkdir -p "$CACHE/kernel"
		dpkg-deb -x "$(deb_of "$KPKG")" "$CACHE/kernel"
		depmod -b "$CACHE/kernel" "$KVER"
	fi
	if [ ! -f "$CACHE/root/.complete" ]; then
		log "extracting guest packages"
		rm -rf "$CACHE/root"
		mkdir -p "$CACHE/root"
		local p
		for p in $(cat "$CACHE/guest-pkgs"); do
			dpkg-deb -x "$(deb_of "$p")" "$CACHE/root"
		done
		touch "$CACHE/root/.complete"
	fi

	# Rebuild the initramfs only when an input changed.
	local key
	key=$( (echo "$KPKG $MODULES"; cat "$CACHE/guest-pkgs"; cat "$HERE/guest/init"; sed -n '/^build_initramfs()/,/^}/p' "$0") | md5sum | cut -d' ' -f1)
	if [ "$(cat "$CACHE/initramfs.key" 2>/dev/null)" != "$key" ] || [ ! -f "$CACHE/initramfs.cpio" ]; then
		build_initramfs "$KVER"
		echo "$key" >"$CACHE/initramfs.key"
	fi
	cp -f "$CACHE/kernel/boot/vmlinuz-$KVER" "$CACHE/vmlinuz.tmp"
	mv "$CACHE/vmlinuz.tmp" "$CACHE/vmlinuz"
	write_versions "$KPKG"
	log "ready: kernel $KVER, initramfs $(du -h "$CACHE/initramfs.cpio" | cut -f1) in $CACHE"
}

build_initramfs() {
	local KVER=$1 SRC=$CACHE/root ST=$CACHE/initramfs
	local MD=$CACHE/kernel/lib/modules/$KVER
	log "building initramfs"
	rm -rf "$ST"
	mkdir -p "$ST"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,root,mnt/host,etc/uvl,lib64}

	cp "$SRC/bin/busybox" "$ST/bin/busybox"
	local a
	for a in $("$ST/bin/busybox" --list-full); do
		[ -e "$ST/$a" ] || ln -s /bin/busybox "$ST/$a"
	done

	local m f rel
	: >"$ST/etc/uvl/modules"
	for m in $MODULES; do
		modprobe -d "$CACHE/kernel" -S "$KVER" --show-depends "$m" ||
			die "module $m not in $KVER"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r f; do
		rel=${f#"$MD"/}
		mkdir -p "$ST/lib/modules/$KVER/$(dirname "$rel")"
		case $rel in
		*.ko.xz) # newer kernels ship compressed modules; busybox insmod takes plain ones
			rel=${rel%.xz}
			xz -dc "$f" >"$ST/lib/modules/$KVER/$rel" ;;
		*) cp "$f" "$ST/lib/modules/$KVER/$rel" ;;
		esac
		echo "$rel" >>"$ST/etc/uvl/modules"
	done
	echo "$KVER" >"$ST/etc/uvl/kver"

	# Programs: every ELF executable of the RDMA tool packages, plus rdma
	# and ip from iproute2 (busybox's ip lacks what RDMA debugging needs).
	local bins="" pkg path
	for pkg in ibverbs-utils perftest; do
		for path in $(dpkg-deb -c "$(deb_of "$pkg")" | awk '{ print $NF }' | sed -n 's|^\./usr/bin/|usr/bin/|p'); do
			[ -f "$SRC/$path" ] && head -c 4 "$SRC/$path" | grep -q ELF && bins="$bins $path"
		done
	done
	for path in bin/ip usr/bin/rdma sbin/ethtool; do
		[ -f "$SRC/$path" ] || die "$path missing from the iproute2 package"
		bins="$bins $path"
	done
	local provider
	provider=$(cd "$SRC" && ls usr/lib/$ARCH/libibverbs/librxe-*.so | head -1)
	[ -n "$provider" ] || die "rxe provider missing from ibverbs-providers"

	local loader=lib/$ARCH/ld-linux-x86-64.so.2 libpath=$SRC/lib/$ARCH:$SRC/usr/lib/$ARCH
	local libs="" out b
	# rm first: the destination may be a busybox applet link to /bin/busybox,
	# and cp would write through it to the host's busybox.
	copy_in() { mkdir -p "$ST/$(dirname "$1")" && rm -f "$ST/$1" && cp -L "$SRC/$1" "$ST/$1"; }
	for b in $bins $provider; do
		copy_in "$b"
		out=$("$SRC/$loader" --library-path "$libpath" --list "$SRC/$b" 2>&1) || die "cannot resolve libraries of $b: $out"
		! grep -q 'not found' <<<"$out" || die "library missing for $b: $(grep 'not found' <<<"$out")"
		libs="$libs $(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$out")"
		# The loader falls back to the host's directories; the guest must not.
		! grep -F ' => /' <<<"$out" | grep -vqF " => $SRC/" ||
			die "$b needs a library that only the host has: $(grep -F ' => /' <<<"$out" | grep -vF " => $SRC/" | head -1)"
	done
	local l
	for l in $(tr ' ' '\n' <<<"$libs" | sort -u); do
		copy_in "${l#"$SRC"/}"
	done
	copy_in "$loader"
	ln -sf "/$loader" "$ST/lib64/ld-linux-x86-64.so.2"
	# busybox sh runs its own applets before searching PATH, so iproute2's
	# ip gets a place of its own: call it as /usr/sbin/ip in the guest.
	mv -f "$ST/bin/ip" "$ST/usr/sbin/ip"

	# Only the rxe provider: the others would only print warnings.
	mkdir -p "$ST/etc/libibverbs.d"
	cp "$SRC/etc/libibverbs.d/rxe.driver" "$ST/etc/libibverbs.d/"
	printf '/lib/%s\n/usr/lib/%s\n' "$ARCH" "$ARCH" >"$ST/etc/ld.so.conf"
	ldconfig -r "$ST"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$ST/etc/passwd"
	echo 'root:x:0:' >"$ST/etc/group"
	echo '127.0.0.1 localhost' >"$ST/etc/hosts"
	install -m 0755 "$HERE/guest/init" "$ST/init"

	# Uncompressed: a TCG guest would spend seconds decompressing.
	(cd "$ST" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$CACHE/initramfs.cpio.tmp"
	mv "$CACHE/initramfs.cpio.tmp" "$CACHE/initramfs.cpio"
}

write_versions() {
	local p v
	{
		echo "kernel $(cat "$CACHE/kpkg") $(dpkg-deb -f "$(deb_of "$1")" Version)"
		for p in rdma-core ibverbs-utils ibverbs-providers libibverbs1 perftest iproute2 busybox-static; do
			[ -n "$(ls "$CACHE/debs/${p}_"*.deb 2>/dev/null)" ] || continue
			v=$(dpkg-deb -f "$(deb_of "$p")" Version)
			echo "$p $v"
		done
		echo "qemu $(qemu-system-x86_64 --version | head -1)"
	} >"$CACHE/versions"
}

# -------------------------------------------------------------- network
cmd_up() {
	need_root
	check_lab_name
	mkdir -p "$RUN"
	if ! lab_exists; then
		ip netns add "$NETNS"
	fi
	[ "$SUBNET2" != "$SUBNET" ] ||
		die "UROCE_VMLAB_SUBNET2=$SUBNET2 is UROCE_VMLAB_SUBNET too; the second bridge needs a /24 of its own"
	in_ns ip link set lo up
	local br subnet
	for br in "$BRIDGE $SUBNET" "$BRIDGE2 $SUBNET2"; do
		subnet=${br#* }
		br=${br% *}
		in_ns ip link show "$br" >/dev/null 2>&1 && continue
		in_ns ip link add "$br" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
		in_ns ip addr add "$subnet.1/24" dev "$br"
		in_ns ip link set "$br" up
	done
	log "lab $LAB up: netns $NETNS, bridges $BRIDGE $SUBNET.1/24 and $BRIDGE2 $SUBNET2.1/24, no uplink, no default route"
}

# ------------------------------------------------------------------ guests
guest_dir() { echo "$RUN/guest-$1"; }

# tap_on TAP BRIDGE [QUEUES]: a fresh tap (multi-queue for QUEUES > 1), up,
# on the bridge (in the lab's netns)
tap_on() {
	in_ns ip link del "$1" 2>/dev/null || true
	if [ "${3:-1}" -gt 1 ]; then
		in_ns ip tuntap add dev "$1" mode tap multi_queue
	else
		in_ns ip tuntap add dev "$1" mode tap
	fi
	# jumbo-capable, so a guest's MTU (boot --mtu) is the only limit: the
	# bridge forwards a frame only if the egress port's MTU takes it
	in_ns ip link set "$1" mtu 9000
	in_ns ip link set "$1" master "$2"
	in_ns ip link set "$1" up
}

# The accelerator: kvm where the host can run KVM guests (a CPU with
# vmx/svm: /dev/kvm alone is not enough, a host without nested
# virtualization has it and its guests never boot), else tcg.
pick_accel() {
	case "$ACCEL" in
	tcg | kvm) echo "$ACCEL (UROCE_VMLAB_ACCEL)" ;;
	auto)
		if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
			echo "kvm (auto: /dev/kvm and a CPU with vmx/svm)"
		elif [ -e /dev/kvm ]; then
			echo "tcg (auto: /dev/kvm is there but the CPU shows no vmx/svm, so no nested virtualization)"
		else
			echo "tcg (auto: no /dev/kvm)"
		fi ;;
	*) die "UROCE_VMLAB_ACCEL='$ACCEL': use auto, tcg or kvm" ;;
	esac
}

cmd_boot() {
	local smp=1 queues=1 mtu=
	while [ $# -gt 0 ]; do
		case "$1" in
		--smp) [[ ${2:-} =~ ^[1-8]$ ]] || die "boot --smp '${2:-}': vCPUs 1-8"; smp=$2; shift 2 ;;
		--queues) [[ ${2:-} =~ ^[1-9]$|^1[0-6]$ ]] || die "boot --queues '${2:-}': queue pairs 1-16"; queues=$2; shift 2 ;;
		--mtu) [[ ${2:-} =~ ^[0-9]+$ ]] && [ "$2" -ge 576 ] && [ "$2" -le 9000 ] ||
			die "boot --mtu '${2:-}': 576-9000"; mtu=$2; shift 2 ;;
		-*) die "boot: unknown option '$1'; accepted: --smp N, --queues N, --mtu M" ;;
		*) break ;;
		esac
	done
	[ $# -eq 2 ] || [ $# -eq 3 ] || die "usage: vmlab.sh boot [--smp N] [--queues N] [--mtu M] NAME IP [IP2]"
	local name=$1 ip=$2 ip2=${3:-}
	need_root
	check_name "$name"
	check_ip "$ip"
	[ -z "$ip2" ] || check_ip2 "$ip2"
	need_lab
	need_setup
	local gd tap tap2=tq-$name mac mac2=
	gd=$(guest_dir "$name")
	tap=tp-$name
	mac=$(mac_for "$ip")
	if [ -n "$ip2" ]; then
		in_ns ip link show "$BRIDGE2" >/dev/null 2>&1 ||
			die "lab '$LAB' has no bridge $BRIDGE2 for IP2 (it was brought up by an older vmlab.sh; run vmlab.sh up again)"
		mac2=$(mac_for "$ip2")
		# mac_for keeps only the last three octets.
		[ "$mac2" != "$mac" ] ||
			die "IP $ip and IP2 $ip2 give the same MAC $mac; use subnets that differ in the third octet"
	fi
	if [ -f "$gd/qemu.pid" ] && kill -0 "$(cat "$gd/qemu.pid")" 2>/dev/null; then
		die "guest $name is already running (pid $(cat "$gd/qemu.pid"))"
	fi
	rm -rf "$gd"
	mkdir -p "$gd/share/jobs"
	tap_on "$tap" "$BRIDGE" "$queues"
	echo "$ip" >"$gd/ip"
	echo "$mac" >"$gd/mac"
	# The optional second NIC (eth1 in the guest, rxe1 on it): a tap on br1.
	local nic2_args=() ip2_arg=
	if [ -n "$ip2" ]; then
		tap_on "$tap2" "$BRIDGE2"
		echo "$ip2" >"$gd/ip2"
		echo "$mac2" >"$gd/mac2"
		nic2_args=(-netdev "tap,id=n1,ifname=$tap2,script=no,downscript=no"
			-device "virtio-net-pci,netdev=n1,mac=$mac2")
		ip2_arg=" uvl.ip2=$ip2/24"
	fi

	local accel_args accel why
	why=$(pick_accel)
	accel=${why%% *}
	case "$accel" in
	tcg) accel_args="-accel tcg -cpu max" ;;
	kvm) accel_args="-accel kvm -cpu host" ;;
	esac
	# eth0: several queue pairs with the device's RSS, vhost-net where the
	# host has it (with KVM: vhost needs its irqfds). hash=on makes QEMU
	# compute RSS itself: its eBPF steering program does not load with
	# Debian's libbpf 1.x ("legacy map definitions"), and without either
	# the tap's own flow hash picks the queue, whatever the guest's RSS
	# table says
	local net0=tap,id=n0,ifname=$tap,script=no,downscript=no dev0=virtio-net-pci,netdev=n0,mac=$mac vhost=off
	if [ -e /dev/vhost-net ] && [ "$accel" = kvm ]; then
		vhost=on
	fi
	net0="$net0,vhost=$vhost"
	if [ "$queues" -gt 1 ]; then
		net0="$net0,queues=$queues"
		dev0="$dev0,mq=on,vectors=$((2 * queues + 2)),rss=on,hash=on"
	fi
	# QEMU's largest receive ring: under TCG a guest drains it late, and
	# QEMU's own RSS stalls a tap queue whose packet finds its target ring
	# full until that tap queue's own ring is refilled
	dev0="$dev0,rx_queue_size=1024"
	echo "$accel $smp $queues ${mtu:-1500} $vhost" >"$gd/profile"
	local t0=$SECONDS
	# shellcheck disable=SC2086
	in_ns qemu-system-x86_64 -name "uvl-$LAB-$name" -machine pc $accel_args \
		-m "$GUEST_MEM" -smp "$smp" -nodefaults -no-user-config -display none -no-reboot \
		-kernel "$CACHE/vmlinuz" -initrd "$CACHE/initramfs.cpio" \
		-append "console=ttyS0 loglevel=4 panic=-1 uvl.name=$name uvl.ip=$ip/24$ip2_arg${mtu:+ uvl.mtu=$mtu}" \
		-serial "file:$gd/console.log" \
		-netdev "$net0" \
		-device "$dev0" \
		"${nic2_args[@]}" \
		-fsdev "local,id=fs0,path=$gd/share,security_model=none" \
		-device "virtio-9p-pci,fsdev=fs0,mount_tag=uvlshare" \
		-daemonize -pidfile "$gd/qemu.pid" 2>"$gd/qemu.err" ||
		die "QEMU did not start: $(cat "$gd/qemu.err")"
	local pid
	pid=$(cat "$gd/qemu.pid")
	if ! wait_for "grep -aq 'UVL: READY' '$gd/console.log' || ! kill -0 $pid 2>/dev/null" "$BOOT_TIMEOUT" ||
		! grep -aq 'UVL: READY' "$gd/console.log"; then
		log "guest $name did not become ready within ${BOOT_TIMEOUT}s; console tail:"
		tail -n 20 "$gd/console.log" >&2 || true
		cmd_stop "$name"
		exit 1
	fi
	echo $((SECONDS - t0)) >"$gd/boot-seconds"
	grep -a '^UVL: gid' "$gd/console.log" | sed 's/^UVL: /  /' >&2 || true
	log "guest $name up in ~$((SECONDS - t0))s: ip $ip mac $mac${ip2:+ ip2 $ip2 mac2 $mac2} pid $pid, kernel $(cat "$CACHE/kpkg"), $smp vCPU, $queues queue pair(s)${mtu:+, MTU $mtu}, vhost-net $vhost, accel $why"
}

cmd_stop() {
	[ $# -eq 1 ] || die "usage: vmlab.sh stop NAME"
	local gd
	gd=$(guest_dir "$1")
	kill_pidfile "$gd/qemu.pid" "uvl-$LAB-$1"
	if lab_exists; then
		in_ns ip link del "tp-$1" 2>/dev/null || true
		in_ns ip link del "tq-$1" 2>/dev/null || true
	fi
}

# Queue a job in a running guest; prints its id.
job_submit() {
	local name=$1 cmd=$2 gd id
	gd=$(guest_dir "$name")
	[ -f "$gd/qemu.pid" ] && kill -0 "$(cat "$gd/qemu.pid")" 2>/dev/null || die "guest $name is not running"
	id=$(date +%s%N)
	printf '%s\n' "$cmd" >"$gd/share/jobs/$id.tmp"
	mv "$gd/share/jobs/$id.tmp" "$gd/share/jobs/$id.sh"
	# The guest polls every 0.1 s; a job not taken in 10 s means a dead agent.
	wait_for "[ ! -e '$gd/share/jobs/$id.sh' ]" 10 || die "guest $name did not pick up job $id"
	echo "$id"
}

job_wait() {
	local name=$1 id=$2 timeout=$3 gd rc
	gd=$(guest_dir "$name")
	[ -e "$gd/share/jobs/$id.run" ] || die "no job $id in guest $name"
	if ! wait_for "[ -f '$gd/share/jobs/$id.rc' ]" "$timeout"; then
		cat "$gd/share/jobs/$id.out" 2>/dev/null || true
		log "job $id in guest $name still running after ${timeout}s"
		return 124
	fi
	cat "$gd/share/jobs/$id.out"
	rc=$(cat "$gd/share/jobs/$id.rc")
	return "$rc"
}

parse_timeout() { # sets TIMEOUT and SHIFTN from "--timeout S"
	TIMEOUT=$JOB_TIMEOUT
	SHIFTN=0
	if [ "${1:-}" = --timeout ]; then
		[[ ${2:-} =~ ^[0-9]+$ ]] || die "--timeout needs whole seconds"
		TIMEOUT=$2
		SHIFTN=2
	fi
}

cmd_exec() {
	[ $# -ge 2 ] || die "usage: vmlab.sh exec NAME [--timeout S] COMMAND..."
	local name=$1
	shift
	parse_timeout "$@"
	shift $SHIFTN
	[ $# -ge 1 ] || die "exec: no command"
	local id
	id=$(job_submit "$name" "$*")
	job_wait "$name" "$id" "$TIMEOUT"
}

cmd_start() {
	[ $# -ge 2 ] || die "usage: vmlab.sh start NAME COMMAND..."
	local name=$1
	shift
	job_submit "$name" "$*"
}

cmd_wait() {
	[ $# -ge 2 ] || die "usage: vmlab.sh wait NAME JOB [--timeout S]"
	local name=$1 id=$2
	shift 2
	parse_timeout "$@"
	job_wait "$name" "$id" "$TIMEOUT"
}

# Copy a host file into a running guest (its 9p share); prints the path the
# guest sees it under.
cmd_put() {
	[ $# -eq 2 ] || die "usage: vmlab.sh put NAME FILE"
	local gd base
	gd=$(guest_dir "$1")
	[ -d "$gd/share" ] || die "no guest $1"
	[ -f "$2" ] || die "no file $2"
	base=$(basename "$2")
	[[ $base =~ ^[A-Za-z0-9._-]+$ ]] || die "file name '$base': use A-Z, a-z, 0-9, '.', '_', '-'"
	[ "$base" != jobs ] || die "file name 'jobs' is the job directory"
	cp "$2" "$gd/share/$base"
	echo "/mnt/host/$base"
}

# Print a job's output so far (for a job still running).
cmd_output() {
	[ $# -eq 2 ] || die "usage: vmlab.sh output NAME JOB"
	cat "$(guest_dir "$1")/share/jobs/$2.out" 2>/dev/null || true
}

# ------------------------------------------------------------ host peers
# A host-side peer: its own netns "$LAB-NAME" holding one end of a veth pair
# (ifname, default uvp0) with the address; the other end is a bridge port.
peer_ns() { echo "$LAB-$1"; }

cmd_attach() {
	[ $# -ge 2 ] && [ $# -le 3 ] || die "usage: vmlab.sh attach NAME IP [IFNAME]"
	local name=$1 ip=$2 ifname=${3:-uvp0} ns
	need_root
	check_name "$name"
	check_ip "$ip"
	need_lab
	[[ $ifname =~ ^[a-z][a-z0-9]{0,14}$ ]] || die "interface name '$ifname': 1-15 chars of a-z, 0-9"
	ns=$(peer_ns "$name")
	[ ! -e "/run/netns/$ns" ] || die "peer $name already attached (netns $ns)"
	ip netns add "$ns"
	echo "$ns" >>"$RUN/peers"
	ip link add "vp-$name" netns "$NETNS" type veth peer name "$ifname" netns "$ns"
	in_ns ip link set "vp-$name" master "$BRIDGE"
	in_ns ip link set "vp-$name" up
	ip netns exec "$ns" ip link set lo up
	# Keep the peer's wire quiet: no IPv6 autoconf, router solicitations or
	# MLD reports in the captures.
	ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip netns exec "$ns" sysctl -q -w "net.ipv6.conf.$ifname.disable_ipv6=1"
	ip netns exec "$ns" ip link set "$ifname" address "$(mac_for "$ip")"
	ip netns exec "$ns" ip addr add "$ip/24" dev "$ifname"
	ip netns exec "$ns" ip link set "$ifname" up
	log "peer $name: netns $ns, $ifname $ip/24 mac $(mac_for "$ip"), bridge port vp-$name"
	echo "$ns"
}

cmd_detach() {
	[ $# -eq 1 ] || die "usage: vmlab.sh detach NAME"
	local ns
	ns=$(peer_ns "$1")
	[ ! -e "/run/netns/$ns" ] || ip netns del "$ns"
	! lab_exists || in_ns ip link del "vp-$1" 2>/dev/null || true
}

# --------------------------------------------------------------- captures
cmd_capture_start() {
	[ $# -ge 2 ] || die "usage: vmlab.sh capture-start ID FILE [FILTER...]"
	local id=$1 file=$2
	shift 2
	need_lab
	check_name "$id"
	mkdir -p "$RUN/captures"
	local base=$RUN/captures/$id
	[ ! -f "$base.pid" ] || die "capture $id already running"
	rm -f "$file"
	: >"$base.err"
	# Directly backgrounded so $! is the pid that becomes tcpdump (ip netns
	# exec execs it); -Z root because tcpdump would otherwise drop to a user
	# that cannot write FILE; --immediate-mode and -U so a stop loses nothing
	# still held in the kernel's ring or in tcpdump's buffer.
	ip netns exec "$NETNS" tcpdump -Z root -i "$BRIDGE" -s 0 --immediate-mode -U -n -w "$file" "$@" \
		</dev/null >/dev/null 2>"$base.err" &
	echo $! >"$base.pid"
	wait_for "grep -q 'listening on' '$base.err'" 10 || {
		cat "$base.err" >&2
		kill_pidfile "$base.pid" tcpdump
		die "tcpdump did not start"
	}
}

cmd_capture_stop() {
	[ $# -eq 1 ] || die "usage: vmlab.sh capture-stop ID"
	local base=$RUN/captures/$1 pid
	[ -f "$base.pid" ] || die "no capture $1"
	pid=$(cat "$base.pid")
	# SIGINT makes tcpdump flush and print its counts.
	kill -INT "$pid" 2>/dev/null || true
	wait_for "! kill -0 $pid 2>/dev/null" 10 || kill_pidfile "$base.pid" tcpdump
	rm -f "$base.pid"
	grep -E 'packets (captured|received by filter|dropped)' "$base.err" >&2 || true
}

# ----------------------------------------------------------------- teardown
cmd_down() {
	need_root
	check_lab_name
	local f d
	for f in "$RUN"/captures/*.pid; do
		[ -f "$f" ] && kill_pidfile "$f" tcpdump
	done
	for d in "$RUN"/guest-*; do
		[ -d "$d" ] && cmd_stop "${d##*/guest-}"
	done
	if [ -f "$RUN/peers" ]; then
		while read -r f; do
			[ ! -e "/run/netns/$f" ] || ip netns del "$f"
		done <"$RUN/peers"
	fi
	! lab_exists || ip netns del "$NETNS"
	rm -rf "$RUN"
	log "lab $LAB down"
}

cmd_status() {
	check_lab_name
	if ! lab_exists; then
		echo "lab $LAB: down"
		return 0
	fi
	echo "lab $LAB: netns $NETNS"
	in_ns ip -br addr
	local d pid
	for d in "$RUN"/guest-*; do
		[ -d "$d" ] || continue
		pid=$(cat "$d/qemu.pid" 2>/dev/null || echo -)
		if [ "$pid" != - ] && kill -0 "$pid" 2>/dev/null; then
			echo "guest ${d##*/guest-}: ip $(cat "$d/ip")$([ ! -f "$d/ip2" ] || echo " ip2 $(cat "$d/ip2")") pid $pid running"
		else
			echo "guest ${d##*/guest-}: stopped"
		fi
	done
	[ ! -f "$RUN/peers" ] || sed 's/^/peer netns /' "$RUN/peers"
}

# Labs with state in the cache, e.g. left by a killed test; each can be
# removed with UROCE_VMLAB_LAB=NAME vmlab.sh down.
cmd_labs() {
	local d n
	for d in "$CACHE"/run/*/; do
		[ -d "$d" ] || continue
		n=${d%/}
		n=${n##*/}
		if [ -e "/run/netns/$n" ]; then echo "$n up"; else echo "$n (netns gone)"; fi
	done
}

usage() {
	cat <<EOF
vmlab.sh: Soft-RoCE (rdma_rxe) guests for uroce interop tests. Run as root.

  setup [--force]             install host tools, fetch kernel + RDMA userspace,
                              build the initramfs (cached in $CACHE)
  up                          create the lab: netns, bridge br0 with $SUBNET.1/24
                              and bridge br1 with $SUBNET2.1/24
  boot [--smp N] [--queues N] [--mtu M] NAME IP [IP2]
                              boot guest NAME at IP (rxe0 on eth0, tap tp-NAME on br0),
                              wait until ready; with IP2 (in $SUBNET2.0/24) also a
                              second NIC: rxe1 on eth1 at IP2, tap tq-NAME on br1;
                              N vCPUs (1), eth0 with N queue pairs and the device's RSS
                              (1: one queue), eth0's MTU M (1500)
  exec NAME [--timeout S] CMD run CMD in the guest, print its output, exit with its rc
  start NAME CMD              start CMD in the guest in the background; prints JOB
  wait NAME JOB [--timeout S] wait for JOB, print its output, exit with its rc
  output NAME JOB             output of JOB so far
  put NAME FILE               copy FILE into the guest (/mnt/host/FILE); prints that path
  stop NAME                   stop guest NAME (kills its QEMU by pid)
  attach NAME IP [IFNAME]     host-side peer: netns $LAB-NAME, veth IFNAME (uvp0) on the bridge
  detach NAME                 remove that peer
  capture-start ID FILE [FILTER]  tcpdump the bridge into FILE
  capture-stop ID             stop that capture
  console NAME                print the guest's console log
  versions                    kernel and package versions in the guest image
  status                      what runs in the lab
  labs                        every lab with state in the cache
  down                        stop everything in the lab and delete it

Environment: UROCE_VMLAB_CACHE ($CACHE), UROCE_VMLAB_LAB ($LAB),
UROCE_VMLAB_SUBNET ($SUBNET), UROCE_VMLAB_SUBNET2 ($SUBNET2, br1 and IP2),
UROCE_VMLAB_ACCEL ($ACCEL: kvm where the CPU shows vmx/svm, else tcg),
UROCE_VMLAB_MEM ($GUEST_MEM),
UROCE_VMLAB_BOOT_TIMEOUT ($BOOT_TIMEOUT), UROCE_VMLAB_JOB_TIMEOUT ($JOB_TIMEOUT),
UROCE_VMLAB_NO_APT (fail instead of apt-get install).
EOF
}

main() {
	local cmd=${1:-help}
	shift || true
	case "$cmd" in
	setup) cmd_setup "$@" ;;
	up) cmd_up "$@" ;;
	boot) check_lab_name; cmd_boot "$@" ;;
	exec) cmd_exec "$@" ;;
	start) cmd_start "$@" ;;
	wait) cmd_wait "$@" ;;
	output) cmd_output "$@" ;;
	put) cmd_put "$@" ;;
	stop) check_lab_name; cmd_stop "$@" ;;
	attach) check_lab_name; cmd_attach "$@" ;;
	detach) check_lab_name; cmd_detach "$@" ;;
	capture-start) cmd_capture_start "$@" ;;
	capture-stop) cmd_capture_stop "$@" ;;
	console) cat "$(guest_dir "${1:?usage: vmlab.sh console NAME}")/console.log" ;;
	versions) cat "$CACHE/versions" 2>/dev/null || die "no versions yet (vmlab.sh setup)" ;;
	status) cmd_status ;;
	labs) cmd_labs ;;
	down) cmd_down ;;
	help | -h | --help) usage ;;
	*) usage >&2; die "unknown command '$cmd'" ;;
	esac
}

main "$@"
