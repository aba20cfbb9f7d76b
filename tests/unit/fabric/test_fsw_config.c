/* SPDX-License-Identifier: MIT */
/* The switch's configuration strings: port specs and routes that parse to
 * the values they say, and bad ones refused with a message that names
 * what is accepted; whole-configuration checks. */
#include <errno.h>
#include <string.h>

#include "apps/fabric/fsw.h"
#include "tests/unit/dataplane/dp_test.h"

static void port_ok(const char *spec, struct fsw_port_cfg *pc)
{
	char err[512] = "";

	CHECK(fsw_port_parse(spec, pc, err, sizeof(err)) == 0, "'%s' refused: %s", spec, err);
}

static void port_bad(const char *spec, const char *want)
{
	struct fsw_port_cfg pc;
	char err[512] = "";

	CHECK(fsw_port_parse(spec, &pc, err, sizeof(err)) == -EINVAL, "'%s' accepted", spec);
	CHECK(strstr(err, want) != NULL, "'%s': message '%s' lacks '%s'", spec, err, want);
}

static void route_ok(const char *spec, struct fsw_route *r)
{
	char err[512] = "";

	CHECK(fsw_route_parse(spec, r, err, sizeof(err)) == 0, "'%s' refused: %s", spec, err);
}

static void route_bad(const char *spec, const char *want)
{
	struct fsw_route r;
	char err[512] = "";

	CHECK(fsw_route_parse(spec, &r, err, sizeof(err)) == -EINVAL, "'%s' accepted", spec);
	CHECK(strstr(err, want) != NULL, "'%s': message '%s' lacks '%s'", spec, err, want);
}

static void test_ports(void)
{
	static const uint8_t peer[6] = { 0x02, 0, 0, 0, 0x01, 0x01 };
	struct fsw_port_cfg pc;

	port_ok("veth1,peer=02:00:00:00:01:01,rate=1g,queue=256k,ecn=64k,trim=1,delay=10us", &pc);
	CHECK(!strcmp(pc.name, "veth1") && !memcmp(pc.peer_mac, peer, 6), "name or peer");
	CHECK(pc.rate_bps == 1000000000ull && pc.queue_bytes == 256u * 1024u && pc.ecn_kmin == 64u * 1024u &&
	      !pc.ecn_kmax && pc.trim && pc.delay_ns == 10000 && pc.trim_dscp == FSW_TRIM_DSCP_DEFAULT &&
	      pc.prio_bytes == FSW_PRIO_BYTES_DEFAULT, "values of the example spec");

	port_ok("p0,peer=02:00:00:00:01:01", &pc);
	CHECK(pc.rate_bps == 0 && pc.queue_bytes == FSW_QUEUE_BYTES_DEFAULT && !pc.trim && !pc.ecn_kmin && !pc.delay_ns,
	      "defaults");
	port_ok("p0,peer=02:00:00:00:01:01,rate=2.5Gbit,queue=9000,prio=1m,ecn=20k:200k:1%,dscp=46,delay=1.5ms,"
		"mac=02:aa:bb:cc:dd:ee", &pc);
	CHECK(pc.rate_bps == 2500000000ull && pc.queue_bytes == 9000 && pc.prio_bytes == 1u << 20 &&
	      pc.ecn_kmin == 20480 && pc.ecn_kmax == 204800 && pc.ecn_pmax == 0.01 && pc.trim_dscp == 46 &&
	      pc.delay_ns == 1500000 && pc.mac[1] == 0xaa, "values of the long spec");
	port_ok("p0,rate=100m,rate=0,delay=0,ecn=0", &pc);
	CHECK(pc.rate_bps == 0 && pc.delay_ns == 0 && !pc.ecn_kmin, "zeros, the last value wins");
	port_ok("p0,rate=250000,delay=500ns", &pc);
	CHECK(pc.rate_bps == 250000 && pc.delay_ns == 500, "bare rate, ns");

	port_bad("", "accepted: IFACE,peer=MAC");
	port_bad("peer=02:00:00:00:01:01", "the first field is the interface name");
	port_bad("averyveryverylongname,peer=02:00:00:00:01:01", "longer than 15");
	port_bad("p0,peer=02:00:00:00:01", "accepted: a MAC address");
	port_bad("p0,peer=02:00:00:00:01:01:03", "accepted: a MAC address");
	port_bad("p0,rate=fast", "accepted: bits per second");
	port_bad("p0,rate=-1g", "accepted: bits per second");
	port_bad("p0,rate=1x", "accepted: bits per second");
	port_bad("p0,queue=10", "64..64m");
	port_bad("p0,queue=1g", "64..64m");
	port_bad("p0,queue=1.5", "64..64m");
	port_bad("p0,ecn=20k:10k:0.1", "KMIN:KMAX:PMAX");
	port_bad("p0,ecn=20k:100k", "KMIN:KMAX:PMAX");
	port_bad("p0,ecn=20k:100k:2", "KMIN:KMAX:PMAX");
	port_bad("p0,trim=yes", "accepted: 0 or 1");
	port_bad("p0,dscp=64", "accepted: 0..63");
	port_bad("p0,delay=10", "accepted: N{ns|us|ms|s}");
	port_bad("p0,delay=11s", "up to 10s");
	port_bad("p0,colour=red", "unknown key 'colour'");
	port_bad("p0,rate", "is not key=value");
	port_bad("p0,rate=", "is not key=value");
}

static void test_routes(void)
{
	struct fsw_route r;

	route_ok("10.1.0.0/24=0+1", &r);
	CHECK(!r.ipv6 && r.plen == 24 && r.nports == 2 && r.ports[0] == 0 && r.ports[1] == 1 && r.prefix[0] == 10 &&
	      r.prefix[1] == 1, "10.1.0.0/24=0+1");
	route_ok("10.1.2.3=5", &r);
	CHECK(r.plen == 32 && r.nports == 1 && r.ports[0] == 5, "host route");
	route_ok("0.0.0.0/0=1+2+1", &r);
	CHECK(r.plen == 0 && r.nports == 3, "default route, weighted group");
	route_ok("fd00:1::/32=3", &r);
	CHECK(r.ipv6 && r.plen == 32 && r.prefix[0] == 0xfd && r.prefix[3] == 1, "IPv6");
	route_ok("0.0.0.0/0=0+1+2+3+4+5+6+7+8+9+10+11+12+13+14+15", &r);
	CHECK(r.nports == FSW_ECMP_MAX, "16 members");

	route_bad("10.1.0.0/24", "no '=PORTS'");
	route_bad("10.1.0/24=0", "not an IPv4 or IPv6 address");
	route_bad("10.1.0.0/33=0", "accepted: 0..32");
	route_bad("fd00::/129=0", "accepted: 0..128");
	route_bad("10.1.0.1/24=0", "the network address");
	route_bad("10.1.0.0/24=", "port indices");
	route_bad("10.1.0.0/24=0+", "port indices");
	route_bad("10.1.0.0/24=a", "port indices");
	route_bad("10.1.0.0/24=32", "port indices 0..31");
	route_bad("0.0.0.0/0=0+1+2+3+4+5+6+7+8+9+10+11+12+13+14+15+0", "more than 16");
}

static void test_whole(void)
{
	struct fsw_cfg cfg;
	char err[512] = "";

	fsw_cfg_init(&cfg);
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "accepted: 1..32"), "no ports: %s", err);
	CHECK(fsw_cfg_add_port(&cfg, "a,peer=02:00:00:00:00:01", err, sizeof(err)) == 0, "%s", err);
	CHECK(fsw_cfg_add_port(&cfg, "b", err, sizeof(err)) == 0, "%s", err);
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "no peer MAC"), "no peer: %s", err);
	CHECK(fsw_cfg_add_port(&cfg, "b,peer=02:00:00:00:00:02", err, sizeof(err)) == 0, "%s", err);
	cfg.port[1] = cfg.port[2];
	cfg.nports = 2;
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == 0, "two ports: %s", err);
	CHECK(fsw_cfg_add_route(&cfg, "10.0.0.0/8=0+2", err, sizeof(err)) == 0, "%s", err);
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "port 2 does not exist"), "%s", err);
	cfg.route[0].ports[1] = 1;
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(fsw_cfg_add_route(&cfg, "10.0.0.0/8=1", err, sizeof(err)) == 0, "%s", err);
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "each prefix once"), "%s", err);
	cfg.nroutes = 1;
	cfg.port[1].ecn_kmin = cfg.port[1].queue_bytes + 1;
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "would never mark"), "%s", err);
	cfg.port[1].ecn_kmin = 0;
	cfg.port[1].rate_bps = 1000000000000ull;
	cfg.port[1].delay_ns = 1000000000;
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "bytes in flight"), "%s", err);
	cfg.port[1].delay_ns = 0;
	strcpy(cfg.port[1].name, "a");
	CHECK(fsw_cfg_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "each interface once"), "%s", err);
}

int main(void)
{
	test_ports();
	test_routes();
	test_whole();
	return test_done("fsw_config");
}
