/* SPDX-License-Identifier: MIT */
/*
 * test_admission.c - the count-min admission sketch (nhit) and the sequential-stream
 * detector of src/cache/admission.c.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "tiercache.h"
#include "policy.h"

#define KiB 1024ull
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

/* ---- sketch --------------------------------------------------------------------- */

static void test_admit_sizing(void **state)
{
	struct tc_admit a;

	assert_int_equal(tc_admit_init(&a, 1000), 0);
	assert_int_equal(a.width, 4096);            /* next power of two of 4000 */
	assert_int_equal(a.window, 8000);
	assert_int_equal(tc_admit_mem(&a), 4 * 4096);
	tc_admit_fini(&a);
	tc_admit_fini(&a);                          /* idempotent */

	assert_int_equal(tc_admit_init(&a, 10), 0);
	assert_int_equal(a.width, 1024);            /* the minimum */
	assert_int_equal(a.window, 80);
	tc_admit_fini(&a);

	assert_int_equal(tc_admit_init(&a, 4096), 0);
	assert_int_equal(a.width, 16384);           /* 4 * 4096 exactly */
	tc_admit_fini(&a);
}

/* With nhit = N, a key is admitted (estimate >= N) on its Nth access and not before,
 * for N = 1..4, in a fresh sketch; 200 interleaved keys count independently. */
static void test_nhit_admits_on_nth_access(void **state)
{
	for (unsigned n = 1; n <= 4; n++) {
		struct tc_admit a;

		assert_int_equal(tc_admit_init(&a, 1024), 0);
		for (unsigned i = 1; i <= n; i++) {
			for (uint64_t k = 0; k < 200; k++) {
				uint64_t key = tc_line_key(1 + (uint8_t)(k % 3), (uint32_t)(k * 7919));
				unsigned est = tc_admit_access(&a, key);

				assert_int_equal(est, i);
				assert_int_equal(est >= n, i == n);
			}
		}
		tc_admit_fini(&a);
	}
}

/* Counters saturate at 255. */
static void test_saturation(void **state)
{
	struct tc_admit a;

	assert_int_equal(tc_admit_init(&a, 1024), 0);   /* window 8192 */
	for (unsigned i = 1; i <= 300; i++)
		assert_int_equal(tc_admit_access(&a, 42), i < 255 ? i : 255);
	tc_admit_fini(&a);
}

/* The access that completes a window halves every counter afterwards. */
static void test_halving_ages(void **state)
{
	struct tc_admit a;
	uint64_t hot = tc_line_key(1, 5), other = tc_line_key(2, 77);

	assert_int_equal(tc_admit_init(&a, 128), 0);   /* width 1024, window 1024 */
	assert_int_equal(a.window, 1024);
	for (unsigned i = 1; i <= 8; i++)
		assert_int_equal(tc_admit_access(&a, hot), i);
	for (unsigned i = 1; i <= 1015; i++)        /* accesses 9..1023 */
		assert_int_equal(tc_admit_access(&a, other), i < 255 ? i : 255);
	assert_int_equal(tc_admit_access(&a, other), 255);   /* #1024: then halving */
	assert_int_equal(tc_admit_access(&a, hot), 8 / 2 + 1);
	assert_int_equal(tc_admit_access(&a, other), 255 / 2 + 1);
	tc_admit_fini(&a);

	/* A key seen once before a halving is forgotten (1 / 2 = 0). */
	assert_int_equal(tc_admit_init(&a, 128), 0);
	assert_int_equal(tc_admit_access(&a, hot), 1);
	for (unsigned i = 0; i < 1023; i++)
		tc_admit_access(&a, other);            /* #1024 halves */
	assert_int_equal(tc_admit_access(&a, hot), 1);
	/* The next halving comes exactly one window later, at access #2048. */
	for (unsigned i = 0; i < 6; i++)
		tc_admit_access(&a, hot);              /* hot: 7, accesses: 1031 */
	for (unsigned i = 0; i < 2047 - 1031; i++)
		tc_admit_access(&a, other);            /* up to #2047: no halving yet */
	assert_int_equal(tc_admit_access(&a, hot), 8);   /* #2048, then halving */
	assert_int_equal(tc_admit_access(&a, hot), 8 / 2 + 1);
	tc_admit_fini(&a);
}

/* Concurrent accesses lose no increment (compare-and-swap per counter). */
#define ADMIT_THREADS 4
#define ADMIT_PER_THREAD 50

static void *admit_worker(void *arg)
{
	struct tc_admit *a = arg;

	for (unsigned i = 0; i < ADMIT_PER_THREAD; i++)
		tc_admit_access(a, 1234567);
	return NULL;
}

static void test_concurrent_counts(void **state)
{
	struct tc_admit a;
	pthread_t th[ADMIT_THREADS];

	assert_int_equal(tc_admit_init(&a, 4096), 0);   /* window 32768 */
	for (unsigned i = 0; i < ADMIT_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, admit_worker, &a), 0);
	for (unsigned i = 0; i < ADMIT_THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(tc_admit_access(&a, 1234567), ADMIT_THREADS * ADMIT_PER_THREAD + 1);
	tc_admit_fini(&a);
}

/* ---- sequential detector -------------------------------------------------------- */

/* 64 KiB requests, 1 MiB cutoff: the 16th request brings the stream to 1 MiB. */
static void test_seq_stream_crosses_cutoff(void **state)
{
	struct tc_seq q;
	uint64_t off = 10 * MiB;

	tc_seq_init(&q);
	for (unsigned i = 1; i <= 20; i++, off += 64 * KiB)
		assert_int_equal(tc_seq_check(&q, off, 64 * KiB, 1 * MiB), i >= 16);
	/* A gap beyond the reordering window breaks the stream. */
	assert_false(tc_seq_check(&q, off + 5 * 64 * KiB, 64 * KiB, 1 * MiB));
	/* A single request as large as the cutoff is a stream on its own (bcache). */
	assert_true(tc_seq_check(&q, 100 * GiB, 1 * MiB, 1 * MiB));
	assert_false(tc_seq_check(&q, 200 * GiB, 1 * MiB - 512, 1 * MiB));
	tc_seq_fini(&q);
}

/* Random 4 KiB requests never continue one another: never sequential. */
static void test_seq_random_never(void **state)
{
	struct tc_seq q;
	uint64_t x = 88172645463325252ull;

	tc_seq_init(&q);
	for (unsigned i = 0; i < 10000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* Starts on 1 MiB boundaries, ends 4 KiB past one: no start meets an end. */
		assert_false(tc_seq_check(&q, (x % (1u << 20)) * MiB, 4 * KiB, 1 * MiB));
	}
	tc_seq_fini(&q);
}

/* 16 streams interleaved round-robin are tracked independently: each crosses on its
 * own 16th request.  A 17th stream then evicts the least recently used one. */
static void test_seq_interleaved_streams(void **state)
{
	struct tc_seq q;
	uint64_t next[TC_SEQ_STREAMS];

	tc_seq_init(&q);
	for (unsigned s = 0; s < TC_SEQ_STREAMS; s++)
		next[s] = s * GiB;
	for (unsigned i = 1; i <= 18; i++) {
		for (unsigned s = 0; s < TC_SEQ_STREAMS; s++) {
			assert_int_equal(tc_seq_check(&q, next[s], 64 * KiB, 1 * MiB), i >= 16);
			next[s] += 64 * KiB;
		}
	}
	/* Stream 0 is now the least recently used: a new stream replaces it... */
	assert_false(tc_seq_check(&q, 500 * GiB, 64 * KiB, 1 * MiB));
	/* ...while stream 1 is still known, and stream 0 starts over. */
	assert_true(tc_seq_check(&q, next[1], 64 * KiB, 1 * MiB));
	assert_false(tc_seq_check(&q, next[0], 64 * KiB, 1 * MiB));
	tc_seq_fini(&q);
}

/* Cutoff 0 disables detection and records nothing. */
static void test_seq_cutoff_zero(void **state)
{
	struct tc_seq q;
	uint64_t off = 0;

	tc_seq_init(&q);
	for (unsigned i = 0; i < 100; i++, off += 1 * MiB)
		assert_false(tc_seq_check(&q, off, 1 * MiB, 0));
	/* Nothing was recorded: a stream continuing those requests starts from zero. */
	assert_false(tc_seq_check(&q, off, 512 * KiB, 1 * MiB));
	assert_true(tc_seq_check(&q, off + 512 * KiB, 512 * KiB, 1 * MiB));
	/* 14 requests counted, the 15th made with cutoff 0 is not: the next one is the
	 * stream's 15th, still short of the cutoff (it would reach it had the 15th been
	 * recorded). */
	off = 7 * GiB;
	for (unsigned i = 1; i <= 14; i++, off += 64 * KiB)
		assert_false(tc_seq_check(&q, off, 64 * KiB, 1 * MiB));
	assert_false(tc_seq_check(&q, off, 64 * KiB, 0));
	off += 64 * KiB;
	assert_false(tc_seq_check(&q, off, 64 * KiB, 1 * MiB));
	tc_seq_fini(&q);
}

/* Requests reordered on their way in (as with queue depth 4 and several server
 * threads: 0, 2, 1, 3, 5, 4, ...) still make one stream, which crosses the cutoff
 * at the 16th request as an ordered one does; the end never moves back. */
static void test_seq_reordered_stream(void **state)
{
	struct tc_seq q;
	static const unsigned order[] = { 0, 2, 1, 3, 5, 4, 7, 6, 8, 11, 9, 10, 12, 14, 13, 15,
					  17, 16 };

	tc_seq_init(&q);
	for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		assert_int_equal(tc_seq_check(&q, 3 * GiB + order[i] * 64 * KiB, 64 * KiB, 1 * MiB),
				 i >= 15);
	/* The stream's end is 18 requests in: the 19th continues it. */
	assert_true(tc_seq_check(&q, 3 * GiB + 18 * 64 * KiB, 64 * KiB, 1 * MiB));
	tc_seq_fini(&q);
}

/* Several threads feeding one stream concurrently: every request is recorded (none is
 * dropped because another thread held the detector), so the stream reaches the
 * cutoff. */
struct seq_thread {
	struct tc_seq *q;
	_Atomic uint64_t *next;
	unsigned id;
	unsigned seq_count;
};

static void *seq_thread_main(void *arg)
{
	struct seq_thread *t = arg;
	for (;;) {
		/* Requests are handed out in order, as a client sends them; the threads then
		 * race to the detector, as a server's threads do. */
		uint64_t n = atomic_fetch_add(t->next, 1);
		if (n >= 1024)
			break;
		if (tc_seq_check(t->q, n * 64 * KiB, 64 * KiB, 4 * MiB))
			t->seq_count++;
	}
	return NULL;
}

static void test_seq_concurrent_stream(void **state)
{
	struct tc_seq q;
	pthread_t th[4];
	struct seq_thread t[4];
	_Atomic uint64_t next = 0;

	tc_seq_init(&q);
	for (unsigned i = 0; i < 4; i++) {
		t[i] = (struct seq_thread){ .q = &q, .next = &next, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, seq_thread_main, &t[i]), 0);
	}
	unsigned total = 0;
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		total += t[i].seq_count;
	}
	/* 1024 requests of 64 KiB, cutoff 4 MiB: all but the first 63 or so are
	 * sequential, though threads overtake one another (a thread preempted for long
	 * may fall out of the window: a few such requests are allowed). */
	assert_true(total >= 900);
	tc_seq_fini(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admit_sizing),
		cmocka_unit_test(test_nhit_admits_on_nth_access),
		cmocka_unit_test(test_saturation),
		cmocka_unit_test(test_halving_ages),
		cmocka_unit_test(test_concurrent_counts),
		cmocka_unit_test(test_seq_stream_crosses_cutoff),
		cmocka_unit_test(test_seq_random_never),
		cmocka_unit_test(test_seq_interleaved_streams),
		cmocka_unit_test(test_seq_cutoff_zero),
		cmocka_unit_test(test_seq_reordered_stream),
		cmocka_unit_test(test_seq_concurrent_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
