/* SPDX-License-Identifier: MIT */
/*
 * spec.c - device specs as the command line writes them: "PATH", "crash:PATH",
 * "emu:PROFILE:PATH", "nbd:URI".  One parser, so the server, the offline commands and the
 * benchmarks name devices the same way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"
#include "tiercache-test.h"

const char *tc_dev_spec_path(const char *spec)
{
	if (!strncmp(spec, "crash:", 6))
		return spec + 6;
	if (!strncmp(spec, "emu:", 4)) {
		const char *colon = strchr(spec + 4, ':');
		return colon ? colon + 1 : spec;
	}
	if (!strncmp(spec, "nbd:", 4))
		return NULL;
	return spec;
}

int tc_dev_open_spec(tc_ctx *ctx, const char *spec, unsigned flags, uint64_t size,
		     uint64_t seed, tc_dev **out)
{
	*out = NULL;
	if (!spec || !*spec) {
		tc_err(ctx, "device spec is empty");
		return -EINVAL;
	}
	if (!strncmp(spec, "crash:", 6)) {
		if (!spec[6]) {
			tc_err(ctx, "device spec \"%s\": no path after \"crash:\"", spec);
			return -EINVAL;
		}
		return tc_dev_new_crash(ctx, spec + 6, flags, size, seed, out);
	}
	if (!strncmp(spec, "emu:", 4)) {
		const char *colon = strchr(spec + 4, ':');
		if (!colon || colon == spec + 4 || !colon[1]) {
			tc_err(ctx, "device spec \"%s\": expected emu:PROFILE:PATH", spec);
			return -EINVAL;
		}
		char *profile = strndup(spec + 4, (size_t)(colon - spec - 4));
		if (!profile)
			return -ENOMEM;
		int r = tc_dev_new_emu(ctx, profile, colon + 1, flags, size, out);
		free(profile);
		return r;
	}
	if (!strncmp(spec, "nbd:", 4)) {
		if (!spec[4]) {
			tc_err(ctx, "device spec \"%s\": no URI after \"nbd:\"", spec);
			return -EINVAL;
		}
		return tc_dev_open_nbd(ctx, spec + 4, flags, out);
	}
	return tc_dev_open_file(ctx, spec, flags, size, out);
}
