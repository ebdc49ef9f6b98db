/* SPDX-License-Identifier: MIT */
/*
 * test_policy_2q.c - 2Q (src/cache/policy_2q.c): A1in is a FIFO that a second
 * reference does not reorder, A1in's evictions become A1out ghosts (Kout of them,
 * oldest forgotten), an A1out hit goes to Am, Am survives scans; refusals are
 * bounded; and the page miss ratio on the repository's cloudPhysicsIO trace at 10 %
 * matches libCacheSim's figure (traces/README.md).
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

int tc_repl_2q_state(struct tc_repl *r, uint32_t slot, uint64_t key, bool *ghost,
		     uint32_t sizes[3]);

#define A1IN 0
#define AM 1

/*
 * 20 lines: Kin = 5, Kout = 10, Am's capacity 15.  0..19 fill A1in; 20 evicts 0 (A1in
 * above Kin) into A1out; 0 again is an A1out hit and goes to Am, evicting 1; 2 is read
 * again in A1in, which changes nothing; a scan of 21..60 evicts 2..41 from A1in.
 */
static void prefix_sim(struct pt_sim *s)
{
	for (uint32_t k = 0; k <= 20; k++)
		pt_sim_access(s, k);
	pt_sim_access(s, 0);
	pt_sim_access(s, 2);
	for (uint32_t k = 21; k <= 60; k++)
		pt_sim_access(s, k);
}

static void test_queues(void **state)
{
	struct pt_sim s;
	uint32_t sz[3];
	bool ghost;

	pt_sim_init(&s, &tc_repl_2q, 20, 200);
	prefix_sim(&s);
	assert_int_equal(s.nev, 42);
	assert_int_equal(s.evlog[0], 0);
	assert_int_equal(s.evlog[1], 1);
	for (uint32_t i = 2; i < 42; i++)
		assert_int_equal(s.evlog[i], i);          /* 2 too: A1in is a FIFO */
	assert_int_equal(tc_repl_2q_state(s.r, s.map[0], 0, NULL, sz), AM);
	assert_int_equal(sz[0], 19);
	assert_int_equal(sz[1], 1);
	assert_int_equal(sz[2], 10);                  /* Kout */
	tc_repl_2q_state(s.r, 0, tc_line_key(1, 41), &ghost, NULL);
	assert_true(ghost);                           /* newest ghost */
	tc_repl_2q_state(s.r, 0, tc_line_key(1, 32), &ghost, NULL);
	assert_true(ghost);                           /* oldest kept */
	tc_repl_2q_state(s.r, 0, tc_line_key(1, 31), &ghost, NULL);
	assert_false(ghost);                          /* forgotten */
	pt_sim_access(&s, 41);
	pt_sim_access(&s, 31);
	assert_int_equal(tc_repl_2q_state(s.r, s.map[41], tc_line_key(1, 41), &ghost, NULL),
			 AM);
	assert_false(ghost);                          /* consumed */
	assert_int_equal(tc_repl_2q_state(s.r, s.map[31], 0, NULL, NULL), A1IN);
	pt_sim_fini(&s);
}

/* The same through a real cache: 0 survives the scan in Am, 2 does not (its second
 * reference was in A1in); then 41 (a ghost) and 31 (forgotten) come back, and a
 * second scan of 40 lines evicts 31 from A1in while 41 and 0 stay in Am.  An LRU
 * cache of 20 lines keeps nothing of this through a scan of 40. */
static void test_engine_scan(void **state)
{
	struct pe e;

	pe_up(&e, TC_REPL_2Q, 20, 300, TC_WP_WT);
	for (uint32_t l = 0; l <= 20; l++)
		pe_read(&e, l);
	pe_read(&e, 0);
	pe_read(&e, 2);
	for (uint32_t l = 21; l <= 60; l++)
		pe_read(&e, l);
	assert_true(pe_resident(&e, 0));
	assert_false(pe_resident(&e, 2));
	pe_read(&e, 41);
	pe_read(&e, 31);
	for (uint32_t l = 100; l < 140; l++)
		pe_read(&e, l);
	assert_true(pe_resident(&e, 0));
	assert_true(pe_resident(&e, 41));
	assert_false(pe_resident(&e, 31));
	pe_down(&e);
}

static void test_refusal_bound(void **state)
{
	pt_refusal_bound(&tc_repl_2q);
}

/*
 * cloudPhysicsIO, 4 KiB pages, 10 % of its distinct pages (26,921 lines):
 * libCacheSim's TwoQ.c gives .8443.  The miniature engine prints .8443 (tolerance
 * 0.0005).  The one known difference: when a fill goes to a full Am while A1in is
 * above Kin, libCacheSim evicts from both (a slot stays free) and this code from Am
 * only.  A real cache within 0.005 (as S3-FIFO's test, docs/policy.md): below the
 * distance to the nearest other policy of the table (ARC .8362, SIEVE .8329).
 */
#define Q2_REF 0.8443
#define Q2_SIM_TOL 0.0005
#define Q2_ENGINE_TOL 0.005

static void test_trace_miss_ratio(void **state)
{
	uint32_t *dense, npages;
	size_t n;
	double sim, eng;

	pt_dense(&dense, &n, &npages);
	sim = pt_sim_replay(&tc_repl_2q, TRACE_SLOTS, dense, n, npages);
	eng = pt_engine_replay(TC_REPL_2Q, TRACE_SLOTS, dense, n, npages);
	print_message("2q, %zu page references, %u lines: miss ratio %.4f (simulated), "
		      "%.4f (engine); libCacheSim %.4f\n", n, TRACE_SLOTS, sim, eng, Q2_REF);
	assert_true(sim > Q2_REF - Q2_SIM_TOL && sim < Q2_REF + Q2_SIM_TOL);
	assert_true(eng > Q2_REF - Q2_ENGINE_TOL && eng < Q2_REF + Q2_ENGINE_TOL);
	free(dense);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queues),
		cmocka_unit_test(test_engine_scan),
		cmocka_unit_test(test_refusal_bound),
		cmocka_unit_test(test_trace_miss_ratio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
