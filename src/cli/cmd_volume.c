/* SPDX-License-Identifier: MIT */
/*
 * cmd_volume.c - the volume commands: attach, set, flush, detach, status, stats.
 *
 * Each builds one control request (ctl.h).  A running server gets it on its control
 * socket; when none answers, the command assembles the devices named by --device
 * itself (taking their locks, as a server does) and runs the very same request
 * offline.  Output is the same both ways.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "ctl.h"

#define COMMON_HELP \
"COMMON OPTIONS\n" \
"    --control PATH   control socket of a running server (default\n" \
"                     " TC_CONTROL_DEFAULT ")\n" \
"    --device PATH    repeatable: when no server answers, work offline on these\n" \
"                     devices (every cache and backing the volume needs); their locks\n" \
"                     are taken, so a device a server holds cannot be used offline\n" \
"    --json           print the result as JSON\n" \
"    --help           this text\n" \
"\n" \
"EXIT STATUS\n" \
"    0 done, 1 the operation failed or was interrupted (the volume is as it was),\n" \
"    2 bad usage.\n"

#define SETTINGS_HELP \
"    --read-cache on|off          read misses fill the cache (on) or not\n" \
"    --write-policy wt|wb|wa|pt   write-through, write-back, write-around, pass-through;\n" \
"                                 leaving wb first drains the dirty data (with progress)\n" \
"    --flush-rate low|medium|high writeback rate: low 16 MiB/s after 1 s idle; medium\n" \
"                                 64 MiB/s after 100 ms idle, 16 MiB/s under load; high\n" \
"                                 unlimited\n"

static const char help_attach[] =
"NAME\n"
"    tiercache attach - attach a backing to a cache, live or offline\n"
"\n"
"SYNOPSIS\n"
"    tiercache attach --cache DEVICE --backing DEVICE [--read-cache on|off]\n"
"                     [--write-policy wt|wb|wa|pt] [--flush-rate low|medium|high]\n"
"                     [--admission always|nhit:N] [--seq-cutoff SIZE]\n"
"                     [--fill line|sectors] [--discard-dirty]\n"
"                     [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    Brings the volume on the backing DEVICE online through the cache DEVICE.  A\n"
"    backing never attached becomes a new volume of the cache; one attached before\n"
"    gets its cached lines back.  Several backings may attach to one cache.  With a\n"
"    server running, the volume is served through the cache at once (a volume the\n"
"    server serves uncached is switched over between two requests).\n"
"\n"
"    A backing written without the cache while the cache holds dirty data for it is\n"
"    refused (the cache's copy and the backing disagree); --discard-dirty drops the\n"
"    cache's dirty lines for it instead.  A backing attached to another cache is\n"
"    refused, and so is a --cache DEVICE that is a backing or a --backing DEVICE that\n"
"    is a cache (the two swapped).\n"
"\n"
"    A backing already attached to this cache (its superblock names the cache) is\n"
"    answered \"already attached; nothing changed\" with exit status 0, live and\n"
"    offline alike; with settings options it is refused (exit status 1): change the\n"
"    settings of an attached volume with `tiercache set`.\n"
"\n"
"OPTIONS\n"
SETTINGS_HELP
"    --admission, --seq-cutoff, --fill   as in `tiercache set --help`\n"
"    --discard-dirty              see above\n"
"\n"
COMMON_HELP;

static const char help_set[] =
"NAME\n"
"    tiercache set - change a volume's settings, live, without data loss\n"
"\n"
"SYNOPSIS\n"
"    tiercache set VOLUME [--read-cache on|off] [--write-policy wt|wb|wa|pt]\n"
"                  [--flush-rate low|medium|high] [--admission always|nhit:N]\n"
"                  [--seq-cutoff SIZE] [--fill line|sectors]\n"
"                  [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    Changes the settings of VOLUME while it serves I/O and stores them on the cache\n"
"    and backing devices, so they survive restarts.  Leaving write-back drains the\n"
"    volume's dirty data first (new writes go write-through meanwhile); an\n"
"    interrupted drain (Ctrl-C) leaves the volume as it was.  Prints the settings.\n"
"\n"
"OPTIONS\n"
SETTINGS_HELP
"    --admission always|nhit:N    fill a line on every read miss, or on the Nth access\n"
"                                 (1..255) within the recent history\n"
"    --seq-cutoff SIZE            a sequential stream this long bypasses the cache; 0\n"
"                                 turns detection off (default 4M, at least 4K)\n"
"    --fill line|sectors          a read miss fills the whole line, or only what was\n"
"                                 read\n"
"\n"
COMMON_HELP;

static const char help_flush[] =
"NAME\n"
"    tiercache flush - write back every dirty byte of a volume\n"
"\n"
"SYNOPSIS\n"
"    tiercache flush VOLUME [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    Writes the volume's dirty data back to its backing, at full speed, with progress\n"
"    on a terminal, then commits the metadata.  Writes meanwhile go write-through, so\n"
"    the flush always ends; the write policy stays as it is afterwards.  Ctrl-C stops\n"
"    it without harm.  A volume served uncached has nothing to flush: its backing\n"
"    gets a FLUSH and the command succeeds.\n"
"\n"
COMMON_HELP;

static const char help_detach[] =
"NAME\n"
"    tiercache detach - drain a volume's dirty data and remove it from its cache\n"
"\n"
"SYNOPSIS\n"
"    tiercache detach VOLUME [--discard-dirty]\n"
"                     [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    Writes back every dirty byte (with progress), then removes the volume from its\n"
"    cache and the cache link from the backing.  With a server running the volume\n"
"    goes on being served, uncached.  Ctrl-C during the drain stops it without harm:\n"
"    the volume stays attached, its dirty data intact.\n"
"\n"
"OPTIONS\n"
"    --discard-dirty   do not write back: the dirty data is lost, and the backing\n"
"                      keeps older data for those blocks\n"
"\n"
COMMON_HELP;

static const char help_status[] =
"NAME\n"
"    tiercache status - state, policy, dirty bytes and writeback of every volume\n"
"\n"
"SYNOPSIS\n"
"    tiercache status [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    One line per volume: state (cached; uncached: no cache; degraded: its cache is\n"
"    missing or failed; no-backing: a cache holds the volume but its backing device\n"
"    is not among the devices, so only what the cache knows is shown), write policy,\n"
"    read cache, flush rate, dirty bytes, writeback rate over the last second,\n"
"    fallback (pass-through after cache-device errors), and the cache; then one line\n"
"    per cache.  Given only a cache with --device, every volume it holds is listed,\n"
"    with the dirty bytes it keeps for each.\n"
"\n"
"JSON\n"
"    {\"volumes\": [{\"name\", \"size\", \"state\", \"backing\", \"cache\", \"settings\",\n"
"    \"dirty_bytes\", \"cached_bytes\", \"writeback_rate\", \"fallback\", \"draining\"}],\n"
"    (no-backing volumes: \"backing\" null and \"backing_uuid\"),\n"
"    \"caches\": [{\"device\", \"line_size\", \"lines\", \"lines_used\", \"lines_dirty\",\n"
"    \"dirty_bytes\"}]}; sizes in bytes, rates in bytes per second.\n"
"\n"
COMMON_HELP;

static const char help_stats[] =
"NAME\n"
"    tiercache stats - every engine counter of one volume\n"
"\n"
"SYNOPSIS\n"
"    tiercache stats VOLUME [--reset] [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    Prints the volume's counters: hits, partial hits and misses per cache line for\n"
"    reads and writes, client requests and bytes, promotions, evictions, sequential\n"
"    and admission bypasses, dirty and cached bytes, writeback bytes, I/Os and rate,\n"
"    errors, the backing device's own counters, the volume's traffic on the cache\n"
"    device (cache_device: bytes read and written, the writes split into fills of\n"
"    read misses and client writes, the reads into the cleaner's and client reads),\n"
"    and the cache device as a whole (cache: every volume's traffic, the cleaner's\n"
"    and the metadata commits: its wear).  Keys are snake_case; bytes are\n"
"    in bytes.  --reset zeroes the counters after printing them.  A volume whose\n"
"    backing is not among the devices (offline, --device CACHE alone) has no request\n"
"    counters: what its cache holds is printed (size, settings, dirty and cached\n"
"    bytes) with a note saying so; a volume served uncached, its state and backing\n"
"    with a note.\n"
"\n"
COMMON_HELP;

enum { O_CONTROL = 256, O_DEVICE, O_JSON, O_HELP, O_RC, O_WP, O_FR, O_ADM, O_SEQ, O_FILL,
       O_CACHE, O_BACKING, O_DISCARD, O_RESET };

static const struct option options[] = {
	{ "control", required_argument, NULL, O_CONTROL },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
	{ "read-cache", required_argument, NULL, O_RC },
	{ "write-policy", required_argument, NULL, O_WP },
	{ "flush-rate", required_argument, NULL, O_FR },
	{ "admission", required_argument, NULL, O_ADM },
	{ "seq-cutoff", required_argument, NULL, O_SEQ },
	{ "fill", required_argument, NULL, O_FILL },
	{ "cache", required_argument, NULL, O_CACHE },
	{ "backing", required_argument, NULL, O_BACKING },
	{ "discard-dirty", no_argument, NULL, O_DISCARD },
	{ "reset", no_argument, NULL, O_RESET },
	{ NULL, 0, NULL, 0 },
};

struct vopts {
	const char *control;
	const char **devices;
	int ndevices;
	bool json;
	json_object *settings;     /* only the keys given */
	const char *cache, *backing;
	const char *volume;
	bool discard, reset;
};

static volatile sig_atomic_t interrupted;
static volatile sig_atomic_t server_fd = -1;

/* Ctrl-C: offline, the progress callback sees the flag; with a server, half-closing
 * the connection tells the server to stop the operation, and its answer (interrupted,
 * or done if it finished first) is what the command reports. */
static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
	if (server_fd >= 0)
		shutdown(server_fd, SHUT_WR);
}

static int show_progress(void *opaque, uint64_t left, uint64_t start)
{
	const char *what = opaque;
	if (cli_isatty_err()) {
		char a[32], b[32];
		unsigned pct = start ? (unsigned)(100 - left * 100 / start) : 100;
		fprintf(stderr, "\r%s: %3u%%  %s of %s dirty left   ", what, pct,
			tc_size_format(left, a, sizeof(a)), tc_size_format(start, b, sizeof(b)));
	}
	return interrupted;
}

/* Parse the options every volume command shares, plus the settings ones (@settings:
 * allowed).  Returns -1 after printing help, a usage exit code, or 0. */
/* Options beyond the common ones that a command takes (parse()'s @extra). */
#define X_SETTINGS 0x1u
#define X_ATTACH 0x2u      /* --cache, --backing */
#define X_DISCARD 0x4u
#define X_RESET 0x8u

static int parse(int argc, char **argv, struct vopts *o, const char *help, unsigned extra)
{
	memset(o, 0, sizeof(*o));
	o->control = TC_CONTROL_DEFAULT;
	o->devices = calloc((size_t)argc + 1, sizeof(char *));
	o->settings = json_object_new_object();
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		int v;
		uint64_t n;
		if (c >= O_RC && c <= O_FILL && !(extra & X_SETTINGS))
			return cli_usage("%s does not take settings options (see `tiercache set`)",
					 cli_cmd_name);
		if (((c == O_CACHE || c == O_BACKING) && !(extra & X_ATTACH)) ||
		    (c == O_DISCARD && !(extra & X_DISCARD)) || (c == O_RESET && !(extra & X_RESET)))
			return cli_usage("%s does not take --%s", cli_cmd_name,
					 c == O_CACHE ? "cache" : c == O_BACKING ? "backing" :
					 c == O_DISCARD ? "discard-dirty" : "reset");
		switch (c) {
		case O_CONTROL: o->control = optarg; break;
		case O_DEVICE: o->devices[o->ndevices++] = optarg; break;
		case O_JSON: o->json = true; break;
		case 'h':
		case O_HELP: cli_help(help); return -1;
		case O_RC:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return cli_usage("--read-cache: \"%s\" is not on or off", optarg);
			json_object_object_add(o->settings, "read_cache",
					       json_object_new_boolean(!strcmp(optarg, "on")));
			break;
		case O_WP:
			if ((v = tc_write_policy_parse(optarg)) < 0)
				return cli_usage("--write-policy: \"%s\" is not wt, wb, wa or pt",
						 optarg);
			json_object_object_add(o->settings, "write_policy",
					       json_object_new_string(tc_write_policy_name((unsigned)v)));
			break;
		case O_FR:
			if ((v = tc_flush_rate_parse(optarg)) < 0)
				return cli_usage("--flush-rate: \"%s\" is not low, medium or high",
						 optarg);
			json_object_object_add(o->settings, "flush_rate",
					       json_object_new_string(tc_flush_rate_name((unsigned)v)));
			break;
		case O_ADM:
			if (tc_admission_parse(optarg) == TC_ADMIT_ALWAYS) {
				json_object_object_add(o->settings, "admission",
						       json_object_new_string(optarg));
			} else if (!strncmp(optarg, "nhit:", 5)) {
				if (cli_uint("--admission nhit:N", optarg + 5, 1, 255, &n))
					return TC_EXIT_USAGE;
				json_object_object_add(o->settings, "admission",
						       json_object_new_string("nhit"));
				json_object_object_add(o->settings, "nhit",
						       json_object_new_uint64(n));
			} else {
				return cli_usage("--admission: \"%s\" is not always or nhit:N",
						 optarg);
			}
			break;
		case O_SEQ:
			if (cli_size("--seq-cutoff", optarg, &n))
				return TC_EXIT_USAGE;
			if (n && n < CTL_SEQ_CUTOFF_MIN)
				return cli_usage("--seq-cutoff: \"%s\" (%" PRIu64 " bytes) is below the "
						 "minimum, 4K (%u bytes: the smallest cache line); 0 "
						 "turns detection off", optarg, n, CTL_SEQ_CUTOFF_MIN);
			json_object_object_add(o->settings, "seq_cutoff", json_object_new_uint64(n));
			break;
		case O_FILL:
			if (tc_fill_parse(optarg) < 0)
				return cli_usage("--fill: \"%s\" is not line or sectors", optarg);
			json_object_object_add(o->settings, "fill", json_object_new_string(optarg));
			break;
		case O_CACHE: o->cache = optarg; break;
		case O_BACKING: o->backing = optarg; break;
		case O_DISCARD: o->discard = true; break;
		case O_RESET: o->reset = true; break;
		default: return cli_bad_option(argv);
		}
	}
	return 0;
}

static void vopts_free(struct vopts *o)
{
	free(o->devices);
	json_object_put(o->settings);
}

/* Run @req on a server, or offline.  Returns the final response, or NULL after a
 * message. */
static json_object *run(struct vopts *o, json_object *req, const char *what)
{
	int fd = ctl_connect(o->control);
	json_object *resp = NULL;
	if (fd >= 0) {
		int err;
		struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
		server_fd = fd;
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		resp = ctl_call(fd, req, show_progress, (void *)what, &err);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		server_fd = -1;
		close(fd);
		if (!resp)
			cli_err("control socket %s: %s", o->control, err == -EPROTO ?
				"the server's answer is not the control protocol" : strerror(-err));
		return resp;
	}
	if (fd != -ENOENT && fd != -ECONNREFUSED) {
		cli_err("control socket %s: %s", o->control, strerror(-fd));
		return NULL;
	}
	if (!o->ndevices) {
		cli_err("no server answers on %s; give the devices with --device PATH to work "
			"offline", o->control);
		return NULL;
	}
	tc_ctx *ctx = cli_ctx(false);
	tc_host *host;
	struct tc_host_opts ho = { .dev_flags = TC_DEV_EXCLUSIVE };
	int r = tc_host_assemble(ctx, o->devices, (unsigned)o->ndevices, &ho, &host);
	if (r) {
		if (r == -EBUSY)
			cli_err("no server answers on %s, yet a device is locked: another "
				"tiercache process (a server with another --control path?) holds "
				"it", o->control);
		tc_ctx_free(ctx);
		return NULL;
	}
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	resp = ctl_execute(host, req, show_progress, (void *)what);
	r = tc_host_close(host);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	tc_ctx_free(ctx);
	if (r && resp) {
		json_object *jok;
		if (json_object_object_get_ex(resp, "ok", &jok) && json_object_get_boolean(jok)) {
			json_object_put(resp);
			resp = ctl_error(-r, "closing the devices failed after the operation");
		}
	}
	return resp;
}

/* Print the error of a failed response; returns the result object of a good one. */
static json_object *result_of(json_object *resp)
{
	if (cli_isatty_err())
		fputs("\r\033[K", stderr);
	json_object *jr = cli_result(resp);
	if (!jr && cli_result_errno(resp) == EINTR)
		cli_err("interrupted: nothing was lost, the volume is as it was");
	return jr;
}

static void print_settings(const char *vol, json_object *s)
{
	json_object *rc;
	json_object_object_get_ex(s, "read_cache", &rc);
	char hb[32];
	printf("volume \"%s\": read cache %s, write policy %s, flush rate %s, admission %s",
	       vol, json_object_get_boolean(rc) ? "on" : "off", cli_jstr(s, "write_policy"),
	       cli_jstr(s, "flush_rate"), cli_jstr(s, "admission"));
	if (!strcmp(cli_jstr(s, "admission"), "nhit"))
		printf(":%" PRIu64, cli_ju64(s, "nhit"));
	printf(", fill %s, seq cutoff %s\n", cli_jstr(s, "fill"),
	       tc_size_format(cli_ju64(s, "seq_cutoff"), hb, sizeof(hb)));
}

static void print_json(json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Finish a command: print the result with @print (or as JSON); exit code. */
static int finish(struct vopts *o, json_object *req, const char *what,
		  void (*print)(json_object *result, struct vopts *o))
{
	json_object *resp = run(o, req, what);
	json_object_put(req);
	json_object *res = resp ? result_of(resp) : NULL;
	int rc = res ? TC_EXIT_OK : TC_EXIT_FAIL;
	if (res) {
		if (o->json)
			print_json(res);
		else
			print(res, o);
	}
	json_object_put(resp);
	vopts_free(o);
	return rc;
}

/* A table whose column widths come from its content: cells are copied in, then
 * printed with each column as wide as its widest cell (right-aligned columns: @right,
 * a bit per column). */
#define TABLE_COLS 10
struct table {
	unsigned ncols, nrows, right;
	char *(*cells)[TABLE_COLS];
	int width[TABLE_COLS];
};

static void table_row(struct table *t, const char *const *cells)
{
	void *nc = realloc(t->cells, (t->nrows + 1) * sizeof(*t->cells));
	if (!nc)
		return;
	t->cells = nc;
	for (unsigned i = 0; i < t->ncols; i++) {
		t->cells[t->nrows][i] = strdup(cells[i] ? cells[i] : "-");
		int w = t->cells[t->nrows][i] ? (int)strlen(t->cells[t->nrows][i]) : 0;
		if (w > t->width[i])
			t->width[i] = w;
	}
	t->nrows++;
}

static void table_print(struct table *t)
{
	for (unsigned r = 0; r < t->nrows; r++) {
		for (unsigned i = 0; i < t->ncols; i++) {
			const char *c = t->cells[r][i] ? t->cells[r][i] : "";
			bool last = i + 1 == t->ncols;
			if (t->right & (1u << i))
				printf("%*s", t->width[i], c);
			else
				printf("%-*s", last ? 0 : t->width[i], c);
			fputs(last ? "\n" : "  ", stdout);
			free(t->cells[r][i]);
		}
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
}

static void status_volume_row(struct table *t, json_object *v)
{
	char a[32], b[32], c[32], rate[40];
	json_object *s, *fb;
	bool has = json_object_object_get_ex(v, "settings", &s) && s;
	json_object_object_get_ex(v, "fallback", &fb);
	json_object *rc = NULL;
	if (has)
		json_object_object_get_ex(s, "read_cache", &rc);
	bool absent = !strcmp(cli_jstr(v, "state"), "no-backing");
	snprintf(rate, sizeof(rate), "%s/s",
		 tc_size_format(cli_ju64(v, "writeback_rate"), c, sizeof(c)));
	const char *row[] = {
		cli_jstr(v, "name"), tc_size_format(cli_ju64(v, "size"), a, sizeof(a)),
		cli_jstr(v, "state"),
		has ? cli_jstr(s, "write_policy") : "-",
		has ? (json_object_get_boolean(rc) ? "on" : "off") : "-",
		has ? cli_jstr(s, "flush_rate") : "-",
		tc_size_format(cli_ju64(v, "dirty_bytes"), b, sizeof(b)),
		has && !absent ? rate : "-", json_object_get_boolean(fb) ? "yes" : "no",
		cli_jstr(v, "cache"),
	};
	table_row(t, row);
}

static void print_status(json_object *res, struct vopts *o)
{
	json_object *vols, *caches;
	json_object_object_get_ex(res, "volumes", &vols);
	json_object_object_get_ex(res, "caches", &caches);
	struct table t = { .ncols = 10, .right = 1u << 1 | 1u << 6 | 1u << 7 };
	table_row(&t, (const char *[]){ "VOLUME", "SIZE", "STATE", "POLICY", "READ", "FLUSH",
					"DIRTY", "WRITEBACK", "FALLBACK", "CACHE" });
	bool absent = false;
	for (size_t i = 0; i < json_object_array_length(vols); i++) {
		json_object *v = json_object_array_get_idx(vols, i);
		status_volume_row(&t, v);
		absent |= !strcmp(cli_jstr(v, "state"), "no-backing");
	}
	table_print(&t);
	if (absent)
		printf("(no-backing: the cache holds the volume, but its backing device is not "
		       "present; give it with --device, or serve it)\n");
	if (!json_object_array_length(caches))
		return;
	struct table ct = { .ncols = 6, .right = 0x3eu };
	table_row(&ct, (const char *[]){ "CACHE", "LINE", "LINES", "USED", "DIRTY LINES",
					 "DIRTY" });
	for (size_t i = 0; i < json_object_array_length(caches); i++) {
		json_object *c = json_object_array_get_idx(caches, i);
		char a[32], b[32], n1[24], n2[24], n3[24];
		snprintf(n1, sizeof(n1), "%" PRIu64, cli_ju64(c, "lines"));
		snprintf(n2, sizeof(n2), "%" PRIu64, cli_ju64(c, "lines_used"));
		snprintf(n3, sizeof(n3), "%" PRIu64, cli_ju64(c, "lines_dirty"));
		table_row(&ct, (const char *[]){ cli_jstr(c, "device"),
			tc_size_format(cli_ju64(c, "line_size"), a, sizeof(a)), n1, n2, n3,
			tc_size_format(cli_ju64(c, "dirty_bytes"), b, sizeof(b)) });
	}
	printf("\n");
	table_print(&ct);
}

/* stats: "key: value" lines, nested objects prefixed. */
static void print_flat(json_object *o, const char *prefix)
{
	json_object_object_foreach(o, key, val) {
		if (json_object_is_type(val, json_type_object)) {
			char p[128];
			snprintf(p, sizeof(p), "%s%s.", prefix, key);
			print_flat(val, p);
		} else {
			printf("%s%s: %s\n", prefix, key,
			       json_object_to_json_string_ext(val, JSON_C_TO_STRING_NOSLASHESCAPE));
		}
	}
}

static void print_stats(json_object *res, struct vopts *o)
{
	print_flat(res, "");
}

static void print_set(json_object *res, struct vopts *o)
{
	print_settings(o->volume, res);
}

static void print_flush(json_object *res, struct vopts *o)
{
	char a[32];
	json_object *st;
	if (json_object_object_get_ex(res, "state", &st)) {
		printf("volume \"%s\": served %s, without a cache: nothing to flush (its backing "
		       "was flushed)\n", o->volume, json_object_get_string(st));
		return;
	}
	printf("flushed %s; dirty now %" PRIu64 " bytes\n",
	       tc_size_format(cli_ju64(res, "dirty_bytes_before"), a, sizeof(a)),
	       cli_ju64(res, "dirty_bytes"));
}

static void print_detach(json_object *res, struct vopts *o)
{
	char a[32];
	printf("volume \"%s\": detached from its cache%s", cli_jstr(res, "name"),
	       o->ndevices ? "" : "");
	if (cli_ju64(res, "dirty_bytes_discarded"))
		printf(", %s of dirty data discarded",
		       tc_size_format(cli_ju64(res, "dirty_bytes_discarded"), a, sizeof(a)));
	printf("\n");
}

static void print_attach(json_object *res, struct vopts *o)
{
	json_object *aa;
	if (json_object_object_get_ex(res, "already_attached", &aa) &&
	    json_object_get_boolean(aa)) {
		printf("volume \"%s\": already attached to cache %s; nothing changed\n",
		       cli_jstr(res, "name"), cli_jstr(res, "cache"));
		return;
	}
	printf("volume \"%s\": attached to cache %s\n", cli_jstr(res, "name"),
	       cli_jstr(res, "cache"));
	json_object *s;
	if (json_object_object_get_ex(res, "settings", &s) && s)
		print_settings(cli_jstr(res, "name"), s);
}

/* VOLUME, the one operand of set/flush/detach/stats. */
static const char *operand(int argc, char **argv)
{
	if (argc - optind != 1) {
		cli_usage("expected one VOLUME name");
		return NULL;
	}
	return argv[optind];
}

static json_object *request(const char *op, const char *vol)
{
	json_object *r = json_object_new_object();
	json_object_object_add(r, "op", json_object_new_string(op));
	if (vol)
		json_object_object_add(r, "volume", json_object_new_string(vol));
	return r;
}

int cmd_set(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_set, X_SETTINGS);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	if (!json_object_object_length(o.settings)) {
		vopts_free(&o);
		return cli_usage("nothing to set: give at least one setting option");
	}
	o.volume = vol;
	json_object *req = request("set", vol);
	json_object_object_add(req, "settings", json_object_get(o.settings));
	char what[64];
	snprintf(what, sizeof(what), "draining volume \"%s\"", vol);
	return finish(&o, req, what, print_set);
}

int cmd_flush(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_flush, 0);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	o.volume = vol;
	char what[64];
	snprintf(what, sizeof(what), "flushing volume \"%s\"", vol);
	return finish(&o, request("flush", vol), what, print_flush);
}

int cmd_detach(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_detach, X_DISCARD);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	json_object *req = request("detach", vol);
	if (o.discard)
		json_object_object_add(req, "discard_dirty", json_object_new_boolean(1));
	char what[64];
	snprintf(what, sizeof(what), "draining volume \"%s\"", vol);
	return finish(&o, req, what, print_detach);
}

int cmd_stats(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_stats, X_RESET);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	json_object *req = request("stats", vol);
	if (o.reset)
		json_object_object_add(req, "reset", json_object_new_boolean(1));
	return finish(&o, req, "stats", print_stats);
}

int cmd_status(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_status, 0);
	if (r || optind != argc) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : r ? r : cli_usage("status takes no operands");
	}
	return finish(&o, request("status", NULL), "status", print_status);
}

static void quiet_log(void *opaque, enum tc_log_level level, const char *msg)
{
	(void)opaque;
	(void)level;
	(void)msg;
}

/* What @spec holds (read-only, without its lock: a server may hold it), or -1 when it
 * cannot be read (the attach itself then says why). */
static int probe_kind(tc_ctx *ctx, const char *spec, struct tc_probe *p)
{
	tc_dev *d;
	if (tc_dev_open_spec(ctx, spec, TC_DEV_READONLY | TC_DEV_BUFFERED, 0, 0, &d))
		return -1;
	int r = tc_dev_probe(ctx, d, p);
	tc_dev_close(d);
	return r ? -1 : (int)p->kind;
}

/* --cache must name a cache and --backing a backing: the two swapped (or one of them
 * wrong) is said as such, before anything is opened for writing. */
static bool attach_kinds_ok(const char *cache, const char *backing)
{
	tc_ctx *ctx = cli_ctx(false);
	tc_ctx_set_log(ctx, quiet_log, NULL, TC_LOG_ERROR);   /* probe quietly */
	struct tc_probe pc, pb;
	int kc = probe_kind(ctx, cache, &pc), kb = probe_kind(ctx, backing, &pb);
	tc_ctx_free(ctx);
	bool ok = true;
	if (kc == TC_PROBE_BACKING) {
		cli_err("--cache %s is a backing (of volume \"%s\"), not a cache%s", cache, pc.name,
			kb == TC_PROBE_CACHE ? "; --cache and --backing are swapped" : "");
		ok = false;
	}
	if (kb == TC_PROBE_CACHE && !(kc == TC_PROBE_BACKING)) {
		cli_err("--backing %s is a cache, not a backing", backing);
		ok = false;
	}
	return ok;
}

int cmd_attach(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_attach, X_SETTINGS | X_ATTACH | X_DISCARD);
	if (r || optind != argc || !o.cache || !o.backing) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : r ? r :
		       cli_usage("attach needs --cache DEVICE and --backing DEVICE, no operands");
	}
	if (!attach_kinds_ok(o.cache, o.backing)) {
		vopts_free(&o);
		return TC_EXIT_FAIL;
	}
	json_object *req = request("attach", NULL);
	/* The server runs in another folder: absolute paths. */
	char cabs[PATH_MAX], babs[PATH_MAX];
	if (cli_abs_spec(o.cache, cabs, sizeof(cabs)) ||
	    cli_abs_spec(o.backing, babs, sizeof(babs))) {
		json_object_put(req);
		vopts_free(&o);
		return TC_EXIT_FAIL;
	}
	json_object_object_add(req, "cache", json_object_new_string(cabs));
	json_object_object_add(req, "backing", json_object_new_string(babs));
	if (json_object_object_length(o.settings))
		json_object_object_add(req, "settings", json_object_get(o.settings));
	if (o.discard)
		json_object_object_add(req, "discard_dirty", json_object_new_boolean(1));
	/* Offline, the cache is one of the devices to assemble (the backing is opened
	 * by the attach itself). */
	bool have = false;
	for (int i = 0; i < o.ndevices; i++)
		have |= !strcmp(o.devices[i], o.cache);
	if (!have)
		o.devices[o.ndevices++] = o.cache;
	return finish(&o, req, "attach", print_attach);
}
