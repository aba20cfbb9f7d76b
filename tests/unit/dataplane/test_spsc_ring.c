/* SPDX-License-Identifier: MIT */
/* SPSC ring: argument checks, exact full/empty behaviour and wrap-around
 * in one thread, then two threads passing 10 million sequenced items
 * (and a run with odd-sized elements) with no loss, duplication or
 * reordering. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "dataplane/spsc_ring.h"
#include "dp_test.h"

static void test_args(void)
{
	struct spsc_ring *r;

	errno = 0;
	CHECK(spsc_ring_create(0, 8) == NULL && errno == EINVAL, "count 0 must be refused");
	errno = 0;
	CHECK(spsc_ring_create(1000, 8) == NULL && errno == EINVAL, "count 1000 is not a power of two");
	errno = 0;
	CHECK(spsc_ring_create(1024, 0) == NULL && errno == EINVAL, "element size 0 must be refused");
	CHECK(spsc_ring_memsize(3, 8) == 0, "memsize of a bad count is 0");
	CHECK(spsc_ring_memsize(1u << 31, 8) != 0, "2^31 elements is the documented maximum");
	r = spsc_ring_create(1, 8);
	CHECK(r != NULL, "a ring of one element is legal");
	if (r) {
		uint64_t a = 7, b = 0;
		CHECK(spsc_ring_enqueue(r, &a), "first enqueue fits");
		CHECK(!spsc_ring_enqueue(r, &a), "second enqueue must see the ring full");
		CHECK(spsc_ring_dequeue(r, &b) && b == 7, "dequeue returns the element, got %llu",
		      (unsigned long long)b);
		CHECK(!spsc_ring_dequeue(r, &b), "ring must be empty again");
		spsc_ring_destroy(r);
	}
	/* head/tail live on separate cache lines from each other and from
	 * the read-only fields */
	CHECK(offsetof(struct spsc_ring, tail) - offsetof(struct spsc_ring, head) >= SPSC_CACHE_LINE,
	      "head and tail share a cache line");
	CHECK(offsetof(struct spsc_ring, size) - offsetof(struct spsc_ring, tail) >= SPSC_CACHE_LINE,
	      "tail shares a cache line with the constants");
}

/* One thread: fill exactly to capacity, partial bursts, wrap-around with
 * an element size that is not a power of two. */
static void test_single_thread(void)
{
	enum { COUNT = 64, ESIZE = 3 };
	alignas(SPSC_CACHE_LINE) static unsigned char mem[16384];
	struct spsc_ring *r = (struct spsc_ring *)mem;
	unsigned char in[COUNT * 2 * ESIZE], out[COUNT * 2 * ESIZE];
	uint32_t next_in = 0, next_out = 0;
	struct test_rng rng = { 42 };

	REQUIRE(spsc_ring_memsize(COUNT, ESIZE) <= sizeof(mem), "test buffer too small");
	REQUIRE(spsc_ring_init(r, COUNT, ESIZE) == 0, "init failed");
	CHECK(spsc_ring_init(r, 63, ESIZE) == -EINVAL, "init must refuse 63 elements");
	REQUIRE(spsc_ring_init(r, COUNT, ESIZE) == 0, "init failed");

	for (unsigned i = 0; i < COUNT * 2 * ESIZE; i++)
		in[i] = (unsigned char)i;
	CHECK(spsc_ring_enqueue_burst(r, in, COUNT * 2) == COUNT, "a burst larger than the ring fills it exactly");
	CHECK(spsc_ring_count(r) == COUNT, "count %u after filling", spsc_ring_count(r));
	CHECK(spsc_ring_enqueue_burst(r, in, 1) == 0, "a full ring takes nothing");
	CHECK(spsc_ring_dequeue_burst(r, out, COUNT * 2) == COUNT, "dequeue drains exactly COUNT");
	CHECK(memcmp(in, out, COUNT * ESIZE) == 0, "elements come out as they went in");
	CHECK(spsc_ring_dequeue_burst(r, out, 1) == 0, "an empty ring gives nothing");

	/* random bursts on both sides across many wraps; each element's three
	 * bytes encode its sequence number */
	for (unsigned iter = 0; iter < 20000; iter++) {
		uint32_t n = (uint32_t)test_rng_below(&rng, 40), got;

		for (uint32_t k = 0; k < n; k++) {
			uint32_t v = next_in + k;
			in[k * ESIZE] = (unsigned char)v;
			in[k * ESIZE + 1] = (unsigned char)(v >> 8);
			in[k * ESIZE + 2] = (unsigned char)(v >> 16);
		}
		got = spsc_ring_enqueue_burst(r, in, n);
		CHECK(got == n || spsc_ring_count(r) == COUNT, "short enqueue (%u of %u) on a ring that is not full",
		      got, n);
		next_in += got;

		n = (uint32_t)test_rng_below(&rng, 40);
		got = spsc_ring_dequeue_burst(r, out, n);
		CHECK(got == n || spsc_ring_count(r) == 0, "short dequeue on a ring that is not empty");
		for (uint32_t k = 0; k < got; k++) {
			uint32_t v = out[k * ESIZE] | out[k * ESIZE + 1] << 8 | (uint32_t)out[k * ESIZE + 2] << 16;
			CHECK(v == (next_out & 0xffffffu), "expected element %u, got %u", next_out, v);
			next_out++;
		}
		CHECK(next_in - next_out == spsc_ring_count(r), "count disagrees with what is inside");
	}
	CHECK(next_out > 100000, "the random walk moved too little (%u)", next_out);
}

/* ---- two threads ---- */

#define ITEMS 10000000ull
#define BIG_ITEMS 1000000ull

struct big {
	uint64_t seq;
	uint64_t check;  /* derived from seq: torn copies show up */
	uint32_t pad[3]; /* 28 bytes: not a power of two, wraps mid-burst */
};

struct xfer {
	struct spsc_ring *r;
	uint64_t items;
	bool big;
	atomic_bool timed_out;
	uint64_t deadline;
	uint64_t errors;
	uint64_t received;
};

/* When the ring is full (or empty), give the other side the CPU after a
 * short spin: the test machine may have fewer cores than threads. */
static void backoff(unsigned *spins)
{
	if (++*spins > 64) {
		sched_yield();
		*spins = 0;
	}
}

static void *producer(void *arg)
{
	struct xfer *x = arg;
	struct test_rng rng = { 7 };
	uint64_t seq = 0;
	unsigned spins = 0, iter = 0;

	while (seq < x->items) {
		uint32_t n = 1 + (uint32_t)test_rng_below(&rng, 32), got;

		if (n > x->items - seq)
			n = (uint32_t)(x->items - seq);
		if (x->big) {
			struct big b[32];
			for (uint32_t k = 0; k < n; k++) {
				b[k].seq = seq + k;
				b[k].check = ~(seq + k) * 0x9e3779b97f4a7c15ull;
				b[k].pad[0] = b[k].pad[1] = b[k].pad[2] = (uint32_t)(seq + k);
			}
			got = spsc_ring_enqueue_burst(x->r, b, n);
		} else {
			uint64_t v[32];
			for (uint32_t k = 0; k < n; k++)
				v[k] = seq + k;
			got = spsc_ring_enqueue_burst(x->r, v, n);
		}
		seq += got;
		if (!got)
			backoff(&spins);
		if ((++iter & 1023) == 0 &&
		    (atomic_load(&x->timed_out) || test_mono_ns() > x->deadline)) {
			atomic_store(&x->timed_out, true);
			break;
		}
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct xfer *x = arg;
	struct test_rng rng = { 11 };
	uint64_t expect = 0;
	unsigned spins = 0, iter = 0;

	while (expect < x->items) {
		uint32_t n = 1 + (uint32_t)test_rng_below(&rng, 32), got;

		if (x->big) {
			struct big b[32];
			got = spsc_ring_dequeue_burst(x->r, b, n);
			for (uint32_t k = 0; k < got; k++, expect++) {
				if (b[k].seq != expect || b[k].check != ~expect * 0x9e3779b97f4a7c15ull ||
				    b[k].pad[2] != (uint32_t)expect) {
					if (x->errors++ < 5)
						fprintf(stderr, "big: expected %llu, got %llu\n",
							(unsigned long long)expect, (unsigned long long)b[k].seq);
					expect = b[k].seq; /* resync to count one error per gap */
				}
			}
		} else {
			uint64_t v[32];
			got = spsc_ring_dequeue_burst(x->r, v, n);
			for (uint32_t k = 0; k < got; k++, expect++) {
				if (v[k] != expect) {
					if (x->errors++ < 5)
						fprintf(stderr, "expected %llu, got %llu\n",
							(unsigned long long)expect, (unsigned long long)v[k]);
					expect = v[k];
				}
			}
		}
		x->received += got;
		if (!got)
			backoff(&spins);
		if ((++iter & 1023) == 0 &&
		    (atomic_load(&x->timed_out) || test_mono_ns() > x->deadline)) {
			atomic_store(&x->timed_out, true);
			break;
		}
	}
	return NULL;
}

static void run_threads(uint32_t count, bool big, uint64_t items)
{
	struct xfer x = { .items = items, .big = big, .deadline = test_mono_ns() + TEST_HANG_NS };
	pthread_t p, c;

	atomic_init(&x.timed_out, false);
	x.r = spsc_ring_create(count, big ? sizeof(struct big) : sizeof(uint64_t));
	REQUIRE(x.r, "ring create failed");
	REQUIRE(pthread_create(&c, NULL, consumer, &x) == 0, "pthread_create");
	REQUIRE(pthread_create(&p, NULL, producer, &x) == 0, "pthread_create");
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	CHECK(!atomic_load(&x.timed_out), "transfer did not finish within %llu s (hang?)",
	      (unsigned long long)(TEST_HANG_NS / 1000000000ull));
	CHECK(x.errors == 0, "%llu items lost, duplicated or reordered", (unsigned long long)x.errors);
	CHECK(x.received == items, "received %llu of %llu items", (unsigned long long)x.received,
	      (unsigned long long)items);
	CHECK(spsc_ring_count(x.r) == 0, "ring not empty at the end");
	spsc_ring_destroy(x.r);
}

int main(void)
{
	test_args();
	test_single_thread();
	run_threads(1024, false, ITEMS);
	run_threads(64, true, BIG_ITEMS); /* small ring: constantly full/empty */
	return test_done("spsc_ring");
}
