/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what the subcommands of the `tiercache` command share.
 *
 * Each subcommand lives in its own file (cmd_NAME.c) as `int cmd_NAME(int argc, char
 * **argv)`, with argv[0] the subcommand's name, and returns the process exit code:
 * TC_EXIT_OK, TC_EXIT_FAIL (the operation failed), TC_EXIT_USAGE (bad usage).  Option
 * parsing is getopt_long; every subcommand answers --help with its manual page text.
 * Messages go to stderr as "tiercache NAME: ...", results to stdout (a table, or
 * JSON with --json).
 */
#ifndef TC_CLI_H
#define TC_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>
#include "tiercache.h"

#define TC_EXIT_OK 0
#define TC_EXIT_FAIL 1
#define TC_EXIT_USAGE 2

/* The default control socket of a running `tiercache serve`. */
#define TC_CONTROL_DEFAULT "/run/tiercache/control.sock"

struct cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;       /* one line for `tiercache --help` */
};

int cmd_create(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_set_cache(int argc, char **argv);
int cmd_flush(int argc, char **argv);
int cmd_invalidate(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_forget(int argc, char **argv);
int cmd_debug(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_array(int argc, char **argv);
/* cmd_create_array - `tiercache create array ...` (argv[0] "array"), with create's
 * manual @help for --help. */
int cmd_create_array(int argc, char **argv, const char *help);

/* The name of the running subcommand ("create", ...), for messages. */
extern const char *cli_cmd_name;
/* The program messages name first: "tiercache" (tc-bench-nbd, which shares these
 * helpers, sets its own). */
extern const char *cli_prog_name;

/* cli_err - "tiercache CMD: error: ..." on stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_warn - "tiercache CMD: warning: ..." on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_usage - a bad-usage message plus a pointer to --help; returns TC_EXIT_USAGE. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cli_bad_option - after getopt_long() returned '?': one usage message naming the
 * option (unknown, or missing its argument); returns TC_EXIT_USAGE.  getopt's own
 * message is off (opterr = 0, set by main). */
int cli_bad_option(char **argv);
/* cli_help - print @text (a subcommand's manual) to stdout; returns TC_EXIT_OK. */
int cli_help(const char *text);

/* cli_size - parse a size option (K/M/G/T suffixes) named @opt ("--line-size").
 * Returns 0, or prints a usage message naming the option and value and returns -1. */
int cli_size(const char *opt, const char *arg, uint64_t *out);
/* cli_uint - parse an unsigned decimal option in [lo, hi], same contract. */
int cli_uint(const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out);

/* cli_ctx - a threaded context whose log sink prints "tiercache CMD: ..." to stderr
 * (errors and warnings; info too with @verbose).  Exits with TC_EXIT_FAIL on failure. */
tc_ctx *cli_ctx(bool verbose);

/* cli_abs_spec - @spec ("PATH", "crash:PATH", "emu:PROFILE:PATH"; "array:M1,M2,..."
 * member by member) with its path made absolute, into @buf (a remote spec, "nbd:URI", is copied as it is; the file behind
 * a spec is tc_dev_spec_path's).  Returns 0, or -1 after a message naming the
 * device. */
int cli_abs_spec(const char *spec, char *buf, size_t len);
/* cli_abs_spec_named - the same, except that a file that does not exist is not an
 * error: its path is made absolute by the current folder (a server serves what it can
 * without it, and can name it in its answers). */
int cli_abs_spec_named(const char *spec, char *buf, size_t len);

/* cli_find_plugin - the nbdkit plugin to run: $TC_NBDKIT_PLUGIN, else the build tree's
 * (../nbd/nbdkit-tiercache-plugin.so from this program, written into @buf), else the
 * installed one.  The path may not exist: the caller checks. */
const char *cli_find_plugin(char *buf, size_t len);

/* cli_isatty_err - stderr is a terminal (progress bars are drawn only then). */
bool cli_isatty_err(void);

/* cli_result - the "result" object of a good control response @resp (owned by @resp),
 * or NULL after printing the failed response's "error" (strerror of its "errno" when
 * it has none) with cli_err(). */
json_object *cli_result(json_object *resp);
/* cli_result_errno - the "errno" of a failed control response (positive), EIO when it
 * names none. */
int cli_result_errno(json_object *resp);

/* cli_jstr / cli_ju64 - member @key of JSON object @o as a string ("-" when absent or
 * null; owned by @o) or an unsigned number (0 when absent). */
const char *cli_jstr(json_object *o, const char *key);
uint64_t cli_ju64(json_object *o, const char *key);

#endif /* TC_CLI_H */
