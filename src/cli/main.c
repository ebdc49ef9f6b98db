/* SPDX-License-Identifier: MIT */
/*
 * main.c - the `tiercache` command: the list of subcommands, the main help, and
 * dispatch to a subcommand (its helpers are in cli.c).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const struct cli_cmd commands[] = {
	{ "create", cmd_create, "format a backing device (a volume) or a cache device, or create an array" },
	{ "attach", cmd_attach, "attach a backing to a cache, live or offline" },
	{ "set", cmd_set, "change a volume's read cache, write policy, flush rate, admission" },
	{ "set-cache", cmd_set_cache, "change a cache's write-back override (unprotected writeback)" },
	{ "flush", cmd_flush, "write back every dirty byte of a volume, or of a range of it" },
	{ "invalidate", cmd_invalidate, "drop the cached copies of a byte range of a volume" },
	{ "detach", cmd_detach, "drain a volume's dirty data and remove it from its cache" },
	{ "status", cmd_status, "state, policy, dirty bytes and writeback of every volume" },
	{ "stats", cmd_stats, "every engine counter of one volume" },
	{ "serve", cmd_serve, "assemble the volumes on the given devices and serve them over NBD" },
	{ "array", cmd_array, "an array's status; fail, add a spare, remove, replace, check, rebuild rate" },
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
"Volume commands (set, flush, invalidate, detach, status, stats, attach) talk to a running server\n"
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
