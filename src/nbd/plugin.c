/* SPDX-License-Identifier: MIT */
/*
 * plugin.c - nbdkit-tiercache-plugin: serves every volume of a tiercache host over NBD,
 * one export per volume, named after it.  A thin adapter: requests go to
 * tc_export_io(), and all caching lives in the library.
 *
 *   nbdkit [-U SOCKET] nbdkit-tiercache-plugin.so dev=SPEC [dev=SPEC ...]
 *          [control=PATH] [socket=SOCKET] [seed=N] [testing=1]
 *          [http=[HOST:]PORT] [http_interval=SECONDS]
 *
 * `tiercache serve` builds this command line.  The library's threads start in .after_fork
 * (nbdkit may fork to the background after configuration, and threads do not survive a
 * fork); .cleanup closes the host cleanly, committing metadata with the dirty data kept in
 * the caches.  Multi-conn is safe: a FLUSH on any connection covers every write completed
 * before it on any connection (invariant 2, docs/architecture.md), because a volume's FLUSH
 * is volume-wide in the engine.
 *
 * testing=1 (`tiercache serve --testing`) opens every device under a fault-injection
 * layer and answers the test hooks of the control socket: fault, heal, power_cut.
 * Without it the devices are opened bare and those requests are refused, so a
 * production server can neither be made to fail nor killed through its socket.
 *
 * http=[HOST:]PORT (`tiercache serve --http`) also serves the read-only HTTP endpoint
 * of src/ctl/ctl_http.c: Prometheus metrics and the status page, HOST 127.0.0.1 unless
 * given; refused when the plugin was built without libmicrohttpd.
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_http.h"
#include "ctl_server.h"
#include "tiercache.h"
#include "tiercache-test.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* Plugin state: nbdkit loads one plugin per process, so these are the process's. */
static char **specs;
static unsigned nspecs;
static char **spare_specs;       /* spare=: global hot spares, added after the assembly */
static unsigned nspare_specs;
static char *control_path;
static char *nbd_socket;       /* removed at cleanup (nbdkit leaves it behind) */
static uint64_t crash_seed = 1;
static bool testing;
static unsigned http_interval = 5;   /* s between samples of the status page's plots */
#ifdef TC_HAVE_MICROHTTPD
static char http_host[256];    /* http=: "" when not serving HTTP */
static uint16_t http_port;
static struct ctl_http *http;
#endif
static tc_ctx *ctx;
static tc_host *host;
static struct ctl_server *ctl;

/* warnings=stderr: nbdkit has no warning level (only errors are always shown, and
 * a warning given as an error reads "error: warning: ..."), so where stderr is the
 * log (`tiercache serve` runs nbdkit -f with stderr on its log file) warnings are
 * written there directly, in nbdkit's own line shape. */
static bool warn_stderr;

static void log_sink(void *opaque, enum tc_log_level level, const char *msg)
{
	(void)opaque;
	ctl_capture_log(msg);
	if (level == TC_LOG_ERROR) {
		nbdkit_error("%s", msg);
	} else if (level == TC_LOG_WARN && warn_stderr) {
		char line[8192];
		int len = snprintf(line, sizeof(line), "nbdkit: tiercache: warning: %s\n", msg);
		if (len > (int)sizeof(line) - 1) {
			len = (int)sizeof(line) - 1;
			line[len - 1] = '\n';
		}
		/* One write: lines of several threads do not interleave. */
		ssize_t w = write(STDERR_FILENO, line, (size_t)len);
		(void)w;
	} else if (level == TC_LOG_WARN) {
		nbdkit_error("warning: %s", msg);
	} else {
		nbdkit_debug("%s", msg);
	}
}

static void tiercache_unload(void)
{
	for (unsigned i = 0; i < nspecs; i++)
		free(specs[i]);
	free(specs);
	for (unsigned i = 0; i < nspare_specs; i++)
		free(spare_specs[i]);
	free(spare_specs);
	free(control_path);
	free(nbd_socket);
}

static int tiercache_config(const char *key, const char *value)
{
	if (!strcmp(key, "dev") || !strcmp(key, "spare")) {
		bool sp = key[0] == 's';
		char ***list = sp ? &spare_specs : &specs;
		unsigned *cnt = sp ? &nspare_specs : &nspecs;
		char **n = realloc(*list, sizeof(*n) * (*cnt + 1));
		if (!n || !(n[*cnt] = strdup(value))) {
			*list = n ? n : *list;
			nbdkit_error("out of memory");
			return -1;
		}
		*list = n;
		(*cnt)++;
	} else if (!strcmp(key, "control")) {
		free(control_path);
		control_path = strdup(value);
	} else if (!strcmp(key, "socket")) {
		free(nbd_socket);
		nbd_socket = strdup(value);
	} else if (!strcmp(key, "seed")) {
		if (nbdkit_parse_uint64_t("seed", value, &crash_seed) == -1)
			return -1;
	} else if (!strcmp(key, "testing")) {
		int b = nbdkit_parse_bool(value);
		if (b == -1)
			return -1;
		testing = b;
	} else if (!strcmp(key, "http")) {
#ifdef TC_HAVE_MICROHTTPD
		char why[512];
		if (ctl_parse_hostport("http", value, http_host, sizeof(http_host), &http_port,
				       why, sizeof(why))) {
			nbdkit_error("%s", why);
			return -1;
		}
#else
		nbdkit_error("http=%s: this plugin was built without libmicrohttpd, so it cannot "
			     "serve HTTP (install libmicrohttpd-dev and rebuild)", value);
		return -1;
#endif
	} else if (!strcmp(key, "warnings")) {
		if (strcmp(value, "stderr") && strcmp(value, "error")) {
			nbdkit_error("warnings=%s: expected stderr or error", value);
			return -1;
		}
		warn_stderr = !strcmp(value, "stderr");
	} else if (!strcmp(key, "http_interval")) {
		if (nbdkit_parse_unsigned("http_interval", value, &http_interval) == -1)
			return -1;
		if (http_interval < 1 || http_interval > 3600) {
			nbdkit_error("http_interval=%s: not a number of seconds from 1 to 3600",
				     value);
			return -1;
		}
	} else {
		nbdkit_error("unknown parameter \"%s\" (expected dev=, spare=, control=, socket=, "
			     "seed=, testing=, http=, http_interval=, warnings=)", key);
		return -1;
	}
	return 0;
}

static int tiercache_config_complete(void)
{
	if (!nspecs) {
		nbdkit_error("no devices: give dev=PATH once per device");
		return -1;
	}
	return 0;
}

#define tiercache_config_help \
	"dev=SPEC        (required, repeatable) a device: PATH, crash:PATH, emu:PROFILE:PATH,\n" \
	"                nbd:URI\n" \
	"spare=SPEC      (repeatable) a global hot spare for the arrays among the devices\n" \
	"control=PATH    control socket for the tiercache command\n" \
	"socket=PATH     the NBD unix socket (-U), removed at shutdown\n" \
	"seed=N          seed of crash: devices\n" \
	"testing=1       allow fault injection and power cuts through the control socket\n" \
	"http=[HOST:]PORT  serve metrics and a status page over HTTP (HOST 127.0.0.1 unless\n" \
	"                given)\n" \
	"http_interval=S seconds between samples of the status page's plots (default 5)\n" \
	"warnings=stderr|error  warnings written to stderr as \"nbdkit: tiercache: warning:\"\n" \
	"                (when stderr is the log: nbdkit -f), or as nbdkit errors (default)"

/* {"op":"power_cut"}: the debug hook of end-to-end power-loss tests.  Unflushed writes
 * of crash devices are applied in part, then the process dies at once, as in a power
 * failure: no metadata commit, no socket cleanup. */
static void power_cut(void *opaque)
{
	(void)opaque;
	int n = tc_host_power_cut(host);
	nbdkit_error("debug power-cut: %d crash device(s) cut, exiting", n);
	if (control_path)
		unlink(control_path);
	if (nbd_socket)
		unlink(nbd_socket);
	_exit(137);
}

/* A failed start: nbdkit exits without .cleanup, so the NBD socket it bound is
 * removed here (a refused `tiercache serve` leaves nothing behind). */
static int start_failed(void)
{
	if (nbd_socket)
		unlink(nbd_socket);
	return -1;
}

static int tiercache_after_fork(void)
{
	struct tc_ctx_opts o = { .mode = TC_CTX_THREADED, .log_level = TC_LOG_INFO };
	int r = tc_ctx_new(&o, &ctx);
	if (r) {
		nbdkit_error("cannot create the context: %s", strerror(-r));
		return start_failed();
	}
	tc_ctx_set_log(ctx, log_sink, NULL, TC_LOG_INFO);
	struct tc_host_opts ho = { .dev_flags = TC_DEV_EXCLUSIVE, .crash_seed = crash_seed,
				   .fault_injection = testing };
	r = tc_host_assemble(ctx, (const char *const *)specs, nspecs, &ho, &host);
	if (r) {
		nbdkit_error("assembling the volumes failed: %s", strerror(-r));
		return start_failed();
	}
	for (unsigned i = 0; i < nspare_specs; i++) {
		r = tc_host_add_global_spare(host, spare_specs[i], false);
		if (r) {
			nbdkit_error("global spare %s: %s", spare_specs[i], strerror(-r));
			tc_host_close(host);
			host = NULL;
			return start_failed();
		}
	}
	if (testing)
		nbdkit_error("warning: started for testing: fault injection and power cuts "
			     "are allowed through the control socket");
	for (unsigned i = 0; i < tc_host_export_count(host); i++) {
		struct tc_export_info info;
		tc_export_info(tc_host_export_at(host, i), &info);
		nbdkit_debug("volume \"%s\": %" PRIu64 " bytes, %s", info.name, info.size,
			     info.cache ? info.cache : "uncached");
	}
	if (control_path) {
		r = ctl_server_start(host, control_path, testing ? power_cut : NULL, NULL, &ctl);
		if (r) {
			tc_host_close(host);
			host = NULL;
			return start_failed();
		}
	}
#ifdef TC_HAVE_MICROHTTPD
	if (http_host[0]) {
		r = ctl_http_start(host, http_host, http_port, http_interval, &http);
		if (r) {
			if (ctl)
				ctl_server_stop(ctl);
			ctl = NULL;
			tc_host_close(host);
			host = NULL;
			return start_failed();
		}
		nbdkit_debug("http: serving on %s port %u", http_host, http_port);
	}
#endif
	return 0;
}

static void tiercache_cleanup(void)
{
#ifdef TC_HAVE_MICROHTTPD
	ctl_http_stop(http);
	http = NULL;
#endif
	if (ctl)
		ctl_server_stop(ctl);
	ctl = NULL;
	if (host) {
		int r = tc_host_close(host);
		if (r)
			nbdkit_error("closing the volumes: %s", strerror(-r));
	}
	host = NULL;
	if (ctx)
		tc_ctx_free(ctx);
	ctx = NULL;
	if (nbd_socket)
		unlink(nbd_socket);
}

static int tiercache_list_exports(int readonly, int is_tls, struct nbdkit_exports *exports)
{
	for (unsigned i = 0; i < tc_host_export_count(host); i++) {
		struct tc_export_info info;
		tc_export_info(tc_host_export_at(host, i), &info);
		char desc[256];
		snprintf(desc, sizeof(desc), "tiercache volume, %s%s",
			 info.cache ? "cached on " : "uncached",
			 info.cache ? info.cache : "");
		if (nbdkit_add_export(exports, info.name, desc) == -1)
			return -1;
	}
	return 0;
}

/* Clients that ask for no name get the first volume. */
static const char *tiercache_default_export(int readonly, int is_tls)
{
	tc_export *e = tc_host_export_at(host, 0);
	if (!e)
		return NULL;
	struct tc_export_info info;
	tc_export_info(e, &info);
	return nbdkit_strdup_intern(info.name);
}

static void *tiercache_open(int readonly)
{
	const char *name = nbdkit_export_name();
	tc_export *e = tc_host_find(host, name ? name : "");
	if (!e) {
		nbdkit_error("volume \"%s\": no such volume on this server", name ? name : "");
		errno = ENOENT;
		return NULL;
	}
	return e;
}

static int64_t tiercache_get_size(void *handle)
{
	struct tc_export_info info;
	tc_export_info(handle, &info);
	return (int64_t)info.size;
}

static int tiercache_block_size(void *handle, uint32_t *minimum, uint32_t *preferred,
				uint32_t *maximum)
{
	*minimum = TC_SECTOR_SIZE;
	*preferred = tc_export_block_size(handle);
	*maximum = 0xffffffff;
	return 0;
}

static int tiercache_can_multi_conn(void *handle)
{
	return 1;
}

static int tiercache_can_fua(void *handle)
{
	return NBDKIT_FUA_NATIVE;
}

static int always(void *handle)
{
	return 1;
}

/*
 * nbdkit hands a plugin buffers from malloc(), 16-byte aligned, and the cache device
 * is O_DIRECT: an unaligned buffer would make the engine allocate a line-sized buffer
 * per request, read into it and copy out.  Requests up to PLUGIN_ALIGNED_MAX go through
 * an aligned buffer of the server thread's own instead (one copy, no allocation after
 * the thread's first request); a buffer nbdkit happens to align is used as it is.
 */
#define PLUGIN_ALIGN 4096
#define PLUGIN_ALIGNED_MAX (64u * 1024)

static pthread_once_t aligned_once = PTHREAD_ONCE_INIT;
static pthread_key_t aligned_key;       /* frees the thread's buffer at thread exit */
static bool aligned_key_ok;

static void aligned_key_init(void)
{
	aligned_key_ok = pthread_key_create(&aligned_key, free) == 0;
}

/* This thread's aligned buffer of PLUGIN_ALIGNED_MAX bytes, or NULL (none can be had:
 * the request goes with nbdkit's buffer). */
static void *aligned_buf(void)
{
	void *p;

	pthread_once(&aligned_once, aligned_key_init);
	if (!aligned_key_ok)
		return NULL;
	p = pthread_getspecific(aligned_key);
	if (p)
		return p;
	if (posix_memalign(&p, PLUGIN_ALIGN, PLUGIN_ALIGNED_MAX))
		return NULL;
	if (pthread_setspecific(aligned_key, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static int do_io(void *handle, enum tc_op op, unsigned flags, void *buf, uint32_t count,
		 uint64_t offset)
{
	void *io_buf = buf;
	int r;

	if ((op == TC_OP_READ || op == TC_OP_WRITE) && (uintptr_t)buf % PLUGIN_ALIGN &&
	    count <= PLUGIN_ALIGNED_MAX && count % PLUGIN_ALIGN == 0) {
		void *a = aligned_buf();
		if (a) {
			io_buf = a;
			if (op == TC_OP_WRITE)
				memcpy(a, buf, count);
		}
	}
	r = tc_export_io(handle, op, flags, io_buf, count, offset);
	if (io_buf != buf && op == TC_OP_READ && r == 0)
		memcpy(buf, io_buf, count);
	if (r < 0) {
		nbdkit_set_error(-r);
		return -1;
	}
	return 0;
}

static int tiercache_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
			   uint32_t flags)
{
	return do_io(handle, TC_OP_READ, 0, buf, count, offset);
}

static int tiercache_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
			    uint32_t flags)
{
	return do_io(handle, TC_OP_WRITE, flags & NBDKIT_FLAG_FUA ? TC_IO_FUA : 0, (void *)buf,
		     count, offset);
}

static int tiercache_flush(void *handle, uint32_t flags)
{
	return do_io(handle, TC_OP_FLUSH, 0, NULL, 0, 0);
}

static int tiercache_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	int r = do_io(handle, TC_OP_DISCARD, 0, NULL, count, offset);
	if (!r && (flags & NBDKIT_FLAG_FUA))
		r = do_io(handle, TC_OP_FLUSH, 0, NULL, 0, 0);
	return r;
}

static int tiercache_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	return do_io(handle, TC_OP_WRITE_ZEROES, flags & NBDKIT_FLAG_FUA ? TC_IO_FUA : 0, NULL,
		     count, offset);
}

static struct nbdkit_plugin plugin = {
	.name = "tiercache",
	.longname = "tiercache: SSD caching for HDD volumes",
	.version = TC_VERSION,
	.description = "Serves every tiercache volume on the given devices, one export each.",
	.unload = tiercache_unload,
	.config = tiercache_config,
	.config_complete = tiercache_config_complete,
	.config_help = tiercache_config_help,
	.magic_config_key = "dev",
	.after_fork = tiercache_after_fork,
	.cleanup = tiercache_cleanup,
	.list_exports = tiercache_list_exports,
	.default_export = tiercache_default_export,
	.open = tiercache_open,
	.get_size = tiercache_get_size,
	.block_size = tiercache_block_size,
	.can_write = always,
	.can_flush = always,
	.can_trim = always,
	.can_zero = always,
	.can_fua = tiercache_can_fua,
	.can_multi_conn = tiercache_can_multi_conn,
	.pread = tiercache_pread,
	.pwrite = tiercache_pwrite,
	.flush = tiercache_flush,
	.trim = tiercache_trim,
	.zero = tiercache_zero,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
