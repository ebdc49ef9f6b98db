/* SPDX-License-Identifier: MIT */
/*
 * test_dev_limits.c - device limits and health as data (dev.c): the defaults every
 * backend starts from, the normalisation of a backend's limits, the watch list
 * (duplicates refused, removal, delivery order, redundancy already updated when a
 * watcher runs, no call after unwatch), a fault layer that reports its inner
 * device's limits and passes its health events up, and the engine reading them: a
 * volume's backing stripe from its backing's limits, and a cache whose device reports
 * it failed putting its volumes into pass-through at once.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dev.h"
#include "tiercache-test.h"

#define DEV_SIZE (1u << 20)

struct seen {
	unsigned n;
	enum tc_dev_event ev[8];
	uint8_t redundancy[8];   /* as tc_dev_limits() showed it inside the watcher */
	tc_dev *dev[8];
};

static void watcher(void *opaque, tc_dev *dev, enum tc_dev_event ev)
{
	struct seen *s = opaque;
	struct tc_dev_limits l;

	tc_dev_limits(dev, &l);
	if (s->n < 8) {
		s->ev[s->n] = ev;
		s->redundancy[s->n] = l.redundancy;
		s->dev[s->n] = dev;
	}
	s->n++;
}

static tc_ctx *new_ctx(void)
{
	struct tc_ctx_opts opts = { .mode = TC_CTX_DETERMINISTIC, .seed = 1,
				    .log_level = TC_LOG_ERROR };
	tc_ctx *ctx;

	assert_int_equal(tc_ctx_new(&opts, &ctx), 0);
	return ctx;
}

static void test_defaults_and_normalisation(void **state)
{
	tc_ctx *ctx = new_ctx();
	tc_dev *dev;
	struct tc_dev_limits l;

	assert_int_equal(tc_dev_new_memory(ctx, DEV_SIZE, &dev), 0);
	tc_dev_limits(dev, &l);
	assert_int_equal(l.io_min, TC_SECTOR_SIZE);
	assert_int_equal(l.io_opt, 0);
	assert_false(l.partial_stripe_expensive);
	assert_int_equal(l.redundancy, 0);

	/* A RAID 6 of six members with 256 KiB chunks, as an array backend states it. */
	struct tc_dev_limits raid = { .io_min = 256 << 10, .io_opt = 4 * (256 << 10),
				      .partial_stripe_expensive = true, .redundancy = 2 };
	tc_dev_set_limits(dev, &raid);
	tc_dev_limits(dev, &l);
	assert_int_equal(l.io_min, raid.io_min);
	assert_int_equal(l.io_opt, raid.io_opt);
	assert_true(l.partial_stripe_expensive);
	assert_int_equal(l.redundancy, 2);

	/* io_min below the logical block size is raised; an io_opt that is not a multiple
	 * of io_min is dropped. */
	struct tc_dev_limits odd = { .io_min = 100, .io_opt = 3000 };
	tc_dev_set_limits(dev, &odd);
	tc_dev_limits(dev, &l);
	assert_int_equal(l.io_min, TC_SECTOR_SIZE);
	assert_int_equal(l.io_opt, 0);
	tc_dev_close(dev);
	tc_ctx_free(ctx);
}

static void test_watch(void **state)
{
	tc_ctx *ctx = new_ctx();
	tc_dev *dev;
	struct seen a = { 0 }, b = { 0 };

	assert_int_equal(tc_dev_new_memory(ctx, DEV_SIZE, &dev), 0);
	assert_int_equal(tc_dev_watch(dev, watcher, &a), 0);
	assert_int_equal(tc_dev_watch(dev, watcher, &a), -EEXIST);
	assert_int_equal(tc_dev_watch(dev, watcher, &b), 0);

	tc_dev_event(dev, TC_DEV_DEGRADED, 1);
	tc_dev_event(dev, TC_DEV_REDUNDANT, 2);
	assert_int_equal(a.n, 2);
	assert_int_equal(b.n, 2);
	assert_int_equal(a.ev[0], TC_DEV_DEGRADED);
	assert_int_equal(a.redundancy[0], 1);   /* the limits changed before the call */
	assert_int_equal(a.ev[1], TC_DEV_REDUNDANT);
	assert_int_equal(a.redundancy[1], 2);
	assert_ptr_equal(a.dev[0], dev);

	assert_int_equal(tc_dev_unwatch(dev, watcher, &a), 0);
	assert_int_equal(tc_dev_unwatch(dev, watcher, &a), -ENOENT);
	tc_dev_event(dev, TC_DEV_FAILED, 0);
	assert_int_equal(a.n, 2);               /* no call after unwatch */
	assert_int_equal(b.n, 3);
	assert_int_equal(b.ev[2], TC_DEV_FAILED);

	struct tc_dev_limits l;
	tc_dev_limits(dev, &l);
	assert_int_equal(l.redundancy, 0);
	assert_string_equal(tc_dev_event_name(TC_DEV_DEGRADED), "degraded");
	assert_string_equal(tc_dev_event_name(TC_DEV_REDUNDANT), "redundant");
	assert_string_equal(tc_dev_event_name(TC_DEV_FAILED), "failed");
	assert_string_equal(tc_dev_event_name(99), "unknown");
	tc_dev_close(dev);      /* frees the remaining watch */
	tc_ctx_free(ctx);
}

static void test_fault_layer_passes_up(void **state)
{
	tc_ctx *ctx = new_ctx();
	tc_dev *inner, *layer;
	struct seen s = { 0 };
	struct tc_dev_limits l;
	struct tc_dev_limits mirror = { .io_min = 4096, .redundancy = 1 };

	assert_int_equal(tc_dev_new_memory(ctx, DEV_SIZE, &inner), 0);
	tc_dev_set_limits(inner, &mirror);
	assert_int_equal(tc_dev_new_fault(ctx, inner, &layer), 0);
	tc_dev_limits(layer, &l);
	assert_int_equal(l.io_min, 4096);
	assert_int_equal(l.redundancy, 1);

	assert_int_equal(tc_dev_watch(layer, watcher, &s), 0);
	tc_dev_event(inner, TC_DEV_DEGRADED, 0);
	assert_int_equal(s.n, 1);
	assert_ptr_equal(s.dev[0], layer);
	assert_int_equal(s.ev[0], TC_DEV_DEGRADED);
	assert_int_equal(s.redundancy[0], 0);
	tc_dev_close(layer);    /* closes the inner device too */
	tc_ctx_free(ctx);
}

/* A cache and a write-through volume on memory devices, the backing with @limits. */
static void cached_volume(tc_ctx *ctx, const struct tc_dev_limits *limits, tc_dev **cdev,
			  tc_dev **bdev_out, tc_cache **cache, tc_volume **vol)
{
	tc_dev *bdev;
	struct tc_volume_settings s;

	assert_int_equal(tc_dev_new_memory(ctx, 8u << 20, cdev), 0);
	assert_int_equal(tc_dev_new_memory(ctx, 16u << 20, &bdev), 0);
	*bdev_out = bdev;
	tc_dev_set_limits(bdev, limits);
	assert_int_equal(tc_cache_format(ctx, *cdev, NULL), 0);
	tc_volume_settings_default(&s);
	s.write_policy = TC_WP_WT;
	assert_int_equal(tc_backing_format(ctx, bdev, "vol", &s), 0);
	assert_int_equal(tc_cache_open(ctx, *cdev, cache), 0);
	assert_int_equal(tc_cache_attach(*cache, bdev, NULL, 0, vol), 0);
}

static void test_engine_reads_limits(void **state)
{
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_volume_stats st;
	/* RAID 6 of six members, 64 KiB chunks: a 256 KiB full stripe. */
	struct tc_dev_limits raid6 = { .io_min = 65536, .io_opt = 262144,
				       .partial_stripe_expensive = true, .redundancy = 2 };
	struct tc_dev_limits mirror = { .io_min = 4096, .redundancy = 1 };

	cached_volume(ctx, &raid6, &cdev, &bdev, &cache, &vol);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.backing_stripe, 262144);
	assert_int_equal(tc_cache_close(cache), 0);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	tc_ctx_free(ctx);

	/* A mirror has no expensive partial stripes: no stripe. */
	ctx = new_ctx();
	cached_volume(ctx, &mirror, &cdev, &bdev, &cache, &vol);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.backing_stripe, 0);
	assert_int_equal(tc_cache_close(cache), 0);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	tc_ctx_free(ctx);
}

static void test_cache_device_failed(void **state)
{
	tc_ctx *ctx = new_ctx();
	tc_dev *cdev, *bdev;
	tc_cache *cache;
	tc_volume *vol;
	struct tc_volume_stats st;
	struct tc_dev_limits plain = { 0 };
	uint8_t *buf = aligned_alloc(4096, 65536), *chk = aligned_alloc(4096, 65536);

	cached_volume(ctx, &plain, &cdev, &bdev, &cache, &vol);
	memset(buf, 0x5a, 65536);
	assert_int_equal(tc_volume_pwrite(vol, buf, 65536, 0, 0), 0);
	assert_int_equal(tc_volume_pread(vol, chk, 65536, 0), 0);   /* a hit */
	tc_volume_stats(vol, &st);
	assert_false(st.fallback_pt);

	tc_dev_event(cdev, TC_DEV_FAILED, 0);
	tc_volume_stats(vol, &st);
	assert_true(st.fallback_pt);
	/* Write-through: the backing holds everything; reads go there now. */
	uint64_t before = st.read_hits;
	memset(chk, 0, 65536);
	assert_int_equal(tc_volume_pread(vol, chk, 65536, 0), 0);
	assert_memory_equal(buf, chk, 65536);
	tc_volume_stats(vol, &st);
	assert_int_equal(st.read_hits, before);
	free(buf);
	free(chk);
	tc_cache_close(cache);
	tc_dev_close(cdev);
	tc_dev_close(bdev);
	tc_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_normalisation),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_fault_layer_passes_up),
		cmocka_unit_test(test_engine_reads_limits),
		cmocka_unit_test(test_cache_device_failed),
	};

	return cmocka_run_group_tests_name("device limits and health", tests, NULL, NULL);
}
