/* SPDX-License-Identifier: MIT */
/* State of the sr and ec reliability modes (rel_sr.c with sr_tx.c,
 * sr_ack.c, sr_timer.c, sr_rx.c; rel_ec.c, partial.c).
 * The sender keeps every packet in flight in a ring indexed by PSN, with
 * its send time and what it carries, so a loss costs one retransmission of
 * that packet; the receiver places every packet on arrival and keeps a PSN
 * bitmap (for the SACK) and per message a packet bitmap. */
#ifndef UROCE_TRANSPORT_REL_SR_H
#define UROCE_TRANSPORT_REL_SR_H

#include <stdatomic.h>

#include "transport/cc/cc.h"
#include "transport/rel/sr/sr_pull.h"
#include "transport/rel/sr/ec_code.h"
#include "transport/path/path.h"
#include "transport/core/qp_internal.h"
#include "transport/rel/sr/sr_wire.h"

#define SR_MSG_WIN 64u              /* messages in flight: receiver slots */
#define SR_FIN_RING (2 * SR_MSG_WIN) /* finished messages whose PSN span a late packet is checked against */
#define SR_WIN_DEFAULT 256u         /* packets in flight; the SACK bitmap covers them */
#define SR_WIN_MIN 16u
#define SR_ACKREQ_EVERY 16u         /* PSNs between two that ask for a SACK inside a long message */
#define SR_WIN_MAX SRW_SACK_MAX_BITS
#define SR_RTO_MIN_DEFAULT_NS 200000ull
#define SR_RTO_INIT_NS 1000000ull   /* before the first RTT sample */
#define SR_RTO_MAX_NS 500000000ull
#define SR_MAX_MSG_PKTS (1u << SRW_IDX_BITS)
#define SR_SACK_FAN_MAX 8u          /* a SACK after a duplicate goes on this many paths at most, */
#define SR_SACK_FAN_GAP_NS 250000ull /* and at most once in this long */
#define SR_TTL_INIT 64u            /* the TTL uroce sends with: hops = SR_TTL_INIT - TTL seen */

/* swqe.sr_flags */
enum {
	SRW_F_SLOT = 1,      /* the message takes a receiver slot (SEND, WRITE_IMM, stream) */
	SRW_F_DESC = 2,      /* it has a descriptor */
	SRW_F_EC = 4,        /* it carries parity */
	SRW_F_STREAM_END = 8, /* a stream's end marker: no packets, completes the stream */
	SRW_F_FENCE = 16      /* the receiver finishes it only once every earlier PSN arrived */
};

/* sr_txp.flags */
enum {
	SRP_SACKED = 1,
	SRP_LOST = 2,    /* waits for retransmission */
	SRP_EC = 4,      /* ec protects it: RACK and the tail probe leave it to the receiver */
	SRP_NOCREDIT = 8, /* sent as a probe beyond the receiver's posted receives */
	SRP_CCIN = 16     /* counted in flight on its path and controller (sr_paths.c) */
};

/* Why a packet is declared lost (sr_txp_lost): what the path and the
 * controller learn from it. */
enum sr_loss {
	SR_LOSS_RACK,     /* a later packet was acknowledged */
	SR_LOSS_RTO,      /* the retransmission timeout */
	SR_LOSS_NACK,     /* ec: the receiver could not decode */
	SR_LOSS_TRIM,     /* a switch trimmed it (congestion, not a broken path) */
	SR_LOSS_PROBE,    /* sent again as a tail-loss probe: no loss known */
	SR_LOSS_NOCREDIT, /* a probe beyond the receiver's receives: no loss */
	SR_LOSS_FAILOVER, /* its member failed: sent again on another (failover.c) */
};

enum { SRP_PLAIN = 7 }; /* kind of a plain WRITE packet (no immediate) */

struct sr_txp {
	uint64_t sent_ns;    /* its last transmission */
	uint64_t first_ns;   /* its first: the QP gives up on it by time, as rc */
	uint32_t sq_idx;     /* the WQE (unmasked SQ index) */
	uint32_t off;        /* data: byte offset in the message; parity: parity index */
	uint32_t imm;        /* metadata immediate, host order (not for SRP_PLAIN) */
	uint16_t len;
	uint8_t kind;        /* enum srw_kind or SRP_PLAIN */
	uint8_t flags;
	uint8_t ntx;         /* transmissions */
	uint8_t path;        /* the path of its last transmission */
};

struct sr_tx {
	struct sr_txp *ring;    /* ring[psn & mask] for PSNs in [una, nxt) */
	uint8_t *par;           /* ec: parity payload of ring entry i at i * mtu */
	uint32_t mask;
	uint32_t una, nxt;
	uint32_t win_pkts, win_bytes, inflight_bytes;
	uint32_t nlost;
	uint64_t srtt, rttvar, min_rtt, rto;
	uint64_t rack_xmit, rack_rtt; /* send time and RTT of the most recently sent packet acknowledged */
	uint32_t rack_psn;
	uint64_t reo_max;       /* largest reordering delay seen on packets sent once */
	uint64_t rack_ack_ns;   /* when rack_xmit last moved forward */
	uint64_t reo_grow_ns;   /* when a DSACK last widened the reordering window */
	uint64_t last_tx_ns, last_ack_ns;
	uint64_t now;           /* the clock at the start of this transmit pass */
	uint32_t backoff;       /* RTO doublings since the last progress */
	bool tlp_out;           /* a tail probe is out and unanswered */
	uint32_t peer_dups;
	uint32_t msg_post;      /* next message number (poster's thread) */
	uint32_t peer_msg_cum;  /* the receiver has finished every message before this */
	uint32_t peer_msg_limit; /* ... and has receives posted for every message before this */
	bool have_limit;        /* a SACK brought peer_msg_limit */
	bool probing;           /* the message going out is a probe beyond the limit */
	bool probe_any;         /* probe_last is valid: some packet went out as a probe */
	uint32_t probe_last;    /* the last PSN sent as a probe: no SRP_NOCREDIT after it */
	/* transmission of the WQE at sq_cur */
	uint8_t phase;
	uint32_t pidx;          /* next data packet of the WQE (index in the WQE) */
	uint32_t sub, par_j;    /* ec: submessage whose parity is going out, and which */
	uint32_t first_psn;     /* PSN of the current message's first packet */
	uint32_t ctrl_psn;
	struct uroce_pstream *posting; /* poster's thread: the stream a post belongs to */
	/* paths and congestion control (sr_paths.c) */
	uint16_t msg_path;      /* the path of a message below the spraying threshold (PATH_NONE: not chosen) */
	bool msg_sticky;        /* the message going out keeps one path */
	uint64_t pace_ns;       /* a controller or quarantine blocked sending until then (0: not blocked by time) */
	bool credit_blocked;    /* EQDS: the last gate waited for credit */
	bool cc_gave_up;        /* EQDS: the gate held the QP past every RTS retry: it fails (sr_tx) */
	uint32_t rts_unanswered; /* EQDS: RTSs sent since the last PULL */
	uint64_t rts_first_ns;  /* ... when the first of them went */
	uint16_t ctrl_rr;       /* the path the next control packet takes */
};

struct sr_rmsg {
	uint32_t seq;
	bool bound, done, delivered;
	bool fence;             /* finish only once every PSN before first_psn arrived (its descriptor said so) */
	bool have_npk, desc_expected, have_desc, have_first;
	bool write;             /* data goes to an rkey (WRITE with immediate) */
	bool is_ec;             /* carries parity (known from its descriptor or a parity packet) */
	uint32_t rkey;          /* WRITE with immediate: the key of its target */
	uint8_t op;             /* enum uroce_wr_opcode from the descriptor */
	enum uroce_wc_status st;
	uint32_t npk, nrecv;
	uint32_t len;           /* bytes, once known */
	uint32_t placed;
	uint32_t imm;
	uint32_t first_psn;
	uint32_t base_lo, base_hi; /* PSN minus index of its data packets taken (a stream's pieces differ) */
	bool have_base;
	uint64_t last_rx_ns;    /* ec: fallback timeout runs from here */
	uint64_t nack_ns;       /* ec: last NACK sent */
	uint32_t nacks;         /* ec: NACKs sent for it (each waits twice as long) */
	uint32_t nack_sub;      /* ec: submessages below it were named in a NACK as undecodable */
	uint64_t *bits;         /* packets arrived (or rebuilt) */
	uint64_t *subdone;      /* ec: submessages whole */
	uint32_t bits_words;    /* words of bits (and subdone) that may be non-zero: what a rebind clears */
	struct rwqe wqe;
};

/* A finished message's PSN span: a late packet naming it marks its PSN
 * arrived only inside it (a forged one would make a current message's
 * real packet a duplicate). */
struct sr_fin {
	uint32_t seq;
	uint32_t lo, hi;        /* its packets' PSNs lie in [lo, hi] */
	uint8_t known;          /* SR_FIN_NONE, SR_FIN_SPAN, or SR_FIN_LEARN: nothing of it came, the first late packet sets the span */
	bool open;              /* completed early with no descriptor (a stream): any PSN until the sender starts message seq + SR_MSG_WIN */
};

enum { SR_FIN_NONE, SR_FIN_SPAN, SR_FIN_LEARN };

struct sr_rx {
	uint32_t cum;           /* every PSN before it arrived */
	uint64_t *bits;         /* ring[psn & mask] for PSNs in [cum, cum + nbits) */
	uint64_t *pend;         /* PSNs that count as arrived once one after them arrives */
	uint32_t nbits, mask;
	uint32_t msg_cum;       /* every message before it is finished */
	uint32_t bind_next;     /* next message to take a receive WQE */
	uint32_t dups;
	bool ask;               /* the packet being taken wants a SACK (AckReq or out of order) */
	uint32_t high;          /* highest PSN arrived */
	uint32_t dup_psn;       /* the last duplicate's PSN, for the sender's DSACK check */
	bool rnr;               /* a message found no receive posted (atomic: post_recv reads it) */
	bool sack_pending;
	uint32_t max_pkts;      /* packets a message may have */
	uint32_t nfence;        /* bound fenced messages not finished: cum moving may finish them */
	bool in_fence, fence_again;
	struct sr_rmsg slot[SR_MSG_WIN];
	struct sr_fin fin[SR_FIN_RING]; /* the last SR_FIN_RING finished messages, by number */
	uint64_t *slot_bits;    /* every slot's bits (then ec's subdone), one allocation */
	/* ec: parity packets by PSN, their message and index */
	uint8_t *par;
	uint32_t *par_msg, *par_idx;
	uint8_t *par_ok;
	uint8_t *scratch;       /* (k + m) x mtu for encode and decode */
	uint32_t ec_scan_high;  /* high at the last search for undecodable submessages */
	/* congestion feedback the receiver owes the sender */
	uint64_t ask_rx_ns;     /* arrival of the packet the pending SACK answers (the endpoint delay) */
	bool fan_due;           /* a copy arrived (the sender resent it): SACKs may be getting lost */
	uint64_t fan_ns;        /* the last SACK sent on every path */
	uint64_t dup_sack_ns;   /* the last SACK a duplicate asked for (0: none yet) */
	uint16_t ntrim;
	uint32_t trim_psn[SRW_TRIM_MAX]; /* trimmed packets to NACK */
	struct eqds_rx eqds;    /* EQDS: what the peer asked for and was granted (cc_eqds.c) */
};

struct sr_state {
	struct uroce_rel_attr cfg;  /* with defaults filled in */
	bool ec;
	struct ec_code code;
	uint64_t rto_min_ns, fto_ns;
	uint32_t ec_min_pkts;       /* ec: shorter messages go as sr */
	uint32_t chunk_bytes;
	uint32_t ack_every;         /* the sender asks for a SACK at least every this many PSNs */
	struct path_set ps;
	struct cc_flow cc;          /* the QP's controller (unless it runs one per path: ps.cc) */
	struct dest pdest[UROCE_MAX_PORTS]; /* destination as seen from each port paths leave by */
	struct sr_tx tx;
	struct sr_rx rx;
};

static inline struct sr_state *sr_of(const struct uroce_qp *qp)
{
	return qp->rel_state;
}

/* The retransmission timeout now: the RTO doubled per timeout in a row,
 * at most SR_RTO_MAX_NS. */
static inline uint64_t sr_rto_now(const struct sr_tx *t)
{
	uint64_t rto = t->rto << (t->backoff < 10 ? t->backoff : 10);

	return rto > SR_RTO_MAX_NS ? SR_RTO_MAX_NS : rto;
}

static inline bool bit_get(const uint64_t *b, uint32_t i)
{
	return (b[i >> 6] >> (i & 63)) & 1;
}
static inline void bit_set(uint64_t *b, uint32_t i)
{
	b[i >> 6] |= 1ull << (i & 63);
}
static inline void bit_clear(uint64_t *b, uint32_t i)
{
	b[i >> 6] &= ~(1ull << (i & 63));
}

/* A packet of m arrived (or was rebuilt): set its bit, and remember how
 * far the map is dirty, so that binding the slot again clears only that
 * much and not 16 KiB per message. */
static inline void sr_msg_mark(struct sr_rmsg *m, uint32_t idx)
{
	bit_set(m->bits, idx);
	if (idx / 64 >= m->bits_words)
		m->bits_words = idx / 64 + 1;
}

/* rel_sr.c, sr_tx.c, sr_ack.c, sr_timer.c, sr_rx.c; for rel_ec.c and partial.c too */
int sr_init_common(struct uroce_qp *qp, bool ec);
void sr_fini(struct uroce_qp *qp);
int sr_ready(struct uroce_qp *qp);
int sr_post(struct uroce_qp *qp, const struct uroce_send_wr *wr, struct swqe *w);
bool sr_tx(struct uroce_qp *qp);
void sr_rx_data(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt);
void sr_rx_ctrl(struct uroce_qp *qp, const struct roce_pkt *pkt);
bool sr_is_ctrl(const struct uroce_qp *qp, const struct roce_pkt *pkt);
void sr_timer(struct wheel_timer *t, void *arg);
void sr_error(struct uroce_qp *qp);
void sr_reset(struct uroce_qp *qp);
size_t sr_state_bytes(const struct uroce_qp *qp);
size_t sr_default_state_bytes(bool ec, uint32_t mtu);
/* Mark PSN psn arrived at the receiver (if inside its window). */
void sr_rx_mark_psn(struct uroce_qp *qp, uint32_t psn);
/* Count psn as arrived without its packet (lost parity of a whole
 * submessage, rebuilt data): at once if the sender has gone past it, else
 * when a later packet arrives. */
void sr_rx_count_psn(struct uroce_qp *qp, uint32_t psn);
/* Write len bytes at byte off of message m's target (receive WQE or rkey);
 * false (counted) when the rkey no longer covers them. */
bool sr_rx_place(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t off, const uint8_t *src, uint32_t len);
/* Read them back (ec decoding). */
void sr_rx_read(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t off, uint8_t *dst, uint32_t len);
/* A packet of m arrived or was rebuilt: the chunk bitmap of a partial-completion handle. */
void sr_rx_note_pkt(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t idx);
/* Is m whole? Then finish it (completion, ordering). */
void sr_rx_check_done(struct uroce_qp *qp, struct sr_rmsg *m);
/* Payload bytes of data packet idx of m, once its length is known. */
uint32_t sr_pkt_len(const struct uroce_qp *qp, const struct sr_rmsg *m, uint32_t idx);
int sr_send_ctrl(struct uroce_qp *qp, const uint8_t *body, uint32_t len);
/* Bind the next posted receive WQE to the next message; false if none or
 * the window is full. */
bool sr_rx_bind_next(struct uroce_qp *qp);
/* Finish m now (a partial completion asked for by the application). */
void sr_rx_finish(struct uroce_qp *qp, struct sr_rmsg *m);

/* partial.c: partial-completion receive handles */
struct uroce_precv {
	struct uroce_qp *qp;
	uint32_t chunk_pkts, chunk_bytes;
	uint32_t nchunks;           /* chunks of the posted buffer */
	uint32_t msg_chunks;        /* of the message, once its length is known (atomic) */
	struct sr_rmsg *m;          /* bound message (engine thread) */
	bool done;                  /* its completion is queued (atomic) */
	bool release;               /* the application let go: free when done */
	uint64_t bits[];            /* chunk bitmap (atomic words) */
};
void pstream_fill(const struct uroce_pstream *s, const struct uroce_send_wr *wr, struct swqe *w);
void precv_bind(struct uroce_precv *h, struct uroce_qp *qp, struct sr_rmsg *m);
/* Packet idx of h's message arrived: set its chunk's bit if whole. */
void precv_note(struct uroce_precv *h, const struct sr_rmsg *m, uint32_t idx);

/* The descriptor of w's message (SRW_DESC_LEN bytes, docs/wire.md) with
 * the receiver's token; be sends the same one. */
void sr_desc_fill(const struct swqe *w, uint32_t first_psn, uint32_t token, uint8_t *b);
/* Gather len bytes at message offset off of WQE w into dst. */
void sr_tx_gather(const struct swqe *w, uint32_t off, uint8_t *dst, uint32_t len);

/* Declare ring entry p lost (it waits for retransmission). */
void sr_txp_lost(struct uroce_qp *qp, struct sr_txp *p, enum sr_loss why);

/* sr_paths.c: paths and congestion control of the sender, CE and trim
 * feedback of the receiver */
int sr_pc_init(struct uroce_qp *qp);
int sr_pc_ready(struct uroce_qp *qp);
void sr_pc_fini(struct uroce_qp *qp);
/* Failover moved the QP to another member: every path leaves by its port. */
void sr_pc_fo_ports(struct uroce_qp *qp);
/* The counters and the per-path view the API reads. */
void sr_pc_stats(const struct uroce_qp *qp, struct uroce_qp_stats *s);
int sr_pc_path_stats(const struct uroce_qp *qp, unsigned i, struct uroce_path_stats *out);
/* A message starts: spray it, or keep it on one path. */
void sr_pc_msg_start(struct uroce_qp *qp, uint32_t msg_len);
/* The path and destination of ring entry p about to go (retx: it went
 * before); 0, or -EAGAIN when a controller or the paths hold it (then
 * tx.pace_ns says until when, or 0 until an acknowledgment). */
int sr_pc_gate(struct uroce_qp *qp, struct sr_txp *p, bool retx, unsigned *path, const struct dest **d);
void sr_pc_sent(struct uroce_qp *qp, struct sr_txp *p, unsigned path);
/* The path of the next control packet: the usable ones in turn. */
unsigned sr_pc_ctrl_path(struct uroce_qp *qp);
/* EQDS's RTS and PULL: sr_send_ctrl, and a copy on the next path when the
 * QP has several, or copies on up to SR_SACK_FAN_MAX paths when fan (a
 * retry: the last ones were lost); the counts are cumulative, so copies
 * are harmless. The number of packets sent (0 when the first did not fit). */
unsigned sr_pc_send_credit_ctrl(struct uroce_qp *qp, const uint8_t *body, uint32_t len, bool fan);
/* The control packet sent copies times, each on the next usable path: how
 * many went (fewer when the TX stage filled). */
unsigned sr_pc_send_ctrl_copies(struct uroce_qp *qp, const uint8_t *body, uint32_t len, unsigned copies);
/* Copies of a control packet that goes on every path: all, at most
 * SR_SACK_FAN_MAX. */
unsigned sr_pc_fan_paths(const struct uroce_qp *qp);
/* Will the controller hold the next packet once p is out (its credit or
 * window used up)? Then p asks for a SACK. */
bool sr_pc_last_before_hold(const struct uroce_qp *qp, const struct sr_txp *p);
/* p is no longer in flight (acknowledged, given up, or about to be
 * declared lost); no feedback. */
void sr_pc_gone(struct uroce_qp *qp, struct sr_txp *p);
/* Feedback: p was acknowledged by a SACK (per packet), then one call per
 * SACK with what it acknowledged in all. */
void sr_pc_acked(struct uroce_qp *qp, const struct sr_txp *p, uint64_t now);
void sr_pc_ack_done(struct uroce_qp *qp, uint64_t now, uint64_t rtt_ns, uint64_t remote_ns, uint32_t bytes,
                    uint32_t pkts, uint8_t hops);
void sr_pc_lost(struct uroce_qp *qp, struct sr_txp *p, enum sr_loss why, uint64_t now);
/* A CNP arrived for PSN psn (its BTH PSN: the packet marked CE). */
void sr_pc_cnp(struct uroce_qp *qp, uint32_t psn);
/* Receiver: a data packet at PSN psn came trimmed (its payload cut by a switch). */
void sr_rx_trimmed(struct uroce_qp *qp, uint32_t psn);
int sr_send_trims(struct uroce_qp *qp);
/* Sender: a TRIM NACK arrived. */
void sr_tx_trims(struct uroce_qp *qp, const uint8_t *b, uint32_t len);
/* EQDS (cc_eqds.c): the receiver's pacer granted credit to qp (send it
 * now), and a PULL arrived at the sender. */
int eqds_send_pull(struct uroce_qp *qp);
void eqds_tx_pull(struct uroce_qp *qp, uint64_t credit_cum);

/* rel_ec.c */
/* PSN of data packet idx / parity index q of an ec message that starts at first. */
uint32_t ec_psn_data(const struct sr_state *st, uint32_t first, uint32_t idx);
uint32_t ec_psn_parity(const struct sr_state *st, uint32_t first, uint32_t npk, uint32_t q);
uint32_t ec_total_pkts(const struct sr_state *st, uint32_t npk);
/* Parity packets of submessage sub of an npk-packet message: m, fewer for
 * a short last one (its parity indices are sub * m + 0 .. np - 1). */
uint32_t ec_sub_parity(const struct sr_state *st, uint32_t npk, uint32_t sub);
/* Sender: encode the parity of submessage sub of w into the ring entries
 * of the next ec_sub_parity PSNs. */
void ec_tx_encode(struct uroce_qp *qp, struct swqe *w, uint32_t sub, uint32_t first_ring_psn);
/* Receiver: a parity packet (stored) or a data packet of sub arrived:
 * mark the submessage's PSNs once it is whole; with try_decode, rebuild
 * its lost data if what arrived allows. */
void ec_rx_sub(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t sub, bool try_decode);
void ec_rx_parity(struct uroce_qp *qp, struct sr_rmsg *m, const struct roce_pkt *pkt, uint32_t q);
/* Receiver: NACK the messages whose fallback timeout passed and that
 * cannot be decoded; -ENOBUFS when the TX stage is full. */
int ec_rx_nacks(struct uroce_qp *qp, uint64_t now);
/* The earliest fallback deadline, or UINT64_MAX. */
uint64_t ec_rx_fto_next(struct uroce_qp *qp);
/* Sender: a NACK arrived. */
void ec_tx_nack(struct uroce_qp *qp, const uint8_t *body, uint32_t len);

/* sr/ec: a message found no receive posted; a post_recv kicks the QP so
 * its SACK tells the waiting sender (sr_rx.c). */
bool sr_rx_wants_kick(const struct uroce_qp *qp);
/* failover's hooks (rel_sr.c) */
unsigned sr_fo_switch(struct uroce_qp *qp, bool rewind);
bool sr_fo_idle(const struct uroce_qp *qp);
/* A handle's receive WR completes (flush included): the wc_flags it adds;
 * frees the handle if the application already gave it back (partial.c). */
unsigned precv_finish(struct uroce_precv *h, bool whole);

#endif /* UROCE_TRANSPORT_REL_SR_H */
