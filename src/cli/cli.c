/* SPDX-License-Identifier: MIT */
/*
 * cli.c - what the subcommands of the `tiercache` command share (cli.h): messages,
 * option values, the log sink, sizes for people, device specs, control responses.
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
const char *cli_prog_name = "tiercache";

/* "tiercache CMD" (or the program's own name when another program uses these). */
static const char *who(char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", cli_prog_name, cli_cmd_name[0] ? " " : "", cli_cmd_name);
	return buf;
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
	char buf[2048];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	char w[128];
	fprintf(stderr, "%s: %s%s\n", who(w, sizeof(w)), kind, buf);
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
	char w[128];
	fprintf(stderr, "Try `%s --help`.\n", who(w, sizeof(w)));
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
	char w[128];
	fprintf(stderr, "%s: %s%s\n", who(w, sizeof(w)), kind, msg);
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

bool cli_isatty_err(void)
{
	return isatty(STDERR_FILENO) == 1;
}

/* @spec's file made absolute (realpath when it exists; else, with @missing_ok, by the
 * current folder), into @buf. */
static int abs_spec(const char *spec, bool missing_ok, char *buf, size_t len)
{
	const char *path = tc_dev_spec_path(spec);
	char abs[PATH_MAX], cwd[PATH_MAX];
	int n;
	if (!path) {
		n = snprintf(buf, len, "%s", spec);   /* remote: no file to resolve */
	} else if (realpath(path, abs)) {
		n = snprintf(buf, len, "%.*s%s", (int)(path - spec), spec, abs);
	} else if (!missing_ok || errno != ENOENT) {
		cli_err("device %s: %s", spec, strerror(errno));
		return -1;
	} else if (path[0] == '/') {
		n = snprintf(buf, len, "%s", spec);
	} else if (getcwd(cwd, sizeof(cwd))) {
		n = snprintf(buf, len, "%.*s%s/%s", (int)(path - spec), spec, cwd, path);
	} else {
		cli_err("device %s: the current folder: %s", spec, strerror(errno));
		return -1;
	}
	if (n < 0 || (size_t)n >= len) {
		cli_err("device %s: path too long", spec);
		return -1;
	}
	return 0;
}

/* "array:M1,M2,...": every member made absolute, the legs of a RAID 50 / 60
 * ("[array:...]") in turn. */
static int abs_array_spec(const char *spec, bool missing_ok, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "array:");
	char *m = malloc(strlen(spec) + 1);
	int r = m ? 0 : -1;
	for (unsigned i = 0; !r; i++) {
		int kind = tc_array_spec_member(spec + 6, i, m, strlen(spec) + 1);
		if (kind == -ENOENT)
			break;
		char one[PATH_MAX];
		if (kind < 0) {
			cli_err("device %s: an empty member, or brackets that do not pair", spec);
			r = -1;
		} else if (kind == 1 && (strncmp(m, "array:", 6) || strchr(m, '['))) {
			cli_err("device %s: \"%s\": %s", spec, m, strchr(m, '[') ?
				"a leg's members are devices, not arrays (one level of brackets)" :
				"only an array spec goes in brackets");
			r = -1;
		} else {
			r = kind == 1 ? abs_array_spec(m, missing_ok, one, sizeof(one))
				: abs_spec(m, missing_ok, one, sizeof(one));
		}
		if (r)
			break;
		int n = snprintf(buf + used, len - used, "%s%s%s%s", used > 6 ? "," : "",
				 kind == 1 ? "[" : "", one, kind == 1 ? "]" : "");
		if (n < 0 || (size_t)n >= len - used) {
			cli_err("device %s: spec too long", spec);
			r = -1;
			break;
		}
		used += (size_t)n;
	}
	free(m);
	return r;
}

int cli_abs_spec(const char *spec, char *buf, size_t len)
{
	if (!strncmp(spec, "array:", 6))
		return abs_array_spec(spec, false, buf, len);
	return abs_spec(spec, false, buf, len);
}

int cli_abs_spec_named(const char *spec, char *buf, size_t len)
{
	if (!strncmp(spec, "array:", 6))
		return abs_array_spec(spec, true, buf, len);
	return abs_spec(spec, true, buf, len);
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

json_object *cli_result(json_object *resp)
{
	json_object *jok, *jr, *je, *jn;
	if (json_object_object_get_ex(resp, "ok", &jok) && json_object_get_boolean(jok) &&
	    json_object_object_get_ex(resp, "result", &jr))
		return jr;
	int e = json_object_object_get_ex(resp, "errno", &jn) ? json_object_get_int(jn) : EIO;
	cli_err("%s", json_object_object_get_ex(resp, "error", &je) ?
		json_object_get_string(je) : strerror(e));
	return NULL;
}

int cli_result_errno(json_object *resp)
{
	json_object *jn;
	return json_object_object_get_ex(resp, "errno", &jn) ? json_object_get_int(jn) : EIO;
}

const char *cli_jstr(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : "-";
}

uint64_t cli_ju64(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;
}
