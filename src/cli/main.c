/* SPDX-License-Identifier: MIT */
/*
 * main.c - the `tiercache` command: dispatch to a subcommand, and the helpers they
 * share (messages, option values, the log sink).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ctl.h"

const char *cli_cmd_name = "";

static const struct cli_cmd commands[] = {
	{ "create", cmd_create, "format a backing device (a volume) or a cache device" },
	{ "attach", cmd_attach, "attach a backing to a cache, live or offline" },
	{ "set", cmd_set, "change a volume's read cache, write policy, flush rate, admission" },
	{ "flush", cmd_flush, "write back every dirty byte of a volume" },
	{ "detach", cmd_detach, "drain a volume's dirty data and remove it from its cache" },
	{ "status", cmd_status, "state, policy, dirty bytes and writeback of every volume" },
	{ "stats", cmd_stats, "every engine counter of one volume" },
	{ "serve", cmd_serve, "assemble the volumes on the given devices and serve them over NBD" },
	{ "check", cmd_check, "verify superblocks and metadata, report damage" },
	{ "forget-cache", cmd_forget, "let a volume go on without a cache that is lost for good" },
	{ "bench", cmd_bench, "compare no cache, tiercache and nbdkit's cache filter with fio" },
	{ "replay", cmd_replay, "replay a real block trace through a cached volume" },
	{ "debug", cmd_debug, "test hooks of a --testing server: fail, heal, power-cut" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char main_help[] =
"Usage: tiercache COMMAND [OPTIONS] [ARGS]\n"
"       tiercache COMMAND --help\n"
"       tiercache --help | --version\n"
"\n"
"tiercache caches slow backing devices (HDDs, HDD arrays) on a fast cache device (an\n"
"SSD), with per-volume read caching and write policies, and serves each volume over\n"
"NBD.  Every setting and the whole layout live on the devices themselves.\n"
"\n"
"Commands:\n";

static const char main_help_tail[] =
"\n"
"Volume commands (set, flush, detach, status, stats, attach) talk to a running server\n"
"through its control socket (--control PATH, default " TC_CONTROL_DEFAULT ");\n"
"when no server answers they work offline on the devices given with --device PATH.\n"
"\n"
"Sizes accept the suffixes K, M, G, T (powers of 1024).\n"
"Exit status: 0 success, 1 the operation failed, 2 bad usage.\n";

static void print_main_help(FILE *f)
{
	fputs(main_help, f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
	fputs(main_help_tail, f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		print_main_help(stderr);
		return TC_EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
		if (argc > 2 && strcmp(name, "help") == 0) {
			/* `tiercache help CMD` is `tiercache CMD --help` */
			for (size_t i = 0; i < NCOMMANDS; i++)
				if (!strcmp(argv[2], commands[i].name)) {
					char *av[] = { (char *)commands[i].name, (char *)"--help", NULL };
					cli_cmd_name = commands[i].name;
					return commands[i].fn(2, av);
				}
		}
		print_main_help(stdout);
		return TC_EXIT_OK;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("tiercache %s\n", TC_VERSION);
		return TC_EXIT_OK;
	}
	opterr = 0;   /* one message per bad option: cli_bad_option()'s */
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(name, commands[i].name)) {
			cli_cmd_name = commands[i].name;
			return commands[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "tiercache: unknown command \"%s\"; `tiercache --help` lists them\n",
		name);
	return TC_EXIT_USAGE;
}

/* ---- shared helpers ------------------------------------------------------------- */

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
	char buf[2048];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "tiercache %s: %s%s\n", cli_cmd_name, kind, buf);
}

void cli_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("error: ", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

int cli_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try `tiercache %s --help`.\n", cli_cmd_name);
	return TC_EXIT_USAGE;
}

int cli_help(const char *text)
{
	fputs(text, stdout);
	return TC_EXIT_OK;
}

int cli_size(const char *opt, const char *arg, uint64_t *out)
{
	int r = tc_size_parse(arg, out);
	if (r == -ERANGE) {
		cli_usage("%s: size \"%s\" is too large", opt, arg);
		return -1;
	}
	if (r) {
		cli_usage("%s: \"%s\" is not a size (a number with an optional K, M, G or T)",
			  opt, arg);
		return -1;
	}
	return 0;
}

int cli_bad_option(char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	int n = (int)strcspn(arg, "=");
	if (optopt && !strncmp(arg, "--", 2) && !arg[n])
		return cli_usage("option %s needs a value", arg);
	if (optopt && arg[0] == '-' && arg[1] != '-')
		return cli_usage("unknown option -%c", optopt);
	return cli_usage("unknown option %.*s", n, arg);
}

int cli_uint(const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (!*arg || *end || errno || arg[0] == '-' || v < lo || v > hi) {
		cli_usage("%s: \"%s\" is not a whole number from %" PRIu64 " to %" PRIu64,
			  opt, arg, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

static void log_sink(void *opaque, enum tc_log_level level, const char *msg)
{
	(void)opaque;
	/* Errors of a volume operation become its result's message (ctl_execute()):
	 * printed once, there. */
	if (level == TC_LOG_ERROR && ctl_capture_log(msg))
		return;
	const char *kind = level == TC_LOG_ERROR ? "error: " :
			   level == TC_LOG_WARN ? "warning: " : "";
	fprintf(stderr, "tiercache %s: %s%s\n", cli_cmd_name, kind, msg);
}

tc_ctx *cli_ctx(bool verbose)
{
	struct tc_ctx_opts o = { .mode = TC_CTX_THREADED,
				 .log_level = verbose ? TC_LOG_INFO : TC_LOG_WARN };
	tc_ctx *ctx;
	int r = tc_ctx_new(&o, &ctx);
	if (r) {
		cli_err("cannot create a context: %s", strerror(-r));
		exit(TC_EXIT_FAIL);
	}
	tc_ctx_set_log(ctx, log_sink, NULL, o.log_level);
	return ctx;
}

const char *cli_human(uint64_t b, char *buf, size_t len)
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	unsigned i = 0;
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, u[i]);
	return buf;
}

bool cli_isatty_err(void)
{
	return isatty(STDERR_FILENO) == 1;
}

const char *cli_spec_file(const char *spec)
{
	if (!strncmp(spec, "crash:", 6))
		return spec + 6;
	if (!strncmp(spec, "emu:", 4) && strchr(spec + 4, ':'))
		return strchr(spec + 4, ':') + 1;
	return spec;
}

int cli_abs_spec(const char *spec, char *buf, size_t len)
{
	const char *path = cli_spec_file(spec);
	char abs[PATH_MAX];
	if (!realpath(path, abs)) {
		cli_err("device %s: %s", spec, strerror(errno));
		return -1;
	}
	int n = snprintf(buf, len, "%.*s%s", (int)(path - spec), spec, abs);
	if (n < 0 || (size_t)n >= len) {
		cli_err("device %s: path too long", spec);
		return -1;
	}
	return 0;
}

const char *cli_find_plugin(char *buf, size_t len)
{
	const char *env = getenv("TC_NBDKIT_PLUGIN");
	if (env && *env)
		return env;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			int w = snprintf(buf, len, "%.*s/../nbd/nbdkit-tiercache-plugin.so",
					 (int)(len - 40), exe);
			if (w > 0 && (size_t)w < len && access(buf, R_OK) == 0)
				return buf;
		}
	}
	return TC_PLUGIN_INSTALLED;
}
