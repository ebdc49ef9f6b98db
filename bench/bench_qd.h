/* SPDX-License-Identifier: MIT */
/*
 * bench_qd.h - a fixed queue depth of reads or writes on one tc_dev, for the library
 * benchmarks that drive a device directly (tc-bench-raid, tc-bench-ppl).  Include after
 * bench_common.h.
 */
#ifndef TC_BENCH_QD_H
#define TC_BENCH_QD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>
#include "tiercache.h"

#ifndef TC_BENCH_COMMON_H
#error "include bench_common.h before bench_qd.h"
#endif

#define BENCH_QD_MAX 64u

/*
 * One run: @qd requests of @len bytes in flight on @dev until @bytes have been issued
 * (when @bytes > 0) or, with @bytes 0, until @seconds have passed (then what is in
 * flight completes).  Offsets are sequential from 0, wrapping at @size, or with
 * @random @len-aligned and uniform over [0, @size) (xorshift64, a fixed seed: every
 * run issues the same offsets).  Each of the @qd slots has its own buffer of @len
 * bytes at @bufs + slot * @len, so @bufs holds @qd * @len bytes.  With @lat, the first @maxlat latencies (ns,
 * submission to completion) are stored there.
 */
struct bench_qd_job {
	tc_dev *dev;
	unsigned op;            /* TC_OP_READ or TC_OP_WRITE */
	uint64_t size;          /* bytes of @dev addressed */
	uint64_t len;           /* bytes per request; @size is a multiple */
	bool random;
	uint64_t bytes;         /* stop after issuing this many bytes; 0: by time */
	double seconds;         /* with @bytes 0: stop issuing after this long */
	unsigned qd;            /* 1..BENCH_QD_MAX */
	uint8_t *bufs;
	uint64_t *lat;          /* NULL: latencies not kept */
	size_t maxlat;
	/* Results. */
	uint64_t requests;      /* completed */
	size_t nlat;            /* latencies stored */
	uint64_t wall_ns;       /* first submission to last completion */
};

struct bench_qd_slot {
	struct tc_io io;
	struct iovec iov;
	uint64_t t0;            /* ns, submitted */
	unsigned index;
	struct bench_qd_state *st;
};

struct bench_qd_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight;
	unsigned free[BENCH_QD_MAX];    /* slots not in flight: free[0 .. qd - inflight) */
	int err;
	struct bench_qd_job *job;
};

static inline void bench_qd_done(struct tc_io *io, int result)
{
	struct bench_qd_slot *s = io->private_data;
	struct bench_qd_state *st = s->st;
	struct bench_qd_job *j = st->job;
	uint64_t t = j->lat ? now_ns() : 0;

	pthread_mutex_lock(&st->lock);
	if (j->lat && j->nlat < j->maxlat)
		j->lat[j->nlat++] = t - s->t0;
	if (result < 0 && !st->err)
		st->err = result;
	st->inflight--;
	st->free[j->qd - st->inflight - 1] = s->index;
	j->requests++;
	pthread_cond_signal(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

/* Run @j (see struct bench_qd_job); a failed request ends the program (die()). */
static inline void bench_qd_run(struct bench_qd_job *j)
{
	struct bench_qd_state st = { .inflight = 0, .job = j };
	struct bench_qd_slot s[BENCH_QD_MAX];
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(j->seconds * 1e9), issued = 0, off = 0;
	uint64_t rs = 88172645463325252ull;

	if (j->qd == 0 || j->qd > BENCH_QD_MAX || j->len == 0 || j->size < j->len)
		die("queue depth run", -22);
	j->requests = 0;
	j->nlat = 0;
	for (unsigned i = 0; i < j->qd; i++)
		st.free[i] = i;
	pthread_mutex_init(&st.lock, NULL);
	pthread_cond_init(&st.cond, NULL);
	pthread_mutex_lock(&st.lock);
	for (;;) {
		bool more = j->bytes ? issued < j->bytes : now_ns() < end;

		if (!more && !st.inflight)
			break;
		while (more && st.inflight < j->qd) {
			/* Completions come in any order: take a slot that is not in flight. */
			unsigned k = st.free[j->qd - st.inflight - 1];
			struct bench_qd_slot *sl = &s[k];

			if (j->random) {
				rs ^= rs << 13;
				rs ^= rs >> 7;
				rs ^= rs << 17;
				off = rs % (j->size / j->len) * j->len;
			} else if (off + j->len > j->size) {
				off = 0;
			}
			sl->st = &st;
			sl->index = k;
			sl->iov = (struct iovec){ j->bufs + (uint64_t)k * j->len, j->len };
			sl->io = (struct tc_io){ .op = (uint8_t)j->op, .offset = off,
						 .length = j->len, .iov = &sl->iov, .iovcnt = 1,
						 .done = bench_qd_done, .private_data = sl };
			if (!j->random)
				off += j->len;
			st.inflight++;
			issued += j->len;
			sl->t0 = now_ns();
			pthread_mutex_unlock(&st.lock);
			tc_dev_submit(j->dev, &sl->io);
			pthread_mutex_lock(&st.lock);
			more = j->bytes ? issued < j->bytes : now_ns() < end;
		}
		if (st.inflight)
			pthread_cond_wait(&st.cond, &st.lock);
	}
	pthread_mutex_unlock(&st.lock);
	j->wall_ns = now_ns() - t0;
	pthread_cond_destroy(&st.cond);
	pthread_mutex_destroy(&st.lock);
	if (st.err)
		die("request", st.err);
}

#endif /* TC_BENCH_QD_H */
