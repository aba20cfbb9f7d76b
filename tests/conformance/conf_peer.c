/* SPDX-License-Identifier: MIT */
/* The uroce end of the conformance suite (tests/conformance). --role server
 * holds three legitimate connections (rc, sr and be) and the victim QPs that
 * the scapy attacker targets, inside a guarded memory arena, and answers a
 * line protocol on a Unix socket; --role client drives verified RC
 * WRITE + SEND + READ traffic, sr WRITE + SEND traffic and be WRITE + SEND
 * traffic to the server for the whole suite.
 *
 *   conf_peer --role server --port afxdp:IF --port2 afxdp:IF2 --peer-ip ATTACKER_IP \
 *             --peer-ip2 ATTACKER_IP2 --ctl PATH [options]
 *   conf_peer --role client --port afxdp:IF --server-ip SERVER_IP [options]
 *
 * The server's context has a second port (--port2) for the failover
 * victim "fo": an rc QP with one backup, member 0 on port 1 to the
 * attacker's address, member 1 on port 2 to its second one (--peer-ip2).
 *
 * Control commands (one line each, one JSON line back): info, stats,
 * reset NAME [FIRST_RECV_TIMEOUT_MS], refill NAME (a victim region,
 * legit_data_gaps, legit_sr_data_gaps, legit_be_data_gaps or guards), dump
 * NAME OFF LEN, hold MS [ctl], mw bind NAME OFF LEN, mw inv NAME, send NAME
 * LEN, state NAME reset|init, recreate NAME, cnplog NAME, tmo be US, tmo exch
 * ROUND, tmo off, imm expect IMM, imm count IMM, quit. See
 * docs/conformance.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "../lib/peer.h"

/* Only to report the requester's credit state (lsn, credit_unlimited),
 * which no public call shows: the credit-poisoning cases need it. */
#include "transport/core/qp_internal.h"
/* ... and the sr state (receiver window, sender window, credits) the sr
 * cases check did not move, and the be receiver's active message. */
#include "transport/rel/sr/rel_sr.h"
#include "transport/rel/be/rel_be.h"
/* ... and the failover victim's newest notice seq from its peer */
#include "transport/failover/failover.h"

/* ---- the legitimate traffic: sizes, slots and patterns both roles share */
#define SLOT_LEN 3000u       /* one WRITE / READ: three 1024-byte packets */
#define SLOT_STRIDE 4096u
#define NSLOT 8u             /* the client reuses a slot every NSLOT iterations */
#define HDR_LEN 64u          /* SEND header buffer (a SEND carries 32 bytes) */
#define HDR_MAGIC 0x43304e46u
#define REPLY_LEN 2100u      /* the server's answer: a three-packet SEND */
#define REPLY_BUFS 4u
#define LEGIT_NRECV 64u
#define SEED_WRITE 0x5752u
#define SEED_REPLY 0x5250u
#define SEED_WRITE_SR 0x5753u /* the sr connection's patterns */
#define SEED_REPLY_SR 0x5251u
#define SEED_WRITE_BE 0x5754u /* the be connection's patterns */
#define SEED_REPLY_BE 0x5252u
#define ITER_TIMEOUT_MS 10000 /* no completion for this long: the connection is broken */
#define EXCHANGE_TIMEOUT_MS 30000
#define CLIENT_PAUSE_US 500u /* between iterations: leave CPU to the others */
/* Local ACK timeout 4.096 us << 18 = 1.07 s: the link loses nothing, so a
 * retransmission would only come from a peer starved of CPU, and its
 * duplicates would blur the cases' exact drop counts. */
#define LEGIT_TIMEOUT 18u
#define VICTIM_TIMEOUT 14u
/* An EQDS sender whose RTSs draw no PULL gives up after rc's retry limit
 * (8 x 67 ms at 14); the sender cases hold sre without credit for about
 * 0.5 s, so the EQDS victims wait as long as the legit QPs (8.6 s). */
#define EQDS_VICTIM_TIMEOUT LEGIT_TIMEOUT
/* sr QPs: loss by RTO only (no RACK, no tail-loss probe) with a floor of
 * 1 s (the sr code caps the RTO at 500 ms): as LEGIT_TIMEOUT, no spurious
 * retransmission, so no duplicate counted while a case is measured. */
#define SR_RTO_MIN_US 1000000u
/* be QPs: the longest deadline be takes (a minute). A be receive's
 * deadline runs from when it becomes the oldest receive, so a short one
 * would end the idle victim's receives (and consume their message
 * numbers) between cases; the attacker resets the be victim before each
 * case, which starts its deadline again. */
#define BE_TIMEOUT_US 60000000u
/* The EQDS victims' link (cc.link_mbps): their receiving port's pull
 * pacer grants a 16 KiB quantum about every 140 ms at 1 Mb/s, so a case
 * sees every grant and a pacer's queue keeps its order for that long. */
#define EQDS_LINK_MBPS 1u
/* "send NAME LEN": a WRITE to the attacker, who has no memory: any address */
#define SEND_RADDR 0x10000u
#define SEND_RKEY 0x1234u
#define SEND_WR_ID 0x53450000u

/* ---- the victims' side */
#define ARENA_SIZE (384u * 1024u)
#define GUARD_GAP 512u       /* guard bytes between regions */
#define VICTIM_QKEY 0x11111111u
#define ATK_QPN_BASE 0xa70001u
#define TMO_GROUP 77u /* "tmo": the be victim's adaptive-timeout group */
#define CTL_LINE_MAX 512u
#define MAX_EVENTS_KEPT 32u
/* "hold": packets queue in the receive ring and are taken in one burst; kept
 * well below the legit QPs' local ACK timeout so no retransmit follows */
#define HOLD_MAX_MS 50u
/* "mw bind" / "mw inv": how long the server waits for the local WR's completion */
#define LOCAL_WR_TIMEOUT_MS 2000u
#define LOCAL_WR_ID 0x4d570000u
/* The failover victim: probes of a failed member this often (100 ms, not
 * 500 us: nothing answers them but the cases that mean to), and receive
 * errors never fail a member (cases elsewhere send damaged frames) */
#define FO_PROBE_US 100000u
#define FO_ERR_THRESHOLD 1000000u
/* The partial-completion victim "srp": SRP_NRECV receives, the last a
 * receive handle with SRP_CHUNK_PKTS packets per chunk (not a divisor of
 * sr's 2^17 packets per message) over a buffer a whole message fits
 * (lazily mapped, touched only where packets land), so its top chunk
 * (packets 131 000..131 071) exists. The handle takes message 63, sr's last
 * slot, whose packet bitmap ends the bitmaps' allocation. */
#define SRP_CHUNK_PKTS 1000u
#define SRP_NRECV 64u
#define SRP_SMALL_LEN 1024u /* each of the other receives */
#define SRP_BUF_LEN (131072u * 1024u)
#define SRP_BITMAP_WORDS 16u /* more than the handle's 132 chunks need */

static uint8_t pattern(uint32_t seed, uint64_t seq, uint32_t off)
{
	uint32_t h = (uint32_t)seq * 0x9e3779b1u ^ off * 0x85ebca77u ^ seed;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return (uint8_t)h;
}

static uint8_t guard_byte(uint32_t arena_off)
{
	return (uint8_t)(arena_off * 13u + 0xa5u);
}

static uint8_t fill_byte(unsigned region, uint32_t off)
{
	return (uint8_t)(off * 7u + region * 31u + 0x3cu);
}

struct opts {
	bool server;
	const char *port;
	const char *port2;     /* server: the second port (the failover victim's backup member) */
	uint32_t peer_ip2_be;  /* server: the attacker's second address, behind port 2 */
	const char *ctl_path;
	const char *ready_file;
	uint32_t peer_ip_be;   /* server: the attacker's address, the victims' peer */
	uint32_t server_ip_be; /* client */
	uint16_t tcp_port;
	unsigned duration_s;
};

/* ---- the TCP exchange: "qpn psn rkey va token\n" each way, client first ---- */
/* The token a victim's peer (the attacker, who is its peer) has: every
 * control packet a victim sends carries it (conformance.py's PEER_TOKEN). */
#define VICTIM_PEER_TOKEN 0xa77ac4e5u

static void exchange(int fd, const struct peer_info *mine, struct peer_info *theirs, bool send_first)
{
	if (send_first)
		peer_send_info(fd, mine);
	peer_recv_info(fd, theirs, EXCHANGE_TIMEOUT_MS);
	if (!send_first)
		peer_send_info(fd, mine);
}

/* The index of a port's IPv4-mapped GID (the GID table starts with the
 * link-local IPv6 one where the port has it): port 1's, and port 2's on
 * a server with --port2. */
static uint8_t sgid_v4, sgid_v4_port2;

static void find_sgid_v4(struct uroce_context *ctx)
{
	sgid_v4 = peer_sgid_v4(ctx, 1);
}

/* RESET -> INIT */
static int qp_to_init(struct uroce_qp *qp, enum uroce_qp_type type)
{
	struct uroce_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	mask = UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT;
	if (type == UROCE_QPT_UD) {
		a.qkey = VICTIM_QKEY;
		mask |= UROCE_QP_QKEY;
	} else {
		a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
		                    (type == UROCE_QPT_RC ? UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC : 0);
		mask |= UROCE_QP_ACCESS_FLAGS;
	}
	return uroce_qp_modify(qp, &a, mask);
}

/* RESET -> INIT -> RTR -> RTS for an RC or UC QP (UD: no address);
 * backup_ip_be: a QP with one backup, member 1 on port 2 to that address
 * (0 = none). */
static void qp_connect_fo(struct uroce_qp *qp, enum uroce_qp_type type, uint32_t peer_ip_be, uint32_t backup_ip_be,
                          uint32_t peer_qpn, uint32_t peer_token, uint32_t rq_psn, uint32_t sq_psn,
                          uint8_t max_dest_rd_atomic, uint8_t timeout)
{
	struct uroce_qp_attr a;
	int mask;

	peer_check(qp_to_init(qp, type), "QP to INIT");

	if (type == UROCE_QPT_UD) {
		memset(&a, 0, sizeof(a));
		a.qp_state = UROCE_QPS_RTR;
		mask = UROCE_QP_STATE;
	} else {
		mask = peer_rtr_attr(&a, peer_ip_be, sgid_v4, peer_qpn, peer_token, rq_psn);
		if (type == UROCE_QPT_RC) {
			a.max_dest_rd_atomic = max_dest_rd_atomic;
			a.min_rnr_timer = 12;
			mask |= UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;
		}
		if (backup_ip_be) {
			peer_gid_of_ipv4(a.backup_ah[0].dgid, backup_ip_be);
			a.backup_ah[0].sgid_index = sgid_v4_port2;
			a.backup_ah[0].hop_limit = 64;
			a.backup_ah[0].port_num = 2;
			mask |= UROCE_QP_ALT_PATH;
		}
	}
	peer_check(uroce_qp_modify(qp, &a, mask), "QP to RTR");

	if (type == UROCE_QPT_RC) {
		mask = peer_rc_rts_attr(&a, sq_psn, timeout, 4);
	} else {
		memset(&a, 0, sizeof(a));
		a.qp_state = UROCE_QPS_RTS;
		a.sq_psn = sq_psn;
		mask = UROCE_QP_STATE | UROCE_QP_SQ_PSN;
	}
	peer_check(uroce_qp_modify(qp, &a, mask), "QP to RTS");
}

static void qp_connect(struct uroce_qp *qp, enum uroce_qp_type type, uint32_t peer_ip_be, uint32_t peer_qpn,
                       uint32_t peer_token, uint32_t rq_psn, uint32_t sq_psn, uint8_t max_dest_rd_atomic,
                       uint8_t timeout)
{
	qp_connect_fo(qp, type, peer_ip_be, 0, peer_qpn, peer_token, rq_psn, sq_psn, max_dest_rd_atomic, timeout);
}

/* rel: UROCE_REL_RC, sr/ec with SR_RTO_MIN_US and RTO-only loss detection,
 * or be with BE_TIMEOUT_US; eqds: sr with EQDS at EQDS_LINK_MBPS; fo: one
 * backup (FO_PROBE_US, FO_ERR_THRESHOLD) */
static bool qp_imm_counter; /* qp_new_fo: the victim it makes is imc */
static bool qp_imm_keyed;   /* qp_new_fo: the victim it makes is srk, bek or eck */
static uint32_t qp_chunk_pkts; /* qp_new_fo: the victim it makes is srp */

static struct uroce_qp *qp_new_fo(struct uroce_pd *pd, struct uroce_cq *scq, struct uroce_cq *rcq,
                                  enum uroce_qp_type type, uint32_t nwr, enum uroce_reliability rel, bool eqds,
                                  bool fo)
{
	struct uroce_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = type;
	ia.rel.reliability = rel;
	ia.rel.imm_counter = qp_imm_counter;
	ia.rel.imm_keyed = qp_imm_keyed;
	ia.rel.chunk_pkts = qp_chunk_pkts;
	if (rel == UROCE_REL_SR || rel == UROCE_REL_EC) {
		ia.rel.loss = UROCE_LOSS_RTO;
		ia.rel.rto_min_us = SR_RTO_MIN_US;
	}
	if (rel == UROCE_REL_BE)
		ia.rel.timeout_us = BE_TIMEOUT_US;
	if (rel == UROCE_REL_EC) {
		/* (the victim only) 2 data + 1 parity per submessage: three
		 * forged packets make a submessage the receiver decodes */
		ia.rel.ec_code = UROCE_EC_RS;
		ia.rel.ec_k = 2;
		ia.rel.ec_m = 1;
	}
	if (eqds) {
		ia.cc.algo = UROCE_CC_EQDS;
		ia.cc.link_mbps = EQDS_LINK_MBPS;
	}
	if (fo) {
		ia.failover.nbackups = 1;
		ia.failover.probe_us = FO_PROBE_US;
		ia.failover.err_threshold = FO_ERR_THRESHOLD;
	}
	return peer_qp_create(pd, &ia, scq, rcq, nwr, "create a QP");
}

static struct uroce_qp *qp_new(struct uroce_pd *pd, struct uroce_cq *scq, struct uroce_cq *rcq,
                               enum uroce_qp_type type, uint32_t nwr, enum uroce_reliability rel, bool eqds)
{
	return qp_new_fo(pd, scq, rcq, type, nwr, rel, eqds, false);
}

static void post_recv1(struct uroce_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)addr, .length = len, .lkey = lkey };
	struct uroce_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct uroce_recv_wr *bad;

	peer_check(uroce_post_recv(qp, &wr, &bad), "post a receive");
}

static void post_send1(struct uroce_qp *qp, enum uroce_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len,
                       uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)addr, .length = len, .lkey = lkey };
	struct uroce_send_wr wr;
	struct uroce_send_wr *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	peer_check(uroce_post_send(qp, &wr, &bad), "post a send");
}

/* The SEND header of one legitimate iteration (little endian on both ends). */
struct legit_hdr {
	uint32_t magic;
	uint32_t slot;
	uint64_t seq;
	uint64_t client_errors;
	uint32_t len;
	uint32_t reserved;
};

/* ====================================================================== *
 * server
 * ====================================================================== */

enum region_id { R_LEGIT_DATA, R_LEGIT_RECV, R_LEGIT_REPLY, R_RC_DATA, R_RC_RECV, R_RC0_DATA, R_UC_DATA,
                 R_UD_RECV, R_LEGIT_SR_DATA, R_LEGIT_SR_RECV, R_LEGIT_SR_REPLY, R_SR_DATA, R_SR_RECV, R_SRX_RECV,
                 R_EC_DATA, R_EC_RECV, R_LEGIT_BE_DATA, R_LEGIT_BE_RECV, R_LEGIT_BE_REPLY, R_BE_DATA, R_BE_RECV,
                 R_SRE_DATA, R_SRE_RECV, R_SRE2_RECV, R_FO_DATA, R_FO_RECV, R_SRK_DATA, R_SRK_RECV,
                 R_BEK_DATA, R_BEK_RECV, R_ECK_DATA, R_ECK_RECV, R__COUNT };

struct region {
	const char *name;
	uint32_t len;
	bool legit;     /* legit PD; its contents change with the legit traffic */
	uint32_t off;   /* in the arena */
	struct uroce_mr *mr;
	uint8_t *shadow; /* victims: what the region must hold */
};

static struct region regions[R__COUNT] = {
	[R_LEGIT_DATA] = { "legit_data", NSLOT * SLOT_STRIDE, true, 0, NULL, NULL },
	[R_LEGIT_RECV] = { "legit_recv", LEGIT_NRECV * HDR_LEN, true, 0, NULL, NULL },
	[R_LEGIT_REPLY] = { "legit_reply", REPLY_BUFS * 4096u, true, 0, NULL, NULL },
	[R_RC_DATA] = { "rc_data", 8192, false, 0, NULL, NULL },
	[R_RC_RECV] = { "rc_recv", 4 * 64, false, 0, NULL, NULL },
	[R_RC0_DATA] = { "rc0_data", 4096, false, 0, NULL, NULL },
	[R_UC_DATA] = { "uc_data", 4096, false, 0, NULL, NULL },
	[R_UD_RECV] = { "ud_recv", 4 * 512, false, 0, NULL, NULL },
	[R_LEGIT_SR_DATA] = { "legit_sr_data", NSLOT * SLOT_STRIDE, true, 0, NULL, NULL },
	[R_LEGIT_SR_RECV] = { "legit_sr_recv", LEGIT_NRECV * HDR_LEN, true, 0, NULL, NULL },
	[R_LEGIT_SR_REPLY] = { "legit_sr_reply", REPLY_BUFS * 4096u, true, 0, NULL, NULL },
	[R_SR_DATA] = { "sr_data", 8192, false, 0, NULL, NULL },
	[R_SR_RECV] = { "sr_recv", 4 * 2048, false, 0, NULL, NULL },
	[R_SRX_RECV] = { "srx_recv", 4 * 256, false, 0, NULL, NULL },
	[R_EC_DATA] = { "ec_data", 4096, false, 0, NULL, NULL },
	[R_EC_RECV] = { "ec_recv", 4 * 256, false, 0, NULL, NULL },
	[R_LEGIT_BE_DATA] = { "legit_be_data", NSLOT * SLOT_STRIDE, true, 0, NULL, NULL },
	[R_LEGIT_BE_RECV] = { "legit_be_recv", LEGIT_NRECV * HDR_LEN, true, 0, NULL, NULL },
	[R_LEGIT_BE_REPLY] = { "legit_be_reply", REPLY_BUFS * 4096u, true, 0, NULL, NULL },
	[R_BE_DATA] = { "be_data", 4096, false, 0, NULL, NULL },
	[R_BE_RECV] = { "be_recv", 4 * 2048, false, 0, NULL, NULL },
	[R_SRE_DATA] = { "sre_data", 8192, false, 0, NULL, NULL },
	[R_SRE_RECV] = { "sre_recv", 4 * 2048, false, 0, NULL, NULL },
	[R_SRE2_RECV] = { "sre2_recv", 4 * 256, false, 0, NULL, NULL },
	[R_FO_DATA] = { "fo_data", 4096, false, 0, NULL, NULL },
	[R_FO_RECV] = { "fo_recv", 4 * 64, false, 0, NULL, NULL },
	[R_SRK_DATA] = { "srk_data", 4096, false, 0, NULL, NULL },
	[R_SRK_RECV] = { "srk_recv", 4 * 2048, false, 0, NULL, NULL },
	[R_BEK_DATA] = { "bek_data", 4096, false, 0, NULL, NULL },
	[R_BEK_RECV] = { "bek_recv", 4 * 2048, false, 0, NULL, NULL },
	[R_ECK_DATA] = { "eck_data", 4096, false, 0, NULL, NULL },
	[R_ECK_RECV] = { "eck_recv", 4 * 256, false, 0, NULL, NULL },
};

struct victim {
	const char *name;
	enum uroce_qp_type type;
	enum uroce_reliability rel;
	bool peer_client; /* connected to the legit client's address (an unused QPN there), not the attacker's */
	int data;         /* region, -1 = none */
	int recv;         /* region of its receive buffers, -1 = none */
	uint32_t recv_len;
	uint32_t nrecv;
	uint8_t max_dest_rd_atomic;
	uint32_t peer_qpn;
	struct uroce_qp *qp;
	uint64_t recv_ok, recv_err, send_ok, send_err;
	uint64_t recv_len_err; /* receives completed with LOC_LEN_ERR (the others flushed with it) */
	int last_err_status;
	/* the last successful receive completion: opcode, flags (be:
	 * PARTIAL, TIMEOUT, PREEMPTED), bytes, immediate */
	int last_recv_opcode;
	unsigned last_recv_flags;
	uint32_t last_recv_len, last_recv_imm;
	uint64_t fatal_events;
	/* rc and be: a type-2 memory window over the data region, bound and
	 * invalidated on this QP by the "mw" commands */
	bool has_mw;
	struct uroce_mw *mw;
	bool mw_bound;
	uint64_t mw_va, mw_len;
	/* sr with EQDS congestion control (EQDS_LINK_MBPS) */
	bool eqds;
	/* one backup: member 1 on port 2 to the attacker's second address */
	bool fo;
	/* rel.imm_counter: its WRITEs with immediate count in the context's
	 * IMMCOUNTER ("imm expect", "imm count") */
	bool imc;
	bool keyed;       /* sr keyed by immediate (rel.imm_keyed): its peer could be a NIC */
	/* the CNPs it sent, as the engine dated them (cnp_last_ns, the time
	 * of the receive burst the CE mark came in), since the last "cnplog" */
	uint64_t cnp_seen;   /* its cnps_sent counter when last looked at */
	uint64_t cnp_count, cnp_multi, cnp_first_ns, cnp_last_ns, cnp_min_gap_ns;
	uint64_t send_posted;
	/* srp: its receive handle (NULL once given back) */
	bool precv;
	struct uroce_precv *ph;
};

#define VICTIM(n, t, r, pc, d, rv, rl, nr, mdra, pq, ...)                                                    \
	{ .name = n, .type = t, .rel = r, .peer_client = pc, .data = d, .recv = rv, .recv_len = rl, .nrecv = nr,   \
	  .max_dest_rd_atomic = mdra, .peer_qpn = pq, .last_err_status = -1, __VA_ARGS__ }
/* An sr/ec victim takes two QPNs (data, data + 1 for control), and so does
 * its peer's number: the attacker's sr "QP" is ATK_QPN_BASE + 4 (+ 5). */
static struct victim victims[] = {
	VICTIM("rc", UROCE_QPT_RC, UROCE_REL_RC, false, R_RC_DATA, R_RC_RECV, 64, 4, 2, ATK_QPN_BASE, .has_mw = true),
	VICTIM("rc0", UROCE_QPT_RC, UROCE_REL_RC, false, R_RC0_DATA, -1, 0, 0, 0, ATK_QPN_BASE + 1),
	VICTIM("uc", UROCE_QPT_UC, UROCE_REL_RC, false, R_UC_DATA, -1, 0, 0, 0, ATK_QPN_BASE + 2),
	VICTIM("ud", UROCE_QPT_UD, UROCE_REL_RC, false, -1, R_UD_RECV, 512, 4, 0, ATK_QPN_BASE + 3),
	VICTIM("sr", UROCE_QPT_RC, UROCE_REL_SR, false, R_SR_DATA, R_SR_RECV, 2048, 4, 0, ATK_QPN_BASE + 4),
	VICTIM("srx", UROCE_QPT_RC, UROCE_REL_SR, true, -1, R_SRX_RECV, 256, 4, 0, ATK_QPN_BASE + 6),
	VICTIM("ec", UROCE_QPT_RC, UROCE_REL_EC, false, R_EC_DATA, R_EC_RECV, 256, 4, 0, ATK_QPN_BASE + 8),
	VICTIM("be", UROCE_QPT_RC, UROCE_REL_BE, false, R_BE_DATA, R_BE_RECV, 2048, 4, 0, ATK_QPN_BASE + 10, .has_mw = true),
	VICTIM("sre", UROCE_QPT_RC, UROCE_REL_SR, false, R_SRE_DATA, R_SRE_RECV, 2048, 4, 0, ATK_QPN_BASE + 12, .eqds = true),
	VICTIM("sre2", UROCE_QPT_RC, UROCE_REL_SR, false, -1, R_SRE2_RECV, 256, 4, 0, ATK_QPN_BASE + 14, .eqds = true),
	/* a QP with backups takes two QPNs too (data, control), as its peer does */
	VICTIM("fo", UROCE_QPT_RC, UROCE_REL_RC, false, R_FO_DATA, R_FO_RECV, 64, 4, 0, ATK_QPN_BASE + 16, .fo = true),
	/* zero-length WRITEs with immediate into rc0's region: counted, nothing placed */
	VICTIM("imc", UROCE_QPT_RC, UROCE_REL_RC, false, R_RC0_DATA, -1, 0, 0, 0, ATK_QPN_BASE + 18, .imc = true),
	/* sr with a partial-completion receive handle (SRP_*), outside the arena */
	VICTIM("srp", UROCE_QPT_RC, UROCE_REL_SR, false, -1, -1, 0, 0, 0, ATK_QPN_BASE + 20, .precv = true),
	/* sr keyed by immediate: the BTH PSN means nothing, descriptors carry
	 * the PSNs and the token */
	VICTIM("srk", UROCE_QPT_RC, UROCE_REL_SR, false, R_SRK_DATA, R_SRK_RECV, 2048, 4, 0, ATK_QPN_BASE + 22, .keyed = true),
	/* be and ec keyed the same way: be's messages open (and preempt) by a
	 * descriptor with the token; ec's parity and second descriptor are
	 * placed by the first one's PSN */
	VICTIM("bek", UROCE_QPT_RC, UROCE_REL_BE, false, R_BEK_DATA, R_BEK_RECV, 2048, 4, 0, ATK_QPN_BASE + 24, .keyed = true),
	VICTIM("eck", UROCE_QPT_RC, UROCE_REL_EC, false, R_ECK_DATA, R_ECK_RECV, 256, 4, 0, ATK_QPN_BASE + 26, .keyed = true),
};
#define NVICTIMS (sizeof(victims) / sizeof(victims[0]))

/* One legitimate connection: rc (LC_RC), sr (LC_SR) or be (LC_BE). Per
 * iteration the client WRITEs a slot of `data` and SENDs a header naming
 * it; the server checks the slot and answers with a SEND from `reply`. */
enum { LC_RC, LC_SR, LC_BE, LC__COUNT };
struct legit_conn {
	const char *name;       /* "legit", "legit_sr", "legit_be" */
	enum uroce_reliability rel;
	int data, recv, reply;  /* regions */
	uint32_t seed_write, seed_reply;
	struct uroce_qp *qp;
	struct uroce_cq *scq, *rcq;
	uint64_t seq;           /* last iteration received */
	uint64_t received, replies;
	uint32_t reply_next;
};

struct server {
	struct opts *o;
	struct uroce_context *ctx;
	struct uroce_port_attr port, port2;
	struct uroce_pd *pd_legit, *pd_victim;
	struct uroce_cq *victim_cq;
	uint8_t *arena;
	/* the legit connections */
	struct legit_conn lc[LC__COUNT];
	uint32_t client_ip_be;
	uint64_t verify_errors, client_errors, reply_errors, legit_fatal; /* both connections */
	char first_error[160];
	/* control socket */
	int ctl_listen, ctl_fd;
	char ctl_buf[CTL_LINE_MAX];
	size_t ctl_len;
	bool quit;
	uint64_t hold_until; /* "hold MS": no uroce_progress until then */
	bool hold_ctl;       /* "hold MS ctl": the control channel is served meanwhile */
	uint32_t revoked_rkey; /* of a region over rc_data, deregistered at start */
	char events[MAX_EVENTS_KEPT][48];
	unsigned nevents;
	/* the local WR (BIND_MW, LOCAL_INV) a control command waits for */
	uint64_t local_wr_id;
	bool local_done;
	int local_status;
	/* "tmo": an adaptive-timeout group over the be victim alone (its
	 * peer, this host, votes) */
	struct uroce_tmo *tmo;
	/* "imm expect": the expectation's flag */
	int imm_flag;
	/* srp's receive buffer (SRP_BUF_LEN, lazily mapped) and its region */
	uint8_t *srp_buf;
	struct uroce_mr *srp_mr;
};

static uint8_t *region_ptr(struct server *s, int r)
{
	return s->arena + regions[r].off;
}

/* Count one error of the legit connection in *counter (data that did not
 * verify, or a failed completion) and keep the first one's text. */
static void legit_error(struct server *s, uint64_t *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void legit_error(struct server *s, uint64_t *counter, const char *fmt, ...)
{
	va_list ap;

	(*counter)++;
	if (s->first_error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(s->first_error, sizeof(s->first_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "conf_peer: legit: %s\n", s->first_error);
}

static void region_refill(struct server *s, int r)
{
	uint8_t *p = region_ptr(s, r);

	for (uint32_t i = 0; i < regions[r].len; i++)
		p[i] = fill_byte((unsigned)r, i);
	if (regions[r].shadow)
		memcpy(regions[r].shadow, p, regions[r].len);
}

static void arena_setup(struct server *s)
{
	uint32_t off = GUARD_GAP;

	s->arena = aligned_alloc(4096, ARENA_SIZE);
	if (!s->arena)
		peer_die("cannot allocate the %u-byte arena", ARENA_SIZE);
	for (uint32_t i = 0; i < ARENA_SIZE; i++)
		s->arena[i] = guard_byte(i);
	for (int r = 0; r < R__COUNT; r++) {
		struct region *g = &regions[r];
		int access = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ |
		             UROCE_ACCESS_REMOTE_ATOMIC;

		/* the regions under the victims' memory windows */
		if (r == R_RC_DATA || r == R_BE_DATA)
			access |= UROCE_ACCESS_MW_BIND;

		g->off = off;
		off += (g->len + GUARD_GAP + 63u) & ~63u;
		if (off > ARENA_SIZE)
			peer_die("the regions do not fit the arena");
		if (!g->legit) {
			g->shadow = malloc(g->len);
			if (!g->shadow)
				peer_die("out of memory");
		}
		region_refill(s, r);
		peer_check(uroce_mr_reg(g->legit ? s->pd_legit : s->pd_victim, region_ptr(s, r), g->len, access, &g->mr),
		      "register a region");
	}
}

/* A key that was valid once: a second registration of rc_data, gone. */
static void make_revoked_rkey(struct server *s)
{
	struct uroce_mr *mr;

	peer_check(uroce_mr_reg(s->pd_victim, region_ptr(s, R_RC_DATA), regions[R_RC_DATA].len,
	                   UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &mr),
	      "register a region");
	s->revoked_rkey = mr->rkey;
	peer_check(uroce_mr_dereg(mr), "deregister a region");
}

static bool in_region(uint32_t arena_off)
{
	for (int r = 0; r < R__COUNT; r++)
		if (arena_off >= regions[r].off && arena_off < regions[r].off + regions[r].len)
			return true;
	return false;
}

/* first_timeout_us: be, the first receive's own deadline (0: the QP's) */
static void victim_post_recvs(struct server *s, struct victim *v, uint32_t first_timeout_us)
{
	for (uint32_t i = 0; i < v->nrecv; i++) {
		struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)(region_ptr(s, v->recv) + i * v->recv_len),
		                         .length = v->recv_len, .lkey = regions[v->recv].mr->lkey };
		struct uroce_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
		                            .timeout_us = i ? 0 : first_timeout_us };
		struct uroce_recv_wr *bad;

		peer_check(uroce_post_recv(v->qp, &wr, &bad), "post a receive");
	}
}

/* srp: SRP_NRECV - 1 receives of SRP_SMALL_LEN, then the handle over
 * the whole buffer (the QP was just connected: its next message is 0) */
static void srp_post(struct server *s, struct victim *v)
{
	struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)s->srp_buf, .length = SRP_BUF_LEN,
	                         .lkey = s->srp_mr->lkey };

	for (uint32_t i = 0; i + 1 < SRP_NRECV; i++)
		post_recv1(v->qp, i, s->srp_buf + i * SRP_SMALL_LEN, SRP_SMALL_LEN, s->srp_mr->lkey);
	peer_check(uroce_precv_post(v->qp, &sge, SRP_NRECV - 1, &v->ph), "post a receive handle");
}

/* srp: the QP to RESET (its receives and handle end without completions)
 * and the handle given back, before a reconnect or a destroy */
static void srp_release(struct server *s, struct victim *v)
{
	struct uroce_qp_attr a;
	struct uroce_wc wc[16];

	if (!v->ph)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	peer_check(uroce_qp_modify(v->qp, &a, UROCE_QP_STATE), "srp to RESET");
	while (uroce_poll_cq(s->victim_cq, 16, wc) > 0)
		;
	peer_check(uroce_precv_complete(v->ph), "give back the receive handle");
	v->ph = NULL;
}

static void victim_connect(struct server *s, struct victim *v, uint32_t first_timeout_us)
{
	qp_connect_fo(v->qp, v->type, v->peer_client ? s->client_ip_be : s->o->peer_ip_be,
	              v->fo ? s->o->peer_ip2_be : 0, v->peer_qpn, VICTIM_PEER_TOKEN, peer_rand_psn(), peer_rand_psn(),
	              v->max_dest_rd_atomic,
	              v->eqds ? EQDS_VICTIM_TIMEOUT : VICTIM_TIMEOUT);
	if (v->recv >= 0)
		victim_post_recvs(s, v, first_timeout_us);
	if (v->precv)
		srp_post(s, v);
}

static int victim_reset(struct server *s, struct victim *v, uint32_t first_timeout_us)
{
	struct uroce_qp_attr a;
	struct uroce_wc wc[16];

	srp_release(s, v);
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	if (uroce_qp_modify(v->qp, &a, UROCE_QP_STATE) < 0)
		return -1;
	/* flushed completions of the old incarnation: drop them */
	while (uroce_poll_cq(s->victim_cq, 16, wc) > 0)
		;
	if (v->data >= 0)
		region_refill(s, v->data);
	if (v->recv >= 0)
		region_refill(s, v->recv);
	victim_connect(s, v, first_timeout_us);
	return 0;
}

static void legit_post_reply(struct server *s, struct legit_conn *lc, uint64_t seq)
{
	uint32_t b = lc->reply_next++ % REPLY_BUFS;
	uint8_t *p = region_ptr(s, lc->reply) + b * 4096u;

	for (uint32_t i = 0; i < REPLY_LEN; i++)
		p[i] = pattern(lc->seed_reply, seq, i);
	post_send1(lc->qp, UROCE_WR_SEND, seq, p, REPLY_LEN, regions[lc->reply].mr->lkey, 0, 0);
}

static void legit_on_recv(struct server *s, struct legit_conn *lc, const struct uroce_wc *wc)
{
	uint32_t idx = (uint32_t)wc->wr_id;
	uint8_t *buf = region_ptr(s, lc->recv) + idx * HDR_LEN;
	struct legit_hdr h;

	if (wc->status != UROCE_WC_SUCCESS) {
		legit_error(s, &s->legit_fatal, "%s: receive completion status %s", lc->name,
		            uroce_wc_status_str(wc->status));
		return;
	}
	memcpy(&h, buf, sizeof(h));
	if (wc->byte_len != sizeof(h) || h.magic != HDR_MAGIC || h.slot >= NSLOT || h.len != SLOT_LEN) {
		legit_error(s, &s->verify_errors, "%s: malformed SEND header (byte_len %u magic 0x%x slot %u)", lc->name,
		            wc->byte_len, h.magic, h.slot);
	} else {
		const uint8_t *d = region_ptr(s, lc->data) + h.slot * SLOT_STRIDE;

		if (h.seq != lc->seq + 1 && lc->received)
			legit_error(s, &s->verify_errors, "%s: iteration %" PRIu64 " after %" PRIu64, lc->name, h.seq,
			            lc->seq);
		for (uint32_t i = 0; i < SLOT_LEN; i++) {
			if (d[i] != pattern(lc->seed_write, h.seq, i)) {
				legit_error(s, &s->verify_errors,
				            "%s: iteration %" PRIu64 ": WRITE data wrong at byte %u of slot %u", lc->name, h.seq,
				            i, h.slot);
				break;
			}
		}
		lc->seq = h.seq;
		if (h.client_errors > s->client_errors)
			s->client_errors = h.client_errors;
		lc->received++;
		legit_post_reply(s, lc, h.seq);
	}
	post_recv1(lc->qp, idx, buf, HDR_LEN, regions[lc->recv].mr->lkey);
}

static void poll_cqs(struct server *s)
{
	struct uroce_wc wc[16];
	int n;

	for (int c = 0; c < LC__COUNT; c++) {
		struct legit_conn *lc = &s->lc[c];

		while ((n = uroce_poll_cq(lc->rcq, 16, wc)) > 0)
			for (int i = 0; i < n; i++)
				legit_on_recv(s, lc, &wc[i]);
		while ((n = uroce_poll_cq(lc->scq, 16, wc)) > 0) {
			for (int i = 0; i < n; i++) {
				if (wc[i].status == UROCE_WC_SUCCESS) {
					lc->replies++;
				} else {
					legit_error(s, &s->reply_errors, "%s: reply completion status %s", lc->name,
					            uroce_wc_status_str(wc[i].status));
				}
			}
		}
	}
	while ((n = uroce_poll_cq(s->victim_cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			for (size_t k = 0; k < NVICTIMS; k++) {
				struct victim *v = &victims[k];
				bool recv = wc[i].opcode >= UROCE_WC_RECV;

				if (uroce_qp_num(v->qp) != wc[i].qp_num)
					continue;
				if (s->local_wr_id && wc[i].wr_id == s->local_wr_id && !recv) {
					s->local_done = true;
					s->local_status = (int)wc[i].status;
				}
				if (wc[i].status == UROCE_WC_SUCCESS) {
					*(recv ? &v->recv_ok : &v->send_ok) += 1;
					if (recv) {
						v->last_recv_opcode = (int)wc[i].opcode;
						v->last_recv_flags = wc[i].wc_flags;
						v->last_recv_len = wc[i].byte_len;
						v->last_recv_imm = wc[i].imm_data;
					}
				} else {
					*(recv ? &v->recv_err : &v->send_err) += 1;
					v->recv_len_err += recv && wc[i].status == UROCE_WC_LOC_LEN_ERR;
					v->last_err_status = (int)wc[i].status;
				}
			}
		}
	}
}

static const char *qp_name(struct server *s, const struct uroce_qp *qp)
{
	for (int c = 0; c < LC__COUNT; c++)
		if (qp == s->lc[c].qp)
			return s->lc[c].name;
	for (size_t k = 0; k < NVICTIMS; k++)
		if (victims[k].qp == qp)
			return victims[k].name;
	return "?";
}

static void poll_events(struct server *s)
{
	struct uroce_async_event ev;

	while (uroce_get_async_event(s->ctx, &ev) == 0) {
		const char *who = "port";

		/* PATH_MIG: the failover victim moved to another member (no error) */
		bool benign = ev.event_type == UROCE_EVENT_COMM_EST || ev.event_type == UROCE_EVENT_PATH_MIG;

		if (ev.event_type == UROCE_EVENT_QP_FATAL || ev.event_type == UROCE_EVENT_QP_REQ_ERR ||
		    ev.event_type == UROCE_EVENT_QP_ACCESS_ERR || ev.event_type == UROCE_EVENT_COMM_EST ||
		    ev.event_type == UROCE_EVENT_SQ_DRAINED || ev.event_type == UROCE_EVENT_QP_LAST_WQE_REACHED ||
		    ev.event_type == UROCE_EVENT_PATH_MIG || ev.event_type == UROCE_EVENT_PATH_MIG_ERR) {
			who = qp_name(s, ev.element.qp);
			for (int c = 0; c < LC__COUNT; c++)
				if (ev.element.qp == s->lc[c].qp && !benign)
					s->legit_fatal++;
			for (size_t k = 0; k < NVICTIMS; k++)
				if (victims[k].qp == ev.element.qp && !benign)
					victims[k].fatal_events++;
		} else if (ev.event_type == UROCE_EVENT_CQ_ERR) {
			who = ev.element.cq == s->victim_cq ? "victim_cq" : "legit_cq";
		}
		if (s->nevents < MAX_EVENTS_KEPT)
			snprintf(s->events[s->nevents++], sizeof(s->events[0]), "%s:%d", who, (int)ev.event_type);
		uroce_ack_async_event(&ev);
	}
}

/* ---- JSON out ---------------------------------------------------------- */
struct jbuf {
	char *p;
	size_t len, cap;
};

static void jb(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			peer_die("formatting a reply failed");
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		b->cap = (b->cap + (size_t)n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			peer_die("out of memory");
	}
}

static void jb_qp_info(struct jbuf *b, struct uroce_qp *qp)
{
	struct uroce_qp_attr a;
	struct uroce_qp_init_attr ia;

	peer_check(uroce_qp_query(qp, &a, &ia), "query a QP");
	jb(b, "\"qpn\":%u,\"rq_psn\":%u,\"sq_psn\":%u,\"peer_qpn\":%u,\"state\":\"%s\"", uroce_qp_num(qp), a.rq_psn,
	   a.sq_psn, a.dest_qp_num, uroce_qp_state_str(a.qp_state));
	/* token: what control packets to it must carry (the attacker is a
	 * victim's peer and knows it; for a legit QP it is what the attacker
	 * does not know); peer_token: what its own control packets carry */
	jb(b, ",\"token\":%u,\"peer_token\":%u", uroce_qp_token(qp), a.dest_token);
	jb(b, ",\"rel\":\"%s\"", uroce_reliability_str(qp->init.rel.reliability));
	if (qp->init.rel.reliability == UROCE_REL_BE && qp->rel_state) {
		/* be: the receiver's one active message (its number mod 4096 is
		 * what the wire carries), the highest PSN that arrived, the bytes
		 * placed of the active message; the sender's next number */
		const struct be_state *st = be_of(qp);

		jb(b, ",\"ctrl_qpn\":%u,\"be\":{\"cur\":%u,\"active\":%s,\"psn_hi\":%u,\"placed\":%u,\"flags\":%u,"
		      "\"rkey\":%u,\"msg_post\":%u,\"timeout_us\":%u}",
		   qp->ctrl_qpn, st->cur, qp->have_rwqe ? "true" : "false", st->psn_hi, st->placed, st->flags, st->rkey,
		   __atomic_load_n(&st->msg_post, __ATOMIC_RELAXED), __atomic_load_n(&st->timeout_us, __ATOMIC_RELAXED));
	} else if (qp->init.rel.reliability != UROCE_REL_RC && qp->rel_state) {
		/* sr/ec: the receiver's PSN and message windows, the sender's
		 * window and what the peer's SACKs told it (credits), read on the
		 * engine's own thread (EMBEDDED mode: the control socket is polled
		 * between progress calls) */
		const struct sr_state *st = sr_of(qp);
		const struct sr_rx *r = &st->rx;
		const struct sr_tx *t = &st->tx;
		uint32_t marked = 0;

		if (r->bits)
			for (uint32_t i = 0; i < r->nbits / 64 + (r->nbits < 64); i++)
				marked += (uint32_t)__builtin_popcountll(r->bits[i]);
		jb(b, ",\"ctrl_qpn\":%u,\"sr\":{\"rx_cum\":%u,\"rx_high\":%u,\"rx_marked\":%u,\"rx_nbits\":%u,"
		      "\"rx_msg_cum\":%u,\"rx_bind_next\":%u,\"rx_dups\":%u,\"tx_una\":%u,\"tx_nxt\":%u,"
		      "\"tx_msg_post\":%u,\"tx_nlost\":%u,\"peer_msg_cum\":%u,\"peer_msg_limit\":%u,"
		      "\"have_limit\":%s,\"peer_dups\":%u}",
		   qp->ctrl_qpn, r->cum, r->high, marked, r->nbits, r->msg_cum, r->bind_next, r->dups, t->una, t->nxt,
		   __atomic_load_n(&t->msg_post, __ATOMIC_RELAXED), t->nlost, t->peer_msg_cum, t->peer_msg_limit,
		   t->have_limit ? "true" : "false", t->peer_dups);
		/* EQDS: the receiver's side (what the peer asked for and was
		 * granted, whether it waits in its port's pacer) on every sr/ec
		 * QP; the sender's credit on an EQDS QP */
		jb(b, ",\"eqds\":{\"want\":%" PRIu64 ",\"spec\":%" PRIu64 ",\"granted\":%" PRIu64 ",\"queued\":%s"
		      ",\"pull_due\":%s",
		   r->eqds.want, r->eqds.spec, r->eqds.granted, r->eqds.queued ? "true" : "false",
		   r->eqds.pull_due ? "true" : "false");
		if (st->cc.ops && st->cc.ops->id == UROCE_CC_EQDS)
			jb(b, ",\"tx_sent\":%" PRIu64 ",\"tx_spec\":%" PRIu64 ",\"tx_credit\":%" PRIu64,
			   eqds_tx_sent(st->cc.st), eqds_tx_spec(st->cc.st), eqds_tx_credit_cum(st->cc.st));
		jb(b, "}");
	}
	if (qp->fo) {
		/* failover (uroce_qp_failover_info), its control QPN, and the
		 * newest notice seq taken from the peer (-1: none since RTR) */
		struct uroce_failover_info fi;

		peer_check(uroce_qp_failover_info(qp, &fi), "failover info");
		if (qp->init.rel.reliability == UROCE_REL_RC) /* sr has reported it */
			jb(b, ",\"ctrl_qpn\":%u", qp->ctrl_qpn);
		jb(b,
		   ",\"fo\":{\"state\":\"%s\",\"active\":%u,\"up_mask\":%u,\"nmembers\":%u,\"last_cause\":\"%s\","
		   "\"failovers\":%" PRIu64 ",\"failbacks\":%" PRIu64 ",\"rewound_pkts\":%" PRIu64
		   ",\"notices_sent\":%" PRIu64 ",\"notices_rcvd\":%" PRIu64 ",\"probes_sent\":%" PRIu64
		   ",\"probes_answered\":%" PRIu64 ",\"peer_seq\":%" PRId64 ",\"notice_seq\":%u,\"notice_acked\":%s}",
		   uroce_fo_state_str(fi.state), fi.active, fi.up_mask, fi.nmembers, uroce_fo_cause_str(fi.last_cause),
		   fi.failovers, fi.failbacks, fi.rewound_pkts, fi.notices_sent, fi.notices_rcvd, fi.probes_sent,
		   fi.probes_answered, (int64_t)qp->fo->peer_seq, qp->fo->notice_seq,
		   qp->fo->notice_acked ? "true" : "false");
	}
}

static void jb_victim_info(struct server *s, struct jbuf *b, struct victim *v)
{
	jb(b, "\"%s\":{\"type\":\"%s\",", v->name,
	   v->type == UROCE_QPT_RC ? "RC" : v->type == UROCE_QPT_UC ? "UC" : "UD");
	jb_qp_info(b, v->qp);
	jb(b, ",\"max_dest_rd_atomic\":%u,\"qkey\":%u,\"recv_len\":%u,\"nrecv\":%u", v->max_dest_rd_atomic,
	   VICTIM_QKEY, v->recv_len, v->nrecv);
	if (v->data >= 0)
		jb(b, ",\"rkey\":%u,\"lkey\":%u,\"va\":%" PRIu64 ",\"len\":%u", regions[v->data].mr->rkey,
		   regions[v->data].mr->lkey, (uint64_t)(uintptr_t)region_ptr(s, v->data), regions[v->data].len);
	if (v->has_mw)
		jb(b, ",\"mw\":{\"rkey\":%u,\"bound\":%s,\"va\":%" PRIu64 ",\"len\":%" PRIu64 "}", v->mw->rkey,
		   v->mw_bound ? "true" : "false", v->mw_va, v->mw_len);
	if (v->precv) {
		/* srp: the handle's message, its chunk count (0 until bound, -1
		 * given back) and the chunks complete */
		uint64_t bits[SRP_BITMAP_WORDS];
		int n = v->ph ? uroce_precv_bitmap(v->ph, bits, SRP_BITMAP_WORDS) : -1;

		jb(b, ",\"precv\":{\"msg\":%u,\"chunk_pkts\":%u,\"chunks\":%d,\"done\":[", SRP_NRECV - 1,
		   SRP_CHUNK_PKTS, n);
		for (int i = 0, first = 1; i < n && i < (int)(SRP_BITMAP_WORDS * 64); i++) {
			if (bits[i / 64] >> (i % 64) & 1) {
				jb(b, "%s%d", first ? "" : ",", i);
				first = 0;
			}
		}
		jb(b, "]}");
	}
	jb(b, "}");
}

static void reply_info(struct server *s, struct jbuf *b)
{
	char ip[INET_ADDRSTRLEN];
	const uint8_t *m = s->port.mac;

	inet_ntop(AF_INET, &s->port.ipv4_be, ip, sizeof(ip));
	jb(b, "{\"ok\":true,\"ip\":\"%s\",\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\",", ip, m[0], m[1], m[2], m[3],
	   m[4], m[5]);
	m = s->port2.mac;
	inet_ntop(AF_INET, &s->port2.ipv4_be, ip, sizeof(ip));
	jb(b, "\"port2\":{\"ip\":\"%s\",\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\"},", ip, m[0], m[1], m[2], m[3],
	   m[4], m[5]);
	inet_ntop(AF_INET, &s->client_ip_be, ip, sizeof(ip));
	for (int c = 0; c < LC__COUNT; c++) {
		const struct legit_conn *lc = &s->lc[c];

		jb(b, "\"%s\":{\"peer_ip\":\"%s\",", lc->name, ip);
		jb_qp_info(b, lc->qp);
		jb(b, ",\"rkey\":%u,\"va\":%" PRIu64 ",\"len\":%u},", regions[lc->data].mr->rkey,
		   (uint64_t)(uintptr_t)region_ptr(s, lc->data), regions[lc->data].len);
	}
	jb(b, "\"revoked_rkey\":%u,\"victims\":{", s->revoked_rkey);
	for (size_t k = 0; k < NVICTIMS; k++) {
		jb_victim_info(s, b, &victims[k]);
		jb(b, "%s", k + 1 < NVICTIMS ? "," : "");
	}
	jb(b, "}}");
}

static void jb_qp_stats(struct server *s, struct jbuf *b, const char *name, struct uroce_qp *qp)
{
	struct uroce_qp_stats st;

	jb(b, "\"%s\":{", name);
	jb_qp_info(b, qp);
	peer_check(uroce_qp_stats(qp, &st), "QP statistics");
	jb(b, ",\"lsn\":%u,\"credit_unlimited\":%s,\"rnr_wait\":%s", qp->rc.lsn, qp->rc.credit_unlimited ? "true" : "false",
	   qp->rc.rnr_wait ? "true" : "false");
	jb(b,
	   ",\"tx_packets\":%" PRIu64 ",\"rx_packets\":%" PRIu64 ",\"retransmits\":%" PRIu64 ",\"timeouts\":%" PRIu64
	   ",\"seq_naks_sent\":%" PRIu64 ",\"seq_naks_rcvd\":%" PRIu64 ",\"rnr_naks_sent\":%" PRIu64
	   ",\"rnr_naks_rcvd\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"out_of_sequence\":%" PRIu64
	   ",\"access_errors\":%" PRIu64,
	   st.tx_packets, st.rx_packets, st.retransmits, st.timeouts, st.seq_naks_sent, st.seq_naks_rcvd,
	   st.rnr_naks_sent, st.rnr_naks_rcvd, st.duplicates, st.out_of_sequence, st.access_errors);
	/* congestion notification (every connected QP) and control (sr/ec) */
	jb(b,
	   ",\"cnps_sent\":%" PRIu64 ",\"cnps_rcvd\":%" PRIu64 ",\"ecn_ce_rcvd\":%" PRIu64 ",\"trims_rcvd\":%" PRIu64
	   ",\"trim_nacks_rcvd\":%" PRIu64 ",\"cc_losses\":%" PRIu64 ",\"cc_rts_sent\":%" PRIu64
	   ",\"cc_rts_rcvd\":%" PRIu64 ",\"cc_pulls_sent\":%" PRIu64 ",\"cc_pulls_rcvd\":%" PRIu64,
	   st.cnps_sent, st.cnps_rcvd, st.ecn_ce_rcvd, st.trims_rcvd, st.trim_nacks_rcvd, st.cc_losses, st.cc_rts_sent,
	   st.cc_rts_rcvd, st.cc_pulls_sent, st.cc_pulls_rcvd);
	if (qp->init.rel.reliability == UROCE_REL_BE)
		jb(b, ",\"be_timeouts\":%" PRIu64 ",\"be_preempted\":%" PRIu64 ",\"late_drops\":%" PRIu64,
		   st.be_timeouts, st.be_preempted, st.late_drops);
	else if (qp->init.rel.reliability != UROCE_REL_RC)
		jb(b,
		   ",\"sacks_sent\":%" PRIu64 ",\"sacks_rcvd\":%" PRIu64 ",\"rack_losses\":%" PRIu64 ",\"tlp_probes\":%" PRIu64
		   ",\"rto_losses\":%" PRIu64 ",\"spurious_retx\":%" PRIu64 ",\"ec_nacks_sent\":%" PRIu64
		   ",\"ec_nacks_rcvd\":%" PRIu64 ",\"credit_waits\":%" PRIu64,
		   st.sacks_sent, st.sacks_rcvd, st.rack_losses, st.tlp_probes, st.rto_losses, st.spurious_retx,
		   st.ec_nacks_sent, st.ec_nacks_rcvd, st.credit_waits);
}

static void reply_stats(struct server *s, struct jbuf *b)
{
	struct uroce_port_stats ps, ps2;
	int32_t guard_first = -1;
	uint32_t guard_bad = 0;

	/* the drops of both ports together (each case names the reasons, not
	 * the port); port 2's frames taken, to show where a packet arrived */
	peer_check(uroce_port_stats(s->ctx, 1, &ps), "port statistics");
	peer_check(uroce_port_stats(s->ctx, 2, &ps2), "port statistics");
	for (int r = 1; r < UROCE_DROP__COUNT; r++)
		ps.drops[r] += ps2.drops[r];
	jb(b, "{\"ok\":true,\"rx_packets\":%" PRIu64 ",\"tx_packets\":%" PRIu64 ",\"port2_rx_packets\":%" PRIu64
	      ",\"port2_tx_packets\":%" PRIu64 ",\"drops\":{",
	   ps.rx_packets, ps.tx_packets, ps2.rx_packets, ps2.tx_packets);
	for (int r = 1; r < UROCE_DROP__COUNT; r++)
		jb(b, "%s\"%s\":%" PRIu64, r > 1 ? "," : "", uroce_drop_reason_name((enum uroce_drop_reason)r),
		   ps.drops[r]);
	jb(b, "},\"qps\":{");
	for (int c = 0; c < LC__COUNT; c++) {
		jb_qp_stats(s, b, s->lc[c].name, s->lc[c].qp);
		jb(b, "}%s", c + 1 < LC__COUNT ? "," : "");
	}
	for (size_t k = 0; k < NVICTIMS; k++) {
		struct victim *v = &victims[k];

		jb(b, ",");
		jb_qp_stats(s, b, v->name, v->qp);
		jb(b,
		   ",\"recv_ok\":%" PRIu64 ",\"recv_err\":%" PRIu64 ",\"recv_len_err\":%" PRIu64 ",\"send_ok\":%" PRIu64
		   ",\"send_err\":%" PRIu64 ",\"last_err_status\":%d,\"fatal_events\":%" PRIu64,
		   v->recv_ok, v->recv_err, v->recv_len_err, v->send_ok, v->send_err, v->last_err_status, v->fatal_events);
		jb(b, ",\"last_recv\":{\"opcode\":\"%s\",\"flags\":%u,\"byte_len\":%u,\"imm\":%u}}",
		   !v->recv_ok                                           ? "none" :
		   v->last_recv_opcode == UROCE_WC_RECV_RDMA_WITH_IMM ? "RECV_RDMA_WITH_IMM" :
		   v->last_recv_opcode == UROCE_WC_RECV                  ? "RECV" :
		                                                             "other",
		   v->last_recv_flags,
		   v->last_recv_len, ntohl(v->last_recv_imm));
	}
	/* each victim region against what it must hold */
	jb(b, "},\"regions\":{");
	bool first = true;
	for (int r = 0; r < R__COUNT; r++) {
		const uint8_t *p = region_ptr(s, r);
		int64_t lo = -1, hi = -1;

		if (!regions[r].shadow)
			continue;
		for (uint32_t i = 0; i < regions[r].len; i++) {
			if (p[i] != regions[r].shadow[i]) {
				if (lo < 0)
					lo = i;
				hi = i;
			}
		}
		jb(b, "%s\"%s\":{\"diff_first\":%" PRId64 ",\"diff_last\":%" PRId64 ",\"len\":%u}", first ? "" : ",",
		   regions[r].name, lo, hi, regions[r].len);
		first = false;
	}
	/* the legit regions' bytes that no legit WRITE touches (slot tails):
	 * "legit_data_gaps", "legit_sr_data_gaps", "legit_be_data_gaps" */
	for (int c = 0; c < LC__COUNT; c++) {
		int r = s->lc[c].data;
		const uint8_t *p = region_ptr(s, r);
		int64_t lo = -1, hi = -1;

		for (uint32_t i = 0; i < regions[r].len; i++) {
			if (i % SLOT_STRIDE >= SLOT_LEN && p[i] != fill_byte((unsigned)r, i)) {
				if (lo < 0)
					lo = i;
				hi = i;
			}
		}
		jb(b, ",\"%s_gaps\":{\"diff_first\":%" PRId64 ",\"diff_last\":%" PRId64 ",\"len\":%u}", regions[r].name,
		   lo, hi, regions[r].len);
	}
	/* every byte of the arena outside the regions */
	for (uint32_t i = 0; i < ARENA_SIZE; i++) {
		if (s->arena[i] != guard_byte(i) && !in_region(i)) {
			if (guard_first < 0)
				guard_first = (int32_t)i;
			guard_bad++;
		}
	}
	jb(b, "},\"guard_first_bad\":%d,\"guard_bad\":%u,", guard_first, guard_bad);
	jb(b,
	   "\"legit\":{\"seq\":%" PRIu64 ",\"received\":%" PRIu64 ",\"verify_errors\":%" PRIu64
	   ",\"client_errors\":%" PRIu64 ",\"replies\":%" PRIu64 ",\"reply_errors\":%" PRIu64 ",\"fatal\":%" PRIu64
	   ",\"first_error\":\"%s\"},",
	   s->lc[LC_RC].seq, s->lc[LC_RC].received, s->verify_errors, s->client_errors, s->lc[LC_RC].replies,
	   s->reply_errors, s->legit_fatal, s->first_error);
	/* the sr connection (its errors count in "legit" above) */
	jb(b, "\"legit_sr\":{\"seq\":%" PRIu64 ",\"received\":%" PRIu64 ",\"replies\":%" PRIu64 "},",
	   s->lc[LC_SR].seq, s->lc[LC_SR].received, s->lc[LC_SR].replies);
	jb(b, "\"legit_be\":{\"seq\":%" PRIu64 ",\"received\":%" PRIu64 ",\"replies\":%" PRIu64 "},",
	   s->lc[LC_BE].seq, s->lc[LC_BE].received, s->lc[LC_BE].replies);
	jb(b, "\"events\":[");
	for (unsigned i = 0; i < s->nevents; i++)
		jb(b, "%s\"%s\"", i ? "," : "", s->events[i]);
	jb(b, "],\"events_lost\":%" PRIu64 "}", uroce_async_events_lost(s->ctx));
}

static struct victim *victim_by_name(const char *name)
{
	for (size_t k = 0; k < NVICTIMS; k++)
		if (!strcmp(victims[k].name, name))
			return &victims[k];
	return NULL;
}

static int region_by_name(const char *name)
{
	for (int r = 0; r < R__COUNT; r++)
		if (!strcmp(regions[r].name, name))
			return r;
	return -1;
}

/* Post one local WR (BIND_MW, LOCAL_INV) on v's QP and run the engine
 * until it completes (legit traffic and the other CQs go on meanwhile).
 * 0 and its status, or -ETIMEDOUT. */
static int local_wr(struct server *s, struct victim *v, struct uroce_send_wr *wr, int *status)
{
	static uint32_t n;
	struct uroce_send_wr *bad;
	uint64_t deadline = peer_now_ms() + LOCAL_WR_TIMEOUT_MS;
	int rc;

	wr->wr_id = LOCAL_WR_ID + ++n;
	wr->send_flags = UROCE_SEND_SIGNALED;
	s->local_wr_id = wr->wr_id;
	s->local_done = false;
	rc = uroce_post_send(v->qp, wr, &bad);
	if (rc < 0) {
		s->local_wr_id = 0;
		return rc;
	}
	while (!s->local_done && peer_now_ms() < deadline) {
		if (uroce_progress(s->ctx) < 0)
			break;
		poll_cqs(s);
		poll_events(s);
	}
	s->local_wr_id = 0;
	if (!s->local_done)
		return -ETIMEDOUT;
	*status = s->local_status;
	return 0;
}

/* "mw bind NAME OFF LEN": bind v's window over [OFF, OFF + LEN) of its data
 * region, remote write, under the window's next key. */
static void mw_bind(struct server *s, struct victim *v, uint32_t off, uint32_t len, struct jbuf *b)
{
	struct uroce_send_wr wr;
	int rc, status = -1;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = UROCE_WR_BIND_MW;
	wr.bind_mw.mw = v->mw;
	wr.bind_mw.rkey = uroce_inc_rkey(v->mw->rkey);
	wr.bind_mw.bind_info.mr = regions[v->data].mr;
	wr.bind_mw.bind_info.addr = (uint64_t)(uintptr_t)(region_ptr(s, v->data) + off);
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = UROCE_ACCESS_REMOTE_WRITE;
	rc = local_wr(s, v, &wr, &status);
	if (rc < 0 || status != UROCE_WC_SUCCESS) {
		jb(b, "{\"ok\":false,\"error\":\"mw bind %s: %s\"}", v->name,
		   rc < 0 ? uroce_last_error() : uroce_wc_status_str((enum uroce_wc_status)status));
		return;
	}
	v->mw_bound = true;
	v->mw_va = wr.bind_mw.bind_info.addr;
	v->mw_len = len;
	jb(b, "{\"ok\":true,\"rkey\":%u,\"va\":%" PRIu64 ",\"len\":%u}", v->mw->rkey, v->mw_va, len);
}

/* "mw inv NAME": LOCAL_INV of v's window under its current key. */
static void mw_local_inv(struct server *s, struct victim *v, struct jbuf *b)
{
	struct uroce_send_wr wr;
	int rc, status = -1;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = UROCE_WR_LOCAL_INV;
	wr.invalidate_rkey = v->mw->rkey;
	rc = local_wr(s, v, &wr, &status);
	if (rc < 0 || status != UROCE_WC_SUCCESS) {
		jb(b, "{\"ok\":false,\"error\":\"mw inv %s: %s\"}", v->name,
		   rc < 0 ? uroce_last_error() : uroce_wc_status_str((enum uroce_wc_status)status));
		return;
	}
	v->mw_bound = false;
	jb(b, "{\"ok\":true,\"rkey\":%u}", v->mw->rkey);
}

/* The CNPs each victim sent, read after every uroce_progress (EMBEDDED:
 * the engine runs on this thread): how many, and the engine's date of
 * each (cnp_last_ns: the receive burst whose CE mark it answers). More
 * than one in one progress call counts as "multi" (only the last is dated). */
static void cnp_trace(void)
{
	for (size_t k = 0; k < NVICTIMS; k++) {
		struct victim *v = &victims[k];
		uint64_t n = v->qp->stats.cnps_sent, t = v->qp->cnp_last_ns;

		if (n > v->cnp_seen) {
			if (v->cnp_count && t - v->cnp_last_ns < v->cnp_min_gap_ns)
				v->cnp_min_gap_ns = t - v->cnp_last_ns;
			if (!v->cnp_count)
				v->cnp_first_ns = t;
			v->cnp_multi += n - v->cnp_seen - 1;
			v->cnp_count += n - v->cnp_seen;
			v->cnp_last_ns = t;
		}
		v->cnp_seen = n;
	}
}

static void cnp_clear(struct victim *v)
{
	v->cnp_count = v->cnp_multi = v->cnp_first_ns = v->cnp_last_ns = 0;
	v->cnp_min_gap_ns = UINT64_MAX;
}

/* "send NAME LEN [imm]": an RDMA WRITE (with immediate: a message that
 * takes a receiver slot, so ec NACKs can name it) of the first LEN bytes
 * of the sr/ec victim's data region to its peer (the attacker, at any address). */
static void victim_send(struct server *s, struct victim *v, uint32_t len, bool imm, struct jbuf *b)
{
	struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)region_ptr(s, v->data), .length = len,
	                         .lkey = regions[v->data].mr->lkey };
	struct uroce_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = SEND_WR_ID + ++v->send_posted;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? UROCE_WR_RDMA_WRITE_WITH_IMM : UROCE_WR_RDMA_WRITE;
	wr.imm_data = imm ? 0x494d4d21u : 0;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = SEND_RADDR;
	wr.wr.rdma.rkey = SEND_RKEY;
	if (uroce_post_send(v->qp, &wr, &bad) < 0) {
		jb(b, "{\"ok\":false,\"error\":\"send %s %u: %s\"}", v->name, len, uroce_last_error());
		return;
	}
	jb(b, "{\"ok\":true,\"wr_id\":%" PRIu64 "}", wr.wr_id);
}

/* "state NAME reset|init": the victim to RESET, or on to INIT, where it
 * stays until "reset NAME" */
static void victim_state(struct server *s, struct victim *v, const char *how, struct jbuf *b)
{
	struct uroce_qp_attr a;
	struct uroce_wc wc[16];

	srp_release(s, v);
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	if (uroce_qp_modify(v->qp, &a, UROCE_QP_STATE) < 0 || (!strcmp(how, "init") && qp_to_init(v->qp, v->type) < 0)) {
		jb(b, "{\"ok\":false,\"error\":\"state %s %s: %s\"}", v->name, how, uroce_last_error());
		return;
	}
	while (uroce_poll_cq(s->victim_cq, 16, wc) > 0)
		;
	jb(b, "{\"ok\":true,");
	jb_victim_info(s, b, v);
	jb(b, "}");
}

/* "recreate NAME": destroy the victim's QP in whatever it is doing (an
 * EQDS receiver may be waiting in its port's pacer) and make a new one,
 * connected again (a new QP number). */
static void victim_recreate(struct server *s, struct victim *v, struct jbuf *b)
{
	poll_cqs(s); /* what it completed counts; the rest goes with it */
	srp_release(s, v);
	if (uroce_qp_destroy(v->qp) < 0) {
		jb(b, "{\"ok\":false,\"error\":\"recreate %s: %s\"}", v->name, uroce_last_error());
		return;
	}
	qp_imm_counter = v->imc;
	qp_imm_keyed = v->keyed;
	qp_chunk_pkts = v->precv ? SRP_CHUNK_PKTS : 0;
	v->qp = qp_new_fo(s->pd_victim, s->victim_cq, s->victim_cq, v->type, v->precv ? SRP_NRECV : 16, v->rel,
	                  v->eqds, v->fo);
	qp_imm_counter = false;
	qp_imm_keyed = false;
	qp_chunk_pkts = 0;
	v->cnp_seen = 0;
	if (v->data >= 0)
		region_refill(s, v->data);
	if (v->recv >= 0)
		region_refill(s, v->recv);
	victim_connect(s, v, 0);
	jb(b, "{\"ok\":true,");
	jb_victim_info(s, b, v);
	jb(b, "}");
}

static void ctl_command(struct server *s, char *line, struct jbuf *b)
{
	char name[32], how[8];
	unsigned off, len;
	int r;
	struct victim *v;

	if (!strcmp(line, "info")) {
		reply_info(s, b);
	} else if (!strcmp(line, "stats")) {
		reply_stats(s, b);
	} else if (!strcmp(line, "quit")) {
		s->quit = true;
		jb(b, "{\"ok\":true}");
	} else if ((r = sscanf(line, "reset %31s %u", name, &len)) >= 1) {
		/* be only: "reset be MS" gives the first receive a deadline of
		 * its own (the others keep the QP's minute) */
		v = victim_by_name(name);
		if (v && r == 2 && (v->rel != UROCE_REL_BE || len < 1 || len > 10000)) {
			jb(b, "{\"ok\":false,\"error\":\"reset %s %u: a first receive's deadline is for be (1..10000 ms)\"}",
			   name, len);
			return;
		}
		if (!v || victim_reset(s, v, r == 2 ? len * 1000u : 0) < 0) {
			jb(b, "{\"ok\":false,\"error\":\"reset %s: not a victim QP or it cannot reset (%s); victims: rc, "
			      "rc0, uc, ud, sr, srx, ec, be, sre, sre2, fo, imc, srp, srk, bek, eck\"}",
			   name, uroce_last_error());
			return;
		}
		jb(b, "{\"ok\":true,");
		jb_victim_info(s, b, v);
		jb(b, "}");
	} else if (sscanf(line, "mw bind %31s %u %u", name, &off, &len) == 3) {
		v = victim_by_name(name);
		if (!v || !v->has_mw || off > regions[v->data].len || len < 1 || len > regions[v->data].len - off) {
			jb(b, "{\"ok\":false,\"error\":\"mw bind %s %u %u: windows are on rc and be, within their data "
			      "region\"}",
			   name, off, len);
			return;
		}
		mw_bind(s, v, off, len, b);
	} else if (sscanf(line, "mw inv %31s", name) == 1) {
		v = victim_by_name(name);
		if (!v || !v->has_mw) {
			jb(b, "{\"ok\":false,\"error\":\"mw inv %s: windows are on rc and be\"}", name);
			return;
		}
		mw_local_inv(s, v, b);
	} else if (sscanf(line, "send %31s %u", name, &len) == 2) {
		v = victim_by_name(name);
		if (!v || (v->rel != UROCE_REL_SR && v->rel != UROCE_REL_EC) || v->data < 0 || len < 1 ||
		    len > regions[v->data].len) {
			jb(b, "{\"ok\":false,\"error\":\"send %s %u: sr/ec victims with a data region (sr, ec, sre), "
			      "1 byte to its length\"}",
			   name, len);
			return;
		}
		victim_send(s, v, len, strstr(line, " imm") != NULL, b);
	} else if (sscanf(line, "state %31s %7s", name, how) == 2) {
		v = victim_by_name(name);
		if (!v || (strcmp(how, "reset") && strcmp(how, "init"))) {
			jb(b, "{\"ok\":false,\"error\":\"state %s %s: a victim, reset or init\"}", name, how);
			return;
		}
		victim_state(s, v, how, b);
	} else if (sscanf(line, "recreate %31s", name) == 1) {
		v = victim_by_name(name);
		if (!v || v->has_mw) {
			jb(b, "{\"ok\":false,\"error\":\"recreate %s: a victim without a memory window\"}", name);
			return;
		}
		victim_recreate(s, v, b);
	} else if (sscanf(line, "cnplog %31s", name) == 1) {
		v = victim_by_name(name);
		if (!v) {
			jb(b, "{\"ok\":false,\"error\":\"cnplog %s: not a victim\"}", name);
			return;
		}
		jb(b, "{\"ok\":true,\"count\":%" PRIu64 ",\"multi\":%" PRIu64 ",\"first_ns\":%" PRIu64
		      ",\"last_ns\":%" PRIu64 ",\"min_gap_ns\":%" PRIu64 "}",
		   v->cnp_count, v->cnp_multi, v->cnp_first_ns, v->cnp_last_ns,
		   v->cnp_count > 1 ? v->cnp_min_gap_ns : 0);
		cnp_clear(v);
	} else if (sscanf(line, "hold %u", &len) == 1) {
		how[0] = 0;
		if (len < 1 || len > HOLD_MAX_MS || (sscanf(line, "hold %*u %7s", how) == 1 && strcmp(how, "ctl"))) {
			jb(b, "{\"ok\":false,\"error\":\"%s: accepted hold MS or hold MS ctl, MS 1..%u\"}", line,
			   HOLD_MAX_MS);
			return;
		}
		s->hold_until = peer_now_ms() + len;
		s->hold_ctl = !strcmp(how, "ctl");
		jb(b, "{\"ok\":true}");
	} else if (sscanf(line, "tmo be %u", &len) == 1 || !strcmp(line, "tmo off")) {
		/* a group of id TMO_GROUP over the be victim, warm-up LEN us (its
		 * timeout is then the victim's deadline); off: none, the
		 * victim's deadline back */
		struct uroce_tmo_attr ta = { .group_id = TMO_GROUP, .msg_bytes = 4096 };
		struct uroce_qp *be = victim_by_name("be")->qp;

		if (s->tmo)
			peer_check(uroce_tmo_destroy(s->tmo), "destroy the adaptive-timeout group");
		s->tmo = NULL;
		if (!strcmp(line, "tmo off")) {
			uroce_qp_set_timeout(be, BE_TIMEOUT_US);
			jb(b, "{\"ok\":true}");
			return;
		}
		if (len < 1 || uroce_tmo_create(&ta, &be, 1, &s->tmo) < 0 ||
		    uroce_tmo_warmup(s->tmo, (uint64_t)len * 1000u) < 0) {
			jb(b, "{\"ok\":false,\"error\":\"tmo be %u: %s\"}", len, len ? uroce_last_error() : "a warm-up of 0");
			return;
		}
		jb(b, "{\"ok\":true,\"timeout_ns\":%" PRIu64 "}", uroce_tmo_timeout_ns(s->tmo));
	} else if (sscanf(line, "tmo exch %u", &len) == 1) {
		/* one uroce_tmo_exchange for round LEN: rc 0 once every vote is in */
		if (!s->tmo) {
			jb(b, "{\"ok\":false,\"error\":\"tmo exch: no group (tmo be US first)\"}");
			return;
		}
		r = uroce_tmo_exchange(s->tmo, len);
		jb(b, "{\"ok\":true,\"rc\":%d,\"timeout_ns\":%" PRIu64 "}", r, uroce_tmo_timeout_ns(s->tmo));
	} else if (sscanf(line, "imm expect %u", &off) == 1) {
		/* one arrival of immediate OFF (as the wire carries it) */
		s->imm_flag = 0;
		r = uroce_expect_imm_count(s->ctx, htobe32(off), 1, NULL, NULL, &s->imm_flag);
		jb(b, "{\"ok\":true,\"rc\":%d}", r);
	} else if (sscanf(line, "imm count %u", &off) == 1) {
		jb(b, "{\"ok\":true,\"count\":%" PRIu64 ",\"fired\":%d}", uroce_imm_count(s->ctx, htobe32(off)),
		   __atomic_load_n(&s->imm_flag, __ATOMIC_ACQUIRE));
	} else if (!strcmp(line, "refill guards")) {
		/* after a case that wrote outside every region: the next case
		 * starts from intact guards (the failed case was reported) */
		for (uint32_t i = 0; i < ARENA_SIZE; i++)
			if (!in_region(i))
				s->arena[i] = guard_byte(i);
		jb(b, "{\"ok\":true}");
	} else if (!strcmp(line, "refill legit_data_gaps") || !strcmp(line, "refill legit_sr_data_gaps") ||
	           !strcmp(line, "refill legit_be_data_gaps")) {
		r = strstr(line, "_sr_") ? R_LEGIT_SR_DATA : strstr(line, "_be_") ? R_LEGIT_BE_DATA : R_LEGIT_DATA;
		uint8_t *p = region_ptr(s, r);

		for (uint32_t i = 0; i < regions[r].len; i++)
			if (i % SLOT_STRIDE >= SLOT_LEN)
				p[i] = fill_byte((unsigned)r, i);
		jb(b, "{\"ok\":true}");
	} else if (sscanf(line, "refill %31s", name) == 1) {
		r = region_by_name(name);
		if (r < 0 || !regions[r].shadow) {
			jb(b, "{\"ok\":false,\"error\":\"refill %s: not a victim region\"}", name);
			return;
		}
		region_refill(s, r);
		jb(b, "{\"ok\":true}");
	} else if (sscanf(line, "dump %31s %u %u", name, &off, &len) == 3) {
		r = region_by_name(name);
		if (r < 0 || off > regions[r].len || len > regions[r].len - off) {
			jb(b, "{\"ok\":false,\"error\":\"dump %s %u %u: no such region or range\"}", name, off, len);
			return;
		}
		jb(b, "{\"ok\":true,\"hex\":\"");
		for (unsigned i = 0; i < len; i++)
			jb(b, "%02x", region_ptr(s, r)[off + i]);
		jb(b, "\"}");
	} else {
		jb(b, "{\"ok\":false,\"error\":\"unknown command; accepted: info, stats, reset NAME [MS], refill NAME, dump "
		      "NAME OFF LEN, hold MS [ctl], mw bind NAME OFF LEN, mw inv NAME, send NAME LEN, state NAME reset|init, "
		      "recreate NAME, cnplog NAME, tmo be US, tmo exch ROUND, tmo off, imm expect IMM, imm count IMM, "
		      "quit\"}");
	}
}

static void ctl_poll(struct server *s)
{
	if (s->ctl_fd < 0) {
		s->ctl_fd = accept(s->ctl_listen, NULL, NULL);
		if (s->ctl_fd < 0)
			return;
		s->ctl_len = 0;
	}
	for (;;) {
		ssize_t n = recv(s->ctl_fd, s->ctl_buf + s->ctl_len, sizeof(s->ctl_buf) - 1 - s->ctl_len, MSG_DONTWAIT);
		char *nl;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
			close(s->ctl_fd);
			s->ctl_fd = -1;
			return;
		}
		if (n < 0)
			return;
		s->ctl_len += (size_t)n;
		s->ctl_buf[s->ctl_len] = 0;
		while ((nl = strchr(s->ctl_buf, '\n')) != NULL) {
			struct jbuf b = { 0 };
			size_t done = 0;

			*nl = 0;
			ctl_command(s, s->ctl_buf, &b);
			jb(&b, "\n");
			while (done < b.len) {
				ssize_t w = send(s->ctl_fd, b.p + done, b.len - done, MSG_NOSIGNAL);

				if (w < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				if (w <= 0)
					break;
				done += (size_t)w;
			}
			free(b.p);
			s->ctl_len -= (size_t)(nl + 1 - s->ctl_buf);
			memmove(s->ctl_buf, nl + 1, s->ctl_len + 1);
		}
		if (s->ctl_len >= sizeof(s->ctl_buf) - 1) {
			close(s->ctl_fd); /* a line longer than any command */
			s->ctl_fd = -1;
			return;
		}
	}
}

static int ctl_open(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		peer_die("--ctl %s: longer than %zu bytes", path, sizeof(a.sun_path) - 1);
	strcpy(a.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0)
		peer_die("--ctl %s: cannot listen: %s", path, strerror(errno));
	return fd;
}

/* Accept the client's TCP connection while the transport keeps running. */
static int run_server(struct opts *o)
{
	struct server s;
	struct uroce_context_attr ca;
	struct peer_info mine[LC__COUNT], theirs[LC__COUNT];
	uint64_t deadline = peer_now_ms() + (uint64_t)o->duration_s * 1000u;
	unsigned idle = 0;
	int fd;

	memset(&s, 0, sizeof(s));
	s.lc[LC_RC] = (struct legit_conn){ .name = "legit", .rel = UROCE_REL_RC, .data = R_LEGIT_DATA,
	                                   .recv = R_LEGIT_RECV, .reply = R_LEGIT_REPLY, .seed_write = SEED_WRITE,
	                                   .seed_reply = SEED_REPLY };
	s.lc[LC_SR] = (struct legit_conn){ .name = "legit_sr", .rel = UROCE_REL_SR, .data = R_LEGIT_SR_DATA,
	                                   .recv = R_LEGIT_SR_RECV, .reply = R_LEGIT_SR_REPLY,
	                                   .seed_write = SEED_WRITE_SR, .seed_reply = SEED_REPLY_SR };
	s.lc[LC_BE] = (struct legit_conn){ .name = "legit_be", .rel = UROCE_REL_BE, .data = R_LEGIT_BE_DATA,
	                                   .recv = R_LEGIT_BE_RECV, .reply = R_LEGIT_BE_REPLY,
	                                   .seed_write = SEED_WRITE_BE, .seed_reply = SEED_REPLY_BE };
	s.o = o;
	s.ctl_fd = -1;
	memset(&ca, 0, sizeof(ca));
	const char *specs[2] = { o->port, o->port2 };
	ca.ports = specs;
	ca.nports = 2;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	peer_check(uroce_context_create(&s.ctx, &ca), o->port);
	peer_check(uroce_query_port(s.ctx, 1, &s.port), "query port 1");
	peer_check(uroce_query_port(s.ctx, 2, &s.port2), "query port 2");
	find_sgid_v4(s.ctx);
	sgid_v4_port2 = peer_sgid_v4(s.ctx, 2);
	peer_check(uroce_pd_alloc(s.ctx, &s.pd_legit), "allocate a PD");
	peer_check(uroce_pd_alloc(s.ctx, &s.pd_victim), "allocate a PD");
	for (int c = 0; c < LC__COUNT; c++) {
		peer_check(uroce_cq_create(s.ctx, 256, &s.lc[c].scq), "create a CQ");
		peer_check(uroce_cq_create(s.ctx, 256, &s.lc[c].rcq), "create a CQ");
	}
	peer_check(uroce_cq_create(s.ctx, 1024, &s.victim_cq), "create a CQ");
	arena_setup(&s);
	make_revoked_rkey(&s);
	s.srp_buf = mmap(NULL, SRP_BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s.srp_buf == MAP_FAILED)
		peer_die("cannot map srp's %u-byte receive buffer", SRP_BUF_LEN);
	peer_check(uroce_mr_reg(s.pd_victim, s.srp_buf, SRP_BUF_LEN, UROCE_ACCESS_LOCAL_WRITE, &s.srp_mr),
	      "register a region");

	for (size_t k = 0; k < NVICTIMS; k++) {
		cnp_clear(&victims[k]);
		if (victims[k].has_mw)
			peer_check(uroce_mw_alloc(s.pd_victim, UROCE_MW_TYPE_2, &victims[k].mw), "allocate a memory window");
		qp_imm_counter = victims[k].imc;
		qp_imm_keyed = victims[k].keyed;
		qp_chunk_pkts = victims[k].precv ? SRP_CHUNK_PKTS : 0;
		victims[k].qp = qp_new_fo(s.pd_victim, s.victim_cq, s.victim_cq, victims[k].type,
		                          victims[k].precv ? SRP_NRECV : 16, victims[k].rel, victims[k].eqds, victims[k].fo);
		qp_imm_counter = false;
		qp_imm_keyed = false;
		qp_chunk_pkts = 0;
		if (!victims[k].peer_client)
			victim_connect(&s, &victims[k], 0);
	}
	for (int c = 0; c < LC__COUNT; c++)
		s.lc[c].qp = qp_new(s.pd_legit, s.lc[c].scq, s.lc[c].rcq, UROCE_QPT_RC, 128, s.lc[c].rel, false);
	s.ctl_listen = ctl_open(o->ctl_path);
	printf("conf_peer: server on %s, waiting for the client on TCP port %u\n", o->port, o->tcp_port);
	fflush(stdout);

	fd = peer_tcp_accept(s.ctx, s.o->tcp_port, EXCHANGE_TIMEOUT_MS, &s.client_ip_be);
	/* one line each way per connection: rc, sr, be */
	for (int c = 0; c < LC__COUNT; c++) {
		mine[c].qpn = uroce_qp_num(s.lc[c].qp);
		mine[c].token = uroce_qp_token(s.lc[c].qp);
		mine[c].psn = peer_rand_psn();
		mine[c].rkey = regions[s.lc[c].data].mr->rkey;
		mine[c].va = (uint64_t)(uintptr_t)region_ptr(&s, s.lc[c].data);
		exchange(fd, &mine[c], &theirs[c], false);
	}
	close(fd);
	for (int c = 0; c < LC__COUNT; c++) {
		struct legit_conn *lc = &s.lc[c];

		qp_connect(lc->qp, UROCE_QPT_RC, s.client_ip_be, theirs[c].qpn, theirs[c].token, theirs[c].psn, mine[c].psn, 4,
		           LEGIT_TIMEOUT);
		for (uint32_t i = 0; i < LEGIT_NRECV; i++)
			post_recv1(lc->qp, i, region_ptr(&s, lc->recv) + i * HDR_LEN, HDR_LEN, regions[lc->recv].mr->lkey);
		printf("conf_peer: %s connection up (%s, QPN %u to QPN %u)\n", lc->name,
		       uroce_reliability_str(lc->rel), mine[c].qpn, theirs[c].qpn);
	}
	/* victims that take the client's address as their peer's */
	for (size_t k = 0; k < NVICTIMS; k++)
		if (victims[k].peer_client)
			victim_connect(&s, &victims[k], 0);
	fflush(stdout);
	if (o->ready_file) {
		FILE *f = fopen(o->ready_file, "w");

		if (!f)
			peer_die("--ready %s: %s", o->ready_file, strerror(errno));
		fclose(f);
	}

	for (unsigned iter = 0; !s.quit && !peer_stop; iter++) {
		int n;

		if (s.hold_until) {
			if (peer_now_ms() < s.hold_until) {
				/* "hold MS ctl": a state read while nothing moves */
				if (s.hold_ctl)
					ctl_poll(&s);
				usleep(100);
				continue;
			}
			s.hold_until = 0;
		}
		n = uroce_progress(s.ctx);

		if (n < 0)
			peer_die("uroce_progress: %s", uroce_strerror(n));
		cnp_trace();
		poll_cqs(&s);
		poll_events(&s);
		if ((iter & 31u) == 0) {
			ctl_poll(&s);
			if (peer_now_ms() > deadline) {
				fprintf(stderr, "conf_peer: server: --duration %u s is over\n", o->duration_s);
				break;
			}
		}
		/* idle: yield the CPU a little (2 cores are shared by the whole suite) */
		idle = n ? 0 : idle + 1;
		if (idle > 256)
			usleep(20);
	}
	printf("conf_peer: server done: %" PRIu64 " rc, %" PRIu64 " sr and %" PRIu64 " be iterations received, %" PRIu64
	       " verify errors, %" PRIu64 " client errors\n",
	       s.lc[LC_RC].received, s.lc[LC_SR].received, s.lc[LC_BE].received, s.verify_errors, s.client_errors);

	if (s.ctl_fd >= 0)
		close(s.ctl_fd);
	close(s.ctl_listen);
	unlink(o->ctl_path);
	for (size_t k = 0; k < NVICTIMS; k++) {
		if (victims[k].mw)
			uroce_mw_dealloc(victims[k].mw); /* before its region's deregistration */
		srp_release(&s, &victims[k]);
		uroce_qp_destroy(victims[k].qp);
	}
	uroce_mr_dereg(s.srp_mr);
	munmap(s.srp_buf, SRP_BUF_LEN);
	for (int c = 0; c < LC__COUNT; c++)
		uroce_qp_destroy(s.lc[c].qp);
	for (int r = 0; r < R__COUNT; r++) {
		uroce_mr_dereg(regions[r].mr);
		free(regions[r].shadow);
	}
	uroce_cq_destroy(s.victim_cq);
	for (int c = 0; c < LC__COUNT; c++) {
		uroce_cq_destroy(s.lc[c].rcq);
		uroce_cq_destroy(s.lc[c].scq);
	}
	uroce_pd_free(s.pd_victim);
	uroce_pd_free(s.pd_legit);
	uroce_context_destroy(s.ctx);
	free(s.arena);
	return s.verify_errors || s.client_errors || s.legit_fatal || s.reply_errors ? 1 : 0;
}

/* ====================================================================== *
 * client
 * ====================================================================== */

struct client {
	struct uroce_context *ctx;
	struct uroce_qp *qp, *sr, *be;       /* the rc, sr and be connections */
	struct uroce_cq *scq, *rcq, *sr_scq, *sr_rcq, *be_scq, *be_rcq;
	struct uroce_mr *mr;
	uint8_t *buf; /* wbuf | rbuf | hdr | replies | sr wbuf | sr hdr | sr replies | be wbuf | be hdr | be replies */
	uint64_t errors;
};

#define C_WBUF 0u
#define C_RBUF SLOT_STRIDE
#define C_HDR (2u * SLOT_STRIDE)
#define C_REPLY (3u * SLOT_STRIDE)
#define C_NREPLY 8u
#define C_SR_WBUF (C_REPLY + C_NREPLY * SLOT_STRIDE)
#define C_SR_HDR (C_SR_WBUF + SLOT_STRIDE)
#define C_SR_REPLY (C_SR_HDR + SLOT_STRIDE)
#define C_BE_WBUF (C_SR_REPLY + C_NREPLY * SLOT_STRIDE)
#define C_BE_HDR (C_BE_WBUF + SLOT_STRIDE)
#define C_BE_REPLY (C_BE_HDR + SLOT_STRIDE)
#define C_SIZE (C_BE_REPLY + C_NREPLY * SLOT_STRIDE)

/* Wait for one completion on cq; a failed one or none in time ends the client. */
static void client_wait(struct client *c, struct uroce_cq *cq, struct uroce_wc *wc, const char *what, uint64_t seq)
{
	uint64_t deadline = peer_now_ms() + ITER_TIMEOUT_MS;

	for (;;) {
		int n = uroce_poll_cq(cq, 1, wc);

		if (n < 0)
			peer_die("poll a CQ: %s", uroce_strerror(n));
		if (n == 1)
			break;
		if (peer_stop)
			return;
		if (peer_now_ms() > deadline)
			peer_die("client: iteration %" PRIu64 ": no %s completion in %d ms: the connection stalled", seq, what,
			    ITER_TIMEOUT_MS);
		n = uroce_progress(c->ctx);
		if (n < 0)
			peer_die("uroce_progress: %s", uroce_strerror(n));
	}
	if (wc->status != UROCE_WC_SUCCESS)
		peer_die("client: iteration %" PRIu64 ": %s completion failed: %s", seq, what,
		    uroce_wc_status_str(wc->status));
}

/* The server's reply to iteration seq arrived in wc (at reply area base):
 * check its length and pattern, post the buffer again. */
static void client_check_reply(struct client *c, struct uroce_qp *qp, const struct uroce_wc *wc, uint32_t base,
                               uint32_t seed, uint64_t seq, const char *what)
{
	const uint8_t *rep = c->buf + base + wc->wr_id * SLOT_STRIDE;
	bool ok = wc->byte_len == REPLY_LEN;

	for (uint32_t i = 0; ok && i < REPLY_LEN; i++)
		ok = rep[i] == pattern(seed, seq, i);
	if (!ok) {
		c->errors++;
		fprintf(stderr, "conf_peer: client: iteration %" PRIu64 ": the server's %s reply is wrong (%u bytes)\n",
		        seq, what, wc->byte_len);
	}
	post_recv1(qp, wc->wr_id, c->buf + base + wc->wr_id * SLOT_STRIDE, SLOT_STRIDE, c->mr->lkey);
}

static int run_client(struct opts *o)
{
	struct client c;
	struct uroce_context_attr ca;
	struct uroce_port_attr pa;
	struct peer_info mine, theirs, mine_sr, theirs_sr, mine_be, theirs_be;
	uint64_t deadline = peer_now_ms() + (uint64_t)o->duration_s * 1000u;
	uint64_t seq = 0;
	int fd;

	memset(&c, 0, sizeof(c));
	memset(&ca, 0, sizeof(ca));
	ca.port = o->port;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	peer_check(uroce_context_create(&c.ctx, &ca), o->port);
	peer_check(uroce_query_port(c.ctx, 1, &pa), "query port 1");
	find_sgid_v4(c.ctx);
	struct uroce_pd *pd;
	peer_check(uroce_pd_alloc(c.ctx, &pd), "allocate a PD");
	peer_check(uroce_cq_create(c.ctx, 64, &c.scq), "create a CQ");
	peer_check(uroce_cq_create(c.ctx, 64, &c.rcq), "create a CQ");
	peer_check(uroce_cq_create(c.ctx, 64, &c.sr_scq), "create a CQ");
	peer_check(uroce_cq_create(c.ctx, 64, &c.sr_rcq), "create a CQ");
	peer_check(uroce_cq_create(c.ctx, 64, &c.be_scq), "create a CQ");
	peer_check(uroce_cq_create(c.ctx, 64, &c.be_rcq), "create a CQ");
	c.buf = aligned_alloc(4096, C_SIZE);
	if (!c.buf)
		peer_die("out of memory");
	memset(c.buf, 0, C_SIZE);
	peer_check(uroce_mr_reg(pd, c.buf, C_SIZE, UROCE_ACCESS_LOCAL_WRITE, &c.mr), "register the buffer");
	c.qp = qp_new(pd, c.scq, c.rcq, UROCE_QPT_RC, 64, UROCE_REL_RC, false);
	c.sr = qp_new(pd, c.sr_scq, c.sr_rcq, UROCE_QPT_RC, 64, UROCE_REL_SR, false);
	c.be = qp_new(pd, c.be_scq, c.be_rcq, UROCE_QPT_RC, 64, UROCE_REL_BE, false);

	fd = peer_tcp_connect(o->server_ip_be, o->tcp_port, EXCHANGE_TIMEOUT_MS);
	mine = (struct peer_info){ .qpn = uroce_qp_num(c.qp), .token = uroce_qp_token(c.qp), .psn = peer_rand_psn() };
	exchange(fd, &mine, &theirs, true);
	mine_sr = (struct peer_info){ .qpn = uroce_qp_num(c.sr), .token = uroce_qp_token(c.sr), .psn = peer_rand_psn() };
	exchange(fd, &mine_sr, &theirs_sr, true);
	mine_be = (struct peer_info){ .qpn = uroce_qp_num(c.be), .token = uroce_qp_token(c.be), .psn = peer_rand_psn() };
	exchange(fd, &mine_be, &theirs_be, true);
	close(fd);
	qp_connect(c.qp, UROCE_QPT_RC, o->server_ip_be, theirs.qpn, theirs.token, theirs.psn, mine.psn, 4,
	           LEGIT_TIMEOUT);
	qp_connect(c.sr, UROCE_QPT_RC, o->server_ip_be, theirs_sr.qpn, theirs_sr.token, theirs_sr.psn, mine_sr.psn, 4,
	           LEGIT_TIMEOUT);
	qp_connect(c.be, UROCE_QPT_RC, o->server_ip_be, theirs_be.qpn, theirs_be.token, theirs_be.psn, mine_be.psn, 4,
	           LEGIT_TIMEOUT);
	for (uint32_t i = 0; i < C_NREPLY; i++) {
		post_recv1(c.qp, i, c.buf + C_REPLY + i * SLOT_STRIDE, SLOT_STRIDE, c.mr->lkey);
		post_recv1(c.sr, i, c.buf + C_SR_REPLY + i * SLOT_STRIDE, SLOT_STRIDE, c.mr->lkey);
		post_recv1(c.be, i, c.buf + C_BE_REPLY + i * SLOT_STRIDE, SLOT_STRIDE, c.mr->lkey);
	}
	printf("conf_peer: client connected (rc QPN %u to QPN %u, sr QPN %u to QPN %u, be QPN %u to QPN %u)\n",
	       mine.qpn, theirs.qpn, mine_sr.qpn, theirs_sr.qpn, mine_be.qpn, theirs_be.qpn);
	fflush(stdout);

	while (!peer_stop && peer_now_ms() < deadline) {
		uint32_t slot = (uint32_t)(++seq % NSLOT);
		uint64_t raddr = theirs.va + slot * SLOT_STRIDE, sr_raddr = theirs_sr.va + slot * SLOT_STRIDE;
		uint64_t be_raddr = theirs_be.va + slot * SLOT_STRIDE;
		struct legit_hdr h = { HDR_MAGIC, slot, seq, 0, SLOT_LEN, 0 };
		struct uroce_wc wc;

		for (uint32_t i = 0; i < SLOT_LEN; i++) {
			c.buf[C_WBUF + i] = pattern(SEED_WRITE, seq, i);
			c.buf[C_SR_WBUF + i] = pattern(SEED_WRITE_SR, seq, i);
			c.buf[C_BE_WBUF + i] = pattern(SEED_WRITE_BE, seq, i);
		}
		memset(c.buf + C_RBUF, 0, SLOT_LEN);
		h.client_errors = c.errors;
		memcpy(c.buf + C_HDR, &h, sizeof(h));
		memcpy(c.buf + C_SR_HDR, &h, sizeof(h));
		memcpy(c.buf + C_BE_HDR, &h, sizeof(h));
		post_send1(c.qp, UROCE_WR_RDMA_WRITE, 1, c.buf + C_WBUF, SLOT_LEN, c.mr->lkey, raddr, theirs.rkey);
		post_send1(c.qp, UROCE_WR_SEND, 2, c.buf + C_HDR, sizeof(h), c.mr->lkey, 0, 0);
		post_send1(c.qp, UROCE_WR_RDMA_READ, 3, c.buf + C_RBUF, SLOT_LEN, c.mr->lkey, raddr, theirs.rkey);
		/* sr: the WRITE and the SEND are separate messages placed on
		 * arrival in any order; the SEND goes once the WRITE is
		 * acknowledged (placed), so the server finds the slot written */
		post_send1(c.sr, UROCE_WR_RDMA_WRITE, 11, c.buf + C_SR_WBUF, SLOT_LEN, c.mr->lkey, sr_raddr,
		           theirs_sr.rkey);
		/* be: a plain WRITE (it carries the SEND's message number) and
		 * the SEND, in order on one path: the server finds the slot
		 * written when the SEND completes. Each completes once sent. */
		post_send1(c.be, UROCE_WR_RDMA_WRITE, 21, c.buf + C_BE_WBUF, SLOT_LEN, c.mr->lkey, be_raddr,
		           theirs_be.rkey);
		post_send1(c.be, UROCE_WR_SEND, 22, c.buf + C_BE_HDR, sizeof(h), c.mr->lkey, 0, 0);
		client_wait(&c, c.sr_scq, &wc, "sr WRITE", seq);
		post_send1(c.sr, UROCE_WR_SEND, 12, c.buf + C_SR_HDR, sizeof(h), c.mr->lkey, 0, 0);
		client_wait(&c, c.scq, &wc, "WRITE", seq);
		client_wait(&c, c.scq, &wc, "SEND", seq);
		client_wait(&c, c.scq, &wc, "READ", seq);
		client_wait(&c, c.sr_scq, &wc, "sr SEND", seq);
		client_wait(&c, c.rcq, &wc, "reply", seq);
		if (peer_stop)
			break;
		if (memcmp(c.buf + C_RBUF, c.buf + C_WBUF, SLOT_LEN) != 0) {
			c.errors++;
			fprintf(stderr, "conf_peer: client: iteration %" PRIu64 ": READ back differs from what was written\n",
			        seq);
		}
		client_check_reply(&c, c.qp, &wc, C_REPLY, SEED_REPLY, seq, "rc");
		client_wait(&c, c.sr_rcq, &wc, "sr reply", seq);
		if (peer_stop)
			break;
		client_check_reply(&c, c.sr, &wc, C_SR_REPLY, SEED_REPLY_SR, seq, "sr");
		client_wait(&c, c.be_scq, &wc, "be WRITE", seq);
		client_wait(&c, c.be_scq, &wc, "be SEND", seq);
		client_wait(&c, c.be_rcq, &wc, "be reply", seq);
		if (peer_stop)
			break;
		client_check_reply(&c, c.be, &wc, C_BE_REPLY, SEED_REPLY_BE, seq, "be");
		usleep(CLIENT_PAUSE_US);
	}
	printf("conf_peer: client done: %" PRIu64 " iterations (rc, sr and be), %" PRIu64 " errors\n", seq, c.errors);
	uroce_qp_destroy(c.be);
	uroce_qp_destroy(c.sr);
	uroce_qp_destroy(c.qp);
	uroce_mr_dereg(c.mr);
	uroce_cq_destroy(c.be_rcq);
	uroce_cq_destroy(c.be_scq);
	uroce_cq_destroy(c.sr_rcq);
	uroce_cq_destroy(c.sr_scq);
	uroce_cq_destroy(c.rcq);
	uroce_cq_destroy(c.scq);
	uroce_pd_free(pd);
	uroce_context_destroy(c.ctx);
	free(c.buf);
	return c.errors ? 1 : 0;
}

/* ====================================================================== */

static void usage(void)
{
	fprintf(stderr,
	        "usage: conf_peer --role server --port afxdp:IF --port2 afxdp:IF2 --peer-ip ATTACKER_IP\n"
	        "                 --peer-ip2 ATTACKER_IP2 --ctl PATH [--ready FILE]\n"
	        "       conf_peer --role client --port afxdp:IF --server-ip SERVER_IP\n"
	        "       common: [--tcp-port N (18777)] [--duration SEC (280)]\n");
	exit(2);
}

static uint32_t parse_ip(const char *opt, const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "conf_peer: %s %s: not an IPv4 address (accepted: A.B.C.D)\n", opt, s);
		exit(2);
	}
	return a.s_addr;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "role", required_argument, NULL, 'r' },      { "port", required_argument, NULL, 'p' },
		{ "peer-ip", required_argument, NULL, 'P' },   { "server-ip", required_argument, NULL, 's' },
		{ "ctl", required_argument, NULL, 'c' },       { "ready", required_argument, NULL, 'R' },
		{ "tcp-port", required_argument, NULL, 't' },  { "duration", required_argument, NULL, 'd' },
		{ "port2", required_argument, NULL, '2' },     { "peer-ip2", required_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },            { NULL, 0, NULL, 0 },
	};
	struct opts o = { .tcp_port = 18777, .duration_s = 280 };
	const char *role = NULL;
	int c;

	peer_name = "conf_peer";

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r': role = optarg; break;
		case 'p': o.port = optarg; break;
		case 'P': o.peer_ip_be = parse_ip("--peer-ip", optarg); break;
		case '2': o.port2 = optarg; break;
		case 'Q': o.peer_ip2_be = parse_ip("--peer-ip2", optarg); break;
		case 's': o.server_ip_be = parse_ip("--server-ip", optarg); break;
		case 'c': o.ctl_path = optarg; break;
		case 'R': o.ready_file = optarg; break;
		case 't': {
			long v = strtol(optarg, NULL, 10);
			if (v < 1 || v > 65535) {
				fprintf(stderr, "conf_peer: --tcp-port %s: accepted 1..65535\n", optarg);
				return 2;
			}
			o.tcp_port = (uint16_t)v;
			break;
		}
		case 'd': {
			long v = strtol(optarg, NULL, 10);
			if (v < 1 || v > 3600) {
				fprintf(stderr, "conf_peer: --duration %s: accepted 1..3600 seconds\n", optarg);
				return 2;
			}
			o.duration_s = (unsigned)v;
			break;
		}
		default: usage();
		}
	}
	if (!role || !o.port || optind != argc)
		usage();
	o.server = peer_role(role, o.server_ip_be != 0);
	if (o.server && (!o.peer_ip_be || !o.ctl_path || !o.port2 || !o.peer_ip2_be)) {
		fprintf(stderr, "conf_peer: the server needs --peer-ip, --port2, --peer-ip2 and --ctl\n");
		return 2;
	}
	peer_start();
	return o.server ? run_server(&o) : run_client(&o);
}
