/* SPDX-License-Identifier: MIT */
/* The dpdk port: rte_ethdev with one RX and one TX queue, rte_mbufs lent
 * out as uroce_frames, and ARP answered and resolved by the port itself,
 * since no kernel stack sees the link. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dataplane/errbuf.h"
#include "dataplane/arp.h"
#include "dataplane/nd.h"
#include "dataplane/nl_watch.h"
#include "dataplane/port.h"
#include "dataplane/port_dpdk.h"

/* Descriptor ring sizes asked for; the PMD may round them. DPDK's usual
 * depth: covers short stalls of the polling thread without the cache
 * footprint of deeper rings. */
#define DPDK_RX_DESC 1024u
#define DPDK_TX_DESC 1024u
/* Frames the caller may hold on top of the rings (TX being filled, RX being
 * processed, retransmit queues); 2^n - 1 is the mempool's sweet spot. */
#define DPDK_POOL_MBUFS 8191u
#define DPDK_POOL_CACHE 256u
/* Frames received by poll() or resolve() while the caller was not
 * receiving, kept in order for the next rx_burst. */
#define DPDK_STASH 128u
/* ARP frames waiting for TX ring space. */
#define DPDK_CTL_TX_MAX 32u
/* A caller that does not call rx_burst still has its ARP answered: poll()
 * receives on its behalf at most this often. */
#define DPDK_POLL_RX_US 100u
/* ...and if rx_burst has not been called for this long, stashed frames are
 * stale: the oldest are dropped to keep ARP flowing. */
#define DPDK_STASH_STALE_MS 50u
/* PMD drop counters and link state are read this often (a syscall on
 * some PMDs). */
#define DPDK_STATS_MS 50u
#define DPDK_ARP_RETRY_MS 100u
#define DPDK_XDP_HEADROOM 256u /* XDP_PACKET_HEADROOM, kernel ABI */

struct dpdk_priv {
	uint16_t port_id;
	uint16_t queue;
	struct rte_mempool *pool;
	struct rte_device *dev;
	bool is_vdev;
	uint32_t max_frame; /* largest frame TX accepts: MTU + Ethernet + VLAN */

	/* hot: touched by every burst */
	uint64_t rx_calls;
	uint16_t n_ctl;
	uint32_t stash_head; /* next to deliver */
	uint32_t stash_tail; /* next free */
	struct rte_mbuf *scratch[PORT_BURST_MAX];

	/* poll's bookkeeping */
	uint64_t tsc_hz;
	uint64_t rx_calls_seen;
	uint64_t last_rx_call_tsc;
	uint64_t last_pull_tsc;
	uint64_t last_stats_tsc;
	uint64_t hw_nobuf_seen;
	uint64_t hw_txerr_seen;
	bool link_up;

	struct rte_mbuf *ctl_tx[DPDK_CTL_TX_MAX];
	struct rte_mbuf *stash[DPDK_STASH];
	struct arp_table arp;
	struct arp_stats arp_stats;
	struct nd_table nd;
	struct nd_stats nd_stats;
	uint8_t ll[1][16];  /* the IPv6 addresses ND answers for: fe80:: EUI-64 of the MAC (GID 0) */
	struct rte_mbuf *pull_buf[PORT_BURST_MAX];
};

_Static_assert((DPDK_STASH & (DPDK_STASH - 1)) == 0, "stash indexes wrap by mask");
_Static_assert(DPDK_STASH >= PORT_BURST_MAX, "a stash holds at least one burst");


/* ---- EAL: once per process ------------------------------------------- */

enum eal_state { EAL_NONE = 0, EAL_UP, EAL_FAILED };

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static enum eal_state eal_state;
static int eal_errno;
/* The EAL argument strings, kept until exit in case EAL holds on to any. */
static char **eal_argv_kept;
static bool port_in_use[RTE_MAX_ETHPORTS];

static bool has_arg(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; i < argc; i++) {
		if (!argv[i])
			continue;
		if (!strcmp(argv[i], "--"))
			break;
		if (!strncmp(argv[i], name, n) && (argv[i][n] == '\0' || argv[i][n] == '='))
			return true;
	}
	return false;
}

static bool has_lcore_arg(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!argv[i] || !strcmp(argv[i], "--"))
			break;
		if (!strncmp(argv[i], "-l", 2) || !strncmp(argv[i], "-c", 2) ||
		    (!strncmp(argv[i], "--lcores", 8) && (argv[i][8] == '\0' || argv[i][8] == '=')))
			return true;
	}
	return false;
}

/* "--lcores=0@(a,b,...)": lcore 0 is the calling thread, left on the CPUs
 * it may already run on. Without it EAL pins the caller to the first CPU
 * and starts a worker thread per other CPU, which a library must not do
 * to the application behind its back. */
static char *lcores_arg(void)
{
	cpu_set_t set;
	char *s;
	size_t cap = 32 + CPU_SETSIZE * 6, len;

	if (sched_getaffinity(0, sizeof(set), &set))
		return NULL;
	s = malloc(cap);
	if (!s)
		return NULL;
	len = (size_t)snprintf(s, cap, "--lcores=0@(");
	for (int c = 0; c < CPU_SETSIZE && len < cap - 8; c++)
		if (CPU_ISSET(c, &set))
			len += (size_t)snprintf(s + len, cap - len, "%d,", c);
	if (s[len - 1] == ',')
		len--;
	snprintf(s + len, cap - len, ")");
	return s;
}

static void free_argv(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}

static void eal_cleanup_at_exit(void)
{
	/* Stops and removes the devices still open, which for af_xdp also
	 * detaches the XDP program it put on the interface. */
	rte_eal_cleanup();
	free_argv(eal_argv_kept);
	eal_argv_kept = NULL;
}

static void format_args(char *buf, size_t cap, int argc, char **argv)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < argc && len + 1 < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? " " : "", argv[i]);
	/* A cut list says so rather than passing for the whole one. */
	if (len >= cap && cap > 4)
		memcpy(buf + cap - 4, "...", 4);
}

/* The EAL argument vector: argv0, the defaults a library owes its host
 * process, then the caller's arguments as they are. NULL-terminated. */
static char **build_eal_argv(const struct port_config *cfg, int *argc_out)
{
	int argc_in = cfg->eal_argc, argc = 0;
	char **in = cfg->eal_argv;
	/* argv0, up to two defaults, the caller's after their argv0, NULL */
	char **argv = calloc((size_t)argc_in + 4, sizeof(*argv));

	if (!argv)
		return NULL;
	argv[argc++] = strdup(argc_in > 0 && in[0] ? in[0] : "uroce");
	/* Two DPDK processes on one host must not share a runtime directory
	 * unless the caller asked them to. --in-memory does that but EAL
	 * refuses it with --no-huge; there --no-shconf keeps the runtime
	 * state out of shared files, which is the part that collides. */
	if (!has_arg(argc_in, in, "--in-memory") && !has_arg(argc_in, in, "--file-prefix")) {
		if (!has_arg(argc_in, in, "--no-huge"))
			argv[argc++] = strdup("--in-memory");
		else if (!has_arg(argc_in, in, "--no-shconf"))
			argv[argc++] = strdup("--no-shconf");
	}
	if (!has_lcore_arg(argc_in, in)) {
		char *l = lcores_arg();

		/* Without it EAL's default pinning applies: worse, not wrong. */
		if (l)
			argv[argc++] = l;
	}
	for (int i = 1; i < argc_in; i++)
		argv[argc++] = strdup(in[i] ? in[i] : "");
	for (int i = 0; i < argc; i++) {
		if (!argv[i]) {
			for (int j = 0; j < argc; j++)
				free(argv[j]);
			free(argv);
			return NULL;
		}
	}
	*argc_out = argc;
	return argv;
}

/* A refusal by the kernel as a user other than root is most likely one of
 * privilege (hugepages, devices, a vdev's raw socket): say so. */
static const char *root_hint(void)
{
	return geteuid() ? "; not run as root: run as root (DPDK needs CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN "
			   "and CAP_IPC_LOCK for hugepages, devices and a vdev's socket)" : "";
}

static int eal_first_init(const struct port_config *cfg, char *err, size_t errlen)
{
	char **argv, **work;
	int argc = 0, rc;
	char shown[ERRBUF_LEN / 2]; /* the rest of ERRBUF_LEN holds the words around it */

	argv = build_eal_argv(cfg, &argc);
	if (!argv)
		return errbuf_fail(err, errlen, -ENOMEM, "out of memory");
	format_args(shown, sizeof(shown), argc, argv);
	/* rte_eal_init permutes the array it gets: give it a copy, and keep
	 * the strings for the life of the process in case EAL kept any. */
	work = calloc((size_t)argc + 1, sizeof(*work));
	if (!work) {
		free_argv(argv);
		return errbuf_fail(err, errlen, -ENOMEM, "out of memory");
	}
	memcpy(work, argv, (size_t)argc * sizeof(*work));
	rc = rte_eal_init(argc, work);
	free(work);
	if (rc < 0) {
		/* EAL cannot be initialised twice in a process, even after a failure. */
		eal_state = EAL_FAILED;
		eal_errno = rte_errno > 0 ? rte_errno : EINVAL;
		free_argv(argv);
		return errbuf_fail(err, errlen, -eal_errno,
			    "DPDK EAL initialisation failed (%s); EAL arguments were: %s. "
			    "EAL printed the details above. Accepted are DPDK's EAL options, e.g. "
			    "--no-huge -m 512 --no-pci --vdev net_af_packet0,iface=IFACE "
			    "(--no-huge when no hugepages are reserved)%s",
			    rte_strerror(eal_errno), shown,
			    eal_errno == EACCES || eal_errno == EPERM ? root_hint() : "");
	}
	eal_argv_kept = argv;
	eal_state = EAL_UP;
	atexit(eal_cleanup_at_exit);
	return 0;
}

/* EAL is already up (another port opened it): its options are fixed now,
 * but a --vdev this port needs can still be hot-plugged. */
static int eal_add_vdevs(const struct port_config *cfg, char *err, size_t errlen)
{
	for (int i = 1; i < cfg->eal_argc; i++) {
		const char *a = cfg->eal_argv[i], *spec = NULL;
		char name[RTE_DEV_NAME_MAX_LEN];
		uint16_t pid;
		size_t n;
		int rc;

		if (!a)
			continue;
		if (!strcmp(a, "--vdev") && i + 1 < cfg->eal_argc)
			spec = cfg->eal_argv[++i];
		else if (!strncmp(a, "--vdev=", 7))
			spec = a + 7;
		if (!spec)
			continue;
		n = strcspn(spec, ",");
		if (n == 0 || n >= sizeof(name))
			return errbuf_fail(err, errlen, -EINVAL, "--vdev '%s': expected NAME[,ARGS] with a name of 1-%zu characters",
				    spec, sizeof(name) - 1);
		memcpy(name, spec, n);
		name[n] = '\0';
		if (!rte_eth_dev_get_port_by_name(name, &pid))
			continue;
		rc = rte_dev_probe(spec);
		if (rc < 0)
			return errbuf_fail(err, errlen, rc, "DPDK could not add device '%s' (%s); EAL printed the details above",
				    spec, rte_strerror(-rc));
	}
	return 0;
}

static int eal_ensure(const struct port_config *cfg, char *err, size_t errlen)
{
	switch (eal_state) {
	case EAL_NONE:
		return eal_first_init(cfg, err, errlen);
	case EAL_UP:
		return eal_add_vdevs(cfg, err, errlen);
	case EAL_FAILED:
		break;
	}
	return errbuf_fail(err, errlen, -eal_errno,
		    "DPDK EAL initialisation failed earlier in this process (%s) and cannot be retried",
		    rte_strerror(eal_errno));
}

static void list_ports(char *buf, size_t cap)
{
	size_t len = 0;
	uint16_t pid;

	buf[0] = '\0';
	RTE_ETH_FOREACH_DEV(pid) {
		char name[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(pid, name))
			continue;
		len += (size_t)snprintf(buf + len, cap - len, "%s%u (%s)", len ? ", " : "", pid, name);
		if (len >= cap)
			break;
	}
	if (!buf[0])
		snprintf(buf, cap, "none");
}

/* ---- open / close ---------------------------------------------------- */

/* Some PMDs ask the kernel (an ioctl) for the link: read it from poll on a
 * timer, never per call. */
static void read_link(struct dpdk_priv *d)
{
	struct rte_eth_link link;

	d->link_up = rte_eth_link_get_nowait(d->port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

/* Data room of an mbuf that holds a whole frame at this MTU (plus a VLAN
 * tag): the port never chains segments. net_af_xdp uses the pool as its
 * UMEM and the kernel puts its XDP headroom inside the data room; a frame
 * that does not fit behind it is dropped by the kernel. */
static uint32_t mbuf_room(uint32_t mtu, bool af_xdp)
{
	uint32_t room = RTE_PKTMBUF_HEADROOM + mtu + RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN + RTE_ETHER_CRC_LEN;

	if (af_xdp)
		room += DPDK_XDP_HEADROOM;
	return room < RTE_MBUF_DEFAULT_BUF_SIZE ? RTE_MBUF_DEFAULT_BUF_SIZE : room;
}

/* A whole mempool object is one UMEM chunk for net_af_xdp, and the kernel
 * takes chunks of at most a page. */
static uint32_t af_xdp_obj_size(uint32_t room)
{
	return rte_mempool_calc_obj_size((uint32_t)sizeof(struct rte_mbuf) + room, 0, NULL);
}

/* The MTU of the kernel interface a vdev is bound to: its PMD starts at
 * ethdev's 1500 whatever the interface says. */
static int kernel_mtu(unsigned ifindex, char name[IF_NAMESIZE], uint16_t *mtu)
{
	struct ifreq ifr;
	int fd, rc = 0;

	if (!if_indextoname(ifindex, name))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, IF_NAMESIZE);
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		rc = -errno;
	else
		*mtu = ifr.ifr_mtu > UINT16_MAX ? UINT16_MAX : (uint16_t)ifr.ifr_mtu;
	close(fd);
	return rc;
}

/* The IPv4 address of the kernel interface a vdev is bound to, for a port
 * whose caller gave none (the tools take their GID from the port, as the
 * afxdp port does): 0 when it has none. */
static uint32_t kernel_ipv4(unsigned ifindex)
{
	char name[IF_NAMESIZE];
	struct ifreq ifr;
	uint32_t ip = 0;
	int fd;

	if (!if_indextoname(ifindex, name))
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, IF_NAMESIZE);
	ifr.ifr_addr.sa_family = AF_INET;
	if (ioctl(fd, SIOCGIFADDR, &ifr) == 0)
		ip = ((struct sockaddr_in *)(void *)&ifr.ifr_addr)->sin_addr.s_addr;
	close(fd);
	return ip;
}

static int dpdk_setup(struct port *p, struct dpdk_priv *d, char *err, size_t errlen)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	struct rte_ether_addr mac;
	uint16_t pid = d->port_id, nq = (uint16_t)(d->queue + 1), mtu = RTE_ETHER_MTU;
	uint16_t nb_rxd = DPDK_RX_DESC, nb_txd = DPDK_TX_DESC;
	uint32_t room, overhead, max_mtu, page = (uint32_t)sysconf(_SC_PAGESIZE);
	bool is_af_xdp;
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	int socket, rc;

	rc = rte_eth_dev_info_get(pid, &info);
	if (rc)
		return errbuf_fail(err, errlen, rc, "DPDK port %u: cannot read device info (%s)", pid, rte_strerror(-rc));
	if (d->queue >= info.max_rx_queues || d->queue >= info.max_tx_queues)
		return errbuf_fail(err, errlen, -EINVAL, "DPDK port %u (%s): queue %u does not exist; it has %u RX and %u TX queues",
			    pid, info.driver_name, d->queue, info.max_rx_queues, info.max_tx_queues);
	d->dev = info.device;
	d->is_vdev = info.device && !strcmp(rte_bus_name(rte_dev_bus(info.device)), "vdev");
	p->ifindex = (int)info.if_index;

	/* The link's MTU: the kernel interface's for a vdev bound to one, else
	 * what the PMD reports; never forced to 1500. */
	/* ethdev's own bound: max_rx_pktlen less the overhead it assumes. */
	overhead = info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu ?
		   info.max_rx_pktlen - info.max_mtu : RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
	max_mtu = info.max_rx_pktlen > overhead ? info.max_rx_pktlen - overhead : 0;
	if (max_mtu > info.max_mtu)
		max_mtu = info.max_mtu;
	if (rte_eth_dev_get_mtu(pid, &mtu) || mtu < info.min_mtu || mtu > max_mtu)
		mtu = RTE_ETHER_MTU;
	if (info.if_index) {
		char ifname[IF_NAMESIZE];
		uint16_t kmtu = 0;

		if (kernel_mtu(info.if_index, ifname, &kmtu) == 0) {
			if (kmtu < info.min_mtu || kmtu > max_mtu)
				return errbuf_fail(err, errlen, -EINVAL,
					    "DPDK port %u (%s): interface %s has MTU %u, this PMD takes %u-%u; "
					    "set the interface's MTU in that range",
					    pid, info.driver_name, ifname, kmtu, info.min_mtu, max_mtu);
			mtu = kmtu;
		}
	}

	is_af_xdp = !strcmp(info.driver_name, "net_af_xdp");
	room = mbuf_room(mtu, is_af_xdp);
	if (room > UINT16_MAX)
		return errbuf_fail(err, errlen, -EINVAL, "DPDK port %u: MTU %u needs %u-byte buffers, more than an mbuf holds",
			    pid, mtu, room);
	if (is_af_xdp && af_xdp_obj_size(room) > page) {
		uint16_t fit = mtu;

		while (fit > info.min_mtu && af_xdp_obj_size(mbuf_room(fit, true)) > page)
			fit--;
		return errbuf_fail(err, errlen, -EINVAL,
			    "DPDK port %u (net_af_xdp): MTU %u needs %u-byte UMEM chunks, more than a page (%u); "
			    "set the interface's MTU to %u or less",
			    pid, mtu, af_xdp_obj_size(room), page, fit);
	}
	socket = rte_eth_dev_socket_id(pid);
	if (socket < 0)
		socket = (int)SOCKET_ID_ANY;
	snprintf(pool_name, sizeof(pool_name), "uroce_p%u", pid);
	d->pool = rte_pktmbuf_pool_create(pool_name, DPDK_POOL_MBUFS, DPDK_POOL_CACHE, 0, (uint16_t)room, socket);
	if (!d->pool)
		return errbuf_fail(err, errlen, -rte_errno, "DPDK port %u: cannot create a pool of %u mbufs of %u bytes (%s); "
			    "give EAL more memory (-m MB)", pid, DPDK_POOL_MBUFS, room, rte_strerror(rte_errno));

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = mtu;
	/* Every mbuf comes from one pool with refcount 1: the PMD may free TX
	 * mbufs in bulk without looking at each. */
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	rc = rte_eth_dev_configure(pid, nq, nq, &conf);
	if (rc) {
		errbuf_fail(err, errlen, rc, "DPDK port %u (%s): configure with %u RX/TX queues failed (%s)",
		     pid, info.driver_name, nq, rte_strerror(-rc));
		goto free_pool;
	}
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nb_rxd, &nb_txd);
	if (rc) {
		errbuf_fail(err, errlen, rc, "DPDK port %u: descriptor counts rejected (%s)", pid, rte_strerror(-rc));
		goto close_dev;
	}
	/* Queues below ours must exist for the PMD to start; they share the
	 * pool and are never polled. */
	for (uint16_t q = 0; q < nq; q++) {
		struct rte_eth_txconf txc = info.default_txconf;

		txc.offloads = conf.txmode.offloads;
		rc = rte_eth_rx_queue_setup(pid, q, nb_rxd, (unsigned)socket, NULL, d->pool);
		if (rc) {
			errbuf_fail(err, errlen, rc, "DPDK port %u (%s): RX queue %u setup failed (%s)",
			     pid, info.driver_name, q, rte_strerror(-rc));
			goto close_dev;
		}
		rc = rte_eth_tx_queue_setup(pid, q, nb_txd, (unsigned)socket, &txc);
		if (rc) {
			errbuf_fail(err, errlen, rc, "DPDK port %u (%s): TX queue %u setup failed (%s)",
			     pid, info.driver_name, q, rte_strerror(-rc));
			goto close_dev;
		}
	}
	rc = rte_eth_dev_start(pid);
	if (rc) {
		errbuf_fail(err, errlen, rc, "DPDK port %u (%s): start failed (%s)", pid, info.driver_name, rte_strerror(-rc));
		goto close_dev;
	}
	rc = rte_eth_macaddr_get(pid, &mac);
	if (rc) {
		errbuf_fail(err, errlen, rc, "DPDK port %u: cannot read the MAC address (%s)", pid, rte_strerror(-rc));
		goto stop_dev;
	}
	memcpy(p->mac, mac.addr_bytes, 6);
	if (rte_eth_dev_get_mtu(pid, &mtu) == 0)
		p->mtu = mtu;
	else
		p->mtu = RTE_ETHER_MTU;
	d->max_frame = p->mtu + RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN;
	read_link(d);
	d->last_stats_tsc = rte_get_tsc_cycles();
	return 0;

stop_dev:
	rte_eth_dev_stop(pid);
close_dev:
	/* A configured port cannot be un-configured; closing releases its
	 * queues before their pool goes. */
	rte_eth_dev_close(pid);
	if (d->is_vdev && d->dev)
		rte_dev_remove(d->dev);
free_pool:
	rte_mempool_free(d->pool);
	d->pool = NULL;
	return rc < 0 ? rc : -EIO;
}

static int dpdk_open(struct port *p, char *err, size_t errlen)
{
	const struct port_config *cfg = &p->cfg;
	struct dpdk_priv *d;
	char ports[256];
	int rc;

	if (cfg->eal_argc < 0 || (cfg->eal_argc > 0 && !cfg->eal_argv))
		return errbuf_fail(err, errlen, -EINVAL, "dpdk port: eal_argc is %d but eal_argv is %s",
			    cfg->eal_argc, cfg->eal_argv ? "set" : "NULL");

	pthread_mutex_lock(&eal_lock);
	rc = eal_ensure(cfg, err, errlen);
	if (rc)
		goto unlock;
	if (!rte_eth_dev_is_valid_port(cfg->dpdk_port_id)) {
		list_ports(ports, sizeof(ports));
		rc = errbuf_fail(err, errlen, -ENODEV,
			  "DPDK port %u does not exist; ports found: %s. Give the device to EAL "
			  "(--vdev net_af_xdp0,iface=IFACE / --vdev net_af_packet0,iface=IFACE / -a PCI_ADDR); "
			  "a device that failed to probe is reported by EAL above%s",
			  cfg->dpdk_port_id, ports, root_hint());
		goto unlock;
	}
	if (port_in_use[cfg->dpdk_port_id]) {
		rc = errbuf_fail(err, errlen, -EBUSY, "DPDK port %u is already open in this process", cfg->dpdk_port_id);
		goto unlock;
	}
	if (cfg->queue > UINT16_MAX - 1) {
		rc = errbuf_fail(err, errlen, -EINVAL, "dpdk port: queue %u out of range", cfg->queue);
		goto unlock;
	}

	d = rte_zmalloc_socket("uroce_dpdk_port", sizeof(*d), RTE_CACHE_LINE_SIZE, SOCKET_ID_ANY);
	if (!d) {
		rc = errbuf_fail(err, errlen, -ENOMEM, "DPDK port %u: out of EAL memory for the port state (-m MB)",
			  cfg->dpdk_port_id);
		goto unlock;
	}
	d->port_id = cfg->dpdk_port_id;
	d->queue = (uint16_t)cfg->queue;
	d->tsc_hz = rte_get_tsc_hz();
	arp_table_init(&d->arp);
	rc = dpdk_setup(p, d, err, errlen);
	if (rc) {
		rte_free(d);
		goto unlock;
	}
	p->ipv4_be = cfg->ipv4_be;
	if (!p->ipv4_be && p->ifindex > 0)
		p->ipv4_be = kernel_ipv4((unsigned)p->ifindex);
	nd_table_init(&d->nd);
	nl_link_local_from_mac(p->mac, d->ll[0]);
	p->priv = d;
	port_in_use[d->port_id] = true;
unlock:
	pthread_mutex_unlock(&eal_lock);
	return rc;
}

static void dpdk_close(struct port *p)
{
	struct dpdk_priv *d = p->priv;

	if (!d)
		return;
	pthread_mutex_lock(&eal_lock);
	rte_eth_dev_stop(d->port_id);
	while (d->stash_head != d->stash_tail)
		rte_pktmbuf_free(d->stash[d->stash_head++ & (DPDK_STASH - 1)]);
	rte_pktmbuf_free_bulk(d->ctl_tx, d->n_ctl);
	rte_eth_dev_close(d->port_id);
	/* A vdev is removed too, so that opening it again re-probes it from
	 * its --vdev argument. */
	if (d->is_vdev && d->dev)
		rte_dev_remove(d->dev);
	rte_mempool_free(d->pool);
	port_in_use[d->port_id] = false;
	pthread_mutex_unlock(&eal_lock);
	rte_free(d);
	p->priv = NULL;
}

/* ---- data path --------------------------------------------------------- */

static inline void mbuf_to_frame(struct rte_mbuf *m, struct uroce_frame *f)
{
	f->data = rte_pktmbuf_mtod(m, uint8_t *);
	f->len = m->data_len;
	f->room = (uint32_t)(m->buf_len - m->data_off);
	f->cookie = (uint64_t)(uintptr_t)m;
}

static void flush_ctl(struct dpdk_priv *d)
{
	uint16_t sent = rte_eth_tx_burst(d->port_id, d->queue, d->ctl_tx, d->n_ctl);

	if (sent && sent < d->n_ctl)
		memmove(d->ctl_tx, d->ctl_tx + sent, (size_t)(d->n_ctl - sent) * sizeof(d->ctl_tx[0]));
	d->n_ctl = (uint16_t)(d->n_ctl - sent);
}

static void queue_ctl(struct port *p, struct dpdk_priv *d, struct rte_mbuf *m)
{
	if (d->n_ctl == DPDK_CTL_TX_MAX) {
		rte_pktmbuf_free(m);
		port_count_drop(p, UROCE_DROP_TX_RING_FULL);
		return;
	}
	d->ctl_tx[d->n_ctl++] = m;
}

/* Queues an answer built in place over the request it answers. */
static void queue_reply(struct port *p, struct dpdk_priv *d, struct rte_mbuf *m, uint32_t len)
{
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	m->ol_flags = 0;
	queue_ctl(p, d, m);
}

/* Consumes m: answered in place (queued for TX) or freed. */
static __attribute__((noinline)) void handle_arp(struct port *p, struct dpdk_priv *d, struct rte_mbuf *m)
{
	enum arp_parse_result why;
	uint32_t out_len = 0;
	uint8_t *data = rte_pktmbuf_mtod(m, uint8_t *);

	switch (arp_input(&d->arp, &d->arp_stats, p->mac, p->ipv4_be, data, m->data_len,
			  (uint32_t)(m->buf_len - m->data_off), rte_get_tsc_cycles(), &out_len, &why)) {
	case ARP_ACTION_REPLY:
		queue_reply(p, d, m, out_len);
		return;
	case ARP_ACTION_MALFORMED:
		port_count_drop(p, why == ARP_SHORT ? UROCE_DROP_SHORT_FRAME : UROCE_DROP_NOT_IP);
		break;
	case ARP_ACTION_CONSUMED:
		break;
	}
	rte_pktmbuf_free(m);
}

/* Consumes m, like handle_arp: an NS for our link-local is answered in
 * place, NAs and NS sources are learned. */
static __attribute__((noinline)) void handle_nd(struct port *p, struct dpdk_priv *d, struct rte_mbuf *m)
{
	uint32_t out_len = 0;
	uint8_t *data = rte_pktmbuf_mtod(m, uint8_t *);

	switch (nd_input(&d->nd, &d->nd_stats, p->mac, (const uint8_t(*)[16])d->ll, 1, data, m->data_len,
			 (uint32_t)(m->buf_len - m->data_off), rte_get_tsc_cycles(), &out_len)) {
	case ND_ACTION_REPLY:
		queue_reply(p, d, m, out_len);
		return;
	case ND_ACTION_MALFORMED:
		port_count_drop(p, UROCE_DROP_NOT_UDP);
		break;
	case ND_ACTION_CONSUMED:
		break;
	}
	rte_pktmbuf_free(m);
}

/* Sorts a received burst: ARP and IPv6 ND to the port, frames that do not fit one
 * buffer dropped, the rest out as frames. Returns how many went out. */
static inline uint16_t sort_rx(struct port *p, struct dpdk_priv *d, struct rte_mbuf **m, uint16_t nb,
			       struct uroce_frame *f, struct rte_mbuf **keep)
{
	uint16_t out = 0;

	for (uint16_t i = 0; i < nb; i++) {
		struct rte_mbuf *mb = m[i];
		const uint8_t *data;

		if (i + 1 < nb)
			rte_prefetch0(rte_pktmbuf_mtod(m[i + 1], void *));
		data = rte_pktmbuf_mtod(mb, const uint8_t *);
		if (unlikely(mb->nb_segs != 1)) {
			rte_pktmbuf_free(mb);
			port_count_drop(p, UROCE_DROP_NO_BUFFER);
			continue;
		}
		if (unlikely(arp_is_arp(data, mb->data_len))) {
			handle_arp(p, d, mb);
			continue;
		}
		if (unlikely(nd_is_nd(data, mb->data_len))) {
			handle_nd(p, d, mb);
			continue;
		}
		if (f)
			mbuf_to_frame(mb, &f[out]);
		else
			keep[out] = mb;
		out++;
	}
	return out;
}

static inline uint32_t stash_count(const struct dpdk_priv *d)
{
	return d->stash_tail - d->stash_head;
}

static uint16_t dpdk_rx_burst(struct port *p, struct uroce_frame *f, uint16_t n)
{
	struct dpdk_priv *d = p->priv;
	uint16_t got = 0, nb;

	d->rx_calls++;
	if (n > PORT_BURST_MAX)
		n = PORT_BURST_MAX;
	if (unlikely(stash_count(d))) {
		while (got < n && d->stash_head != d->stash_tail)
			mbuf_to_frame(d->stash[d->stash_head++ & (DPDK_STASH - 1)], &f[got++]);
		if (got == n)
			return got;
	}
	nb = rte_eth_rx_burst(d->port_id, d->queue, d->scratch, (uint16_t)(n - got));
	if (nb)
		got = (uint16_t)(got + sort_rx(p, d, d->scratch, nb, f + got, NULL));
	if (unlikely(d->n_ctl))
		flush_ctl(d);
	return got;
}

/* Receive on the caller's behalf into the stash. With make_room, the
 * oldest stashed frames give way so that ARP keeps being answered. */
static void pull(struct port *p, struct dpdk_priv *d, bool make_room)
{
	uint32_t space = DPDK_STASH - stash_count(d);
	uint16_t nb, kept;

	if (make_room && space < PORT_BURST_MAX) {
		uint32_t drop = PORT_BURST_MAX - space;

		for (uint32_t i = 0; i < drop; i++)
			rte_pktmbuf_free(d->stash[d->stash_head++ & (DPDK_STASH - 1)]);
		p->stats.drops[UROCE_DROP_NO_BUFFER] += drop;
		space = PORT_BURST_MAX;
	}
	if (!space)
		return;
	nb = rte_eth_rx_burst(d->port_id, d->queue, d->pull_buf,
			      (uint16_t)(space < PORT_BURST_MAX ? space : PORT_BURST_MAX));
	if (!nb)
		return;
	kept = sort_rx(p, d, d->pull_buf, nb, NULL, d->pull_buf);
	for (uint16_t i = 0; i < kept; i++)
		d->stash[d->stash_tail++ & (DPDK_STASH - 1)] = d->pull_buf[i];
	/* Frames the port delivers count as received when they leave the
	 * stash through rx_burst, like any other. */
}

/* A frame the caller got from this port, pointing inside its mbuf, no
 * longer than the link takes. A caller bug otherwise, but a PMD would read
 * past the buffer. */
static inline bool tx_frame_bad(const struct dpdk_priv *d, const struct uroce_frame *fr, struct rte_mbuf *mb)
{
	uintptr_t off = (uintptr_t)fr->data - (uintptr_t)mb->buf_addr;

	return fr->len == 0 || fr->len > d->max_frame || off > mb->buf_len || off + fr->len > mb->buf_len;
}

/* The slow half of tx_burst when some frames are unusable: those inside
 * the taken prefix are freed and counted, the rest stay with the caller. */
static __attribute__((noinline)) uint16_t tx_with_bad(struct port *p, struct dpdk_priv *d, struct uroce_frame *f,
						      uint16_t n, const bool *bad, uint16_t nvalid)
{
	uint16_t sent = rte_eth_tx_burst(d->port_id, d->queue, d->scratch, nvalid), taken = 0, seen = 0;

	for (; taken < n; taken++) {
		if (bad[taken]) {
			rte_pktmbuf_free((struct rte_mbuf *)(uintptr_t)f[taken].cookie);
			port_count_drop(p, UROCE_DROP_BAD_LENGTH);
			continue;
		}
		if (seen == sent)
			break;
		seen++;
	}
	return taken;
}

static uint16_t dpdk_tx_burst(struct port *p, struct uroce_frame *f, uint16_t n)
{
	struct dpdk_priv *d = p->priv;
	struct rte_mbuf **m = d->scratch;
	bool bad[PORT_BURST_MAX];
	bool any_bad = false;
	uint16_t k = 0;

	if (n > PORT_BURST_MAX)
		n = PORT_BURST_MAX;
	if (unlikely(d->n_ctl))
		flush_ctl(d);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *mb = (struct rte_mbuf *)(uintptr_t)f[i].cookie;

		bad[i] = tx_frame_bad(d, &f[i], mb);
		if (unlikely(bad[i])) {
			any_bad = true;
			continue;
		}
		/* The caller may have moved data within the buffer (prepended a
		 * header); the mbuf follows it. */
		mb->data_off = (uint16_t)(f[i].data - (uint8_t *)mb->buf_addr);
		mb->data_len = (uint16_t)f[i].len;
		mb->pkt_len = f[i].len;
		m[k++] = mb;
	}
	if (unlikely(any_bad))
		return tx_with_bad(p, d, f, n, bad, k);
	/* Frames [sent, n) stay the caller's to retry or free (port.h): not
	 * a drop. What the PMD accepts and then fails to send is counted
	 * from its oerrors by poll. */
	return rte_eth_tx_burst(d->port_id, d->queue, m, n);
}

static uint16_t dpdk_alloc(struct port *p, struct uroce_frame *f, uint16_t n)
{
	struct dpdk_priv *d = p->priv;
	struct rte_mbuf **m = d->scratch;

	if (n > PORT_BURST_MAX)
		n = PORT_BURST_MAX;
	if (unlikely(rte_pktmbuf_alloc_bulk(d->pool, m, n))) {
		/* All or nothing: settle for what the pool still has. */
		unsigned avail = rte_mempool_avail_count(d->pool);

		if (!avail)
			return 0;
		n = (uint16_t)(avail < n ? avail : n);
		if (rte_pktmbuf_alloc_bulk(d->pool, m, n))
			return 0;
	}
	for (uint16_t i = 0; i < n; i++) {
		f[i].data = rte_pktmbuf_mtod(m[i], uint8_t *);
		f[i].len = 0;
		f[i].room = (uint32_t)(m[i]->buf_len - m[i]->data_off);
		f[i].cookie = (uint64_t)(uintptr_t)m[i];
	}
	return n;
}

static void dpdk_free(struct port *p, struct uroce_frame *f, uint16_t n)
{
	struct dpdk_priv *d = p->priv;
	struct rte_mbuf **m = d->scratch;

	while (n) {
		uint16_t k = n < PORT_BURST_MAX ? n : PORT_BURST_MAX;

		for (uint16_t i = 0; i < k; i++)
			m[i] = (struct rte_mbuf *)(uintptr_t)f[i].cookie;
		rte_pktmbuf_free_bulk(m, k);
		f += k;
		n = (uint16_t)(n - k);
	}
}

static void dpdk_link_refresh(struct port *p)
{
	read_link(p->priv);
}

static bool dpdk_link_up(struct port *p)
{
	return ((struct dpdk_priv *)p->priv)->link_up;
}

/* Fold the PMD's own drops into ours: no mbuf for an arriving frame or RX
 * ring overflow as no_buffer, frames it took for TX but could not send as
 * tx_ring_full. */
static void fold_hw_stats(struct port *p, struct dpdk_priv *d)
{
	struct rte_eth_stats st;
	uint64_t rx, tx;

	if (rte_eth_stats_get(d->port_id, &st))
		return;
	rx = st.imissed + st.rx_nombuf;
	tx = st.oerrors;
	if (rx > d->hw_nobuf_seen)
		p->stats.drops[UROCE_DROP_NO_BUFFER] += rx - d->hw_nobuf_seen;
	if (tx > d->hw_txerr_seen)
		p->stats.drops[UROCE_DROP_TX_RING_FULL] += tx - d->hw_txerr_seen;
	d->hw_nobuf_seen = rx;
	d->hw_txerr_seen = tx;
}

static void dpdk_poll(struct port *p)
{
	struct dpdk_priv *d = p->priv;
	uint64_t now = rte_get_tsc_cycles();

	if (d->n_ctl)
		flush_ctl(d);
	if (d->rx_calls != d->rx_calls_seen) {
		d->rx_calls_seen = d->rx_calls;
		d->last_rx_call_tsc = now;
	} else if (now - d->last_pull_tsc >= d->tsc_hz / (1000000 / DPDK_POLL_RX_US)) {
		d->last_pull_tsc = now;
		pull(p, d, now - d->last_rx_call_tsc >= d->tsc_hz / 1000 * DPDK_STASH_STALE_MS);
		if (d->n_ctl)
			flush_ctl(d);
	}
	if (now - d->last_stats_tsc >= d->tsc_hz / 1000 * DPDK_STATS_MS) {
		d->last_stats_tsc = now;
		fold_hw_stats(p, d);
		read_link(d);
	}
}

/* ---- neighbours ------------------------------------------------------ */

/* Send a control frame the caller built into m (len bytes, or a negative
 * errno from its builder, which frees m). */
static int send_ctl(struct port *p, struct dpdk_priv *d, struct rte_mbuf *m, int len)
{
	if (len < 0) {
		rte_pktmbuf_free(m);
		return len;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	queue_ctl(p, d, m);
	flush_ctl(d);
	return 0;
}

static int send_arp_request(struct port *p, struct dpdk_priv *d, uint32_t tip_be)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
	int rc;

	if (!m)
		return -ENOBUFS;
	rc = send_ctl(p, d, m, arp_build_request(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), p->mac,
	                                         p->ipv4_be, tip_be));
	if (!rc)
		d->arp_stats.requests_tx++;
	return rc;
}

static bool is_dpdk(const struct port *p)
{
	return p && p->ops == &port_dpdk_ops && p->priv;
}

bool port_dpdk_neigh_lookup(struct port *p, uint32_t ipv4_be, uint8_t mac[6])
{
	if (!is_dpdk(p))
		return false;
	return arp_table_lookup(&((struct dpdk_priv *)p->priv)->arp, ipv4_be, mac);
}

void port_dpdk_arp_stats(struct port *p, struct arp_stats *out)
{
	if (!is_dpdk(p)) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = ((struct dpdk_priv *)p->priv)->arp_stats;
}

/* One neighbour protocol for the solicit-and-wait loop: ask for addr,
 * and look it up in the table the answers fill. */
struct resolver {
	int (*ask)(struct port *p, struct dpdk_priv *d, const void *addr);
	bool (*known)(const struct dpdk_priv *d, const void *addr, uint8_t mac[6]);
};

/* Ask every DPDK_ARP_RETRY_MS and poll the port (so the answer is taken
 * in) until the table knows addr or timeout_ms passes. A slow path. */
static int resolve_wait(struct port *p, struct dpdk_priv *d, const struct resolver *r, const void *addr,
                        uint8_t mac[6], int timeout_ms)
{
	uint64_t hz = d->tsc_hz, now, deadline, next_req;
	int rc;

	if (r->known(d, addr, mac))
		return 0;
	now = rte_get_tsc_cycles();
	deadline = now + hz / 1000 * (uint64_t)timeout_ms;
	next_req = now;
	for (;;) {
		if (now >= next_req) {
			rc = r->ask(p, d, addr);
			if (rc)
				return rc;
			next_req = now + hz / 1000 * DPDK_ARP_RETRY_MS;
		}
		pull(p, d, true);
		if (d->n_ctl)
			flush_ctl(d);
		if (r->known(d, addr, mac))
			return 0;
		now = rte_get_tsc_cycles();
		if (now >= deadline)
			return -ETIMEDOUT;
		/* yield the CPU to whoever must answer us */
		rte_delay_us_sleep(50);
		now = rte_get_tsc_cycles();
	}
}

static int arp_ask(struct port *p, struct dpdk_priv *d, const void *addr)
{
	return send_arp_request(p, d, *(const uint32_t *)addr);
}

static bool arp_known(const struct dpdk_priv *d, const void *addr, uint8_t mac[6])
{
	return arp_table_lookup(&d->arp, *(const uint32_t *)addr, mac);
}

int port_dpdk_resolve(struct port *p, uint32_t ipv4_be, uint8_t mac[6], int timeout_ms)
{
	static const struct resolver arp = { arp_ask, arp_known };

	if (!is_dpdk(p) || !ipv4_be || timeout_ms < 0)
		return -EINVAL;
	return resolve_wait(p, p->priv, &arp, &ipv4_be, mac, timeout_ms);
}

static int send_ns(struct port *p, struct dpdk_priv *d, const uint8_t target[16])
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
	int rc;

	if (!m)
		return -ENOBUFS;
	nd_table_solicit(&d->nd, target, rte_get_tsc_cycles()); /* only what we asked for is learned */
	rc = send_ctl(p, d, m, nd_build_ns(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), p->mac, d->ll[0],
	                                   target));
	if (!rc)
		d->nd_stats.ns_tx++;
	return rc;
}

static int nd_ask(struct port *p, struct dpdk_priv *d, const void *addr)
{
	return send_ns(p, d, addr);
}

static bool nd_known(const struct dpdk_priv *d, const void *addr, uint8_t mac[6])
{
	return nd_table_lookup(&d->nd, addr, mac);
}

int port_dpdk_resolve6(struct port *p, const uint8_t ip[16], uint8_t mac[6], int timeout_ms)
{
	static const struct resolver nd = { nd_ask, nd_known };

	if (!is_dpdk(p) || timeout_ms < 0 || ip[0] == 0xff)
		return -EINVAL;
	return resolve_wait(p, p->priv, &nd, ip, mac, timeout_ms);
}

void port_dpdk_nd_stats(struct port *p, struct nd_stats *out)
{
	if (!is_dpdk(p)) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = ((struct dpdk_priv *)p->priv)->nd_stats;
}

const struct port_ops port_dpdk_ops = {
	.name = "dpdk",
	.open = dpdk_open,
	.close = dpdk_close,
	.rx_burst = dpdk_rx_burst,
	.tx_burst = dpdk_tx_burst,
	.alloc = dpdk_alloc,
	.free = dpdk_free,
	.link_up = dpdk_link_up,
	.link_refresh = dpdk_link_refresh,
	.poll = dpdk_poll,
};
