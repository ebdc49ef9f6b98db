/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the fuzz targets (tests/fuzz/fuzz_NAME.c) share.  Each target defines
 * LLVMFuzzerTestOneInput() (and, if it needs set-up, LLVMFuzzerInitialize()); it is
 * linked with libFuzzer by `make fuzz` (clang -fsanitize=fuzzer) and with replay.c for
 * the corpus replay of `make check`.  A target aborts (fuzz_require) when a property
 * of the code under test fails, so the fuzzer reports it as a crash.
 */
#ifndef TC_FUZZ_H
#define TC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tiercache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* fuzz_require - abort with the condition's text when @cond is false. */
#define fuzz_require(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

/* A log sink that drops everything: refusals are expected, thousands a second. */
static inline void fuzz_log_drop(void *opaque, enum tc_log_level level, const char *msg)
{
	(void)opaque;
	(void)level;
	(void)msg;
}

/* fuzz_ctx - one deterministic context for the whole run, its log dropped (set
 * TC_FUZZ_LOG=1 to see the messages). */
static inline tc_ctx *fuzz_ctx(void)
{
	static tc_ctx *ctx;
	if (!ctx) {
		struct tc_ctx_opts o = { .mode = TC_CTX_DETERMINISTIC };
		if (tc_ctx_new(&o, &ctx))
			abort();
		if (!getenv("TC_FUZZ_LOG"))
			tc_ctx_set_log(ctx, fuzz_log_drop, NULL, TC_LOG_ERROR);
	}
	return ctx;
}

/*
 * FUZZ_FMT_SB_TARGET - the whole target for one format.c superblock decoder: TYPE the
 * decoded struct, SIZE the bytes of one copy, DECODE / ENCODE its codec (format.h).
 * The input is the start of one copy (zero-padded to SIZE).  It is decoded as it is,
 * then once more with its checksum (XXH64 of all but the last 8 bytes) made right, so
 * the fuzzer gets past the checksum to every field check.  Properties: a refusal says
 * why, and the same with or without a message buffer; what is accepted encodes and
 * decodes again to the same superblock.  Needs <string.h>, <endian.h>, <xxhash.h>.
 */
#define FUZZ_FMT_SB_TARGET(TYPE, SIZE, DECODE, ENCODE) \
static void decode_one(const uint8_t *buf) \
{ \
	static TYPE a, b; \
	static uint8_t again[SIZE]; \
	char why[256]; \
 \
	memset(&a, 0, sizeof(a)); \
	memset(why, 0, sizeof(why)); \
	enum tc_fmt_status st = DECODE(buf, &a, why, sizeof(why)); \
	fuzz_require(DECODE(buf, &b, NULL, 0) == st); \
	if (st != TC_FMT_OK) { \
		fuzz_require(why[0] && memchr(why, 0, sizeof(why))); \
		return; \
	} \
	ENCODE(&a, again); \
	memset(&b, 0, sizeof(b)); \
	fuzz_require(DECODE(again, &b, why, sizeof(why)) == TC_FMT_OK); \
	fuzz_require(!memcmp(&a, &b, sizeof(a))); \
} \
 \
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) \
{ \
	static uint8_t buf[SIZE]; \
 \
	memset(buf, 0, sizeof(buf)); \
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf)); \
	decode_one(buf); \
	uint64_t sum = htole64(XXH64(buf, sizeof(buf) - 8, 0)); \
	memcpy(buf + sizeof(buf) - 8, &sum, 8); \
	decode_one(buf); \
	return 0; \
}

#endif
