/* SPDX-License-Identifier: MIT */
/*
 * dev.h - the device interface behind tc_dev.
 *
 * A backend fills a struct tc_dev_ops table (lifecycle order, ops table last in its
 * file, every function prefixed with the backend's name) and embeds struct tc_dev at
 * the start of its own struct.  dev.c does what every backend shares: range and
 * alignment checks, counters, the synchronous helpers, and error completion.
 */
#ifndef TC_DEV_H
#define TC_DEV_H

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include "ctx.h"

struct tc_dev;

struct tc_dev_ops {
	const char *name;                               /* "file", "memory", "crash", "emu", "fault" */
	/* Start @io, already checked for range and alignment.  Must complete it through
	 * tc_dev_complete() exactly once, never from inside this call. */
	void (*submit)(struct tc_dev *dev, struct tc_io *io);
	void (*close)(struct tc_dev *dev);              /* free everything */
	/* Optional, remote backings (rbd): record on the device itself that a cache holds
	 * its dirty data (@owner "CACHE-UUID@HOST"), or clear that (NULL); read it back;
	 * the device's identity where it has no local file. */
	int (*set_dirty_owner)(struct tc_dev *dev, const char *owner);
	int (*dirty_owner)(struct tc_dev *dev, char *buf, size_t len);
	const char *(*remote_id)(struct tc_dev *dev);
	/* Optional, redundant devices whose protection differs by range (arrays): see
	 * tc_dev_range_redundancy. */
	int (*range_redundancy)(struct tc_dev *dev, uint64_t off, uint64_t len);
	/* Optional: tc_dev_health_gen. */
	uint64_t (*health_gen)(struct tc_dev *dev);
};

/*
 * struct tc_dev_queue_stats - a device's priority queues (tc_dev_queue_stats()); all
 * zero on a device without a dispatch limit.  Counts are monotonic except the two
 * "now" gauges; times are ns of the context's clock.
 */
struct tc_dev_queue_stats {
	uint32_t limit;                        /* the dispatch limit, requests */
	uint32_t inflight;                     /* now: in the backend */
	uint32_t held[TC_PRIO_COUNT];          /* now: waiting per class */
	uint64_t queued[TC_PRIO_COUNT];        /* requests that had to wait, per class */
	uint64_t wait_ns[TC_PRIO_COUNT];       /* their total wait before dispatch */
	uint64_t max_wait_ns[TC_PRIO_COUNT];   /* the longest wait */
	uint64_t starved;                      /* dispatches forced by the bound */
};

/*
 * tc_dev_range_redundancy - further failures the bytes [@off, @off + @len) of @dev
 * survive now: the least over the range.  Where protection differs by range (a RAID
 * 10 with a member lost: the chunks of its mirror pair have one copy left, the others
 * two) the device's own op says; else tc_dev_limits' redundancy, the same for every
 * byte.  -1 when the device has failed.  Any thread.
 */
int tc_dev_range_redundancy(tc_dev *dev, uint64_t off, uint64_t len);

/*
 * tc_dev_health_gen - a count that grows whenever a part of @dev fails (an array: a
 * member became faulty, in the array or in one of its member arrays), even where the
 * device's redundancy, and so its events, stay the same (a RAID 10 losing a member of
 * another pair).  0 for devices without parts.  Any thread.
 */
uint64_t tc_dev_health_gen(tc_dev *dev);

struct tc_dev {
	const struct tc_dev_ops *ops;
	tc_ctx *ctx;
	uint64_t size;              /* bytes */
	uint32_t lbs;               /* logical block size, bytes */
	bool direct;
	char *name;                 /* malloc'ed */
	_Atomic uint64_t n_reads, n_writes, n_flushes, n_discards, n_write_zeroes;
	_Atomic uint64_t n_bytes_read, n_bytes_written, n_errors;
	/* Limits and health (tc_dev_limits): set by the backend at open with
	 * tc_dev_set_limits(), redundancy changed with tc_dev_event(); under watch_lock.
	 * notify_lock serialises event delivery against tc_dev_unwatch(). */
	pthread_mutex_t watch_lock, notify_lock;
	struct tc_dev_limits limits;
	struct tc_dev_watcher *watchers; /* list, newest first */
	/* Dispatch limit and priority queues (dev.c, "Dispatch"): at most qd_limit
	 * requests in the backend (0: no limit, nothing below is used), the rest held
	 * in one FIFO per class (enum tc_prio) under q_lock. */
	uint32_t qd_limit;          /* set once at open (tc_dev_set_dispatch_limit) */
	pthread_mutex_t q_lock;
	uint32_t q_inflight;        /* requests handed to the backend, not completed */
	uint32_t q_inflight_high;   /* of which HIGH */
	uint32_t q_passed;          /* dispatches in a row that passed a waiting lower class */
	uint64_t q_last_high;       /* ns: the last HIGH dispatch or completion */
	bool q_high_seen;           /* q_last_high is set */
	uint64_t q_seq;             /* arrival number of the next held request */
	struct tc_io *q_head[TC_PRIO_COUNT], *q_tail[TC_PRIO_COUNT];
	struct tc_dev_queue_stats q_st;
};

/* The dispatch bound: after this many dispatches in a row that went ahead of a waiting
 * request of a lower class, the oldest waiting request of a lower class goes next
 * (dev.c, after mq-deadline's writes_starved). */
#define TC_DEV_STARVE_LIMIT 8
/* Anticipation for HIGH traffic (dev.c): while a HIGH request is queued or in flight,
 * or one completed less than this long ago, the lower classes together use at most
 * TC_DEV_LOW_DEPTH_HIGH of the dispatch limit. */
#define TC_DEV_HIGH_WINDOW_NS 10000000ull      /* 10 ms */
#define TC_DEV_LOW_DEPTH_HIGH 1u


/* tc_dev_set_dispatch_limit - a backend at open, before any request: hand at most
 * @depth requests at a time to ->submit (its own queue depth: the SSD's parallel
 * slots, the disk's NCQ depth); the rest wait in the device layer's per-class FIFOs
 * and go in priority order as requests complete.  0 (the default) is no limit. */
void tc_dev_set_dispatch_limit(struct tc_dev *dev, uint32_t depth);

/* tc_dev_queue_stats - copy @dev's queue counters into @out.  Thread-safe. */
void tc_dev_queue_stats(struct tc_dev *dev, struct tc_dev_queue_stats *out);

/* tc_dev_high_waiting - whether a HIGH request is held in @dev's queue right now
 * (background work yields while it is true); false without a dispatch limit.
 * Thread-safe. */
bool tc_dev_high_waiting(struct tc_dev *dev);

/* tc_dev_init - fill the common part; @name is copied.  Returns 0 or -ENOMEM. */
int tc_dev_init(struct tc_dev *dev, const struct tc_dev_ops *ops, tc_ctx *ctx,
		const char *name, uint64_t size, uint32_t lbs);
void tc_dev_fini(struct tc_dev *dev);   /* frees what tc_dev_init() allocated */

/* tc_dev_set_limits - a backend's limits at open (tc_dev_init sets io_min to the
 * logical block size and everything else to 0).  io_min is raised to the logical
 * block size; an io_opt that is not a multiple of io_min is dropped (0). */
void tc_dev_set_limits(struct tc_dev *dev, const struct tc_dev_limits *l);

/* tc_dev_event - a backend reports a health change: @redundancy becomes the limits'
 * redundancy, then every watcher is called with @ev (from the caller's thread, one event at a
 * time; the caller holds none of the device's locks). */
void tc_dev_event(struct tc_dev *dev, enum tc_dev_event ev, uint8_t redundancy);

/* tc_dev_complete - backends call this to finish @io: counts errors and calls done. */
void tc_dev_complete(struct tc_dev *dev, struct tc_io *io, int result);

/* tc_dev_complete_later - complete @io with @result from a ctx work item (used for
 * refusals and by backends without a completion thread).  The device layer owns
 * io->internal[] while a request is in flight. */
void tc_dev_complete_later(struct tc_dev *dev, struct tc_io *io, int result);

/* tc_dev_lock_fd - with TC_DEV_EXCLUSIVE in @flags, take flock(LOCK_EX|LOCK_NB) on
 * @fd (the lock goes with the open file description, so it ends when @fd is closed).
 * Returns 0, or -EBUSY with a message naming @path when another open of the file holds
 * it (a running server or another tool), or -errno. */
int tc_dev_lock_fd(tc_ctx *ctx, int fd, const char *path, unsigned flags);

/* tc_dev_set_dirty_owner - record on @dev that the cache @owner ("CACHE-UUID@HOST")
 * holds its dirty data, or clear the record (@owner NULL), where the device keeps such
 * a record (an RBD image's metadata "tiercache.dirty"); a synchronous round trip to
 * the device's store.  Returns 0 (also for devices without the record), or -errno
 * with a message naming the device.  Thread-safe. */
int tc_dev_set_dirty_owner(tc_dev *dev, const char *owner);

/* tc_dev_dirty_owner - the record of tc_dev_set_dirty_owner as it is now (read at open,
 * then kept with every change through this device) into @buf (@len bytes,
 * NUL-terminated): "" when there is none or the device keeps none. */
void tc_dev_dirty_owner(tc_dev *dev, char *buf, size_t len);

/* tc_dev_remote_id - a remote device's identity ("rbd:FSID/POOL/IMAGE-ID"), or NULL
 * for devices identified by their local file. */
const char *tc_dev_remote_id(tc_dev *dev);

/* tc_iov_slice - the iovecs of bytes [@skip, @skip + @len) of @iov (@cnt elements),
 * pointing into the same buffers: into *@one when one element does and @one is not
 * NULL, else a malloc'ed array (free it when *@out != @one); the count in *@outcnt.
 * Returns 0, -EINVAL when @iov holds fewer than @skip + @len bytes, or -ENOMEM. */
int tc_iov_slice(const struct iovec *iov, int cnt, size_t skip, size_t len,
		 struct iovec *one, struct iovec **out, int *outcnt);

/* iovec helpers: copy between a flat buffer and @iov starting @skip bytes into the
 * iovec list. */
void tc_iov_to_buf(void *buf, const struct iovec *iov, int iovcnt, size_t skip, size_t len);
void tc_buf_to_iov(const struct iovec *iov, int iovcnt, size_t skip, const void *buf,
		   size_t len);

/* A device spec taken apart (tc_dev_spec_parse): pointers into the spec, nothing opened. */
enum tc_spec_kind { TC_SPEC_FILE, TC_SPEC_CRASH, TC_SPEC_EMU, TC_SPEC_NBD, TC_SPEC_ARRAY,
		    TC_SPEC_RBD };
struct tc_dev_spec {
	enum tc_spec_kind kind;
	const char *target;         /* the path (the URI for nbd:, the member list for
				     * array:), NUL-terminated, non-empty
				     * except for a plain file spec, which is the whole spec */
	const char *profile;        /* emu: the profile, @profile_len bytes (no NUL) */
	size_t profile_len;
};

/* tc_dev_spec_parse - split @spec ("PATH", "crash:PATH", "emu:PROFILE:PATH", "nbd:URI",
 * "array:MEMBERS", the target then being the comma-separated member specs)
 * into *@out without opening anything: the parsing half of tc_dev_open_spec().
 * Returns 0, or -EINVAL with a message naming the spec (empty, nothing after the
 * prefix, an emu: spec without both PROFILE and PATH). */
int tc_dev_spec_parse(tc_ctx *ctx, const char *spec, struct tc_dev_spec *out);

/* tc_emu_profile_parse - read an emulated device's profile (the INI text of profiles/,
 * src/dev/emu.c) from @f, named @name in messages, and check it as tc_dev_new_emu()
 * does.  Returns 0 or -EINVAL with a message naming @name, the line and the key. */
int tc_emu_profile_parse(tc_ctx *ctx, FILE *f, const char *name);

#endif /* TC_DEV_H */
