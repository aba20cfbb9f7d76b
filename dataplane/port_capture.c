/* SPDX-License-Identifier: MIT */
/* A port's capture into a pcap file (port_capture.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataplane/port.h"
#include "dataplane/port_capture.h"

int port_capture_start(struct port *p, const char *path, uint64_t max_frames, char *err, size_t errlen)
{
	struct port_capture *c;
	int rc;

	if (p->cap) {
		snprintf(err, errlen, "a capture is already running on this port: stop it first");
		return -EBUSY;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = pcap_writer_open(&c->w, path, true, err, errlen);
	if (rc) {
		free(c);
		return rc;
	}
	c->max_frames = max_frames ? max_frames : PORT_CAPTURE_MAX_DEFAULT;
	p->cap = c;
	return 0;
}

int port_capture_stop(struct port *p, struct port_capture *out)
{
	struct port_capture *c = p->cap;
	int rc;

	if (!c)
		return -ENOENT;
	p->cap = NULL;
	rc = pcap_writer_close(&c->w);
	if (!c->error)
		c->error = rc;
	if (out)
		*out = *c;
	rc = c->error;
	free(c);
	return rc;
}

void port_capture_burst(struct port *p, const struct uroce_frame *f, uint16_t n)
{
	struct port_capture *c = p->cap;
	struct timespec ts;
	uint64_t now;

	/* wall-clock stamps: what Wireshark shows and other captures use */
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	for (uint16_t i = 0; i < n; i++) {
		if (c->error || c->frames >= c->max_frames) {
			c->missed++;
			continue;
		}
		int rc = pcap_writer_write(&c->w, now, f[i].data, f[i].len);
		if (rc) {
			c->error = rc;
			c->missed++;
			continue;
		}
		c->frames++;
		c->bytes += f[i].len;
	}
}
