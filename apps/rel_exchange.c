/* SPDX-License-Identifier: MIT */
/* The reliability modes in the tools' TCP exchange; the format and the
 * rules are in rel_exchange.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rel_args.h"
#include "rel_exchange.h"

#define MAGIC_SP REL_MAGIC " "
#define MAGIC_SP_LEN (sizeof(MAGIC_SP) - 1)
#define SAME_HINT "start both ends with the same"

static unsigned eff_k(const struct uroce_rel_attr *a)
{
	return a->ec_k ? a->ec_k : REL_EC_K_DEFAULT;
}

static unsigned eff_m(const struct uroce_rel_attr *a)
{
	return a->ec_m ? a->ec_m : REL_EC_M_DEFAULT;
}

static const char *or_q(const char *s)
{
	return s ? s : "?";
}

void rel_prefix_format(const struct uroce_rel_attr *mine, uint32_t token, uint32_t ctrl, char out[REL_PREFIX_LEN])
{
	char text[REL_PREFIX_LEN + 1];
	int n = snprintf(text, sizeof(text), MAGIC_SP "%s %s %s %u %u %08x %c %06x",
			 or_q(uroce_reliability_str(mine->reliability)), or_q(uroce_ordering_str(mine->ordering)),
			 or_q(rel_args_ec_str(mine->ec_code)), eff_k(mine), eff_m(mine), token,
			 mine->nic_rc ? 'r' : mine->imm_keyed ? 'k' : '-', ctrl & 0xffffffu);

	/* at most "UROCE-REL3 sr unordered xor 64 32 0123abcd k 123abc": 51 bytes */
	if (n < 0 || n > REL_PREFIX_LEN - 1)
		n = REL_PREFIX_LEN - 1;
	memcpy(out, text, (size_t)n);
	memset(out + n, ' ', (size_t)(REL_PREFIX_LEN - 1 - n));
	out[REL_PREFIX_LEN - 1] = '\n';
}

int rel_prefix_parse(const char in[REL_PREFIX_LEN], struct uroce_rel_attr *out, uint32_t *token, uint32_t *ctrl)
{
	char text[REL_PREFIX_LEN], rel[16], ord[16], code[16], keyed;
	unsigned k, m, tok, cq;
	int end = -1;

	if (memcmp(in, MAGIC_SP, MAGIC_SP_LEN) || in[REL_PREFIX_LEN - 1] != '\n')
		return -EINVAL;
	memcpy(text, in, REL_PREFIX_LEN - 1);
	text[REL_PREFIX_LEN - 1] = 0;
	if (sscanf(text + MAGIC_SP_LEN, "%15s %15s %15s %u %u %8x %c %6x%n", rel, ord, code, &k, &m, &tok, &keyed, &cq,
		   &end) != 8 || end < 0 || (keyed != 'k' && keyed != 'r' && keyed != '-'))
		return -EINVAL;
	for (const char *p = text + MAGIC_SP_LEN + end; *p; p++)
		if (*p != ' ')
			return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (uroce_reliability_parse(rel, &out->reliability) || uroce_ordering_parse(ord, &out->ordering) ||
	    rel_args_ec_parse(code, &out->ec_code) || !k || k > 255 || !m || m > 255)
		return -EINVAL;
	out->ec_k = (uint8_t)k;
	out->ec_m = (uint8_t)m;
	out->imm_keyed = keyed == 'k' || keyed == 'r';
	out->nic_rc = keyed == 'r';
	*token = tok;
	*ctrl = cq;
	return 0;
}

int rel_exchange_send(struct tcp_exchange *x, const struct uroce_rel_attr *mine, uint32_t token, uint32_t ctrl,
		      const void *msg, size_t len)
{
	char *buf;
	int rc;

	if (mine->reliability == UROCE_REL_RC)
		return tcp_exchange_send(x, msg, len);
	buf = malloc(REL_PREFIX_LEN + len);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", x->prog);
		return -ENOMEM;
	}
	rel_prefix_format(mine, token, ctrl, buf);
	memcpy(buf + REL_PREFIX_LEN, msg, len);
	rc = tcp_exchange_send(x, buf, REL_PREFIX_LEN + len);
	free(buf);
	return rc;
}

/* Every difference between the peer's modes and ours, one line each. */
static int compare(const struct tcp_exchange *x, const struct uroce_rel_attr *peer,
		   const struct uroce_rel_attr *mine)
{
	int differ = 0;

	if (peer->reliability != mine->reliability) {
		fprintf(stderr, "%s: peer uses reliability %s, this end %s: " SAME_HINT " --reliability\n", x->prog,
			or_q(uroce_reliability_str(peer->reliability)), or_q(uroce_reliability_str(mine->reliability)));
		return REL_EXCHANGE_MISMATCH; /* the rest means something else in each mode */
	}
	if (peer->ordering != mine->ordering) {
		fprintf(stderr, "%s: peer uses ordering %s, this end %s: " SAME_HINT " --ordering\n", x->prog,
			or_q(uroce_ordering_str(peer->ordering)), or_q(uroce_ordering_str(mine->ordering)));
		differ = 1;
	}
	if (peer->imm_keyed != mine->imm_keyed) {
		fprintf(stderr, "%s: peer %s keyed by immediate, this end %s: give both ends --imm-keyed (an end on a "
			"verbs port is keyed by itself)\n", x->prog, peer->imm_keyed ? "is" : "is not",
			mine->imm_keyed ? "is" : "is not");
		differ = 1;
	} else if (peer->nic_rc != mine->nic_rc) {
		fprintf(stderr, "%s: peer sends on %s QPs of its NIC, this end on %s: give both ends --nic-rc or neither "
			"(an RC pool pairs with an RC pool on a verbs port)\n", x->prog, peer->nic_rc ? "RC" : "UC",
			mine->nic_rc ? "RC" : "UC");
		differ = 1;
	}
	if (mine->reliability == UROCE_REL_EC) {
		if (peer->ec_code != mine->ec_code) {
			fprintf(stderr, "%s: peer uses ec code %s, this end %s: " SAME_HINT " --ec\n", x->prog,
				or_q(rel_args_ec_str(peer->ec_code)), or_q(rel_args_ec_str(mine->ec_code)));
			differ = 1;
		}
		if (eff_k(peer) != eff_k(mine)) {
			fprintf(stderr, "%s: peer uses ec k %u, this end %u: " SAME_HINT " --ec-k\n", x->prog,
				eff_k(peer), eff_k(mine));
			differ = 1;
		}
		if (eff_m(peer) != eff_m(mine)) {
			fprintf(stderr, "%s: peer uses ec m %u, this end %u: " SAME_HINT " --ec-m\n", x->prog,
				eff_m(peer), eff_m(mine));
			differ = 1;
		}
	}
	return differ ? REL_EXCHANGE_MISMATCH : 0;
}

int rel_exchange_recv(struct tcp_exchange *x, const struct uroce_rel_attr *mine, uint32_t *token, uint32_t *ctrl,
		      void *msg, size_t len)
{
	const char *me = or_q(uroce_reliability_str(mine->reliability));
	int is_rc = mine->reliability == UROCE_REL_RC;
	char prefix[REL_PREFIX_LEN];
	struct uroce_rel_attr peer;
	struct tcp_exchange rest;
	char *m = msg;
	int rc;

	if (len < REL_PREFIX_LEN) {
		fprintf(stderr, "%s: internal: a %zu-byte message cannot carry the %d-byte mode prefix\n", x->prog,
			len, REL_PREFIX_LEN);
		return -EINVAL;
	}
	/* S bytes: what an rc end sends, and at least the prefix of an sr/ec one */
	rc = tcp_exchange_recv(x, m, len);
	if (rc) {
		if (rc == -ECONNRESET && !is_rc && !x->quiet)
			fprintf(stderr, "%s: (this end, --reliability %s, sends a mode prefix first: an rc peer, "
				"perftest or rdma-core closes on it: " SAME_HINT " --reliability)\n", x->prog, me);
		return rc;
	}
	if (memcmp(m, MAGIC_SP, MAGIC_SP_LEN)) {
		if (is_rc)
			return 0;
		fprintf(stderr, "%s: peer uses reliability rc (or is not uroce), this end %s: " SAME_HINT
			" --reliability\n", x->prog, me);
		return REL_EXCHANGE_MISMATCH;
	}
	/* An sr/ec peer: P + S bytes in all, S read; the standard message is
	 * the S - P bytes after the prefix and the P still to come. An rc end
	 * reads them too (quietly), so that it closes on an empty socket and
	 * the peer gets this end's answer, not a reset. */
	memcpy(prefix, m, REL_PREFIX_LEN);
	memmove(m, m + REL_PREFIX_LEN, len - REL_PREFIX_LEN);
	rest = *x;
	rest.quiet = x->quiet || is_rc;
	rc = tcp_exchange_recv(&rest, m + len - REL_PREFIX_LEN, REL_PREFIX_LEN);
	if (rc && !is_rc)
		return rc;
	if (rel_prefix_parse(prefix, &peer, token, ctrl)) {
		char shown[REL_PREFIX_LEN + 1];
		int n = 0;

		for (int i = 0; i < REL_PREFIX_LEN; i++)
			shown[i] = isprint((unsigned char)prefix[i]) ? prefix[i] : '.';
		for (int i = 0; i < REL_PREFIX_LEN; i++)
			if (shown[i] != ' ' && shown[i] != '.')
				n = i + 1;
		shown[n] = 0;
		fprintf(stderr, "%s: the peer's mode prefix is malformed: '%s' (expected '" REL_MAGIC
			" RELIABILITY ORDERING EC_CODE K M TOKEN KEYED CTRL', space-padded to %d bytes with a newline)\n", x->prog,
			shown, REL_PREFIX_LEN);
		return REL_EXCHANGE_MISMATCH;
	}
	return compare(x, &peer, mine);
}
