/* SPDX-License-Identifier: MIT */
/*
 * policy_trace.h - the replacement policies' tests on a real trace and in a
 * miniature engine: the repository's traces/libcachesim/cloudPhysicsIO.vscsi.xz (or
 * the same name under $TC_TRACES_DIR) split into the 4 KiB pages each request
 * touches, pages renumbered densely in order of first use; a simulation that drives
 * a policy's ops as alloc.c does (miss(), victim() with an unmapping can_evict(),
 * insert(), touch()); and the same references as 4 KiB reads through a real cache
 * (policy_engine.h).
 *
 * Static functions only (pt_ prefix); include after cmocka.h and policy_engine.h.
 */
#ifndef TC_TEST_POLICY_TRACE_H
#define TC_TEST_POLICY_TRACE_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "policy.h"
#include "replay/rstream.h"

#ifndef TC_SOURCE_ROOT
#error "TC_SOURCE_ROOT (the source tree's root) must be defined by the build"
#endif

#define TRACE_FILE "libcachesim/cloudPhysicsIO.vscsi.xz"
#define TRACE_PAGES 269210u          /* distinct 4 KiB pages (traces/README.md) */
#define TRACE_SLOTS 26921u           /* 10 % of them, rounded down */

static __attribute__((unused)) uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

/* trace_path - @out = $TC_TRACES_DIR (else <source root>/traces) / TRACE_FILE; the
 * file must be readable: the repository carries it. */
static void trace_path(char *out, size_t size)
{
	const char *dir = getenv("TC_TRACES_DIR");
	int n;

	if (!dir || !*dir)
		dir = TC_SOURCE_ROOT "/traces";
	n = snprintf(out, size, "%s/%s", dir, TRACE_FILE);
	assert_true(n > 0 && (size_t)n < size);
	if (access(out, R_OK))
		fail_msg("trace %s: %s", out, strerror(errno));
}

/* read_rec - the next @len bytes of @s into @rec: true if they were all there, false at
 * the end of the data; a read error or a partial record fails the test. */
static bool read_rec(struct rstream *s, const char *path, uint8_t *rec, size_t len)
{
	ssize_t got = rstream_read(s, rec, len);

	if (got < 0)
		fail_msg("trace %s: %s", path, rstream_error(s));
	if (got != 0 && (size_t)got != len)
		fail_msg("trace %s: a partial record of %zd bytes at the end (records are %zu)",
			 path, got, len);
	return got != 0;
}

struct page_trace {
	uint32_t *pages;   /* 4 KiB page numbers in access order */
	size_t n;
	uint32_t max_page;
};

/* load_trace - read VSCSI v1 or v2 records (plain or compressed) and split each
 * request into the 4 KiB pages it touches. */
static void load_trace(const char *path, struct page_trace *t)
{
	struct rstream *s;
	char err[512];
	uint8_t rec[40];
	size_t reclen = 32, cap = 1u << 21;
	unsigned version = 1;
	int r = rstream_open(path, &s, err, sizeof(err));

	if (r)
		fail_msg("%s", err);
	memset(t, 0, sizeof(*t));
	t->pages = malloc(sizeof(uint32_t) * cap);
	assert_non_null(t->pages);
	if (!read_rec(s, path, rec, 32))
		fail_msg("trace %s: empty", path);
	if ((le(rec + 14, 2) >> 8) != 1) {
		if ((le(rec + 2, 2) >> 8) != 2)
			fail_msg("trace %s: the first record is neither VSCSI v1 (ver 0x%04x) nor "
				 "v2 (ver 0x%04x)", path, (unsigned)le(rec + 14, 2),
				 (unsigned)le(rec + 2, 2));
		version = 2;
		reclen = 40;
		if (rstream_read(s, rec + 32, 8) != 8)
			fail_msg("trace %s: the first VSCSI v2 record is cut short", path);
	}
	/* rec holds the first record; each turn handles one and reads the next. */
	do {
		uint64_t len, lbn, first, last;

		if (version == 1) {
			len = le(rec + 4, 4);
			lbn = le(rec + 16, 8);
		} else {
			len = le(rec + 8, 4);
			lbn = le(rec + 16, 8);
		}
		if (len == 0)
			continue;
		first = lbn * 512 / 4096;
		last = (lbn * 512 + len - 1) / 4096;
		assert_true(last < UINT32_MAX);
		for (uint64_t p = first; p <= last; p++) {
			if (t->n == cap) {
				cap *= 2;
				t->pages = realloc(t->pages, sizeof(uint32_t) * cap);
				assert_non_null(t->pages);
			}
			t->pages[t->n++] = (uint32_t)p;
			if (p > t->max_page)
				t->max_page = (uint32_t)p;
		}
	} while (read_rec(s, path, rec, reclen));
	rstream_close(s);
}

/* pt_dense - load the trace, renumber its pages densely in order of first use:
 * *@dense[i] for i < *@n, *@npages distinct pages (checked against TRACE_PAGES). */
static __attribute__((unused)) void pt_dense(uint32_t **dense, size_t *n, uint32_t *npages)
{
	char path[PATH_MAX];
	struct page_trace t;
	uint32_t *id, next = 0;

	trace_path(path, sizeof(path));
	load_trace(path, &t);
	id = malloc(sizeof(uint32_t) * ((size_t)t.max_page + 1));
	*dense = malloc(sizeof(uint32_t) * t.n);
	assert_non_null(id);
	assert_non_null(*dense);
	memset(id, 0xff, sizeof(uint32_t) * ((size_t)t.max_page + 1));
	for (size_t i = 0; i < t.n; i++) {
		if (id[t.pages[i]] == UINT32_MAX)
			id[t.pages[i]] = next++;
		(*dense)[i] = id[t.pages[i]];
	}
	assert_int_equal(next, TRACE_PAGES);
	*n = t.n;
	*npages = next;
	free(id);
	free(t.pages);
}

/* ---- a miniature engine ------------------------------------------------------------ */

struct pt_sim {
	const struct tc_repl_ops *ops;
	struct tc_repl *r;
	struct tc_line *lines;
	uint32_t nslots, used;
	uint32_t *map;          /* [nkeys] slot or TC_SLOT_NONE */
	uint32_t nkeys;
	uint64_t accesses, misses;
	uint32_t evlog[64];     /* the first 64 evicted keys, in order */
	uint32_t nev;           /* evictions so far */
};

static __attribute__((unused)) void pt_sim_init(struct pt_sim *s, const struct tc_repl_ops *ops,
				 uint32_t nslots, uint32_t nkeys)
{
	memset(s, 0, sizeof(*s));
	s->ops = ops;
	s->nslots = nslots;
	s->nkeys = nkeys;
	s->lines = calloc(nslots ? nslots : 1, sizeof(*s->lines));
	s->map = malloc(sizeof(uint32_t) * nkeys);
	assert_non_null(s->lines);
	assert_non_null(s->map);
	memset(s->map, 0xff, sizeof(uint32_t) * nkeys);
	assert_int_equal(ops->create(&s->r, s->lines, nslots), 0);
}

static __attribute__((unused)) void pt_sim_fini(struct pt_sim *s)
{
	s->ops->destroy(s->r);
	free(s->lines);
	free(s->map);
}

/* pt_sim_evict - what alloc.c's can_evict() does to a slot it accepts: unmaps it. */
static bool pt_sim_evict(void *arg, uint32_t slot)
{
	struct pt_sim *s = arg;
	struct tc_line *l = &s->lines[slot];

	assert_int_equal(l->vol, 1);
	assert_int_equal(s->map[l->line_no], slot);
	s->map[l->line_no] = TC_SLOT_NONE;
	if (s->nev < 64)
		s->evlog[s->nev] = l->line_no;
	s->nev++;
	l->vol = 0;
	l->line_no = 0;
	return true;
}

/* pt_sim_access - one access to @key (volume 1); true on a hit. */
static __attribute__((unused)) bool pt_sim_access(struct pt_sim *s, uint32_t key)
{
	uint32_t slot = s->map[key];

	s->accesses++;
	if (slot != TC_SLOT_NONE) {
		s->ops->touch(s->r, slot);
		return true;
	}
	s->misses++;
	if (s->ops->miss)
		s->ops->miss(s->r, tc_line_key(1, key));
	if (s->used < s->nslots) {
		slot = s->used++;
	} else {
		assert_int_equal(s->ops->victim(s->r, pt_sim_evict, s, &slot), 0);
		assert_int_equal(s->lines[slot].vol, 0);
	}
	s->lines[slot].vol = 1;
	s->lines[slot].line_no = key;
	s->ops->insert(s->r, slot);
	s->map[key] = slot;
	return false;
}

/* pt_sim_replay - miss ratio of @ops with @lines slots on @dense[0..@n). */
static __attribute__((unused)) double pt_sim_replay(const struct tc_repl_ops *ops, uint32_t lines,
				     const uint32_t *dense, size_t n, uint32_t npages)
{
	struct pt_sim s;
	double mr;

	pt_sim_init(&s, ops, lines, npages);
	for (size_t i = 0; i < n; i++)
		pt_sim_access(&s, dense[i]);
	mr = (double)s.misses / (double)s.accesses;
	pt_sim_fini(&s);
	return mr;
}

/* pt_sim_table - with TC_POLICY_TABLE set in the environment, print @ops's miss ratio
 * in the miniature engine at 1, 5, 10 and 20 % of @npages, rounded down as
 * libCacheSim rounds (the "table:" lines of docs/policy.md); else nothing. */
static __attribute__((unused)) void pt_sim_table(const struct tc_repl_ops *ops,
						 const uint32_t *dense, size_t n,
						 uint32_t npages)
{
	static const unsigned pct[] = { 1, 5, 10, 20 };

	if (!getenv("TC_POLICY_TABLE"))
		return;
	for (size_t k = 0; k < sizeof(pct) / sizeof(pct[0]); k++) {
		uint32_t lines = (uint32_t)((uint64_t)npages * pct[k] / 100);

		print_message("table: %s %u%% (%u lines): %.4f\n", ops->name, pct[k], lines,
			      pt_sim_replay(ops, lines, dense, n, npages));
	}
}

/* pt_engine_replay - page miss ratio of replacement @repl (enum tc_replacement)
 * with @lines lines of 4 KiB, each reference one 4 KiB read through a real cache in
 * write-through (nothing is ever dirty, so eviction order is the policy's own). */
static __attribute__((unused)) double pt_engine_replay(unsigned repl, uint32_t lines,
					const uint32_t *dense, size_t n, uint32_t npages)
{
	struct pe e;
	struct tc_volume_stats st;

	pe_up(&e, repl, lines, npages, TC_WP_WT);
	for (size_t i = 0; i < n; i++)
		pe_read(&e, dense[i]);
	tc_volume_stats(e.v, &st);
	pe_down(&e);
	assert_int_equal(st.read_hits + st.read_misses + st.read_partial_hits, n);
	return (double)(st.read_misses + st.read_partial_hits) / (double)n;
}

static bool pt_refuse_all(void *arg, uint32_t slot)
{
	(*(uint32_t *)arg)++;
	return false;
}

/* pt_refusal_bound - a cache of 10,000 resident slots that can_evict() refuses
 * entirely: each victim() call gives up with -ENOSPC after at most
 * TC_REPL_MAX_REFUSALS questions (policy.h), call after call, and once lines may go
 * again one is found. */
static __attribute__((unused)) void pt_refusal_bound(const struct tc_repl_ops *ops)
{
	struct pt_sim s;
	uint32_t calls, slot;

	pt_sim_init(&s, ops, 10000, 20000);
	for (uint32_t k = 0; k < 10000; k++)
		pt_sim_access(&s, k);
	for (uint32_t k = 0; k < 5000; k += 3)
		pt_sim_access(&s, k);            /* some hits, so queues differ */
	for (int round = 0; round < 50; round++) {
		calls = 0;
		if (ops->miss)
			ops->miss(s.r, tc_line_key(1, 10000u + (uint32_t)round));
		assert_int_equal(ops->victim(s.r, pt_refuse_all, &calls, &slot), -ENOSPC);
		assert_true(calls >= 1 && calls <= TC_REPL_MAX_REFUSALS);
	}
	assert_int_equal(ops->victim(s.r, pt_sim_evict, &s, &slot), 0);
	assert_int_equal(s.lines[slot].vol, 0);
	pt_sim_fini(&s);
}

#endif /* TC_TEST_POLICY_TRACE_H */
