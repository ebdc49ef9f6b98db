/* SPDX-License-Identifier: MIT */
/*
 * test_mgmt_cut.c - a power cut at every device request of attach, set, flush and
 * detach (drained, or discarding dirty data; the step tables of src/cache/volume.c),
 * of create over an old cache or backing, and of live attach and detach through a
 * host (src/host.c) while a client writes: the operation runs on crash devices behind
 * a cutter that lets N requests through (counted over both devices together) and fails
 * every later one, as a power failure would; the crash devices then keep a seed-chosen
 * part of what was not flushed.  For N = 0, 1, 2, ... until the operation completes
 * uncut, the files are assembled again as a host and must be all-or-nothing: the old
 * state or the new one (attached or not; the old settings or the new), and the
 * volume's data written with FUA before the operation reads back, and so does each
 * FUA write of the live operations' client that completed.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "dev.h"
#include "helpers.h"
#include "tiercache.h"
#include "tiercache-test.h"
#include "cut_dev.h"

#define MIB (1024u * 1024u)
#define SSD_SIZE (8u * MIB)
#define HDD_SIZE (16u * MIB)
#define MAX_CUTS 400

/* ---- one run ------------------------------------------------------------------------ */

enum op { OP_ATTACH, OP_SET, OP_DETACH, OP_FLUSH, OP_DETACH_WB, OP_DETACH_DISCARD,
	OP_SET_ALL, OP_SET_PARTITION, OP_SET_DRAIN, OP_FORMAT_CACHE, OP_FORMAT_BACKING,
	OP_LIVE_ATTACH, OP_LIVE_ATTACH_NEW, OP_LIVE_DETACH };

static const char *const op_names[] = { "attach", "set", "detach", "flush (write-back)",
	"detach (write-back, drained)", "detach (write-back, dirty data discarded)",
	"set (every setting)", "set (partition reserve and cap)",
	"set (write-back to write-through, draining)",
	"create cache (over an old cache)", "create backing (over an old backing)",
	"live attach (a host serving the backing uncached)",
	"live attach (of a cache new to the host)",
	"live detach (a host serving the volume, write-back, drained)" };

static bool format_op(enum op op)
{
	return op == OP_FORMAT_CACHE || op == OP_FORMAT_BACKING;
}

static bool wb_op(enum op op)
{
	return op == OP_FLUSH || op == OP_DETACH_WB || op == OP_DETACH_DISCARD ||
	       op == OP_SET_DRAIN || op == OP_LIVE_DETACH;
}

static bool live_op(enum op op)
{
	return op == OP_LIVE_ATTACH || op == OP_LIVE_ATTACH_NEW || op == OP_LIVE_DETACH;
}

static bool attach_op(enum op op)
{
	return op == OP_ATTACH || op == OP_LIVE_ATTACH || op == OP_LIVE_ATTACH_NEW;
}

/* The settings a set operation moves to, from @s (the volume's before it). */
static void set_target(enum op op, struct tc_volume_settings *s)
{
	switch (op) {
	case OP_SET:
		s->write_policy = TC_WP_WA;
		s->flush_rate = TC_FLUSH_HIGH;
		break;
	case OP_SET_ALL:
		s->read_cache = !s->read_cache;
		s->write_policy = TC_WP_PT;
		s->flush_rate = TC_FLUSH_MEDIUM;
		s->admission = TC_ADMIT_NHIT;
		s->fill = s->fill == TC_FILL_LINE ? TC_FILL_SECTORS : TC_FILL_LINE;
		s->nhit = 3;
		s->seq_cutoff = 1 * MIB;
		s->reserve = TC_SHARE_PCT | 10;
		s->cap = TC_SHARE_PCT | 50;
		break;
	case OP_SET_PARTITION:
		s->reserve = 1 * MIB;
		s->cap = 4 * MIB;
		break;
	case OP_SET_DRAIN:
		s->write_policy = TC_WP_WT;
		break;
	default:
		break;
	}
}

static bool settings_eq(const struct tc_volume_settings *a, const struct tc_volume_settings *b)
{
	return a->read_cache == b->read_cache && a->write_policy == b->write_policy &&
	       a->flush_rate == b->flush_rate && a->admission == b->admission &&
	       a->fill == b->fill && a->nhit == b->nhit && a->seq_cutoff == b->seq_cutoff &&
	       a->reserve == b->reserve && a->cap == b->cap;
}

static struct tc_volume_settings set_old, set_new;   /* of the set operation cut */

static uint8_t pattern[64 * 1024];

/* Fresh files in the state before @op: a backing (attached for all but attach, with
 * the pattern written through the cache: write-through, or write-back and left dirty
 * in the cache for flush and the write-back detaches) and a cache. */
static void prepare(struct t_host_fx *f, enum op op)
{
	tc_dev *ssd, *hdd;
	tc_cache *c;
	tc_volume *v;

	unlink(f->ssd);
	unlink(f->hdd);
	t_format(f->ctx, f->ssd, SSD_SIZE, NULL, 0);
	t_format(f->ctx, f->hdd, HDD_SIZE, "vol", wb_op(op) ? TC_WP_WB : TC_WP_WT);
	assert_int_equal(tc_dev_open_file(f->ctx, f->ssd, 0, 0, &ssd), 0);
	assert_int_equal(tc_dev_open_file(f->ctx, f->hdd, 0, 0, &hdd), 0);
	assert_int_equal(tc_cache_open(f->ctx, ssd, &c), 0);
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.write_policy = wb_op(op) ? TC_WP_WB : TC_WP_WT;
	s.flush_rate = TC_FLUSH_LOW;
	assert_int_equal(tc_cache_attach(c, hdd, &s, 0, &v), 0);
	assert_int_equal(tc_volume_pwrite(v, pattern, sizeof(pattern), 1 * MIB, TC_IO_FUA), 0);
	if (attach_op(op) || format_op(op))
		assert_int_equal(tc_volume_detach(v, 0, NULL, NULL), 0);
	if (format_op(op)) {
		/* Attached again: the old cache holds the volume's record and lines. */
		assert_int_equal(tc_cache_attach(c, hdd, NULL, 0, &v), 0);
		assert_int_equal(tc_volume_pwrite(v, pattern, sizeof(pattern), 1 * MIB,
						  TC_IO_FUA), 0);
	}
	assert_int_equal(tc_cache_close(c), 0);
	tc_dev_close(hdd);
	tc_dev_close(ssd);
}

/* A create over an old superblock, the power cut after @n requests (on the device
 * formatted); true when it completed uncut. */
static bool run_cut_format(struct t_host_fx *f, enum op op, uint64_t n)
{
	struct cut_budget b = { .used = 0, .limit = n };
	const char *path = op == OP_FORMAT_CACHE ? f->ssd : f->hdd;
	tc_dev *crash;
	assert_int_equal(tc_dev_new_crash(f->ctx, path, 0, 0, n + 1, &crash), 0);
	tc_dev *dev = cut_new(f->ctx, crash, &b);
	int r;
	if (op == OP_FORMAT_CACHE) {
		struct tc_cache_opts o;
		tc_cache_opts_default(&o);
		o.line_size = 16384;
		o.unprotected_writeback = true;
		r = tc_cache_format(f->ctx, dev, &o);
	} else {
		struct tc_volume_settings s;
		tc_volume_settings_default(&s);
		s.write_policy = TC_WP_WT;
		r = tc_backing_format(f->ctx, dev, "vol", &s);
	}
	bool done = r == 0 && atomic_load(&b.used) <= n;
	atomic_store(&b.limit, 0);
	assert_true(tc_crash_power_cut(crash) >= 0);
	tc_dev_close(dev);
	tc_dev_close(crash);
	return done;
}

/* The devices a host opened, each put behind a cutter spending @b (tc_host_opts
 * wrap_dev): the crash devices under them kept for the power cut (NULL once the host
 * has closed one). */
struct live_wrap {
	tc_ctx *ctx;
	struct cut_budget *b;
	tc_dev *crash[4];
	unsigned n;
};

/* A client of the export during a live operation: LIVE_WRITES FUA writes of 4 KiB at
 * LIVE_OFF, each block once, one after the other; live_done[i]: write i completed. */
#define LIVE_WRITES 8
#define LIVE_OFF (2u * MIB)
static bool live_done[LIVE_WRITES];

static void live_block(unsigned i, uint8_t *buf)
{
	for (unsigned k = 0; k < 4096; k++)
		buf[k] = (uint8_t)(i * 31 + k * 5 + 1);
}

static void *live_client(void *arg)
{
	tc_export *e = arg;
	uint8_t *buf = aligned_alloc(4096, 4096);
	assert_non_null(buf);
	for (unsigned i = 0; i < LIVE_WRITES; i++) {
		live_block(i, buf);
		live_done[i] = tc_export_io(e, TC_OP_WRITE, TC_IO_FUA, buf, 4096,
					    LIVE_OFF + i * 4096ull) == 0;
	}
	free(buf);
	return NULL;
}

static int live_wrap_dev(void *opaque, tc_dev **dev)
{
	struct live_wrap *w = opaque;
	assert_true(w->n < 4);
	w->crash[w->n] = *dev;
	*dev = cut_new_owning(w->ctx, *dev, w->b, &w->crash[w->n]);
	w->n++;
	return 0;
}

/* A live operation, the power cut after @n requests: a host serves the backing (with
 * the cache among its devices, or not for OP_LIVE_ATTACH_NEW) on crash devices behind
 * cutters; the operation runs through the host; then the power fails and the host
 * dies (its close reaches no device).  True when it completed uncut. */
static bool run_cut_live(struct t_host_fx *f, enum op op, uint64_t n)
{
	struct cut_budget b = { .used = 0, .limit = UINT64_MAX };
	struct live_wrap w = { .ctx = f->ctx, .b = &b };
	struct tc_host_opts o = { .crash_seed = n + 1, .wrap_dev = live_wrap_dev,
		.wrap_opaque = &w };
	const char *both[] = { f->crash_ssd, f->crash_hdd };
	const char *const *specs = op == OP_LIVE_ATTACH_NEW ? both + 1 : both;
	tc_host *h;
	assert_int_equal(tc_host_assemble(f->ctx, specs, op == OP_LIVE_ATTACH_NEW ? 1 : 2, &o,
					  &h), 0);
	assert_int_equal(tc_host_export_count(h), 1);
	tc_export *e = tc_host_export_at(h, 0);
	struct tc_export_info info;
	tc_export_info(e, &info);
	assert_int_equal(info.state, op == OP_LIVE_DETACH ? TC_EXPORT_CACHED
			 : TC_EXPORT_UNCACHED);
	/* Durable before the cut: what the assembly wrote. */
	for (unsigned i = 0; i < w.n; i++)
		assert_int_equal(tc_dev_flush(w.crash[i]), 0);
	cut_budget_start(&b, n);
	pthread_t client;
	assert_int_equal(pthread_create(&client, NULL, live_client, e), 0);
	int r;
	if (op == OP_LIVE_DETACH) {
		r = tc_host_detach(h, e, 0, NULL, NULL);
	} else {
		tc_export *got;
		r = tc_host_attach(h, f->crash_ssd, f->crash_hdd, NULL, 0, &got);
		if (r == 0)
			assert_ptr_equal(got, e);
	}
	pthread_join(client, NULL);
	bool done = cut_budget_done(&b, n) && r == 0;
	for (unsigned i = 0; i < w.n; i++)
		if (w.crash[i])   /* not closed by a failed attach */
			assert_true(tc_crash_power_cut(w.crash[i]) >= 0);
	(void)tc_host_close(h);   /* every request fails: the files stay as cut */
	return done;
}

/* Run @op with the power cut after @n requests; returns true when it completed uncut. */
static bool run_cut(struct t_host_fx *f, enum op op, uint64_t n)
{
	if (format_op(op))
		return run_cut_format(f, op, n);
	if (live_op(op))
		return run_cut_live(f, op, n);
	struct cut_budget b = { .used = 0, .limit = UINT64_MAX };
	tc_dev *cs, *ch;
	assert_int_equal(tc_dev_new_crash(f->ctx, f->ssd, 0, 0, n + 1, &cs), 0);
	assert_int_equal(tc_dev_new_crash(f->ctx, f->hdd, 0, 0, n + 7, &ch), 0);
	tc_dev *ssd = cut_new(f->ctx, cs, &b), *hdd = cut_new(f->ctx, ch, &b);
	tc_cache *c;
	tc_volume *v = NULL;
	assert_int_equal(tc_cache_open(f->ctx, ssd, &c), 0);
	if (op != OP_ATTACH)
		assert_int_equal(tc_cache_attach(c, hdd, NULL, 0, &v), 0);
	/* Durable before the cut: what the open and the attach before it wrote. */
	assert_int_equal(tc_dev_flush(cs), 0);
	assert_int_equal(tc_dev_flush(ch), 0);
	atomic_store(&b.used, 0);
	atomic_store(&b.limit, n);
	int r;
	struct tc_volume_settings s;
	switch (op) {
	case OP_ATTACH:
		r = tc_cache_attach(c, hdd, NULL, 0, &v);
		break;
	case OP_SET:
	case OP_SET_ALL:
	case OP_SET_PARTITION:
	case OP_SET_DRAIN:
		tc_volume_get(v, &s);
		set_old = s;
		set_target(op, &s);
		set_new = s;
		r = tc_volume_set(v, &s, NULL, NULL);
		break;
	case OP_FLUSH:
		r = tc_volume_flush_dirty(v, NULL, NULL);
		break;
	case OP_DETACH_DISCARD:
		r = tc_volume_detach(v, TC_DETACH_DISCARD_DIRTY, NULL, NULL);
		break;
	case OP_DETACH:
	case OP_DETACH_WB:
	default:
		r = tc_volume_detach(v, 0, NULL, NULL);
		break;
	}
	bool done = r == 0 && atomic_load(&b.used) <= n;
	/* The power fails: nothing more reaches the files, then each crash device keeps
	 * its seed's choice of what was not flushed. */
	atomic_store(&b.limit, 0);
	tc_cache_abandon(c);
	assert_true(tc_crash_power_cut(cs) >= 0);
	assert_true(tc_crash_power_cut(ch) >= 0);
	tc_dev_close(hdd);
	tc_dev_close(ssd);
	tc_dev_close(ch);
	tc_dev_close(cs);
	return done;
}

/* A copy of file @from at @to, holes kept. */
static void copy_file(const char *from, const char *to)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "cp --sparse=always '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

/*
 * A detach that discarded dirty data and was cut may leave metadata entries naming
 * the volume's id on the cache device.  A new volume given that id (the first free
 * record) must never see them, not even after a crash before the cache's first
 * commit: on a copy of the cache device as the cut left it (ssd2), attach a fresh
 * backing, cut the power without a commit, and read where the discarded data was.
 */
static void check_id_reuse(struct t_host_fx *f, uint64_t n)
{
	tc_dev *cs, *hdd2, *ssd, *hdd;
	tc_cache *c;
	tc_volume *v;
	static uint8_t back[sizeof(pattern)], zeros[sizeof(pattern)];

	unlink(f->hdd2);
	t_format(f->ctx, f->hdd2, HDD_SIZE, "vol2", TC_WP_WT);
	assert_int_equal(tc_dev_new_crash(f->ctx, f->ssd2, 0, 0, n + 3, &cs), 0);
	assert_int_equal(tc_dev_open_file(f->ctx, f->hdd2, 0, 0, &hdd2), 0);
	assert_int_equal(tc_cache_open(f->ctx, cs, &c), 0);
	assert_int_equal(tc_cache_attach(c, hdd2, NULL, 0, &v), 0);
	tc_cache_abandon(c);
	assert_true(tc_crash_power_cut(cs) >= 0);
	tc_dev_close(hdd2);
	tc_dev_close(cs);

	assert_int_equal(tc_dev_open_file(f->ctx, f->ssd2, 0, 0, &ssd), 0);
	assert_int_equal(tc_dev_open_file(f->ctx, f->hdd2, 0, 0, &hdd), 0);
	assert_int_equal(tc_cache_open(f->ctx, ssd, &c), 0);
	assert_int_equal(tc_cache_attach(c, hdd, NULL, 0, &v), 0);
	assert_int_equal(tc_volume_pread(v, back, sizeof(back), 1 * MIB), 0);
	if (memcmp(back, zeros, sizeof(back)))
		fail_msg("cut after %llu requests: detach (dirty data discarded) done, then a "
			 "new volume attached under the freed id reads the discarded volume's "
			 "data", (unsigned long long)n);
	assert_int_equal(tc_cache_close(c), 0);
	tc_dev_close(hdd);
	tc_dev_close(ssd);
}

/* After the cut: the devices assemble; the volume is in the old or the new state. */
static void check_after(struct t_host_fx *f, enum op op, uint64_t n, bool done)
{
	const char *specs[] = { f->ssd, f->hdd };
	tc_host *h;
	int r = tc_host_assemble(f->ctx, specs, 2, NULL, &h);
	if (r)
		fail_msg("cut after %llu requests: the devices do not assemble (%d)",
			 (unsigned long long)n, r);
	assert_int_equal(tc_host_export_count(h), 1);
	tc_export *e = tc_host_export_at(h, 0);
	struct tc_export_info info;
	tc_export_info(e, &info);
	bool cached = info.state == TC_EXPORT_CACHED;
	switch (op) {
	case OP_ATTACH:
	case OP_LIVE_ATTACH:
	case OP_LIVE_ATTACH_NEW:
		if (done)
			assert_true(cached);
		break;
	case OP_DETACH:
	case OP_DETACH_WB:
	case OP_DETACH_DISCARD:
	case OP_LIVE_DETACH:
		if (done)
			assert_false(cached);
		break;
	case OP_FLUSH:
		assert_true(cached);
		break;
	case OP_FORMAT_CACHE:
	case OP_FORMAT_BACKING:
		/* Old: the volume served through its cache; new: an empty cache (or a new
		 * backing) that no longer knows the other, the volume served alone. */
		if (done && cached)
			fail_msg("%s completed uncut but the volume is still cached",
				 op_names[op]);
		if (!tc_host_cache_at(h, 0, NULL))
			fail_msg("cut after %llu requests: %s: the cache device opens neither as "
				 "the old cache nor as the new one", (unsigned long long)n,
				 op_names[op]);
		break;
	case OP_SET:
	case OP_SET_ALL:
	case OP_SET_PARTITION:
	case OP_SET_DRAIN: {
		assert_true(cached);
		struct tc_volume_settings s;
		tc_volume_get(info.volume, &s);
		bool old = settings_eq(&s, &set_old), new = settings_eq(&s, &set_new);
		if (!old && !new)
			fail_msg("cut after %llu requests: %s: settings neither old nor new "
				 "(policy %u, flush rate %u, admission %u, reserve %#llx, cap "
				 "%#llx)", (unsigned long long)n, op_names[op], s.write_policy,
				 s.flush_rate, s.admission, (unsigned long long)s.reserve,
				 (unsigned long long)s.cap);
		if (done && !new)
			fail_msg("%s completed uncut but the old settings came back",
				 op_names[op]);
		break;
	}
	}
	/* The data: as written, except that a detach discarding dirty data leaves the
	 * backing's old contents (zeros) once it is done.  The old state is the volume
	 * attached with its dirty data, the new one the volume detached: attached
	 * without its dirty data is neither. */
	static uint8_t back[sizeof(pattern)], zeros[sizeof(pattern)];
	assert_int_equal(tc_export_io(e, TC_OP_READ, 0, back, sizeof(back), 1 * MIB), 0);
	if (op == OP_DETACH_DISCARD && !cached && !memcmp(back, zeros, sizeof(back)))
		;   /* the new state */
	else if (memcmp(back, pattern, sizeof(pattern)))
		fail_msg("cut after %llu requests: %s: neither the old state nor the new: "
			 "the volume is %s and reads %s", (unsigned long long)n, op_names[op],
			 cached ? "attached" : "detached",
			 memcmp(back, zeros, sizeof(back)) ? "other data than was written"
			 : "the backing's old contents (its dirty data lost)");
	/* A live operation's client: each FUA write that completed reads back; the others
	 * read as written or as before (zeros). */
	for (unsigned i = 0; live_op(op) && i < LIVE_WRITES; i++) {
		static uint8_t blk[4096], want[4096];
		live_block(i, want);
		assert_int_equal(tc_export_io(e, TC_OP_READ, 0, blk, 4096,
					      LIVE_OFF + i * 4096ull), 0);
		bool as_written = !memcmp(blk, want, 4096);
		if (live_done[i] && !as_written)
			fail_msg("cut after %llu requests: %s: the client's FUA write %u completed "
				 "during the operation but reads %s", (unsigned long long)n,
				 op_names[op], i, memcmp(blk, zeros, 4096) ? "other data"
				 : "as before it (zeros)");
		if (!as_written && memcmp(blk, zeros, 4096))
			fail_msg("cut after %llu requests: %s: the client's write %u reads "
				 "neither as written nor as before", (unsigned long long)n,
				 op_names[op], i);
	}
	assert_int_equal(tc_host_close(h), 0);
	if (op == OP_DETACH_DISCARD && !cached)
		check_id_reuse(f, n);
}


static void cut_every_request(void **state, enum op op)
{
	struct t_host_fx *f = *state;
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + 3);
	uint64_t n;
	for (n = 0; n < MAX_CUTS; n++) {
		prepare(f, op);
		bool done = run_cut(f, op, n);
		if (op == OP_DETACH_DISCARD)
			copy_file(f->ssd, f->ssd2);
		check_after(f, op, n, done);
		if (done)
			break;
	}
	assert_true(n < MAX_CUTS);
	print_message("  %s: cut at each of its %llu requests, all-or-nothing\n",
			      op_names[op], (unsigned long long)n);
}

static void test_attach(void **state) { cut_every_request(state, OP_ATTACH); }
static void test_set(void **state) { cut_every_request(state, OP_SET); }
static void test_detach(void **state) { cut_every_request(state, OP_DETACH); }
static void test_flush(void **state) { cut_every_request(state, OP_FLUSH); }
static void test_detach_wb(void **state) { cut_every_request(state, OP_DETACH_WB); }
static void test_detach_discard(void **state) { cut_every_request(state, OP_DETACH_DISCARD); }
static void test_set_all(void **state) { cut_every_request(state, OP_SET_ALL); }
static void test_set_partition(void **state) { cut_every_request(state, OP_SET_PARTITION); }
static void test_set_drain(void **state) { cut_every_request(state, OP_SET_DRAIN); }
static void test_format_cache(void **state) { cut_every_request(state, OP_FORMAT_CACHE); }
static void test_format_backing(void **state) { cut_every_request(state, OP_FORMAT_BACKING); }
static void test_live_attach(void **state) { cut_every_request(state, OP_LIVE_ATTACH); }
static void test_live_attach_new(void **state) { cut_every_request(state, OP_LIVE_ATTACH_NEW); }
static void test_live_detach(void **state) { cut_every_request(state, OP_LIVE_DETACH); }

static int setup(void **state)
{
	t_host_setup(state, "tc-mgmt-cut", TC_LOG_ERROR);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_attach, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_set, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_detach, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_flush, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_detach_wb, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_detach_discard, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_set_all, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_set_partition, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_set_drain, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_format_cache, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_format_backing, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_live_attach, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_live_attach_new, setup, t_host_teardown),
		cmocka_unit_test_setup_teardown(test_live_detach, setup, t_host_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
