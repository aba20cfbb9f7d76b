/* SPDX-License-Identifier: MIT */
/* An initial PSN for a new connection: from getrandom, so an off-path
 * host cannot predict it (lrand48 seeded with the time and pid can be);
 * lrand48 only if getrandom fails. */
#ifndef UROCE_APPS_APP_RAND_H
#define UROCE_APPS_APP_RAND_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

static inline uint32_t app_rand_psn(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)lrand48();
	return v & 0xffffffu;
}

#endif
