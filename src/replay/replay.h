/* SPDX-License-Identifier: MIT */
/*
 * replay.h - replay a block trace (trace.h) through a cached volume: the library on
 * emulated devices in a deterministic context (virtual clock), or a served volume over
 * NBD (real clock).  What `tiercache replay` runs.
 *
 * Steps: replay_map_build() lays the trace's source volumes out on one volume;
 * replay_nbd_connect() (NBD only); replay_run() once per configuration; the
 * result holds counters, hit ratios and latency histograms of the measured phase.
 *
 * Driving (both modes):
 *   timed        (queue_depth 0) each request is submitted at its trace arrival time
 *                divided by the speed factor, whatever is still in flight (open loop),
 *                up to max_inflight requests; latency counts from the arrival time, so
 *                queueing behind a slow device shows;
 *   closed loop  (queue_depth N) N requests in flight, the next one submitted when one
 *                completes; trace times are ignored; latency counts from submission.
 *
 * Library mode runs on the caller's thread: devices complete requests when the virtual
 * clock reaches their modelled completion time, and the driver moves the clock to the
 * next arrival or device deadline, whichever is first (with no request in flight and
 * no dirty data it jumps straight to the next arrival).  The same seed gives the same
 * result.  NBD mode uses libnbd's asynchronous commands on one connection and
 * CLOCK_MONOTONIC.
 *
 * Hits (library mode only): just before each request is submitted, the volume's
 * residency is read (tc_volume_valid_bytes); the bytes of the request that lie in valid
 * 4 KiB units are its hit bytes, and a request is a hit when all its bytes are; each 4 KiB
 * page it touches is one page reference, a hit when the request's bytes in it are.  A request
 * submitted while another one is filling the same line counts as a miss.  The engine's
 * own counters (per cache line touched) are reported too.
 *
 * No global state; one run at a time per result.  Errors: negative errno with a message
 * in the caller's buffer.
 */
#ifndef REPLAY_H
#define REPLAY_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "tiercache.h"
#include "trace.h"

/* ------------------------------------------------------------------------------------
 * Layout: where each source volume lands.
 */

#define REPLAY_ALIGN (1u << 20)   /* regions start and end on 1 MiB boundaries */
#define REPLAY_MIN_LINES 16u      /* the smallest cache tc_cache_format makes, lines */

struct replay_map {
	uint32_t nvols;          /* = the trace's nvols */
	uint64_t *base;          /* per source volume: first byte of its region */
	uint64_t *size;          /* per source volume: region bytes (0: no request kept) */
	uint64_t total;          /* bytes: the volume size the layout needs */
	uint64_t extent;         /* bytes: sum of the source volumes' extents, unfolded */
	uint32_t regions;        /* source volumes with requests */
	uint64_t folded;         /* requests that ended beyond their region: folded */
	uint64_t footprint;      /* unique 4 KiB pages touched after folding, bytes */
	uint64_t max_len;        /* bytes: longest request */
};

/*
 * replay_map_build - give each source volume with requests a region of
 * min(extent rounded up to 1 MiB, fair share) bytes, regions back to back from offset
 * 0; the shares are a water-filling of @capacity (bytes: the target's size, or the
 * largest volume to create), so small volumes keep their whole extent.  A request
 * ending beyond its region is folded: offset modulo the region size, moved back to end
 * at the region's end if it then straddles it.  Also counts the footprint.
 * Errors: -ENOSPC (@capacity below 1 MiB per region), -ENOMEM.
 */
int replay_map_build(const struct trace *t, uint64_t capacity, struct replay_map *m,
			char *err, size_t errlen);
void replay_map_free(struct replay_map *m);

/* replay_map_req - the volume offset and length (bytes) of request @r. */
void replay_map_req(const struct replay_map *m, const struct trace_req *r,
		       uint64_t *off, uint32_t *len);

/* ------------------------------------------------------------------------------------
 * NBD target.
 */
struct replay_nbd;

/* replay_nbd_connect - connect to @uri (nbd://, nbd+unix://; libnbd's syntax).
 * Returns 0, *@out and the export's size in *@size (bytes), or -EIO / -ENOMEM /
 * -ENOTSUP (built without libnbd) with the message in @err. */
int replay_nbd_connect(const char *uri, struct replay_nbd **out, uint64_t *size,
			  bool *read_only, char *err, size_t errlen);
void replay_nbd_close(struct replay_nbd *n);

/* ------------------------------------------------------------------------------------
 * Running.
 */

enum replay_devices {
	REPLAY_DEV_EMU = 0,     /* tc_dev_new_emu over sparse files (the default) */
	REPLAY_DEV_FILE = 1,    /* tc_dev_open_file, sparse files, no service time */
	REPLAY_DEV_MEMORY = 2,  /* tc_dev_new_memory, no service time */
};

/* Progress: called every few hundred requests and once at the end, from the replay's
 * thread.  @done/@total: requests submitted / to replay; @clock_ns: replay clock since
 * the start (virtual or real). */
typedef void (*replay_progress_fn)(void *opaque, uint64_t done, uint64_t total,
				      uint64_t clock_ns);

struct replay_opts {
	/* NBD mode when set (connected by replay_nbd_connect); else library mode. */
	struct replay_nbd *nbd;

	/* Library mode. */
	enum replay_devices devices;
	const char *hdd_profile;   /* emu profile of the backing; NULL: "hdd" */
	const char *ssd_profile;   /* emu profile of the cache; NULL: "sata-ssd" */
	const char *dir;           /* existing folder for the device files (removed by the
				    * caller); backing.img and cache.img are created there */
	uint64_t cache_bytes;      /* cache data area, bytes; rounded up to whole lines,
				    * at least 16 lines */
	struct tc_cache_opts cache;        /* line size, replacement (format options) */
	struct tc_volume_settings settings;
	uint64_t seed;             /* deterministic context's seed */
	tc_log_fn log;             /* the library's log sink (NULL: the library's default) */
	void *log_opaque;
	bool fallback_file;        /* out: emu was not available (-ENOSYS), file used */

	/* Driving. */
	unsigned queue_depth;      /* 0: timed; N: closed loop with N in flight */
	double speed;              /* timed: trace time is divided by it; > 0 */
	unsigned max_inflight;     /* timed: cap on requests in flight; 0: 4096 */
	uint64_t warmup;           /* requests replayed before the measured phase */

	replay_progress_fn progress;
	void *progress_opaque;
	const volatile sig_atomic_t *stop;  /* non-zero: stop submitting, let what is in
					     * flight finish, return -EINTR */
};

/* replay_opts_default - library mode, emu devices, wb, default cache options, timed
 * at speed 1, seed 1. */
void replay_opts_default(struct replay_opts *o);

struct replay_result {
	bool library;              /* hits, engine and device counters are known */
	const char *devices;       /* "emu", "file", "memory" or "nbd" */
	/* The cache (library mode). */
	uint64_t cache_bytes;      /* data area, bytes */
	uint64_t cache_lines;
	uint32_t line_size;
	uint64_t volume_size;      /* bytes */
	/* Client requests of the measured phase. */
	uint64_t requests, reads, writes, read_bytes, write_bytes;
	uint64_t errors;           /* completed with an error */
	uint64_t late;             /* timed: submitted after their arrival time (max_inflight
				    * reached, or behind schedule over NBD) */
	uint64_t read_hits, write_hits;           /* requests wholly in valid cache units */
	uint64_t read_hit_bytes, write_hit_bytes; /* bytes in valid cache units */
	/* 4 KiB page references (each request split into the pages it touches, as cache
	 * simulators count) and those whose bytes were all valid: page miss ratios. */
	uint64_t read_pages, write_pages, read_page_hits, write_page_hits;
	/* Engine and device counters over the measured phase (library mode). */
	struct tc_volume_stats vs;
	struct tc_dev_stats backing, cache;
	uint64_t dirty_peak;       /* bytes: highest dirty amount seen (sampled) */
	uint64_t dirty_end;        /* bytes: dirty when the last request completed */
	/* Time. */
	uint64_t elapsed_ns;       /* replay clock: first measured submission to last
				    * completion (virtual in library mode) */
	uint64_t wall_ns;          /* real time of the whole run, setup included */
	uint64_t replay_wall_ns;   /* real time of the request loop */
	bool interrupted;
	/* Latency, ns, measured requests. */
	struct tc_hist lat, lat_read, lat_write;
};

/*
 * replay_run - replay @t laid out by @m with @o into @res (zeroed first).
 * Returns 0, -EINTR (o->stop was set: @res holds what ran), or a negative errno with
 * the message in @err: setup failures (device, format, attach, NBD), -EIO when the
 * engine or the connection fails, -EDEADLK when requests stay in flight with nothing
 * left to run.  Requests that complete with an error are counted, not fatal.
 */
int replay_run(const struct trace *t, const struct replay_map *m,
		  struct replay_opts *o, struct replay_result *res, char *err,
		  size_t errlen);

#endif /* REPLAY_H */
