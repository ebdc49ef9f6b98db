/* SPDX-License-Identifier: MIT */
/*
 * names.c - short names of the settings' enum values, as the CLI, the control protocol
 * and the JSON statistics spell them, and their parsers.  One table per enum, indexed
 * by value, so a name and its value cannot drift apart.
 *
 * tc_repl_ops_get() lives here too: the replacement table maps enum tc_replacement to
 * both its name and its ops table (policy.h), the one place that picks a backend.
 *
 * All functions are pure (read-only tables) and thread-safe.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "tiercache.h"
#include "tiercache-test.h"
#include "policy.h"

static const char *const write_policy_names[] = {
	[TC_WP_WT] = "wt",
	[TC_WP_WB] = "wb",
	[TC_WP_WA] = "wa",
	[TC_WP_PT] = "pt",
	[TC_WP_INSTWB] = "instwb",
};

static const char *const flush_rate_names[] = {
	[TC_FLUSH_LOW] = "low",
	[TC_FLUSH_MEDIUM] = "medium",
	[TC_FLUSH_HIGH] = "high",
};

static const char *const admission_names[] = {
	[TC_ADMIT_ALWAYS] = "always",
	[TC_ADMIT_NHIT] = "nhit",
};

static const char *const fill_names[] = {
	[TC_FILL_SECTORS] = "sectors",
	[TC_FILL_LINE] = "line",
};

static const char *const prio_names[] = {
	[TC_PRIO_NORMAL] = "normal",
	[TC_PRIO_HIGH] = "high",
	[TC_PRIO_BULK] = "low",
};

static const struct {
	const char *name;
	const struct tc_repl_ops *ops;
} replacements[] = {
	[TC_REPL_LRU] = { "lru", &tc_repl_lru },
	[TC_REPL_S3FIFO] = { "s3fifo", &tc_repl_s3fifo },
	[TC_REPL_ARC] = { "arc", &tc_repl_arc },
	[TC_REPL_2Q] = { "2q", &tc_repl_2q },
	[TC_REPL_SIEVE] = { "sieve", &tc_repl_sieve },
	[TC_REPL_WTINYLFU] = { "wtinylfu", &tc_repl_wtinylfu },
	[TC_REPL_LIRS] = { "lirs", &tc_repl_lirs },
	[TC_REPL_WTINYLFU_HC] = { "wtinylfu-hc", &tc_repl_wtinylfu_hc },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* name_parse - index of @s in @names[0..n), or -EINVAL (also for NULL). */
static int name_parse(const char *const *names, size_t n, const char *s)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], s) == 0)
			return (int)i;
	return -EINVAL;
}

/* tc_write_policy_name - "wt", "wb", "wa", "pt", "instwb" for enum tc_write_policy @wp;
 * "unknown" when out of range.  Returns a static string. */
const char *tc_write_policy_name(unsigned wp)
{
	return wp < ARRAY_SIZE(write_policy_names) ? write_policy_names[wp] : "unknown";
}

bool tc_write_policy_is_wb(unsigned wp)
{
	return wp == TC_WP_WB || wp == TC_WP_INSTWB;
}

/* tc_write_policy_parse - the enum tc_write_policy value named @s (exact, lower case),
 * or -EINVAL. */
int tc_write_policy_parse(const char *s)
{
	return name_parse(write_policy_names, ARRAY_SIZE(write_policy_names), s);
}

/* tc_flush_rate_name - "low", "medium", "high"; "unknown" when out of range. */
const char *tc_flush_rate_name(unsigned r)
{
	return r < ARRAY_SIZE(flush_rate_names) ? flush_rate_names[r] : "unknown";
}

/* tc_flush_rate_parse - the enum tc_flush_rate value named @s, or -EINVAL. */
int tc_flush_rate_parse(const char *s)
{
	return name_parse(flush_rate_names, ARRAY_SIZE(flush_rate_names), s);
}

/* tc_replacement_name - "lru", "s3fifo", "arc", "2q", "sieve", "wtinylfu", "lirs", "wtinylfu-hc"; "unknown" when out of range. */
const char *tc_replacement_name(unsigned r)
{
	return r < ARRAY_SIZE(replacements) ? replacements[r].name : "unknown";
}

/* tc_replacement_parse - the enum tc_replacement value named @s, or -EINVAL. */
int tc_replacement_parse(const char *s)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(replacements); i++)
		if (strcmp(replacements[i].name, s) == 0)
			return (int)i;
	return -EINVAL;
}

/* tc_admission_name - "always", "nhit" for enum tc_admission; "unknown" when out of
 * range. */
const char *tc_admission_name(unsigned a)
{
	return a < ARRAY_SIZE(admission_names) ? admission_names[a] : "unknown";
}

/* tc_admission_parse - the enum tc_admission value named @s, or -EINVAL. */
int tc_admission_parse(const char *s)
{
	return name_parse(admission_names, ARRAY_SIZE(admission_names), s);
}

/* tc_fill_name - "sectors", "line" for enum tc_fill; "unknown" when out of range. */
const char *tc_fill_name(unsigned f)
{
	return f < ARRAY_SIZE(fill_names) ? fill_names[f] : "unknown";
}

/* tc_fill_parse - the enum tc_fill value named @s, or -EINVAL. */
int tc_fill_parse(const char *s)
{
	return name_parse(fill_names, ARRAY_SIZE(fill_names), s);
}

/* tc_prio_name - "normal", "high", "low" (TC_PRIO_BULK) for enum tc_prio; "unknown"
 * when out of range. */
const char *tc_prio_name(unsigned p)
{
	return p < ARRAY_SIZE(prio_names) ? prio_names[p] : "unknown";
}

/* tc_prio_parse - the enum tc_prio value named @s, or -EINVAL. */
int tc_prio_parse(const char *s)
{
	return name_parse(prio_names, ARRAY_SIZE(prio_names), s);
}

bool tc_volume_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n >= TC_NAME_MAX)
		return false;
	if (!strcmp(name, ".") || !strcmp(name, "..") || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

/* tc_repl_ops_get - the ops table of enum tc_replacement @id, or NULL if out of range. */
const struct tc_repl_ops *tc_repl_ops_get(unsigned id)
{
	return id < ARRAY_SIZE(replacements) ? replacements[id].ops : NULL;
}

static const char *const fault_op_names[] = {
	[TC_FAULT_READ] = "read",
	[TC_FAULT_WRITE] = "write",
	[TC_FAULT_FLUSH] = "flush",
	[TC_FAULT_ALL] = "all",
};

/* tc_fault_op_name - "read", "write", "flush", "all"; "unknown" when out of range. */
const char *tc_fault_op_name(unsigned op)
{
	return op < ARRAY_SIZE(fault_op_names) ? fault_op_names[op] : "unknown";
}

/* tc_fault_op_parse - the enum tc_fault_op value named @s, or -EINVAL. */
int tc_fault_op_parse(const char *s)
{
	return name_parse(fault_op_names, ARRAY_SIZE(fault_op_names), s);
}

/* The errnos a failing device plausibly returns, by name. */
static const struct {
	const char *name;
	int value;
} errno_names[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "ENODEV", ENODEV }, { "ENXIO", ENXIO },
	{ "ETIMEDOUT", ETIMEDOUT }, { "EROFS", EROFS }, { "EBUSY", EBUSY },
	{ "ENOMEM", ENOMEM }, { "EAGAIN", EAGAIN }, { "EREMOTEIO", EREMOTEIO },
	{ "EPERM", EPERM }, { "EINVAL", EINVAL }, { "EILSEQ", EILSEQ },
	{ "ECANCELED", ECANCELED }, { "EOVERFLOW", EOVERFLOW }, { "ENOTSUP", ENOTSUP },
};

int tc_errno_parse(const char *s)
{
	if (!s || !*s)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++)
		if (strcasecmp(errno_names[i].name, s) == 0)
			return errno_names[i].value;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v < 1 || v > 4095)
		return -EINVAL;
	return (int)v;
}

const char *tc_errno_name(int err)
{
	for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++)
		if (errno_names[i].value == err)
			return errno_names[i].name;
	return NULL;
}

int tc_size_parse(const char *s, uint64_t *out)
{
	if (!s || !*s || *s < '0' || *s > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'b' || end[1] == 'B'))
		end += 2;
	else if (shift && (end[0] == 'b' || end[0] == 'B'))
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

const char *tc_size_format(uint64_t b, char *buf, size_t len)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	unsigned i = 0;
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, u[i]);
	return buf;
}
