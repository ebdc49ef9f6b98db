/* SPDX-License-Identifier: MIT */
/*
 * cmd_serve.c - `tiercache serve`: run nbdkit with the tiercache plugin over the given
 * devices (the test hooks of a server started with --testing are in cmd_debug.c).
 *
 * In the background (the default) the command starts nbdkit in the foreground as a
 * child in a new session, logging to a file, and returns once the server answers on
 * its control socket, so a failed assembly is reported with its messages and a
 * non-zero exit instead of a daemon that died unseen.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ini.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_http.h"
#include "ctl_path.h"

#define NBD_SOCKET_DEFAULT "/run/tiercache/nbd.sock"
#define LOG_DEFAULT "/run/tiercache/serve.log"

static const char help[] =
"NAME\n"
"    tiercache serve - assemble the volumes on the given devices and serve them over NBD\n"
"\n"
"SYNOPSIS\n"
"    tiercache serve [--socket PATH | --listen [HOST:]PORT] [--foreground]\n"
"                    [--control PATH] [--threads N] [--log FILE] [--seed N]\n"
"                    [--http [HOST:]PORT [--http-interval SECONDS]]\n"
"                    [--testing] [--verbose] [--config FILE] [--spare DEVICE]...\n"
"                    DEVICE...\n"
"\n"
"DESCRIPTION\n"
"    Reads the superblocks of every DEVICE, opens every cache among them, attaches\n"
"    every backing to its cache and serves each volume as an NBD export named after\n"
"    the volume (nbdkit with the tiercache plugin).  Clients connect with, e.g.,\n"
"        nbd+unix:///NAME?socket=/run/tiercache/nbd.sock\n"
"    A backing without a cache is served uncached.  A backing whose cache is not\n"
"    among the devices (or fails to open) is served uncached with a warning when its\n"
"    write policy is not write-back; in write-back the cache may hold its dirty data,\n"
"    so the server refuses to start and names the cache.\n"
"\n"
"    DEVICE is a path, crash:PATH (a crash-test device over the file PATH: writes are\n"
"    volatile until flushed, see `tiercache debug`), emu:PROFILE:PATH (an emulated\n"
"    HDD or SSD, see profiles/README.md), nbd:URI (an NBD export, e.g. a remote\n"
"    disk as a backing), rbd:POOL/IMAGE[@CONF] (a Ceph RBD image, CONF a ceph.conf\n"
"    path; client options from $CEPH_ARGS) or array:MEMBER,MEMBER,... (an array\n"
"    made with `tiercache create array`, assembled from its members in any order).\n"
"    The members of an array may also be given as DEVICEs themselves: they are\n"
"    grouped by array and each array assembled (a stale member is named and left\n"
"    out; a dirty, degraded RAID 5 or 6 is refused, see `tiercache array --help`),\n"
"    then the array is served like any device.  A blank DEVICE (no superblock: a\n"
"    spare removed from its array is left so) is ignored with a warning, unless it\n"
"    is the only one.  Every local device is locked while served; an NBD export\n"
"    cannot be locked from here; an RBD image's exclusive lock is held, and while\n"
"    a write-back cache holds its dirty data the image records that cache and\n"
"    every other opener is refused (docs/remote.md).\n"
"\n"
"    The volume commands (status, stats, set, flush, detach, attach) reach the server\n"
"    through its control socket.  --socket, --control and --log each move only their\n"
"    own path: --socket alone keeps the control socket and the log at their defaults\n"
"    in /run/tiercache/, which every server of the host shares; a second server needs\n"
"    its own --control (and --log), and the volume commands name it with the same\n"
"    --control PATH.  SIGTERM or SIGINT stops it within seconds however\n"
"    much dirty data there is: requests in flight complete, metadata is committed, the\n"
"    dirty data stays in the cache for the next start, the sockets are removed.\n"
"\n"
"OPTIONS\n"
"    --socket PATH        NBD unix socket (default " NBD_SOCKET_DEFAULT ")\n"
"    --listen [HOST:]PORT serve over TCP instead, on HOST (default 127.0.0.1: give an\n"
"                         address, or 0.0.0.0, to serve other hosts)\n"
"    --foreground         stay in the foreground, logging to stderr\n"
"    --control PATH       control socket (default " TC_CONTROL_DEFAULT "), mode 0600\n"
"    --threads N          nbdkit threads per connection (default 256: queue depth 256)\n"
"    --log FILE           log of a background server (default " LOG_DEFAULT ")\n"
"    --seed N             seed of crash: devices' power cuts (default 1)\n"
"    --testing            for tests and drills: open every device under a fault-\n"
"                         injection layer and answer `tiercache debug fail`, `debug\n"
"                         heal` and `debug power-cut`; without it the server refuses\n"
"                         them (it warns at start when this is on)\n"
"    --verbose            log the engine's informational messages too\n"
"    --http [HOST:]PORT   also serve read-only HTTP on HOST (default 127.0.0.1, this\n"
"                         host only: give an address, or 0.0.0.0, for others):\n"
"                         /metrics (Prometheus text format: every counter of `stats\n"
"                         --json` and the states of `status --json`), / (a status\n"
"                         page: volumes, caches, arrays and members, plots of hit\n"
"                         ratio and latency over the last hour) and /status.json\n"
"                         (as `status --json`); off by default (docs/server.md)\n"
"    --http-interval SECONDS  seconds between the samples of the page's plots\n"
"                         (default 5, 1 to 3600; 720 samples are kept)\n"
"    --spare DEVICE       a global hot spare (repeatable): any array of the server\n"
"                         takes it when a member becomes faulty and the array has\n"
"                         no spare of its own, and rebuilds onto it (see `tiercache\n"
"                         array --help`).  It must be blank: one holding any\n"
"                         superblock is refused, and the server does not start.\n"
"                         A spare an array took before this start holds that\n"
"                         array's superblock now and is served as its member\n"
"    --config FILE        read the devices and settings from FILE (below); options\n"
"                         given on the command line win over the file's, and DEVICEs\n"
"                         given there are served besides the file's\n"
"\n"
"CONFIGURATION FILE\n"
"    An INI file with one section, [serve] (the systemd unit tiercache.service runs\n"
"    `tiercache serve --foreground --config /etc/tiercache/tiercache.conf`):\n"
"        [serve]\n"
"        device = /dev/disk/by-id/nvme-SSD1      # one line per DEVICE, in any order\n"
"        device = array:/dev/sdb,/dev/sdc,/dev/sdd,/dev/sde\n"
"        spare = /dev/disk/by-id/ata-HDD9           # a global hot spare, one per line\n"
"        socket = /run/tiercache/nbd.sock        # or: listen = [HOST:]PORT\n"
"        control = /run/tiercache/control.sock\n"
"        threads = 256\n"
"        log = /run/tiercache/serve.log\n"
"        verbose = no                            # yes or no\n"
"        http = 127.0.0.1:9100                   # and http_interval = SECONDS\n"
"    Each key means what the option of its name means; `#` and `;` start comments.\n"
"    An unknown section or key, a bad value, or a file that cannot be read is an\n"
"    error naming the file, the line and the key, and nothing is started.\n"
"\n"
"ENVIRONMENT\n"
"    TC_NBDKIT_PLUGIN     path of nbdkit-tiercache-plugin.so (default: next to this\n"
"                         program in a build tree, else the installed plugin)\n"
"    TC_NBDKIT            the nbdkit program (default: nbdkit on PATH)\n"
"\n"
"EXAMPLES\n"
"    tiercache serve /srv/ssd.img /srv/hdd.img\n"
"    tiercache serve --foreground --config /etc/tiercache/tiercache.conf\n"
"    fio --ioengine=nbd --uri='nbd+unix:///db?socket=/run/tiercache/nbd.sock' ...\n"
"    tiercache status\n"
"    tiercache serve --http 9100 /srv/ssd.img /srv/hdd.img\n"
"    curl http://127.0.0.1:9100/metrics\n"
"    kill PID                    # the pid serve printed: a clean stop\n"
"\n"
"EXIT STATUS\n"
"    0 serving (background) or stopped cleanly (foreground), 1 the server failed to\n"
"    start (its messages are printed), 2 bad usage.\n";

/* A unix socket file nobody listens on (left by a killed server) is removed; one a
 * server answers on, or a path that is not a socket at all, is an error.  Returns 0
 * or -1 after a message. */
static int clear_socket(const char *what, const char *path)
{
	int fd = ctl_connect(path);
	if (fd >= 0) {
		close(fd);
		cli_err("%s %s: a server already answers there", what, path);
		return -1;
	}
	struct stat st;
	if (lstat(path, &st) == 0) {
		/* Only a socket file nobody answers on is ours to remove: a typo naming a
		 * device image or a /dev node must not delete it. */
		if (!S_ISSOCK(st.st_mode)) {
			cli_err("%s %s: exists and is not a socket; give another path", what, path);
			return -1;
		}
		if (fd == -ECONNREFUSED)
			unlink(path);
	}
	int r = ctl_make_parent(path);
	if (r) {
		cli_err("%s %s: cannot create its folder: %s", what, path, strerror(-r));
		return -1;
	}
	return 0;
}

/* The log is appended to: refuse a path that holds something else (a device image
 * named by mistake would grow a tail of text).  A log is a regular file of text. */
static bool log_file_ok(const char *log)
{
	struct stat st;
	if (lstat(log, &st) < 0)
		return true;   /* created */
	bool ok = S_ISREG(st.st_mode);
	if (ok && st.st_size > 0) {
		char buf[4096];
		FILE *f = fopen(log, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
		if (f)
			fclose(f);
		ok = f && memchr(buf, 0, n) == NULL;
	}
	if (!ok)
		cli_err("log %s: exists and is not a text file (a device?); give another path", log);
	return ok;
}

/* The warnings of the log from @off on (a degraded volume, say): the user of a
 * background server would not see them otherwise. */
static void print_log_warnings(const char *log, off_t off)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	fseeko(f, off, SEEK_SET);
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		char *w = strstr(line, "warning: ");
		if (w)
			fprintf(stderr, "tiercache serve: %s", w);
	}
	fclose(f);
}

/* Print the log from @off on (a failed background start). */
static void print_log(const char *log, off_t off)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	fseeko(f, off, SEEK_SET);
	char line[4096];
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
}

/* What a configuration file (--config) sets; NULL / unset: not in the file. */
struct serve_config {
	const char *file;
	char **devs;            /* `device` lines, in order */
	int ndevs;
	char **spares;          /* `spare` lines, in order */
	int nspares;
	char *sock, *listen, *control, *log, *http;
	uint64_t threads;       /* 0: not set */
	uint64_t http_interval; /* 0: not set */
	int verbose;            /* -1: not set */
	char why[512];          /* the first error */
};

static int config_key(void *user, const char *section, const char *name, const char *value,
		      int lineno)
{
	struct serve_config *c = user;
	char **str = NULL;

	if (strcmp(section, "serve")) {
		snprintf(c->why, sizeof(c->why), "line %d: section [%s] is not [serve]", lineno,
			 section);
		return 0;
	}
	bool spare = !strcmp(name, "spare");
	if (spare || !strcmp(name, "device")) {
		char ***list = spare ? &c->spares : &c->devs;
		int *n = spare ? &c->nspares : &c->ndevs;
		if (!*value) {
			snprintf(c->why, sizeof(c->why), "line %d: key \"%s\" has no value", lineno,
				 name);
			return 0;
		}
		char **d = realloc(*list, sizeof(*d) * (size_t)(*n + 1));
		if (!d || !(d[*n] = strdup(value))) {
			*list = d ? d : *list;
			snprintf(c->why, sizeof(c->why), "line %d: out of memory", lineno);
			return 0;
		}
		*list = d;
		(*n)++;
		return 1;
	}
	if (!strcmp(name, "socket"))
		str = &c->sock;
	else if (!strcmp(name, "listen"))
		str = &c->listen;
	else if (!strcmp(name, "control"))
		str = &c->control;
	else if (!strcmp(name, "log"))
		str = &c->log;
	else if (!strcmp(name, "http"))
		str = &c->http;
	if (str) {
		if (!*value) {
			snprintf(c->why, sizeof(c->why), "line %d: key \"%s\" has no value", lineno,
				 name);
			return 0;
		}
		free(*str);
		*str = strdup(value);
		return *str != NULL;
	}
	bool thr = !strcmp(name, "threads");
	if (thr || !strcmp(name, "http_interval")) {
		unsigned long long max = thr ? 1024 : 3600;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(value, &end, 10);
		if (errno || end == value || *end || v < 1 || v > max) {
			snprintf(c->why, sizeof(c->why), "line %d: %s = \"%s\" is not a number "
				 "from 1 to %llu", lineno, name, value, max);
			return 0;
		}
		*(thr ? &c->threads : &c->http_interval) = v;
		return 1;
	}
	if (!strcmp(name, "verbose")) {
		if (!strcmp(value, "yes") || !strcmp(value, "true") || !strcmp(value, "1"))
			c->verbose = 1;
		else if (!strcmp(value, "no") || !strcmp(value, "false") || !strcmp(value, "0"))
			c->verbose = 0;
		else {
			snprintf(c->why, sizeof(c->why), "line %d: verbose = \"%s\" is not yes or "
				 "no", lineno, value);
			return 0;
		}
		return 1;
	}
	snprintf(c->why, sizeof(c->why), "line %d: unknown key \"%s\" in [serve] (device, "
		 "spare, socket, listen, control, threads, log, verbose, http, http_interval)",
		 lineno, name);
	return 0;
}

/* inih's handler has no line number (Debian builds it without INI_HANDLER_LINENO):
 * the reader counts the lines it hands over, as emu.c's profile parser does. */
struct config_reader {
	struct serve_config *c;
	FILE *f;
	int lineno;
};

static char *config_line(char *str, int num, void *stream)
{
	struct config_reader *r = stream;

	r->lineno++;
	return fgets(str, num, r->f);
}

static int config_handler(void *user, const char *section, const char *name,
			  const char *value)
{
	struct config_reader *r = user;

	return config_key(r->c, section, name, value, r->lineno);
}

/* Read @c->file into @c.  Returns 0, or -1 after a message naming the file and line. */
static int config_read(struct serve_config *c)
{
	struct config_reader r = { .c = c, .f = fopen(c->file, "r") };

	if (!r.f) {
		cli_err("config %s: %s", c->file, strerror(errno));
		return -1;
	}
	int rc = ini_parse_stream(config_line, &r, config_handler, &r);
	fclose(r.f);
	if (rc != 0) {
		if (!c->why[0])
			snprintf(c->why, sizeof(c->why), "line %d: not an INI line (key = value, "
				 "[section], or a comment)", rc);
		cli_err("config %s: %s", c->file, c->why);
		return -1;
	}
	if (c->sock && c->listen) {
		cli_err("config %s: socket and listen exclude each other", c->file);
		return -1;
	}
	return 0;
}

static void config_free(struct serve_config *c)
{
	for (int i = 0; i < c->ndevs; i++)
		free(c->devs[i]);
	free(c->devs);
	for (int i = 0; i < c->nspares; i++)
		free(c->spares[i]);
	free(c->spares);
	free(c->sock);
	free(c->listen);
	free(c->control);
	free(c->log);
	free(c->http);
}

/* The settings of one start: the command line's, then the file's, then the defaults
 * (NULL or 0: not set). */
struct serve_opts {
	const char *sock, *listen, *control, *log, *http;
	const char **spares;    /* --spare and the file's `spare`, as given */
	int nspares;
	uint64_t threads, seed, http_interval;
	bool fg, verbose, testing;
};

static int serve_run(struct serve_config *cfg, struct serve_opts *o, int ndev, char **devs);
static int serve_start(const struct serve_opts *o, int argc, char **argv);

int cmd_serve(int argc, char **argv)
{
	static const struct option options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "control", required_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, 't' },
		{ "log", required_argument, NULL, 'L' },
		{ "seed", required_argument, NULL, 'S' },
		{ "testing", no_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "http", required_argument, NULL, 'H' },
		{ "http-interval", required_argument, NULL, 'I' },
		{ "config", required_argument, NULL, 'C' },
		{ "spare", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct serve_opts o = { .seed = 1 };
	struct serve_config cfg = { .verbose = -1 };
	int c;
	while ((c = getopt_long(argc, argv, "hf", options, NULL)) != -1) {
		switch (c) {
		case 's': o.sock = optarg; break;
		case 'l': o.listen = optarg; break;
		case 'f': o.fg = true; break;
		case 'c': o.control = optarg; break;
		case 't':
			if (cli_uint("--threads", optarg, 1, 1024, &o.threads))
				return TC_EXIT_USAGE;
			break;
		case 'L': o.log = optarg; break;
		case 'S':
			if (cli_uint("--seed", optarg, 0, UINT64_MAX, &o.seed))
				return TC_EXIT_USAGE;
			break;
		case 'T': o.testing = true; break;
		case 'v': o.verbose = true; break;
		case 'C': cfg.file = optarg; break;
		case 'P': {
			const char **sp = realloc(o.spares, sizeof(*sp) * (size_t)(o.nspares + 1));
			if (!sp) {
				cli_err("out of memory");
				free(o.spares);
				return TC_EXIT_FAIL;
			}
			o.spares = sp;
			o.spares[o.nspares++] = optarg;
			break;
		}
		case 'H': o.http = optarg; break;
		case 'I':
			if (cli_uint("--http-interval", optarg, 1, 3600, &o.http_interval))
				return TC_EXIT_USAGE;
			break;
		case 'h': return cli_help(help);
		default: return cli_bad_option(argv);
		}
	}
	if (o.sock && o.listen)
		return cli_usage("--socket and --listen exclude each other");
	const char **spares = o.spares;   /* serve_run() points o.spares elsewhere */
	int rc = serve_run(&cfg, &o, argc - optind, argv + optind);
	config_free(&cfg);
	free(spares);
	return rc;
}

/* Whether the --spare device @spec holds an array member superblock: an array took it
 * as a spare before this start, so it is one of that array's devices now.  Anything
 * else (blank, missing, another superblock) stays a spare for the server to take or
 * refuse with its message. */
static bool spare_joined_array(const char *spec)
{
	char abs[PATH_MAX];
	const char *path = tc_dev_spec_path(spec);
	if ((path && access(path, F_OK) < 0) || cli_abs_spec(spec, abs, sizeof(abs)))
		return false;   /* the server names what is wrong with it */
	tc_ctx *ctx = cli_ctx(false);
	tc_dev *d;
	struct tc_probe p;
	bool joined = false;
	if (ctx && tc_dev_open_spec(ctx, abs, TC_DEV_READONLY | TC_DEV_BUFFERED, 0, 1, &d) == 0) {
		joined = tc_dev_probe(ctx, d, &p) == 0 && p.kind == TC_PROBE_ARRAY;
		tc_dev_close(d);
	}
	if (ctx)
		tc_ctx_free(ctx);
	return joined;
}

/* cmd_serve() with the command line parsed into @o: the file's settings where the
 * command line left them unset, then the defaults; the file's devices, then @devs. */
static int serve_run(struct serve_config *cfg, struct serve_opts *o, int ndev, char **devs)
{
	if (cfg->file) {
		if (config_read(cfg))
			return TC_EXIT_FAIL;
		if (!o->sock && !o->listen) {
			o->sock = cfg->sock;
			o->listen = cfg->listen;
		}
		o->control = o->control ? o->control : cfg->control;
		o->log = o->log ? o->log : cfg->log;
		o->threads = o->threads ? o->threads : cfg->threads;
		o->verbose = o->verbose || cfg->verbose == 1;
		o->http = o->http ? o->http : cfg->http;
		o->http_interval = o->http_interval ? o->http_interval : cfg->http_interval;
	}
	o->control = o->control ? o->control : TC_CONTROL_DEFAULT;
	o->log = o->log ? o->log : LOG_DEFAULT;
	o->threads = o->threads ? o->threads : 256;
	/* Global spares: the command line's, then the file's.  One an array took before
	 * this start (it holds a member superblock now) is a device of that array. */
	int nsp = o->nspares + cfg->nspares;
	int n = cfg->ndevs + ndev;
	char **all = calloc((size_t)(n + nsp) + 1, sizeof(char *));
	const char **spares = calloc((size_t)nsp + 1, sizeof(char *));
	if (!all || !spares) {
		free(all);
		free(spares);
		cli_err("out of memory");
		return TC_EXIT_FAIL;
	}
	for (int i = 0; i < cfg->ndevs; i++)
		all[i] = cfg->devs[i];
	for (int i = 0; i < ndev; i++)
		all[cfg->ndevs + i] = devs[i];
	int ns = 0;
	for (int i = 0; i < nsp; i++) {
		const char *sp = i < o->nspares ? o->spares[i] : cfg->spares[i - o->nspares];
		if (spare_joined_array(sp))
			all[n++] = (char *)sp;
		else
			spares[ns++] = sp;
	}
	o->spares = spares;
	o->nspares = ns;
	int rc = serve_start(o, n, all);
	free(all);
	free(spares);
	return rc;
}

/* Start nbdkit over the @argc devices @argv: in the foreground (exec) or the
 * background. */
static int serve_start(const struct serve_opts *o, int argc, char **argv)
{
	const char *sock = o->sock, *listen = o->listen, *control = o->control, *log = o->log;
	uint64_t threads = o->threads, seed = o->seed;
	bool fg = o->fg, verbose = o->verbose, testing = o->testing;
	const char *http = o->http;
	uint64_t http_interval = o->http_interval ? o->http_interval : 5;

	if (argc == 0)
		return cli_usage("no DEVICE given (on the command line, or as `device` in a --config file)");
	char host[256] = "127.0.0.1", port[16] = "", why[512];
	uint16_t pn;
	if (listen) {
		if (ctl_parse_hostport("--listen", listen, host, sizeof(host), &pn, why,
				       sizeof(why)))
			return cli_usage("%s", why);
		snprintf(port, sizeof(port), "%u", pn);
	} else if (!sock) {
		sock = NBD_SOCKET_DEFAULT;
	}
	/* --http: checked here, so a bad value is a usage error before anything starts
	 * (the plugin parses it again: http=). */
	char http_host[256] = "";
	uint16_t http_port = 0;
	if (http) {
#ifdef TC_HAVE_MICROHTTPD
		if (ctl_parse_hostport("--http", http, http_host, sizeof(http_host), &http_port, why,
				       sizeof(why)))
			return cli_usage("%s", why);
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE },
				*ai;
		int g = getaddrinfo(http_host, NULL, &hints, &ai);
		if (g)
			return cli_usage("--http: \"%s\": host \"%s\" does not resolve: %s", http,
					 http_host, gai_strerror(g));
		freeaddrinfo(ai);
#else
		return cli_usage("--http %s: this tiercache was built without libmicrohttpd, so "
				 "it cannot serve HTTP (install libmicrohttpd-dev and rebuild)",
				 http);
#endif
	} else if (o->http_interval) {
		return cli_usage("--http-interval needs --http");
	}
	if (clear_socket("control socket", control) ||
	    (sock && clear_socket("NBD socket", sock)))
		return TC_EXIT_FAIL;

	char pbuf[PATH_MAX];
	const char *plugin = cli_find_plugin(pbuf, sizeof(pbuf));
	if (access(plugin, R_OK) < 0) {
		cli_err("nbdkit plugin %s: %s (set TC_NBDKIT_PLUGIN)", plugin, strerror(errno));
		return TC_EXIT_FAIL;
	}
	const char *nbdkit = getenv("TC_NBDKIT") ? getenv("TC_NBDKIT") : "nbdkit";
	/* nbdkit -f [-v] -t N (-U SOCK | -i HOST -p PORT) PLUGIN dev=... control=... seed=N */
	char **av = calloc((size_t)argc + (size_t)o->nspares + 24, sizeof(char *));
	int n = 0;
	char tbuf[32], sbuf[48], ibuf[48];
	snprintf(tbuf, sizeof(tbuf), "%" PRIu64, threads);
	snprintf(sbuf, sizeof(sbuf), "seed=%" PRIu64, seed);
	av[n++] = (char *)nbdkit;
	av[n++] = (char *)"-f";
	if (verbose)
		av[n++] = (char *)"-v";
	av[n++] = (char *)"-t";
	av[n++] = tbuf;
	if (sock) {
		av[n++] = (char *)"-U";
		av[n++] = (char *)sock;
	} else {
		av[n++] = (char *)"-i";
		av[n++] = host;
		av[n++] = (char *)"-p";
		av[n++] = port;
	}
	av[n++] = (char *)plugin;
	/* Devices that do not exist are passed on (the server serves the rest), but not
	 * when none does: nothing could be served. */
	bool any = false;
	for (int i = 0; i < argc && !any; i++) {
		const char *path = tc_dev_spec_path(argv[i]);
		any = !path || access(path, F_OK) == 0;   /* a remote device may be there */
	}
	if (!any) {
		char abs[PATH_MAX];
		(void)cli_abs_spec(argv[0], abs, sizeof(abs));   /* says why */
		return TC_EXIT_FAIL;
	}
	for (int i = 0; i < argc; i++) {
		/* Absolute paths: the server does not depend on this command's folder. */
		char abs[PATH_MAX];
		if (cli_abs_spec_named(argv[i], abs, sizeof(abs)))
			return TC_EXIT_FAIL;
		if (asprintf(&av[n++], "dev=%s", abs) < 0)
			return TC_EXIT_FAIL;
	}
	for (int i = 0; i < o->nspares; i++) {
		char abs[PATH_MAX];
		if (cli_abs_spec_named(o->spares[i], abs, sizeof(abs)))
			return TC_EXIT_FAIL;
		if (asprintf(&av[n++], "spare=%s", abs) < 0)
			return TC_EXIT_FAIL;
	}
	if (asprintf(&av[n++], "control=%s", control) < 0)
		return TC_EXIT_FAIL;
	av[n++] = sbuf;
	/* nbdkit runs in the foreground (-f), its stderr the log or the terminal. */
	av[n++] = (char *)"warnings=stderr";
	if (sock && asprintf(&av[n++], "socket=%s", sock) < 0)
		return TC_EXIT_FAIL;
	if (testing)
		av[n++] = (char *)"testing=1";
	if (http) {
		if (asprintf(&av[n++], "http=%s", http) < 0)
			return TC_EXIT_FAIL;
		snprintf(ibuf, sizeof(ibuf), "http_interval=%" PRIu64, http_interval);
		av[n++] = ibuf;
	}
	av[n] = NULL;
	fflush(NULL);
	if (fg) {
		execvp(nbdkit, av);
		cli_err("cannot run %s: %s (install nbdkit)", nbdkit, strerror(errno));
		return TC_EXIT_FAIL;
	}

	int pr = ctl_make_parent(log);
	if (pr < 0) {
		cli_err("log %s: cannot create its folder: %s", log, strerror(-pr));
		return TC_EXIT_FAIL;
	}
	if (!log_file_ok(log))
		return TC_EXIT_FAIL;
	int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (lfd < 0) {
		cli_err("log %s: %s", log, strerror(errno));
		return TC_EXIT_FAIL;
	}
	off_t log_start = lseek(lfd, 0, SEEK_END);
	/* Double fork: the server's parent is gone before it starts, so nothing ties its
	 * life to this command.  nbdkit asks to die with its parent (PR_SET_PDEATHSIG), so
	 * the grandchild waits until the middle process has exited and it has been
	 * reparented before it runs nbdkit: a late exit of the middle process would kill
	 * the new server silently.  The pipe brings back its pid. */
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0) {
		cli_err("pipe: %s", strerror(errno));
		return TC_EXIT_FAIL;
	}
	pid_t mid = fork();
	if (mid < 0) {
		cli_err("fork: %s", strerror(errno));
		return TC_EXIT_FAIL;
	}
	if (mid == 0) {
		setsid();
		pid_t me = getpid();
		pid_t pid = fork();
		if (pid != 0) {
			ssize_t w = write(pp[1], &pid, sizeof(pid));
			_exit(w == sizeof(pid) ? 0 : 1);
		}
		/* Reparented once the middle process is gone (its exit sends the parent-death
		 * signals before the new parent shows; 10 s is far more than its exit takes). */
		for (int i = 0; getppid() == me && i < 10000; i++)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(lfd, 1);
		dup2(lfd, 2);
		execvp(nbdkit, av);
		fprintf(stderr, "tiercache serve: cannot run %s: %s (install nbdkit)\n", nbdkit,
			strerror(errno));
		_exit(127);
	}
	close(lfd);
	close(pp[1]);
	pid_t pid = -1;
	ssize_t got = read(pp[0], &pid, sizeof(pid));
	close(pp[0]);
	waitpid(mid, NULL, 0);
	if (got != sizeof(pid) || pid <= 0) {
		cli_err("could not start the server");
		return TC_EXIT_FAIL;
	}
	/* Ready when the control socket answers (the plugin opens it after assembly). */
	for (int waited = 0; waited < 600; waited++) {
		if (kill(pid, 0) < 0 && errno == ESRCH) {
			print_log(log, log_start);
			cli_err("the server did not start; its log: %s", log);
			return TC_EXIT_FAIL;
		}
		int fd = ctl_connect(control);
		if (fd >= 0) {
			close(fd);
			print_log_warnings(log, log_start);
			printf("serving on %s%s%s%s (pid %d); control %s; log %s",
			       sock ? "unix socket " : "", sock ? sock : host, sock ? "" : ":",
			       sock ? "" : port, (int)pid, control, log);
			if (http)
				printf("; http %s port %u", http_host, http_port);
			printf("\n");
			return TC_EXIT_OK;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	kill(pid, SIGTERM);
	cli_err("the server did not answer on %s within 60 s; stopped it; log: %s", control,
		log);
	return TC_EXIT_FAIL;
}
