/* SPDX-License-Identifier: MIT */
/*
 * test_cache_threaded.c - the engine in threaded mode on io_uring file devices: client
 * threads write and verify their own regions with many requests in flight (lines shared
 * between threads at region edges are not: regions are line-aligned, but the cache is
 * small so evictions, fills and writeback run concurrently), while another thread
 * flushes and switches write policies.  After a clean close and reopen, every byte is
 * compared with each thread's model.
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
#define THREADS 3
#define REGION (4 * MIB)
#define QD 8
#define OPS 3000

struct shared {
	tc_ctx *ctx;
	tc_volume *v;
	atomic_bool stop;
	atomic_int errors;
};

struct slotio {
	struct tc_io io;
	struct iovec iov;
	uint8_t *buf;
	atomic_bool busy;
	int result;
	uint64_t off, len;
	bool is_read;
	uint32_t tag;
	unsigned seq;
};

struct worker {
	struct shared *sh;
	unsigned id;
	uint32_t *model;   /* per 512-byte sector: tag of the last completed write */
	struct { uint64_t off, len; int state; unsigned seq; } hist[OPS + 1];  /* by tag */
	unsigned seq;
	struct slotio s[QD];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned seed;
};

static void fill(uint8_t *p, uint64_t off, uint64_t len, uint32_t tag)
{
	for (uint64_t i = 0; i < len; i += 512) {
		uint32_t *w = (uint32_t *)(p + i);
		for (unsigned k = 0; k < 128; k++)
			w[k] = tag ? tag * 2654435761u + (uint32_t)((off + i) / 512) + k : 0;
	}
}

static void io_done(struct tc_io *io, int result)
{
	struct slotio *s = io->private_data;
	s->result = result;
	atomic_store(&s->busy, false);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t base = (uint64_t)w->id * REGION;
	uint32_t next_tag = w->id * 1000000u + 1;
	uint8_t *expect = aligned_alloc(4096, 256 * 1024);
	for (unsigned op = 0; op < OPS; op++) {
		/* Account every finished request first (the model must know each completed
		 * write before a new request is checked against it), then take a free slot. */
		struct slotio *s = NULL;
		while (!s) {
			for (unsigned i = 0; i < QD; i++) {
				struct slotio *t = &w->s[i];
				if (atomic_load(&t->busy) || !t->len)
					continue;
				if (t->result) {
					atomic_fetch_add(&w->sh->errors, 1);
					fprintf(stderr, "thread %u: request failed: %d\n", w->id, t->result);
				} else if (t->is_read) {
					for (uint64_t k = 0; k < t->len; k += 512) {
						uint64_t sec = (t->off - base + k) / 512;
						fill(expect, t->off + k, 512, w->model[sec]);
						if (memcmp(expect, t->buf + k, 512)) {
							uint32_t found = (*(uint32_t *)(t->buf + k) -
								(uint32_t)((t->off + k) / 512)) * 244002641u;
							unsigned fl = found - w->id * 1000000u;
							if (atomic_fetch_add(&w->sh->errors, 1) < 1)
								fprintf(stderr, "thread %u: read [%llu+%llu) seq %u: "
									"sector %llu holds tag %u (off %llu len %llu "
									"state %d seq %u), model tag %u\n", w->id,
									(unsigned long long)t->off,
									(unsigned long long)t->len, t->seq,
									(unsigned long long)(t->off + k), found,
									fl <= OPS ? (unsigned long long)w->hist[fl].off : 0ull,
									fl <= OPS ? (unsigned long long)w->hist[fl].len : 0ull,
									fl <= OPS ? w->hist[fl].state : -1,
									fl <= OPS ? w->hist[fl].seq : 0, w->model[sec]);
						}
					}
				} else {
					for (uint64_t k = 0; k < t->len; k += 512)
						w->model[(t->off - base + k) / 512] = t->tag;
					w->hist[t->tag - w->id * 1000000u].state = 2;
				}
				t->len = 0;
			}
			for (unsigned i = 0; i < QD && !s; i++)
				if (!atomic_load(&w->s[i].busy) && !w->s[i].len)
					s = &w->s[i];
			if (!s)
				usleep(50);
		}
		/* Pick a range that overlaps no request in flight. */
		uint64_t off, len;
		bool clash;
		do {
			len = 512ull * (1 + rand_r(&w->seed) % 64);
			if (rand_r(&w->seed) % 2)
				len = 4096ull * (1 + rand_r(&w->seed) % 16);
			off = base + 512ull * (rand_r(&w->seed) % ((REGION - len) / 512));
			clash = false;
			for (unsigned i = 0; i < QD; i++) {
				struct slotio *t = &w->s[i];
				if (t != s && t->len && off < t->off + t->len &&
				    t->off < off + len)
					clash = true;
			}
		} while (clash);
		s->off = off;
		s->len = len;
		s->is_read = rand_r(&w->seed) % 2;
		memset(&s->io, 0, sizeof(s->io));
		s->iov.iov_base = s->buf;
		s->iov.iov_len = len;
		s->io.op = s->is_read ? TC_OP_READ : TC_OP_WRITE;
		s->io.flags = !s->is_read && rand_r(&w->seed) % 16 == 0 ? TC_IO_FUA : 0;
		s->io.offset = off;
		s->io.length = len;
		s->io.iov = &s->iov;
		s->io.iovcnt = 1;
		s->io.done = io_done;
		s->io.private_data = s;
		s->seq = ++w->seq;
		if (!s->is_read) {
			s->tag = next_tag++;
			unsigned tl = s->tag - w->id * 1000000u;
			w->hist[tl].off = off;
			w->hist[tl].len = len;
			w->hist[tl].state = 1;
			w->hist[tl].seq = s->seq;
			fill(s->buf, off, len, s->tag);
		}
		atomic_store(&s->busy, true);
		tc_volume_submit(w->sh->v, &s->io);
	}
	for (unsigned i = 0; i < QD; i++) {
		struct slotio *t = &w->s[i];
		while (atomic_load(&t->busy))
			usleep(100);
		if (t->len && !t->is_read && !t->result)
			for (uint64_t k = 0; k < t->len; k += 512)
				w->model[(t->off - base + k) / 512] = t->tag;
		if (t->len && t->result)
			atomic_fetch_add(&w->sh->errors, 1);
	}
	free(expect);
	return NULL;
}

static void *admin_main(void *arg)
{
	struct shared *sh = arg;
	unsigned seed = 7;
	const char *only = getenv("TC_TEST_ADMIN_OPS");  /* debugging: limit the ops */
	while (!atomic_load(&sh->stop)) {
		usleep(20000);
		if (only && !strcmp(only, "none"))
			continue;
		struct tc_volume_settings s;
		tc_volume_get(sh->v, &s);
		unsigned pick = rand_r(&seed) % 4;
		if (only && strcmp(only, "all"))
			pick = (unsigned)atoi(only);
		switch (pick) {
		case 0:
			if (tc_volume_io(sh->v, TC_OP_FLUSH, 0, NULL, 0, 0))
				atomic_fetch_add(&sh->errors, 1);
			break;
		case 1:
			s.write_policy = (uint8_t)(rand_r(&seed) % 4);
			if (tc_volume_set(sh->v, &s, NULL, NULL))
				atomic_fetch_add(&sh->errors, 1);
			/* Leaving write-back drains before reporting success (invariant 3). */
			struct tc_volume_stats st;
			tc_volume_stats(sh->v, &st);
			if (s.write_policy != TC_WP_WB && st.dirty_bytes) {
				fprintf(stderr, "policy %u set with %llu bytes dirty\n", s.write_policy,
					(unsigned long long)st.dirty_bytes);
				atomic_fetch_add(&sh->errors, 1);
			}
			break;
		case 2:
			if (tc_volume_flush_dirty(sh->v, NULL, NULL))
				atomic_fetch_add(&sh->errors, 1);
			break;
		default:
			s.read_cache = !s.read_cache;
			if (tc_volume_set(sh->v, &s, NULL, NULL))
				atomic_fetch_add(&sh->errors, 1);
			break;
		}
	}
	return NULL;
}

static void quiet(void *o, enum tc_log_level l, const char *m)
{
	(void)o;
	(void)l;
	fprintf(stderr, "tiercache: %s\n", m);
}

static void run(unsigned flags, uint8_t replacement)
{
	char dir[256], cp[300], bp[300];
	assert_int_equal(t_mkdtemp(dir, sizeof(dir), "tc-threaded"), 0);
	snprintf(cp, sizeof(cp), "%s/cache", dir);
	snprintf(bp, sizeof(bp), "%s/backing", dir);
	struct shared sh = { 0 };
	struct tc_ctx_opts o = { .mode = TC_CTX_THREADED };
	assert_int_equal(tc_ctx_new(&o, &sh.ctx), 0);
	tc_ctx_set_log(sh.ctx, quiet, NULL, TC_LOG_ERROR);
	tc_dev *cd, *bd;
	assert_int_equal(tc_dev_open_file(sh.ctx, cp, flags | TC_DEV_CREATE, 4 * MIB, &cd), 0);
	assert_int_equal(tc_dev_open_file(sh.ctx, bp, flags | TC_DEV_CREATE, 16 * MIB, &bd), 0);
	struct tc_cache_opts co;
	tc_cache_opts_default(&co);
	co.line_size = 16384;
	co.replacement = replacement;
	co.unprotected_writeback = true;
	assert_int_equal(tc_cache_format(sh.ctx, cd, &co), 0);
	struct tc_volume_settings set;
	tc_volume_settings_default(&set);
	set.seq_cutoff = 0;
	assert_int_equal(tc_backing_format(sh.ctx, bd, "threaded", &set), 0);
	tc_cache *c;
	assert_int_equal(tc_cache_open(sh.ctx, cd, &c), 0);
	assert_int_equal(tc_cache_attach(c, bd, NULL, 0, &sh.v), 0);

	struct worker w[THREADS];
	pthread_t th[THREADS], admin;
	for (unsigned i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].sh = &sh;
		w[i].id = i;
		w[i].seed = 100 + i;
		w[i].model = calloc(REGION / 512, sizeof(uint32_t));
		for (unsigned k = 0; k < QD; k++)
			w[i].s[k].buf = aligned_alloc(4096, 128 * 1024);
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	assert_int_equal(pthread_create(&admin, NULL, admin_main, &sh), 0);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&sh.stop, true);
	pthread_join(admin, NULL);
	assert_int_equal(atomic_load(&sh.errors), 0);

	/* Close cleanly, reopen, compare everything. */
	assert_int_equal(tc_cache_close(c), 0);
	assert_int_equal(tc_cache_open(sh.ctx, cd, &c), 0);
	assert_int_equal(tc_cache_attach(c, bd, NULL, 0, &sh.v), 0);
	uint8_t *b = aligned_alloc(4096, REGION), *e = aligned_alloc(4096, 4096);
	for (unsigned i = 0; i < THREADS; i++) {
		uint64_t base = (uint64_t)i * REGION;
		assert_int_equal(tc_volume_pread(sh.v, b, REGION, base), 0);
		for (uint64_t k = 0; k < REGION; k += 512) {
			fill(e, base + k, 512, w[i].model[k / 512]);
			if (memcmp(e, b + k, 512))
				fail_msg("thread %u offset %llu differs after reopen", i,
					 (unsigned long long)(base + k));
		}
		for (unsigned k = 0; k < QD; k++)
			free(w[i].s[k].buf);
		free(w[i].model);
	}
	free(b);
	free(e);
	assert_int_equal(tc_cache_close(c), 0);
	tc_dev_close(cd);
	tc_dev_close(bd);
	tc_ctx_free(sh.ctx);
	unlink(cp);
	unlink(bp);
	rmdir(dir);
}

static void test_threaded_direct_s3fifo(void **state)
{
	(void)state;
	run(0, TC_REPL_S3FIFO);
}

static void test_threaded_buffered_lru(void **state)
{
	(void)state;
	run(TC_DEV_BUFFERED, TC_REPL_LRU);
}

/* The other policies, buffered (the faster of the two device modes): each hit path
 * (ARC's, W-TinyLFU's and LIRS's mutex, 2Q's lock-free A1in check, SIEVE's atomic
 * bit, the hill climber's window changes) under
 * the same concurrent readers, writers and cleaner. */
static void test_threaded_buffered_peers(void **state)
{
	(void)state;
	run(TC_DEV_BUFFERED, TC_REPL_ARC);
	run(TC_DEV_BUFFERED, TC_REPL_2Q);
	run(TC_DEV_BUFFERED, TC_REPL_SIEVE);
	run(TC_DEV_BUFFERED, TC_REPL_WTINYLFU);
	run(TC_DEV_BUFFERED, TC_REPL_LIRS);
	run(TC_DEV_BUFFERED, TC_REPL_WTINYLFU_HC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threaded_direct_s3fifo),
		cmocka_unit_test(test_threaded_buffered_lru),
		cmocka_unit_test(test_threaded_buffered_peers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
