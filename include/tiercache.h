/* SPDX-License-Identifier: MIT */
/*
 * tiercache.h - the public API of libtiercache.
 *
 * libtiercache caches slow backing devices (HDDs, HDD arrays, remote block devices) on
 * a fast cache device (SSD, NVMe), with per-volume read caching and write policies, the
 * way SSD-caching RAID controllers (Adaptec maxCache, LSI CacheCade) do in firmware.
 *
 * Objects, in lifecycle order:
 *   tc_ctx     execution context: clock, completion queue, worker thread (threaded mode)
 *              or caller-driven polling (deterministic mode), log sink.
 *   tc_dev     an asynchronous block device: a file or block device (io_uring), memory,
 *              or an emulated HDD or SSD.  Crash-test devices, fault injection and
 *              power cuts are test API: tiercache-test.h.
 *   tc_cache   a formatted cache device serving one or more volumes.
 *   tc_volume  one formatted backing device attached to a cache, with its own settings.
 *
 * Conventions: sizes and offsets are in bytes, times in nanoseconds.  Functions return
 * 0 (or a count) on success and a negative errno on failure; a failure is also logged
 * through the context's log sink with the object and the value at fault.  Nothing in
 * this API aborts on bad input.
 *
 * Threading: in TC_CTX_THREADED mode every function may be called from any thread and
 * completions run on library threads (never inside tc_*_submit()).  In
 * TC_CTX_DETERMINISTIC mode everything runs on the caller's thread: completions and
 * timers run only inside tc_ctx_poll(), in an order chosen by the context's seed, and
 * the clock only moves when the caller moves it (tc_ctx_advance()).
 */
#ifndef TIERCACHE_H
#define TIERCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TC_SECTOR_SIZE 512u     /* smallest addressable unit of a request, bytes */
#define TC_UNIT_SIZE 4096u      /* valid/dirty granularity inside a cache line, bytes */
#define TC_NAME_MAX 32          /* volume names: 1..31 bytes of [A-Za-z0-9._-] */

typedef struct tc_ctx tc_ctx;
typedef struct tc_dev tc_dev;
typedef struct tc_cache tc_cache;
typedef struct tc_volume tc_volume;

/* ------------------------------------------------------------------------------------
 * Context
 */
enum tc_ctx_mode {
	TC_CTX_THREADED = 0,      /* worker thread, real clock (CLOCK_MONOTONIC) */
	TC_CTX_DETERMINISTIC = 1, /* caller polls; virtual clock starting at 0 */
};

enum tc_log_level { TC_LOG_ERROR = 0, TC_LOG_WARN = 1, TC_LOG_INFO = 2, TC_LOG_DEBUG = 3 };

/* Log sink: receives one formatted message without trailing newline. */
typedef void (*tc_log_fn)(void *opaque, enum tc_log_level level, const char *msg);

struct tc_ctx_opts {
	enum tc_ctx_mode mode;
	uint64_t seed;            /* deterministic mode: completion order; 0 is a valid seed */
	enum tc_log_level log_level; /* messages above this level are dropped; default ERROR+WARN */
};

/*
 * tc_ctx_new - create an execution context.
 * @opts: NULL for threaded mode with default logging.
 * Returns 0 and *out, -ENOMEM, or -errno from pthread_create.
 */
int tc_ctx_new(const struct tc_ctx_opts *opts, tc_ctx **out);

/* tc_ctx_free - stop the worker and free the context.  Work still queued is dropped
 * without being run (this is how a test simulates process death).  Devices and caches
 * of the context must be closed or abandoned first. */
void tc_ctx_free(tc_ctx *ctx);

/* tc_ctx_set_log - replace the log sink (default: stderr).  Not thread-safe against
 * concurrent logging; call before starting I/O. */
void tc_ctx_set_log(tc_ctx *ctx, tc_log_fn fn, void *opaque, enum tc_log_level level);

/* tc_log - a message through the context's log sink (printf format), for front ends
 * that want their messages beside the library's; dropped when above the level set. */
void tc_log(tc_ctx *ctx, enum tc_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* tc_monotonic_ns - CLOCK_MONOTONIC in ns: the clock of threaded contexts, for front
 * ends timing what they do (progress, elapsed times).  Thread-safe. */
uint64_t tc_monotonic_ns(void);

/* tc_ctx_now - current time in ns: CLOCK_MONOTONIC (threaded) or the virtual clock. */
uint64_t tc_ctx_now(tc_ctx *ctx);

/* tc_ctx_advance - deterministic mode only: move the virtual clock forward by @ns.
 * Timers that become due run at the next tc_ctx_poll().  Returns -EINVAL in threaded mode. */
int tc_ctx_advance(tc_ctx *ctx, uint64_t ns);

/*
 * tc_ctx_poll - deterministic mode: run up to @max queued work items (device
 * completions, deferred engine steps), picking each one at random (seeded) among those
 * queued, then every due timer.  Returns the number of items and timers run (0 when
 * idle), or -EINVAL in threaded mode.
 */
int tc_ctx_poll(tc_ctx *ctx, unsigned max);

/* tc_ctx_pending - deterministic mode: number of queued work items. */
unsigned tc_ctx_pending(tc_ctx *ctx);

/* tc_ctx_next_deadline - the earliest armed timer's deadline in ns (either mode), or
 * UINT64_MAX when no timer is armed.  A virtual-clock driver advances to
 * min(next event of its own, this) when tc_ctx_pending() is 0. */
uint64_t tc_ctx_next_deadline(tc_ctx *ctx);

/* ------------------------------------------------------------------------------------
 * Requests and devices
 */
enum tc_op {
	TC_OP_READ = 0,
	TC_OP_WRITE = 1,
	TC_OP_FLUSH = 2,        /* offset/length ignored */
	TC_OP_DISCARD = 3,      /* no iov; data afterwards: old data or zeros */
	TC_OP_WRITE_ZEROES = 4, /* no iov; a write of zeros */
};

#define TC_IO_FUA 0x1u          /* WRITE / WRITE_ZEROES: durable on completion */

/*
 * enum tc_prio - the dispatch class of a request (struct tc_io.prio), for the queues
 * tiercache controls (docs/isolation.md, "Priorities"): where a device holds requests
 * back (its dispatch limit, see tc_dev_queue_stats), HIGH goes before NORMAL before
 * BULK, with a bound so that no class starves.  0 is NORMAL, so a zeroed request is
 * normal.  The engine sets it: a volume's own I/O gets the volume's priority
 * (tc_volume_settings.priority), the cleaner's writeback, cache fills and array
 * rebuild/resync get BULK; an array's member requests inherit their parent's.
 */
enum tc_prio {
	TC_PRIO_NORMAL = 0,
	TC_PRIO_HIGH = 1,       /* latency-critical: ahead of everything else */
	TC_PRIO_BULK = 2,       /* background: after everything else */
};
#define TC_PRIO_COUNT 3

struct tc_io;
/* Completion: @result is 0 or a negative errno.  The request may be reused or freed
 * from inside the callback. */
typedef void (*tc_io_done_fn)(struct tc_io *io, int result);

/*
 * struct tc_io - one block request, owned by the submitter until @done is called.
 * @offset/@length: bytes; for devices aligned to the device's logical block size, for
 * volumes aligned to TC_SECTOR_SIZE.  @iov/@iovcnt: READ and WRITE only; the iovec
 * lengths must add up to @length.
 */
struct tc_io {
	uint8_t op;             /* enum tc_op */
	uint8_t flags;          /* TC_IO_* */
	uint8_t prio;           /* enum tc_prio; 0 = normal */
	uint64_t offset;
	uint64_t length;
	const struct iovec *iov;
	int iovcnt;
	tc_io_done_fn done;
	void *private_data;     /* the submitter's */
	uint64_t internal[4];   /* reserved for the layer the request is submitted to */
};

struct tc_dev_info {
	uint64_t size;            /* bytes */
	uint32_t logical_block_size; /* bytes, 512 or 4096 */
	bool direct;              /* O_DIRECT in use (file backend) */
	const char *backend;      /* "file", "memory", "crash", "emu", "fault", "nbd",
	                           * "rbd", "array" */
	const char *name;         /* path or a generated name */
};

/* Per-device counters, monotonic; read with tc_dev_stats(). */
struct tc_dev_stats {
	uint64_t reads, writes, flushes, discards, write_zeroes;
	uint64_t bytes_read, bytes_written;
	uint64_t errors;
};

#define TC_DEV_BUFFERED 0x1u  /* file backend: do not try O_DIRECT */
#define TC_DEV_READONLY 0x2u
#define TC_DEV_CREATE 0x4u    /* create the file if missing (size from tc_dev_open_file's @size) */

/*
 * tc_dev_open_file - open a regular file or block device through io_uring.
 * @path: file or block device.  @flags: TC_DEV_*.  @size: with TC_DEV_CREATE, size to
 * give a new or shorter file (sparse); otherwise ignored (the current size is used).
 * O_DIRECT is used when the file system allows it unless TC_DEV_BUFFERED.
 * Errors: -ENOENT, -EACCES, -EINVAL (size not a multiple of 4096 or zero), -errno.
 */
int tc_dev_open_file(tc_ctx *ctx, const char *path, unsigned flags, uint64_t size,
		     tc_dev **out);

#define TC_DEV_EXCLUSIVE 0x8u /* take flock(LOCK_EX|LOCK_NB) on the file: -EBUSY when another
                               * open file description holds it (a server or another tool) */
#define TC_DEV_ARRAY_FORCE 0x10u /* "array:" specs: assemble with TC_ARRAY_FORCE (start a
                                  * dirty, degraded parity array) */

/*
 * tc_dev_open_spec - open a device named the way the command line names it:
 *   "PATH"               a file or block device (tc_dev_open_file);
 *   "crash:PATH"         a crash-test device over the file PATH (tc_dev_new_crash, @seed);
 *   "emu:PROFILE:PATH"   an emulated HDD or SSD over the file PATH (tc_dev_new_emu);
 *   "nbd:URI"            an NBD export (tc_dev_open_nbd), e.g. "nbd:nbd://host/name",
 *                        "nbd:nbd+unix:///name?socket=/run/nbd.sock";
 *   "rbd:POOL/IMAGE[@CONF]" a Ceph RBD image (tc_dev_open_rbd), e.g. "rbd:rbd/vm1",
 *                        "rbd:rbd/vm1@/etc/ceph/backup.conf";
 *   "array:M1,M2,..."    the array whose members (and hot spares) are the specs M1, M2,
 *                        ... (of the kinds above, any order; no commas in them),
 *                        assembled from their superblocks (tc_array_assemble;
 *                        TC_DEV_READONLY assembles read-only, TC_DEV_ARRAY_FORCE forces);
 *                        a member that is an array (the leg of a RAID 50 / 60) in
 *                        brackets: "array:[array:a0,a1,a2],[array:b0,b1,b2]".
 * @flags: TC_DEV_*, passed on.  Errors: those of the backend, -EINVAL for an unknown
 * prefix or a spec without a path (the message names the spec).
 */
int tc_dev_open_spec(tc_ctx *ctx, const char *spec, unsigned flags, uint64_t size,
		     uint64_t seed, tc_dev **out);

/*
 * tc_dev_spec_path - the file behind a device spec (see tc_dev_open_spec): @spec itself
 * for "PATH", the part after the prefix for "crash:PATH" and "emu:PROFILE:PATH"
 * (a pointer into @spec); NULL for a remote device ("nbd:URI", "rbd:...") and for an array
 * ("array:..."), which have no local file of their own.  A malformed spec ("emu:" without a second colon) is returned whole, and
 * tc_dev_open_spec says why.
 */
const char *tc_dev_spec_path(const char *spec);

/*
 * tc_array_spec_member - member @i (0-based) of the member list @list of an
 * "array:LIST" spec, into @buf (@len bytes).  Members are separated by commas; a
 * member that is itself an array spec (the leg of a RAID 50 or 60) is written in
 * brackets, "array:[array:a0,a1,a2],[array:b0,b1,b2]", and returned without them.
 * Returns 0 for a plain member, 1 for a bracketed one, -ENOENT past the last,
 * -EINVAL when the brackets do not pair or a member is empty, -ENAMETOOLONG when
 * @buf is too small.
 */
int tc_array_spec_member(const char *list, unsigned i, char *buf, size_t len);

/*
 * tc_dev_new_emu - an emulated device: the data lives in the file @path, and every
 * request takes the service time of the modelled device @profile: an HDD (seek by
 * distance, rotation, transfer, one actuator, NCQ reordering) or an SSD (latency,
 * parallelism, a bandwidth cap).  Backend "emu", logical block size 512, name @path.
 * @profile: a name ("hdd", "sata-ssd", "nvme-ssd"), looked up as NAME.conf in
 * $TC_PROFILE_DIR or else the folder fixed at build time, or a path to a profile file
 * (it contains a '/' or ends in ".conf").  profiles/README.md documents the keys.
 * Clock: in a threaded context a device thread does the file I/O and completes each
 * request when CLOCK_MONOTONIC reaches its modelled completion time (queueing
 * included); in a deterministic context nothing sleeps: a request completes inside
 * tc_ctx_poll() once the virtual clock reaches that time (tc_ctx_next_deadline() tells
 * the caller how far to advance).
 * @flags: TC_DEV_CREATE, TC_DEV_READONLY (writes fail with -EROFS), TC_DEV_EXCLUSIVE;
 * TC_DEV_BUFFERED is implied.  @size: as tc_dev_open_file.
 * Errors: -ENOENT (profile or file), -EINVAL (a bad profile: the message names the
 * file, line and key; a bad size), -EBUSY (TC_DEV_EXCLUSIVE and the file is locked),
 * -ENOMEM, -errno.  Thread-safe like every device: submit from any thread.
 */
int tc_dev_new_emu(tc_ctx *ctx, const char *profile, const char *path, unsigned flags,
		   uint64_t size, tc_dev **out);

/*
 * tc_dev_open_nbd - a device on the NBD export at @uri (libnbd's URI syntax: nbd://,
 * nbds://, nbd+unix://, ...), connected at once.  Size and read-only-ness come from the
 * server; what it cannot do is done here (FUA as write + FLUSH, write-zeroes as writes
 * of zeros; discard is skipped).  @flags: TC_DEV_READONLY; TC_DEV_EXCLUSIVE cannot be
 * enforced on a remote export and is ignored.  Backend "nbd", name @uri; the
 * connection's loss fails every request with -EIO and tells watchers TC_DEV_FAILED.
 * Errors: -EINVAL (empty URI, a size not a multiple of 4096, a server whose minimum
 * block size is above 512), -ECONNREFUSED and the other errnos of connecting (the
 * message quotes libnbd's), -ENOTSUP (built without libnbd), -ENOMEM.
 */
int tc_dev_open_nbd(tc_ctx *ctx, const char *uri, unsigned flags, tc_dev **out);

/*
 * tc_dev_open_rbd - a device on the Ceph RBD image @spec, "POOL/IMAGE" or
 * "POOL/IMAGE@CONF" (CONF: a ceph.conf path; else librados's default search, $CEPH_CONF
 * then /etc/ceph/ceph.conf; client name, keyring and other options from $CEPH_ARGS,
 * e.g. "--id tiercache"), connected at once through librbd's asynchronous API.
 * librbd's RAM cache is turned off (rbd_cache = false) so a completed FLUSH means the
 * data is in the cluster; FUA is a write then a flush; write-zeroes is RBD's
 * write-zeroes and discard RBD's discard (advisory).  Size from the image (a multiple
 * of 4096); logical block size 512; io_opt is the image's stripe unit (its object size
 * by default).  @flags: TC_DEV_READONLY (the image is opened read-only; writes fail
 * with -EROFS); TC_DEV_EXCLUSIVE takes the image's exclusive lock
 * (rbd_lock_acquire(RBD_LOCK_MODE_EXCLUSIVE)), held until close.  Requests time out
 * after rados_osd_op_timeout (30 s unless the configuration sets it); a timeout or a
 * blocklisting fails the device: every later request fails with -EIO and watchers are
 * told TC_DEV_FAILED once.  Backend "rbd", name "rbd:POOL/IMAGE".
 * Errors: -EINVAL (a malformed spec, a size not a multiple of 4096, no exclusive-lock
 * feature with TC_DEV_EXCLUSIVE), -ENOENT (no such pool or image), -EBUSY (another
 * client holds the exclusive lock: the message names it), -ETIMEDOUT and the other
 * errnos of connecting (the message says which step), -ENOTSUP (built without
 * librbd), -ENOMEM.  Thread-safe like every device.
 */
int tc_dev_open_rbd(tc_ctx *ctx, const char *spec, unsigned flags, tc_dev **out);

/* tc_dev_new_memory - a zero-filled RAM device of @size bytes (multiple of 4096). */
int tc_dev_new_memory(tc_ctx *ctx, uint64_t size, tc_dev **out);


/*
 * tc_errno_parse - an errno from its symbolic name (EIO, ENOSPC, ENODEV, ENXIO,
 * ETIMEDOUT, EROFS, EBUSY, ENOMEM, EAGAIN, EREMOTEIO, EPERM, EINVAL, EILSEQ,
 * ECANCELED, EOVERFLOW, ENOTSUP; any case) or a decimal number 1..4095.  Returns the
 * positive errno, or -EINVAL.  tc_errno_name() is the name of @err from that list, or
 * NULL.  Both pure and thread-safe.
 */
int tc_errno_parse(const char *s);
const char *tc_errno_name(int err);

/* tc_dev_info - fill @info; strings stay valid until tc_dev_close(). */
void tc_dev_info(tc_dev *dev, struct tc_dev_info *info);
void tc_dev_stats(tc_dev *dev, struct tc_dev_stats *st);

/*
 * struct tc_dev_limits - the I/O a device prefers and the failures it survives, as
 * data the layers above read instead of asking for a device's internals (the model:
 * Linux's queue limits io_min / io_opt, which md's RAID personalities fill in and
 * bcache's writeback turns into per-stripe dirty counts).
 *   io_min      bytes: the smallest write that costs no read-modify-write below (a
 *               RAID chunk); at least the logical block size.
 *   io_opt      bytes: the optimal request size and alignment (a RAID full stripe);
 *               0 = no preference.
 *   partial_stripe_expensive  a write that covers part of an io_opt-aligned stripe
 *               costs extra reads (parity RAID).
 *   redundancy  member failures the device survives right now: 0 for a plain device,
 *               a degraded mirror or a RAID 5 missing a member.
 * Files and memory report io_min = logical block size, io_opt 0; a block device
 * reports the kernel's BLKIOMIN / BLKIOOPT (so a Linux md array or a hardware RAID
 * volume gives its chunk and stripe); layers (fault, crash) pass their inner device's.
 */
struct tc_dev_limits {
	uint32_t io_min;
	uint32_t io_opt;
	bool partial_stripe_expensive;
	uint8_t redundancy;
};

/* tc_dev_limits - copy @dev's current limits into @out.  Thread-safe; redundancy can
 * change at any time (see tc_dev_watch). */
void tc_dev_limits(tc_dev *dev, struct tc_dev_limits *out);

/* Health changes a device reports to its watchers. */
enum tc_dev_event {
	TC_DEV_DEGRADED = 1,  /* still serving every byte, with less redundancy than it
	                       * was built with (a member failed) */
	TC_DEV_REDUNDANT = 2, /* redundancy restored (a rebuild finished) */
	TC_DEV_FAILED = 3,    /* no longer serves I/O: every request will fail */
};

/* A watcher: called from the device's completion context after the device's limits
 * already show the change; must not block or submit to @dev synchronously. */
typedef void (*tc_dev_event_fn)(void *opaque, tc_dev *dev, enum tc_dev_event ev);

/*
 * tc_dev_watch - call @fn(@opaque, ...) on every later health change of @dev, until
 * tc_dev_unwatch().  Errors: -EEXIST (the same @fn and @opaque already watch),
 * -ENOMEM.  tc_dev_unwatch returns 0 or -ENOENT; once it returns, @fn is not running
 * and will not be called again for this watch.  Thread-safe.
 */
int tc_dev_watch(tc_dev *dev, tc_dev_event_fn fn, void *opaque);
int tc_dev_unwatch(tc_dev *dev, tc_dev_event_fn fn, void *opaque);

/* tc_dev_event_name - "degraded", "redundant", "failed"; "unknown" when out of range. */
const char *tc_dev_event_name(unsigned ev);

/*
 * tc_dev_submit - submit @io to the device.  @done is always called, exactly once, from
 * a completion context (never inside this call), with 0 or -EINVAL (out of range or
 * misaligned), -EIO, -errno of the backend.
 */
void tc_dev_submit(tc_dev *dev, struct tc_io *io);

/* tc_dev_close - close and free; the caller ensures no request is in flight. */
void tc_dev_close(tc_dev *dev);

/* Synchronous helpers for tools and tests: submit and wait (deterministic mode: poll
 * until done).  Return 0 or -errno. */
int tc_dev_pread(tc_dev *dev, void *buf, uint64_t len, uint64_t off);
int tc_dev_pwrite(tc_dev *dev, const void *buf, uint64_t len, uint64_t off, unsigned flags);
int tc_dev_flush(tc_dev *dev);
/* tc_dev_io - any request synchronously: @buf for READ/WRITE only (NULL otherwise). */
int tc_dev_io(tc_dev *dev, enum tc_op op, unsigned flags, void *buf, uint64_t len,
	      uint64_t off);

/* ------------------------------------------------------------------------------------
 * Settings
 */
enum tc_write_policy {
	TC_WP_WT = 0, /* write-through: cache and backing; write misses allocate */
	TC_WP_WB = 1, /* write-back: writes complete in the cache, the cleaner writes back */
	TC_WP_WA = 2, /* write-around: misses go to backing only; hits update cache + backing */
	TC_WP_PT = 3, /* pass-through: cache unused, cached copies invalidated on write */
	TC_WP_INSTWB = 4, /* instant write-back: wb, and a write covering whole aligned full
	                   * stripes of the backing is made dirty at once (wb sends it to the
	                   * backing whole) while the cache's dirty lines are below its
	                   * dirty_low_pct; docs/raid.md, "Protected write-back" */
};

/* tc_write_policy_is_wb - whether @wp completes writes in the cache (wb, instwb): the
 * policies that need a protected cache (architecture invariant 4). */
bool tc_write_policy_is_wb(unsigned wp);

enum tc_flush_rate {
	TC_FLUSH_LOW = 0,    /* 16 MiB/s, only after 1 s without client I/O on the volume */
	TC_FLUSH_MEDIUM = 1, /* 64 MiB/s, after 100 ms without client I/O; under load 16 MiB/s
	                      * once 10 % of the cache's lines are dirty or an allocation
	                      * found nothing evictable, else nothing (docs/engine.md) */
	TC_FLUSH_HIGH = 2,   /* unlimited, always */
};

enum tc_admission {
	TC_ADMIT_ALWAYS = 0, /* every read miss fills */
	TC_ADMIT_NHIT = 1,   /* fill on the Nth access to a line within the history window */
};

enum tc_fill {
	TC_FILL_SECTORS = 0, /* a read miss fills the requested 4 KiB units */
	TC_FILL_LINE = 1,    /* a read miss fills every invalid unit of the line */
};

/* Per-volume settings, stored in both superblocks and changeable while I/O runs. */
struct tc_volume_settings {
	bool read_cache;          /* read misses may fill the cache */
	uint8_t write_policy;     /* enum tc_write_policy */
	uint8_t flush_rate;       /* enum tc_flush_rate */
	uint8_t admission;        /* enum tc_admission */
	uint8_t fill;             /* enum tc_fill */
	uint32_t nhit;            /* N for TC_ADMIT_NHIT, 1..255 */
	uint64_t seq_cutoff;      /* bytes; a stream this long bypasses the cache; 0 = off */
	/* Partition (docs/isolation.md): the share of the cache this volume keeps at least
	 * (reserve: no neighbour evicts its lines while it holds no more, and free lines
	 * are kept for it) and holds at most (cap: at the cap it evicts its own lines);
	 * its lines count whole, dirty or clean.  Bytes (a multiple of 4096, below 8 TiB),
	 * or TC_SHARE_PCT | a percentage of the cache (0..100); 0 = none.  Stored in the
	 * cache's volume record (a backing's own copy has none).  The reservations of a
	 * cache's volumes add up to at most its size; a cap is at least the reserve. */
	uint64_t reserve;
	uint64_t cap;
	/* Priority on the devices (docs/isolation.md, "Priorities"): the class (enum
	 * tc_prio) of the volume's own requests to the cache device and the backing, as
	 * the CLI's --priority high|normal|low (low is TC_PRIO_BULK, the class of the
	 * cleaner and fills).  Default TC_PRIO_NORMAL.  Stored in the cache's volume
	 * record (a backing's own copy has none: it reads normal). */
	uint8_t priority;
};

#define TC_SHARE_PCT ((uint64_t)1 << 63)   /* tc_volume_settings.reserve/cap: a percentage */

/* tc_volume_settings_default - read cache on, wb, medium, always, line fill, nhit 2,
 * seq_cutoff 4 MiB. */
void tc_volume_settings_default(struct tc_volume_settings *s);

enum tc_replacement {
	TC_REPL_LRU = 0,    /* exact LRU, one policy lock (baseline) */
	TC_REPL_S3FIFO = 1, /* S3-FIFO (Yang et al., SOSP'23); lock-free hits */
	TC_REPL_ARC = 2,    /* ARC (Megiddo & Modha, FAST'03); one policy lock */
	TC_REPL_2Q = 3,     /* 2Q (Johnson & Shasha, VLDB'94); lock only on Am hits */
	TC_REPL_SIEVE = 4,  /* SIEVE (Zhang et al., NSDI'24); lock-free hits */
	TC_REPL_WTINYLFU = 5, /* W-TinyLFU (Einziger et al., ACM ToS 2017); one lock */
	TC_REPL_LIRS = 6,   /* LIRS (Jiang & Zhang, SIGMETRICS 2002); one policy lock */
	TC_REPL_WTINYLFU_HC = 7, /* W-TinyLFU, window sized by Caffeine's hill climber */
};

/* Cache-wide settings, given at format time, stored in the cache superblock. */
struct tc_cache_opts {
	uint32_t line_size;        /* bytes, power of two 4 KiB..64 KiB; default 64 KiB */
	uint8_t replacement;       /* enum tc_replacement; default S3FIFO */
	uint32_t commit_interval_ms; /* metadata commit period without FLUSH; default 1000 */
	uint8_t dirty_low_pct;     /* cleaner hysteresis low watermark; default 40 */
	uint8_t dirty_high_pct;    /* above it the cleaner runs flat out; default 70 */
	bool unprotected_writeback; /* allow wb and instwb on a device without redundancy
				    * (a single device, RAID 0), stored in the superblock;
				    * default false: write-back needs tc_dev_limits
				    * redundancy >= 1 (architecture invariant 4) */
	bool checksums;            /* verify cached data on every read from the cache device:
				    * XXH3 of each 4 KiB unit, kept in RAM (4 bytes per unit);
				    * a clean unit that fails is read from the backing instead,
				    * a dirty one is an I/O error.  Default true */
};

void tc_cache_opts_default(struct tc_cache_opts *o);

/* ------------------------------------------------------------------------------------
 * Formatting (offline; destroys what the device held)
 */

/*
 * tc_cache_format - write an empty cache onto @dev: two superblock copies, an empty
 * metadata area, no volumes.  @opts NULL for defaults.
 * Errors: -EINVAL (bad option: the message names it), -ENOSPC (device too small for
 * 16 cache lines plus metadata), -EIO.
 */
int tc_cache_format(tc_ctx *ctx, tc_dev *dev, const struct tc_cache_opts *opts);

/*
 * struct tc_cache_layout - where tc_cache_format puts things on a cache device of a
 * given size: @lines cache lines of the line size, whose data area starts at
 * @data_offset (bytes from the device's start) and runs for lines * line size bytes.
 */
struct tc_cache_layout {
	uint64_t lines;
	uint64_t data_offset;   /* bytes */
};

/*
 * tc_cache_layout_for - the layout tc_cache_format would give a device of @dev_size
 * bytes with cache lines of @line_size bytes (a power of two, 4 KiB to 64 KiB).
 * Errors: -EINVAL (line size), -ENOSPC (too small for 16 lines plus metadata).
 */
int tc_cache_layout_for(uint64_t dev_size, uint32_t line_size, struct tc_cache_layout *out);

/*
 * tc_cache_size_for - the smallest cache device size (bytes, a multiple of @line_size)
 * that holds at least @lines cache lines of @line_size bytes with their metadata: how
 * big to make a cache for a wanted capacity.  Errors: -EINVAL (line size, or @lines
 * above 2^32 - 1), -ENOSPC (@lines below 16).
 */
int tc_cache_size_for(uint64_t lines, uint32_t line_size, uint64_t *dev_size);

/*
 * tc_backing_format - write a backing superblock onto @dev naming the volume @name.
 * The volume's data starts at TC_BACKING_DATA_OFFSET; its size is the rest of the
 * device rounded down to 4 KiB.  @settings NULL for defaults.
 * Errors: -EINVAL (name), -ENOSPC, -EIO.
 */
#define TC_BACKING_DATA_OFFSET (1u << 20)
int tc_backing_format(tc_ctx *ctx, tc_dev *dev, const char *name,
		      const struct tc_volume_settings *settings);

/* tc_backing_format_striped - tc_backing_format() for the array behind with full
 * stripes of @stripe_size bytes (0, or a power of two from 4 KiB to TC_STRIPE_MAX),
 * recorded in the backing superblock for stripe-aware writeback.  -EINVAL otherwise. */
#define TC_STRIPE_MAX (16u << 20)
int tc_backing_format_striped(tc_ctx *ctx, tc_dev *dev, const char *name,
			      const struct tc_volume_settings *settings, uint32_t stripe_size);

/* ------------------------------------------------------------------------------------
 * Cache and volumes
 */

/*
 * tc_cache_open - load the cache on @dev: validate its superblocks and metadata,
 * recover after a crash (clean lines are dropped, dirty lines kept), and mark it in use.
 * Volumes stay offline until their backing is attached.  The cache does not own @dev.
 * Errors: -EINVAL / -EUCLEAN (no or damaged superblock, damaged metadata block: the
 * message says which copy and why), -EIO.
 */
int tc_cache_open(tc_ctx *ctx, tc_dev *dev, tc_cache **out);

/*
 * tc_cache_open_readonly - load the cache on @dev for inspection, writing nothing:
 * superblocks and metadata are read and checked as tc_cache_open() does (after a crash
 * the clean lines are dropped in memory only), the superblock is not marked in use, no
 * timer, commit or cleaning runs.  Backings attach in memory (their superblocks are
 * not written); every superblock write and metadata commit fails with -EROFS, and
 * tc_cache_close() writes nothing.  Open @dev with TC_DEV_READONLY as well, so that the
 * device refuses any write (-EROFS) too.  Errors: those of tc_cache_open().
 */
int tc_cache_open_readonly(tc_ctx *ctx, tc_dev *dev, tc_cache **out);

/* tc_cache_is_readonly - true for a cache opened by tc_cache_open_readonly(). */
bool tc_cache_is_readonly(tc_cache *cache);

/*
 * tc_cache_close - clean shutdown: wait for in-flight requests (the caller has stopped
 * submitting), commit metadata, mark the superblock clean.  Dirty lines stay in the
 * cache for the next open.  Frees the cache and its volumes even on error.
 */
int tc_cache_close(tc_cache *cache);

/*
 * tc_cache_set_unprotected_writeback - store in the cache superblock whether write-back
 * (wb, instwb) may run on a cache device without redundancy (tc_dev_limits redundancy
 * 0: a single device, RAID 0, a degraded mirror), architecture invariant 4.  @allow
 * true: allowed (dirty data is lost with the device; status warns), and write-back
 * held (the device degraded, or without redundancy) resumes, and a later
 * TC_DEV_DEGRADED no longer holds it; false: write-back needs redundancy >= 1.
 * Errors: -EBUSY (@allow false while the device has no redundancy and a volume runs
 * write-back on it: the message names it; nothing changed), -EIO.
 */
int tc_cache_set_unprotected_writeback(tc_cache *cache, bool allow);


#define TC_ATTACH_DISCARD_DIRTY 0x1u /* stale backing: drop the cache's dirty lines for it */

/*
 * tc_cache_attach - bring the volume on backing @dev online.  A backing formatted but
 * never attached becomes a new volume of this cache; a known backing gets its cached
 * lines back.  @settings: NULL keeps the stored settings; otherwise they replace them
 * (leaving write-back drains first, as tc_volume_set()).
 * Errors: -ENOSPC (volume table full), -EEXIST (already online), -ESTALE (the backing
 * was written without this cache while the cache holds dirty data for it; with
 * TC_ATTACH_DISCARD_DIRTY the lines are dropped instead), -EBUSY (the backing belongs
 * to another cache), -EINVAL (not a tiercache backing), -EIO.
 */
int tc_cache_attach(tc_cache *cache, tc_dev *dev, const struct tc_volume_settings *settings,
		    unsigned flags, tc_volume **out);

/* tc_cache_find - the online volume named @name, or NULL. */
tc_volume *tc_cache_find(tc_cache *cache, const char *name);

/* Progress of long operations (flush, detach, policy change): dirty bytes left and at
 * the start.  Returning non-zero interrupts the operation (it then returns -EINTR,
 * leaving the volume as it was, dirty data intact). */
typedef int (*tc_progress_fn)(void *opaque, uint64_t dirty_left, uint64_t dirty_start);

/*
 * tc_volume_set - change settings live.  Leaving TC_WP_WB first drains the volume's
 * dirty data (writes meanwhile go write-through), then stores the settings.
 * Errors: -EINVAL (a field out of range: the message names it), -EINTR, -EIO.
 */
int tc_volume_set(tc_volume *vol, const struct tc_volume_settings *s, tc_progress_fn fn,
		  void *opaque);
void tc_volume_get(tc_volume *vol, struct tc_volume_settings *s);

/*
 * tc_volume_flush_dirty - write back every dirty line of the volume, then commit.
 * New writes go write-through meanwhile so it always finishes.  Blocks (deterministic
 * mode: polls).  Errors: -EINTR, -EIO.
 */
int tc_volume_flush_dirty(tc_volume *vol, tc_progress_fn fn, void *opaque);

/*
 * tc_volume_flush_range - write back the dirty data of the byte range [@off, @off +
 * @len) of the volume (every cache line the range touches), online, then commit.
 * Meanwhile writes to those lines go write-through, so it always finishes; the rest
 * of the volume keeps its write policy.  @off and @len: bytes, multiples of 4096
 * (TC_UNIT_SIZE), inside the volume.  @fn as tc_volume_flush_dirty (dirty bytes of
 * the range); @flushed (may be NULL): the range's dirty bytes at the start.  Blocks
 * (deterministic mode: polls).
 * Errors: -EINVAL (an empty, unaligned or out-of-volume range: the message names the
 * volume and the values), -EBUSY (another range operation on the volume is running),
 * -EINTR, -EIO.
 */
int tc_volume_flush_range(tc_volume *vol, uint64_t off, uint64_t len, tc_progress_fn fn,
			  void *opaque, uint64_t *flushed);

#define TC_INVALIDATE_DISCARD_DIRTY 0x1u

/* What tc_volume_invalidate_range() did, bytes. */
struct tc_range_result {
	uint64_t dropped_bytes;          /* clean cached bytes dropped */
	uint64_t discarded_dirty_bytes;  /* dirty bytes dropped (TC_INVALIDATE_DISCARD_DIRTY) */
	uint64_t kept_dirty_bytes;       /* dirty bytes kept: written into the range after
	                                  * the call checked it (newer than the backing) */
};

/*
 * tc_volume_invalidate_range - drop the cached copies of the byte range [@off, @off +
 * @len) of the volume, online, for when the backing was changed behind the cache: the
 * next reads of the range come from the backing.  Requests in flight on a line finish
 * first (a fill started before the call cannot leave its copy behind).  A range holding
 * dirty data is refused, nothing changed, unless @flags has TC_INVALIDATE_DISCARD_DIRTY:
 * then the dirty data is dropped too (lost; reads return the backing's older data) and
 * counted in @res.  Dropped copies are committed before it returns, so a crash cannot
 * bring them back.  @off and @len: bytes, multiples of 4096, inside the volume.  @res
 * may be NULL.
 * Errors: -EINVAL (bad range, as tc_volume_flush_range), -EBUSY (dirty data in the
 * range: the message says how many bytes; or another range operation is running),
 * -ENOMEM, -EIO (the commit).
 */
int tc_volume_invalidate_range(tc_volume *vol, uint64_t off, uint64_t len, unsigned flags,
			       struct tc_range_result *res);

/*
 * Cache attributes of a byte range of a volume (docs/isolation.md, "Pinned and
 * uncacheable ranges"; after the per-region cache attributes of the ARM MPU):
 *   TC_REGION_PINNED       every cache line the range touches, once filled, is never
 *                          evicted (invalidation and detach still drop it); its read
 *                          misses always fill, past admission and the sequential cutoff
 *   TC_REGION_UNCACHEABLE  always around the cache: reads never fill, writes go
 *                          pass-through; set live, the range is written back and its
 *                          cached copies dropped
 *   TC_REGION_POLICY       writes to the range follow @write_policy (wt, wb, wa or pt),
 *                          not the volume's; leaving write-back writes the range back
 * Attributes apply to whole cache lines: two ranges of different attributes may not
 * share a line.  Stored in the cache superblock, so they survive restarts.
 */
enum tc_region_kind {
	TC_REGION_PINNED = 1,
	TC_REGION_UNCACHEABLE = 2,
	TC_REGION_POLICY = 3,
};

struct tc_region {
	uint64_t offset, length;   /* bytes, multiples of 4096, inside the volume */
	uint8_t kind;              /* enum tc_region_kind */
	uint8_t write_policy;      /* TC_REGION_POLICY: enum tc_write_policy (not instwb) */
};

#define TC_VOL_REGIONS_MAX 16u   /* ranges per volume */
#define TC_REGIONS_MAX 52u       /* ranges per cache (what its superblock holds) */
#define TC_PIN_MAX_PCT 50u       /* pinned lines of all volumes: at most this share of
				  * the cache's lines */

/*
 * tc_volume_region_set - give the range @r its attribute, live.  A range overlapping
 * one of the same kind (and write policy) is merged with it; overlapping, or sharing a
 * cache line with, one of another kind is refused.  Bounds: at most TC_VOL_REGIONS_MAX
 * ranges per volume and TC_REGIONS_MAX per cache; the lines pinned by all the cache's
 * volumes at most TC_PIN_MAX_PCT % of its lines, a volume's pinned lines within its
 * cap, and for every volume the larger of its reserve and its pinned lines, summed,
 * within the cache.  Blocks while an uncacheable range or one leaving write-back is
 * written back (deterministic mode: polls).  Any thread, not concurrently with another
 * management call on the volume.
 * Errors (a message names the volume, the range and the value; nothing changed):
 * -EINVAL (bad range, kind or policy, a conflicting range), -ENOSPC (a bound above),
 * -EPERM (wb on an unprotected cache), -EROFS (read-only cache), -EBUSY (a range
 * operation is running), -EIO.
 */
int tc_volume_region_set(tc_volume *vol, const struct tc_region *r);

/*
 * tc_volume_region_clear - take attribute @kind off the bytes [@off, @off + @len) of
 * the volume (ranges of that kind are cut, or split in two, at the bounds).  Unpinned
 * lines become evictable again; a range leaving write-back is written back.  Errors as
 * tc_volume_region_set, and -ENOENT (no range of @kind overlaps: nothing changed).
 */
int tc_volume_region_clear(tc_volume *vol, uint64_t off, uint64_t len, unsigned kind);

/* tc_volume_regions - copy up to @max of the volume's ranges (sorted by offset) into
 * @out; returns how many it has (which may exceed @max).  Any thread. */
unsigned tc_volume_regions(tc_volume *vol, struct tc_region *out, unsigned max);

/* tc_volume_pinned_bytes - bytes of the cache slots the volume holds pinned (lines
 * count whole; a line emptied by an invalidation keeps its slot, and counts, until it
 * is refilled).  Any thread. */
uint64_t tc_volume_pinned_bytes(tc_volume *vol);

/* tc_region_kind_name - "pinned", "uncacheable", "policy"; NULL when unknown. */
const char *tc_region_kind_name(unsigned kind);

#define TC_DETACH_DISCARD_DIRTY 0x1u

/*
 * tc_volume_detach - drain dirty data (unless TC_DETACH_DISCARD_DIRTY), drop the
 * volume's lines, remove it from the cache and the cache link from the backing.  The
 * caller has stopped submitting to @vol; @vol is freed on success.  On -EINTR or error
 * the volume stays attached and usable.
 */
int tc_volume_detach(tc_volume *vol, unsigned flags, tc_progress_fn fn, void *opaque);

/*
 * tc_volume_submit - submit a request.  READ/WRITE/WRITE_ZEROES/DISCARD ranges must be
 * aligned to TC_SECTOR_SIZE and inside the volume; FLUSH covers every write completed
 * before it was submitted, on the whole volume.  @done is called exactly once, possibly
 * before this call returns for requests refused at once (-EINVAL); -EIO otherwise.
 */
void tc_volume_submit(tc_volume *vol, struct tc_io *io);

/* Synchronous helpers (wait or poll until done). */
int tc_volume_pread(tc_volume *vol, void *buf, uint64_t len, uint64_t off);
int tc_volume_pwrite(tc_volume *vol, const void *buf, uint64_t len, uint64_t off,
		     unsigned flags);
int tc_volume_io(tc_volume *vol, enum tc_op op, unsigned flags, void *buf, uint64_t len,
		 uint64_t off);

uint64_t tc_volume_size(tc_volume *vol);  /* bytes */
const char *tc_volume_name(tc_volume *vol);

/* ------------------------------------------------------------------------------------
 * Inspection (read-only: nothing is written to the devices)
 */

enum tc_probe_kind {
	TC_PROBE_EMPTY = 0,   /* zeros where superblocks would be: nothing recognised */
	TC_PROBE_CACHE = 1,   /* a tiercache cache superblock (at least one valid copy) */
	TC_PROBE_BACKING = 2, /* a tiercache backing superblock */
	TC_PROBE_FOREIGN = 3, /* another format's signature: a file system, LVM, md, ... */
	TC_PROBE_UNKNOWN = 4, /* data that is none of the above (damaged superblock too) */
	TC_PROBE_ARRAY = 5,   /* a member (or hot spare) of a tiercache array: uuid and name
	                       * are the array's (tc_array_examine has the rest) */
};

/* What a device holds, as tc_dev_probe() and tc_cache_inspect() read it. */
struct tc_probe {
	enum tc_probe_kind kind;
	char what[64];            /* FOREIGN: "ext4 file system", ...; UNKNOWN: why */
	char uuid[37];            /* CACHE / BACKING: the device's uuid */
	/* BACKING */
	char name[TC_NAME_MAX];   /* the volume name */
	uint64_t volume_size;     /* bytes */
	uint64_t data_offset;     /* bytes: where the volume's data starts on the device */
	uint32_t stripe_size;     /* bytes, 0 = not given */
	char cache_uuid[37];      /* the cache it is attached to; "" when none */
	struct tc_volume_settings settings;
	/* CACHE */
	uint32_t line_size;       /* bytes */
	uint64_t lines;
	bool clean_shutdown;
	bool checksums;           /* cached data is checked on every read back */
	unsigned nvolumes;        /* volume records in the cache superblock */
};

/*
 * tc_dev_probe - read what @dev holds without changing it.  Returns 0 and *@out (kind
 * EMPTY / CACHE / BACKING / FOREIGN / UNKNOWN), or -EIO.
 */
int tc_dev_probe(tc_ctx *ctx, tc_dev *dev, struct tc_probe *out);

/* One volume record of a cache as tc_cache_inspect() reports it. */
struct tc_inspect_volume {
	char name[TC_NAME_MAX];
	char backing_uuid[37];
	uint64_t size;            /* bytes */
	uint64_t dirty_bytes;     /* dirty data the cache holds for it, bytes */
	uint64_t cached_bytes;    /* valid data (clean lines count only after a clean shutdown) */
	struct tc_volume_settings settings;
	bool online;              /* tc_cache_volumes: attached now (its backing is open) */
};

#define TC_INSPECT_MAX_VOLUMES 64

/* A cache device checked block by block (tc_cache_inspect). */
struct tc_cache_report {
	struct tc_probe probe;
	unsigned sb_copies_ok;    /* 0..2 valid superblock copies */
	char sb_damage[2][160];   /* why a copy is not valid; "" when it is */
	uint64_t md_blocks;       /* metadata blocks (each stored twice) */
	uint64_t md_copies_damaged;  /* single copies damaged (the other one is used) */
	uint64_t md_blocks_lost;  /* both copies damaged: the cache cannot be opened */
	uint64_t lines_used, lines_dirty;
	unsigned nvolumes;
	struct tc_inspect_volume volumes[TC_INSPECT_MAX_VOLUMES];
};

/*
 * tc_cache_inspect - check the cache on @dev without changing it: both superblock
 * copies, every metadata block copy, and the dirty data per volume (what a
 * tc_cache_open() now would recover).  Returns 0 when the cache would open (damage
 * that a copy covers is reported in *@rep but is not an error), -EINVAL (no cache
 * superblock), -EUCLEAN (damage that would refuse the open: *@rep says where), -EIO.
 */
int tc_cache_inspect(tc_ctx *ctx, tc_dev *dev, struct tc_cache_report *rep);

/*
 * tc_cache_volumes - the volume records of the open cache @cache, whether their
 * backings are attached now or not (online), with the dirty and valid bytes its lines
 * hold for each: what a cache holds for volumes whose backing is absent.  Fills at
 * most @max entries of @out; returns how many.
 */
unsigned tc_cache_volumes(tc_cache *cache, struct tc_inspect_volume *out, unsigned max);

/*
 * tc_backing_use_uncached - record on the backing @dev that it is about to be written
 * without its cache (its attach generation moves), so that the cache, met again,
 * drops its now stale copies instead of serving them.  Errors: those of reading and
 * writing the backing superblock.
 */
int tc_backing_use_uncached(tc_ctx *ctx, tc_dev *dev);

/*
 * tc_backing_forget_cache - for a backing whose cache is lost for good: remove the
 * cache from the backing superblock of @dev (no cache attached, attach generation +1),
 * keeping the volume's name, size and settings, so that the volume can be served
 * alone or attached to a new cache.  Whatever dirty data the cache held is lost; the
 * old cache, met again, is stale for this volume.  Offline: @dev must not be served.
 * @cache_uuid receives the forgotten cache's uuid (37 bytes; may be NULL).
 * Errors: -ENOENT (no cache attached: nothing to forget, nothing written), those of
 * reading and writing the backing superblock.  Not thread-safe against other users
 * of @dev.
 */
int tc_backing_forget_cache(tc_ctx *ctx, tc_dev *dev, char cache_uuid[37]);

/* ------------------------------------------------------------------------------------
 * Hosts: every cache and volume on a set of devices, assembled from their superblocks
 * (what `tiercache serve` and the offline commands work on).
 */

typedef struct tc_host tc_host;
typedef struct tc_export tc_export;

struct tc_host_opts {
	unsigned dev_flags;       /* TC_DEV_* for every device; TC_DEV_EXCLUSIVE for servers;
	                           * TC_DEV_READONLY: an inspection host that writes nothing
	                           * (caches by tc_cache_open_readonly, no superblock of a
	                           * backing changes, closing writes and flushes nothing) */
	uint64_t crash_seed;      /* seed of "crash:" devices */
	bool fault_injection;     /* open every device under a fault layer (tc_dev_new_fault),
	                           * so tc_host_fault() can fail it: for tests and drills */
	/* For tests (power cuts counted over every device): called with each device the
	 * host opens, after the fault layer; it may replace *@dev with a layer over it,
	 * which then owns the device it replaced.  Returns 0, or a negative errno: *@dev
	 * left as it was, the host closes it and the open fails with that error. */
	int (*wrap_dev)(void *opaque, tc_dev **dev);
	void *wrap_opaque;
};

/*
 * tc_host_assemble - open the devices named by @specs (see tc_dev_open_spec), open
 * every cache among them, attach every backing to its cache and make one export per
 * volume:
 *   - a backing attached to a cache that is among the devices is served through it;
 *   - a backing without a cache is served uncached;
 *   - a backing whose cache is missing or fails to open is served uncached with a
 *     warning when its write policy is not write-back (the cache cannot hold dirty data
 *     for it), and refused otherwise: the message names the cache's uuid.
 * A device that is neither a cache nor a backing, two exports with one name, or a
 * refused backing fail the whole assembly: everything opened is closed again, caches
 * cleanly.  Errors: -EINVAL, -EBUSY (device locked), -ESTALE, -ENODEV (a needed cache
 * is missing), -EEXIST (duplicate name or device), -errno.
 */
int tc_host_assemble(tc_ctx *ctx, const char *const *specs, unsigned nspecs,
		     const struct tc_host_opts *opts, tc_host **out);

/* tc_host_close - clean shutdown of every cache (dirty data stays, committed) and
 * flush of every uncached backing; frees the host.  Returns the first error. */
int tc_host_close(tc_host *host);



unsigned tc_host_export_count(tc_host *host);
tc_export *tc_host_export_at(tc_host *host, unsigned i);   /* NULL past the end */
tc_export *tc_host_find(tc_host *host, const char *name);  /* NULL if unknown */
tc_ctx *tc_host_ctx(tc_host *host);
/* tc_host_cache_at - the @i-th open cache of the host and its device spec (*@spec), or
 * NULL past the end. */
tc_cache *tc_host_cache_at(tc_host *host, unsigned i, const char **spec);
/* tc_host_array_at - the @i-th array among the host's devices (given as "array:..."
 * or assembled from members given directly) and its spec (*@spec, when @spec), a RAID
 * 0 of arrays followed by its members (the legs of a RAID 50 / 60: *@spec NULL), or
 * NULL past the end.  The array, and a leg, lives until tc_host_close(). */
tc_dev *tc_host_array_at(tc_host *host, unsigned i, const char **spec);

/*
 * tc_host_open_spare - open @spec for an array of @host (a hot spare or a replacement:
 * tc_array_add_spare, tc_array_replace) as the host opens its own devices (its
 * TC_DEV_* flags and crash seed; no fault layer).  Refused: a device of the host (by
 * spec or the file behind it) or a member, spare or retired member of one of the
 * host's arrays (-EEXIST), and, unless @force, a device holding any superblock
 * (tc_dev_probe not TC_PROBE_EMPTY: -EINVAL, the message names the device and what it
 * holds).  Returns 0 and *@out (the caller owns it), or the errors of tc_dev_open_spec.
 */
int tc_host_open_spare(tc_host *host, const char *spec, bool force, tc_dev **out);

/*
 * tc_host_re_add - open @spec as the host opens its own devices and put it back in
 * its slot of @array, one of the host's arrays (tc_array_re_add: a member that
 * became faulty or was missing resyncs only the regions written since).  A member
 * still faulty in its slot holds the device open (and locked): its superblock is
 * read first (read-only, unlocked) and must name this array and that slot, then that
 * handle leaves the slot (tc_array_remove) and the device is opened again; every
 * check of tc_array_re_add_check() passes first, so the slot stays empty only if the
 * array changed meanwhile, or the device cannot be opened again.  Refused: a device of the
 * host, a global spare, a device of another of its arrays (-EEXIST), an active or
 * rebuilding member (-EBUSY), a member retired by a spare or a replace (-EINVAL).
 * Returns 0, the errors of tc_dev_open_spec() or of tc_array_re_add().
 */
int tc_host_re_add(tc_host *host, tc_dev *array, const char *spec);

/*
 * Global hot spares (docs/raid.md): devices of @host that any of its arrays takes when
 * a member becomes faulty and the array has no spare of its own (the controllers'
 * global hot spares; mdadm's spare-group).  A thread of the host moves the first
 * spare of the pool that fits (block size, at least the members' used size plus the
 * data offset) into the array with tc_array_add_spare(): the spare takes the faulty
 * slot and the rebuild starts.  On an array's TC_DEV_DEGRADED event, and once a second
 * for arrays that found none fitting before.  RAID 0 takes none; the legs of a RAID
 * 50 / 60 do (tc_host_array_at lists them).  The pool lives until tc_host_close(); it is not
 * recorded on any device (a spare holds no superblock until an array takes it): a
 * server is told its global spares at every start (`tiercache serve --spare`).
 *
 * tc_host_add_global_spare - open @spec as tc_host_open_spare() does (the same checks
 * and @force) and add it to the pool; an array that needs a spare now takes it before
 * the call returns.  Errors: those of tc_host_open_spare(), -EEXIST (in the pool
 * already), -EROFS (a read-only host), -ENOMEM.
 * tc_host_remove_global_spare - take @spec (as given, or the file behind it) out of
 * the pool and close it.  Errors: -ENOENT (not in the pool; logged).
 * tc_host_global_spare_at - the @i-th spare of the pool: its spec into @spec (@len
 * bytes, truncated) and its size in bytes into *@size (when @size).  Returns 0, or
 * -ENOENT past the end.  All thread-safe.
 */
int tc_host_add_global_spare(tc_host *host, const char *spec, bool force);
int tc_host_remove_global_spare(tc_host *host, const char *spec);
int tc_host_global_spare_at(tc_host *host, unsigned i, char *spec, size_t len,
			    uint64_t *size);

/*
 * tc_host_attach - attach the backing @backing_spec to the cache @cache_spec, live:
 * the cache must be one of the host's devices (matched by its spec or its path), the
 * backing may be new to the host (it is opened) or served uncached now (it is switched
 * over once its in-flight requests are done).  @settings NULL keeps the backing's
 * stored settings.  Returns 0 and *@out, or the errors of tc_cache_attach.
 */
int tc_host_attach(tc_host *host, const char *cache_spec, const char *backing_spec,
		   const struct tc_volume_settings *settings, unsigned flags, tc_export **out);

/*
 * tc_host_detach - drain the volume's dirty data (unless TC_DETACH_DISCARD_DIRTY) while
 * it keeps serving, then detach it from its cache; the export goes on serving the
 * backing uncached.  -EINVAL for an uncached export; other errors as tc_volume_detach.
 */
int tc_host_detach(tc_host *host, tc_export *exp, unsigned flags, tc_progress_fn fn,
		   void *opaque);

/* Export: one served volume. */
enum tc_export_state {
	TC_EXPORT_CACHED = 0,   /* through its cache */
	TC_EXPORT_UNCACHED = 1, /* straight to the backing: no cache, or detached */
	TC_EXPORT_DEGRADED = 2, /* straight to the backing: its cache is missing or failed */
};

struct tc_export_info {
	const char *name;
	uint64_t size;               /* bytes */
	enum tc_export_state state;
	const char *backing;         /* the backing's device spec */
	const char *cache;           /* the cache's device spec; NULL when uncached */
	tc_volume *volume;           /* NULL when uncached */
};

void tc_export_info(tc_export *exp, struct tc_export_info *info);

/*
 * tc_export_block_size - the export's preferred request size in bytes, for NBD's block
 * size negotiation: the cache's line size when the export is cached (smaller writes
 * are partial lines); uncached, the backing's optimal I/O size (tc_dev_limits: an
 * array's full stripe), else its minimum I/O size (a chunk), where that is a power of
 * two from 4 KiB to 32 MiB; else 4096.  Always a power of two from 4096 to 32 MiB.
 */
uint32_t tc_export_block_size(tc_export *exp);

/*
 * tc_export_io - one request on the export, synchronously (any thread): READ/WRITE
 * with @buf, FLUSH, DISCARD, WRITE_ZEROES; @flags TC_IO_FUA.  Ranges in bytes,
 * aligned to TC_SECTOR_SIZE and inside the export.  Returns 0 or a negative errno
 * (-EINVAL with a message for a bad range).
 */
int tc_export_io(tc_export *exp, enum tc_op op, unsigned flags, void *buf, uint64_t len,
		 uint64_t off);

/* ------------------------------------------------------------------------------------
 * Statistics
 */

/*
 * struct tc_hist - a log-linear histogram of non-negative integer values (latencies in
 * ns), after HdrHistogram (Gil Tene): values below 2^TC_HIST_SUB_BITS are counted
 * exactly; above, every power-of-two range [2^k, 2^(k+1)) is split into
 * 2^(TC_HIST_SUB_BITS-1) equal buckets, so a bucket's width is at most 1/128 of its
 * values (relative error below 0.8 %) over the whole 64-bit range (nanoseconds to
 * centuries), in a fixed 58 KiB array.
 *
 * Percentiles report the highest value of the bucket holding that rank (clamped to the
 * exact maximum), as HdrHistogram's getValueAtPercentile() does; count, sum, min and
 * max are exact.  A histogram is plain memory: no allocation, not thread-safe (the
 * volumes' latency histograms are recorded lock-free inside the library and copied
 * out into one of these by tc_volume_latency()).
 */
#define TC_HIST_SUB_BITS 8
#define TC_HIST_HALF (1u << (TC_HIST_SUB_BITS - 1))               /* 128 */
#define TC_HIST_BUCKETS ((64 - TC_HIST_SUB_BITS + 2) * TC_HIST_HALF) /* 7424 */

struct tc_hist {
	uint64_t count;
	uint64_t min, max;       /* exact; min is UINT64_MAX while empty */
	long double sum;         /* of the values: exact while below 2^64 */
	uint64_t b[TC_HIST_BUCKETS];
};

/* tc_hist_init - empty @h (also resets one in use). */
void tc_hist_init(struct tc_hist *h);

/* tc_hist_record - count @v once (tc_hist_record_n: @n times). */
void tc_hist_record(struct tc_hist *h, uint64_t v);
void tc_hist_record_n(struct tc_hist *h, uint64_t v, uint64_t n);

/* tc_hist_merge - add every count of @src into @dst. */
void tc_hist_merge(struct tc_hist *dst, const struct tc_hist *src);

/*
 * tc_hist_percentile - the value at or below which @p percent of the values fall,
 * @p in [0, 100] (out-of-range values are clamped): the highest value of the bucket
 * that holds the ceil(p/100 * count)-th smallest value (at least the first), clamped to
 * [min, max].  0 for an empty histogram.
 */
uint64_t tc_hist_percentile(const struct tc_hist *h, double p);

/* tc_hist_mean - the exact mean, 0 when empty. */
double tc_hist_mean(const struct tc_hist *h);

/* tc_hist_count_below - how many values are < @v, counting whole buckets: exact when
 * @v is a bucket boundary (every power of two is one), else up to one bucket off. */
uint64_t tc_hist_count_below(const struct tc_hist *h, uint64_t v);

/* Bucket geometry, for tests and for printing: the bucket of @v, and the lowest and
 * highest value a bucket holds. */
unsigned tc_hist_bucket(uint64_t v);
uint64_t tc_hist_bucket_low(unsigned idx);
uint64_t tc_hist_bucket_high(unsigned idx);

struct tc_volume_stats {
	uint64_t read_hits, read_partial_hits, read_misses;     /* per line touched */
	uint64_t write_hits, write_partial_hits, write_misses;
	uint64_t reads, writes, flushes, discards, write_zeroes; /* client requests */
	uint64_t bytes_read, bytes_written;                     /* client bytes */
	uint64_t promotions;        /* lines filled or allocated */
	uint64_t evictions;         /* lines of this volume evicted */
	uint64_t bypassed_seq;      /* requests bypassing the cache: sequential cutoff */
	uint64_t seq_kept_dirty_stripe; /* sequential writes kept in the cache instead:
	                             * their stripe of a parity backing held dirty data */
	uint64_t bypassed_admission;/* read misses not filled: admission said no */
	uint64_t bypassed_bytes;    /* sequential bypass: bytes written around the cache,
	                             * and bytes of read misses not filled */
	uint64_t dirty_bytes;       /* now */
	uint64_t cached_bytes;      /* valid bytes now */
	uint64_t resident_bytes;    /* lines held now, whole, in bytes: the volume's share
	                             * of the cache (tc_volume_settings.reserve, cap) */
	uint64_t backing_stripe;    /* bytes: the backing's full stripe (the stripe size
	                             * stored on it, else its tc_dev_limits io_opt when
	                             * partial stripes are expensive); 0 = none */
	uint64_t writeback_bytes;   /* written back by the cleaner */
	uint64_t writeback_ios;
	/* On a backing with a full stripe (backing_stripe): whole aligned stripes the
	 * cleaner wrote, each inside one request (the backing reads nothing for them); of
	 * those, the stripes it completed by writing the clean cached units of the stripe
	 * beside the dirty ones; and those clean bytes (not in writeback_bytes). */
	uint64_t writeback_full_stripes;
	uint64_t writeback_stripes_completed;
	uint64_t writeback_fill_bytes;
	/* Stripes the cleaner completed by reading what the cache lacks of them from the
	 * backing (when that costs a parity array fewer operations than a partial-stripe
	 * write per dirty run), and the bytes it read for them. */
	uint64_t writeback_stripes_reconstructed;
	uint64_t writeback_backing_read_bytes;
	uint64_t writeback_rate;    /* bytes/s over the last second */
	uint64_t errors;            /* requests completed with an error */
	uint64_t cache_errors, backing_errors;
	/* The volume's traffic on the cache device (its wear), bytes: every read and write
	 * of its lines; of the writes, the fills of read misses (the rest are client
	 * writes); of the reads, the cleaner's (the rest serve client reads). */
	uint64_t cache_bytes_read, cache_bytes_written;
	uint64_t cache_fill_bytes, cache_writeback_read_bytes;
	bool fallback_pt;           /* pass-through after cache-device errors */
	bool draining;              /* flush/detach/policy change in progress */
	uint8_t write_policy;       /* enum tc_write_policy: the stored (chosen) policy */
	uint8_t effective_policy;   /* the policy writes follow now: write_policy, or
	                             * wt while write-back is held (policy_reason), pt
	                             * after the cache failed */
	const char *policy_reason;  /* why effective_policy differs, a static string
	                             * ("cache degraded", "cache not redundant", "cache
	                             * member errors": a pool member's read errors over
	                             * the threshold of docs/pools.md, "cache failed");
	                             * "" when it does not */
	uint64_t instant_bytes;     /* instwb: bytes of full-stripe writes made dirty at
	                             * once */
	uint64_t full_stripe_bytes; /* bytes of writes of whole aligned stripes sent to the
	                             * backing as one request, uncached (docs/pools.md) */
	uint64_t stream_rate_cache; /* the service-rate rule: bytes/s at which whole-stripe
	                             * writes completed made dirty at once (EWMA), and */
	uint64_t stream_rate_backing; /* written whole to the backing; 0 = not measured */
	struct tc_dev_stats backing;/* the backing device's own counters (not reset) */
};

struct tc_cache_stats {
	uint64_t lines, lines_used, lines_dirty;
	uint64_t line_size;
	uint64_t dirty_bytes;
	uint64_t commits, commit_blocks;  /* metadata commits and 4 KiB blocks written */
	uint64_t metadata_bytes_written;  /* commit_blocks in bytes */
	uint64_t mem_bytes_per_line;      /* metadata + index + replacement links, bytes */
	uint64_t mem_ghost_bytes;         /* replacement ghosts, bytes total */
	uint64_t mem_admission_bytes;     /* admission history, bytes total */
	uint64_t mem_csum_bytes;          /* checksums of cached data, bytes total (4 per
					   * 4 KiB unit of every line; 0 when off) */
	uint64_t mem_dirty_index_bytes;   /* the online volumes' dirty indexes (where their
	                                   * dirty data is, by stripe), bytes total */
	bool checksums;                   /* cached data is checked on every read back */
	uint8_t redundancy;               /* the device's tc_dev_limits redundancy now */
	bool unprotected_writeback;       /* write-back allowed without redundancy: the
					   * override, or a cache formatted before it existed */
	bool writeback_held;              /* write-back volumes run write-through now:
					   * the device degraded, or it has no redundancy
					   * and no override */
	uint64_t csum_errors;             /* 4 KiB units read back that failed their check */
	uint64_t recovered_dirty_lines, recovered_dropped_lines;
	uint64_t recovery_ns;             /* time spent loading metadata at open */
	struct tc_dev_stats dev;
};

void tc_volume_stats(tc_volume *vol, struct tc_volume_stats *st);
/* tc_volume_stats_reset - zero the counters of tc_volume_stats (not dirty_bytes,
 * cached_bytes or the backing's own counters) and the latency histograms. */
void tc_volume_stats_reset(tc_volume *vol);

/*
 * Latency classes of a volume's client requests (tc_volume_latency): reads and writes
 * (write-zeroes count as writes; flushes and discards are not recorded), each a hit
 * when every cache line it touched was a full hit (the read_hits / write_hits
 * counters), a miss otherwise (a partial hit, a miss, a sequential bypass).  A request
 * is timed from tc_volume_submit() to the call of its completion, errors included.
 */
enum tc_lat_class {
	TC_LAT_READ_HIT = 0,
	TC_LAT_READ_MISS = 1,
	TC_LAT_WRITE_HIT = 2,
	TC_LAT_WRITE_MISS = 3,
	TC_LAT__COUNT = 4,
};

/* tc_lat_class_name - "read_hit", "read_miss", "write_hit", "write_miss"; NULL for an
 * unknown class. */
const char *tc_lat_class_name(unsigned cls);

/*
 * tc_volume_latency - a snapshot of the volume's latency histogram of class @cls
 * (enum tc_lat_class) into @out: every request since the volume came online or the
 * last tc_volume_stats_reset(), values in ns, the exact maximum and minimum, buckets of
 * at most 1/128 of their values (struct tc_hist).  The histograms are recorded with
 * relaxed atomic counters, no lock (a request in flight during the snapshot may be
 * counted in the buckets before the extremes).  Any thread.
 * Errors: -EINVAL (@cls out of range; @out untouched).
 */
int tc_volume_latency(tc_volume *vol, unsigned cls, struct tc_hist *out);
void tc_cache_stats(tc_cache *cache, struct tc_cache_stats *st);

/*
 * tc_volume_valid_bytes - residency: how many bytes of the volume range [@off, @off +
 * @len) (bytes) are held by valid 4 KiB units in the cache right now.  A snapshot (the
 * cache changes under concurrent I/O); any thread.  The replay tools read it just
 * before each request to report a byte hit ratio.  Out-of-range bytes count as absent.
 */
uint64_t tc_volume_valid_bytes(tc_volume *vol, uint64_t off, uint64_t len);

/* tc_volume_stats_json - counters as a JSON object (snake_case keys, bytes in bytes),
 * with "latency": {read_hit, read_miss, write_hit, write_miss}, each {count, min_ns,
 * mean_ns, p50_ns, p90_ns, p99_ns, p999_ns, p9999_ns, max_ns, buckets: [{ge_ns,
 * lt_ns, count}]} (the distribution of tc_volume_latency() in powers of two, exact:
 * [0, 1024) ns, then [2^k, 2^(k+1)); non-empty ones only).
 * Returns a malloc'ed string (free() it) or NULL on -ENOMEM. */
char *tc_volume_stats_json(tc_volume *vol);
char *tc_cache_stats_json(tc_cache *cache);

/* Names of enum values ("wb", "s3fifo", ...) and their parsers (-EINVAL if unknown). */
const char *tc_write_policy_name(unsigned wp);
int tc_write_policy_parse(const char *s);
const char *tc_flush_rate_name(unsigned r);
int tc_flush_rate_parse(const char *s);
const char *tc_replacement_name(unsigned r);
int tc_replacement_parse(const char *s);
const char *tc_admission_name(unsigned a);      /* "always", "nhit" */
int tc_admission_parse(const char *s);
const char *tc_fill_name(unsigned f);           /* "sectors", "line" */
int tc_fill_parse(const char *s);
const char *tc_prio_name(unsigned p);           /* "normal", "high", "low" (bulk) */
int tc_prio_parse(const char *s);

/*
 * tc_volume_name_valid - whether @name may name a volume (tc_backing_format): 1 to
 * TC_NAME_MAX - 1 characters of [A-Za-z0-9._-], not "." or "..", not starting with '-'
 * (names become export names and command arguments).  NULL is not valid.
 */
bool tc_volume_name_valid(const char *name);

/*
 * tc_size_parse - a size in bytes from "4096", "64K", "1M", "2GiB", "1T" (suffixes K, M,
 * G, T in powers of 1024, optionally followed by "iB" or "B"; case-insensitive).
 * Returns 0 and *@out, or -EINVAL (not a size: empty, sign, junk) or -ERANGE (over
 * 2^64 - 1).
 */
int tc_size_parse(const char *s, uint64_t *out);

/*
 * tc_size_format - @bytes for people, into @buf (@len bytes): "512 B" below 1 KiB,
 * else one decimal and a binary unit ("1.5 GiB", up to PiB).  Returns @buf.
 */
const char *tc_size_format(uint64_t bytes, char *buf, size_t len);

/* ------------------------------------------------------------------------------------
 * Arrays: a device over member devices (software RAID 0, 1, 10, 5, 6; RAID 50 and 60
 * as RAID 0 over RAID 5 or RAID 6 arrays).  An array is a tc_dev like any other: it is
 * submitted to, watched (tc_dev_watch: degraded when a member fails within its
 * redundancy, failed past it) and closed the same way, and its members may be any
 * devices, arrays included.
 */

enum tc_raid_level_id {
	TC_RAID0 = 0,   /* striping, no redundancy */
	TC_RAID1 = 1,   /* n-way mirror */
	TC_RAID5 = 5,   /* one parity chunk per stripe (P) */
	TC_RAID6 = 6,   /* two parity chunks per stripe (P, Q) */
	TC_RAID10 = 10, /* striped mirrors, md's near layout */
};

#define TC_ARRAY_MAX_MEMBERS 32
#define TC_ARRAY_CHUNK_DEFAULT (256u << 10) /* bytes */
#define TC_ARRAY_CHUNK_MIN 4096u            /* bytes */
#define TC_ARRAY_CHUNK_MAX (64u << 20)      /* bytes */
#define TC_ARRAY_MAX_EXTRA 16   /* spares, and members retired but not yet removed */

struct tc_array_opts {
	enum tc_raid_level_id level;
	uint32_t chunk;           /* bytes, a power of two in [TC_ARRAY_CHUNK_MIN,
	                           * TC_ARRAY_CHUNK_MAX]; 0 = TC_ARRAY_CHUNK_DEFAULT */
	unsigned copies;          /* RAID 10: copies of every chunk, 2..members; 0 = 2.
	                           * Other levels: 0 */
	/* tc_array_create, RAID 5/6: how the parity is made consistent after a crash
	 * (mdadm's --consistency-policy; docs/raid.md, "The write hole").  Ignored by
	 * tc_dev_new_array and for the other levels. */
	enum tc_array_consistency {
		TC_CONSISTENCY_DEFAULT = 0, /* TC_CONSISTENCY_PPL */
		TC_CONSISTENCY_PPL = 1,     /* partial-parity log: no write hole */
		TC_CONSISTENCY_BITMAP = 2,  /* write-intent map: resync only written regions;
		                             * the write hole stays open */
	} consistency;
};

enum tc_member_state {
	TC_MEMBER_ACTIVE = 0,     /* in service */
	TC_MEMBER_FAULTY = 1,     /* failed (I/O error or tc_array_fail_member): no longer
	                           * read or written */
	TC_MEMBER_SPARE = 2,      /* a hot spare: holds no data, takes a faulty member's
	                           * place */
	TC_MEMBER_REBUILDING = 3, /* written everywhere, read only below the rebuild
	                           * position; becomes active when the rebuild ends */
	TC_MEMBER_REPLACED = 4,   /* retired by tc_array_replace() once its successor
	                           * holds everything; out of the array */
};

struct tc_array_member_status {
	enum tc_member_state state;
	const char *name;         /* the member device's name; valid until tc_dev_close() */
	uint64_t size;            /* the member device's size, bytes */
	uint64_t read_errors;     /* reads of this member that failed */
	uint64_t corrected;       /* of these, rewritten from the other members */
	const char *replacing;    /* REBUILDING by tc_array_replace(): the name of the
	                           * member being replaced (still in service), else NULL */
};

/* What an array's background pass is doing (rebuild.c). */
enum tc_array_sync {
	TC_ARRAY_SYNC_IDLE = 0,
	TC_ARRAY_SYNC_REBUILD = 1,  /* rebuilding members (spares taken over, replace) */
	TC_ARRAY_SYNC_CHECK = 2,    /* comparing parity / copies, counting mismatches */
	TC_ARRAY_SYNC_REPAIR = 3,   /* the same, rewriting parity / copies that differ */
};

/*
 * Rebuild (and check) rate, per member, after Linux md's speed_limit_min / _max
 * (/proc/sys/dev/raid, 1000 and 200000 KB/s by default): the pass runs at max_rate
 * while the array has no other I/O and falls to the rate under load when requests
 * arrive (any in the last 50 ms): min_rate + (max_rate - min_rate) x priority / 100.  Priority 0 is md's rule
 * (the floor under load), 100 ignores the load (hardware controllers' "rebuild
 * rate" percent).
 */
#define TC_ARRAY_REBUILD_MIN_DEFAULT 1000000ull    /* bytes/s */
#define TC_ARRAY_REBUILD_MAX_DEFAULT 200000000ull  /* bytes/s */

struct tc_array_rebuild_opts {
	uint64_t min_rate;        /* bytes/s per member; 0 = TC_ARRAY_REBUILD_MIN_DEFAULT */
	uint64_t max_rate;        /* bytes/s per member; 0 = TC_ARRAY_REBUILD_MAX_DEFAULT;
	                           * UINT64_MAX = unlimited (and, under load, unlimited
	                           * too with a priority above 0) */
	unsigned priority;        /* 0..100, see above; 0 = md's rule */
	unsigned depth;           /* windows (rows of chunks) in flight, 1..64; 0 = 8.
	                           * A replace runs one at a time */
};

struct tc_array_status {
	enum tc_raid_level_id level;
	uint32_t chunk;           /* bytes */
	unsigned members;         /* in the array, faulty ones included */
	unsigned data_members;    /* members' worth of data per stripe (RAID 1: 1) */
	unsigned copies;          /* RAID 1 / 10: copies of every chunk; else 1 */
	unsigned parity;          /* parity chunks per stripe: RAID 5 1, RAID 6 2; else 0 */
	uint64_t size;            /* the array's size, bytes */
	uint64_t member_size;     /* bytes used on every member (the smallest, whole chunks) */
	uint64_t data_offset;     /* bytes before the data on every member (its superblocks);
	                           * a spare needs member_size + data_offset bytes */
	unsigned faulty;          /* members faulty now */
	int redundancy;           /* further member failures survivable now; -1 = failed */
	bool degraded;            /* serving, with a member faulty */
	bool failed;              /* past its redundancy: every request fails with -EIO */
	struct tc_array_member_status member[TC_ARRAY_MAX_MEMBERS];
	/* Hot spares (state SPARE) and members out of the array not yet removed
	 * (FAULTY ones a spare took over from, REPLACED ones): tc_array_remove() names
	 * them. */
	unsigned nextra;
	struct tc_array_member_status extra[TC_ARRAY_MAX_EXTRA];
	unsigned spares;          /* of the extra, spares */
	/* The background pass (rebuild, check): */
	enum tc_array_sync sync;
	uint64_t sync_pos;        /* member bytes done (rebuild: the rebuild position) */
	uint64_t sync_end;        /* member bytes in the pass */
	uint64_t sync_rate;       /* bytes/s per member over the last second or so */
	uint64_t sync_written_rate; /* rebuild: the same over rows ever written, the
	                           * ones paced by the rebuild rate (never-written rows
	                           * are zero-filled, unpaced); 0 otherwise */
	uint64_t sync_eta_ns;     /* time left: a rebuild's written rows left at their
	                           * rate (capped by the maximum rate), or (end - pos) /
	                           * rate; 0 when idle or rate unknown */
	uint64_t mismatches;      /* check/repair: chunks (RAID 1/10) or stripes (RAID 5/6)
	                           * that disagreed, in the running or last pass */
	uint64_t checked;         /* windows compared in the running or last check */
	bool check_stopped;       /* the last check ended early (a member failed) */
	uint64_t check_windows;   /* windows in the running or last check */
	struct tc_array_rebuild_opts rebuild;   /* the rates in force */
	/* Consistency after a crash (arrays with superblocks, RAID 5/6): */
	bool ppl;                 /* partial-stripe updates go through the partial-parity log */
	uint64_t map_regions;     /* write-intent map: regions (0: no map) */
	uint64_t map_dirty;       /* of these, bits set now (written recently or to resync) */
	uint64_t map_region_size; /* bytes of every member per region */
	/* The regions ever written (redundant arrays created with the record; a
	 * rebuild writes zeros to the new member in the others): */
	uint64_t written_map_regions; /* regions (0: no record, every region counts) */
	uint64_t written_regions;     /* of these, written since the array was created */
	uint64_t written_region_size; /* bytes of every member per region */
	/* RAID 5/6 writes since the array was assembled: stripe operations (one per
	 * stripe a request touches) by how the parity was made, md's choice
	 * (handle_stripe_dirtying): every data chunk rewritten whole, nothing read (full);
	 * the data chunks not rewritten read (reconstruct-write); the old data and parity
	 * read and patched (read-modify-write); a member missing or unreadable, what is
	 * there read (degraded).  0 on other levels. */
	uint64_t stripe_writes_full, stripe_writes_rcw, stripe_writes_rmw;
	uint64_t stripe_writes_degraded;
};

/*
 * tc_dev_new_array - an array of level @o->level over the @n devices @members (in
 * member order), as device "array" named after the level and its members.  Takes
 * ownership of every member, also on failure (they are closed); the members must not
 * be used directly afterwards except for inspection in tests.
 * Layout (docs/raid.md): RAID 0 stripes chunks over the members in order; RAID 1
 * writes every member and reads one (the one with the fewest requests in flight);
 * RAID 10 is md's near layout (copies of a chunk on consecutive members); RAID 5 and
 * RAID 6 rotate P (and Q after it) left-symmetrically as Linux md does by default
 * (drivers/md/raid5.c, raid5_compute_sector), Q being sum of 2^i * D_i over GF(2^8)
 * (polynomial 0x11d, as lib/raid6 and ISA-L's pq_gen).  A partial-stripe write reads
 * what read-modify-write or reconstruct-write needs, whichever reads fewer chunks
 * (md's handle_stripe_dirtying rule); a full-stripe write reads nothing.
 * Sizes: members of different sizes are used up to the smallest (rounded down to a
 * whole chunk; logged); the array holds that times the data members.  Logical block
 * size: the members' (all must agree).  Limits (tc_dev_limits): io_min = chunk,
 * io_opt = chunk x data members (RAID 1: the block size and 0, any size being as
 * good), partial_stripe_expensive for RAID 5 and 6,
 * redundancy = member failures survivable now (plus the least of the members' own).
 * Errors (-EINVAL, the message names the value): unknown level, chunk not a power of
 * two or out of range, too few members for the level (RAID 0: 2, RAID 1: 2, RAID 10:
 * copies, RAID 5: 3, RAID 6: 4) or more than TC_ARRAY_MAX_MEMBERS, copies out of
 * range, members of different logical block sizes, members smaller than one chunk;
 * -ENOMEM.
 */
int tc_dev_new_array(tc_ctx *ctx, const struct tc_array_opts *o, tc_dev **members,
		     unsigned n, tc_dev **out);

/*
 * tc_array_fail_member - mark member @i (0-based, member order) of @array faulty, as
 * an I/O error would (for drills and tests).  The array reports TC_DEV_DEGRADED, or
 * TC_DEV_FAILED when this is past its redundancy.  During a replace of slot @i the
 * slot's device is the successor: failing it (or its failing an I/O) stops the
 * replace, and the old member, which took every write of the replace, keeps the slot
 * with the array's redundancy.  Returns 0, 1 when the member was already faulty,
 * -EINVAL (@array is not an array, @i out of range).
 */
int tc_array_fail_member(tc_dev *array, unsigned i);

/* tc_array_level - @array's RAID level (enum tc_raid_level_id), or -EINVAL when it is
 * not an array.  Any thread, no lock. */
int tc_array_level(tc_dev *array);

/* tc_array_member - the device in slot @i (0-based) of @array, or NULL (not an array,
 * @i past the last slot, the slot empty).  Valid until the slot's device changes (a
 * spare's takeover, tc_array_remove) or the array closes; a RAID 0 never changes its
 * members (it takes no spare, and tc_array_remove refuses them), so the legs of a
 * RAID 50 / 60 live as long as it. */
tc_dev *tc_array_member(tc_dev *array, unsigned i);

/*
 * tc_array_fail_survives - whether @array would still serve its data with member @i
 * (0-based) faulty besides those faulty now: 1 yes, 0 no (failing it fails the
 * array), -EINVAL (not an array, @i out of range).  Which member matters on RAID 10
 * (its copy sets), where the redundancy of tc_array_status is the worst case.
 */
int tc_array_fail_survives(tc_dev *array, unsigned i);

/* tc_array_status - fill @st with @array's level, geometry, members, spares, health
 * and background pass.  Returns 0 or -EINVAL (@array is not an array).  Thread-safe;
 * a snapshot (names valid until the device is closed or removed). */
int tc_array_status(tc_dev *array, struct tc_array_status *st);

/*
 * Hot spares, rebuild, replace and check (docs/raid.md).  These spares are dedicated:
 * each belongs to one array (a host's global spares, shared by its arrays, are
 * tc_host_add_global_spare's).  When a member becomes
 * faulty and the array has a spare, the spare takes its slot at once (state
 * REBUILDING) and a rebuild starts: row by row of chunks, under the same stripe lock
 * as foreground writes (RAID 5/6) or a lock on the array chunk being copied (RAID
 * 1/10), while I/O goes on; a rebuilding member is written everywhere and read only
 * below the rebuild position.  RAID 6 rebuilds two members in one pass.  At the end
 * the member is ACTIVE and the array reports TC_DEV_REDUNDANT.  The pass runs on the
 * context (a timer and member completions; deterministic contexts stay
 * deterministic), at the rates of tc_array_set_rebuild().
 */

/*
 * tc_array_add_spare - give @array the hot spare @spare (takes ownership; on error
 * @spare is closed).  When a member is faulty already, the spare takes its slot now.
 * Errors (-EINVAL, naming the spare and the value): not an array, RAID 0 (nothing to
 * rebuild from), @spare smaller than the members' used size (plus the array's data
 * offset), another logical block size; -ENOSPC: TC_ARRAY_MAX_EXTRA spares and retired
 * members already.
 */
int tc_array_add_spare(tc_dev *array, tc_dev *spare);

/*
 * tc_array_re_add - put @dev, a member of @array that became faulty or was missing
 * (a cable, a controller, a disk that came back), back in its slot, resyncing only
 * what it missed: mdadm --re-add with a write-intent bitmap.  While an array is
 * degraded its write-intent map keeps every region written since (the bits are not
 * cleared until every slot is active again, as md's bitmap does), so the rebuild
 * copies those regions to @dev and skips the rest, which @dev still holds.  @dev is
 * known by its member superblock: the array's uuid, its slot, and the member uuid the
 * slot table still records for that slot.  The slot becomes REBUILDING (recorded so:
 * a restart resumes the same partial resync) and ACTIVE when the pass ends.  Takes
 * ownership of @dev (closed on error); the slot's faulty device (the member's earlier
 * handle, or the placeholder of a member missing since the assembly) is closed.
 * Errors (the reason logged, naming @dev): -EINVAL not an array, RAID 0, no
 * write-intent map (consistency policy ppl) or no superblocks, @dev too small or of
 * another block size, @dev no member of this array (no superblock, another array, a
 * hot spare, a slot another member has taken since, a spare or replacement whose
 * rebuild had not finished when it left, left before the map kept its bits while
 * degraded: add it as a spare instead); -EBUSY its slot is not faulty (active, being
 * rebuilt), or still has requests in flight (retry); -ENOSPC the slot holds another
 * member's faulty device and no room is left to retire it; a read error of its
 * superblock.  Nothing changes on error.  A re-add that must wait for a rebuild
 * under way is recorded as a hot spare until its pass starts: a restart before then
 * rebuilds it whole.
 */
int tc_array_re_add(tc_dev *array, tc_dev *dev);

/* tc_array_re_add_check - every check of tc_array_re_add(@array, @dev), changing
 * nothing and not taking @dev (which may be opened read-only): 0 when the re-add
 * would go ahead now, else its error, logged. */
int tc_array_re_add_check(tc_dev *array, tc_dev *dev);

/*
 * tc_array_remove - take the device named @name (as in tc_array_status; or a slot
 * number, the device in that slot) out of @array and close it: a spare, a member retired (faulty and taken over, replaced),
 * or a faulty member still in its slot (the slot then stays empty until a spare
 * arrives).  A spare's member superblock is erased first (both copies; a failure to
 * is logged and the spare removed all the same): the members' records list slots,
 * not spares, so an assembly given the device would take it back as a spare.  A
 * retired or faulty member keeps its superblock, which the records leave out.
 * Errors: -ENOENT no such device; -EBUSY the device is active or rebuilding (fail it
 * first), a member of a RAID 0 (kept for the array's life), or still has requests in
 * flight (retry); -EINVAL not an array, or @name is
 * the placeholder of a member missing since the assembly ("missing:slotN": no
 * device).  Nothing changes on error.
 */
int tc_array_remove(tc_dev *array, const char *name);

/*
 * tc_array_replace - copy member @i of @array onto @dev, then retire the member
 * (state REPLACED, in the extra list until tc_array_remove): the array keeps its full
 * redundancy throughout, unlike failing the member and rebuilding.  @dev rebuilds
 * from member @i's data where it reads well and by reconstruction from the others
 * where it does not (or once member @i fails).  Takes ownership of @dev (closed on
 * error).  Errors: -EINVAL (not an array, RAID 0, @i out of range, @dev too small or
 * of another block size), -EBUSY (member @i is not active, or a rebuild or check
 * runs: one pass at a time), -ENOSPC (no room to retire the member).
 */
int tc_array_replace(tc_dev *array, unsigned i, tc_dev *dev);

/*
 * tc_array_set_rebuild - the rates of @array's rebuild and check passes, in force at
 * once (the running pass's next window).  Errors: -EINVAL (not an array, min_rate
 * above max_rate, priority above 100).
 */
int tc_array_set_rebuild(tc_dev *array, const struct tc_array_rebuild_opts *o);

/*
 * tc_array_check - start a consistency check of @array (the controllers' patrol
 * read, md's "check" / "repair" sync actions): RAID 5/6 recompute every stripe's
 * parity and compare it with P and Q, RAID 1/10 compare the copies of every chunk;
 * each window under the same lock as writes, at the rebuild rates.  Mismatches are
 * counted (tc_array_status: mismatches, stripes or chunks); with @repair, parity is
 * rewritten from the data and copies from the first copy, as md does.  Progress in
 * tc_array_status; tc_array_wait() waits for the end.  Errors: -EINVAL (not an
 * array, RAID 0), -EBUSY (degraded or rebuilding: nothing to compare against; or a
 * check runs already).
 */
int tc_array_check(tc_dev *array, bool repair);

/*
 * tc_array_wait - wait until @array has no background pass running (rebuild, check).
 * Threaded contexts: sleeps (1 ms steps); deterministic ones: runs tc_ctx_poll() and
 * advances the virtual clock to the next timer.  Returns 0, -EINVAL (not an array),
 * -EDEADLK (deterministic: nothing left to run).
 */
int tc_array_wait(tc_dev *array);

/* tc_raid_level_name - "raid0", "raid1", "raid5", "raid6", "raid10"; NULL when
 * unknown.  tc_raid_level_parse - the level of such a name (also "0", "1", "5", "6",
 * "10"), or -EINVAL. */
const char *tc_raid_level_name(unsigned level);
int tc_raid_level_parse(const char *s);

/* ------------------------------------------------------------------------------------
 * Arrays with member superblocks (docs/raid.md: the on-disk format and the assembly
 * rules; the scheme is Linux md's v1.x metadata).  Each member starts with two copies
 * of a 4 KiB superblock (at 0 and 4 KiB; the newest valid copy wins): the array's uuid,
 * name, level and geometry, the member's role (a slot, or hot spare), an event counter
 * (+1 at every update: a member with an older count is stale), a clean/dirty flag
 * (dirty while the array is open for writing), the rebuild checkpoint and every
 * slot's state.  The array's data starts TC_ARRAY_DATA_OFFSET bytes into every member;
 * the space below it is reserved for the array's metadata (superblocks, a future
 * write-intent region map and partial-parity log).
 */
#define TC_ARRAY_DATA_OFFSET (8u << 20) /* bytes reserved at the start of each member */

#define TC_ARRAY_FORCE 0x1u        /* create: over devices holding data or another
                                    * superblock; assemble: start a parity array that
                                    * is dirty and degraded, or without a member it
                                    * last ran with, and (RAID 1, 10, 5, 6) take back
                                    * stale or faulty members, the freshest first,
                                    * when too few are left (md's --force) */
#define TC_ARRAY_READONLY 0x2u     /* assemble: write nothing, ever (inspection); the
                                    * members should be opened TC_DEV_READONLY too */
#define TC_ARRAY_ASSUME_CLEAN 0x4u /* create: the members' data areas already agree
                                    * (all zeros, or an array's data when it is
                                    * re-created over its members): write nothing
                                    * there.  With data, add TC_ARRAY_ALL_WRITTEN */
#define TC_ARRAY_INSPECT 0x10u     /* assemble, with TC_ARRAY_READONLY: open an array
                                    * with too few members too, failed (every
                                    * request -EIO), for its status */
#define TC_ARRAY_ALL_WRITTEN 0x8u  /* create: keep no record of the regions written
                                    * (as arrays made before that record): every
                                    * rebuild then reconstructs the whole members.
                                    * For comparisons (bench/) and tests */

/*
 * tc_array_create - write member superblocks on @members (in slot order) and on the
 * hot spares @spares, and open the new array named @name (tc_volume_name_valid) as
 * tc_dev_new_array would, with its data TC_ARRAY_DATA_OFFSET bytes into each member
 * (RAID 0 over parity arrays, RAID 50 / 60: rounded up to the members' full stripe, so
 * that the outer chunks lie on their stripe grid).
 * Takes ownership of every member and spare, also on failure (closed).  On redundant
 * levels the members' data areas are zeroed first (WRITE_ZEROES: a hole punch on
 * sparse files) unless TC_ARRAY_ASSUME_CLEAN, so that parity and copies agree, and
 * (unless TC_ARRAY_ALL_WRITTEN) the array records on its members which regions were
 * ever written: a rebuild writes zeros to the new member in the others, reading
 * nothing from the survivors.  Members of different sizes are used up to the smallest (whole chunks; logged).
 * Refusals, before anything is written (-EINVAL unless said, the message names the
 * device and the value): an invalid name; those of tc_dev_new_array (level, chunk not
 * a power of two or out of range, too few or too many members, copies, block sizes);
 * a device given twice (also under two names of one file); a member smaller than
 * TC_ARRAY_DATA_OFFSET plus one chunk, a spare smaller than a member; unless
 * TC_ARRAY_FORCE, a device holding an array member superblock (naming that array), a
 * tiercache cache or backing, or another format's signature (file system, LVM, md,
 * partition table; libblkid): -EBUSY.  -EIO / -errno when a write fails (superblocks
 * may then be partly written: create again with TC_ARRAY_FORCE).  -ENOMEM.
 * The array is dirty while open and marked clean at tc_dev_close().
 */
int tc_array_create(tc_ctx *ctx, const char *name, const struct tc_array_opts *o,
		    tc_dev **members, unsigned n, tc_dev **spares, unsigned nspares,
		    unsigned flags, tc_dev **out);

/*
 * tc_array_assemble - the array whose members (and spares) are among the @n devices
 * @devs, in any order, from their superblocks.  Takes ownership of every device, also
 * on failure.  Each member goes to the slot its superblock names; the newest event
 * count is the array's.  Left out, by name in the log, and the array runs degraded
 * without them: a stale member (an older event count: it missed updates while away or
 * after it failed), a member recorded faulty, one replaced in its slot.  Hot spares
 * are kept open with the array (tc_array_identity lists them) for a rebuild.  A member
 * recorded rebuilding keeps TC_MEMBER_REBUILDING and the array its checkpoint.
 * Unless TC_ARRAY_READONLY the superblocks are rewritten at once (event count + 1,
 * dirty, the member states as assembled), again after every member state change (a
 * background thread in threaded contexts, at close in deterministic ones) and clean
 * at tc_dev_close().
 * Refusals (the message names the device): a device without a member superblock or
 * with no valid copy (-EINVAL, -EUCLEAN), a device of another array (-EINVAL), two
 * devices claiming one slot with the same event count (-EINVAL), a device smaller
 * than the recorded member size (-EINVAL), only spares (-EINVAL), more members missing
 * than the level survives (-ENODEV; with TC_ARRAY_FORCE a RAID 1, 10, 5 or 6 first
 * takes back stale or faulty members, the freshest first (RAID 10: of those whose
 * copy set has no member left), as mdadm --force does, with a warning naming each), and a RAID 5 or 6 that is dirty and degraded
 * unless TC_ARRAY_FORCE or TC_ARRAY_READONLY (-EUCLEAN; md's rule: the parity of
 * stripes written at the crash may be wrong, and rebuilding from it may corrupt
 * unrelated data in them; read-only, it is a warning).
 */
int tc_array_assemble(tc_ctx *ctx, tc_dev **devs, unsigned n, unsigned flags,
		      tc_dev **out);

/* One member superblock as tc_array_examine() reads it (mdadm --examine). */
struct tc_array_member_info {
	char uuid[37];            /* the array's */
	char member_uuid[37];     /* this member's */
	char name[TC_NAME_MAX];   /* the array's */
	enum tc_raid_level_id level;
	uint32_t chunk;           /* bytes */
	unsigned copies, members;
	int role;                 /* slot 0..members-1, or -1 for a hot spare */
	bool dirty;               /* the array was open for writing (or stopped unclean) */
	uint64_t events;
	uint64_t data_offset;     /* bytes */
	uint64_t member_size;     /* bytes of array data on every member */
	uint64_t rebuild_pos;     /* rebuild checkpoint, bytes from data_offset */
	uint64_t ctime_ns, utime_ns; /* created, last written: ns since the epoch */
	enum tc_member_state slot_state[TC_ARRAY_MAX_MEMBERS];
	unsigned copies_ok;       /* valid superblock copies, 0..2 */
	char damage[160];         /* why copy 0 is not valid; "" when it is */
};

/*
 * tc_array_examine - read @dev's member superblock without writing.  Returns 1 and
 * *@out, 0 when @dev holds none (no magic), -EUCLEAN when no copy is valid
 * (@out->damage says why), -EIO / -errno when it cannot be read.
 */
int tc_array_examine(tc_ctx *ctx, tc_dev *dev, struct tc_array_member_info *out);

/* What an array with superblocks is (tc_array_identity). */
struct tc_array_identity {
	char name[TC_NAME_MAX];
	char uuid[37];
	uint64_t events;          /* the last written */
	bool dirty;
	bool readonly;            /* assembled with TC_ARRAY_READONLY */
	uint64_t data_offset;     /* bytes */
	uint64_t rebuild_pos;     /* bytes from data_offset */
	unsigned nspares;
	const char *spare[TC_ARRAY_MAX_MEMBERS]; /* their names, valid until tc_dev_close() */
	/* Devices given to the assembly and left out of the array (up to
	 * TC_ARRAY_MAX_EXTRA; the log names every one), valid until tc_dev_close(). */
	unsigned nleft;
	struct tc_array_left {
		const char *device;
		unsigned slot;            /* the slot its superblock names */
		uint64_t events;          /* its superblock's event count */
		const char *why;          /* "stale", "replaced in that slot", ... */
	} left[TC_ARRAY_MAX_EXTRA];
};

/* tc_array_identity - fill @id.  Returns 0, -EINVAL (@array is not an array),
 * -ENODATA (an array without superblocks, from tc_dev_new_array).  Thread-safe. */
int tc_array_identity(tc_dev *array, struct tc_array_identity *id);

#ifdef __cplusplus
}
#endif
#endif /* TIERCACHE_H */
