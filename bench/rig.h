/* SPDX-License-Identifier: MIT */
/*
 * rig.h - the array rig of the protected write-back benchmarks (tc-bench-instwb,
 * tc-bench-degrade, tc-bench-scenario): a RAID 6 of 6 emulated HDDs (profiles/hdd.conf,
 * the array's default chunk of 256 KiB, full stripes of 1 MiB) as the backing, and a
 * RAID 1 of 2 emulated SSDs (a protected cache pool) as the cache, over sparse member
 * files in a temporary folder; each round builds them afresh and removes the files.
 */
#ifndef TC_BENCH_RIG_H
#define TC_BENCH_RIG_H

#include <stdint.h>
#include "tiercache.h"

#define RIG_HDDS 6u
#define RIG_SSDS 2u

struct rig {
	tc_ctx *ctx;
	char dir[256];            /* the temporary folder */
	const char *ssd_profile;  /* emulated cache members; default "sata-ssd" */
	tc_dev *hdd;              /* the RAID 6 backing */
	tc_dev *ssd;              /* the RAID 1 cache pool, NULL when uncached */
	tc_cache *cache;
	tc_volume *vol;           /* NULL when uncached: use hdd at TC_BACKING_DATA_OFFSET */
};

/* rig_init - a threaded context logging at @log_level to stderr, and the temporary
 * folder "@tmpdir/@name-XXXXXX".  Exits on failure (bench_common.h's die). */
void rig_init(struct rig *r, const char *tmpdir, const char *name,
	      enum tc_log_level log_level);

/* rig_array - @n emulated @profile members of @member_size bytes each (files
 * "@what<i>.img" in the folder), made into a fresh array of @level. */
tc_dev *rig_array(struct rig *r, const char *profile, const char *what, unsigned n,
		  enum tc_raid_level_id level, uint64_t member_size);

/* rig_open - build one round: the backing (HDD members of @hdd_member bytes) and, when
 * @s is not NULL, the cache pool (SSD members of @ssd_member bytes) formatted with
 * default cache options, the backing formatted with the settings @s, attached. */
void rig_open(struct rig *r, uint64_t hdd_member, uint64_t ssd_member,
	      const struct tc_volume_settings *s);

/* rig_close - close what rig_open built (dirty data is left in the cache and
 * discarded with its files) and remove the member files. */
void rig_close(struct rig *r);

/* rig_free - remove the folder, free the context. */
void rig_free(struct rig *r);

#endif /* TC_BENCH_RIG_H */
