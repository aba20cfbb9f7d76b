/* SPDX-License-Identifier: MIT */
/* ARP for IPv4 over Ethernet (RFC 826): frame build/parse, the in-place
 * answer to a request for our address, and the fixed neighbour table. */
#include <errno.h>
#include <string.h>

#include "dataplane/arp.h"

#define ARP_HTYPE_ETHER 1u
#define ARP_PTYPE_IPV4 0x0800u

/* Offsets inside the frame (Ethernet header first). */
#define OFF_DMAC 0
#define OFF_SMAC 6
#define OFF_ETYPE 12
#define OFF_ARP 14
#define OFF_HTYPE (OFF_ARP + 0)
#define OFF_PTYPE (OFF_ARP + 2)
#define OFF_HLEN (OFF_ARP + 4)
#define OFF_PLEN (OFF_ARP + 5)
#define OFF_OP (OFF_ARP + 6)
#define OFF_SHA (OFF_ARP + 8)
#define OFF_SPA (OFF_ARP + 14)
#define OFF_THA (OFF_ARP + 18)
#define OFF_TPA (OFF_ARP + 24)

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static inline uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

enum arp_parse_result arp_parse(const uint8_t *frame, uint32_t len, struct arp_msg *m)
{
	if (!arp_is_arp(frame, len))
		return ARP_NOT_ARP;
	if (len < ARP_FRAME_LEN)
		return ARP_SHORT;
	if (get16(frame + OFF_HTYPE) != ARP_HTYPE_ETHER || get16(frame + OFF_PTYPE) != ARP_PTYPE_IPV4 ||
	    frame[OFF_HLEN] != 6 || frame[OFF_PLEN] != 4)
		return ARP_UNSUPPORTED;
	m->op = get16(frame + OFF_OP);
	if (m->op != ARP_OP_REQUEST && m->op != ARP_OP_REPLY)
		return ARP_UNSUPPORTED;
	memcpy(m->sha, frame + OFF_SHA, 6);
	memcpy(&m->spa_be, frame + OFF_SPA, 4);
	memcpy(m->tha, frame + OFF_THA, 6);
	memcpy(&m->tpa_be, frame + OFF_TPA, 4);
	return ARP_OK;
}

int arp_build(uint8_t *buf, uint32_t cap, const uint8_t dmac[6], const struct arp_msg *m)
{
	if (cap < ARP_MIN_FRAME_LEN)
		return -ENOSPC;
	memcpy(buf + OFF_DMAC, dmac, 6);
	memcpy(buf + OFF_SMAC, m->sha, 6);
	put16(buf + OFF_ETYPE, ARP_ETHERTYPE);
	put16(buf + OFF_HTYPE, ARP_HTYPE_ETHER);
	put16(buf + OFF_PTYPE, ARP_PTYPE_IPV4);
	buf[OFF_HLEN] = 6;
	buf[OFF_PLEN] = 4;
	put16(buf + OFF_OP, m->op);
	memcpy(buf + OFF_SHA, m->sha, 6);
	memcpy(buf + OFF_SPA, &m->spa_be, 4);
	memcpy(buf + OFF_THA, m->tha, 6);
	memcpy(buf + OFF_TPA, &m->tpa_be, 4);
	/* Explicit padding: a NIC may pad short frames with stale buffer bytes. */
	memset(buf + ARP_FRAME_LEN, 0, ARP_MIN_FRAME_LEN - ARP_FRAME_LEN);
	return (int)ARP_MIN_FRAME_LEN;
}

int arp_build_request(uint8_t *buf, uint32_t cap, const uint8_t smac[6], uint32_t sip_be, uint32_t tip_be)
{
	struct arp_msg m = { .op = ARP_OP_REQUEST, .spa_be = sip_be, .tpa_be = tip_be };

	memcpy(m.sha, smac, 6);
	/* tha is ignored in a request; zero is what Linux sends. */
	return arp_build(buf, cap, bcast, &m);
}

void arp_table_init(struct arp_table *t)
{
	memset(t, 0, sizeof(*t));
}

static struct arp_neigh *find(struct arp_table *t, uint32_t ip_be)
{
	for (unsigned i = 0; i < ARP_NEIGH_MAX; i++)
		if (t->e[i].ip_be == ip_be)
			return &t->e[i];
	return NULL;
}

bool arp_table_update(struct arp_table *t, uint32_t ip_be, const uint8_t mac[6], uint64_t now)
{
	struct arp_neigh *n;

	if (!ip_be)
		return false;
	n = find(t, ip_be);
	if (!n)
		return false;
	memcpy(n->mac, mac, 6);
	n->stamp = now;
	return true;
}

void arp_table_learn(struct arp_table *t, uint32_t ip_be, const uint8_t mac[6], uint64_t now)
{
	struct arp_neigh *victim;

	/* 0.0.0.0 is an ARP probe's sender, not a neighbour. */
	if (!ip_be || arp_table_update(t, ip_be, mac, now))
		return;
	victim = &t->e[0];
	for (unsigned i = 0; i < ARP_NEIGH_MAX; i++) {
		if (!t->e[i].ip_be) {
			victim = &t->e[i];
			break;
		}
		if (t->e[i].stamp < victim->stamp)
			victim = &t->e[i];
	}
	victim->ip_be = ip_be;
	memcpy(victim->mac, mac, 6);
	victim->stamp = now;
}

bool arp_table_lookup(const struct arp_table *t, uint32_t ip_be, uint8_t mac[6])
{
	if (!ip_be)
		return false;
	for (unsigned i = 0; i < ARP_NEIGH_MAX; i++) {
		if (t->e[i].ip_be == ip_be) {
			memcpy(mac, t->e[i].mac, 6);
			return true;
		}
	}
	return false;
}

enum arp_action arp_input(struct arp_table *t, struct arp_stats *st, const uint8_t my_mac[6],
			  uint32_t my_ip_be, uint8_t *frame, uint32_t len, uint32_t room,
			  uint64_t now, uint32_t *out_len, enum arp_parse_result *why)
{
	struct arp_msg m;
	enum arp_parse_result r;
	bool for_me;

	r = arp_parse(frame, len, &m);
	if (r != ARP_OK) {
		st->malformed++;
		*why = r;
		return ARP_ACTION_MALFORMED;
	}
	*why = ARP_OK;
	/* A broadcast or multicast sender address is a forgery or a bug;
	 * learning it would misdirect our traffic. */
	if (m.sha[0] & 1) {
		st->ignored++;
		return ARP_ACTION_CONSUMED;
	}
	for_me = my_ip_be && m.tpa_be == my_ip_be;
	if (!arp_table_update(t, m.spa_be, m.sha, now) && for_me)
		arp_table_learn(t, m.spa_be, m.sha, now);

	if (m.op == ARP_OP_REPLY) {
		if (for_me)
			st->replies_rx++;
		else
			st->ignored++;
		return ARP_ACTION_CONSUMED;
	}
	if (!for_me || room < ARP_MIN_FRAME_LEN) {
		st->ignored++;
		return ARP_ACTION_CONSUMED;
	}
	st->requests_rx++;

	/* Answer in the request's own buffer: no allocation on this path. */
	struct arp_msg reply = { .op = ARP_OP_REPLY, .spa_be = my_ip_be, .tpa_be = m.spa_be };
	memcpy(reply.sha, my_mac, 6);
	memcpy(reply.tha, m.sha, 6);
	*out_len = (uint32_t)arp_build(frame, room, m.sha, &reply);
	st->replies_tx++;
	return ARP_ACTION_REPLY;
}
