/* SPDX-License-Identifier: MIT */
/*
 * fuzz_profile.c - the emulated device profile parser (tc_emu_profile_parse,
 * src/dev/emu.c: the INI files of profiles/ through inih, every key's range, the
 * checks across keys).  The input is a profile's text, read from memory (fmemopen).
 * Properties: no crash, a result of 0 or -EINVAL only, the same result twice.
 */
#include <errno.h>
#include <string.h>

#include "dev.h"
#include "fuzz.h"

static int parse(const uint8_t *data, size_t size)
{
	/* fmemopen of zero bytes fails: an empty profile is a one-byte buffer at EOF. */
	static const uint8_t none[1];
	FILE *f = fmemopen((void *)(size ? data : none), size ? size : 1, "r");
	if (!f)
		abort();
	if (!size)
		fgetc(f);
	int r = tc_emu_profile_parse(fuzz_ctx(), f, "fuzz.conf");
	fclose(f);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int r = parse(data, size);
	fuzz_require(r == 0 || r == -EINVAL);
	fuzz_require(parse(data, size) == r);
	return 0;
}
