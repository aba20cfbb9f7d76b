/* SPDX-License-Identifier: MIT */
/* Path state shared by every path policy: usability, quarantine and the
 * per-path RTT, in-flight and loss counts the policies decide on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/path/path.h"

const struct path_ops *path_ops_of(enum uroce_path_policy p, unsigned npaths)
{
	switch (p) {
	case UROCE_PATH_SINGLE:
		return &path_single_ops;
	case UROCE_PATH_P2C:
		return &path_p2c_ops;
	case UROCE_PATH_RR:
		return &path_rr_ops;
	case UROCE_PATH_RANDOM:
		return &path_random_ops;
	default:
		return npaths > 1 ? &path_p2c_ops : &path_single_ops;
	}
}

int path_set_init(struct path_set *ps, const struct uroce_path_attr *a, uint16_t sport0, const uint8_t *ports,
                  unsigned nports, uint64_t seed)
{
	unsigned n = a->npaths ? a->npaths : 1;

	memset(ps, 0, sizeof(*ps));
	ps->p = calloc(n, sizeof(*ps->p));
	if (!ps->p)
		return -ENOMEM;
	ps->n = (uint16_t)n;
	ps->nup = (uint16_t)n;
	ps->ops = path_ops_of(a->policy, n);
	ps->down_losses = a->down_losses ? a->down_losses : PATH_DOWN_LOSSES_DEFAULT;
	ps->spray_min = a->spray_min_bytes ? a->spray_min_bytes : UROCE_SPRAY_MIN_DEFAULT;
	ps->rng = seed | 1;
	ps->base_quarantine_ns = PATH_QUARANTINE_MIN_NS;
	for (unsigned i = 0; i < n; i++) {
		/* consecutive entropy values inside RoCEv2's dynamic range
		 * (0xc000-0xffff), starting at the QP's own: path 0 is the
		 * single-path QP's port */
		ps->p[i].sport = (uint16_t)(0xc000u | ((sport0 + i) & 0x3fffu));
		ps->p[i].port = ports[i % nports];
	}
	return 0;
}

void path_set_fini(struct path_set *ps)
{
	free(ps->p);
	free(ps->cc);
	/* no paths until the next RTR: a counter read after RESET walks none */
	memset(ps, 0, sizeof(*ps));
}

bool path_usable(const struct path_set *ps, unsigned i, uint64_t now, uint32_t bytes)
{
	const struct qp_path *p = &ps->p[i];

	switch (p->state) {
	case PATH_UP:
		break;
	case PATH_DOWN:
		if (now < p->down_until || p->inflight)
			return false;
		break;
	default: /* its probe is out */
		return false;
	}
	return !ps->cc || cc_flow_gate(&ps->cc[i], now, bytes) == 0;
}

unsigned path_scan(const struct path_set *ps, unsigned start, uint64_t now, uint32_t bytes, unsigned avoid)
{
	unsigned fallback = PATH_NONE;

	for (unsigned k = 0; k < ps->n; k++) {
		unsigned i = (start + k) % ps->n;

		if (!path_usable(ps, i, now, bytes))
			continue;
		if (i != avoid)
			return i;
		fallback = i;
	}
	return fallback;
}

/* Is path i a better home for a resend than path j: not the one it was
 * lost on, then nothing lost since its last acknowledgment, then the
 * latest acknowledgment. */
static bool healthier(const struct path_set *ps, unsigned i, unsigned j, unsigned avoid)
{
	const struct qp_path *a = &ps->p[i], *b = &ps->p[j];

	if ((i == avoid) != (j == avoid))
		return j == avoid;
	if ((a->loss_run == 0) != (b->loss_run == 0))
		return a->loss_run == 0;
	return a->last_ack_ns > b->last_ack_ns;
}

unsigned path_healthy(struct path_set *ps, uint64_t now, uint32_t bytes, unsigned avoid)
{
	unsigned best = PATH_NONE;

	/* The path that acknowledged last, not one picked by chance: when a
	 * spine dies its paths still look clean (their losses are found an
	 * RTO later), and a resend sent there dies again; a packet that
	 * loses that draw RTO after RTO runs out of retries on a fabric with
	 * a live path. */
	for (unsigned i = 0; i < ps->n; i++) {
		if (ps->p[i].state != PATH_UP || !path_usable(ps, i, now, bytes))
			continue;
		if (best == PATH_NONE || healthier(ps, i, best, avoid))
			best = i;
	}
	return best;
}

uint64_t path_next_open(struct path_set *ps, uint64_t now, uint32_t bytes)
{
	uint64_t best = UINT64_MAX;

	for (unsigned i = 0; i < ps->n; i++) {
		const struct qp_path *p = &ps->p[i];
		uint64_t t = 0;

		if (p->state == PATH_PROBE || (p->state == PATH_DOWN && p->inflight))
			continue;
		if (p->state == PATH_DOWN && p->down_until > now)
			t = p->down_until;
		if (ps->cc) {
			uint64_t g = cc_flow_gate(&ps->cc[i], now, bytes);

			if (g == UINT64_MAX)
				continue;
			if (g > t)
				t = g;
		}
		if (t < best)
			best = t;
	}
	return best;
}

void path_sent(struct path_set *ps, unsigned i, uint64_t now, uint32_t bytes)
{
	struct qp_path *p = &ps->p[i];

	(void)now;
	if (p->state == PATH_DOWN)
		p->state = PATH_PROBE; /* the quarantine is over: this packet probes it */
	p->inflight += bytes;
	p->tx_pkts++;
}

void path_acked(struct path_set *ps, unsigned i, uint64_t now, uint64_t rtt_ns, bool first_send)
{
	struct qp_path *p = &ps->p[i];

	p->acked_pkts++;
	p->loss_run = 0;
	p->last_ack_ns = now;
	if (p->state != PATH_UP) {
		p->state = PATH_UP;
		ps->nup++;
	}
	p->downs = 0;
	/* a retransmission's RTT is ambiguous (Karn): only first sends */
	if (!first_send || !rtt_ns)
		return;
	p->srtt_ns = p->srtt_ns ? (7 * p->srtt_ns + rtt_ns) / 8 : rtt_ns;
	if (!p->min_rtt_ns || rtt_ns < p->min_rtt_ns)
		p->min_rtt_ns = rtt_ns;
}

void path_lost(struct path_set *ps, unsigned i, uint64_t now, bool count_run)
{
	struct qp_path *p = &ps->p[i];
	unsigned shift;

	p->losses++;
	if (!count_run)
		return;
	p->loss_run++;
	if (p->state == PATH_PROBE) {
		/* the probe was lost too: back to quarantine, twice as long */
		p->state = PATH_DOWN;
	} else if (p->state == PATH_UP && p->loss_run >= ps->down_losses && ps->nup > 1) {
		p->state = PATH_DOWN;
		p->quarantines++;
		ps->nup--;
	} else {
		return;
	}
	shift = p->downs < PATH_QUARANTINE_MAX_SHIFT ? p->downs : PATH_QUARANTINE_MAX_SHIFT;
	p->down_until = now + (ps->base_quarantine_ns << shift);
	p->downs++;
}

void path_ecn(struct path_set *ps, unsigned i)
{
	if (i < ps->n)
		ps->p[i].ecn_marks++;
}
