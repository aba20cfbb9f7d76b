/* SPDX-License-Identifier: MIT */
/* init/finalize, the UROCE_NCCL_* environment, the devices and their
 * properties. One uroce context per device, shared by every comm on it,
 * opened at the first init and closed at the last finalize. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_uroce.h"

struct un_global un_g = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define UN_ENV_HELP                                                                                                   \
	"UROCE_NCCL_DEVICES=afxdp:IFACE[:QUEUE]|dpdk[:PORT]|verbs:DEV[:PORT],... (required), "                          \
	"UROCE_NCCL_RELIABILITY=rc|sr|ec|be, UROCE_NCCL_PATHS=1..256, UROCE_NCCL_CC=none|dcqcn|swift|cubic|eqds, "      \
	"UROCE_NCCL_CORES=inline|CPU[,CPU...], UROCE_NCCL_BE_TIMEOUT_US=1..60000000, UROCE_NCCL_BE_US_PER_MIB=0..60000000, UROCE_NCCL_RC_TIMEOUT=1..31, "      \
	"UROCE_NCCL_HADAMARD=BLOCK[:STRIDE] (be, float32 data)"

static int env_uint(const char *name, unsigned long lo, unsigned long hi, unsigned long dflt, unsigned long *out)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	*out = dflt;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || s[0] == '-' || v < lo || v > hi) {
		UN_WARN("%s=%s: not a number in %lu..%lu", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_config(struct un_config *cfg, int *cpus, int *ncpus)
{
	const char *s;
	unsigned long v;

	memset(cfg, 0, sizeof(*cfg));
	s = getenv("UROCE_NCCL_RELIABILITY");
	if (s && *s && uroce_reliability_parse(s, &cfg->rel.reliability)) {
		UN_WARN("UROCE_NCCL_RELIABILITY=%s: accepted are rc, sr, ec and be", s);
		return -1;
	}
	if (env_uint("UROCE_NCCL_PATHS", 1, UROCE_MAX_PATHS, 1, &v))
		return -1;
	cfg->path.npaths = (uint16_t)v;
	if (v > 1 && cfg->rel.reliability == UROCE_REL_RC) {
		UN_WARN("UROCE_NCCL_PATHS=%lu needs UROCE_NCCL_RELIABILITY sr, ec or be (rc keeps one path)", v);
		return -1;
	}
	s = getenv("UROCE_NCCL_CC");
	if (s && *s) {
		if (uroce_cc_parse(s, &cfg->cc.algo)) {
			UN_WARN("UROCE_NCCL_CC=%s: accepted are none, dcqcn, swift, cubic and eqds", s);
			return -1;
		}
		if (cfg->cc.algo != UROCE_CC_NONE && cfg->rel.reliability == UROCE_REL_RC) {
			UN_WARN("UROCE_NCCL_CC=%s needs UROCE_NCCL_RELIABILITY sr, ec or be", s);
			return -1;
		}
	}
	if (env_uint("UROCE_NCCL_BE_TIMEOUT_US", 1, 60000000, 10000, &v))
		return -1;
	cfg->be_timeout_us = (uint32_t)v;
	if (env_uint("UROCE_NCCL_BE_US_PER_MIB", 0, 60000000, 2000, &v))
		return -1;
	cfg->be_us_per_mib = (uint32_t)v;
	cfg->rel.timeout_us = cfg->be_timeout_us;
	s = getenv("UROCE_NCCL_HADAMARD");
	if (s && *s) {
		/* OptiNIC's coding of float32 data: the sender encodes a copy,
		 * the receiver decodes once its buffer is done (lost bytes
		 * zero); BLOCK and STRIDE powers of two (uroce_hadamard_encode) */
		char *end;
		unsigned long b, st = 1;

		errno = 0;
		b = strtoul(s, &end, 10);
		if (!errno && *end == ':')
			st = strtoul(end + 1, &end, 10);
		if (errno || *end || s[0] == '-' || b > UINT32_MAX || st > UINT32_MAX) {
			UN_WARN("UROCE_NCCL_HADAMARD=%s: accepted BLOCK or BLOCK:STRIDE, powers of two (2..2^24, 1..65536)",
			        s);
			return -1;
		}
		if (cfg->rel.reliability != UROCE_REL_BE) {
			UN_WARN("UROCE_NCCL_HADAMARD=%s needs UROCE_NCCL_RELIABILITY=be (the others deliver every byte)", s);
			return -1;
		}
		if (uroce_hadamard_encode(NULL, 0, (uint32_t)b, (uint32_t)st)) {
			UN_WARN("UROCE_NCCL_HADAMARD=%s: %s", s, uroce_last_error());
			return -1;
		}
		cfg->hd_block = (uint32_t)b;
		cfg->hd_stride = (uint32_t)st;
	}
	if (cfg->rel.reliability == UROCE_REL_SR || cfg->rel.reliability == UROCE_REL_EC)
		cfg->rel.ordering = UROCE_ORDER_UNORDERED; /* each WRITE names its receive in its immediate */
	*ncpus = 0;
	s = getenv("UROCE_NCCL_CORES");
	if (s && !strcmp(s, "inline")) {
		cfg->inline_engine = 1;
	} else if (s && *s) {
		char buf[256], *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", s);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *end;
			long c;

			errno = 0;
			c = strtol(tok, &end, 10);
			if (errno || *end || c < 0 || c >= CPU_SETSIZE || *ncpus >= UN_MAX_DEVS) {
				UN_WARN("UROCE_NCCL_CORES=%s: give 'inline' or up to %d CPU numbers, comma-separated", s,
				        UN_MAX_DEVS);
				return -1;
			}
			cpus[(*ncpus)++] = (int)c;
		}
	}
	/* rc's local ACK timeout: perftest's 67 ms */
	if (env_uint("UROCE_NCCL_RC_TIMEOUT", 1, 31, 14, &v))
		return -1;
	cfg->rc_timeout = (uint8_t)v;
	return 0;
}

static int read_sys_int(const char *ifname, const char *file, long *out)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", ifname, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%ld", out) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

static int open_dev(struct un_dev *d, int index, const char *spec, int cpu)
{
	struct uroce_context_attr ca = { 0 };
	struct uroce_port_attr pa;
	uint8_t gid[16];
	long speed;
	char path[128];

	memset(d, 0, sizeof(*d));
	snprintf(d->spec, sizeof(d->spec), "%s", spec);
	snprintf(d->name, sizeof(d->name), "uroce_%d:%s", index, spec);
	ca.port = d->spec;
	ca.mode = un_g.cfg.inline_engine ? UROCE_ENGINE_EMBEDDED : UROCE_ENGINE_DEDICATED;
	ca.engine_cpu = cpu;
	d->engine_cpu = cpu;
	if (uroce_context_create(&d->ctx, &ca)) {
		UN_WARN("device %s: %s", spec, uroce_last_error());
		return -1;
	}
	if (uroce_pd_alloc(d->ctx, &d->pd) || uroce_query_port(d->ctx, 1, &pa)) {
		UN_WARN("device %s: %s", spec, uroce_last_error());
		goto fail;
	}
	d->ipv4_be = pa.ipv4_be;
	d->mtu = pa.active_mtu;
	memcpy(d->gid, pa.gid, 16);
	snprintf(d->ifname, sizeof(d->ifname), "%s", pa.ifname);
	d->gid_index = -1;
	for (int i = 0; i < pa.gid_tbl_len; i++)
		if (!uroce_query_gid(d->ctx, 1, (unsigned)i, gid) && !memcmp(gid, pa.gid, 16)) {
			d->gid_index = i;
			break;
		}
	if (!d->ipv4_be || d->gid_index < 0) {
		UN_WARN("device %s has no IPv4 address: the plugin connects over IPv4 (add one to %s)", spec,
		        d->ifname[0] ? d->ifname : "its interface");
		goto fail;
	}
	d->speed_mbps = 10000;
	if (d->ifname[0] && !read_sys_int(d->ifname, "speed", &speed) && speed > 0 && speed < INT_MAX)
		d->speed_mbps = (int)speed;
	if (d->ifname[0]) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/device", d->ifname);
		d->pci_path = realpath(path, NULL); /* NULL for a virtual interface */
	}
	for (int i = 0; i < 6; i++)
		d->guid = (d->guid << 8) | pa.mac[i];
	d->guid = (d->guid << 8) | (uint64_t)index;
	return 0;
fail:
	if (d->pd)
		uroce_pd_free(d->pd);
	uroce_context_destroy(d->ctx);
	d->ctx = NULL;
	return -1;
}

static void close_devs(void)
{
	for (int i = 0; i < un_g.ndev; i++) {
		struct un_dev *d = &un_g.dev[i];

		if (d->pd)
			uroce_pd_free(d->pd);
		if (d->ctx && uroce_context_destroy(d->ctx))
			UN_WARN("%s: %s", d->name, uroce_last_error());
		free(d->pci_path);
		memset(d, 0, sizeof(*d));
	}
	un_g.ndev = 0;
}

ncclResult_t un_init(ncclDebugLogger_t log)
{
	int cpus[UN_MAX_DEVS], ncpus = 0;
	const char *devs;
	char buf[512], *tok, *save = NULL;

	if (log)
		un_g.log = log;
	if (un_g.inits++ > 0)
		return ncclSuccess;
	if (parse_config(&un_g.cfg, cpus, &ncpus))
		goto fail;
	devs = getenv("UROCE_NCCL_DEVICES");
	if (!devs || !*devs) {
		UN_WARN("UROCE_NCCL_DEVICES is not set: name the ports, e.g. UROCE_NCCL_DEVICES=afxdp:eth1 (" UN_ENV_HELP
		        ")");
		goto fail;
	}
	snprintf(buf, sizeof(buf), "%s", devs);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int cpu = ncpus ? cpus[un_g.ndev % ncpus] : -1;

		if (un_g.ndev >= UN_MAX_DEVS) {
			UN_WARN("UROCE_NCCL_DEVICES names more than %d devices", UN_MAX_DEVS);
			goto fail;
		}
		if (open_dev(&un_g.dev[un_g.ndev], un_g.ndev, tok, cpu))
			goto fail;
		un_g.ndev++;
	}
	for (int i = 0; i < un_g.ndev; i++) {
		struct un_dev *d = &un_g.dev[i];
		char ip[16];
		const uint8_t *a = (const uint8_t *)&d->ipv4_be;

		char eng[48];

		snprintf(ip, sizeof(ip), "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
		if (un_g.cfg.inline_engine)
			snprintf(eng, sizeof(eng), "inline (in the plugin's calls)");
		else if (d->engine_cpu < 0)
			snprintf(eng, sizeof(eng), "a thread, unpinned");
		else
			snprintf(eng, sizeof(eng), "a thread on CPU %d", d->engine_cpu);
		UN_INFO("device %d %s (%s, %d Mb/s, MTU %u): reliability %s, %u path(s), cc %s, engine %s", i, d->name,
		        ip, d->speed_mbps, 128u << d->mtu, uroce_reliability_str(un_g.cfg.rel.reliability),
		        un_g.cfg.path.npaths ? un_g.cfg.path.npaths : 1, uroce_cc_str(un_g.cfg.cc.algo), eng);
	}
	if (un_g.cfg.rel.reliability == UROCE_REL_BE)
		UN_INFO("be: a message's deadline is %u us + %u us per MiB; bytes a deadline cuts are left zero",
		        un_g.cfg.be_timeout_us, un_g.cfg.be_us_per_mib);
	return ncclSuccess;
fail:
	close_devs();
	un_g.inits = 0;
	return ncclInvalidUsage;
}

ncclResult_t un_finalize(void)
{
	if (un_g.inits <= 0)
		return ncclInvalidUsage;
	if (--un_g.inits > 0)
		return ncclSuccess;
	for (int i = 0; i < un_g.ndev; i++)
		if (un_g.dev[i].comms) {
			/* comms still open: keep the devices, as NCCL may finalize before closing */
			un_g.inits = 1;
			UN_WARN("finalize with %u comm(s) open on %s: devices stay open", un_g.dev[i].comms,
			        un_g.dev[i].name);
			return ncclSuccess;
		}
	close_devs();
	return ncclSuccess;
}

ncclResult_t un_devices(int *ndev)
{
	if (un_g.inits <= 0)
		return ncclInvalidUsage;
	*ndev = un_g.ndev;
	return ncclSuccess;
}

ncclResult_t un_props(int dev, struct un_props *p)
{
	struct un_dev *d;
	const char *gpu = uroce_gpu_backend();

	if (un_g.inits <= 0 || dev < 0 || dev >= un_g.ndev) {
		UN_WARN("getProperties: device %d does not exist (0..%d)", dev, un_g.ndev - 1);
		return ncclInvalidArgument;
	}
	d = &un_g.dev[dev];
	memset(p, 0, sizeof(*p));
	p->name = d->name;
	p->pci_path = d->pci_path;
	p->guid = d->guid;
	p->ptr_support = NCCL_PTR_HOST;
	/* GPU memory only where the NIC reaches it: a verbs port with the
	 * CUDA driver (dmabuf or peermem); AF_XDP and DPDK engines copy with
	 * the CPU and are given host memory. */
	if (!strncmp(d->spec, "verbs:", 6) && gpu && !strcmp(gpu, "cuda"))
		p->ptr_support |= NCCL_PTR_CUDA | NCCL_PTR_DMABUF;
	p->speed = d->speed_mbps;
	p->port = 1;
	p->latency = 0;
	p->max_comms = UN_MAX_COMMS;
	p->max_recvs = UN_MAX_RECVS;
	return ncclSuccess;
}
