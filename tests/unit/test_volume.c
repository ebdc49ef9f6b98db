/* SPDX-License-Identifier: MIT */
/*
 * test_volume.c - hosts (src/host.c, src/export.c) and read-only inspection (src/cache/inspect.c):
 * what a device holds, assembling volumes from superblocks alone, the refusals, the
 * uncached and degraded exports, device locks, and live attach and detach while client
 * threads write and verify.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tiercache.h"
#include "helpers.h"

#define MIB (1024u * 1024u)

static int setup(void **state)
{
	t_host_setup(state, "tc-vol", TC_LOG_WARN);
	return 0;
}

static int teardown(void **state)
{
	return t_host_teardown(state);
}

/* Attach @hdd to @ssd offline, through a host. */
static void attach(struct t_host_fx *f, const char *ssd, const char *hdd)
{
	tc_host *h;
	const char *specs[] = { ssd };
	assert_int_equal(tc_host_assemble(f->ctx, specs, 1, NULL, &h), 0);
	tc_export *e;
	assert_int_equal(tc_host_attach(h, ssd, hdd, NULL, 0, &e), 0);
	assert_int_equal(tc_host_close(h), 0);
}

static uint64_t file_sum(const char *path)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	uint64_t h = 1469598103934665603ull;
	int c;
	while ((c = getc(fp)) != EOF)
		h = (h ^ (uint64_t)c) * 1099511628211ull;
	fclose(fp);
	return h;
}

static void fill(uint8_t *p, size_t len, uint32_t tag)
{
	for (size_t i = 0; i < len; i += 4)
		*(uint32_t *)(p + i) = tag * 2654435761u + (uint32_t)i;
}

/* ---- probe and inspect ------------------------------------------------------------ */

static void test_probe_kinds(void **state)
{
	struct t_host_fx *f = *state;
	tc_dev *d;
	struct tc_probe p;
	assert_int_equal(tc_dev_open_file(f->ctx, f->hdd, TC_DEV_CREATE, 64 * MIB, &d), 0);
	assert_int_equal(tc_dev_probe(f->ctx, d, &p), 0);
	assert_int_equal(p.kind, TC_PROBE_EMPTY);

	/* A Linux swap signature at the end of the first page: libblkid knows it. */
	uint8_t *page = aligned_alloc(4096, 4096);
	memset(page, 0, 4096);
	memcpy(page + 4096 - 10, "SWAPSPACE2", 10);
	*(uint32_t *)(page + 1024) = 1;                     /* version */
	*(uint32_t *)(page + 1028) = 64 * MIB / 4096 - 1;   /* last page */
	assert_int_equal(tc_dev_pwrite(d, page, 4096, 0, 0), 0);
	assert_int_equal(tc_dev_probe(f->ctx, d, &p), 0);
	assert_int_equal(p.kind, TC_PROBE_FOREIGN);
	assert_non_null(strstr(p.what, "swap"));

	/* Random data: unknown. */
	fill(page, 4096, 7);
	assert_int_equal(tc_dev_pwrite(d, page, 4096, 0, 0), 0);
	assert_int_equal(tc_dev_probe(f->ctx, d, &p), 0);
	assert_int_equal(p.kind, TC_PROBE_UNKNOWN);

	assert_int_equal(tc_backing_format(f->ctx, d, "vol1", NULL), 0);
	assert_int_equal(tc_dev_probe(f->ctx, d, &p), 0);
	assert_int_equal(p.kind, TC_PROBE_BACKING);
	assert_string_equal(p.name, "vol1");
	assert_int_equal(p.volume_size, 63 * MIB);
	assert_int_equal(p.data_offset, MIB);
	assert_string_equal(p.cache_uuid, "");

	/* One damaged backing copy is covered by the other; both: reported as damaged. */
	fill(page, 4096, 9);
	assert_int_equal(tc_dev_pwrite(d, page, 4096, 0, 0), 0);
	assert_int_equal(tc_dev_probe(f->ctx, d, &p), 0);
	assert_int_equal(p.kind, TC_PROBE_BACKING);
	uint8_t *sb = aligned_alloc(4096, 4096);
	assert_int_equal(tc_dev_pread(d, sb, 4096, 4096), 0);
	sb[200] ^= 0xff;
	assert_int_equal(tc_dev_pwrite(d, sb, 4096, 4096, 0), 0);
	assert_int_equal(tc_dev_probe(f->ctx, d, &p), 0);
	assert_int_equal(p.kind, TC_PROBE_UNKNOWN);
	assert_non_null(strstr(p.what, "damaged tiercache backing"));

	assert_int_equal(tc_cache_format(f->ctx, d, NULL), 0);
	assert_int_equal(tc_dev_probe(f->ctx, d, &p), 0);
	assert_int_equal(p.kind, TC_PROBE_CACHE);
	assert_int_equal(p.line_size, 65536);
	assert_true(p.lines > 900);
	free(sb);
	free(page);
	tc_dev_close(d);
}

static void test_inspect_dirty_and_damage(void **state)
{
	struct t_host_fx *f = *state;
	t_format(f->ctx, f->ssd, 32 * MIB, NULL, 0);
	t_format(f->ctx, f->hdd, 64 * MIB, "db", TC_WP_WB);
	attach(f, f->ssd, f->hdd);
	/* Write 1 MiB in write-back and close before the cleaner writes any of it back: a
	 * deterministic context's clock stands still, so the low flush rate's second of
	 * idleness never comes (a threaded one under TSan took over a second to close,
	 * and the cleaner had begun). */
	const char *specs[] = { f->ssd, f->hdd };
	tc_ctx *dctx = t_ctx(TC_CTX_DETERMINISTIC, 0, TC_LOG_WARN, &f->log);
	tc_host *h;
	assert_int_equal(tc_host_assemble(dctx, specs, 2, NULL, &h), 0);
	tc_export *e = tc_host_find(h, "db");
	assert_non_null(e);
	struct tc_export_info info;
	tc_export_info(e, &info);
	struct tc_volume_settings s;
	tc_volume_get(info.volume, &s);
	s.flush_rate = TC_FLUSH_LOW;
	assert_int_equal(tc_volume_set(info.volume, &s, NULL, NULL), 0);
	uint8_t *buf = aligned_alloc(4096, MIB);
	fill(buf, MIB, 3);
	assert_int_equal(tc_export_io(e, TC_OP_WRITE, 0, buf, MIB, 8 * MIB), 0);
	assert_int_equal(tc_host_close(h), 0);
	tc_ctx_free(dctx);

	uint64_t before = file_sum(f->ssd);
	tc_dev *d;
	assert_int_equal(tc_dev_open_file(f->ctx, f->ssd, TC_DEV_READONLY, 0, &d), 0);
	struct tc_cache_report *rep = calloc(1, sizeof(*rep));
	assert_int_equal(tc_cache_inspect(f->ctx, d, rep), 0);
	assert_int_equal(rep->sb_copies_ok, 2);
	assert_int_equal(rep->nvolumes, 1);
	assert_string_equal(rep->volumes[0].name, "db");
	assert_int_equal(rep->volumes[0].dirty_bytes, MIB);
	assert_int_equal(rep->md_copies_damaged, 0);
	assert_int_equal(rep->md_blocks_lost, 0);
	tc_dev_close(d);
	assert_true(file_sum(f->ssd) == before);   /* read-only */

	/* Damage copy 0 of metadata block 0: covered; then copy 1 too: lost. */
	assert_int_equal(tc_dev_open_file(f->ctx, f->ssd, 0, 0, &d), 0);
	memset(buf, 0x5a, 4096);
	assert_int_equal(tc_dev_pwrite(d, buf, 4096, 65536, 0), 0);
	assert_int_equal(tc_cache_inspect(f->ctx, d, rep), 0);
	assert_int_equal(rep->md_copies_damaged, 1);
	assert_int_equal(rep->volumes[0].dirty_bytes, MIB);
	assert_int_equal(tc_dev_pwrite(d, buf, 4096, 65536 + 4096, 0), 0);
	assert_int_equal(tc_cache_inspect(f->ctx, d, rep), -EUCLEAN);
	assert_int_equal(rep->md_blocks_lost, 1);
	tc_dev_close(d);
	free(rep);
	free(buf);
}

/* ---- assembly ------------------------------------------------------------------------ */

static void test_assemble_states(void **state)
{
	struct t_host_fx *f = *state;
	t_format(f->ctx, f->ssd, 32 * MIB, NULL, 0);
	t_format(f->ctx, f->hdd, 64 * MIB, "db", TC_WP_WB);
	t_format(f->ctx, f->hdd2, 64 * MIB, "logs", TC_WP_WT);
	attach(f, f->ssd, f->hdd);

	/* Cache, its backing and a backing never attached. */
	const char *all[] = { f->hdd2, f->hdd, f->ssd };
	tc_host *h;
	assert_int_equal(tc_host_assemble(f->ctx, all, 3, NULL, &h), 0);
	assert_int_equal(tc_host_export_count(h), 2);
	struct tc_export_info a, b;
	tc_export_info(tc_host_find(h, "db"), &a);
	tc_export_info(tc_host_find(h, "logs"), &b);
	assert_int_equal(a.state, TC_EXPORT_CACHED);
	assert_non_null(a.volume);
	assert_int_equal(b.state, TC_EXPORT_UNCACHED);
	assert_null(b.cache);
	assert_null(tc_host_find(h, "nosuch"));
	/* NBD block size: the cache's line size; uncached, a plain file's 4 KiB. */
	assert_int_equal(tc_export_block_size(tc_host_find(h, "db")), 16384);
	assert_int_equal(tc_export_block_size(tc_host_find(h, "logs")), 4096);
	/* Uncached I/O lands 1 MiB into the backing; ranges are checked. */
	uint8_t *buf = aligned_alloc(4096, 65536), *chk = aligned_alloc(4096, 65536);
	fill(buf, 65536, 11);
	tc_export *eb = tc_host_find(h, "logs");
	assert_int_equal(tc_export_io(eb, TC_OP_WRITE, TC_IO_FUA, buf, 65536, 4096), 0);
	assert_int_equal(tc_export_io(eb, TC_OP_WRITE, 0, buf, 4096, b.size), -EINVAL);
	assert_non_null(strstr(f->log.last, "beyond the end"));
	assert_int_equal(tc_export_io(eb, TC_OP_READ, 0, buf, 1000, 0), -EINVAL);
	assert_non_null(strstr(f->log.last, "not 512-byte aligned"));
	assert_int_equal(tc_host_close(h), 0);
	tc_dev *d;
	assert_int_equal(tc_dev_open_file(f->ctx, f->hdd2, 0, 0, &d), 0);
	assert_int_equal(tc_dev_pread(d, chk, 65536, MIB + 4096), 0);
	assert_memory_equal(buf, chk, 65536);
	tc_dev_close(d);

	/* The write-back volume without its cache: refused, naming the cache. */
	const char *nocache[] = { f->hdd };
	assert_int_equal(tc_host_assemble(f->ctx, nocache, 1, NULL, &h), -ENODEV);
	assert_non_null(strstr(f->log.last, "write-back"));
	/* Not a tiercache device; the same device twice; a locked device. */
	const char *bad[] = { f->ssd, "/dev/null" };
	assert_true(tc_host_assemble(f->ctx, bad, 2, NULL, &h) < 0);
	const char *twice[] = { f->ssd, f->ssd };
	assert_int_equal(tc_host_assemble(f->ctx, twice, 2, NULL, &h), -EEXIST);
	struct tc_host_opts lock = { .dev_flags = TC_DEV_EXCLUSIVE };
	tc_host *h1, *h2;
	assert_int_equal(tc_host_assemble(f->ctx, all, 3, &lock, &h1), 0);
	assert_int_equal(tc_host_assemble(f->ctx, nocache + 0, 1, &lock, &h2), -EBUSY);
	assert_non_null(strstr(f->log.last, "in use"));
	assert_int_equal(tc_host_close(h1), 0);
	free(buf);
	free(chk);
}

/* A write-through volume served without its cache: degraded, and the cache, met again,
 * must not serve its stale copy. */
static void test_degraded_then_stale(void **state)
{
	struct t_host_fx *f = *state;
	t_format(f->ctx, f->ssd, 32 * MIB, NULL, 0);
	t_format(f->ctx, f->hdd, 64 * MIB, "db", TC_WP_WT);
	attach(f, f->ssd, f->hdd);
	uint8_t *buf = aligned_alloc(4096, 65536), *chk = aligned_alloc(4096, 65536);
	const char *both[] = { f->ssd, f->hdd }, *alone[] = { f->hdd };
	tc_host *h;
	/* Old data, read twice so that it is cached. */
	assert_int_equal(tc_host_assemble(f->ctx, both, 2, NULL, &h), 0);
	fill(buf, 65536, 1);
	assert_int_equal(tc_export_io(tc_host_find(h, "db"), TC_OP_WRITE, 0, buf, 65536, 0), 0);
	assert_int_equal(tc_export_io(tc_host_find(h, "db"), TC_OP_READ, 0, chk, 65536, 0), 0);
	assert_int_equal(tc_host_close(h), 0);
	/* New data without the cache. */
	assert_int_equal(tc_host_assemble(f->ctx, alone, 1, NULL, &h), 0);
	struct tc_export_info info;
	tc_export_info(tc_host_find(h, "db"), &info);
	assert_int_equal(info.state, TC_EXPORT_DEGRADED);
	assert_non_null(strstr(f->log.last, "serving the volume uncached"));
	fill(buf, 65536, 2);
	assert_int_equal(tc_export_io(tc_host_find(h, "db"), TC_OP_WRITE, 0, buf, 65536, 0), 0);
	assert_int_equal(tc_host_close(h), 0);
	/* Together again: the new data, not the cache's old copy. */
	assert_int_equal(tc_host_assemble(f->ctx, both, 2, NULL, &h), 0);
	tc_export_info(tc_host_find(h, "db"), &info);
	assert_int_equal(info.state, TC_EXPORT_CACHED);
	assert_int_equal(tc_export_io(tc_host_find(h, "db"), TC_OP_READ, 0, chk, 65536, 0), 0);
	assert_memory_equal(buf, chk, 65536);
	assert_int_equal(tc_host_close(h), 0);
	free(buf);
	free(chk);
}

/* ---- live attach and detach under I/O ----------------------------------------------- */

#define LIVE_BLOCKS 256          /* 64 KiB blocks: 16 MiB */
#define LIVE_THREADS 2

struct live {
	tc_export *e;
	atomic_bool stop;
	atomic_int errors;
	uint32_t tags[LIVE_BLOCKS];  /* per block: the tag of its last completed write */
};

struct live_worker {
	struct live *l;
	unsigned id;
};

static void *live_main(void *arg)
{
	struct live_worker *w = arg;
	struct live *l = w->l;
	uint8_t *buf = aligned_alloc(4096, 65536), *exp = aligned_alloc(4096, 65536);
	unsigned seed = w->id + 1;
	uint32_t tag = w->id * 1000000u + 1;
	while (!atomic_load(&l->stop)) {
		/* Each thread owns the blocks of its parity: no write races on a block. */
		unsigned b = (unsigned)(rand_r(&seed) % (LIVE_BLOCKS / LIVE_THREADS)) *
			     LIVE_THREADS + w->id;
		uint64_t off = (uint64_t)b * 65536;
		if (rand_r(&seed) % 2) {
			fill(buf, 65536, tag);
			if (tc_export_io(l->e, TC_OP_WRITE, 0, buf, 65536, off))
				atomic_fetch_add(&l->errors, 1);
			else
				l->tags[b] = tag;
			tag++;
		} else {
			if (tc_export_io(l->e, TC_OP_READ, 0, buf, 65536, off)) {
				atomic_fetch_add(&l->errors, 1);
				continue;
			}
			if (l->tags[b])
				fill(exp, 65536, l->tags[b]);
			else
				memset(exp, 0, 65536);
			if (memcmp(buf, exp, 65536))
				atomic_fetch_add(&l->errors, 1);
		}
	}
	free(buf);
	free(exp);
	return NULL;
}

static void test_live_attach_detach(void **state)
{
	struct t_host_fx *f = *state;
	t_format(f->ctx, f->ssd, 32 * MIB, NULL, 0);
	t_format(f->ctx, f->hdd, 64 * MIB, "db", TC_WP_WB);
	const char *specs[] = { f->ssd, f->hdd };
	tc_host *h;
	assert_int_equal(tc_host_assemble(f->ctx, specs, 2, NULL, &h), 0);
	struct live *l = calloc(1, sizeof(*l));
	l->e = tc_host_find(h, "db");
	struct tc_export_info info;
	tc_export_info(l->e, &info);
	assert_int_equal(info.state, TC_EXPORT_UNCACHED);
	pthread_t t[LIVE_THREADS];
	struct live_worker w[LIVE_THREADS];
	for (unsigned i = 0; i < LIVE_THREADS; i++) {
		w[i] = (struct live_worker){ .l = l, .id = i };
		pthread_create(&t[i], NULL, live_main, &w[i]);
	}
	for (int round = 0; round < 3; round++) {
		usleep(150000);
		tc_export *e;
		assert_int_equal(tc_host_attach(h, f->ssd, f->hdd, NULL, 0, &e), 0);
		assert_ptr_equal(e, l->e);
		tc_export_info(l->e, &info);
		assert_int_equal(info.state, TC_EXPORT_CACHED);
		assert_int_equal(tc_host_attach(h, f->ssd, f->hdd, NULL, 0, &e), -EEXIST);
		usleep(150000);
		assert_int_equal(tc_host_detach(h, l->e, 0, NULL, NULL), 0);
		tc_export_info(l->e, &info);
		assert_int_equal(info.state, TC_EXPORT_UNCACHED);
		assert_int_equal(tc_host_detach(h, l->e, 0, NULL, NULL), -EINVAL);
	}
	atomic_store(&l->stop, true);
	for (unsigned i = 0; i < LIVE_THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&l->errors), 0);
	/* Every block, read straight from the backing file after a clean close. */
	assert_int_equal(tc_host_close(h), 0);
	tc_dev *d;
	uint8_t *buf = aligned_alloc(4096, 65536), *exp = aligned_alloc(4096, 65536);
	assert_int_equal(tc_dev_open_file(f->ctx, f->hdd, 0, 0, &d), 0);
	unsigned written = 0;
	for (unsigned b = 0; b < LIVE_BLOCKS; b++) {
		assert_int_equal(tc_dev_pread(d, buf, 65536, MIB + (uint64_t)b * 65536), 0);
		if (l->tags[b]) {
			fill(exp, 65536, l->tags[b]);
			written++;
		} else {
			memset(exp, 0, 65536);
		}
		assert_memory_equal(buf, exp, 65536);
	}
	assert_true(written > LIVE_BLOCKS / 2);
	tc_dev_close(d);
	free(buf);
	free(exp);
	free(l);
}

/* A cache named but missing (or unreadable) stops nothing that can be served safely:
 * the write-through volume is served uncached, the write-back one alone is refused
 * (by name, in the log); with only the write-back one, the assembly fails. */
static void test_missing_cache_serves_the_rest(void **state)
{
	struct t_host_fx *f = *state;
	t_format(f->ctx, f->ssd, 32 * MIB, NULL, 0);
	t_format(f->ctx, f->hdd, 64 * MIB, "wt", TC_WP_WT);
	t_format(f->ctx, f->hdd2, 64 * MIB, "wb", TC_WP_WB);
	attach(f, f->ssd, f->hdd);
	attach(f, f->ssd, f->hdd2);
	char gone[320];
	snprintf(gone, sizeof(gone), "%s.moved", f->ssd);
	assert_int_equal(rename(f->ssd, gone), 0);
	const char *specs[] = { f->ssd, f->hdd, f->hdd2 };
	tc_host *h;
	assert_int_equal(tc_host_assemble(f->ctx, specs, 3, NULL, &h), 0);
	assert_int_equal(tc_host_export_count(h), 1);
	struct tc_export_info info;
	tc_export_info(tc_host_find(h, "wt"), &info);
	assert_int_equal(info.state, TC_EXPORT_DEGRADED);
	assert_null(tc_host_find(h, "wb"));
	assert_int_equal(tc_host_close(h), 0);
	/* The write-back volume was the last message of that kind: named, with the way out. */
	const char *wb_only[] = { f->ssd, f->hdd2 };
	assert_int_equal(tc_host_assemble(f->ctx, wb_only, 2, NULL, &h), -ENODEV);
	assert_non_null(strstr(f->log.last, "volume \"wb\""));
	assert_non_null(strstr(f->log.last, "is not served"));
	assert_non_null(strstr(f->log.last, "forget-cache"));
	/* Every device missing: nothing to serve. */
	const char *none[] = { f->ssd };
	assert_int_equal(tc_host_assemble(f->ctx, none, 1, NULL, &h), -ENOENT);
	unlink(gone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_probe_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inspect_dirty_and_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_assemble_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_degraded_then_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_attach_detach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_cache_serves_the_rest, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
