/* SPDX-License-Identifier: MIT */
/*
 * rig.c - the array rig of the protected write-back benchmarks (rig.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BENCH_NAME "tc-bench"
#include "bench_common.h"
#include "rig.h"

void rig_init(struct rig *r, const char *tmpdir, const char *name,
	      enum tc_log_level log_level)
{
	if (!r->ssd_profile)
		r->ssd_profile = "sata-ssd";
	snprintf(r->dir, sizeof(r->dir), "%s/%s-XXXXXX", tmpdir, name);
	if (!mkdtemp(r->dir))
		die("make the temporary folder", errno);
	struct tc_ctx_opts co = { .mode = TC_CTX_THREADED, .log_level = log_level };
	CHECK(tc_ctx_new(&co, &r->ctx), "make the context");
	tc_ctx_set_log(r->ctx, log_sink, NULL, log_level);
}

tc_dev *rig_array(struct rig *r, const char *profile, const char *what, unsigned n,
		  enum tc_raid_level_id level, uint64_t member_size)
{
	tc_dev *m[RIG_HDDS], *a;
	char path[320];
	if (n > RIG_HDDS)
		die("too many members", EINVAL);
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s%u.img", r->dir, what, i);
		CHECK(tc_dev_new_emu(r->ctx, profile, path, TC_DEV_CREATE, member_size, &m[i]),
		      "open an emulated member");
	}
	struct tc_array_opts o = { .level = level };
	CHECK(tc_dev_new_array(r->ctx, &o, m, n, &a), "make the array");
	return a;
}

void rig_open(struct rig *r, uint64_t hdd_member, uint64_t ssd_member,
	      const struct tc_volume_settings *s)
{
	r->hdd = rig_array(r, "hdd", "hdd", RIG_HDDS, TC_RAID6, hdd_member);
	r->ssd = NULL;
	r->cache = NULL;
	r->vol = NULL;
	if (!s)
		return;
	r->ssd = rig_array(r, r->ssd_profile, "ssd", RIG_SSDS, TC_RAID1, ssd_member);
	CHECK(tc_cache_format(r->ctx, r->ssd, NULL), "format the cache");
	CHECK(tc_backing_format(r->ctx, r->hdd, "bench", s), "format the backing");
	CHECK(tc_cache_open(r->ctx, r->ssd, &r->cache), "open the cache");
	CHECK(tc_cache_attach(r->cache, r->hdd, NULL, 0, &r->vol), "attach");
}

void rig_close(struct rig *r)
{
	char path[320];
	if (r->cache)
		tc_cache_close(r->cache);
	if (r->ssd)
		tc_dev_close(r->ssd);
	tc_dev_close(r->hdd);
	r->cache = NULL;
	r->ssd = r->hdd = NULL;
	r->vol = NULL;
	for (unsigned i = 0; i < RIG_HDDS; i++) {
		snprintf(path, sizeof(path), "%s/hdd%u.img", r->dir, i);
		unlink(path);
	}
	for (unsigned i = 0; i < RIG_SSDS; i++) {
		snprintf(path, sizeof(path), "%s/ssd%u.img", r->dir, i);
		unlink(path);
	}
}

void rig_free(struct rig *r)
{
	rmdir(r->dir);
	tc_ctx_free(r->ctx);
}
