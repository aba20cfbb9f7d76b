/* SPDX-License-Identifier: MIT */
/* The switch's counters as JSON, and the names of its drop reasons. */
#include <errno.h>
#include <inttypes.h>

#include "apps/fabric/fsw.h"
#include "app_json.h"

static const char *const drop_names[FSW_DROP__COUNT] = {
	[FSW_DROP_NONE] = "none",
	[FSW_DROP_NOT_IP] = "not_ip",
	[FSW_DROP_NOT_UDP] = "not_udp",
	[FSW_DROP_PARSE] = "parse",
	[FSW_DROP_NO_ROUTE] = "no_route",
	[FSW_DROP_TTL] = "ttl",
	[FSW_DROP_TOO_BIG] = "too_big",
	[FSW_DROP_QUEUE_FULL] = "queue_full",
	[FSW_DROP_PRIO_FULL] = "prio_full",
	[FSW_DROP_TX_FULL] = "tx_full",
};

const char *fsw_drop_name(enum fsw_drop d)
{
	return (unsigned)d < FSW_DROP__COUNT && drop_names[d] ? drop_names[d] : "unknown";
}

static void json_queue(FILE *f, const char *name, const struct fsw_queue_stats *q)
{
	fprintf(f,
		"\"%s\":{\"enqueued\":%" PRIu64 ",\"enqueued_bytes\":%" PRIu64 ",\"tail_drops\":%" PRIu64
		",\"ecn_marked\":%" PRIu64 ",\"trimmed\":%" PRIu64 ",\"trim_drops\":%" PRIu64 ",\"sent\":%" PRIu64
		",\"sent_bytes\":%" PRIu64 ",\"depth_bytes\":%u,\"max_depth_bytes\":%u,\"depth_frames\":%u}",
		name, q->enqueued, q->enqueued_bytes, q->tail_drops, q->ecn_marked, q->trimmed, q->trim_drops, q->sent,
		q->sent_bytes, q->depth_bytes, q->max_depth_bytes, q->depth_frames);
}

int fsw_stats_json(const struct fsw *s, FILE *f)
{
	struct fsw_stats st;

	fsw_stats(s, &st);
	fprintf(f,
		"{\"time_ns\":%" PRIu64 ",\"frames_held\":%u,\"rx_frames\":%" PRIu64 ",\"rx_bytes\":%" PRIu64
		",\"tx_frames\":%" PRIu64 ",\"tx_bytes\":%" PRIu64 ",\"drops_total\":%" PRIu64 ",\"drops\":{",
		fsw_now(s), fsw_frames_held(s), st.rx_frames, st.rx_bytes, st.tx_frames, st.tx_bytes, st.drops_total);
	for (unsigned d = FSW_DROP_NONE + 1; d < FSW_DROP__COUNT; d++)
		fprintf(f, "%s\"%s\":%" PRIu64, d > 1 ? "," : "", fsw_drop_name((enum fsw_drop)d), st.drops[d]);
	fputs("},\"ports\":[", f);
	for (unsigned i = 0; i < fsw_nports(s); i++) {
		struct fsw_port_stats ps;

		fsw_port_stats(s, i, &ps);
		fprintf(f, "%s{\"port\":%u,\"name\":", i ? "," : "", i);
		app_json_str(f, fsw_port_name(s, i));
		fprintf(f,
			",\"rx_frames\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"tx_frames\":%" PRIu64 ",\"tx_bytes\":%" PRIu64
			",\"tx_full\":%" PRIu64 ",\"delay_depth_bytes\":%u,",
			ps.rx_frames, ps.rx_bytes, ps.tx_frames, ps.tx_bytes, ps.tx_full, ps.delay_depth_bytes);
		json_queue(f, "data", &ps.data);
		fputc(',', f);
		json_queue(f, "prio", &ps.prio);
		fputc('}', f);
	}
	fputs("]}\n", f);
	return ferror(f) ? -EIO : 0;
}
