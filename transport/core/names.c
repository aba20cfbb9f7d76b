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

const char *uroce_reliability_str(enum uroce_reliability rel)
{
	return name_at(rel_names, UROCE_REL__COUNT, (unsigned)rel);
}

int uroce_reliability_parse(const char *s, enum uroce_reliability *out)
{
	int i = name_find(rel_names, UROCE_REL__COUNT, s);

	if (i < 0)
		return i;
	*out = (enum uroce_reliability)i;
	return 0;
}

const char *uroce_ordering_str(enum uroce_ordering ord)
{
	return name_at(ord_names, UROCE_ORDER__COUNT, (unsigned)ord);
}

int uroce_ordering_parse(const char *s, enum uroce_ordering *out)
{
	int i = name_find(ord_names, UROCE_ORDER__COUNT, s);

	if (i < 0)
		return i;
	*out = (enum uroce_ordering)i;
	return 0;
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
	return name_at(path_names, UROCE_PATH__COUNT, (unsigned)p);
}

int uroce_path_policy_parse(const char *s, enum uroce_path_policy *out)
{
	int i = name_find(path_names, UROCE_PATH__COUNT, s);

	if (i < 0)
		return i;
	*out = (enum uroce_path_policy)i;
	return 0;
}

const char *uroce_cc_str(enum uroce_cc cc)
{
	return name_at(cc_names, UROCE_CC__COUNT, (unsigned)cc);
}

int uroce_cc_parse(const char *s, enum uroce_cc *out)
{
	int i = name_find(cc_names, UROCE_CC__COUNT, s);

	if (i < 0)
		return i;
	*out = (enum uroce_cc)i;
	return 0;
}
