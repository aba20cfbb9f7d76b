/* SPDX-License-Identifier: MIT */
/* Names and parsers of the reliability, ordering, path and congestion
 * policies, for tools and error messages. */
#include <errno.h>
#include <string.h>

#include <uroce/uroce.h>

/* Every policy kind is a table of names indexed by its enum. */
static const char *name_at(const char *const *names, unsigned n, unsigned i)
{
	return i < n ? names[i] : NULL;
}

/* The index of s in names, or -EINVAL. */
static int name_find(const char *const *names, unsigned n, const char *s)
{
	for (unsigned i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -EINVAL;
}

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

/* uroce_<fn>_str and uroce_<fn>_parse of one policy kind: the same pair
 * for each, over its table of names. */
#define NAMED_ENUM(fn, type, names, count)				\
	const char *uroce_##fn##_str(type v)				\
	{								\
		return name_at(names, count, (unsigned)v);		\
	}								\
	int uroce_##fn##_parse(const char *s, type *out)		\
	{								\
		int i = name_find(names, count, s);			\
									\
		if (i < 0)						\
			return i;					\
		*out = (type)i;						\
		return 0;						\
	}

NAMED_ENUM(reliability, enum uroce_reliability, rel_names, UROCE_REL__COUNT)
NAMED_ENUM(ordering, enum uroce_ordering, ord_names, UROCE_ORDER__COUNT)
NAMED_ENUM(path_policy, enum uroce_path_policy, path_names, UROCE_PATH__COUNT)
NAMED_ENUM(cc, enum uroce_cc, cc_names, UROCE_CC__COUNT)
