#!/bin/bash
# SPDX-License-Identifier: MIT
# Install the Debian packages uroce needs to build, test and benchmark.
# Idempotent; run as root. Only Debian's own repositories are used.
set -euo pipefail

PKGS=(
	# build
	build-essential meson ninja-build pkg-config clang llvm gcc-multilib
	libisal-dev libxdp-dev libbpf-dev libelf-dev zlib1g-dev libdpdk-dev
	# libFuzzer and the sanitizer runtimes for the clang fuzz build
	libclang-rt-14-dev
	# tests and tools: namespaces, captures, independent decoders
	iproute2 iputils-ping tcpdump tshark ethtool python3 libibverbs-dev
	# the launcher's prompt (libedit), and the terminal its tests type into (tmux)
	libedit-dev tmux
	# man pages: man1 from each tool's --help, man3 from uroce.h; their tests render them
	help2man doxygen groff-base man-db
	# the conformance suite's attacker (tests/conformance, run by /usr/bin/python3)
	python3-scapy
	# benchmark baselines
	iperf3 sockperf
	# Soft-RoCE VM harness (tests/interop)
	qemu-system-x86 busybox-static cpio kmod
)

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: must run as root (apt-get install)" >&2
	exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture; answer no.
	echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# The Soft-RoCE VM harness fetches the guest kernel with apt-get download,
# which needs package lists even when every host package is already here.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ]; then
	apt-get update -q
fi
echo "install-deps: all packages present"
