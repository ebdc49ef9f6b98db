/* SPDX-License-Identifier: MIT */
/*
 * emu.c - an emulated HDD or SSD: the data lives in a file, the timing is a model.
 *
 * The cache engine is only worth what it does to a slow disk, and benchmarks need that
 * disk on every machine.  This backend keeps the data in a file (so reads return what
 * was written) and completes each request after the service time of a modelled device,
 * described by a profile file (profiles/README.md documents every key and unit).
 *
 * HDD model (after Ruemmler & Wilkes, "An introduction to disk drive modeling", IEEE
 * Computer 27(3), 1994):
 *   service = overhead + seek(distance) + rotational latency + transfer
 *   - seek: 0 within one track; otherwise track-to-track + (full stroke - track-to-
 *     track) * sqrt(distance / capacity): the square-root curve Ruemmler & Wilkes fit
 *     to short seeks, where the arm accelerates for half the way and brakes for the
 *     rest, used over the whole stroke (their long-seek regime is linear; the square
 *     root gives the same 8/15-of-full-stroke average that drive data sheets quote as
 *     "average seek", to within a few percent).  Distances are bytes of LBA space;
 *     capacity is the modelled disk's (profile key capacity_gb), or the device size when
 *     that is larger, so a device of a few GiB is the short-stroked start of a big disk,
 *     as a test file on a real disk would be.
 *   - rotation: the platter turns continuously, one turn every 60/rpm s, from a seeded
 *     phase; an offset's angle is its position inside its track (track = the bytes that
 *     pass under the head in one turn at the transfer rate).  The latency is the wait
 *     from the end of the seek until the target sector comes round: in [0, one turn),
 *     uniform for random I/O, and known in advance, which is what lets the drive reorder.
 *   - transfer: length / transfer rate.
 *   - sequential: a request that starts where the previous one ended needs no seek, no
 *     rotation and no overhead (the drive's track buffer streams it).  Likewise a short
 *     forward skip inside a track costs only the time to read through the gap, and a
 *     read of the track just passed over is a buffer hit (transfer only).
 *   - one actuator: one request in service at a time.  The drive holds up to ncq_depth
 *     commands and serves next the one with the shortest positioning time (SPTF:
 *     Seltzer, Chen & Ousterhout, "Disk scheduling revisited", USENIX 1990; Jacobson &
 *     Wilkes, "Disk scheduling algorithms based on rotational position", HP 1991), except
 *     that a command older than max_wait is served first (a hard age limit, the
 *     simplest of the starvation bounds those papers discuss).  ncq_depth 1 gives
 *     FIFO.  FLUSH is a non-queued command as in SATA: the drive finishes what came
 *     before it, and starts nothing that came after it until it is done.  Write
 *     caching is not modelled: writes (and write-zeroes) cost what reads cost; FUA
 *     adds a flush.  DISCARD costs the command overhead and does not move the head.
 *
 * SSD model: @parallelism requests in service at once (flash channels and dies), each
 * taking a fixed latency (read or write), and one shared link whose bandwidth caps the
 * data rate: a request's data reserves the link for length / bandwidth from the time its
 * service starts, and the request completes at the later of (start + latency) and the
 * end of that reservation.  Small requests are latency bound (QD1 IOPS = 1/latency,
 * QDn IOPS = parallelism/latency); large ones are bandwidth bound.  Requests wait FIFO
 * for a free slot.  FLUSH and DISCARD take a slot for a fixed time; FUA adds a flush;
 * write-zeroes is a write.
 *
 * Two clocks:
 *   threaded       a device thread does the file I/O (synchronous pread/pwrite/
 *                  fdatasync) and completes each request when CLOCK_MONOTONIC reaches
 *                  its modelled completion time.  The model keeps its own timeline
 *                  (service starts when the actuator or a slot is free in model time),
 *                  so the thread oversleeping or a slow file does not accumulate into
 *                  the modelled throughput.  The thread sleeps until shortly before a
 *                  completion time and spins for the rest (see emu_thread_wait()): a
 *                  timed sleep alone wakes tens of microseconds late, as long as an SSD
 *                  read.
 *   deterministic  nothing sleeps: the device computes each completion time on the
 *                  virtual clock and arms a context timer for the earliest one; the
 *                  timer runs inside tc_ctx_poll() once the caller has advanced the
 *                  clock there (tc_ctx_next_deadline() tells it how far), does the file
 *                  I/O and completes.
 * In both modes the scheduling decisions are the same code, on the respective clock.
 *
 * io->internal[] while a request is queued or in service here:
 *   [0] next request in the list it is on    [1] arrival time (ns), then its result
 *   [2] modelled completion time (ns)        [3] EMU_REQ_* flags
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ini.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dev.h"
#include "tiercache-test.h"

#ifndef TC_PROFILE_DIR
#define TC_PROFILE_DIR "/usr/share/tiercache/profiles"
#endif

#define NSEC_PER_SEC 1000000000ull
#define EMU_ZERO_CHUNK (1u << 20)       /* write-zeroes fallback buffer */
#define EMU_REQ_IO_DONE 0x1u            /* internal[3]: the file I/O has been done */
#define EMU_LATE_INIT_NS 50000ull       /* first guess of a timed sleep's lateness */
#define EMU_SPIN_MAX_NS 300000ull       /* never spin longer than this per request */

enum emu_type { EMU_NONE = 0, EMU_HDD, EMU_SSD };

/* A profile in the units the model uses: ns, bytes, bytes per second, counts. */
struct emu_profile {
	enum emu_type type;
	/* [hdd] */
	uint64_t capacity;              /* bytes; 0: the device size */
	uint64_t rpm;
	uint64_t seek_track_ns, seek_full_ns;
	uint64_t transfer_bps;
	uint64_t overhead_ns;
	uint64_t ncq_depth;
	uint64_t max_wait_ns;
	uint64_t hdd_flush_ns;
	/* [ssd] */
	uint64_t read_ns, write_ns;
	uint64_t parallelism;
	uint64_t read_bps, write_bps;
	uint64_t ssd_flush_ns, discard_ns;
};

struct emu_dev {
	struct tc_dev dev;              /* first: tc_dev * and emu_dev * convert */
	int fd;
	bool readonly;
	bool threaded;                  /* device thread in use (threaded context) */
	struct emu_profile prof;

	/* Derived HDD geometry. */
	uint64_t capacity;              /* bytes that seek distances are fractions of */
	uint64_t rot_ns;                /* one turn */
	uint64_t track_bytes;           /* bytes under the head in one turn */
	uint64_t phase0;                /* spindle angle at time 0, ns into a turn */

	pthread_mutex_t lock;           /* everything below */
	pthread_cond_t cond;            /* threaded: work queued, stop (CLOCK_MONOTONIC) */
	pthread_t thread;
	bool stop;
	uint64_t late_ns;               /* threaded: average lateness of a timed sleep */
	struct tc_timer timer;          /* deterministic: the next event */

	struct tc_io *pending, *pending_tail;   /* HDD: not yet in service, arrival order */
	struct tc_io *inflight;         /* in service, by completion time (FIFO on ties) */

	/* HDD state. */
	bool busy;                      /* the actuator serves a request */
	uint64_t head;                  /* byte offset where the last transfer ended */
	uint64_t actuator_free;         /* model time the current request ends */

	/* SSD state. */
	uint64_t *slot_free;            /* [parallelism]: model time each slot frees */
	uint64_t link_free;             /* model time the link's last reservation ends */

	struct tc_emu_stats st;
};

static const struct tc_dev_ops emu_ops;

static struct tc_io *req_next(const struct tc_io *io)
{
	return (struct tc_io *)(uintptr_t)io->internal[0];
}

static void req_set_next(struct tc_io *io, struct tc_io *next)
{
	io->internal[0] = (uint64_t)(uintptr_t)next;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Time to move @len bytes at @bps bytes per second, ns (double: no overflow for any
 * device size, and exact to far below a nanosecond for the sizes that matter). */
static uint64_t xfer_ns(uint64_t len, uint64_t bps)
{
	return (uint64_t)((double)len * (double)NSEC_PER_SEC / (double)bps + 0.5);
}

/* floor(sqrt(@v)), bit by bit: the seek curve needs no libm. */
static uint64_t isqrt64(uint64_t v)
{
	uint64_t r = 0, bit = 1ull << 62;

	while (bit > v)
		bit >>= 2;
	while (bit) {
		if (v >= r + bit) {
			v -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

/* ------------------------------------------------------------------------------------
 * Profiles.
 */

/* One key of a profile: where it goes and how its written unit converts. */
struct emu_key {
	const char *section;
	const char *name;
	size_t off;                     /* uint64_t field of struct emu_profile */
	double scale;                   /* written value * scale = stored value */
	double min, max;                /* allowed written values */
	bool integer;
};

#define EMU_KEY(sec, key, field, scale, min, max, integer) \
	{ sec, key, offsetof(struct emu_profile, field), scale, min, max, integer }

static const struct emu_key emu_keys[] = {
	EMU_KEY("hdd", "capacity_gb", capacity, 1e9, 0, 1e6, false),
	EMU_KEY("hdd", "rpm", rpm, 1, 1000, 30000, true),
	EMU_KEY("hdd", "seek_track_us", seek_track_ns, 1e3, 0, 1e6, false),
	EMU_KEY("hdd", "seek_full_us", seek_full_ns, 1e3, 0, 1e7, false),
	EMU_KEY("hdd", "transfer_mb_s", transfer_bps, 1e6, 0.001, 1e6, false),
	EMU_KEY("hdd", "overhead_us", overhead_ns, 1e3, 0, 1e6, false),
	EMU_KEY("hdd", "ncq_depth", ncq_depth, 1, 1, 256, true),
	EMU_KEY("hdd", "max_wait_ms", max_wait_ns, 1e6, 0.001, 1e6, false),
	EMU_KEY("hdd", "flush_us", hdd_flush_ns, 1e3, 0, 1e7, false),
	EMU_KEY("ssd", "read_us", read_ns, 1e3, 0, 1e6, false),
	EMU_KEY("ssd", "write_us", write_ns, 1e3, 0, 1e6, false),
	EMU_KEY("ssd", "parallelism", parallelism, 1, 1, 1024, true),
	EMU_KEY("ssd", "read_mb_s", read_bps, 1e6, 0.001, 1e6, false),
	EMU_KEY("ssd", "write_mb_s", write_bps, 1e6, 0.001, 1e6, false),
	EMU_KEY("ssd", "flush_us", ssd_flush_ns, 1e3, 0, 1e7, false),
	EMU_KEY("ssd", "discard_us", discard_ns, 1e3, 0, 1e7, false),
};

#define EMU_NKEYS (sizeof(emu_keys) / sizeof(emu_keys[0]))

/* Parser state: inih calls emu_ini_line() for every line it reads and emu_ini_key()
 * for every key, so the current line number is the reader's count. */
struct emu_parse {
	tc_ctx *ctx;
	const char *path;
	FILE *f;
	int line;
	struct emu_profile *prof;
	int seen[EMU_NKEYS];            /* line each key was set on; 0 = not set */
	int type_line, desc_line;
	int err;                        /* first error, already logged */
};

static char *emu_ini_line(char *str, int num, void *stream)
{
	struct emu_parse *p = stream;

	p->line++;
	return fgets(str, num, p->f);
}

static int emu_ini_fail(struct emu_parse *p, const char *section, const char *name,
			const char *why, const char *value)
{
	if (!p->err)
		tc_err(p->ctx, "profile %s line %d: key \"%s\" in [%s]: %s \"%s\"", p->path,
		       p->line, name, section, why, value);
	p->err = -EINVAL;
	return 0;
}

static int emu_ini_key(void *user, const char *section, const char *name,
		       const char *value)
{
	struct emu_parse *p = user;
	const struct emu_key *k;
	char *end;
	double v;
	size_t i;

	if (!strcmp(section, "device")) {
		if (!strcmp(name, "description")) {
			if (p->desc_line)
				return emu_ini_fail(p, section, name, "set twice, now to", value);
			p->desc_line = p->line;
			return 1;
		}
		if (strcmp(name, "type"))
			return emu_ini_fail(p, section, name, "unknown key, value", value);
		if (p->type_line)
			return emu_ini_fail(p, section, name, "set twice, now to", value);
		p->type_line = p->line;
		if (!strcmp(value, "hdd"))
			p->prof->type = EMU_HDD;
		else if (!strcmp(value, "ssd"))
			p->prof->type = EMU_SSD;
		else
			return emu_ini_fail(p, section, name, "not hdd or ssd:", value);
		return 1;
	}
	for (i = 0; i < EMU_NKEYS; i++) {
		if (!strcmp(section, emu_keys[i].section) && !strcmp(name, emu_keys[i].name))
			break;
	}
	if (i == EMU_NKEYS)
		return emu_ini_fail(p, section, name, "unknown key (or section), value", value);
	k = &emu_keys[i];
	if (p->seen[i])
		return emu_ini_fail(p, section, name, "set twice, now to", value);
	p->seen[i] = p->line;
	errno = 0;
	v = strtod(value, &end);
	if (end == value || *end || errno || v != v)
		return emu_ini_fail(p, section, name, "not a number:", value);
	if (v < k->min || v > k->max) {
		char why[96];

		snprintf(why, sizeof(why), "outside [%g, %g]:", k->min, k->max);
		return emu_ini_fail(p, section, name, why, value);
	}
	if (k->integer && v != (double)(uint64_t)v)
		return emu_ini_fail(p, section, name, "not a whole number:", value);
	*(uint64_t *)((char *)p->prof + k->off) = (uint64_t)(v * k->scale + 0.5);
	return 1;
}

/* After parsing: the type is known, its keys are all there, the other type's absent,
 * and the values agree with each other. */
static int emu_profile_check(struct emu_parse *p)
{
	const char *want = p->prof->type == EMU_HDD ? "hdd" : "ssd";
	size_t i;

	if (!p->type_line) {
		tc_err(p->ctx, "profile %s: key \"type\" in [device] missing (hdd or ssd)",
		       p->path);
		return -EINVAL;
	}
	for (i = 0; i < EMU_NKEYS; i++) {
		if (strcmp(emu_keys[i].section, want) && p->seen[i]) {
			tc_err(p->ctx, "profile %s line %d: key \"%s\" in [%s]: not for a "
			       "type = %s profile", p->path, p->seen[i], emu_keys[i].name,
			       emu_keys[i].section, want);
			return -EINVAL;
		}
		if (!strcmp(emu_keys[i].section, want) && !p->seen[i]) {
			tc_err(p->ctx, "profile %s: key \"%s\" in [%s] missing", p->path,
			       emu_keys[i].name, want);
			return -EINVAL;
		}
	}
	if (p->prof->type == EMU_HDD && p->prof->seek_full_ns < p->prof->seek_track_ns) {
		for (i = 0; i < EMU_NKEYS; i++)
			if (!strcmp(emu_keys[i].name, "seek_full_us"))
				break;
		tc_err(p->ctx, "profile %s line %d: key \"seek_full_us\" in [hdd]: shorter "
		       "than seek_track_us", p->path, p->seen[i]);
		return -EINVAL;
	}
	return 0;
}

/* The file a profile argument names: a path as given, or <dir>/<name>.conf. */
static int emu_profile_path(tc_ctx *ctx, const char *profile, char *buf, size_t len)
{
	size_t n = strlen(profile);
	const char *dir;
	const char *c;

	if (strchr(profile, '/') || (n >= 5 && !strcmp(profile + n - 5, ".conf"))) {
		if (n >= len)
			goto too_long;
		memcpy(buf, profile, n + 1);
		return 0;
	}
	for (c = profile; *c; c++) {
		if (!(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z') &&
		    !(*c >= '0' && *c <= '9') && *c != '-' && *c != '_' && *c != '.')
			break;
	}
	if (n == 0 || *c) {
		tc_err(ctx, "emulated device: profile name \"%s\" is not [A-Za-z0-9._-]+ "
		       "(give a path with a '/' for a file elsewhere)", profile);
		return -EINVAL;
	}
	dir = getenv("TC_PROFILE_DIR");
	if (!dir || !*dir)
		dir = TC_PROFILE_DIR;
	if ((size_t)snprintf(buf, len, "%s/%s.conf", dir, profile) >= len)
		goto too_long;
	return 0;

too_long:
	tc_err(ctx, "emulated device: profile \"%s\": path too long", profile);
	return -ENAMETOOLONG;
}

/*
 * emu_profile_load - read the profile @profile (a name or a path) into @prof.
 * Returns 0, -ENOENT (no such file), -EINVAL (syntax, unknown key or section, a bad or
 * missing value: the message names the file, line and key), or -errno of fopen.
 */
/* emu_profile_read - parse and check the profile text of @f (named @path in messages)
 * into @prof: the part of emu_profile_load() after the file is open.  0 or -EINVAL. */
static int emu_profile_read(tc_ctx *ctx, FILE *f, const char *path,
			    struct emu_profile *prof)
{
	struct emu_parse p = { .ctx = ctx, .path = path, .f = f, .prof = prof };
	int ret;

	memset(prof, 0, sizeof(*prof));
	ret = ini_parse_stream(emu_ini_line, &p, emu_ini_key, &p);
	if (p.err)
		return p.err;
	if (ret != 0) {
		tc_err(ctx, "profile %s line %d: not a [section], a key = value or a comment",
		       path, ret);
		return -EINVAL;
	}
	return emu_profile_check(&p);
}

static int emu_profile_load(tc_ctx *ctx, const char *profile, struct emu_profile *prof)
{
	char path[4096];
	int ret;

	memset(prof, 0, sizeof(*prof));
	ret = emu_profile_path(ctx, profile, path, sizeof(path));
	if (ret < 0)
		return ret;
	FILE *f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		tc_err(ctx, "emulated device: profile %s: %s", path, strerror(errno));
		return ret;
	}
	ret = emu_profile_read(ctx, f, path, prof);
	fclose(f);
	return ret;
}

int tc_emu_profile_parse(tc_ctx *ctx, FILE *f, const char *name)
{
	struct emu_profile prof;

	return emu_profile_read(ctx, f, name, &prof);
}

/* ------------------------------------------------------------------------------------
 * Open.
 */

static int emu_open_fd(tc_ctx *ctx, const char *path, unsigned flags, uint64_t want,
		       int *fd_out, uint64_t *size_out)
{
	int oflags = ((flags & TC_DEV_READONLY) ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	struct stat st;
	uint64_t size;
	int fd, ret;

	if (flags & TC_DEV_CREATE) {
		if (want == 0 || want % TC_UNIT_SIZE) {
			tc_err(ctx, "emulated device %s: size %" PRIu64
			       " is not a non-zero multiple of %u", path, want, TC_UNIT_SIZE);
			return -EINVAL;
		}
		oflags |= O_CREAT;
	}
	fd = open(path, oflags, 0644);
	if (fd < 0) {
		ret = -errno;
		tc_err(ctx, "emulated device %s: open: %s", path, strerror(errno));
		return ret;
	}
	/* The lock before anything changes the file: a device in use is left alone. */
	if ((flags & TC_DEV_EXCLUSIVE) && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (ret == -EBUSY)
			tc_err(ctx, "emulated device %s: in use (another open holds its lock)",
			       path);
		else
			tc_err(ctx, "emulated device %s: flock: %s", path, strerror(-ret));
		close(fd);
		return ret;
	}
	if (fstat(fd, &st) < 0)
		goto fail_errno;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0)
			goto fail_errno;
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
		if ((flags & TC_DEV_CREATE) && size < want) {
			if (ftruncate(fd, (off_t)want) < 0)
				goto fail_errno;
			size = want;
		}
	} else {
		tc_err(ctx, "emulated device %s: not a regular file or block device", path);
		close(fd);
		return -EINVAL;
	}
	if (size == 0 || size % TC_UNIT_SIZE) {
		tc_err(ctx, "emulated device %s: size %" PRIu64
		       " is not a non-zero multiple of %u", path, size, TC_UNIT_SIZE);
		close(fd);
		return -EINVAL;
	}
	*fd_out = fd;
	*size_out = size;
	return 0;

fail_errno:
	ret = -errno;
	tc_err(ctx, "emulated device %s: %s", path, strerror(errno));
	close(fd);
	return ret;
}

static void *emu_thread_main(void *arg);
static void emu_timer_fn(struct tc_timer *t);

int tc_dev_new_emu(tc_ctx *ctx, const char *profile, const char *path, unsigned flags,
		   uint64_t size, tc_dev **out)
{
	struct emu_profile prof;
	struct emu_dev *edev;
	pthread_condattr_t attr;
	uint64_t dev_size = 0;
	int fd = -1, ret;

	*out = NULL;
	ret = emu_profile_load(ctx, profile, &prof);
	if (ret < 0)
		return ret;
	ret = emu_open_fd(ctx, path, flags, size, &fd, &dev_size);
	if (ret < 0)
		return ret;
	edev = calloc(1, sizeof(*edev));
	if (!edev) {
		close(fd);
		return -ENOMEM;
	}
	if (prof.type == EMU_SSD) {
		edev->slot_free = calloc(prof.parallelism, sizeof(*edev->slot_free));
		if (!edev->slot_free) {
			ret = -ENOMEM;
			goto fail_free;
		}
	}
	ret = tc_dev_init(&edev->dev, &emu_ops, ctx, path, dev_size, TC_SECTOR_SIZE);
	if (ret < 0)
		goto fail_free;
	edev->fd = fd;
	edev->readonly = flags & TC_DEV_READONLY;
	edev->prof = prof;
	if (prof.type == EMU_HDD) {
		edev->capacity = max_u64(prof.capacity, dev_size);
		edev->rot_ns = 60 * NSEC_PER_SEC / prof.rpm;
		edev->track_bytes = max_u64(1, (uint64_t)((double)prof.transfer_bps *
							   (double)edev->rot_ns / 1e9));
		/* Seeded: deterministic contexts replay the same rotational latencies. */
		edev->phase0 = tc_ctx_rand(ctx) % edev->rot_ns;
	}
	/* A threaded context's clock is CLOCK_MONOTONIC; a device starting now has been
	 * idle since forever, which 0 says for every "free at" time. */
	pthread_mutex_init(&edev->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&edev->cond, &attr);
	pthread_condattr_destroy(&attr);
	edev->timer.fn = emu_timer_fn;
	edev->late_ns = EMU_LATE_INIT_NS;
	/* The device holds no more than its own queue: the SSD's parallel slots, the
	 * disk's NCQ depth.  Beyond that, requests wait in the device layer's priority
	 * queues (dev.c, "Dispatch"), which know their classes; the model's own queue
	 * would serve them in arrival order. */
	tc_dev_set_dispatch_limit(&edev->dev, (uint32_t)(prof.type == EMU_SSD ?
						   prof.parallelism : prof.ncq_depth));
	if (!tc_ctx_deterministic(ctx)) {
		ret = pthread_create(&edev->thread, NULL, emu_thread_main, edev);
		if (ret) {
			tc_err(ctx, "emulated device %s: cannot start device thread: %s", path,
			       strerror(ret));
			ret = -ret;
			goto fail_fini;
		}
		edev->threaded = true;
	}
	*out = &edev->dev;
	return 0;

fail_fini:
	pthread_cond_destroy(&edev->cond);
	pthread_mutex_destroy(&edev->lock);
	tc_dev_fini(&edev->dev);
fail_free:
	free(edev->slot_free);
	free(edev);
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------------------------
 * The HDD model; callers hold edev->lock.
 */

/* Seek time over @dist bytes of LBA space, ns: Ruemmler & Wilkes' square-root curve
 * between track-to-track and full stroke. */
static uint64_t hdd_seek_ns(const struct emu_dev *edev, uint64_t dist)
{
	const struct emu_profile *p = &edev->prof;
	uint64_t span, frac;

	if (dist < edev->track_bytes)
		return 0;                       /* same track: rotation only */
	span = edev->capacity > edev->track_bytes ? edev->capacity - edev->track_bytes : 1;
	/* The fraction in 2^40ths, so its square root comes out in 2^20ths. */
	frac = (uint64_t)((double)(dist - edev->track_bytes) / (double)span * 0x1p40);
	if (frac > (1ull << 40))
		frac = 1ull << 40;
	return p->seek_track_ns +
	       (uint64_t)((double)(p->seek_full_ns - p->seek_track_ns) *
			  (double)isqrt64(frac) / 0x1p20 + 0.5);
}

/* Time from @t until the sector at @offset passes under the head, ns. */
static uint64_t hdd_rotation_ns(const struct emu_dev *edev, uint64_t offset, uint64_t t)
{
	uint64_t angle = (uint64_t)((double)(offset % edev->track_bytes) /
				    (double)edev->track_bytes * (double)edev->rot_ns);
	uint64_t phase = (t + edev->phase0) % edev->rot_ns;

	return (angle + edev->rot_ns - phase) % edev->rot_ns;
}

/* A read of data the head has just passed over, still in the drive's buffer. */
static bool hdd_buffered(const struct emu_dev *edev, const struct tc_io *io)
{
	return io->op == TC_OP_READ && io->offset < edev->head &&
	       edev->head - io->offset <= edev->track_bytes &&
	       io->offset + io->length <= edev->head;
}

/*
 * Positioning time of @io if its service starts at @t, ns: what SPTF minimises.
 * Besides the sequential case, two shortcuts a real drive's buffer gives, so that
 * requests of one stream that arrive slightly out of order (several submitting
 * threads) still stream: a short forward skip, inside one track, costs the time to
 * read through the gap (the drive reads ahead; no command overhead, no seek), and a
 * read of the track just passed over comes from the buffer with no positioning.
 */
static uint64_t hdd_position_ns(const struct emu_dev *edev, const struct tc_io *io,
				uint64_t t)
{
	uint64_t dist, seek;

	if (io->op == TC_OP_FLUSH || io->op == TC_OP_DISCARD || io->offset == edev->head ||
	    hdd_buffered(edev, io))
		return 0;
	if (io->offset > edev->head && io->offset - edev->head < edev->track_bytes)
		return xfer_ns(io->offset - edev->head, edev->prof.transfer_bps);
	dist = io->offset > edev->head ? io->offset - edev->head : edev->head - io->offset;
	seek = hdd_seek_ns(edev, dist);
	return edev->prof.overhead_ns + seek +
	       hdd_rotation_ns(edev, io->offset, t + edev->prof.overhead_ns + seek);
}

/* Service time of @io starting at @t, ns; moves the head. */
static uint64_t hdd_service_ns(struct emu_dev *edev, const struct tc_io *io, uint64_t t)
{
	const struct emu_profile *p = &edev->prof;
	uint64_t ns;

	switch (io->op) {
	case TC_OP_FLUSH:
		return p->hdd_flush_ns;
	case TC_OP_DISCARD:
		return p->overhead_ns;          /* no TRIM on a disk: just the command */
	default:
		break;
	}
	ns = hdd_position_ns(edev, io, t);
	if (ns)
		edev->st.positioned++;
	ns += xfer_ns(io->length, p->transfer_bps);
	if (io->flags & TC_IO_FUA)
		ns += p->hdd_flush_ns;
	if (!hdd_buffered(edev, io))          /* a buffer hit leaves the head where it is */
		edev->head = io->offset + io->length;
	return ns;
}

/*
 * The next request for the actuator at decision time @t, unlinked from the pending
 * list (which is not empty): the oldest if it has waited max_wait or is a FLUSH, else
 * the shortest positioning time among the first ncq_depth requests that arrived by @t,
 * stopping at a FLUSH (nothing passes it).  Ties go to the oldest.
 */
static struct tc_io *hdd_pick(struct emu_dev *edev, uint64_t t)
{
	struct tc_io *io, *prev = NULL, *best = edev->pending, *best_prev = NULL;
	uint64_t best_pos = UINT64_MAX;
	uint64_t n = 0;

	bool high = false;

	if (best->op == TC_OP_FLUSH || t - best->internal[1] >= edev->prof.max_wait_ns)
		goto unlink;
	/* NCQ priority (SATA ACS-4, "NCQ priority"; Linux sets it for I/O of the RT
	 * class): a high-priority command among the candidates is served before the
	 * others; SPTF chooses among the high-priority ones. */
	for (io = edev->pending; io && n < edev->prof.ncq_depth; io = req_next(io), n++) {
		if (io->op == TC_OP_FLUSH || io->internal[1] > t)
			break;
		if (io->prio == TC_PRIO_HIGH)
			high = true;
	}
	n = 0;
	for (io = edev->pending; io && n < edev->prof.ncq_depth; prev = io, io = req_next(io)) {
		uint64_t pos;

		if (io->op == TC_OP_FLUSH || io->internal[1] > t)
			break;
		n++;
		if (high && io->prio != TC_PRIO_HIGH)
			continue;
		pos = hdd_position_ns(edev, io, t);
		if (pos < best_pos) {
			best_pos = pos;
			best = io;
			best_prev = prev;
		}
	}
unlink:
	if (best_prev) {
		req_set_next(best_prev, req_next(best));
		edev->st.reordered++;
	} else {
		edev->pending = req_next(best);
	}
	if (edev->pending_tail == best)
		edev->pending_tail = best_prev;
	return best;
}

/* ------------------------------------------------------------------------------------
 * The SSD model; callers hold edev->lock.
 */

/* Completion time of @io arriving at @now: first free slot, latency overlapped with a
 * bandwidth reservation on the shared link. */
static uint64_t ssd_complete_at(struct emu_dev *edev, const struct tc_io *io, uint64_t now)
{
	const struct emu_profile *p = &edev->prof;
	uint64_t start, end, lat = 0, bps = 0, link_end;
	uint64_t i, slot = 0;

	for (i = 1; i < p->parallelism; i++)
		if (edev->slot_free[i] < edev->slot_free[slot])
			slot = i;
	start = max_u64(now, edev->slot_free[slot]);
	switch (io->op) {
	case TC_OP_READ:
		lat = p->read_ns;
		bps = p->read_bps;
		break;
	case TC_OP_WRITE:
	case TC_OP_WRITE_ZEROES:
		lat = p->write_ns;
		bps = p->write_bps;
		break;
	case TC_OP_FLUSH:
		lat = p->ssd_flush_ns;
		break;
	case TC_OP_DISCARD:
		lat = p->discard_ns;
		break;
	}
	end = start + lat;
	if (bps) {
		link_end = max_u64(start, edev->link_free) + xfer_ns(io->length, bps);
		edev->link_free = link_end;
		end = max_u64(end, link_end);
		if (io->flags & TC_IO_FUA)
			end += p->ssd_flush_ns;
	}
	edev->slot_free[slot] = end;
	edev->st.wait_ns += start - now;
	edev->st.busy_ns += end - start;
	edev->st.requests++;
	return end;
}

/* ------------------------------------------------------------------------------------
 * Queues and dispatch; callers hold edev->lock.
 */

/* Put @io on the in-flight list by completion time, after those completing at the same
 * time, so equal times complete in dispatch order. */
static void emu_inflight_insert(struct emu_dev *edev, struct tc_io *io, uint64_t done_at)
{
	struct tc_io *prev = NULL, *cur = edev->inflight;

	io->internal[2] = done_at;
	while (cur && cur->internal[2] <= done_at) {
		prev = cur;
		cur = req_next(cur);
	}
	req_set_next(io, cur);
	if (prev)
		req_set_next(prev, io);
	else
		edev->inflight = io;
}

/* HDD: start the next request if the actuator is free. */
static void hdd_dispatch(struct emu_dev *edev)
{
	struct tc_io *io;
	uint64_t t, service;

	if (edev->prof.type != EMU_HDD || edev->busy || !edev->pending)
		return;
	/* The actuator starts when it is free and something has arrived; the candidates
	 * are what had arrived by then. */
	t = max_u64(edev->actuator_free, edev->pending->internal[1]);
	io = hdd_pick(edev, t);
	service = hdd_service_ns(edev, io, t);
	edev->st.wait_ns += t - io->internal[1];
	edev->st.busy_ns += service;
	edev->st.requests++;
	edev->actuator_free = t + service;
	edev->busy = true;
	emu_inflight_insert(edev, io, t + service);
}

/* Unlink the earliest in-flight request; the HDD's actuator becomes free. */
static struct tc_io *emu_inflight_pop(struct emu_dev *edev)
{
	struct tc_io *io = edev->inflight;

	edev->inflight = req_next(io);
	req_set_next(io, NULL);
	edev->busy = false;
	return io;
}

/* Deterministic mode: the time of the next thing to do, or UINT64_MAX. */
static uint64_t emu_next_event(struct emu_dev *edev, uint64_t now)
{
	if (edev->prof.type == EMU_HDD && !edev->busy && edev->pending)
		return now;
	return edev->inflight ? edev->inflight->internal[2] : UINT64_MAX;
}

/* ------------------------------------------------------------------------------------
 * File I/O, on the device thread or in the deterministic timer.
 */

static int emu_rw(struct emu_dev *edev, struct tc_io *io)
{
	uint64_t off = io->offset;
	int i;

	for (i = 0; i < io->iovcnt; i++) {
		char *base = io->iov[i].iov_base;
		size_t left = io->iov[i].iov_len;

		while (left > 0) {
			ssize_t n;

			if (io->op == TC_OP_READ)
				n = pread(edev->fd, base, left, (off_t)off);
			else
				n = pwrite(edev->fd, base, left, (off_t)off);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n < 0)
				return -errno;
			if (n == 0)
				return -EIO;    /* end of file inside the device: truncated */
			base += n;
			left -= (size_t)n;
			off += (uint64_t)n;
		}
	}
	return 0;
}

static int emu_write_zeroes(struct emu_dev *edev, uint64_t off, uint64_t len)
{
	size_t chunk = len < EMU_ZERO_CHUNK ? (size_t)len : EMU_ZERO_CHUNK;
	char *zeros;
	int ret = 0;

	if (fallocate(edev->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off,
		      (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	zeros = calloc(1, chunk);
	if (!zeros)
		return -ENOMEM;
	while (len > 0) {
		size_t n = len < chunk ? (size_t)len : chunk;
		ssize_t w = pwrite(edev->fd, zeros, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			break;
		}
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	free(zeros);
	return ret;
}

/* Do @io on the file.  Returns 0 or -errno (logged). */
static int emu_do_io(struct emu_dev *edev, struct tc_io *io)
{
	static const char *const names[] = { "read", "write", "flush", "discard",
					     "write-zeroes" };
	int res = 0;

	switch (io->op) {
	case TC_OP_READ:
	case TC_OP_WRITE:
		res = emu_rw(edev, io);
		break;
	case TC_OP_FLUSH:
		break;
	case TC_OP_DISCARD:
		/* Punch a hole, so the file stays sparse; discard is advisory. */
		if (fallocate(edev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)io->offset, (off_t)io->length) < 0 && errno != EOPNOTSUPP)
			res = -errno;
		break;
	case TC_OP_WRITE_ZEROES:
		res = emu_write_zeroes(edev, io->offset, io->length);
		break;
	}
	if (res == 0 && (io->op == TC_OP_FLUSH || (io->flags & TC_IO_FUA)) &&
	    fdatasync(edev->fd) < 0)
		res = -errno;
	if (res < 0)
		tc_err(edev->dev.ctx, "emulated device %s: %s at %" PRIu64 " length %" PRIu64
		       ": %s", edev->dev.name, names[io->op], io->offset, io->length,
		       strerror(-res));
	return res;
}

/* ------------------------------------------------------------------------------------
 * Threaded mode: the device thread.
 */

/*
 * Wait until @until (CLOCK_MONOTONIC ns), or until a submit signals.  Holds edev->lock
 * (dropped while spinning).  A timed sleep wakes late: tens of microseconds, 50-200 on
 * a virtual machine, which is the whole latency of an SSD read.  So the thread sleeps
 * until a margin before @until, the margin tracking the lateness it observes (an
 * exponentially weighted average, times 1.5, at most EMU_SPIN_MAX_NS), and spins on the
 * clock for the rest: a modelled 90 us read then takes 90 us, at the cost of the CPU
 * for the spin.
 */
static void emu_thread_wait(struct emu_dev *edev, uint64_t until, uint64_t now)
{
	tc_ctx *ctx = edev->dev.ctx;
	uint64_t spin = edev->late_ns + edev->late_ns / 2;

	if (spin > EMU_SPIN_MAX_NS)
		spin = EMU_SPIN_MAX_NS;
	if (until - now > spin) {
		uint64_t target = until - spin;
		struct timespec ts = {
			.tv_sec = (time_t)(target / NSEC_PER_SEC),
			.tv_nsec = (long)(target % NSEC_PER_SEC),
		};

		if (pthread_cond_timedwait(&edev->cond, &edev->lock, &ts) == ETIMEDOUT) {
			uint64_t late = tc_ctx_now(ctx) - target;

			/* A descheduled thread is not a slow timer: clip the sample. */
			if (late > EMU_SPIN_MAX_NS)
				late = EMU_SPIN_MAX_NS;
			edev->late_ns = edev->late_ns - edev->late_ns / 8 + late / 8;
		}
		return;
	}
	pthread_mutex_unlock(&edev->lock);
	while (tc_ctx_now(ctx) < until)
		;
	pthread_mutex_lock(&edev->lock);
}

/* The first in-flight request whose file I/O is still to do, or NULL. */
static struct tc_io *emu_io_todo(struct emu_dev *edev)
{
	struct tc_io *io;

	for (io = edev->inflight; io; io = req_next(io))
		if (!(io->internal[3] & EMU_REQ_IO_DONE))
			return io;
	return NULL;
}

/*
 * Serve requests in model order: start the next one when the actuator frees (HDD; SSD
 * requests are placed at submission), do the file I/O of the requests in flight in
 * completion order while the earliest one's time has not come (so that at its time only
 * its callback is left to run), sleep until then, complete it.  A request that arrives
 * meanwhile with an earlier completion wakes the thread, which then serves that one
 * first.
 */
static void *emu_thread_main(void *arg)
{
	struct emu_dev *edev = arg;
	tc_ctx *ctx = edev->dev.ctx;

	/* The default 50 us timer slack is half an SSD read: sleep to the microsecond. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	pthread_mutex_lock(&edev->lock);
	while (!edev->stop) {
		struct tc_io *io, *todo;
		uint64_t now;
		int res;

		hdd_dispatch(edev);
		io = edev->inflight;
		if (!io) {
			pthread_cond_wait(&edev->cond, &edev->lock);
			continue;
		}
		now = tc_ctx_now(ctx);
		todo = emu_io_todo(edev);
		if (todo && (todo == io || now < io->internal[2])) {
			/* Only this thread sets IO_DONE or unlinks: @todo stays put. */
			pthread_mutex_unlock(&edev->lock);
			res = emu_do_io(edev, todo);
			pthread_mutex_lock(&edev->lock);
			todo->internal[1] = (uint64_t)(int64_t)res;
			todo->internal[3] |= EMU_REQ_IO_DONE;
			continue;       /* an earlier one may have arrived meanwhile */
		}
		if (now < io->internal[2]) {
			emu_thread_wait(edev, io->internal[2], now);
			continue;
		}
		emu_inflight_pop(edev);
		pthread_mutex_unlock(&edev->lock);
		tc_dev_complete(&edev->dev, io, (int)(int64_t)io->internal[1]);
		pthread_mutex_lock(&edev->lock);
	}
	pthread_mutex_unlock(&edev->lock);
	return NULL;
}

/* ------------------------------------------------------------------------------------
 * Deterministic mode: the timer.
 */

/*
 * Complete every request whose modelled completion time the virtual clock has reached,
 * starting the HDD's next request as each one ends (so requests queued behind one
 * another all finish in one pass if the clock jumped past them), then re-arm for the
 * next event.  The file I/O is done here, in completion order, with the lock dropped:
 * done() callbacks may submit again.
 */
static void emu_timer_fn(struct tc_timer *t)
{
	struct emu_dev *edev = (struct emu_dev *)((char *)t - offsetof(struct emu_dev, timer));
	tc_ctx *ctx = edev->dev.ctx;
	struct tc_io *done = NULL, *tail = NULL, *io;
	uint64_t now, next;

	pthread_mutex_lock(&edev->lock);
	now = tc_ctx_now(ctx);
	for (;;) {
		hdd_dispatch(edev);
		if (!edev->inflight || edev->inflight->internal[2] > now)
			break;
		io = emu_inflight_pop(edev);
		if (tail)
			req_set_next(tail, io);
		else
			done = io;
		tail = io;
	}
	next = emu_next_event(edev, now);
	if (next != UINT64_MAX)
		tc_ctx_timer_arm(ctx, &edev->timer, next);
	pthread_mutex_unlock(&edev->lock);

	while ((io = done)) {
		done = req_next(io);
		tc_dev_complete(&edev->dev, io, emu_do_io(edev, io));
	}
}

/* ------------------------------------------------------------------------------------
 * Submit, statistics, close.
 */

static void emu_submit(struct tc_dev *dev, struct tc_io *io)
{
	struct emu_dev *edev = (struct emu_dev *)dev;
	uint64_t now;

	if (edev->readonly && io->op != TC_OP_READ && io->op != TC_OP_FLUSH) {
		tc_err(dev->ctx, "emulated device %s: opened read-only, refusing op %u at %"
		       PRIu64, dev->name, io->op, io->offset);
		tc_dev_complete_later(dev, io, -EROFS);
		return;
	}
	pthread_mutex_lock(&edev->lock);
	/* Read under the lock: arrival times are then in list order. */
	now = tc_ctx_now(dev->ctx);
	io->internal[0] = 0;
	io->internal[1] = now;
	io->internal[3] = 0;
	if (edev->prof.type == EMU_SSD) {
		emu_inflight_insert(edev, io, ssd_complete_at(edev, io, now));
	} else {
		if (edev->pending_tail)
			req_set_next(edev->pending_tail, io);
		else
			edev->pending = io;
		edev->pending_tail = io;
	}
	if (edev->threaded)
		pthread_cond_signal(&edev->cond);
	else
		tc_ctx_timer_arm(dev->ctx, &edev->timer, emu_next_event(edev, now));
	pthread_mutex_unlock(&edev->lock);
}

int tc_emu_stats(struct tc_dev *dev, struct tc_emu_stats *st)
{
	struct emu_dev *edev = (struct emu_dev *)dev;

	if (dev->ops != &emu_ops)
		return -EINVAL;
	pthread_mutex_lock(&edev->lock);
	*st = edev->st;
	pthread_mutex_unlock(&edev->lock);
	return 0;
}

static void emu_close(struct tc_dev *dev)
{
	struct emu_dev *edev = (struct emu_dev *)dev;

	if (edev->threaded) {
		pthread_mutex_lock(&edev->lock);
		edev->stop = true;
		pthread_cond_signal(&edev->cond);
		pthread_mutex_unlock(&edev->lock);
		pthread_join(edev->thread, NULL);
	} else {
		tc_ctx_timer_cancel(dev->ctx, &edev->timer);
	}
	pthread_cond_destroy(&edev->cond);
	pthread_mutex_destroy(&edev->lock);
	close(edev->fd);
	free(edev->slot_free);
	tc_dev_fini(dev);
	free(edev);
}

static const struct tc_dev_ops emu_ops = {
	.name = "emu",
	.submit = emu_submit,
	.close = emu_close,
};
