/* SPDX-License-Identifier: MIT */
/*
 * test_policy_s3fifo.c - S3-FIFO (src/cache/policy_s3fifo.c): one-hit wonders leave
 * from S first, scan resistance against LRU, ghost hits, frequency saturation,
 * can_evict refusals, lock-free touch() racing insert/victim, and miss ratios of both
 * policies on the real cloudPhysicsIO trace against libCacheSim's reference figures.
 *
 * The trace is the repository's traces/libcachesim/cloudPhysicsIO.vscsi.xz (or the same
 * name under $TC_TRACES_DIR), read through the replay tool's decompressing reader.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "tiercache.h"
#include "policy.h"
#include "replay/rstream.h"
#include "policy_engine.h"
#include "policy_trace.h"     /* the trace, the miniature engine (pt_sim) */

/* Inspection hooks exported by policy_s3fifo.c for tests (not in policy.h). */
int tc_repl_s3fifo_slot(struct tc_repl *r, uint32_t slot, unsigned *freq);
int tc_repl_s3fifo_check(struct tc_repl *r, uint32_t *nsmall, uint32_t *nmain,
			 uint32_t *nghost, uint64_t *rejected);

#define QS 0
#define QM 1

static bool accept_all(void *arg, uint32_t slot)
{
	return true;
}

/* ---- hand-made sequences --------------------------------------------------------- */

struct fixture {
	struct tc_line lines[20];
	struct tc_repl *r;
};

static int setup20(void **state)
{
	struct fixture *f = test_calloc(1, sizeof(*f));

	assert_non_null(f);
	for (uint32_t i = 0; i < 20; i++) {
		f->lines[i].vol = 1;
		f->lines[i].line_no = 100 + i;
	}
	assert_int_equal(tc_repl_s3fifo.create(&f->r, f->lines, 20), 0);
	*state = f;
	return 0;
}

static int teardown20(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(tc_repl_s3fifo_check(f->r, NULL, NULL, NULL, NULL), 0);
	tc_repl_s3fifo.destroy(f->r);
	test_free(f);
	return 0;
}

static uint32_t victim_ok(struct tc_repl *r)
{
	uint32_t slot = TC_SLOT_NONE;

	assert_int_equal(tc_repl_s3fifo.victim(r, accept_all, NULL, &slot), 0);
	return slot;
}

static void assert_sizes(struct tc_repl *r, uint32_t s, uint32_t m, uint32_t g)
{
	uint32_t ns, nm, ng;

	assert_int_equal(tc_repl_s3fifo_check(r, &ns, &nm, &ng, NULL), 0);
	assert_int_equal(ns, s);
	assert_int_equal(nm, m);
	assert_int_equal(ng, g);
}

/*
 * 20 slots: S's share is 2.  Insert 0..19 (all to S), hit 0..4 once.  The first
 * eviction moves 0..4 to M (frequency reset) and evicts 5, the oldest one-hit wonder;
 * S keeps losing its tail (6..18) until it is below its share, then M's tail (0) goes.
 */
static void test_one_hit_wonders_leave_first(void **state)
{
	struct fixture *f = *state;
	unsigned freq;

	for (uint32_t s = 0; s < 20; s++) {
		tc_repl_s3fifo.insert(f->r, s);
		assert_int_equal(tc_repl_s3fifo_slot(f->r, s, &freq), QS);
		assert_int_equal(freq, 0);
	}
	for (uint32_t s = 0; s < 5; s++) {
		tc_repl_s3fifo.touch(f->r, s);
		tc_repl_s3fifo.touch(f->r, s);   /* two hits move an object to M */
	}
	tc_repl_s3fifo.touch(f->r, 5);           /* one hit does not */
	assert_int_equal(victim_ok(f->r), 5);
	for (uint32_t s = 0; s < 5; s++) {
		assert_int_equal(tc_repl_s3fifo_slot(f->r, s, &freq), QM);
		assert_int_equal(freq, 0);
	}
	assert_int_equal(tc_repl_s3fifo_slot(f->r, 5, NULL), -ENOENT);
	assert_sizes(f->r, 14, 5, 1);
	for (uint32_t s = 6; s <= 18; s++)
		assert_int_equal(victim_ok(f->r), s);
	assert_sizes(f->r, 1, 5, 14);
	/* S (slot 19) is below its share of 2: M's oldest, 0, goes; M is not a ghost source. */
	assert_int_equal(victim_ok(f->r), 0);
	assert_sizes(f->r, 1, 4, 14);
}

/* A key evicted from S comes back straight into M; other keys go to S. */
static void test_ghost_hit_goes_to_main(void **state)
{
	struct fixture *f = *state;
	uint32_t v;

	for (uint32_t s = 0; s < 20; s++)
		tc_repl_s3fifo.insert(f->r, s);
	v = victim_ok(f->r);
	assert_int_equal(v, 0);                     /* no hits: plain FIFO */
	assert_sizes(f->r, 19, 0, 1);
	/* Refill slot 0 with another key: S. */
	f->lines[0].line_no = 500;
	tc_repl_s3fifo.insert(f->r, 0);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, 0, NULL), QS);
	assert_sizes(f->r, 20, 0, 1);
	/* Evict 1 (key 101), then bring key 100 back into slot 1: ghost hit -> M. */
	assert_int_equal(victim_ok(f->r), 1);
	assert_sizes(f->r, 19, 0, 2);
	f->lines[1].line_no = 100;
	tc_repl_s3fifo.insert(f->r, 1);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, 1, NULL), QM);
	assert_sizes(f->r, 19, 1, 1);               /* the ghost is consumed */
	/* Same line number on another volume is another key: not a ghost. */
	assert_int_equal(victim_ok(f->r), 2);       /* key 102 becomes a ghost */
	f->lines[2].vol = 2;
	tc_repl_s3fifo.insert(f->r, 2);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, 2, NULL), QS);
	assert_sizes(f->r, 19, 1, 2);
}

/* The counter saturates at 3 and never disturbs the engine's bits; in M each pass
 * costs one. */
static void test_frequency_saturates_and_decays(void **state)
{
	struct fixture *f = *state;
	unsigned freq;

	f->lines[3].flags = TC_LINE_DISK_DIRTY | 0x0a;  /* engine bits */
	for (uint32_t s = 0; s < 20; s++)
		tc_repl_s3fifo.insert(f->r, s);
	for (unsigned i = 1; i <= 10; i++) {
		tc_repl_s3fifo.touch(f->r, 3);
		assert_int_equal(tc_repl_s3fifo_slot(f->r, 3, &freq), QS);
		assert_int_equal(freq, i < 3 ? i : 3);
		assert_int_equal(f->lines[3].flags & TC_LINE_ENGINE_MASK, TC_LINE_DISK_DIRTY | 0x0a);
	}
	/* Evict 0, 1, 2; 3 moves to M with frequency 0 on the way. */
	for (uint32_t s = 0; s < 3; s++)
		assert_int_equal(victim_ok(f->r), s);
	assert_int_equal(victim_ok(f->r), 4);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, 3, &freq), QM);
	assert_int_equal(freq, 0);
	/* Drain S down to its share (slots 18, 19 stay), then M: slot 3 with freq 2 is
	 * reinserted twice before it goes. */
	tc_repl_s3fifo.touch(f->r, 3);
	tc_repl_s3fifo.touch(f->r, 3);
	for (uint32_t s = 5; s <= 17; s++)
		assert_int_equal(victim_ok(f->r), s);
	assert_sizes(f->r, 2, 1, 17);
	/* S holds its share, so S's tail goes first; then M is alone with S below share. */
	assert_int_equal(victim_ok(f->r), 18);
	assert_int_equal(victim_ok(f->r), 3);       /* 2 -> 1 -> 0 -> evicted */
	assert_int_equal(f->lines[3].flags & TC_LINE_ENGINE_MASK, TC_LINE_DISK_DIRTY | 0x0a);
	assert_int_equal(f->lines[3].flags & TC_LINE_POLICY_MASK, 0);
	assert_int_equal(victim_ok(f->r), 19);
	assert_sizes(f->r, 0, 0, 18);
	uint32_t slot;
	assert_int_equal(tc_repl_s3fifo.victim(f->r, accept_all, NULL, &slot), -ENOSPC);
}

struct refuse {
	uint32_t mask;
	unsigned calls;
};

static bool refuse_some(void *arg, uint32_t slot)
{
	struct refuse *rf = arg;

	rf->calls++;
	return !(rf->mask & (1u << slot));
}

/* Refused tails go to the head of their queue and are counted; refusing everything
 * ends in -ENOSPC within two can_evict calls per resident slot, queues intact. */
static void test_can_evict_refusals(void **state)
{
	struct fixture *f = *state;
	struct refuse rf = { (1u << 0) | (1u << 1), 0 };
	uint64_t rejected;
	uint32_t slot = 77;

	for (uint32_t s = 0; s < 10; s++)
		tc_repl_s3fifo.insert(f->r, s);
	assert_int_equal(tc_repl_s3fifo.victim(f->r, refuse_some, &rf, &slot), 0);
	assert_int_equal(slot, 2);
	assert_int_equal(rf.calls, 3);
	assert_int_equal(tc_repl_s3fifo_check(f->r, NULL, NULL, NULL, &rejected), 0);
	assert_int_equal(rejected, 2);
	/* 0 and 1 now sit at S's head: 3..9 leave first. */
	for (uint32_t s = 3; s < 10; s++)
		assert_int_equal(victim_ok(f->r), s);
	assert_int_equal(victim_ok(f->r), 0);
	assert_int_equal(victim_ok(f->r), 1);

	/* Everything refused, with some lines in M. */
	for (uint32_t s = 0; s < 20; s++) {
		f->lines[s].line_no = 1000 + s;
		tc_repl_s3fifo.insert(f->r, s);
	}
	for (uint32_t s = 0; s < 20; s += 3)
		tc_repl_s3fifo.touch(f->r, s);
	rf.mask = 0xfffff;
	rf.calls = 0;
	slot = 77;
	assert_int_equal(tc_repl_s3fifo.victim(f->r, refuse_some, &rf, &slot), -ENOSPC);
	assert_int_equal(slot, 77);
	assert_true(rf.calls >= 20);
	assert_true(rf.calls <= 2 * 20);
	uint32_t ns, nm;
	assert_int_equal(tc_repl_s3fifo_check(f->r, &ns, &nm, NULL, NULL), 0);
	assert_int_equal(ns + nm, 20);
	/* Only slot 12 allowed: found although it is not at any tail. */
	rf.mask = 0xfffff & ~(1u << 12);
	assert_int_equal(tc_repl_s3fifo.victim(f->r, refuse_some, &rf, &slot), 0);
	assert_int_equal(slot, 12);
}

/* A cache of 1000 lines that refuses all but one: each victim() call gives up after
 * 256 refusals (not 1000 or 2000), and the refused lines rotate to the heads, so the
 * one evictable line is reached within a few calls. */
struct only_one {
	uint32_t allowed;
	unsigned calls;
};

static bool allow_one(void *arg, uint32_t slot)
{
	struct only_one *o = arg;
	o->calls++;
	return slot == o->allowed;
}

static void test_refusal_bound(void **state)
{
	(void)state;
	const uint32_t n = 1000;
	struct tc_line *lines = test_calloc(n, sizeof(*lines));
	struct tc_repl *r;
	assert_int_equal(tc_repl_s3fifo.create(&r, lines, n), 0);
	for (uint32_t i = 0; i < n; i++) {
		lines[i].vol = 1;
		lines[i].line_no = i;
		tc_repl_s3fifo.insert(r, i);
	}
	struct only_one o = { .allowed = 700 };
	uint32_t slot = TC_SLOT_NONE;
	int calls = 0, rc;
	do {
		o.calls = 0;
		rc = tc_repl_s3fifo.victim(r, allow_one, &o, &slot);
		calls++;
		assert_true(o.calls <= 256);
		if (rc)
			assert_int_equal(o.calls, 256);
	} while (rc == -ENOSPC && calls < 10);
	assert_int_equal(rc, 0);
	assert_int_equal(slot, 700);
	assert_true(calls >= 2 && calls <= 5);
	assert_int_equal(tc_repl_s3fifo_check(r, NULL, NULL, NULL, NULL), 0);
	tc_repl_s3fifo.destroy(r);
	test_free(lines);
}

/* remove() dequeues without leaving a ghost, from either queue; it is idempotent. */
static void test_remove(void **state)
{
	struct fixture *f = *state;

	for (uint32_t s = 0; s < 20; s++)
		tc_repl_s3fifo.insert(f->r, s);
	tc_repl_s3fifo.touch(f->r, 0);
	tc_repl_s3fifo.touch(f->r, 0);
	assert_int_equal(victim_ok(f->r), 1);        /* 0 moved to M */
	tc_repl_s3fifo.remove(f->r, 0);              /* from M */
	tc_repl_s3fifo.remove(f->r, 10);             /* from the middle of S */
	tc_repl_s3fifo.remove(f->r, 19);             /* S's head */
	tc_repl_s3fifo.remove(f->r, 19);
	tc_repl_s3fifo.remove(f->r, 1);              /* already evicted */
	assert_sizes(f->r, 16, 0, 1);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, 0, NULL), -ENOENT);
	/* Key 100 (slot 0) was removed, not evicted: no ghost hit on its return. */
	tc_repl_s3fifo.insert(f->r, 0);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, 0, NULL), QS);
	for (uint32_t s = 2; s <= 18; s++)
		if (s != 10)
			assert_int_equal(victim_ok(f->r), s);
	assert_int_equal(victim_ok(f->r), 0);
	assert_sizes(f->r, 0, 0, 18);
}

static void test_mem_and_lookup(void **state)
{
	struct fixture *f = *state;
	size_t per_slot = 0, ghosts = 0;

	tc_repl_s3fifo.mem(f->r, &per_slot, &ghosts);
	assert_int_equal(per_slot, 8);
	/* Ghosts: 18 keys (M's capacity) in a ring of 18 + 18/4 + 1 = 23 entries of
	 * 8 bytes (room for holes), and a 64-entry table of 4-byte ring positions. */
	assert_int_equal(ghosts, 23 * 8 + 64 * 4);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_S3FIFO), &tc_repl_s3fifo);
	assert_string_equal(tc_repl_s3fifo.name, "s3fifo");
}

/* The ghost ring forgets its oldest key once full. */
static void test_ghost_capacity(void **state)
{
	struct fixture *f = *state;
	uint32_t next_key = 100;

	for (uint32_t s = 0; s < 20; s++)
		tc_repl_s3fifo.insert(f->r, s);
	next_key = 120;
	/* 30 evictions from S; each refill uses a new key. */
	for (unsigned i = 0; i < 30; i++) {
		uint32_t v = victim_ok(f->r);

		f->lines[v].line_no = next_key++;
		tc_repl_s3fifo.insert(f->r, v);
	}
	assert_sizes(f->r, 20, 0, 18);
	/* Keys 100..111 have been forgotten, 112..129 are ghosts; the next eviction
	 * (key 130) pushes out 112, the one after (131) 113. */
	uint32_t v = victim_ok(f->r);
	f->lines[v].line_no = 111;
	tc_repl_s3fifo.insert(f->r, v);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, v, NULL), QS);
	v = victim_ok(f->r);
	f->lines[v].line_no = 113;
	tc_repl_s3fifo.insert(f->r, v);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, v, NULL), QS);
	v = victim_ok(f->r);
	f->lines[v].line_no = 125;
	tc_repl_s3fifo.insert(f->r, v);
	assert_int_equal(tc_repl_s3fifo_slot(f->r, v, NULL), QM);
}

/* ---- scan resistance ------------------------------------------------------------ */

#define SCAN_SLOTS 1000u
#define SCAN_HOT 50u

static uint32_t scan_survivors(const struct tc_repl_ops *ops)
{
	struct pt_sim s;
	uint32_t resident = 0;

	pt_sim_init(&s, ops, SCAN_SLOTS, SCAN_HOT + 2 * SCAN_SLOTS);
	for (unsigned round = 0; round < 5; round++)
		for (uint32_t k = 0; k < SCAN_HOT; k++)
			assert_int_equal(pt_sim_access(&s, k), round > 0);
	for (uint32_t k = SCAN_HOT; k < SCAN_HOT + 2 * SCAN_SLOTS; k++)
		assert_false(pt_sim_access(&s, k));
	for (uint32_t k = 0; k < SCAN_HOT; k++)
		resident += s.map[k] != TC_SLOT_NONE;
	pt_sim_fini(&s);
	return resident;
}

/* 50 hot lines hit 4 times each, then a scan of 2000 new lines through a 1000-slot
 * cache: S-FIFO keeps the hot lines (S filters the scan), LRU loses every one. */
static void test_scan_resistance(void **state)
{
	uint32_t s3 = scan_survivors(&tc_repl_s3fifo);
	uint32_t lru = scan_survivors(&tc_repl_lru);

	print_message("hot lines resident after the scan: s3fifo %u/%u, lru %u/%u\n", s3,
		      SCAN_HOT, lru, SCAN_HOT);
	assert_true(s3 >= SCAN_HOT * 9 / 10);
	assert_int_equal(lru, 0);
}

/* ---- touch() racing insert/victim ----------------------------------------------- */

#define RACE_SLOTS 4096u
#define RACE_TOUCHERS 4
#define RACE_NS 1500000000ull

struct race {
	struct pt_sim sim;
	uint8_t engine_bits[RACE_SLOTS];   /* expected TC_LINE_ENGINE_MASK bits */
	int stop;                          /* atomic */
	uint64_t touches[RACE_TOUCHERS];
};

struct toucher {
	struct race *race;
	unsigned id;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *toucher_main(void *arg)
{
	struct toucher *t = arg;
	uint64_t rnd = 0x9e3779b97f4a7c15ull * (t->id + 1), n = 0;

	while (!__atomic_load_n(&t->race->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 256; i++)
			tc_repl_s3fifo.touch(t->race->sim.r, (uint32_t)(xorshift(&rnd) % RACE_SLOTS));
		n += 256;
	}
	t->race->touches[t->id] = n;
	return NULL;
}

static bool refuse_tenth(void *arg, uint32_t slot)
{
	return slot % 10 != 7;
}

/* One "engine" thread fills, evicts (refusing some slots), removes and flips its own
 * flag bits while 4 threads hit random slots; afterwards the queues are intact and no
 * engine bit was lost to a touch(). */
static void test_touch_concurrency(void **state)
{
	struct race *rc = calloc(1, sizeof(*rc));
	struct toucher t[RACE_TOUCHERS];
	pthread_t th[RACE_TOUCHERS];
	struct pt_sim *s;
	uint64_t rnd = 12345, deadline, ops = 0, total_touches = 0;
	uint32_t resident = 0, ns, nm, ng;
	uint32_t *free_slots, nfree = 0;   /* slots invalidated, for reuse */

	assert_non_null(rc);
	s = &rc->sim;
	pt_sim_init(s, &tc_repl_s3fifo, RACE_SLOTS, 1u << 20);
	free_slots = malloc(sizeof(uint32_t) * RACE_SLOTS);
	assert_non_null(free_slots);
	for (unsigned i = 0; i < RACE_TOUCHERS; i++) {
		t[i].race = rc;
		t[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, toucher_main, &t[i]), 0);
	}
	deadline = now_ns() + RACE_NS;
	while (now_ns() < deadline) {
		for (int i = 0; i < 512; i++, ops++) {
			uint64_t x = xorshift(&rnd);
			uint32_t key = (uint32_t)(x >> 12) & ((1u << 20) - 1), slot;

			if ((x & 0xff) == 0 && resident) {
				/* Invalidate a random slot. */
				slot = (uint32_t)((x >> 40) % s->used);
				if (s->lines[slot].vol) {
					s->map[s->lines[slot].line_no] = TC_SLOT_NONE;
					tc_repl_s3fifo.remove(s->r, slot);
					s->lines[slot].vol = 0;
					free_slots[nfree++] = slot;
					resident--;
				}
				continue;
			}
			if ((x & 0xff) == 1 && s->used) {
				/* Flip the engine's dirty bit of a slot, as the engine does. */
				slot = (uint32_t)((x >> 40) % s->used);
				if (rc->engine_bits[slot] & TC_LINE_DISK_DIRTY)
					tc_line_flags_clear(&s->lines[slot], TC_LINE_DISK_DIRTY);
				else
					tc_line_flags_set(&s->lines[slot], TC_LINE_DISK_DIRTY);
				rc->engine_bits[slot] ^= TC_LINE_DISK_DIRTY;
				continue;
			}
			slot = s->map[key];
			if (slot != TC_SLOT_NONE) {
				tc_repl_s3fifo.touch(s->r, slot);
				continue;
			}
			if (nfree) {
				slot = free_slots[--nfree];
			} else if (s->used < RACE_SLOTS) {
				slot = s->used++;
			} else {
				int v = tc_repl_s3fifo.victim(s->r, refuse_tenth, NULL, &slot);

				if (v == -ENOSPC)
					continue;
				assert_int_equal(v, 0);
				assert_int_not_equal(slot % 10, 7);
				assert_int_equal(s->lines[slot].vol, 1);
				s->map[s->lines[slot].line_no] = TC_SLOT_NONE;
				resident--;
			}
			s->lines[slot].vol = 1;
			s->lines[slot].line_no = key;
			s->map[key] = slot;
			tc_repl_s3fifo.insert(s->r, slot);
			resident++;
		}
	}
	__atomic_store_n(&rc->stop, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < RACE_TOUCHERS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		total_touches += rc->touches[i];
	}
	print_message("race: %llu engine ops, %llu concurrent touches\n",
		      (unsigned long long)ops, (unsigned long long)total_touches);
	assert_true(total_touches > 0);
	assert_int_equal(tc_repl_s3fifo_check(s->r, &ns, &nm, &ng, NULL), 0);
	assert_int_equal(ns + nm, resident);
	assert_true(ng <= RACE_SLOTS);
	for (uint32_t i = 0; i < s->used; i++) {
		int q = tc_repl_s3fifo_slot(s->r, i, NULL);

		assert_int_equal(q == -ENOENT, s->lines[i].vol == 0);
		assert_int_equal(s->lines[i].flags & TC_LINE_ENGINE_MASK, rc->engine_bits[i]);
	}
	free(free_slots);
	pt_sim_fini(s);
	free(rc);
}

/* ---- through the engine (policy_engine.h) ---------------------------------------- */

/*
 * A real cache of 20 lines: S's share is 2.  Lines 0..19 fill it; line 20 evicts 0 from
 * S, so 0 becomes a ghost; reading 0 again is a ghost hit and puts it in M.  A scan of
 * 40 lines read once then churns S only, and 0 survives it.  The engine unmaps a victim
 * inside can_evict(), before victim() returns: a ghost that recorded the key after that
 * would hold key 0, line 0 would come back into S and the scan would evict it.
 */
static void test_engine_ghost_hit(void **state)
{
	struct pe e;

	pe_up(&e, TC_REPL_S3FIFO, 20, 100, TC_WP_WT);
	for (uint32_t l = 0; l <= 20; l++)
		pe_read(&e, l);
	assert_false(pe_resident(&e, 0));
	pe_read(&e, 0);                  /* ghost hit: into M */
	for (uint32_t l = 21; l < 61; l++)
		pe_read(&e, l);
	assert_true(pe_resident(&e, 0));
	assert_false(pe_resident(&e, 1));
	pe_down(&e);
}

/*
 * Writes are hits too: in write-through (lines stay clean and evictable), line 0
 * written three times and line 1 written once then partly twice have frequency 2 when
 * they reach S's tail, move to M, and outlive a scan of lines read once, as lines
 * read three times do.
 */
static void test_engine_write_hits(void **state)
{
	struct pe e;

	pe_up(&e, TC_REPL_S3FIFO, 20, 100, TC_WP_WT);
	for (int i = 0; i < 3; i++) {
		pe_write(&e, 0);
		if (i == 0)
			pe_write(&e, 1);
		else
			pe_write_part(&e, 1);
	}
	for (uint32_t l = 2; l < 60; l++)
		pe_read(&e, l);
	assert_true(pe_resident(&e, 0));
	assert_true(pe_resident(&e, 1));
	assert_false(pe_resident(&e, 2));
	pe_down(&e);
}

/* ---- miss ratios on a real trace ------------------------------------------------ */

#define LRU_REF 0.8741               /* libCacheSim, traces/README.md, 10 % */
#define S3FIFO_REF 0.8110
/* This implementation's own figure in the simulation above (its eviction callback
 * unmaps the victim as the engine does): pinned so behaviour changes are noticed. */
#define S3FIFO_SELF 0.8110

static double replay(const struct tc_repl_ops *ops, const uint32_t *dense, size_t n,
		     uint32_t npages)
{
	struct pt_sim s;
	double mr;

	pt_sim_init(&s, ops, TRACE_SLOTS, npages);
	for (size_t i = 0; i < n; i++)
		pt_sim_access(&s, dense[i]);
	if (ops == &tc_repl_s3fifo)
		assert_int_equal(tc_repl_s3fifo_check(s.r, NULL, NULL, NULL, NULL), 0);
	mr = (double)s.misses / (double)s.accesses;
	pt_sim_fini(&s);
	return mr;
}

/* cloudPhysicsIO split into 4 KiB pages, cache of 10 % of its distinct pages: both
 * policies must reproduce libCacheSim's miss ratios (traces/README.md). */
static void test_trace_miss_ratio(void **state)
{
	uint32_t *dense, npages;
	size_t n;
	double lru, s3;

	pt_dense(&dense, &n, &npages);
	lru = replay(&tc_repl_lru, dense, n, npages);
	s3 = replay(&tc_repl_s3fifo, dense, n, npages);
	print_message("%zu page accesses, %u slots: miss ratio lru %.4f (ref %.4f), "
		      "s3fifo %.4f (ref %.4f)\n", n, TRACE_SLOTS, lru, LRU_REF, s3,
		      S3FIFO_REF);
	assert_true(lru > LRU_REF - 0.003 && lru < LRU_REF + 0.003);
	assert_true(s3 > S3FIFO_REF - 0.02 && s3 < S3FIFO_REF + 0.02);
	assert_true(s3 > S3FIFO_SELF - 0.0005 && s3 < S3FIFO_SELF + 0.0005);
	free(dense);
}

/*
 * The same replay through a real cache (policy_engine.h), as `tiercache replay` would
 * run it with 4 KiB lines, admission always and sequential cutoff 0: each page
 * reference is one 4 KiB read, a miss fills the page, a hit touches it.  Pages are
 * renumbered densely in order of first use (a replacement policy does not see
 * addresses), so the memory backing is only as large as the footprint, and reads
 * keep it all zero pages.  Reads only: in write-back a written line stays dirty and
 * unevictable until the cleaner and a commit release it, which a simulator has no
 * notion of (docs/policy.md).  S3-FIFO only, to keep the test short; with
 * TC_POLICY_TABLE set in the environment it first prints both policies at 1, 5, 10
 * and 20 % (the table of docs/policy.md).
 *
 * Tolerance (docs/policy.md): what differs from libCacheSim's S3FIFO.c is S's share
 * rounded up (2693 lines here), the ghost's capacity (90 % of the lines, with room
 * for holes), and the ghost looked up after the victim's key joined it; each moves a
 * few evictions of a million references.  0.005 is below the distance to every known
 * wrong variant (.8204 with a move-to-main threshold of 1, .8694 with ghosts that
 * never hit) and to the next policy in libCacheSim's table (W-TinyLFU, .8182).
 */
#define ENGINE_S3FIFO_TOL 0.005

static void test_engine_trace_miss_ratio(void **state)
{
	uint32_t *dense, next;
	size_t n;
	double s3;

	pt_dense(&dense, &n, &next);
	if (getenv("TC_POLICY_TABLE")) {
		/* The table of docs/policy.md: both policies at 1, 5, 10 and 20 % of the
		 * distinct pages, rounded down as libCacheSim rounds. */
		static const unsigned pct[] = { 1, 5, 10, 20 };

		for (unsigned repl = TC_REPL_LRU; repl <= TC_REPL_S3FIFO; repl++)
			for (size_t k = 0; k < sizeof(pct) / sizeof(pct[0]); k++) {
				uint32_t lines = (uint32_t)((uint64_t)next * pct[k] / 100);

				print_message("table: %s %u%% (%u lines): page miss ratio %.4f\n",
					      tc_replacement_name(repl), pct[k], lines,
					      pt_engine_replay(repl, lines, dense, n, next));
			}
	}
	s3 = pt_engine_replay(TC_REPL_S3FIFO, TRACE_SLOTS, dense, n, next);
	print_message("engine, %zu page reads, %u lines of 4 KiB: miss ratio s3fifo %.4f "
		      "(libCacheSim %.4f, tolerance %.3f)\n", n, TRACE_SLOTS, s3, S3FIFO_REF,
		      ENGINE_S3FIFO_TOL);
	assert_true(s3 > S3FIFO_REF - ENGINE_S3FIFO_TOL && s3 < S3FIFO_REF + ENGINE_S3FIFO_TOL);
	free(dense);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_hit_wonders_leave_first, setup20, teardown20),
		cmocka_unit_test_setup_teardown(test_ghost_hit_goes_to_main, setup20, teardown20),
		cmocka_unit_test_setup_teardown(test_frequency_saturates_and_decays, setup20, teardown20),
		cmocka_unit_test_setup_teardown(test_can_evict_refusals, setup20, teardown20),
		cmocka_unit_test(test_refusal_bound),
		cmocka_unit_test_setup_teardown(test_remove, setup20, teardown20),
		cmocka_unit_test_setup_teardown(test_mem_and_lookup, setup20, teardown20),
		cmocka_unit_test_setup_teardown(test_ghost_capacity, setup20, teardown20),
		cmocka_unit_test(test_scan_resistance),
		cmocka_unit_test(test_touch_concurrency),
		cmocka_unit_test(test_engine_ghost_hit),
		cmocka_unit_test(test_engine_write_hits),
		cmocka_unit_test(test_trace_miss_ratio),
		cmocka_unit_test(test_engine_trace_miss_ratio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
