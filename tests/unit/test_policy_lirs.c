/* SPDX-License-Identifier: MIT */
/*
 * test_policy_lirs.c - LIRS (src/cache/policy_lirs.c): the LIR set survives a scan
 * that flushes LRU, a line evicted while still in stack S comes back as LIR, pruning
 * keeps an LIR line at S's bottom, S stays within 2 x the lines, refusals are
 * bounded, and the page miss ratio on the repository's cloudPhysicsIO trace at 10 %
 * against libCacheSim's figure (traces/README.md).
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

int tc_repl_lirs_state(struct tc_repl *r, uint32_t slot, bool *in_s, uint64_t key,
		       bool *ghost, uint32_t sizes[4]);

/* status of key @k in @s: 1 LIR, 0 resident HIR, -ENOENT not resident */
static int status(struct pt_sim *s, uint32_t k, bool *in_s, bool *ghost)
{
	uint32_t slot = s->map[k];

	return tc_repl_lirs_state(s->r, slot == TC_SLOT_NONE ? UINT32_MAX : slot, in_s,
				  tc_line_key(1, k), ghost, NULL);
}

/*
 * 100 lines: LIR set 99, Q 1.  0..98 fill the LIR set (warm-up), 100.. arrive as HIR
 * and leave through Q.  A scan of 1000 new keys evicts none of 0..98 (LRU would
 * evict all of them); each scanned key is evicted while in S and stays there as a
 * non-resident entry until S's bound (200) forgets the oldest.
 */
static void test_scan_keeps_lir(void **state)
{
	struct pt_sim s;
	uint32_t sz[4];
	bool in_s, ghost;

	pt_sim_init(&s, &tc_repl_lirs, 100, 5000);
	for (uint32_t k = 0; k < 99; k++)
		assert_false(pt_sim_access(&s, k));
	for (uint32_t k = 0; k < 99; k++)
		assert_int_equal(status(&s, k, NULL, NULL), 1);
	for (uint32_t k = 1000; k < 2000; k++)
		assert_false(pt_sim_access(&s, k));
	for (uint32_t k = 0; k < 99; k++)
		assert_int_equal(status(&s, k, NULL, NULL), 1);
	assert_int_equal(status(&s, 1999, &in_s, NULL), 0);
	assert_true(in_s);
	tc_repl_lirs_state(s.r, 0, NULL, 0, NULL, sz);
	assert_int_equal(sz[0], 99);
	assert_int_equal(sz[1], 1);
	assert_int_equal(sz[2], 200);       /* bounded at 2 x 100 entries */
	assert_int_equal(sz[3], 200 - 99 - 1);
	/* the newest ghosts are remembered, the oldest were forgotten */
	status(&s, 1998, NULL, &ghost);
	assert_true(ghost);
	status(&s, 1000, NULL, &ghost);
	assert_false(ghost);
	pt_sim_fini(&s);

	/* the same through LRU loses the whole hot set */
	pt_sim_init(&s, &tc_repl_lru, 100, 5000);
	for (uint32_t k = 0; k < 99; k++)
		pt_sim_access(&s, k);
	for (uint32_t k = 1000; k < 2000; k++)
		pt_sim_access(&s, k);
	for (uint32_t k = 0; k < 99; k++)
		assert_int_equal(s.map[k], TC_SLOT_NONE);
	pt_sim_fini(&s);
}

/*
 * A key evicted from Q while still in S (its IRR is smaller than the LIR set's
 * recency) comes back as LIR, and the bottom LIR line (0, the least recent) becomes
 * HIR; pruning then removes 0 from S (an HIR entry cannot be S's bottom).  A key
 * referenced again while resident HIR and in S becomes LIR the same way.
 */
static void test_ghost_comes_back_lir(void **state)
{
	struct pt_sim s;
	bool in_s, ghost;

	pt_sim_init(&s, &tc_repl_lirs, 100, 5000);
	for (uint32_t k = 0; k < 99; k++)
		pt_sim_access(&s, k);
	pt_sim_access(&s, 500);             /* HIR, the one line of Q */
	pt_sim_access(&s, 501);             /* evicts 500, which stays in S */
	assert_int_equal(status(&s, 500, NULL, &ghost), -ENOENT);
	assert_true(ghost);
	assert_false(pt_sim_access(&s, 500));   /* evicts 501; 500 becomes LIR */
	assert_int_equal(status(&s, 500, &in_s, &ghost), 1);
	assert_true(in_s);
	assert_false(ghost);
	assert_int_equal(status(&s, 0, &in_s, NULL), 0);    /* demoted to Q */
	assert_false(in_s);                                 /* and pruned out of S */
	assert_int_equal(status(&s, 1, NULL, NULL), 1);
	/* 0 is resident HIR not in S: a hit keeps it HIR (now in S) */
	assert_true(pt_sim_access(&s, 0));
	assert_int_equal(status(&s, 0, &in_s, NULL), 0);
	assert_true(in_s);
	/* a second hit while in S makes it LIR; 1, the bottom LIR, is demoted */
	assert_true(pt_sim_access(&s, 0));
	assert_int_equal(status(&s, 0, NULL, NULL), 1);
	assert_int_equal(status(&s, 1, &in_s, NULL), 0);
	assert_false(in_s);
	pt_sim_fini(&s);
}

/* Through a real cache of 200 lines (LIR set 198, Q 2): the 198 lines of the warm-up
 * outlive a scan of twice the cache, which leaves only its last two lines. */
static void test_engine_scan(void **state)
{
	struct pe e;

	pe_up(&e, TC_REPL_LIRS, 200, 4000, TC_WP_WT);
	for (uint32_t l = 0; l < 198; l++)
		pe_read(&e, l);
	for (uint32_t l = 1000; l < 1400; l++)
		pe_read(&e, l);
	for (uint32_t l = 0; l < 198; l++)
		assert_true(pe_resident(&e, l));
	assert_true(pe_resident(&e, 1399));
	assert_true(pe_resident(&e, 1398));
	assert_false(pe_resident(&e, 1397));
	assert_false(pe_resident(&e, 1000));
	pe_down(&e);
}

static void test_refusal_bound(void **state)
{
	pt_refusal_bound(&tc_repl_lirs);
}

/*
 * cloudPhysicsIO, 4 KiB pages, 10 % of its distinct pages (26,921 lines): libCacheSim's
 * LIRS gives .8145 (traces/README.md).  Checked in the miniature engine and through
 * a real cache within LIRS_TOL.
 */
#define LIRS_REF 0.8145
#define LIRS_TOL 0.005

static void test_trace_miss_ratio(void **state)
{
	uint32_t *dense, npages;
	size_t n;
	double sim, eng;

	pt_dense(&dense, &n, &npages);
	pt_sim_table(&tc_repl_lirs, dense, n, npages);
	sim = pt_sim_replay(&tc_repl_lirs, TRACE_SLOTS, dense, n, npages);
	eng = pt_engine_replay(TC_REPL_LIRS, TRACE_SLOTS, dense, n, npages);
	print_message("lirs, %zu page references, %u lines: miss ratio %.4f (simulated), "
		      "%.4f (engine), libCacheSim %.4f\n", n, TRACE_SLOTS, sim, eng, LIRS_REF);
	assert_true(sim > LIRS_REF - LIRS_TOL && sim < LIRS_REF + LIRS_TOL);
	assert_true(eng > LIRS_REF - LIRS_TOL && eng < LIRS_REF + LIRS_TOL);
	free(dense);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_keeps_lir),
		cmocka_unit_test(test_ghost_comes_back_lir),
		cmocka_unit_test(test_engine_scan),
		cmocka_unit_test(test_refusal_bound),
		cmocka_unit_test(test_trace_miss_ratio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
