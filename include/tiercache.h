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
	                           * "array" */
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

/*
 * tc_dev_open_spec - open a device named the way the command line names it:
 *   "PATH"               a file or block device (tc_dev_open_file);
 *   "crash:PATH"         a crash-test device over the file PATH (tc_dev_new_crash, @seed);
 *   "emu:PROFILE:PATH"   an emulated HDD or SSD over the file PATH (tc_dev_new_emu);
 *   "nbd:URI"            an NBD export (tc_dev_open_nbd), e.g. "nbd:nbd://host/name",
 *                        "nbd:nbd+unix:///name?socket=/run/nbd.sock".
 * @flags: TC_DEV_*, passed on.  Errors: those of the backend, -EINVAL for an unknown
 * prefix or a spec without a path (the message names the spec).
 */
int tc_dev_open_spec(tc_ctx *ctx, const char *spec, unsigned flags, uint64_t size,
		     uint64_t seed, tc_dev **out);

/*
 * tc_dev_spec_path - the file behind a device spec (see tc_dev_open_spec): @spec itself
 * for "PATH", the part after the prefix for "crash:PATH" and "emu:PROFILE:PATH"
 * (a pointer into @spec); NULL for a remote device ("nbd:URI"), which has no local
 * file.  A malformed spec ("emu:" without a second colon) is returned whole, and
 * tc_dev_open_spec says why.
 */
const char *tc_dev_spec_path(const char *spec);

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
};

enum tc_flush_rate {
	TC_FLUSH_LOW = 0,    /* 16 MiB/s, only after 1 s without client I/O on the volume */
	TC_FLUSH_MEDIUM = 1, /* 64 MiB/s, after 100 ms without client I/O; 16 MiB/s under load */
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
};

/* tc_volume_settings_default - read cache on, wb, medium, always, line fill, nhit 2,
 * seq_cutoff 4 MiB. */
void tc_volume_settings_default(struct tc_volume_settings *s);

enum tc_replacement {
	TC_REPL_LRU = 0,    /* exact LRU, one policy lock (baseline) */
	TC_REPL_S3FIFO = 1, /* S3-FIFO (Yang et al., SOSP'23); lock-free hits */
};

/* Cache-wide settings, given at format time, stored in the cache superblock. */
struct tc_cache_opts {
	uint32_t line_size;        /* bytes, power of two 4 KiB..64 KiB; default 64 KiB */
	uint8_t replacement;       /* enum tc_replacement; default S3FIFO */
	uint32_t commit_interval_ms; /* metadata commit period without FLUSH; default 1000 */
	uint8_t dirty_low_pct;     /* cleaner hysteresis low watermark; default 40 */
	uint8_t dirty_high_pct;    /* above it the cleaner runs flat out; default 70 */
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
 * tc_cache_close - clean shutdown: wait for in-flight requests (the caller has stopped
 * submitting), commit metadata, mark the superblock clean.  Dirty lines stay in the
 * cache for the next open.  Frees the cache and its volumes even on error.
 */
int tc_cache_close(tc_cache *cache);


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
	unsigned dev_flags;       /* TC_DEV_* for every device; TC_DEV_EXCLUSIVE for servers */
	uint64_t crash_seed;      /* seed of "crash:" devices */
	bool fault_injection;     /* open every device under a fault layer (tc_dev_new_fault),
	                           * so tc_host_fault() can fail it: for tests and drills */
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
struct tc_volume_stats {
	uint64_t read_hits, read_partial_hits, read_misses;     /* per line touched */
	uint64_t write_hits, write_partial_hits, write_misses;
	uint64_t reads, writes, flushes, discards, write_zeroes; /* client requests */
	uint64_t bytes_read, bytes_written;                     /* client bytes */
	uint64_t promotions;        /* lines filled or allocated */
	uint64_t evictions;         /* lines of this volume evicted */
	uint64_t bypassed_seq;      /* requests bypassing the cache: sequential cutoff */
	uint64_t bypassed_admission;/* read misses not filled: admission said no */
	uint64_t bypassed_bytes;    /* sequential bypass: bytes written around the cache,
	                             * and bytes of read misses not filled */
	uint64_t dirty_bytes;       /* now */
	uint64_t cached_bytes;      /* valid bytes now */
	uint64_t backing_stripe;    /* bytes: the backing's full stripe (the stripe size
	                             * stored on it, else its tc_dev_limits io_opt when
	                             * partial stripes are expensive); 0 = none */
	uint64_t writeback_bytes;   /* written back by the cleaner */
	uint64_t writeback_ios;
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
	bool checksums;                   /* cached data is checked on every read back */
	uint64_t csum_errors;             /* 4 KiB units read back that failed their check */
	uint64_t recovered_dirty_lines, recovered_dropped_lines;
	uint64_t recovery_ns;             /* time spent loading metadata at open */
	struct tc_dev_stats dev;
};

void tc_volume_stats(tc_volume *vol, struct tc_volume_stats *st);
void tc_volume_stats_reset(tc_volume *vol);
void tc_cache_stats(tc_cache *cache, struct tc_cache_stats *st);

/*
 * tc_volume_valid_bytes - residency: how many bytes of the volume range [@off, @off +
 * @len) (bytes) are held by valid 4 KiB units in the cache right now.  A snapshot (the
 * cache changes under concurrent I/O); any thread.  The replay tools read it just
 * before each request to report a byte hit ratio.  Out-of-range bytes count as absent.
 */
uint64_t tc_volume_valid_bytes(tc_volume *vol, uint64_t off, uint64_t len);

/* tc_volume_stats_json - counters as a JSON object (snake_case keys, bytes in bytes).
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

struct tc_array_opts {
	enum tc_raid_level_id level;
	uint32_t chunk;           /* bytes, a power of two in [TC_ARRAY_CHUNK_MIN,
	                           * TC_ARRAY_CHUNK_MAX]; 0 = TC_ARRAY_CHUNK_DEFAULT */
	unsigned copies;          /* RAID 10: copies of every chunk, 2..members; 0 = 2.
	                           * Other levels: 0 */
};

enum tc_member_state {
	TC_MEMBER_ACTIVE = 0,     /* in service */
	TC_MEMBER_FAULTY = 1,     /* failed (I/O error or tc_array_fail_member): no longer
	                           * read or written */
};

struct tc_array_member_status {
	enum tc_member_state state;
	const char *name;         /* the member device's name; valid until tc_dev_close() */
	uint64_t size;            /* the member device's size, bytes */
	uint64_t read_errors;     /* reads of this member that failed */
	uint64_t corrected;       /* of these, rewritten from the other members */
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
	unsigned faulty;          /* members faulty now */
	int redundancy;           /* further member failures survivable now; -1 = failed */
	bool degraded;            /* serving, with a member faulty */
	bool failed;              /* past its redundancy: every request fails with -EIO */
	struct tc_array_member_status member[TC_ARRAY_MAX_MEMBERS];
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
 * TC_DEV_FAILED when this is past its redundancy.  Returns 0, 1 when the member was
 * already faulty, -EINVAL (@array is not an array, @i out of range).
 */
int tc_array_fail_member(tc_dev *array, unsigned i);

/* tc_array_status - fill @st with @array's level, geometry, members and health.
 * Returns 0 or -EINVAL (@array is not an array).  Thread-safe; a snapshot. */
int tc_array_status(tc_dev *array, struct tc_array_status *st);

/* tc_raid_level_name - "raid0", "raid1", "raid5", "raid6", "raid10"; NULL when
 * unknown.  tc_raid_level_parse - the level of such a name (also "0", "1", "5", "6",
 * "10"), or -EINVAL. */
const char *tc_raid_level_name(unsigned level);
int tc_raid_level_parse(const char *s);

#ifdef __cplusplus
}
#endif
#endif /* TIERCACHE_H */
