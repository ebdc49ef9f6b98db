/* SPDX-License-Identifier: MIT */
/*
 * spec.c - device specs as the command line writes them: "PATH", "crash:PATH",
 * "emu:PROFILE:PATH", "nbd:URI", "rbd:POOL/IMAGE[@CONF]", "array:MEMBER,MEMBER,..." (an array assembled from
 * its members' superblocks, each MEMBER a spec of the other kinds, or an array spec in
 * brackets: the legs of a RAID 50 / 60).  One parser, so the server, the offline commands and the
 * benchmarks name devices the same way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"
#include "tiercache-test.h"

int tc_array_spec_member(const char *list, unsigned i, char *buf, size_t len)
{
	const char *p = list;
	for (unsigned k = 0;; k++) {
		if (!*p)
			return -ENOENT;
		/* This member: up to the next comma outside brackets. */
		const char *q = p;
		int depth = 0;
		for (; *q && (depth || *q != ','); q++) {
			depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
			if (depth < 0)
				return -EINVAL;
		}
		/* Unpaired brackets, an empty member, a list that ends in a comma. */
		if (depth || q == p || (*q == ',' && !q[1]))
			return -EINVAL;
		if (k == i) {
			bool nested = *p == '[';
			if (nested && q[-1] != ']')
				return -EINVAL;
			size_t n = (size_t)(q - p) - (nested ? 2 : 0);
			if (nested && !n)
				return -EINVAL;
			if (n >= len)
				return -ENAMETOOLONG;
			memcpy(buf, p + nested, n);
			buf[n] = 0;
			return nested;
		}
		p = *q ? q + 1 : q;
	}
}

const char *tc_dev_spec_path(const char *spec)
{
	if (!strncmp(spec, "crash:", 6))
		return spec + 6;
	if (!strncmp(spec, "emu:", 4)) {
		const char *colon = strchr(spec + 4, ':');
		return colon ? colon + 1 : spec;
	}
	if (!strncmp(spec, "nbd:", 4) || !strncmp(spec, "rbd:", 4) ||
	    !strncmp(spec, "array:", 6))
		return NULL;
	return spec;
}

/* "array:M1,M2,...": open every member (@flags less the array's own), then assemble. */
static int open_array_spec(tc_ctx *ctx, const char *spec, unsigned flags, uint64_t seed,
			   tc_dev **out)
{
	tc_dev *devs[2 * TC_ARRAY_MAX_MEMBERS];
	unsigned n = 0;
	int r = 0, missing = 0;
	char *m = malloc(strlen(spec) + 1);

	if (!m)
		return -ENOMEM;
	for (unsigned i = 0;; i++) {
		int kind = tc_array_spec_member(spec + 6, i, m, strlen(spec) + 1);
		if (kind == -ENOENT)
			break;
		if (kind < 0) {
			tc_err(ctx, "device spec \"%s\": %s", spec, kind == -EINVAL ?
			       "an empty member, or brackets that do not pair" :
			       "a member too long");
			r = -EINVAL;
			break;
		}
		if (n == 2 * TC_ARRAY_MAX_MEMBERS) {
			tc_err(ctx, "device spec \"%s\": more than %u members and spares", spec,
			       2 * TC_ARRAY_MAX_MEMBERS);
			r = -EINVAL;
			break;
		}
		/* A leg of a RAID 50 / 60 is an array spec of its own, in brackets: a bare
		 * one would take the rest of the list as its members.  One level: a leg's
		 * members are devices. */
		if ((kind == 0) == !strncmp(m, "array:", 6) || (kind == 1 && strchr(m, '['))) {
			tc_err(ctx, "device spec \"%s\": \"%s\": %s", spec, m, kind == 0 ?
			       "a member that is an array goes in brackets: "
			       "array:[array:A,B,C],[array:D,E,F]" : strchr(m, '[') ?
			       "a leg's members are devices, not arrays (one level of brackets)" :
			       "only an array spec goes in brackets");
			r = -EINVAL;
			break;
		}
		r = tc_dev_open_spec(ctx, m, flags & ~(TC_DEV_CREATE | TC_DEV_ARRAY_FORCE), 0,
				     seed, &devs[n]);
		if (r == -ENOENT || r == -ENXIO || r == -ENODEV || r == -EIO) {
			/* A member that is gone: the array decides whether it can do without. */
			tc_warn(ctx, "array member %s cannot be used (%s): assembling without it",
				m, strerror(-r));
			missing = r;
			r = 0;
			continue;
		}
		if (r)
			break;
		n++;
	}
	free(m);
	if (!r && !n) {
		if (missing)
			return missing;
		tc_err(ctx, "device spec \"%s\": no member after \"array:\"", spec);
		r = -EINVAL;
	}
	if (r) {
		for (unsigned i = 0; i < n; i++)
			tc_dev_close(devs[i]);
		return r;
	}
	unsigned aflags = (flags & TC_DEV_READONLY ? TC_ARRAY_READONLY : 0) |
		(flags & TC_DEV_ARRAY_FORCE ? TC_ARRAY_FORCE : 0);
	return tc_array_assemble(ctx, devs, n, aflags, out);
}

int tc_dev_spec_parse(tc_ctx *ctx, const char *spec, struct tc_dev_spec *out)
{
	memset(out, 0, sizeof(*out));
	if (!spec || !*spec) {
		tc_err(ctx, "device spec is empty");
		return -EINVAL;
	}
	out->kind = TC_SPEC_FILE;
	out->target = spec;
	if (!strncmp(spec, "crash:", 6)) {
		if (!spec[6]) {
			tc_err(ctx, "device spec \"%s\": no path after \"crash:\"", spec);
			return -EINVAL;
		}
		out->kind = TC_SPEC_CRASH;
		out->target = spec + 6;
	} else if (!strncmp(spec, "emu:", 4)) {
		const char *colon = strchr(spec + 4, ':');
		if (!colon || colon == spec + 4 || !colon[1]) {
			tc_err(ctx, "device spec \"%s\": expected emu:PROFILE:PATH", spec);
			return -EINVAL;
		}
		out->kind = TC_SPEC_EMU;
		out->profile = spec + 4;
		out->profile_len = (size_t)(colon - spec - 4);
		out->target = colon + 1;
	} else if (!strncmp(spec, "nbd:", 4)) {
		if (!spec[4]) {
			tc_err(ctx, "device spec \"%s\": no URI after \"nbd:\"", spec);
			return -EINVAL;
		}
		out->kind = TC_SPEC_NBD;
		out->target = spec + 4;
	} else if (!strncmp(spec, "rbd:", 4)) {
		if (!spec[4]) {
			tc_err(ctx, "device spec \"%s\": expected rbd:POOL/IMAGE[@CONF]", spec);
			return -EINVAL;
		}
		out->kind = TC_SPEC_RBD;
		out->target = spec + 4;
	} else if (!strncmp(spec, "array:", 6)) {
		if (!spec[6]) {
			tc_err(ctx, "device spec \"%s\": no member after \"array:\"", spec);
			return -EINVAL;
		}
		out->kind = TC_SPEC_ARRAY;
		out->target = spec + 6;
	}
	return 0;
}

int tc_dev_open_spec(tc_ctx *ctx, const char *spec, unsigned flags, uint64_t size,
		     uint64_t seed, tc_dev **out)
{
	struct tc_dev_spec ps;
	*out = NULL;
	int r = tc_dev_spec_parse(ctx, spec, &ps);
	if (r)
		return r;
	switch (ps.kind) {
	case TC_SPEC_CRASH:
		return tc_dev_new_crash(ctx, ps.target, flags, size, seed, out);
	case TC_SPEC_EMU: {
		char *profile = strndup(ps.profile, ps.profile_len);
		if (!profile)
			return -ENOMEM;
		r = tc_dev_new_emu(ctx, profile, ps.target, flags, size, out);
		free(profile);
		return r;
	}
	case TC_SPEC_NBD:
		return tc_dev_open_nbd(ctx, ps.target, flags, out);
	case TC_SPEC_RBD:
		return tc_dev_open_rbd(ctx, ps.target, flags, out);
	case TC_SPEC_ARRAY:
		return open_array_spec(ctx, spec, flags, seed, out);
	case TC_SPEC_FILE:
		break;
	}
	return tc_dev_open_file(ctx, ps.target, flags, size, out);
}
