/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cache_open.c - loading a whole cache for inspection: tc_cache_inspect() (what
 * `check` runs) and tc_cache_open_readonly() with tc_cache_volumes() (what offline
 * `status` runs), on a 1 MiB memory device holding the input: its first 8 KiB are
 * superblock copy 0, the rest the metadata area at TC_MD_OFFSET (block i, copy c at
 * (2i + c) * 4 KiB).  A structure whose stored checksum is zero gets the right one, so
 * the fuzzer reaches the checks behind it; any other checksum is left alone (damage).
 * Properties: the device is byte-identical afterwards (the read-only path writes
 * nothing even when the device would take it), every count is within the cache's
 * geometry, and inspection and the read-only open agree on the volumes.
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

#include "format.h"
#include "fuzz.h"

#define DEV_SIZE (1u << 20)

static void fix_checksum(uint8_t *p, size_t size)
{
	uint64_t stored;
	memcpy(&stored, p + size - 8, 8);
	if (stored)
		return;
	uint64_t sum = htole64(XXH64(p, size - 8, 0));
	memcpy(p + size - 8, &sum, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t img[DEV_SIZE], after[DEV_SIZE];
	static struct tc_cache_report rep;
	static struct tc_inspect_volume iv[TC_MAX_VOLUMES];
	tc_ctx *ctx = fuzz_ctx();
	tc_dev *dev;

	memset(img, 0, sizeof(img));
	size_t sb = size < TC_CACHE_SB_SIZE ? size : TC_CACHE_SB_SIZE;
	memcpy(img, data, sb);
	fix_checksum(img, TC_CACHE_SB_SIZE);
	size_t md = size - sb;
	if (md > DEV_SIZE - TC_MD_OFFSET)
		md = DEV_SIZE - TC_MD_OFFSET;
	memcpy(img + TC_MD_OFFSET, data + sb, md);
	for (size_t off = 0; off < md; off += TC_MD_BLOCK_SIZE)
		fix_checksum(img + TC_MD_OFFSET + off, TC_MD_BLOCK_SIZE);

	if (tc_dev_new_memory(ctx, DEV_SIZE, &dev))
		abort();
	if (tc_dev_pwrite(dev, img, DEV_SIZE, 0, 0))
		abort();

	int ri = tc_cache_inspect(ctx, dev, &rep);
	if (!ri || ri == -EUCLEAN) {
		fuzz_require(rep.sb_copies_ok <= 2);
		fuzz_require(rep.nvolumes <= TC_INSPECT_MAX_VOLUMES);
		fuzz_require(rep.lines_dirty <= rep.lines_used);
		fuzz_require(rep.lines_used <= rep.probe.lines);
		fuzz_require(rep.md_blocks_lost <= rep.md_blocks);
	}
	tc_cache *c;
	int ro = tc_cache_open_readonly(ctx, dev, &c);
	if (!ro) {
		fuzz_require(tc_cache_is_readonly(c));
		unsigned n = tc_cache_volumes(c, iv, TC_MAX_VOLUMES);
		fuzz_require(n <= TC_MAX_VOLUMES);
		if (!ri)
			fuzz_require(n == rep.nvolumes || rep.nvolumes == TC_INSPECT_MAX_VOLUMES);
		for (unsigned i = 0; i < n; i++) {
			fuzz_require(!iv[i].online);
			fuzz_require(iv[i].dirty_bytes <= iv[i].cached_bytes);
			fuzz_require(iv[i].cached_bytes <= (uint64_t)rep.probe.lines *
				     rep.probe.line_size);
		}
		fuzz_require(tc_cache_close(c) == 0);
	}
	if (tc_dev_pread(dev, after, DEV_SIZE, 0))
		abort();
	fuzz_require(!memcmp(img, after, DEV_SIZE));
	tc_dev_close(dev);
	return 0;
}
