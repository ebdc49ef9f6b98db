/* SPDX-License-Identifier: MIT */
/*
 * test_policy_arc.c - ARC (src/cache/policy_arc.c): p moves toward recency on B1 hits
 * and toward frequency on B2 hits, REPLACE takes from T1 or T2 as p says, ghost hits
 * go to T2, T2 survives scans; refusals are bounded; and the page miss ratio on the
 * repository's cloudPhysicsIO trace at 10 % against libCacheSim's figure
 * (traces/README.md), which comes from a unit slip in libCacheSim's ARC.c that this
 * test reproduces on purpose (see test_trace_miss_ratio).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include "tiercache.h"
#include "policy_engine.h"
#include "policy_trace.h"

int tc_repl_arc_state(struct tc_repl *r, uint32_t slot, uint32_t *p, uint32_t sizes[4]);
void tc_repl_arc_set_unit(struct tc_repl *r, uint32_t unit);

#define T1 0
#define T2 1

static void assert_arc(struct pt_sim *s, uint32_t key, int list, uint32_t p,
		       uint32_t t1, uint32_t t2, uint32_t b1, uint32_t b2)
{
	uint32_t pp, sz[4];

	assert_int_equal(tc_repl_arc_state(s->r, s->map[key], &pp, sz), list);
	assert_int_equal(pp, p);
	assert_int_equal(sz[0], t1);
	assert_int_equal(sz[1], t2);
	assert_int_equal(sz[2], b1);
	assert_int_equal(sz[3], b2);
}

/*
 * 8 lines.  0..3 twice: T2.  4..7: T1, the cache is full.  8 and 9 evict T1's LRU
 * (4, 5) into B1 (|T1| = 4 > p = 0).  B1 hits on 4, 5, 6 raise p to 1, 2, 3 (step
 * max(|B2| / |B1|, 1) = 1), each REPLACE taking T1's LRU (6, 7) while |T1| > p; at
 * p = 3 > |T1| = 2 REPLACE takes T2's LRU, 0, into B2.  The B2 hit on 0 lowers p to
 * 2, and with |T1| = p and the key in B2, REPLACE takes T1's LRU (8).
 */
static void test_p_adapts(void **state)
{
	static const uint32_t order[] = { 4, 5, 6, 7, 0, 8 };
	struct pt_sim s;

	pt_sim_init(&s, &tc_repl_arc, 8, 100);
	for (uint32_t k = 0; k < 4; k++)
		pt_sim_access(&s, k);
	for (uint32_t k = 0; k < 4; k++)
		pt_sim_access(&s, k);
	for (uint32_t k = 4; k < 8; k++)
		pt_sim_access(&s, k);
	assert_arc(&s, 0, T2, 0, 4, 4, 0, 0);
	assert_arc(&s, 7, T1, 0, 4, 4, 0, 0);
	pt_sim_access(&s, 8);
	pt_sim_access(&s, 9);
	assert_arc(&s, 9, T1, 0, 4, 4, 2, 0);
	pt_sim_access(&s, 4);                  /* B1 hit: recency */
	assert_arc(&s, 4, T2, 1, 3, 5, 2, 0);
	pt_sim_access(&s, 5);
	assert_arc(&s, 5, T2, 2, 2, 6, 2, 0);
	pt_sim_access(&s, 6);                  /* p = 3 > |T1|: T2 gives 0 to B2 */
	assert_arc(&s, 6, T2, 3, 2, 6, 1, 1);
	pt_sim_access(&s, 0);                  /* B2 hit: frequency */
	assert_arc(&s, 0, T2, 2, 1, 7, 2, 0);
	assert_int_equal(s.nev, 6);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(s.evlog[i], order[i]);
	/* Hits: T1 -> T2, T2 -> T2's MRU. */
	pt_sim_access(&s, 9);
	assert_arc(&s, 9, T2, 2, 0, 8, 2, 0);
	pt_sim_fini(&s);
}

/*
 * Through a real cache of 20 lines: 0..9 read twice live in T2; a scan of 100 lines
 * read once churns T1 only (p stays 0), so 0..9 survive it, where LRU would keep
 * none.  B1 then remembers the last 10 lines T1 dropped (|T1| + |B1| <= c): reading
 * 189 again is a B1 hit, so 189 goes to T2 and survives a second scan, while 190,
 * still in T1 when the scan began, does not.
 */
static void test_engine_scan(void **state)
{
	struct pe e;

	pe_up(&e, TC_REPL_ARC, 20, 500, TC_WP_WT);
	for (int round = 0; round < 2; round++)
		for (uint32_t l = 0; l < 10; l++)
			pe_read(&e, l);
	for (uint32_t l = 100; l < 200; l++)
		pe_read(&e, l);
	for (uint32_t l = 0; l < 10; l++)
		assert_true(pe_resident(&e, l));
	assert_false(pe_resident(&e, 189));
	assert_true(pe_resident(&e, 199));
	pe_read(&e, 189);
	for (uint32_t l = 300; l < 400; l++)
		pe_read(&e, l);
	for (uint32_t l = 0; l < 10; l++)
		assert_true(pe_resident(&e, l));
	assert_true(pe_resident(&e, 189));
	assert_false(pe_resident(&e, 199));
	pe_down(&e);
}

static void test_refusal_bound(void **state)
{
	pt_refusal_bound(&tc_repl_arc);
}

/*
 * cloudPhysicsIO, 4 KiB pages, 10 % of its distinct pages (26,921 lines).
 * libCacheSim's figure is .8362.  Its ARC.c keeps p in bytes (objects of 4096 bytes
 * here) but adds the paper's step, max(|B2| / |B1|, 1), in objects: p moves 4096 times
 * slower than the paper's, and stays near 0.  With p counted the same way
 * (tc_repl_arc_set_unit(4096)) the miniature engine prints .8362: that checks every
 * other step against libCacheSim, to 0.0005.  The paper's ARC, the policy as shipped,
 * gives .8245 (better, since p can adapt), which the real cache must reproduce within
 * 0.002 of this simulation's own figure, pinned so changes are noticed; the two
 * differ only where the engine asks for its victim.
 */
#define ARC_REF 0.8362           /* libCacheSim, traces/README.md */
#define ARC_REF_TOL 0.0005
#define ARC_SELF 0.8245          /* the paper's ARC, this implementation */
#define ARC_SELF_TOL 0.002

static void test_trace_miss_ratio(void **state)
{
	uint32_t *dense, npages;
	size_t n;
	double bytes, paper, eng;
	struct pt_sim s;

	pt_dense(&dense, &n, &npages);
	pt_sim_init(&s, &tc_repl_arc, TRACE_SLOTS, npages);
	tc_repl_arc_set_unit(s.r, 4096);
	for (size_t i = 0; i < n; i++)
		pt_sim_access(&s, dense[i]);
	bytes = (double)s.misses / (double)s.accesses;
	pt_sim_fini(&s);
	paper = pt_sim_replay(&tc_repl_arc, TRACE_SLOTS, dense, n, npages);
	eng = pt_engine_replay(TC_REPL_ARC, TRACE_SLOTS, dense, n, npages);
	print_message("arc, %zu page references, %u lines: miss ratio %.4f (p in bytes, as "
		      "libCacheSim: %.4f), %.4f (paper, simulated), %.4f (paper, engine)\n",
		      n, TRACE_SLOTS, bytes, ARC_REF, paper, eng);
	assert_true(bytes > ARC_REF - ARC_REF_TOL && bytes < ARC_REF + ARC_REF_TOL);
	assert_true(paper > ARC_SELF - 0.0005 && paper < ARC_SELF + 0.0005);
	assert_true(eng > ARC_SELF - ARC_SELF_TOL && eng < ARC_SELF + ARC_SELF_TOL);
	free(dense);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_p_adapts),
		cmocka_unit_test(test_engine_scan),
		cmocka_unit_test(test_refusal_bound),
		cmocka_unit_test(test_trace_miss_ratio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
