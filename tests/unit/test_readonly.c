/* SPDX-License-Identifier: MIT */
/*
 * test_readonly.c - the read-only inspection path writes nothing: a device opened with
 * TC_DEV_READONLY refuses writes (-EROFS); tc_cache_open_readonly() on a cache holding
 * dirty data (cleanly shut down, or after a crash) loads it, attaches its backing in
 * memory, refuses every superblock write and metadata commit (-EROFS: set, detach,
 * a write request), and closes without a write, even when the device itself would
 * take writes; a host assembled with TC_DEV_READONLY does the same.  Each case
 * compares every byte of both device files before and after.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "helpers.h"
#include "tiercache.h"
#include "tiercache-test.h"

#define MIB (1024u * 1024u)
#define SSD_SIZE (8u * MIB)
#define HDD_SIZE (16u * MIB)

/* The whole content of @path, malloc'ed (@size bytes). */
static uint8_t *slurp(const char *path, size_t size)
{
	uint8_t *buf = malloc(size);
	FILE *f = fopen(path, "rb");

	assert_non_null(buf);
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, size, f), size);
	fclose(f);
	return buf;
}

struct snap {
	uint8_t *ssd, *hdd;
};

static void snap_take(struct t_host_fx *f, struct snap *s)
{
	s->ssd = slurp(f->ssd, SSD_SIZE);
	s->hdd = slurp(f->hdd, HDD_SIZE);
}

/* Both files hold what @s holds; frees @s. */
static void snap_same(struct t_host_fx *f, struct snap *s)
{
	struct snap now;

	snap_take(f, &now);
	assert_memory_equal(now.ssd, s->ssd, SSD_SIZE);
	assert_memory_equal(now.hdd, s->hdd, HDD_SIZE);
	free(now.ssd);
	free(now.hdd);
	free(s->ssd);
	free(s->hdd);
}

/* A write-back volume with 64 KiB of dirty data; @crash: the cache is abandoned (no
 * clean shutdown) instead of closed. */
static void make_dirty(struct t_host_fx *f, bool crash)
{
	tc_dev *ssd, *hdd;
	tc_cache *c;
	tc_volume *v;
	struct tc_volume_settings s;
	uint8_t *buf = malloc(64 * 1024);

	assert_non_null(buf);
	memset(buf, 0x5a, 64 * 1024);
	t_format(f->ctx, f->ssd, SSD_SIZE, NULL, 0);
	t_format(f->ctx, f->hdd, HDD_SIZE, "vol", TC_WP_WB);
	assert_int_equal(tc_dev_open_file(f->ctx, f->ssd, 0, 0, &ssd), 0);
	assert_int_equal(tc_dev_open_file(f->ctx, f->hdd, 0, 0, &hdd), 0);
	assert_int_equal(tc_cache_open(f->ctx, ssd, &c), 0);
	tc_volume_settings_default(&s);
	s.write_policy = TC_WP_WB;
	s.flush_rate = TC_FLUSH_LOW;
	assert_int_equal(tc_cache_attach(c, hdd, &s, 0, &v), 0);
	assert_int_equal(tc_volume_pwrite(v, buf, 64 * 1024, 1 * MIB, TC_IO_FUA), 0);
	if (crash)
		tc_cache_abandon(c);
	else
		assert_int_equal(tc_cache_close(c), 0);
	tc_dev_close(hdd);
	tc_dev_close(ssd);
	free(buf);
}

static void test_device_refuses_writes(void **state)
{
	struct t_host_fx *f = *state;
	tc_dev *d;
	uint8_t buf[4096] = { 1 };
	struct snap s;

	make_dirty(f, false);
	snap_take(f, &s);
	assert_int_equal(tc_dev_open_file(f->ctx, f->ssd, TC_DEV_READONLY, 0, &d), 0);
	assert_int_equal(tc_dev_pwrite(d, buf, sizeof(buf), 0, 0), -EROFS);
	assert_int_equal(tc_dev_pread(d, buf, sizeof(buf), 0), 0);
	/* The ordinary open marks the cache in use: on a read-only device it fails. */
	tc_cache *c;
	assert_int_not_equal(tc_cache_open(f->ctx, d, &c), 0);
	tc_dev_close(d);
	snap_same(f, &s);
}

/* Open read-only with the devices opened read-write or read-only (@dev_flags): the
 * cache-level guard alone must keep the files unchanged. */
static void inspect_cache(struct t_host_fx *f, unsigned dev_flags)
{
	tc_dev *ssd, *hdd;
	tc_cache *c;
	tc_volume *v;
	struct tc_volume_settings s;
	struct tc_inspect_volume iv[4];
	uint8_t buf[4096];

	assert_int_equal(tc_dev_open_file(f->ctx, f->ssd, dev_flags, 0, &ssd), 0);
	assert_int_equal(tc_dev_open_file(f->ctx, f->hdd, dev_flags, 0, &hdd), 0);
	assert_int_equal(tc_cache_open_readonly(f->ctx, ssd, &c), 0);
	assert_true(tc_cache_is_readonly(c));
	assert_int_equal(tc_cache_volumes(c, iv, 4), 1);
	assert_string_equal(iv[0].name, "vol");
	assert_int_equal(iv[0].dirty_bytes, 64 * 1024);
	assert_int_equal(tc_cache_attach(c, hdd, NULL, 0, &v), 0);
	/* Reads are served, from the cache's dirty data too. */
	assert_int_equal(tc_volume_pread(v, buf, sizeof(buf), 1 * MIB), 0);
	assert_int_equal(buf[0], 0x5a);
	assert_int_equal(buf[4095], 0x5a);
	/* Every change is refused. */
	tc_volume_get(v, &s);
	s.write_policy = TC_WP_WT;
	assert_int_equal(tc_volume_set(v, &s, NULL, NULL), -EROFS);
	tc_volume_get(v, &s);
	s.flush_rate = TC_FLUSH_HIGH;
	assert_int_equal(tc_volume_set(v, &s, NULL, NULL), -EROFS);
	assert_int_not_equal(tc_volume_detach(v, TC_DETACH_DISCARD_DIRTY, NULL, NULL), 0);
	memset(buf, 0x77, sizeof(buf));
	assert_int_not_equal(tc_volume_pwrite(v, buf, sizeof(buf), 4 * MIB, TC_IO_FUA), 0);
	assert_int_equal(tc_cache_close(c), 0);
	tc_dev_close(hdd);
	tc_dev_close(ssd);
}

static void test_cache_readonly(void **state)
{
	struct t_host_fx *f = *state;
	struct snap s;

	for (int crash = 0; crash < 2; crash++) {
		make_dirty(f, crash);
		snap_take(f, &s);
		inspect_cache(f, TC_DEV_READONLY);
		snap_same(f, &s);
		snap_take(f, &s);
		inspect_cache(f, 0);
		snap_same(f, &s);
	}
}

static void test_host_readonly(void **state)
{
	struct t_host_fx *f = *state;
	struct snap s;
	tc_host *h;

	make_dirty(f, false);
	snap_take(f, &s);
	struct tc_host_opts ho = { .dev_flags = TC_DEV_READONLY | TC_DEV_EXCLUSIVE };
	const char *both[] = { f->ssd, f->hdd };
	assert_int_equal(tc_host_assemble(f->ctx, both, 2, &ho, &h), 0);
	assert_int_equal(tc_host_export_count(h), 1);
	const char *spec;
	tc_cache *c = tc_host_cache_at(h, 0, &spec);
	assert_non_null(c);
	assert_true(tc_cache_is_readonly(c));
	assert_int_equal(tc_host_close(h), 0);
	/* The backing alone: served uncached without recording it on the backing. */
	const char *one[] = { f->hdd };
	ho.dev_flags = TC_DEV_READONLY;
	int r = tc_host_assemble(f->ctx, one, 1, &ho, &h);
	if (!r)
		assert_int_equal(tc_host_close(h), 0);
	snap_same(f, &s);
}

static int setup(void **state)
{
	t_host_setup(state, "tc-readonly", TC_LOG_ERROR);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_device_refuses_writes, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_cache_readonly, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_host_readonly, setup, t_host_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
