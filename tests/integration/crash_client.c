/* SPDX-License-Identifier: MIT */
/*
 * crash_client.c - tc-crash-client: the NBD client of the end-to-end crash tests.  It
 * writes to a volume while the server is killed or power-cut under it, then checks what
 * survived against invariant 2 of docs/architecture.md (block-device durability).
 *
 *   tc-crash-client write URI LOG [--seed N] [--offset OFF] [--length LEN] [--conns N]
 *                   [--depth N] [--flush-every N] [--fua-pct P] [--zero-pct P]
 *                   [--count N] [--no-prefill]
 *   tc-crash-client verify URI LOG [--max-report N]
 *
 * write: pre-fills the region [OFF, OFF+LEN) with generation 0 and flushes it (unless
 * --no-prefill: the region then starts as zeros), then writes random 4 KiB-aligned
 * blocks of 4-64 KiB (some FUA, some write-zeroes) at queue depth --depth spread over
 * --conns connections, with a FLUSH on a random connection every --flush-every writes
 * (multi-conn: it covers the writes completed on every connection), until the server
 * goes away, SIGTERM, or --count writes (then a last flush).  Every 4 KiB unit of write number
 * G at byte offset O holds unit_fill(seed, O, G): a header (O, G, seed) and a stream
 * derived from them, so any unit read back names the write it came from.
 *
 * The log is one line per event, appended with write(2) as the event happens (one
 * thread drives every connection, so the log order is the real order of events).  Only
 * the server dies in these tests, not the machine, so a line written is a line kept:
 *   H seed off len prefill      header
 *   P                          pre-fill written and flushed
 *   S id off len flags          write `id` about to be sent (flags: - / f fua / z zeroes)
 *   A id | X id errno           write `id` acknowledged / failed
 *   F id                       flush `id` about to be sent
 *   C id | Y id errno           flush `id` completed / failed
 * A write with an A line before the F line of a flush with a C line had completed
 * before that flush was sent, on whatever connection: the flush covers it.
 *
 * verify: reads the log and the region and checks each 4 KiB unit (see check_unit).
 * Exit status: 0 no violation, 1 violations (each reported), 2 usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libnbd.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UNIT 4096u
#define MAX_UNITS 16u                  /* a write is 1..16 units: 4 KiB .. 64 KiB */
#define MAX_CONNS 16u
#define MAX_FLUSHES 4u                 /* flushes in flight at once */
#define NONE INT64_MAX                 /* log position of an event that never happened */

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("tc-crash-client: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_state;
static uint64_t rnd(void) { return mix64(rng_state += 0x9e3779b97f4a7c15ull); }
static uint64_t rnd_below(uint64_t n) { return rnd() % n; }

/* The content of the unit at volume byte offset @off written by write @gen (0: the
 * pre-fill) in the run of @seed: words 0-2 name it, the rest is a stream of them. */
static void unit_fill(uint8_t *p, uint64_t seed, uint64_t off, uint64_t gen)
{
	uint64_t w[UNIT / 8];
	uint64_t s = mix64(seed ^ mix64(off ^ mix64(gen + 0x5851f42d4c957f2dull)));
	w[0] = off;
	w[1] = gen;
	w[2] = seed;
	for (unsigned i = 3; i < UNIT / 8; i++)
		w[i] = mix64(s += 0x9e3779b97f4a7c15ull);
	memcpy(p, w, UNIT);
}

/* ---- write mode ------------------------------------------------------------------ */

struct conn {
	struct nbd_handle *h;
	bool dead;
};

struct cmd {                      /* one write or flush in flight */
	bool busy, is_flush, fua, zero;
	uint64_t id;
	uint8_t *buf;             /* MAX_UNITS * UNIT bytes, writes only */
};

static struct {
	int log_fd;
	struct conn conns[MAX_CONNS];
	unsigned nconns;
	struct cmd *cmds;        /* depth writes, then MAX_FLUSHES flushes */
	unsigned depth;
	unsigned writes_inflight, flushes_inflight;
	uint64_t submitted, acked, failed, fua, zero;
	uint64_t flushes_sent, flushes_done, flushes_failed;
} W;

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

/* One log line, written at once: the test may kill us right after. */
static void log_line(const char *fmt, ...)
{
	char line[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(W.log_fd, line, (size_t)n) != n)
		die("log: write: %s", strerror(errno));
}

/* Completion of a write or flush: log it before anything else can happen (callbacks
 * must not call libnbd on the handle; the main loop reuses the slot). */
static int on_complete(void *opaque, int *error)
{
	struct cmd *c = opaque;
	if (c->is_flush) {
		if (*error) {
			log_line("Y %" PRIu64 " %d\n", c->id, *error);
			W.flushes_failed++;
		} else {
			log_line("C %" PRIu64 "\n", c->id);
			W.flushes_done++;
		}
		W.flushes_inflight--;
	} else {
		if (*error) {
			log_line("X %" PRIu64 " %d\n", c->id, *error);
			W.failed++;
		} else {
			log_line("A %" PRIu64 "\n", c->id);
			W.acked++;
		}
		W.writes_inflight--;
	}
	c->busy = false;
	return 1;
}

/* libnbd refused to send @c on connection @ci (the callback will not run): a dead
 * connection fails it; anything else is a bug of this client. */
static void not_sent(struct cmd *c, int ci, const char *what)
{
	struct nbd_handle *h = W.conns[ci].h;
	if (!nbd_aio_is_dead(h) && !nbd_aio_is_closed(h))
		die("%s %" PRIu64 ": %s", what, c->id, nbd_get_error());
	int e = nbd_get_errno() ? nbd_get_errno() : ENOTCONN;
	on_complete(c, &e);
	W.conns[ci].dead = true;
}

static int pick_conn(void)
{
	unsigned live = 0;
	for (unsigned i = 0; i < W.nconns; i++)
		live += !W.conns[i].dead;
	if (!live)
		return -1;
	unsigned k = (unsigned)rnd_below(live);
	for (unsigned i = 0; i < W.nconns; i++)
		if (!W.conns[i].dead && k-- == 0)
			return (int)i;
	return -1;
}

static struct cmd *free_cmd(bool flush)
{
	unsigned lo = flush ? W.depth : 0, hi = flush ? W.depth + MAX_FLUSHES : W.depth;
	for (unsigned i = lo; i < hi; i++)
		if (!W.cmds[i].busy)
			return &W.cmds[i];
	return NULL;
}

static bool submit_write(uint64_t seed, uint64_t region_off, uint64_t region_units,
			 unsigned fua_pct, unsigned zero_pct)
{
	int ci = pick_conn();
	struct cmd *c = free_cmd(false);
	if (ci < 0 || !c)
		return false;
	uint64_t units = 1 + rnd_below(region_units < MAX_UNITS ? region_units : MAX_UNITS);
	uint64_t off = region_off + UNIT * rnd_below(region_units - units + 1);
	uint64_t len = units * UNIT;
	*c = (struct cmd){ .busy = true, .id = ++W.submitted,
			   .fua = rnd_below(100) < fua_pct, .zero = rnd_below(100) < zero_pct,
			   .buf = c->buf };
	if (!c->zero)
		for (uint64_t i = 0; i < units; i++)
			unit_fill(c->buf + i * UNIT, seed, off + i * UNIT, c->id);
	/* Logged before it is sent: whatever the volume holds afterwards, the log knows
	 * every write that may have put it there. */
	log_line("S %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", c->id, off, len,
		 c->zero ? (c->fua ? "zf" : "z") : (c->fua ? "f" : "-"));
	W.fua += c->fua;
	W.zero += c->zero;
	W.writes_inflight++;
	nbd_completion_callback cb = { .callback = on_complete, .user_data = c };
	uint32_t flags = c->fua ? LIBNBD_CMD_FLAG_FUA : 0;
	struct nbd_handle *h = W.conns[ci].h;
	int64_t r = c->zero ? nbd_aio_zero(h, len, off, cb, flags)
			    : nbd_aio_pwrite(h, c->buf, len, off, cb, flags);
	if (r < 0)
		not_sent(c, ci, "write");
	return true;
}

static bool submit_flush(void)
{
	int ci = pick_conn();
	struct cmd *c = free_cmd(true);
	if (ci < 0 || !c)
		return false;
	*c = (struct cmd){ .busy = true, .is_flush = true, .id = ++W.flushes_sent };
	/* Logged before it is sent: every A line above it completed before the flush. */
	log_line("F %" PRIu64 "\n", c->id);
	W.flushes_inflight++;
	struct nbd_handle *h = W.conns[ci].h;
	if (nbd_aio_flush(h, (nbd_completion_callback){ .callback = on_complete,
							.user_data = c }, 0) < 0)
		not_sent(c, ci, "flush");
	return true;
}

/* Wait for any connection to make progress (at most @ms); completions run in here. */
static void poll_conns(int ms)
{
	struct pollfd p[MAX_CONNS];
	unsigned idx[MAX_CONNS], n = 0;
	for (unsigned i = 0; i < W.nconns; i++) {
		struct conn *cn = &W.conns[i];
		if (cn->dead)
			continue;
		int fd = nbd_aio_get_fd(cn->h);
		unsigned dir = nbd_aio_get_direction(cn->h);
		if (fd < 0) {
			cn->dead = true;
			continue;
		}
		p[n] = (struct pollfd){ .fd = fd,
			.events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
					  (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0)) };
		idx[n++] = i;
	}
	if (!n)
		return;
	if (poll(p, n, ms) < 0) {
		if (errno == EINTR)
			return;
		die("poll: %s", strerror(errno));
	}
	for (unsigned k = 0; k < n; k++) {
		struct conn *cn = &W.conns[idx[k]];
		int r = 0;
		if (p[k].revents & (POLLIN | POLLHUP | POLLERR))
			r = nbd_aio_notify_read(cn->h);
		else if (p[k].revents & POLLOUT)
			r = nbd_aio_notify_write(cn->h);
		/* A dead connection has completed (failed) everything it had in flight. */
		if (r < 0 || nbd_aio_is_dead(cn->h) || nbd_aio_is_closed(cn->h))
			cn->dead = true;
	}
}

static bool any_dead(void)
{
	for (unsigned i = 0; i < W.nconns; i++)
		if (W.conns[i].dead)
			return true;
	return false;
}

static bool all_dead(void)
{
	for (unsigned i = 0; i < W.nconns; i++)
		if (!W.conns[i].dead)
			return false;
	return true;
}

/* The region as generation 0, flushed: the initial value every unit starts from. */
static void prefill(uint64_t seed, uint64_t off, uint64_t len)
{
	enum { CHUNK = 1 << 20 };
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		die("out of memory");
	for (uint64_t done = 0; done < len;) {
		uint64_t n = len - done < CHUNK ? len - done : CHUNK;
		for (uint64_t i = 0; i < n; i += UNIT)
			unit_fill(buf + i, seed, off + done + i, 0);
		if (nbd_pwrite(W.conns[0].h, buf, n, off + done, 0) < 0)
			die("pre-fill at %" PRIu64 ": %s", off + done, nbd_get_error());
		done += n;
	}
	if (nbd_flush(W.conns[0].h, 0) < 0)
		die("pre-fill flush: %s", nbd_get_error());
	free(buf);
	log_line("P\n");
}

static struct nbd_handle *connect_uri(const char *uri)
{
	struct nbd_handle *h = nbd_create();
	if (!h)
		die("nbd_create: %s", nbd_get_error());
	if (nbd_connect_uri(h, uri) < 0)
		die("connect %s: %s", uri, nbd_get_error());
	return h;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct opts {
	uint64_t seed, offset, length, count;
	unsigned conns, depth, flush_every, fua_pct, zero_pct, max_report;
	bool prefill;
};

static int do_write(const char *uri, const char *log_path, const struct opts *o)
{
	W.log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (W.log_fd < 0)
		die("%s: %s", log_path, strerror(errno));
	rng_state = o->seed;
	W.nconns = o->conns;
	W.depth = o->depth;
	for (unsigned i = 0; i < W.nconns; i++)
		W.conns[i].h = connect_uri(uri);
	int64_t size = nbd_get_size(W.conns[0].h);
	uint64_t length = o->length ? o->length : (uint64_t)size - o->offset;
	if (size < 0 || o->offset % UNIT || length % UNIT || !length ||
	    o->offset + length > (uint64_t)size)
		die("region %" PRIu64 "+%" PRIu64 ": not 4 KiB aligned or beyond the volume "
		    "(%" PRId64 " bytes)", o->offset, length, size);
	if (W.nconns > 1 && nbd_can_multi_conn(W.conns[0].h) != 1)
		die("the server does not allow multi-conn: use --conns 1");
	W.cmds = calloc(W.depth + MAX_FLUSHES, sizeof(*W.cmds));
	for (unsigned i = 0; W.cmds && i < W.depth; i++)
		if (!(W.cmds[i].buf = malloc(MAX_UNITS * UNIT)))
			die("out of memory");
	if (!W.cmds)
		die("out of memory");
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	log_line("H %" PRIu64 " %" PRIu64 " %" PRIu64 " %d\n", o->seed, o->offset, length,
		 o->prefill);
	double t0 = now_s();
	if (o->prefill)
		prefill(o->seed, o->offset, length);
	double t1 = now_s();
	uint64_t since_flush = 0;
	const char *why = "count reached";
	for (;;) {
		if (stop_signal) {
			why = "stopped by a signal";
			break;
		}
		/* One dead connection means the server is gone: send nothing more, collect
		 * what the other connections still complete. */
		if (any_dead() && (all_dead() || (!W.writes_inflight && !W.flushes_inflight))) {
			why = "server gone";
			break;
		}
		bool more = !any_dead() && (!o->count || W.submitted < o->count);
		while (more && W.writes_inflight < W.depth &&
		       submit_write(o->seed, o->offset, length / UNIT, o->fua_pct, o->zero_pct)) {
			if (++since_flush >= o->flush_every && W.flushes_inflight < MAX_FLUSHES &&
			    submit_flush())
				since_flush = 0;
			more = !any_dead() && (!o->count || W.submitted < o->count);
		}
		if (!any_dead() && !more && !W.writes_inflight) {
			/* --count: a last flush, sent once every write completed, makes them
			 * all durable; then stop. */
			if (!submit_flush()) {
				poll_conns(1000);       /* every flush slot busy: wait for one */
				continue;
			}
			while (W.flushes_inflight && !any_dead())
				poll_conns(1000);
			if (any_dead())
				why = "server gone";
			break;
		}
		poll_conns(1000);
	}
	double t2 = now_s();
	printf("write: %s after %.1f s (pre-fill %.1f s): %" PRIu64 " writes sent, %" PRIu64
	       " acked (%" PRIu64 " FUA, %" PRIu64 " zeroes), %" PRIu64 " failed; %" PRIu64
	       " flushes sent, %" PRIu64 " completed, %" PRIu64 " failed; %u connections, "
	       "depth %u\n", why, t2 - t0, t1 - t0, W.submitted, W.acked, W.fua, W.zero,
	       W.failed, W.flushes_sent, W.flushes_done, W.flushes_failed, W.nconns, W.depth);
	for (unsigned i = 0; i < W.nconns; i++)
		nbd_close(W.conns[i].h);   /* what is in flight stays unacknowledged */
	close(W.log_fd);
	return 0;
}

/* ---- verify mode ----------------------------------------------------------------- */

struct wrec {                     /* one write of the log */
	uint64_t off, len;
	bool fua, zero;
	int64_t spos, apos;       /* log positions of its S and A lines (NONE: absent) */
};

static struct {
	uint64_t seed, off, len;
	bool prefill, prefilled;
	struct wrec *w;           /* by id - 1 */
	uint64_t nw, capw;
	int64_t last_flush_pos;   /* F line of the newest completed flush (-1: none) */
	uint64_t flushes_sent, flushes_done, acked, failed, covered;
} L;

static struct wrec *wrec_get(uint64_t id, int64_t pos)
{
	if (!id || id > L.nw)
		die("log line %" PRId64 ": write %" PRIu64 " was never sent", pos, id);
	return &L.w[id - 1];
}

static void read_log(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	char line[256];
	int64_t pos = 0;
	int64_t *flush_pos = NULL;
	uint64_t nf = 0, capf = 0;
	bool header = false;
	L.last_flush_pos = -1;
	while (fgets(line, sizeof(line), f)) {
		pos++;
		if (!strchr(line, '\n'))
			break;            /* a line cut short by a kill: the last one */
		uint64_t a, b, c;
		int p;
		char fl[4];
		switch (line[0]) {
		case 'H':
			if (sscanf(line, "H %" SCNu64 " %" SCNu64 " %" SCNu64 " %d", &L.seed,
				   &L.off, &L.len, &p) != 4)
				die("%s:%" PRId64 ": bad header", path, pos);
			L.prefill = p;
			header = true;
			break;
		case 'P':
			L.prefilled = true;
			break;
		case 'S':
			if (sscanf(line, "S %" SCNu64 " %" SCNu64 " %" SCNu64 " %3s", &a, &b, &c,
				   fl) != 4 || a != L.nw + 1)
				die("%s:%" PRId64 ": bad S line", path, pos);
			if (L.nw == L.capw) {
				L.capw = L.capw ? 2 * L.capw : 4096;
				L.w = realloc(L.w, L.capw * sizeof(*L.w));
				if (!L.w)
					die("out of memory");
			}
			L.w[L.nw++] = (struct wrec){ .off = b, .len = c,
				.fua = strchr(fl, 'f') != NULL, .zero = strchr(fl, 'z') != NULL,
				.spos = pos, .apos = NONE };
			break;
		case 'A':
			if (sscanf(line, "A %" SCNu64, &a) != 1)
				die("%s:%" PRId64 ": bad A line", path, pos);
			wrec_get(a, pos)->apos = pos;
			L.acked++;
			break;
		case 'X':
			L.failed++;
			break;
		case 'F':
			if (sscanf(line, "F %" SCNu64, &a) != 1 || a != nf + 1)
				die("%s:%" PRId64 ": bad F line", path, pos);
			if (nf == capf) {
				capf = capf ? 2 * capf : 1024;
				flush_pos = realloc(flush_pos, capf * sizeof(*flush_pos));
				if (!flush_pos)
					die("out of memory");
			}
			flush_pos[nf++] = pos;
			L.flushes_sent++;
			break;
		case 'C':
			if (sscanf(line, "C %" SCNu64, &a) != 1 || !a || a > nf)
				die("%s:%" PRId64 ": bad C line", path, pos);
			/* Every flush is volume-wide: the newest completed one covers the
			 * most. */
			if (flush_pos[a - 1] > L.last_flush_pos)
				L.last_flush_pos = flush_pos[a - 1];
			L.flushes_done++;
			break;
		case 'Y':
			break;
		default:
			die("%s:%" PRId64 ": unknown line: %s", path, pos, line);
		}
	}
	fclose(f);
	free(flush_pos);
	if (!header)
		die("%s: no header line: not a tc-crash-client log", path);
	if (L.prefill && !L.prefilled)
		die("%s: the pre-fill did not complete before the crash: nothing to verify",
		    path);
}

/* A write is durable when it is a FUA write that completed, or it completed before a
 * flush that completed was sent (invariant 2: a FLUSH covers every write completed,
 * on any connection, before it was received). */
static bool covered(const struct wrec *w)
{
	return w->apos != NONE && (w->fua || w->apos < L.last_flush_pos);
}

/* What a unit read back holds. */
enum found_kind { F_ZERO, F_GEN, F_OTHER_UNIT, F_OTHER_RUN, F_GARBAGE };
struct found {
	enum found_kind kind;
	uint64_t off, gen, seed;
};

static struct found identify(const uint8_t *p, uint64_t off)
{
	static const uint8_t zero[UNIT];
	if (!memcmp(p, zero, UNIT))
		return (struct found){ .kind = F_ZERO };
	uint64_t hdr[3];
	memcpy(hdr, p, sizeof(hdr));
	uint8_t want[UNIT];
	unit_fill(want, hdr[2], hdr[0], hdr[1]);
	struct found f = { .kind = F_GARBAGE, .off = hdr[0], .gen = hdr[1], .seed = hdr[2] };
	if (memcmp(p, want, UNIT))
		return f;            /* not a whole unit of any write: torn or garbage */
	f.kind = hdr[2] != L.seed ? F_OTHER_RUN : hdr[0] != off ? F_OTHER_UNIT : F_GEN;
	return f;
}

static struct {
	uint64_t units, violations, reported;
	uint64_t at_initial, at_durable, at_newer_acked, at_unacked, at_zero;
	uint64_t lost;            /* legal: an acked, unflushed write did not survive */
	uint64_t raced;           /* legal: a write that raced the last acked one won */
} V;

static const char *wstate(const struct wrec *w)
{
	return covered(w) ? (w->fua && !(w->apos < L.last_flush_pos) ? "durable (FUA)"
								 : "durable (flushed)")
	       : w->apos != NONE ? "acked after the last flush was sent" : "never acked";
}

/* Invariant 2 for the unit at byte offset @off, which write ids @ids (in the order
 * they were sent) touched, holding @p.  The unit may hold the value of any write to it
 * that no durable write supersedes, where write B supersedes write A when B was sent
 * after A was acknowledged (so B's value replaced A's for good), or the initial value
 * when no durable write touched it.  This allows exactly "its value as of the last
 * completed flush (or FUA write), or one of the values written to it since"; writes
 * in flight together may land in either order, so each of them is allowed. */
static void check_unit(uint64_t off, const uint8_t *p, const uint64_t *ids, uint64_t n,
		       unsigned max_report)
{
	int64_t newest_durable_send = -1;    /* S position of the newest durable write */
	for (uint64_t i = 0; i < n; i++) {
		const struct wrec *w = &L.w[ids[i] - 1];
		if (covered(w) && w->spos > newest_durable_send)
			newest_durable_send = w->spos;
	}
	bool initial_ok = newest_durable_send < 0;
	struct found f = identify(p, off);
	bool ok = false;
	const struct wrec *hit = NULL;
	if (f.kind == F_ZERO && initial_ok && !L.prefill)
		ok = true;
	if (f.kind == F_GEN && f.gen == 0 && initial_ok && L.prefill)
		ok = true;
	for (uint64_t i = n; i-- > 0 && !ok;) {       /* newest first: zeroes match many */
		const struct wrec *w = &L.w[ids[i] - 1];
		bool allowed = w->apos == NONE || w->apos > newest_durable_send;
		bool same = w->zero ? f.kind == F_ZERO : f.kind == F_GEN && f.gen == ids[i];
		if (allowed && same) {
			ok = true;
			hit = w;
		}
	}
	V.units++;
	if (ok) {
		const struct wrec *last = NULL;
		for (uint64_t i = 0; i < n; i++)
			if (L.w[ids[i] - 1].apos != NONE &&
			    (!last || L.w[ids[i] - 1].apos > last->apos))
				last = &L.w[ids[i] - 1];
		/* Statistics only (both legal): the unit is behind its last acknowledged
		 * write when it holds a value sent before that write completed. */
		if (last && hit != last && (!hit || hit->spos < last->apos)) {
			if (hit && hit->apos > last->spos)
				V.raced++;      /* in flight together: either may land last */
			else
				V.lost++;
		}
		if (!hit)
			V.at_initial++;
		else if (covered(hit))
			V.at_durable++;
		else if (hit->apos != NONE)
			V.at_newer_acked++;
		else
			V.at_unacked++;
		V.at_zero += f.kind == F_ZERO;
		return;
	}
	V.violations++;
	if (V.reported++ >= max_report)
		return;
	printf("VIOLATION at offset %" PRIu64 " (unit %" PRIu64 " of the region): found ", off,
	       (off - L.off) / UNIT);
	switch (f.kind) {
	case F_ZERO: printf("zeros"); break;
	case F_GEN: printf("write %" PRIu64 "%s", f.gen, f.gen ? "" : " (the pre-fill)"); break;
	case F_OTHER_UNIT:
		printf("the data of another unit: offset %" PRIu64 ", write %" PRIu64, f.off,
		       f.gen);
		break;
	case F_OTHER_RUN: printf("data of another run (seed %" PRIu64 ")", f.seed); break;
	case F_GARBAGE:
		printf("garbage (header words %016" PRIx64 " %016" PRIx64 " %016" PRIx64 ")",
		       f.off, f.gen, f.seed);
		break;
	}
	printf("\n    expected one of:%s\n", initial_ok ? (L.prefill ? " the pre-fill (write 0);"
							    : " zeros (initial);") : "");
	for (uint64_t i = n, shown = 0; i-- > 0 && shown < 12;) {
		const struct wrec *w = &L.w[ids[i] - 1];
		bool allowed = w->apos == NONE || w->apos > newest_durable_send;
		printf("    %s write %" PRIu64 "%s [%" PRIu64 "+%" PRIu64 "], %s\n",
		       allowed ? "allowed " : "outdated", ids[i], w->zero ? " (zeroes)" : "",
		       w->off, w->len, wstate(w));
		shown++;
	}
	if (n > 12)
		printf("    ... and %" PRIu64 " older writes\n", n - 12);
}

static int do_verify(const char *uri, const char *log_path, const struct opts *o)
{
	read_log(log_path);
	for (uint64_t i = 0; i < L.nw; i++)
		L.covered += covered(&L.w[i]);
	/* The writes of each unit, in the order they were sent (CSR arrays). */
	uint64_t nunits = L.len / UNIT;
	uint64_t *first = calloc(nunits + 1, sizeof(*first));
	if (!first)
		die("out of memory");
	for (uint64_t i = 0; i < L.nw; i++)
		for (uint64_t u = (L.w[i].off - L.off) / UNIT;
		     u < (L.w[i].off + L.w[i].len - L.off) / UNIT; u++)
			first[u + 1]++;
	for (uint64_t u = 0; u < nunits; u++)
		first[u + 1] += first[u];
	uint64_t *ids = malloc((first[nunits] + 1) * sizeof(*ids));
	uint64_t *fill = calloc(nunits, sizeof(*fill));
	if (!ids || !fill)
		die("out of memory");
	for (uint64_t i = 0; i < L.nw; i++)
		for (uint64_t u = (L.w[i].off - L.off) / UNIT;
		     u < (L.w[i].off + L.w[i].len - L.off) / UNIT; u++)
			ids[first[u] + fill[u]++] = i + 1;

	struct nbd_handle *h = connect_uri(uri);
	enum { CHUNK = 1 << 20 };
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		die("out of memory");
	for (uint64_t done = 0; done < L.len;) {
		uint64_t n = L.len - done < CHUNK ? L.len - done : CHUNK;
		if (nbd_pread(h, buf, n, L.off + done, 0) < 0)
			die("read at %" PRIu64 ": %s", L.off + done, nbd_get_error());
		for (uint64_t i = 0; i < n; i += UNIT) {
			uint64_t u = (done + i) / UNIT;
			check_unit(L.off + done + i, buf + i, ids + first[u], first[u + 1] - first[u],
				   o->max_report);
		}
		done += n;
	}
	nbd_shutdown(h, 0);
	nbd_close(h);
	if (V.reported > o->max_report)
		printf("... %" PRIu64 " more violations not shown\n", V.reported - o->max_report);
	printf("verify: log: %" PRIu64 " writes sent, %" PRIu64 " acked, %" PRIu64 " failed, %"
	       PRIu64 " durable (FUA or acked before a completed flush was sent); %" PRIu64
	       " flushes sent, %" PRIu64 " completed\n", L.nw, L.acked, L.failed, L.covered,
	       L.flushes_sent, L.flushes_done);
	printf("verify: %" PRIu64 " units of 4 KiB checked: %" PRIu64 " initial, %" PRIu64
	       " at a durable write, %" PRIu64 " at a newer acked write, %" PRIu64 " at a "
	       "never-acked write (%" PRIu64 " zeroes); %" PRIu64 " lost an acked unflushed "
	       "write, %" PRIu64 " hold a write that raced the last acked one; %" PRIu64
	       " violations\n", V.units, V.at_initial, V.at_durable, V.at_newer_acked,
	       V.at_unacked, V.at_zero, V.lost, V.raced, V.violations);
	printf("RESULT writes_acked=%" PRIu64 " flushes_completed=%" PRIu64 " units=%" PRIu64
	       " violations=%" PRIu64 "\n", L.acked, L.flushes_done, V.units, V.violations);
	free(buf);
	free(ids);
	free(fill);
	free(first);
	free(L.w);
	return V.violations ? 1 : 0;
}

/* ---- command line ---------------------------------------------------------------- */

static const char usage[] =
	"usage: tc-crash-client write URI LOG [--seed N] [--offset OFF] [--length LEN]\n"
	"                       [--conns N] [--depth N] [--flush-every N] [--fua-pct P]\n"
	"                       [--zero-pct P] [--count N] [--no-prefill]\n"
	"       tc-crash-client verify URI LOG [--max-report N]\n"
	"Sizes in bytes with an optional K, M or G suffix.  Defaults: seed 1, offset 0,\n"
	"length 64M, 4 connections, depth 16, a flush every 64 writes, 5% FUA, 3% zeroes,\n"
	"no count (until the server goes away or SIGTERM).\n";

static uint64_t num(const char *name, const char *s)
{
	char *end;
	errno = 0;
	uint64_t v = strtoull(s, &end, 0);
	unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
	if (shift)
		end++;
	if (errno || end == s || *end || (v << shift) >> shift != v)
		die("%s: \"%s\" is not a number", name, s);
	return v << shift;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "offset", required_argument, NULL, 'o' },
		{ "length", required_argument, NULL, 'l' },
		{ "conns", required_argument, NULL, 'c' },
		{ "depth", required_argument, NULL, 'd' },
		{ "flush-every", required_argument, NULL, 'f' },
		{ "fua-pct", required_argument, NULL, 'u' },
		{ "zero-pct", required_argument, NULL, 'z' },
		{ "count", required_argument, NULL, 'n' },
		{ "no-prefill", no_argument, NULL, 'P' },
		{ "max-report", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .seed = 1, .length = 64u << 20, .conns = 4, .depth = 16,
			  .flush_every = 64, .fua_pct = 5, .zero_pct = 3, .max_report = 20,
			  .prefill = true };
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 's': o.seed = num("--seed", optarg); break;
		case 'o': o.offset = num("--offset", optarg); break;
		case 'l': o.length = num("--length", optarg); break;
		case 'c': o.conns = (unsigned)num("--conns", optarg); break;
		case 'd': o.depth = (unsigned)num("--depth", optarg); break;
		case 'f': o.flush_every = (unsigned)num("--flush-every", optarg); break;
		case 'u': o.fua_pct = (unsigned)num("--fua-pct", optarg); break;
		case 'z': o.zero_pct = (unsigned)num("--zero-pct", optarg); break;
		case 'n': o.count = num("--count", optarg); break;
		case 'P': o.prefill = false; break;
		case 'r': o.max_report = (unsigned)num("--max-report", optarg); break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (argc - optind != 3) {
		fputs(usage, stderr);
		return 2;
	}
	if (!o.conns || o.conns > MAX_CONNS || !o.depth || o.depth > 1024 || !o.flush_every)
		die("--conns must be 1..%u, --depth 1..1024, --flush-every at least 1", MAX_CONNS);
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argv[optind], *uri = argv[optind + 1], *log = argv[optind + 2];
	if (!strcmp(mode, "write"))
		return do_write(uri, log, &o);
	if (!strcmp(mode, "verify"))
		return do_verify(uri, log, &o);
	die("unknown mode \"%s\" (write or verify)", mode);
}
