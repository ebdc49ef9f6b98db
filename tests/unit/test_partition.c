/* SPDX-License-Identifier: MIT */
/*
 * test_partition.c - cache partitions (tc_volume_settings.reserve, cap) on memory
 * devices in deterministic mode, two volumes on one cache: a neighbour reading or
 * writing far more than the cache cannot push a reserved volume's resident bytes below
 * its reservation (while without the reservation it does), and free lines are kept
 * for a reserved volume that has not used them yet; a capped volume never holds more
 * than its cap, clean or dirty; shares are refused when they do not fit the cache (with
 * nothing changed) and survive a restart; random workloads with live changes keep
 * both bounds and the data.
 */
#include <errno.h>
#include "two_volumes.h"


/* Volume "a" (write-through) and "b" (@b_wp) on a cache of a few dozen 16 KiB lines. */
static void env_up(struct t2_env *e, uint8_t b_wp)
{
	t2_up(e, TC_CTX_DETERMINISTIC, 5, TC_WP_WT, b_wp, TC_FLUSH_LOW);
	assert_true(e->lines >= 32);
}

static uint64_t resident(tc_volume *v)
{
	struct tc_volume_stats st;
	tc_volume_stats(v, &st);
	return st.resident_bytes;
}

static uint64_t read_misses(tc_volume *v)
{
	struct tc_volume_stats st;
	tc_volume_stats(v, &st);
	return st.read_misses + st.read_partial_hits;
}

static int set_shares(tc_volume *v, uint64_t reserve, uint64_t cap)
{
	struct tc_volume_settings s;
	tc_volume_get(v, &s);
	s.reserve = reserve;
	s.cap = cap;
	return tc_volume_set(v, &s, NULL, NULL);
}

/* Volume b touches ten times the cache's lines, each once (a scan from line @from,
 * wrapping inside the volume's 4096 lines), checking its cap after each request. */
static void thrash(struct t2_env *e, uint64_t from, void (*op)(tc_volume *, uint64_t),
		   uint64_t cap_bytes)
{
	for (uint64_t i = 0; i < 10 * e->lines; i++) {
		op(e->b, (from + i) % 4096);
		if (cap_bytes && resident(e->b) > cap_bytes)
			fail_msg("volume b holds %llu bytes, above its cap of %llu, after %llu "
				 "requests", (unsigned long long)resident(e->b),
				 (unsigned long long)cap_bytes, (unsigned long long)i);
	}
}

static void test_reserve_holds(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	uint64_t hot = e.lines / 4;            /* volume a's hot set, in lines */
	for (uint64_t l = 0; l < hot; l++)
		t2_rd(e.a, l);
	assert_int_equal(resident(e.a), hot * T2_LINE);

	/* Without a reservation the neighbour's scan takes a's lines. */
	thrash(&e, 0, t2_rd, 0);
	assert_true(resident(e.a) < hot * T2_LINE);

	/* Reserved: the scan leaves a's share alone, and a's hot set stays hits. */
	assert_int_equal(set_shares(e.a, hot * T2_LINE, 0), 0);
	for (uint64_t l = 0; l < hot; l++)
		t2_rd(e.a, l);
	assert_int_equal(resident(e.a), hot * T2_LINE);
	thrash(&e, 1500, t2_rd, 0);
	assert_true(resident(e.a) >= hot * T2_LINE);
	uint64_t m0 = read_misses(e.a);
	for (uint64_t l = 0; l < hot; l++)
		t2_rd(e.a, l);
	assert_int_equal(read_misses(e.a), m0);
	/* Write-back writes of the neighbour: the same. */
	t2_down(&e);

	env_up(&e, TC_WP_WB);
	assert_int_equal(set_shares(e.a, TC_SHARE_PCT | 25, 0), 0);
	hot = (e.lines * 25 + 99) / 100;
	for (uint64_t l = 0; l < hot; l++)
		t2_rd(e.a, l);
	thrash(&e, 0, t2_wr, 0);
	assert_true(resident(e.a) >= hot * T2_LINE);
	assert_int_equal(tc_volume_flush_dirty(e.b, NULL, NULL), 0);
	thrash(&e, 2500, t2_rd, 0);
	assert_true(resident(e.a) >= hot * T2_LINE);
	t2_down(&e);
}

/* Free lines are kept for a reserved volume that has not used them yet. */
static void test_reserve_keeps_free_lines(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	uint64_t res = e.lines / 2;
	assert_int_equal(set_shares(e.a, res * T2_LINE, 0), 0);
	thrash(&e, 0, t2_rd, (e.lines - res) * T2_LINE);
	assert_int_equal(resident(e.b), (e.lines - res) * T2_LINE);
	struct tc_volume_stats st0, st1;
	tc_volume_stats(e.a, &st0);
	for (uint64_t l = 0; l < res; l++)
		t2_rd(e.a, l);
	tc_volume_stats(e.a, &st1);
	assert_int_equal(st1.promotions - st0.promotions, res);
	assert_int_equal(resident(e.a), res * T2_LINE);
	t2_down(&e);
}

static void test_cap_holds(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	uint64_t cap = e.lines / 4;
	assert_int_equal(set_shares(e.b, 0, cap * T2_LINE), 0);
	thrash(&e, 0, t2_rd, cap * T2_LINE);
	assert_int_equal(resident(e.b), cap * T2_LINE);
	/* The rest of the cache is a's to use. */
	for (uint64_t l = 0; l < e.lines - cap; l++)
		t2_rd(e.a, l);
	assert_int_equal(resident(e.a), (e.lines - cap) * T2_LINE);
	/* A cap in percent, lowered live: b gives back lines as it goes on. */
	assert_int_equal(set_shares(e.b, 0, TC_SHARE_PCT | 10), 0);
	uint64_t cap2 = e.lines / 10;
	thrash(&e, 2000, t2_rd, cap * T2_LINE);
	assert_true(resident(e.b) <= cap2 * T2_LINE);
	t2_down(&e);

	/* Dirty lines count: write-back writes past the cap go around the cache. */
	env_up(&e, TC_WP_WB);
	assert_int_equal(set_shares(e.b, 0, cap * T2_LINE), 0);
	thrash(&e, 0, t2_wr, cap * T2_LINE);
	struct tc_volume_stats st;
	tc_volume_stats(e.b, &st);
	assert_true(st.dirty_bytes <= cap * T2_LINE);
	assert_true(st.dirty_bytes > 0);
	t2_down(&e);
}

static void test_bad_shares(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	uint64_t size = e.lines * T2_LINE, half = e.lines / 2 * T2_LINE;
	struct tc_volume_settings before, after;
	assert_int_equal(set_shares(e.a, half, 0), 0);
	tc_volume_get(e.b, &before);
	struct {
		uint64_t reserve, cap;
		const char *says;
	} bad[] = {
		{ size - half + T2_LINE, 0, "add up to" },     /* with a's half: more than the cache */
		{ TC_SHARE_PCT | 60, 0, "add up to" },
		{ 2 * T2_LINE, T2_LINE, "above the cap" },
		{ TC_SHARE_PCT | 101, 0, "101% is above 100%" },
		{ 0, TC_SHARE_PCT | 200, "200% is above 100%" },
		{ 1000, 0, "not a multiple of 4096" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(set_shares(e.b, bad[i].reserve, bad[i].cap), -EINVAL);
		assert_non_null(strstr(e.log.last, bad[i].says));
		assert_non_null(strstr(e.log.last, "\"b\""));
		tc_volume_get(e.b, &after);
		assert_int_equal(after.reserve, before.reserve);
		assert_int_equal(after.cap, before.cap);
		assert_int_equal(after.write_policy, before.write_policy);
	}
	/* Exactly the rest of the cache fits. */
	assert_int_equal(set_shares(e.b, size - half, 0), 0);
	t2_down(&e);
}

static void test_shares_survive_restart(void **state)
{
	struct t2_env e;
	env_up(&e, TC_WP_WT);
	assert_int_equal(set_shares(e.a, 4 * T2_LINE, TC_SHARE_PCT | 50), 0);
	assert_int_equal(set_shares(e.b, TC_SHARE_PCT | 10, 24 * T2_LINE), 0);
	assert_int_equal(tc_cache_close(e.c), 0);
	t2_open(&e);
	struct tc_volume_settings s;
	tc_volume_get(e.a, &s);
	assert_int_equal(s.reserve, 4 * T2_LINE);
	assert_int_equal(s.cap, TC_SHARE_PCT | 50);
	tc_volume_get(e.b, &s);
	assert_int_equal(s.reserve, TC_SHARE_PCT | 10);
	assert_int_equal(s.cap, 24 * T2_LINE);
	/* And they are in force: b's cap holds after the restart. */
	thrash(&e, 0, t2_rd, 24 * T2_LINE);
	t2_down(&e);
}

/*
 * Random workloads: volume a (reserve 25 %, write-through) and b (cap 30 %,
 * write-back) read and write random lines at random, a phase of each seed with a share
 * changed live in the middle.  After every request: a never drops below its reserve
 * once it has reached it, b never holds more than its cap, and every read returns what
 * was written there last.
 */
static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

#define SPAN 600                 /* lines each volume touches */

static void check_read(tc_volume *v, uint64_t line, const uint8_t *tags)
{
	uint8_t buf[4096], want[4096];
	assert_int_equal(tc_volume_pread(v, buf, sizeof(buf), line * T2_LINE), 0);
	memset(want, tags[line], sizeof(want));
	assert_memory_equal(buf, want, sizeof(buf));
}

static void test_random_workloads(void **state)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct t2_env e;
		env_up(&e, TC_WP_WB);
		uint64_t x = seed * 0x9e3779b97f4a7c15ull;
		uint8_t tags[2][SPAN];
		memset(tags, 0, sizeof(tags));
		tc_volume *vols[2] = { e.a, e.b };
		assert_int_equal(set_shares(e.a, TC_SHARE_PCT | 25, 0), 0);
		assert_int_equal(set_shares(e.b, 0, TC_SHARE_PCT | 30), 0);
		uint64_t res = (e.lines * 25 + 99) / 100, cap = e.lines * 30 / 100;
		bool reached = false;
		for (unsigned i = 0; i < 3000; i++) {
			if (i == 1500) {
				/* Live: a's reserve grows, b's cap shrinks. */
				assert_int_equal(set_shares(e.a, TC_SHARE_PCT | 40, 0), 0);
				assert_int_equal(set_shares(e.b, 0, TC_SHARE_PCT | 20), 0);
				res = (e.lines * 40 + 99) / 100;
				reached = resident(e.a) >= res * T2_LINE;
			}
			unsigned w = (unsigned)(rnd(&x) % 4 == 0 ? 0 : 1);   /* b is the busy one */
			uint64_t line = rnd(&x) % (w == 0 ? res : SPAN);
			if (rnd(&x) % 3 == 0) {
				tags[w][line] = (uint8_t)(rnd(&x) | 1);
				uint8_t buf[4096];
				memset(buf, tags[w][line], sizeof(buf));
				assert_int_equal(tc_volume_pwrite(vols[w], buf, sizeof(buf), line * T2_LINE,
								  0), 0);
			} else {
				check_read(vols[w], line, tags[w]);
			}
			uint64_t ra = resident(e.a), rb = resident(e.b);
			if (ra >= res * T2_LINE)
				reached = true;
			else if (reached)
				fail_msg("seed %llu request %u: a holds %llu lines, below its reserve "
					 "of %llu", (unsigned long long)seed, i,
					 (unsigned long long)(ra / T2_LINE), (unsigned long long)res);
			if (i < 1500 && rb > cap * T2_LINE)
				fail_msg("seed %llu request %u: b holds %llu lines, above its cap of "
					 "%llu", (unsigned long long)seed, i,
					 (unsigned long long)(rb / T2_LINE), (unsigned long long)cap);
		}
		/* Above its lowered cap with dirty lines: b's reads cannot shrink it until
		 * the cleaner, low rate and never idle here, writes it back anyway (the
		 * cap's pressure); then the cap is reached. */
		for (unsigned i = 0; i < 400 && resident(e.b) > e.lines * 20 / 100 * T2_LINE; i++) {
			check_read(e.b, rnd(&x) % SPAN, tags[1]);
			tc_ctx_advance(e.ctx, 10 * 1000 * 1000);
			while (tc_ctx_poll(e.ctx, 256) > 0)
				;
		}
		assert_true(resident(e.b) <= e.lines * 20 / 100 * T2_LINE);
		for (unsigned w = 0; w < 2; w++)
			for (uint64_t l = 0; l < SPAN; l++)
				if (tags[w][l])
					check_read(vols[w], l, tags[w]);
		t2_down(&e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve_holds),
		cmocka_unit_test(test_reserve_keeps_free_lines),
		cmocka_unit_test(test_cap_holds),
		cmocka_unit_test(test_bad_shares),
		cmocka_unit_test(test_shares_survive_restart),
		cmocka_unit_test(test_random_workloads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
