/* Names and parsers of the reliability, ordering, path and congestion
 * policies, for tools and error messages. */
#include <errno.h>
#include <string.h>

#include <uroce/uroce.h>

static const char *const rel_names[UROCE_REL__COUNT] = {
	[UROCE_REL_RC] = "rc",
	[UROCE_REL_SR] = "sr",
	[UROCE_REL_EC] = "ec",
	[UROCE_REL_BE] = "be",
};

static const char *const ord_names[UROCE_ORDER__COUNT] = {
	[UROCE_ORDER_ORDERED] = "ordered",
	[UROCE_ORDER_UNORDERED] = "unordered",
};

const char *uroce_reliability_str(enum uroce_reliability rel)
{
	return (unsigned)rel < UROCE_REL__COUNT ? rel_names[rel] : NULL;
}

int uroce_reliability_parse(const char *s, enum uroce_reliability *out)
{
	for (unsigned i = 0; s && i < UROCE_REL__COUNT; i++)
		if (!strcmp(s, rel_names[i])) {
			*out = (enum uroce_reliability)i;
			return 0;
		}
	return -EINVAL;
}

const char *uroce_ordering_str(enum uroce_ordering ord)
{
	return (unsigned)ord < UROCE_ORDER__COUNT ? ord_names[ord] : NULL;
}

int uroce_ordering_parse(const char *s, enum uroce_ordering *out)
{
	for (unsigned i = 0; s && i < UROCE_ORDER__COUNT; i++)
		if (!strcmp(s, ord_names[i])) {
			*out = (enum uroce_ordering)i;
			return 0;
		}
	return -EINVAL;
}

static const char *const path_names[UROCE_PATH__COUNT] = {
	[UROCE_PATH_DEFAULT] = "default",
	[UROCE_PATH_SINGLE] = "single",
	[UROCE_PATH_P2C] = "p2c",
	[UROCE_PATH_RR] = "rr",
	[UROCE_PATH_RANDOM] = "random",
};

static const char *const cc_names[UROCE_CC__COUNT] = {
	[UROCE_CC_NONE] = "none",
	[UROCE_CC_DCQCN] = "dcqcn",
	[UROCE_CC_SWIFT] = "swift",
	[UROCE_CC_CUBIC] = "cubic",
	[UROCE_CC_EQDS] = "eqds",
};

const char *uroce_path_policy_str(enum uroce_path_policy p)
{
	return (unsigned)p < UROCE_PATH__COUNT ? path_names[p] : NULL;
}

int uroce_path_policy_parse(const char *s, enum uroce_path_policy *out)
{
	for (unsigned i = 0; s && i < UROCE_PATH__COUNT; i++)
		if (!strcmp(s, path_names[i])) {
			*out = (enum uroce_path_policy)i;
			return 0;
		}
	return -EINVAL;
}

const char *uroce_cc_str(enum uroce_cc cc)
{
	return (unsigned)cc < UROCE_CC__COUNT ? cc_names[cc] : NULL;
}

int uroce_cc_parse(const char *s, enum uroce_cc *out)
{
	for (unsigned i = 0; s && i < UROCE_CC__COUNT; i++)
		if (!strcmp(s, cc_names[i])) {
			*out = (enum uroce_cc)i;
			return 0;
		}
	return -EINVAL;
}
