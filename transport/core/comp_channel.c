/* SPDX-License-Identifier: MIT */
/* Completion channels (ibv_comp_channel): an fd that becomes readable when
 * an armed CQ gets a completion, so an application can sleep in poll()
 * while the engine thread works. Arming is one-shot, as in verbs: the
 * engine disarms the CQ as it fires it, and writes the channel's eventfd
 * only then, never per completion. The usual loop applies: get the event,
 * acknowledge it, arm again, then poll the CQ empty (a completion that
 * came between the last poll and the arming is found by that poll). */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "transport/core/qp_internal.h"

/* CQs one channel serves: get_cq_event scans them (ours: a handful per
 * process in practice, so a scan beats a queue the engine must feed) */
#define CHANNEL_MAX_CQS 256

struct uroce_comp_channel {
	struct uroce_context *ctx;
	int fd;                              /* eventfd: the engine writes, the waiter reads */
	pthread_mutex_t lock;                /* the CQ list (app threads only) */
	unsigned ncqs;
	struct uroce_cq *cqs[CHANNEL_MAX_CQS];
	unsigned next;                       /* where the next scan starts: no CQ starves */
};

int uroce_comp_channel_create(struct uroce_context *ctx, struct uroce_comp_channel **out)
{
	struct uroce_comp_channel *ch;

	if (!ctx || !out)
		return uroce_fail(-EINVAL, "uroce_comp_channel_create: ctx and out are required");
	if (ctx->nic)
		return uroce_fail(-EOPNOTSUPP, "uroce_comp_channel_create: completion events on a verbs port's "
		                               "context are not supported: poll its CQs");
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return uroce_fail(-ENOMEM, "uroce_comp_channel_create: out of memory");
	ch->fd = eventfd(0, EFD_CLOEXEC);
	if (ch->fd < 0) {
		int e = errno;

		free(ch);
		return uroce_fail(-e, "uroce_comp_channel_create: eventfd: %s", strerror(e));
	}
	pthread_mutex_init(&ch->lock, NULL);
	ch->ctx = ctx;
	*out = ch;
	return 0;
}

int uroce_comp_channel_destroy(struct uroce_comp_channel *ch)
{
	if (!ch)
		return uroce_fail(-EINVAL, "uroce_comp_channel_destroy: ch is NULL");
	pthread_mutex_lock(&ch->lock);
	if (ch->ncqs) {
		unsigned n = ch->ncqs;

		pthread_mutex_unlock(&ch->lock);
		return uroce_fail(-EBUSY, "uroce_comp_channel_destroy: %u CQ(s) still use this channel; destroy "
		                          "them first", n);
	}
	pthread_mutex_unlock(&ch->lock);
	pthread_mutex_destroy(&ch->lock);
	close(ch->fd);
	free(ch);
	return 0;
}

int uroce_comp_channel_fd(const struct uroce_comp_channel *ch)
{
	if (!ch)
		return uroce_fail(-EINVAL, "uroce_comp_channel_fd: ch is NULL");
	return ch->fd;
}

int uroce_cq_set_channel(struct uroce_cq *cq, struct uroce_comp_channel *ch, void *cq_context)
{
	if (!cq || !ch)
		return uroce_fail(-EINVAL, "uroce_cq_set_channel: cq and ch are required");
	if (ch->ctx != cq->ctx)
		return uroce_fail(-EINVAL, "uroce_cq_set_channel: the channel belongs to another context");
	if (cq->channel)
		return uroce_fail(-EBUSY, "uroce_cq_set_channel: the CQ already has a channel");
	/* the engine reads cq->channel without a lock: it must not change
	 * while completions can come */
	if (cq->refs)
		return uroce_fail(-EBUSY, "uroce_cq_set_channel: %u QP(s) already use this CQ; give it its "
		                          "channel before creating them", cq->refs);
	pthread_mutex_lock(&ch->lock);
	if (ch->ncqs == CHANNEL_MAX_CQS) {
		pthread_mutex_unlock(&ch->lock);
		return uroce_fail(-ENOSPC, "uroce_cq_set_channel: a channel serves at most %d CQs", CHANNEL_MAX_CQS);
	}
	ch->cqs[ch->ncqs++] = cq;
	pthread_mutex_unlock(&ch->lock);
	cq->cq_context = cq_context;
	__atomic_store_n(&cq->channel, ch, __ATOMIC_RELEASE);
	return 0;
}

int cq_channel_detach(struct uroce_cq *cq)
{
	struct uroce_comp_channel *ch = cq->channel;

	if (__atomic_load_n(&cq->events, __ATOMIC_RELAXED) != __atomic_load_n(&cq->acked, __ATOMIC_RELAXED))
		return uroce_fail(-EBUSY, "uroce_cq_destroy: %u completion event(s) not acknowledged "
		                          "(uroce_ack_cq_events)", cq->events - cq->acked);
	pthread_mutex_lock(&ch->lock);
	for (unsigned i = 0; i < ch->ncqs; i++)
		if (ch->cqs[i] == cq) {
			ch->cqs[i] = ch->cqs[--ch->ncqs];
			break;
		}
	pthread_mutex_unlock(&ch->lock);
	cq->channel = NULL;
	return 0;
}

int uroce_req_notify_cq(struct uroce_cq *cq, int solicited_only)
{
	if (!cq)
		return uroce_fail(-EINVAL, "uroce_req_notify_cq: cq is NULL");
	if (!cq->channel)
		return uroce_fail(-EINVAL, "uroce_req_notify_cq: the CQ has no completion channel "
		                           "(uroce_cq_set_channel)");
	if (solicited_only)
		return uroce_fail(-EOPNOTSUPP, "uroce_req_notify_cq: solicited_only is not supported; accepted: 0 "
		                               "(the next completion of any kind)");
	/* seq_cst, paired with cq_notify's fence: either the engine sees the
	 * arm, or the caller's next poll sees the completion */
	__atomic_store_n(&cq->armed, 1, __ATOMIC_SEQ_CST);
	return 0;
}

void cq_notify(struct uroce_cq *cq)
{
	static const uint64_t one = 1;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&cq->armed, __ATOMIC_RELAXED) || !__atomic_exchange_n(&cq->armed, 0, __ATOMIC_ACQ_REL))
		return;
	__atomic_store_n(&cq->fired, 1, __ATOMIC_RELEASE);
	/* an eventfd write fails only when its count would overflow: it is
	 * readable then anyway */
	if (write(cq->channel->fd, &one, sizeof(one)) < 0) {
	}
}

/* A fired CQ of the channel, its flag taken; NULL when none. */
static struct uroce_cq *take_fired(struct uroce_comp_channel *ch, bool *more)
{
	struct uroce_cq *got = NULL;

	*more = false;
	pthread_mutex_lock(&ch->lock);
	for (unsigned k = 0, start = ch->next; k < ch->ncqs; k++) {
		unsigned i = (start + k) % ch->ncqs;
		struct uroce_cq *cq = ch->cqs[i];

		if (!__atomic_load_n(&cq->fired, __ATOMIC_ACQUIRE))
			continue;
		if (got) {
			*more = true;
			break;
		}
		if (__atomic_exchange_n(&cq->fired, 0, __ATOMIC_ACQ_REL)) {
			got = cq;
			ch->next = i + 1;
		}
	}
	pthread_mutex_unlock(&ch->lock);
	return got;
}

int uroce_get_cq_event(struct uroce_comp_channel *ch, struct uroce_cq **cq, void **cq_context)
{
	static const uint64_t one = 1;
	struct uroce_cq *got;
	uint64_t v;
	bool more;

	if (!ch || !cq)
		return uroce_fail(-EINVAL, "uroce_get_cq_event: ch and cq are required");
	for (;;) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		/* the fd is readable exactly while a CQ is fired: take the
		 * wakeups first (without blocking), then the flags, and make
		 * it readable again below when fired CQs remain */
		if (poll(&p, 1, 0) == 1 && read(ch->fd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
			int e = errno;

			return uroce_fail(-e, "uroce_get_cq_event: read: %s", strerror(e));
		}
		got = take_fired(ch, &more);
		if (got)
			break;
		/* none: wait, unless the application made the fd non-blocking */
		if (read(ch->fd, &v, sizeof(v)) < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			return e == EAGAIN ? -EAGAIN : uroce_fail(-e, "uroce_get_cq_event: read: %s", strerror(e));
		}
		/* a wakeup came: the loop takes its CQ */
	}
	if (more && write(ch->fd, &one, sizeof(one)) < 0) {
	}
	__atomic_add_fetch(&got->events, 1, __ATOMIC_RELAXED);
	*cq = got;
	if (cq_context)
		*cq_context = got->cq_context;
	return 0;
}

void uroce_ack_cq_events(struct uroce_cq *cq, unsigned nevents)
{
	if (cq)
		__atomic_add_fetch(&cq->acked, nevents, __ATOMIC_RELAXED);
}
