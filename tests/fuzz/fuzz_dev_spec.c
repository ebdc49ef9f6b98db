/* SPDX-License-Identifier: MIT */
/*
 * fuzz_dev_spec.c - the device-spec parser (tc_dev_spec_parse and tc_dev_spec_path,
 * src/dev/spec.c): "PATH", "crash:PATH", "emu:PROFILE:PATH", "nbd:URI", and the
 * member list of "array:..." (tc_array_spec_member, brackets around legs).  Nothing is
 * opened.  The input up to its first NUL is the spec.  Properties: the parts point
 * into the spec, a prefix's target is never empty, the emu profile has no ':', and the
 * path tc_dev_spec_path() gives (what the host stats and locks) is the parsed target
 * (none for nbd:).
 */
#include <errno.h>
#include <string.h>

#include "dev.h"
#include "fuzz.h"
#include "tiercache-test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec = malloc(size + 1);
	if (!spec)
		abort();
	memcpy(spec, data, size);
	spec[size] = 0;
	size_t len = strlen(spec);
	struct tc_dev_spec ps;
	int r = tc_dev_spec_parse(fuzz_ctx(), spec, &ps);
	if (r) {
		fuzz_require(r == -EINVAL);
		free(spec);
		return 0;
	}
	fuzz_require(len > 0);
	fuzz_require(ps.target >= spec && ps.target <= spec + len);
	const char *path = tc_dev_spec_path(spec);
	switch (ps.kind) {
	case TC_SPEC_FILE:
		fuzz_require(ps.target == spec && path == spec);
		break;
	case TC_SPEC_CRASH:
		fuzz_require(ps.target == spec + 6 && *ps.target && path == ps.target);
		break;
	case TC_SPEC_EMU:
		fuzz_require(ps.profile == spec + 4 && ps.profile_len > 0);
		fuzz_require(!memchr(ps.profile, ':', ps.profile_len));
		fuzz_require(ps.target == ps.profile + ps.profile_len + 1 && *ps.target);
		fuzz_require(path == ps.target);
		break;
	case TC_SPEC_NBD:
		fuzz_require(ps.target == spec + 4 && *ps.target && !path);
		break;
	case TC_SPEC_ARRAY: {
		fuzz_require(ps.target == spec + 6 && *ps.target && !path);
		/* The member list: every member fits in the list, is not empty, and a
		 * bracketed one had its brackets removed (so it is two shorter). */
		char *m = malloc(len + 1);
		if (!m)
			abort();
		size_t total = 0;
		for (unsigned i = 0; i <= len; i++) {
			int k = tc_array_spec_member(ps.target, i, m, len + 1);
			if (k == -ENOENT || k == -EINVAL)
				break;
			fuzz_require(k == 0 || k == 1);
			fuzz_require(*m && strlen(m) + 2u * (unsigned)k <= len);
			total += strlen(m) + 2u * (unsigned)k + 1;
			fuzz_require(total <= len - 6 + 1);
		}
		free(m);
		break;
	}
	default:
		fuzz_require(!"unknown spec kind");
	}
	free(spec);
	return 0;
}
