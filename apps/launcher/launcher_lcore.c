/* SPDX-License-Identifier: MIT */
/* The launcher's engines: one thread per core of -l, pinned, running to
 * completion: the transport (uroce_progress), the loop fabric's wires,
 * the traffic of its QPs, and the calls the main thread hands it. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "launcher.h"
#include "dataplane/port_loop.h"

uint64_t l_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *lcore_main(void *arg)
{
	struct l_lcore *lc = arg;

	while (!atomic_load_explicit(&lc->stop, memory_order_acquire)) {
		if (lc->fab)
			loop_fabric_advance(lc->fab, 0); /* real time: deliver what is due */
		uroce_progress(lc->ctx);
		l_traffic_step(lc);
		if (atomic_load_explicit(&lc->call_pending, memory_order_acquire)) {
			lc->call_ret = lc->call_fn(lc, lc->call_arg);
			atomic_store_explicit(&lc->call_pending, 0, memory_order_release);
		}
	}
	return NULL;
}

int l_call(int lcore, l_call_fn fn, void *arg)
{
	struct l_lcore *lc = &L.lc[lcore];
	struct timespec nap = { 0, 20000 };

	if (!lc->started)
		return fn(lc, arg); /* before the threads start, or after they stop */
	lc->call_fn = fn;
	lc->call_arg = arg;
	atomic_store_explicit(&lc->call_pending, 1, memory_order_release);
	/* the loop never blocks, so the call is taken within a pass */
	while (atomic_load_explicit(&lc->call_pending, memory_order_acquire))
		nanosleep(&nap, NULL);
	return lc->call_ret;
}

int l_lcores_start(void)
{
	for (int i = 0; i < L.nlcores; i++) {
		struct l_lcore *lc = &L.lc[i];
		cpu_set_t set;
		int rc = pthread_create(&lc->th, NULL, lcore_main, lc);

		if (rc) {
			l_err("uroce: cannot start the engine on core %d: %s\n", lc->cpu, strerror(rc));
			return -rc;
		}
		lc->started = true;
		CPU_ZERO(&set);
		CPU_SET(lc->cpu, &set);
		rc = pthread_setaffinity_np(lc->th, sizeof(set), &set);
		if (rc) {
			l_err("uroce: cannot pin the engine to core %d: %s\n", lc->cpu, strerror(rc));
			return -rc;
		}
		char name[16];
		snprintf(name, sizeof(name), "uroce-lcore%d", lc->cpu);
		pthread_setname_np(lc->th, name);
	}
	return 0;
}

void l_lcores_stop(void)
{
	for (int i = 0; i < L.nlcores; i++) {
		struct l_lcore *lc = &L.lc[i];

		if (!lc->started)
			continue;
		atomic_store_explicit(&lc->stop, true, memory_order_release);
		pthread_join(lc->th, NULL);
		lc->started = false;
	}
}
