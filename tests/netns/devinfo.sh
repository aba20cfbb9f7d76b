#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce-devinfo (ibv_devinfo -v and show_gids for uroce ports) on an afxdp
# port in a namespace of its own: the port active, its MTUs those of the
# veth, its GID table the addresses assigned (IPv4 mapped, an IPv6 one),
# --json valid and saying what the text says, PORT_DOWN once the peer's
# end of the veth goes down, a device of two loop ports, -i, and bad
# arguments refused with exit 2 and what is accepted. No rate is asserted.
#   devinfo.sh UROCE_DEVINFO
set -u
. "$(dirname "$0")/../lib/netns.sh"
DI=${1:?usage: devinfo.sh UROCE_DEVINFO}
netns_need_cmd python3
netns_test uroce-dvi
MTU=2000
IP4=10.85.0.1
IP6=fd85::1

netns_add "$NA" "$NB"
# two queues, so the port's queue (1) and the interface's count (2) differ
netns_veth "$NA" va "$NB" vb --ip-a $IP4/24 --ip-b 10.85.0.2/24 --mtu $MTU --queues 2
netns_addr "$NA" va $IP6/64

# di NAME ARGS...: uroce-devinfo in NA, stdout to $TMP/NAME.out, stderr to
# $TMP/NAME.log; fails the test unless it exits 0
di() {
	local name=$1
	shift
	ip netns exec "$NA" timeout 20 "$DI" "$@" >"$TMP/$name.out" 2>"$TMP/$name.log" ||
		{ cat "$TMP/$name.out"; fail "uroce-devinfo $* exited $?"; }
}

# field FILE KEY: the value of an ibv_devinfo-style "KEY:<tabs>VALUE" line
field() {
	sed -n "s/^[[:space:]]*$2:[[:space:]]*//p" "$1" | head -1
}

# same TEXT JSON: the JSON object says what the text output says: device
# fields, each port's state, MTUs, MAC, addresses, XDP and queues, and
# its GID table entry by entry (the -v GID[N] lines and show_gids' rows)
same() {
	python3 - "$1" "$2" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
d = json.load(open(sys.argv[2]))
def fail(msg):
    sys.exit("text and --json differ: " + msg)
def dev(key):
    m = re.search(r"^\t%s:\t+(.*)$" % key, text, re.M)
    return m.group(1) if m else None
if dev("phys_port_cnt") != str(d["phys_port_cnt"]):
    fail("phys_port_cnt")
if text.split("\n")[0] != "hca_id:\t" + d["hca_id"]:
    fail("hca_id")
if (d["node_guid"] or None) != dev("node_guid"):
    fail("node_guid")
blocks = re.split(r"^\t\tport:\t", text, flags=re.M)[1:]
if len(blocks) != len(d["ports"]):
    fail("%d port blocks, %d ports" % (len(blocks), len(d["ports"])))
for blk, p in zip(blocks, d["ports"]):
    kv = dict(re.findall(r"^\t\t\t(\w+):\t+(.*)$", blk, re.M))
    if int(blk.split("\n")[0]) != p["port"]:
        fail("port number")
    want = {
        "state": "%s (%d)" % (p["state"], p["state_num"]),
        "phys_state": "%s (%d)" % (p["phys_state"], p["phys_state_num"]),
        "link_mtu": str(p["link_mtu"]), "mac": p["mac"], "kind": p["kind"], "spec": p["spec"],
        "gid_tbl_len": str(p["gid_tbl_len"]), "link_layer": p["link_layer"],
        "ipv4": ", ".join(p["ipv4"]) or "none", "ipv6": ", ".join(p["ipv6"]) or "none",
    }
    if p["kind"] == "afxdp":
        want.update(xdp_mode=p["xdp_mode"], queue=str(p["queue"]), queues=str(p["queues"]))
    for k, v in want.items():
        if kv.get(k) != v:
            fail("port %d %s: text '%s', json '%s'" % (p["port"], k, kv.get(k), v))
    for k in ("max_mtu", "active_mtu"):
        if not kv.get(k, "").startswith("%d (" % p[k]):
            fail("port %d %s" % (p["port"], k))
    gids = re.findall(r"^\t\t\tGID\[ *(\d+)\]:\t\t(\S+), RoCE v2$", blk, re.M)
    if [(int(i), g) for i, g in gids] != [(g["index"], g["gid"]) for g in p["gids"]]:
        fail("port %d GID[N] lines %s, json %s" % (p["port"], gids, p["gids"]))
    rows = [l.split() for l in text.split("\n") if l.startswith(d["hca_id"] + "\t%d\t" % p["port"])]
    if len(rows) != len(p["gids"]):
        fail("port %d: %d show_gids rows, %d GIDs" % (p["port"], len(rows), len(p["gids"])))
    for r, g in zip(rows, p["gids"]):
        if int(r[2]) != g["index"] or (g["ipv4"] is not None) != (len(r) == 7) or \
           (g["ipv4"] and r[4] != g["ipv4"]) or g["type"] != "RoCE v2" or r[-2] != "v2":
            fail("port %d show_gids row %s, json %s" % (p["port"], r, g))
n = sum(len(p["gids"]) for p in d["ports"])
if "\nn_gids_found=%d\n" % n not in text:
    fail("n_gids_found")
EOF
}

# the IBTA MTU the link carries: the largest that leaves rxe's 80 header bytes
ibta=256
for m in 512 1024 2048 4096; do [ $((MTU - 80)) -ge $m ] && ibta=$m; done
[ "$(ip -n "$NA" -o link show dev va | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')" = $MTU ] ||
	fail "the veth's MTU is not $MTU"

di up-v -d afxdp:va:1 -v
out=$TMP/up-v.out
[ "$(field "$out" state)" = "PORT_ACTIVE (4)" ] || fail "state: '$(field "$out" state)', wanted PORT_ACTIVE (4)"
[ "$(field "$out" phys_state)" = "LINK_UP (5)" ] || fail "phys_state: '$(field "$out" phys_state)'"
[ "$(field "$out" link_mtu)" = $MTU ] || fail "link_mtu: '$(field "$out" link_mtu)', the veth's is $MTU"
field "$out" active_mtu | grep -q "^$ibta (" || fail "active_mtu: '$(field "$out" active_mtu)', wanted $ibta"
field "$out" max_mtu | grep -q "^4096 (5)$" || fail "max_mtu: '$(field "$out" max_mtu)'"
[ "$(field "$out" link_layer)" = Ethernet ] || fail "link_layer: '$(field "$out" link_layer)'"
[ "$(field "$out" kind)" = afxdp ] || fail "kind: '$(field "$out" kind)'"
field "$out" interface | grep -q "^va (ifindex [1-9][0-9]*)$" || fail "interface: '$(field "$out" interface)'"
[ "$(field "$out" mac)" = "$(netns_mac "$NA" va)" ] || fail "mac: '$(field "$out" mac)', va's is $(netns_mac "$NA" va)"
[ "$(field "$out" ipv4)" = $IP4 ] || fail "ipv4: '$(field "$out" ipv4)', wanted $IP4"
field "$out" ipv6 | grep -q "$IP6" || fail "ipv6: '$(field "$out" ipv6)' lacks $IP6"
[ "$(field "$out" queue)" = 1 ] && [ "$(field "$out" queues)" = 2 ] ||
	fail "queue '$(field "$out" queue)' of '$(field "$out" queues)', wanted 1 of 2"
field "$out" xdp_mode | grep -Eq "^(native|generic)$" || fail "xdp_mode: '$(field "$out" xdp_mode)'"
grep -Pq "^\t\t\tGID\[  1\]:\t\t::ffff:$IP4, RoCE v2$" "$out" || { cat "$out"; fail "no GID[1] ::ffff:$IP4"; }
grep -Pq "^\t\t\tGID\[ +[0-9]+\]:\t\t$IP6, RoCE v2$" "$out" || { cat "$out"; fail "no GID for $IP6"; }
grep -Pq "^afxdp:va:1\t1\t1\t0000:0000:0000:0000:0000:ffff:0a55:0001\t$IP4 *\tv2\tva$" "$out" ||
	{ cat "$out"; fail "show_gids has no row for $IP4"; }
grep -Pq "^n_gids_found=3$" "$out" || fail "n_gids_found: $(grep n_gids "$out")"
di up-json -d afxdp:va:1 --json
python3 -m json.tool "$TMP/up-json.out" >/dev/null || { cat "$TMP/up-json.out"; fail "--json is not valid JSON"; }
same "$out" "$TMP/up-json.out" || fail "--json disagrees with the text (link up)"
# without -v: ibv_devinfo's short form, no GID[N] lines, the table still there
di up -d va
grep -q "GID\[" "$TMP/up.out" && fail "GID[N] lines without -v"
grep -q "^hca_id:	afxdp:va$" "$TMP/up.out" || fail "a bare IFACE is not afxdp:IFACE: $(head -1 "$TMP/up.out")"
grep -q "^n_gids_found=3$" "$TMP/up.out" || fail "no show_gids table without -v"
echo "ok: afxdp port active, MTU $MTU (RoCE $ibta), GIDs $IP4 and $IP6, --json agrees"

# the peer's end down takes the carrier away: PORT_DOWN on our side
ip -n "$NB" link set dev vb down || fail "cannot take vb down"
netns_wait_until 10 eval "ip -n '$NA' -o link show dev va | grep -q NO-CARRIER" || fail "va kept its carrier"
di down-v -d afxdp:va:1 -v
[ "$(field "$TMP/down-v.out" state)" = "PORT_DOWN (1)" ] ||
	fail "link down: state '$(field "$TMP/down-v.out" state)', wanted PORT_DOWN (1)"
[ "$(field "$TMP/down-v.out" phys_state)" = "DISABLED (3)" ] || fail "link down: phys_state"
di down-json -d afxdp:va:1 --json
same "$TMP/down-v.out" "$TMP/down-json.out" || fail "--json disagrees with the text (link down)"
ip -n "$NB" link set dev vb up || fail "cannot bring vb up"
netns_wait_link "$NA" va || fail "va did not come back up"
di up-again -d afxdp:va:1
[ "$(field "$TMP/up-again.out" state)" = "PORT_ACTIVE (4)" ] || fail "link up again: state"
echo "ok: PORT_DOWN with the peer down, PORT_ACTIVE again"

# a device of two loop ports (no kernel interface): both listed, -i picks one
di loop-v -d loop:0,loop:1 -v
out=$TMP/loop-v.out
[ "$(field "$out" phys_port_cnt)" = 2 ] || fail "loop: phys_port_cnt '$(field "$out" phys_port_cnt)'"
[ "$(grep -c "PORT_ACTIVE (4)" "$out")" = 2 ] || { cat "$out"; fail "loop: not both ports active"; }
grep -Pq "^\t\t\tGID\[  1\]:\t\t::ffff:10.0.0.2, RoCE v2$" "$out" || { cat "$out"; fail "loop:1 has no 10.0.0.2"; }
di loop-json -d loop:0,loop:1 --json
same "$out" "$TMP/loop-json.out" || fail "--json disagrees with the text (loop)"
di loop-i2 -d loop:0,loop:1 -i 2 -v
grep -Pc "^\t\tport:\t" "$TMP/loop-i2.out" | grep -qx 1 && grep -Pq "^\t\tport:\t2$" "$TMP/loop-i2.out" ||
	{ cat "$TMP/loop-i2.out"; fail "-i 2 did not show port 2 alone"; }
[ "$(field "$TMP/loop-i2.out" ipv4)" = 10.0.0.2 ] || fail "-i 2: ipv4 '$(field "$TMP/loop-i2.out" ipv4)'"
[ "$(field "$TMP/loop-i2.out" loop_index)" = 1 ] || fail "-i 2: loop_index '$(field "$TMP/loop-i2.out" loop_index)'"
echo "ok: loop ports, -i"

# bad arguments: exit 2, saying what is wrong and what is accepted
netns_usage_error "unknown option '--bogus'; accepted: -d, -i, -v, --json" "$DI" -d loop:0 --bogus
netns_usage_error "unknown option '-x'; accepted:" "$DI" -x -d loop:0
netns_usage_error "-d/--ib-dev is required" "$DI" -v
netns_usage_error "unknown port spec 'foo:bar'; accepted: afxdp:IFACE" "$DI" -d foo:bar
netns_usage_error "loop index 'x' is not a number" "$DI" -d loop:x
netns_usage_error "-i/--ib-port 3: the device has 2 port(s), one per -d spec; accepted: 1-2" "$DI" -d loop:0,loop:1 -i 3
netns_usage_error "-i/--ib-port '0': accepted: a port number 1-8" "$DI" -d loop:0 -i 0
netns_usage_error "cannot share a device with afxdp" "$DI" -d loop:0,afxdp:va
netns_usage_error "--ip: '1.2.3' is not an IPv4 address" "$DI" -d loop:0 --ip 1.2.3
netns_usage_error "unexpected argument 'extra'" "$DI" -d loop:0 extra
netns_usage_error "uroce has no device list" "$DI" -l
"$DI" --help | grep -q -- "--json" || fail "--help does not list --json"
# a port that does not exist is a failure to open (1), naming it
out=$(ip netns exec "$NA" timeout 20 "$DI" -d afxdp:nosuch0 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "nosuch0" <<<"$out" || fail "a missing interface: exit $rc, '$out'"
echo "ok: bad arguments exit 2 with what is accepted"
echo PASS
