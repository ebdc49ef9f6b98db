/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cache_sb.c - the cache superblock decoder (tc_fmt_cache_sb_decode, format.c).
 * The input is the start of one superblock copy (zero-padded to TC_CACHE_SB_SIZE).  The
 * target is FUZZ_FMT_SB_TARGET (fuzz.h): decoded as it comes and with its checksum
 * made right; a refusal says why, what is accepted encodes and decodes again the same.
 */
#include <endian.h>
#include <string.h>
#include <xxhash.h>

#include "format.h"
#include "fuzz.h"

FUZZ_FMT_SB_TARGET(struct tc_cache_sb, TC_CACHE_SB_SIZE, tc_fmt_cache_sb_decode,
		   tc_fmt_cache_sb_encode)
