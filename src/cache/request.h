/* SPDX-License-Identifier: MIT */
/*
 * request.h - a client request and its sub-requests (one per cache line), shared by
 * the request paths (request.c) and their planning (plan.c).
 */
#ifndef TC_REQUEST_H
#define TC_REQUEST_H

#include "cache_priv.h"

/* What a sub-request does to its line (tc_sub.kind); write-zeroes is a write. */
enum { SUB_READ, SUB_WRITE, SUB_DISCARD };
/* The effective route of a write (tc_sub.route): write-back, write-through,
 * write-around, pass-through (plan.c, effective_route). */
enum { ROUTE_WB, ROUTE_WT, ROUTE_WA, ROUTE_PT };

/*
 * The steps of a sub-request (tc_sub.step).  Planning picks the path's first step;
 * sub_step() runs the current step, advancing tc_sub.step to the next value before
 * the step's I/O round, so that the completion of the round's last I/O runs the next
 * step.  The steps of one path are therefore consecutive.
 */
enum sub_step_id {
	STEP_UNPLANNED = 0,        /* not planned yet */
	STEP_UPGRADE = -1,         /* a read miss holding the line shared: re-acquire it
				    * exclusively, then plan again */
	/* read hit */
	STEP_HIT_READ = 11,        /* slot -> client (or bounce buffer) */
	STEP_HIT_FINISH,           /* verify, copy out; retry from the backing on error */
	/* read miss */
	STEP_MISS_BACKING_READ = 21,  /* backing -> buffer, units [bspan_lo, bspan_hi) */
	STEP_MISS_CACHE_READS,     /* valid units of the slot -> buffer */
	STEP_MISS_FILL,            /* admitted invalid units buffer -> slot */
	STEP_MISS_FINISH,          /* mark the fill valid, copy out */
	/* write, discard */
	STEP_WRITE_RMW_READS = 31, /* partial units from the slot or the backing */
	STEP_WRITE_DATA,           /* merged data -> slot and / or backing */
	STEP_WRITE_FINISH,         /* new line state; a failed write-back slot write
				    * continues in STEP_WRITE_FALLBACK_FINISH */
	STEP_WRITE_FALLBACK_FINISH,   /* the fallback's backing writes are done */
	STEP_DISCARD = 41,         /* backing discard */
	STEP_DISCARD_FINISH,
};

#define SUB_MAX_IOS 18   /* 16 runs + backing + spare */

/* A client request: one allocation with its sub-requests (request.c). */
struct tc_req {
	struct tc_volume *vol;
	struct tc_io *io;
	struct tc_req *live_prev, *live_next;  /* the cache's list of live requests */
	unsigned live_shard;
	_Atomic int left;
	_Atomic int err;
	bool seq_bypass;
	atomic_bool missed;        /* a line was not a full hit: a miss for the latency
				    * histograms (tc_lat_record) */
	uint64_t start_ns;         /* submitted (tc_ctx_now) */
	/* Instant write-back: the whole aligned full stripes of the backing this write
	 * covers, volume bytes [instant_lo, instant_hi), made dirty at once (plan.c,
	 * tc_plan_instant); empty when lo == hi. */
	uint64_t instant_lo, instant_hi;
	/* How a write of whole stripes went, for the service-rate rule: TC_SRATE_NONE
	 * (0, not wholly either way), TC_SRATE_CACHE or TC_SRATE_BACKING. */
	uint8_t stripe_path;
	bool stripe_probe;         /* ... the rule sent it the way it does not favour */
	bool stripe_switch;        /* ... the volume's previous one went the other way */
	uint32_t nsubs;
	/* FLUSH; a whole-request backing read (read_bypass_whole) uses bflush too */
	struct tc_commit_waiter cw;
	struct tc_io bflush;
	void *bounce;              /* aligned copy of the client's buffer, or NULL */
	struct iovec biov;
	struct tc_sub *subs;
};

/* The part of a request on one cache line: offsets and lengths in bytes within the
 * line, masks of 4 KiB units. */
struct tc_sub {
	struct tc_req *req;
	struct tc_cache *c;
	struct tc_volume *vol;
	uint64_t key;
	uint32_t line_no;
	uint32_t off, len;         /* bytes within the line */
	uint64_t data_off;         /* bytes into the request's data */
	uint8_t kind;
	bool fua, zeroes;
	bool fell_back;            /* a failed slot write went through to the backing */
	uint8_t route;
	struct tc_line_hold hold;  /* the line lock */
	struct tc_lock_shard *shard;
	uint32_t slot;
	uint16_t touched, full;    /* units touched / fully covered */
	uint16_t from_cache;       /* units read from the slot */
	uint16_t fill;             /* units written to the slot after a backing read */
	uint16_t cache_write;      /* units written to the slot by a write */
	uint16_t rmw_backing;      /* partial units merged from the backing */
	uint16_t rmw_cache;        /* partial units merged from the slot */
	uint32_t bspan_lo, bspan_hi; /* read miss: backing read units [lo, hi) */
	bool repl_hit;             /* plan: the line was resident and this sub-request
				    * uses its slot (read, or write into it): a hit for the
				    * replacement policy */
	bool repl_touched;         /* the policy was told (once per sub-request) */
	bool direct;               /* hit or write straight from/to the client's iovecs */
	bool backing_write;
	bool bulk_round;           /* this round's device requests are TC_PRIO_BULK (a
				    * fill), not the volume's priority */
	uint8_t *buf;              /* line-sized bounce buffer */
	int step;                  /* enum sub_step_id */
	_Atomic int pending;
	_Atomic int cache_err, backing_err;
	struct tc_commit_waiter cw;
	int nios;
	struct iovec *iov_direct;  /* client iov slice: &iov_one or malloc'ed */
	int iov_direct_cnt;
	struct iovec iov_one;
	/* Scratch for the device requests of one round; not zeroed at allocation (each
	 * use initialises its entry): everything above this line is. */
	struct tc_io ios[SUB_MAX_IOS];
	bool io_on_cache[SUB_MAX_IOS];
	struct iovec iov_inline[SUB_MAX_IOS];
};

/* ---- planning (plan.c); shard lock and line lock held unless said otherwise ---- */
/* Whether the sequential detector sends request @io around the cache (counted);
 * before the request is split, no lock held.  An @instant write (wholly made dirty
 * by instant write-back) is seen by the detector, so that the stream it belongs to
 * goes around once instant write-back stops, but is never sent around. */
bool tc_plan_seq_bypass(struct tc_volume *v, const struct tc_io *io, bool instant);
/* Instant write-back (TC_WP_INSTWB): set @r's instant range to the whole aligned full
 * stripes @io covers, when the cache can take them dirty now; counted.  Before the
 * request is split, no lock held. */
void tc_plan_instant(struct tc_req *r, const struct tc_io *io);

enum { TC_SRATE_NONE = 0, TC_SRATE_CACHE = 1, TC_SRATE_BACKING = 2 };
/* The service-rate rule: record that whole-stripe write @r of @len bytes took @ns on
 * its path (r->stripe_path: TC_SRATE_CACHE or TC_SRATE_BACKING), in its volume @v's
 * rate for the path (bytes/s; a request that switched path is not sampled, then a
 * mean up to an EWMA of weight 1/8, a probe's weight 1/2: plan.c).  Lock-free; a
 * sample lost to a concurrent one is harmless.  @ns == 0 (a device without a clock,
 * the memory backend) tells nothing and is ignored. */
void tc_plan_srate_sample(struct tc_volume *v, const struct tc_req *r, uint64_t len,
			  uint64_t ns);
/* The service-rate rule's choice for the next whole-stripe write of @v that instant
 * write-back would take: TC_SRATE_CACHE or TC_SRATE_BACKING; *@probe says it is part
 * of the warm-up or of a burst measuring the path the rates do not favour (bursts of
 * 3, 64 decisions apart after a change of the favoured path, the distance doubling up
 * to 1024 while it holds: plan.c).  Counts a decision.  Lock-free. */
unsigned tc_plan_stream_path(struct tc_volume *v, bool *probe);
/* Plan a read: sets the units from each device and s->step to STEP_HIT_READ,
 * STEP_MISS_BACKING_READ, or STEP_UPGRADE when a miss holds the line only shared. */
void tc_plan_read(struct tc_sub *s);
/* Plan a write (write, write-zeroes): route and units; s->step = STEP_WRITE_RMW_READS.
 * May drop and retake the shard lock to allocate a slot. */
void tc_plan_write(struct tc_sub *s);
/* Plan a discard: invalidates the clean units touched; s->step = STEP_DISCARD. */
void tc_plan_discard(struct tc_sub *s);

#endif /* TC_REQUEST_H */
