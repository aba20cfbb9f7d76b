/* SPDX-License-Identifier: MIT */
/* Adaptive timeouts (OptiNIC 3.1.2): a group is one member's view of a
 * collective over be QPs. Its timeout starts at (1 + gamma) x warm-up +
 * delta; after each run every member proposes the per-byte cost its
 * receives measured times the message size (with the same margin), the
 * proposals travel as VOTE control packets on the QPs (sr_wire.h), and
 * each member takes the median and smooths it with an EWMA. A member that
 * still lacks a vote asks again; a vote that asks is answered, also for
 * the round before, so a lost vote never stalls a peer that moved on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rel/rel.h"
#include "transport/rel/be/rel_be.h"

#define TMO_MAX_QPS 1024u
#define TMO_ALPHA_DEFAULT 0.2
#define TMO_GAMMA_DEFAULT 0.25
#define TMO_DELTA_DEFAULT_US 50u
#define TMO_ASK_EVERY_NS 1000000ull /* a missing vote is asked for again this often */
/* Votes (a peer's proposal for a round) are taken for the rounds a peer
 * can be in: the one before ours (its answer to our ask) up to
 * TMO_ROUND_AHEAD after it; each round's vote has its own slot, so no
 * vote for one round can hide another's. */
#define TMO_ROUND_AHEAD 2
#define TMO_VOTE_SLOTS 4u /* rounds round - 1 .. round + TMO_ROUND_AHEAD */
/* A proposal is taken within 1/TMO_VOTE_RANGE..TMO_VOTE_RANGE x the
 * group's timeout (once it has one) and inside [TMO_MIN_NS, TMO_MAX_NS];
 * a member's own proposal is clamped to half that range first, so a peer
 * whose timeout differs by up to 2x still takes it. */
#define TMO_VOTE_RANGE 8u
#define TMO_OWN_RANGE 4u
#define TMO_MIN_NS 1000ull                            /* 1 us, the QPs' resolution */
#define TMO_MAX_NS ((uint64_t)BE_TIMEOUT_MAX_US * 1000u) /* what a be QP takes */

struct tmo_member {
	struct uroce_qp *qp;
	uint64_t base_ns, base_bytes; /* the QP's receive counters at the last exchange */
	struct {
		uint64_t vote;        /* the peer's proposal ... */
		uint32_t round;       /* ... for this round */
		bool have;
	} v[TMO_VOTE_SLOTS];          /* by round % TMO_VOTE_SLOTS */
	bool sent;                    /* ours for the current round went out */
};

struct uroce_tmo {
	struct uroce_context *ctx;
	struct uroce_tmo *next;       /* the context's groups, for arriving votes */
	uint32_t group_id;
	uint64_t msg_bytes;
	double alpha, gamma;
	uint64_t delta_ns;
	uint64_t t_ns;                /* the group's timeout (0 until warm-up or a first round) */
	uint32_t round, prev_round;
	bool in_round, round_done, have_prev;
	uint64_t own, prev_own;       /* our proposals of round and prev_round */
	uint64_t ask_ns;              /* when we last asked for missing votes */
	unsigned n;
	struct tmo_member m[];
};

/* --- the rule -------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n & 1 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] & v[n / 2] & 1);
}

/* A non-negative double in ns as an integer, saturated at TMO_MAX_NS
 * (a cast of a value past 2^64 is undefined). */
static uint64_t sat_ns(double ns)
{
	if (!(ns > 0))
		return 0;
	return ns >= (double)TMO_MAX_NS ? TMO_MAX_NS : (uint64_t)ns;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void apply(struct uroce_tmo *g)
{
	uint64_t us = g->t_ns / 1000 + (g->t_ns % 1000 != 0); /* rounded up, without wrapping */

	if (us < 1)
		us = 1;
	if (us > BE_TIMEOUT_MAX_US)
		us = BE_TIMEOUT_MAX_US;
	for (unsigned i = 0; i < g->n; i++)
		uroce_qp_set_timeout(g->m[i].qp, (uint32_t)us);
}

uint64_t uroce_tmo_update(struct uroce_tmo *g, const uint64_t *proposals_ns, unsigned n)
{
	uint64_t *v, med;

	if (!g || !proposals_ns || !n) {
		uroce_fail(-EINVAL, "uroce_tmo_update: a group and at least one proposal are needed");
		return g ? g->t_ns : 0;
	}
	v = malloc(n * sizeof(*v));
	if (!v) {
		uroce_fail(-ENOMEM, "uroce_tmo_update: out of memory");
		return g->t_ns;
	}
	memcpy(v, proposals_ns, n * sizeof(*v));
	med = median(v, n);
	free(v);
	if (med > TMO_MAX_NS)
		med = TMO_MAX_NS; /* no proposal asks for more than a be QP takes */
	/* T_new = alpha T_median + (1 - alpha) T_old; the first value is the median */
	g->t_ns = g->t_ns ? sat_ns(g->alpha * (double)med + (1.0 - g->alpha) * (double)g->t_ns) : med;
	if (g->t_ns > TMO_MAX_NS)
		g->t_ns = TMO_MAX_NS;
	apply(g);
	return g->t_ns;
}

/* --- measuring -------------------------------------------------------------- */

static void take_base(struct uroce_tmo *g)
{
	for (unsigned i = 0; i < g->n; i++) {
		g->m[i].base_ns = g->m[i].qp->stats.op_ns;
		g->m[i].base_bytes = g->m[i].qp->stats.op_bytes;
	}
}

/* (1 + gamma) x cost per byte x message size + delta, the cost being what
 * the group's receives took per byte placed since the last exchange; with
 * nothing measured, the timeout as it is. */
static uint64_t proposal(const struct uroce_tmo *g)
{
	uint64_t ns = 0, bytes = 0;

	for (unsigned i = 0; i < g->n; i++) {
		ns += g->m[i].qp->stats.op_ns - g->m[i].base_ns;
		bytes += g->m[i].qp->stats.op_bytes - g->m[i].base_bytes;
	}
	if (!bytes)
		return g->t_ns;
	return sat_add(sat_ns((1.0 + g->gamma) * ((double)ns / (double)bytes) * (double)g->msg_bytes), g->delta_ns);
}

/* Once the group has a timeout t, proposals within [t / range, t x range]
 * (saturating); before, within the absolute bounds. */
static void vote_bounds(const struct uroce_tmo *g, unsigned range, uint64_t *lo, uint64_t *hi)
{
	*lo = TMO_MIN_NS;
	*hi = TMO_MAX_NS;
	if (!g->t_ns)
		return;
	if (g->t_ns / range > *lo)
		*lo = g->t_ns / range;
	if (g->t_ns <= *hi / range)
		*hi = g->t_ns * range;
}

/* Our proposal as sent: inside the narrower range, so peers take it. */
static uint64_t own_proposal(const struct uroce_tmo *g)
{
	uint64_t p = proposal(g), lo, hi;

	if (!p && !g->t_ns)
		return 0; /* nothing measured and no timeout yet: nothing to say */
	vote_bounds(g, TMO_OWN_RANGE, &lo, &hi);
	return p < lo ? lo : p > hi ? hi : p;
}

/* The rounds a vote may name: before the first exchange any (nothing
 * says where the group starts; the first exchange reads only its own),
 * after it round - 1 .. round + TMO_ROUND_AHEAD. */
static bool round_ok(const struct uroce_tmo *g, uint32_t round)
{
	int32_t d = (int32_t)(round - g->round);

	return !g->in_round || (d >= -1 && d <= TMO_ROUND_AHEAD);
}

static bool have_vote(const struct tmo_member *mb, uint32_t round)
{
	const __typeof__(mb->v[0]) *v = &mb->v[round % TMO_VOTE_SLOTS];

	return v->have && v->round == round;
}

/* --- votes ------------------------------------------------------------------ */

static int send_vote(struct uroce_tmo *g, struct tmo_member *mb, uint32_t round, uint64_t prop, bool ask)
{
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_VOTE_LEN];

	srw_ctrl_hdr(b, SRW_CTRL_VOTE, sizeof(b), mb->qp->tok_remote);
	roce_put_be32(b + SRW_CTRL_HDR_LEN, g->group_id);
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 4, round);
	roce_put_be64(b + SRW_CTRL_HDR_LEN + 8, prop);
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 16, ask ? SRW_VOTE_ASK : 0);
	return be_send_ctrl(mb->qp, b, sizeof(b));
}

void tmo_rx_vote(struct uroce_qp *qp, const uint8_t *body, uint32_t len)
{
	uint32_t gid = roce_get_be32(body), round = roce_get_be32(body + 4), flags = roce_get_be32(body + 16);
	uint64_t prop = roce_get_be64(body + 8), lo, hi;

	(void)len;
	for (struct uroce_tmo *g = qp->ctx->tmo_head; g; g = g->next) {
		if (g->group_id != gid)
			continue;
		for (unsigned i = 0; i < g->n; i++) {
			struct tmo_member *mb = &g->m[i];

			if (mb->qp != qp)
				continue;
			vote_bounds(g, TMO_VOTE_RANGE, &lo, &hi);
			/* 0: the peer has measured nothing and has no timeout, as we */
			if (!round_ok(g, round) || (prop ? prop < lo || prop > hi : g->t_ns != 0)) {
				ctx_count_drop(qp->ctx, UROCE_DROP_BAD_VOTE);
				return;
			}
			mb->v[round % TMO_VOTE_SLOTS].vote = prop;
			mb->v[round % TMO_VOTE_SLOTS].round = round;
			mb->v[round % TMO_VOTE_SLOTS].have = true;
			/* the peer lacks ours: answer for the round it names */
			if (flags & SRW_VOTE_ASK) {
				if (g->in_round && round == g->round)
					send_vote(g, mb, round, g->own, false);
				else if (g->have_prev && round == g->prev_round)
					send_vote(g, mb, round, g->prev_own, false);
			}
			return;
		}
	}
	ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL); /* no group here has this QP and id */
}

/* --- API --------------------------------------------------------------------- */

struct tmo_args {
	const struct uroce_tmo_attr *attr;
	struct uroce_qp *const *qps;
	unsigned nqps;
	struct uroce_tmo **out;
	struct uroce_tmo *g;
	uint64_t v;
	uint32_t round;
};

static int tmo_create_call(void *arg)
{
	struct tmo_args *a = arg;

	return uroce_tmo_create(a->attr, a->qps, a->nqps, a->out);
}

/* Groups outlive nothing: at the context's teardown their QPs are gone. */
static void tmo_ctx_fini(struct uroce_context *ctx)
{
	while (ctx->tmo_head)
		uroce_tmo_destroy(ctx->tmo_head);
}

static const struct ctx_hook tmo_ctx_hook = { .fini = tmo_ctx_fini };

int uroce_tmo_create(const struct uroce_tmo_attr *attr, struct uroce_qp *const *qps, unsigned nqps,
                     struct uroce_tmo **out)
{
	struct uroce_context *ctx;
	struct uroce_tmo *g;

	if (!attr || !qps || !out || !nqps || nqps > TMO_MAX_QPS || !qps[0])
		return uroce_fail(-EINVAL, "uroce_tmo_create: attr, out and 1-%u QPs are required (got %u)", TMO_MAX_QPS,
		                  nqps);
	if (!attr->msg_bytes)
		return uroce_fail(-EINVAL, "uroce_tmo_create: msg_bytes 0; give the bytes one run moves per QP");
	if (attr->alpha < 0 || attr->alpha > 1 || attr->gamma < 0 || attr->gamma > 100)
		return uroce_fail(-EINVAL, "uroce_tmo_create: alpha %g, gamma %g; accepted alpha in [0, 1] (0 = 0.2), "
		                           "gamma in [0, 100] (0 = 0.25)", attr->alpha, attr->gamma);
	ctx = qps[0]->ctx;
	for (unsigned i = 0; i < nqps; i++) {
		if (!qps[i] || qps[i]->rel != &rel_be_ops || qps[i]->ctx != ctx)
			return uroce_fail(-EINVAL, "uroce_tmo_create: qps[%u] is not a be QP of the first QP's context", i);
		for (unsigned j = 0; j < i; j++)
			if (qps[j] == qps[i])
				return uroce_fail(-EINVAL, "uroce_tmo_create: qps[%u] and qps[%u] are the same QP", j, i);
	}
	if (ctx_remote(ctx)) {
		struct tmo_args a = { .attr = attr, .qps = qps, .nqps = nqps, .out = out };

		return ctx_call(ctx, tmo_create_call, &a);
	}
	for (struct uroce_tmo *o = ctx->tmo_head; o; o = o->next)
		if (o->group_id == attr->group_id)
			for (unsigned i = 0; i < o->n; i++)
				for (unsigned j = 0; j < nqps; j++)
					if (o->m[i].qp == qps[j])
						return uroce_fail(-EEXIST, "uroce_tmo_create: group %u already has qps[%u]",
						                  attr->group_id, j);
	if (ctx_hook_add(ctx, &tmo_ctx_hook))
		return uroce_fail(-ENOSPC, "uroce_tmo_create: the context's hook table is full");
	g = calloc(1, sizeof(*g) + nqps * sizeof(g->m[0]));
	if (!g)
		return uroce_fail(-ENOMEM, "uroce_tmo_create: out of memory");
	g->ctx = ctx;
	g->group_id = attr->group_id;
	g->msg_bytes = attr->msg_bytes;
	g->alpha = attr->alpha > 0 ? attr->alpha : TMO_ALPHA_DEFAULT;
	g->gamma = attr->gamma > 0 ? attr->gamma : TMO_GAMMA_DEFAULT;
	g->delta_ns = (attr->delta_us ? attr->delta_us : TMO_DELTA_DEFAULT_US) * 1000ull;
	g->n = nqps;
	for (unsigned i = 0; i < nqps; i++)
		g->m[i].qp = qps[i];
	take_base(g);
	g->next = ctx->tmo_head;
	ctx->tmo_head = g;
	*out = g;
	return 0;
}

static int tmo_destroy_call(void *arg)
{
	return uroce_tmo_destroy(((struct tmo_args *)arg)->g);
}

int uroce_tmo_destroy(struct uroce_tmo *g)
{
	if (!g)
		return uroce_fail(-EINVAL, "uroce_tmo_destroy: g is NULL");
	if (ctx_remote(g->ctx)) {
		struct tmo_args a = { .g = g };

		return ctx_call(g->ctx, tmo_destroy_call, &a);
	}
	for (struct uroce_tmo **p = &g->ctx->tmo_head; *p; p = &(*p)->next)
		if (*p == g) {
			*p = g->next;
			break;
		}
	free(g);
	return 0;
}

static int tmo_warmup_call(void *arg)
{
	struct tmo_args *a = arg;

	return uroce_tmo_warmup(a->g, a->v);
}

int uroce_tmo_warmup(struct uroce_tmo *g, uint64_t warmup_ns)
{
	if (!g || !warmup_ns)
		return uroce_fail(-EINVAL, "uroce_tmo_warmup: a group and the warm-up's duration (> 0 ns) are needed");
	if (ctx_remote(g->ctx)) {
		struct tmo_args a = { .g = g, .v = warmup_ns };

		return ctx_call(g->ctx, tmo_warmup_call, &a);
	}
	/* T_initial = (1 + gamma) T_warmup + delta, at most TMO_MAX_NS */
	g->t_ns = sat_add(sat_ns((1.0 + g->gamma) * (double)warmup_ns), g->delta_ns);
	if (g->t_ns > TMO_MAX_NS)
		g->t_ns = TMO_MAX_NS;
	take_base(g);
	apply(g);
	return 0;
}

uint64_t uroce_tmo_proposal_ns(struct uroce_tmo *g)
{
	return g ? proposal(g) : 0;
}

uint64_t uroce_tmo_timeout_ns(const struct uroce_tmo *g)
{
	return g ? __atomic_load_n(&g->t_ns, __ATOMIC_RELAXED) : 0;
}

static int exchange(struct uroce_tmo *g, uint32_t round)
{
	uint64_t now = ctx_clock(g->ctx), *v;
	bool all = true, ask;

	if (g->in_round && round == g->round && g->round_done)
		return 0;
	if (!g->in_round || round != g->round) {
		/* a new round: our proposal is fixed now, the next one measures from here */
		if (g->in_round) {
			g->prev_round = g->round;
			g->prev_own = g->own;
			g->have_prev = true;
		}
		g->round = round;
		g->in_round = true;
		g->round_done = false;
		g->own = own_proposal(g);
		take_base(g);
		for (unsigned i = 0; i < g->n; i++) {
			g->m[i].sent = false;
			/* votes kept for rounds now outside the window (from before
			 * the first exchange, or left behind by a jump) go */
			for (unsigned k = 0; k < TMO_VOTE_SLOTS; k++)
				if (!round_ok(g, g->m[i].v[k].round))
					g->m[i].v[k].have = false;
		}
		g->ask_ns = now;
	}
	ask = now - g->ask_ns >= TMO_ASK_EVERY_NS;
	if (ask)
		g->ask_ns = now;
	for (unsigned i = 0; i < g->n; i++) {
		struct tmo_member *mb = &g->m[i];
		bool have = have_vote(mb, round);

		all &= have;
		if ((!mb->sent || (ask && !have)) && send_vote(g, mb, round, g->own, !have) == 0)
			mb->sent = true;
	}
	if (!all)
		return -EAGAIN;
	v = malloc((g->n + 1) * sizeof(*v));
	if (!v)
		return uroce_fail(-ENOMEM, "uroce_tmo_exchange: out of memory");
	v[0] = g->own;
	for (unsigned i = 0; i < g->n; i++)
		v[i + 1] = g->m[i].v[round % TMO_VOTE_SLOTS].vote;
	uroce_tmo_update(g, v, g->n + 1);
	free(v);
	g->round_done = true;
	return 0;
}

static int tmo_exchange_call(void *arg)
{
	struct tmo_args *a = arg;

	return exchange(a->g, a->round);
}

int uroce_tmo_exchange(struct uroce_tmo *g, uint32_t round)
{
	if (!g)
		return uroce_fail(-EINVAL, "uroce_tmo_exchange: g is NULL");
	if (ctx_remote(g->ctx)) {
		struct tmo_args a = { .g = g, .round = round };

		return ctx_call(g->ctx, tmo_exchange_call, &a);
	}
	return exchange(g, round);
}
