/* SPDX-License-Identifier: MIT */
/* The launcher's port and engine commands: show port info|stats|xstats|gids,
 * clear port stats, port stop|start, set loss, pcap start|stop, show
 * engine. What reads a context runs on its engine (l_call). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "launcher.h"
#include "app_json.h"
#include "dataplane/nic_ethtool.h"
#include "dataplane/port_loop.h"

enum pc_kind { PC_STATS, PC_ATTR, PC_GID, PC_CAP_START, PC_CAP_STOP, PC_LOSS, PC_LINK, PC_ENGINE };

struct pcall {
	enum pc_kind kind;
	int port;
	void *out;
	int idx;
	const char *path;
	uint64_t max;
	double val;
	const char *err; /* uroce_last_error() of the engine's thread, copied */
	char errbuf[512];
};

static int pcall_fn(struct l_lcore *lc, void *arg)
{
	struct pcall *c = arg;
	struct l_port *lp = c->port >= 0 ? &L.port[c->port] : NULL;
	int rc = -EINVAL;

	switch (c->kind) {
	case PC_STATS: rc = uroce_port_stats(lc->ctx, lp->num, c->out); break;
	case PC_ATTR: rc = uroce_query_port(lc->ctx, lp->num, c->out); break;
	case PC_GID: rc = uroce_query_gid(lc->ctx, lp->num, c->idx, c->out); break;
	case PC_CAP_START: rc = uroce_port_capture_start(lc->ctx, lp->num, c->path, c->max); break;
	case PC_CAP_STOP: rc = uroce_port_capture_stop(lc->ctx, lp->num, c->out); break;
	case PC_ENGINE: rc = uroce_engine_stats(lc->ctx, c->out); break;
	case PC_LOSS: {
		struct loop_impairment imp = { .loss = c->val / 100.0 };
		rc = loop_fabric_set_impairment(lc->fab, lp->loop_index, &imp);
		if (rc)
			snprintf(c->errbuf, sizeof(c->errbuf), "%s", loop_fabric_last_error(lc->fab));
		return rc;
	}
	case PC_LINK:
		rc = loop_fabric_set_link(lc->fab, lp->loop_index, c->val != 0);
		if (rc)
			snprintf(c->errbuf, sizeof(c->errbuf), "%s", loop_fabric_last_error(lc->fab));
		return rc;
	}
	if (rc)
		snprintf(c->errbuf, sizeof(c->errbuf), "%s", uroce_last_error());
	return rc;
}

static int pcall(struct pcall *c)
{
	int lcore = c->port >= 0 ? L.port[c->port].lcore : c->idx;

	c->errbuf[0] = 0;
	return l_call(lcore, pcall_fn, c);
}

int l_port_stats(int port, struct uroce_port_stats *st)
{
	struct pcall c = { .kind = PC_STATS, .port = port, .out = st };
	const struct uroce_port_stats *b = &L.port[port].base;
	int rc = pcall(&c);

	if (rc)
		return rc;
	st->rx_packets -= b->rx_packets;
	st->rx_bytes -= b->rx_bytes;
	st->tx_packets -= b->tx_packets;
	st->tx_bytes -= b->tx_bytes;
	for (int r = 0; r < UROCE_DROP__COUNT; r++)
		st->drops[r] -= b->drops[r];
	return 0;
}

static uint64_t drops_total(const struct uroce_port_stats *st)
{
	uint64_t n = 0;

	for (int r = 1; r < UROCE_DROP__COUNT; r++)
		n += st->drops[r];
	return n;
}

/* "bad_icrc 3, no_qp 1", or "none" */
static const char *drops_line(const struct uroce_port_stats *st, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int r = 1; r < UROCE_DROP__COUNT && used < len; r++)
		if (st->drops[r])
			used += (size_t)snprintf(buf + used, len - used, "%s%s %" PRIu64, used ? ", " : "",
			                         uroce_drop_reason_name(r), st->drops[r]);
	if (!used)
		snprintf(buf, len, "none");
	return buf;
}

static void gid_str(const uint8_t g[16], char *buf, size_t len)
{
	inet_ntop(AF_INET6, g, buf, (socklen_t)len);
}

static int show_info(int i)
{
	struct l_port *lp = &L.port[i];
	struct uroce_port_attr pa;
	struct pcall c = { .kind = PC_ATTR, .port = i, .out = &pa };
	char gid[64], ip[32];

	if (pcall(&c)) {
		l_err("port %d: %s\n", i, c.errbuf);
		return -EIO;
	}
	gid_str(pa.gid, gid, sizeof(gid));
	inet_ntop(AF_INET, &pa.ipv4_be, ip, sizeof(ip));
	if (L.json) {
		l_out("{\"port\":%d,\"spec\":", i);
		app_json_str(stdout, lp->spec);
		printf(",\"engine\":%d,\"core\":%d,\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\",\"ipv4\":\"%s\",\"gid\":\"%s\","
		       "\"mtu\":%u,\"roce_mtu\":%u,\"link\":%s,\"xdp\":\"%s\",\"zero_copy\":%s,\"note\":",
		       lp->lcore, L.lc[lp->lcore].cpu, pa.mac[0], pa.mac[1], pa.mac[2], pa.mac[3], pa.mac[4], pa.mac[5], ip,
		       gid, pa.l3_mtu, uroce_mtu_bytes(pa.active_mtu), pa.link_up ? "true" : "false",
		       pa.xdp_mode == UROCE_XDP_NATIVE ? "native" : pa.xdp_mode == UROCE_XDP_GENERIC ? "generic" : "none",
		       pa.zero_copy ? "true" : "false");
		app_json_str(stdout, pa.note);
		l_out("}\n");
		return 0;
	}
	l_out("********************* Infos for port %d *********************\n", i);
	l_out("Spec: %s (engine %d on core %d, its port %u)\n", lp->spec, lp->lcore, L.lc[lp->lcore].cpu, lp->num);
	l_out("MAC address: %02x:%02x:%02x:%02x:%02x:%02x\n", pa.mac[0], pa.mac[1], pa.mac[2], pa.mac[3], pa.mac[4],
	      pa.mac[5]);
	l_out("IPv4: %s  GID[%d..]: %s (%d entries)\n", ip, 0, gid, pa.gid_tbl_len);
	l_out("Link status: %s%s\n", pa.link_up ? "up" : "down", lp->stopped ? " (port stop)" : "");
	l_out("MTU: %u (RoCE %u)\n", pa.l3_mtu, uroce_mtu_bytes(pa.active_mtu));
	if (lp->afxdp) {
		uint32_t q = nic_rx_queues(lp->ifname);
		l_out("XDP: %s, %s; queue %u of the %u in use on %s\n",
		      pa.xdp_mode == UROCE_XDP_GENERIC ? "generic (skb)" : "native",
		      pa.zero_copy ? "zero-copy" : "copy mode", lp->queue, q, lp->ifname);
	} else {
		l_out("Kind: %s\n", lp->loop ? "loop (in-process wire)" : lp->dpdk ? "dpdk" : "verbs (RDMA NIC)");
	}
	if (lp->loop)
		l_out("Loss set: %.2f%%\n", lp->loss_pct);
	if (lp->capturing)
		l_out("Capturing to: %s\n", lp->cap_path);
	if (pa.note[0])
		l_out("Note: %s\n", pa.note);
	return 0;
}

static int show_stats(int i, bool x)
{
	struct uroce_port_stats st;
	char drops[1024];
	int rc = l_port_stats(i, &st);

	if (rc) {
		l_err("port %d: %s\n", i, uroce_strerror(rc));
		return rc;
	}
	if (L.json || x) {
		if (L.json)
			l_out("{\"port\":%d,\"rx_packets\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"tx_packets\":%" PRIu64
			      ",\"tx_bytes\":%" PRIu64 ",\"drops\":{", i, st.rx_packets, st.rx_bytes, st.tx_packets,
			      st.tx_bytes);
		else
			l_out("###### NIC extended statistics for port %d\nrx_packets: %" PRIu64 "\nrx_bytes: %" PRIu64
			      "\ntx_packets: %" PRIu64 "\ntx_bytes: %" PRIu64 "\n", i, st.rx_packets, st.rx_bytes,
			      st.tx_packets, st.tx_bytes);
		bool first = true;
		for (int r = 1; r < UROCE_DROP__COUNT; r++) {
			if (L.json && !x && !st.drops[r])
				continue;
			if (L.json)
				l_out("%s\"%s\":%" PRIu64, first ? "" : ",", uroce_drop_reason_name(r), st.drops[r]);
			else
				l_out("drop_%s: %" PRIu64 "\n", uroce_drop_reason_name(r), st.drops[r]);
			first = false;
		}
		if (L.json)
			l_out("}}\n");
		return 0;
	}
	l_out("  ######################## NIC statistics for port %-2d ########################\n", i);
	l_out("  RX-packets: %-12" PRIu64 " RX-bytes: %" PRIu64 "\n", st.rx_packets, st.rx_bytes);
	l_out("  TX-packets: %-12" PRIu64 " TX-bytes: %" PRIu64 "\n", st.tx_packets, st.tx_bytes);
	l_out("  Drops: %-16" PRIu64 " by reason: %s\n", drops_total(&st), drops_line(&st, drops, sizeof(drops)));
	l_out("  ############################################################################\n");
	return 0;
}

static int show_gids(int i)
{
	struct uroce_port_attr pa;
	struct pcall c = { .kind = PC_ATTR, .port = i, .out = &pa };

	if (pcall(&c)) {
		l_err("port %d: %s\n", i, c.errbuf);
		return -EIO;
	}
	l_out("port %d GID table (%d entries, RoCEv2):\n", i, pa.gid_tbl_len);
	for (int g = 0; g < pa.gid_tbl_len; g++) {
		uint8_t gid[16];
		char s[64];
		struct pcall gc = { .kind = PC_GID, .port = i, .out = gid, .idx = g };

		if (pcall(&gc))
			continue;
		gid_str(gid, s, sizeof(s));
		l_out("  %2d  %s\n", g, s);
	}
	return 0;
}

int l_cmd_show_port(int argc, char **argv)
{
	int p, rc = 0;

	if (argc != 4)
		return -EINVAL;
	bool gids = !strcmp(argv[2], "gids");
	if (strcmp(argv[2], "info") && strcmp(argv[2], "stats") && strcmp(argv[2], "xstats") && !gids) {
		l_err("show port: '%s' is not info, stats, xstats or gids\n", argv[2]);
		return -EINVAL;
	}
	if (l_parse_port(argv[3], !gids, &p))
		return -EINVAL;
	for (int i = p < 0 ? 0 : p; i < (p < 0 ? L.nports : p + 1); i++) {
		int r = gids ? show_gids(i) : !strcmp(argv[2], "info") ? show_info(i) :
		        show_stats(i, !strcmp(argv[2], "xstats"));
		rc = rc ? rc : r;
	}
	return rc ? -EIO : 0;
}

int l_cmd_clear_port(int argc, char **argv)
{
	int p;

	if (argc != 4 || strcmp(argv[2], "stats"))
		return -EINVAL;
	if (l_parse_port(argv[3], true, &p))
		return -EINVAL;
	for (int i = p < 0 ? 0 : p; i < (p < 0 ? L.nports : p + 1); i++) {
		struct uroce_port_stats st;
		struct pcall c = { .kind = PC_STATS, .port = i, .out = &st };

		if (pcall(&c) == 0)
			L.port[i].base = st;
		l_out("port %d: statistics cleared\n", i);
	}
	return 0;
}

static int set_if_up(const char *ifname, bool up)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		rc = -errno;
	else {
		if (up)
			ifr.ifr_flags |= IFF_UP;
		else
			ifr.ifr_flags &= ~IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
			rc = -errno;
	}
	close(fd);
	return rc;
}

int l_cmd_port_stopstart(int argc, char **argv)
{
	int p, rc;
	bool up;

	if (argc != 3 || (strcmp(argv[1], "stop") && strcmp(argv[1], "start")))
		return -EINVAL;
	up = !strcmp(argv[1], "start");
	if (l_parse_port(argv[2], false, &p))
		return -EINVAL;
	struct l_port *lp = &L.port[p];
	if (lp->afxdp) {
		rc = set_if_up(lp->ifname, up);
		if (rc) {
			l_err("port %s %d: cannot set %s %s: %s\n", argv[1], p, lp->ifname, up ? "up" : "down",
			      strerror(-rc));
			return -EIO;
		}
	} else if (lp->loop) {
		struct pcall c = { .kind = PC_LINK, .port = p, .val = up };
		if (pcall(&c)) {
			l_err("port %s %d: %s\n", argv[1], p, c.errbuf);
			return -EIO;
		}
	} else {
		l_err("port %s %d: %s is a %s port; the launcher takes the link of afxdp ports (their interface) and "
		      "loop ports (their wire)\n", argv[1], p, lp->spec, lp->dpdk ? "dpdk" : "verbs");
		return -EOPNOTSUPP;
	}
	lp->stopped = !up;
	l_out("port %d (%s): link %s\n", p, lp->spec, up ? "up" : "down");
	return 0;
}

int l_cmd_set_loss(int argc, char **argv)
{
	int p;
	char *end;
	double pct;

	if (argc != 4)
		return -EINVAL;
	if (l_parse_port(argv[2], false, &p))
		return -EINVAL;
	pct = strtod(argv[3], &end);
	if (end == argv[3] || *end || !(pct >= 0 && pct <= 100)) {
		l_err("set loss: '%s' is not a percentage in 0..100\n", argv[3]);
		return -EINVAL;
	}
	struct l_port *lp = &L.port[p];
	if (!lp->loop) {
		l_err("set loss: port %d is %s; loss is set on loop ports, whose wire the launcher owns (on a veth, "
		      "uroce-impair drops with an XDP program)\n", p, lp->spec);
		return -EOPNOTSUPP;
	}
	struct pcall c = { .kind = PC_LOSS, .port = p, .val = pct };
	if (pcall(&c)) {
		l_err("set loss: port %d: %s\n", p, c.errbuf);
		return -EIO;
	}
	lp->loss_pct = pct;
	l_out("port %d: %.2f%% of what it sends is lost\n", p, pct);
	return 0;
}

int l_cmd_pcap(int argc, char **argv)
{
	int p;

	if (argc < 3)
		return -EINVAL;
	if (!strcmp(argv[1], "start")) {
		uint64_t max = 0;
		if (argc != 4 && !(argc == 6 && !strcmp(argv[4], "max")))
			return -EINVAL;
		if (l_parse_port(argv[2], false, &p))
			return -EINVAL;
		if (argc == 6 && (l_parse_uint(argv[5], UINT32_MAX, &max) || !max)) {
			l_err("pcap start: max '%s' is not a number of frames in 1..%u\n", argv[5], UINT32_MAX);
			return -EINVAL;
		}
		struct pcall c = { .kind = PC_CAP_START, .port = p, .path = argv[3], .max = max };
		if (pcall(&c)) {
			/* the library names the context's port: drop that prefix */
			const char *why = strstr(c.errbuf, ": port ");
			why = why ? strstr(why + 7, ": ") : NULL;
			l_err("pcap start %d: %s\n", p, why ? why + 2 : c.errbuf);
			return -EIO;
		}
		L.port[p].capturing = true;
		snprintf(L.port[p].cap_path, sizeof(L.port[p].cap_path), "%s", argv[3]);
		l_out("port %d: capturing to %s (at most %" PRIu64 " frames)\n", p, argv[3], max ? max : 1000000);
		return 0;
	}
	if (!strcmp(argv[1], "stop")) {
		struct uroce_capture_stats cs = {0};
		if (argc != 3)
			return -EINVAL;
		if (l_parse_port(argv[2], false, &p))
			return -EINVAL;
		struct pcall c = { .kind = PC_CAP_STOP, .port = p, .out = &cs };
		int rc = pcall(&c);
		L.port[p].capturing = false;
		if (rc == -ENOENT) {
			l_err("pcap stop %d: no capture runs on port %d\n", p, p);
			return -EIO;
		}
		l_out("port %d: capture %s closed: %" PRIu64 " frames, %" PRIu64 " bytes%s", p, L.port[p].cap_path,
		      cs.frames, cs.bytes, cs.missed ? "" : "\n");
		if (cs.missed)
			l_out("; %" PRIu64 " frames NOT written (%s)\n", cs.missed,
			      cs.error ? strerror(-cs.error) : "past the frame bound");
		return rc ? -EIO : 0;
	}
	l_err("pcap: '%s' is not start or stop\n", argv[1]);
	return -EINVAL;
}

void l_ports_close_captures(void)
{
	for (int i = 0; i < L.nports; i++)
		if (L.port[i].capturing) {
			struct uroce_capture_stats cs = {0};
			struct pcall c = { .kind = PC_CAP_STOP, .port = i, .out = &cs };

			pcall(&c);
			L.port[i].capturing = false;
			l_out("port %d: capture %s closed: %" PRIu64 " frames\n", i, L.port[i].cap_path, cs.frames);
		}
}

int l_engine_stats(int k, struct uroce_engine_stats *es, uint64_t *rx, uint64_t *tx, uint64_t *cpu_ns)
{
	struct l_lcore *lc = &L.lc[k];
	struct pcall c = { .kind = PC_ENGINE, .port = -1, .idx = k, .out = es };
	clockid_t cid;
	struct timespec ts;

	*rx = *tx = *cpu_ns = 0;
	if (pcall(&c)) {
		l_err("engine %d: %s\n", k, c.errbuf);
		return -EIO;
	}
	for (int j = 0; j < lc->nports; j++) {
		struct uroce_port_stats st;
		struct pcall sc = { .kind = PC_STATS, .port = lc->ports[j], .out = &st };
		if (!pcall(&sc)) {
			*rx += st.rx_packets;
			*tx += st.tx_packets;
		}
	}
	/* the lcore's thread: the transport and the traffic together */
	if (lc->started && !pthread_getcpuclockid(lc->th, &cid) && !clock_gettime(cid, &ts))
		*cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

int l_cmd_show_engine(int argc, char **argv)
{
	if (argc != 2)
		return -EINVAL;
	for (int k = 0; k < L.nlcores; k++) {
		struct l_lcore *lc = &L.lc[k];
		struct uroce_engine_stats es;
		uint64_t rx, tx, cpu_ns;

		if (l_engine_stats(k, &es, &rx, &tx, &cpu_ns))
			continue;
		double idle = es.passes ? 100.0 * (double)es.idle_passes / (double)es.passes : 0;
		if (L.json)
			l_out("{\"engine\":%d,\"core\":%d,\"loops\":%" PRIu64 ",\"idle_pct\":%.1f,\"rx_frames\":%" PRIu64
			      ",\"tx_frames\":%" PRIu64 ",\"timers\":%" PRIu64 ",\"cpu_s\":%.3f,\"traffic_work\":%" PRIu64
			      "}\n", k, lc->cpu, es.passes, idle, rx, tx, es.timers, (double)cpu_ns / 1e9,
			      atomic_load(&lc->traffic_work));
		else
			l_out("engine %d: core %d, %d port(s), loops %" PRIu64 ", idle %.1f%%, frames rx %" PRIu64
			      " tx %" PRIu64 ", timers %" PRIu64 ", traffic work %" PRIu64 ", CPU %.2f s\n", k, lc->cpu,
			      lc->nports, es.passes, idle, rx, tx, es.timers, atomic_load(&lc->traffic_work),
			      (double)cpu_ns / 1e9);
	}
	return 0;
}
