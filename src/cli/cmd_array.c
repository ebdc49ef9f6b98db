/* SPDX-License-Identifier: MIT */
/*
 * cmd_array.c - `tiercache create array NAME ...` (write member superblocks, as
 * `mdadm --create`) and `tiercache array status|fail` (an array read from its
 * members offline, as `mdadm --examine`/`--detail`, or from a running server).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ctl.h"

/* ---- create array ---------------------------------------------------------------- */

enum { OPT_LEVEL = 256, OPT_CHUNK, OPT_COPIES, OPT_SPARE, OPT_FORCE, OPT_CLEAN, OPT_JSON,
       OPT_CONTROL, OPT_HELP, OPT_REPAIR, OPT_MIN, OPT_MAX, OPT_PRIORITY, OPT_CONSISTENCY,
       OPT_GLOBAL };

static const struct option create_options[] = {
	{ "level", required_argument, NULL, OPT_LEVEL },
	{ "chunk", required_argument, NULL, OPT_CHUNK },
	{ "copies", required_argument, NULL, OPT_COPIES },
	{ "spare", required_argument, NULL, OPT_SPARE },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "assume-clean", no_argument, NULL, OPT_CLEAN },
	{ "consistency-policy", required_argument, NULL, OPT_CONSISTENCY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static void print_json(json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
}

static unsigned level_min(int level, unsigned copies)
{
	return level == TC_RAID5 ? 3 : level == TC_RAID6 ? 4 :
	       level == TC_RAID10 ? (copies ? copies : 2) : 2;
}

/* A device named twice among @specs (also as two names of one file): said, 1. */
static int given_twice(char **specs, unsigned n)
{
	char (*abs)[PATH_MAX] = calloc(n ? n : 1, PATH_MAX);
	int dup = 0;
	if (!abs)
		return 1;
	for (unsigned i = 0; i < n && !dup; i++) {
		if (cli_abs_spec_named(specs[i], abs[i], PATH_MAX)) {
			dup = 1;
			break;
		}
		for (unsigned j = 0; j < i && !dup; j++)
			if (!strcmp(abs[i], abs[j])) {
				if (strcmp(specs[i], specs[j]))
					cli_err("device %s is given twice (also as %s)", specs[i],
						specs[j]);
				else
					cli_err("device %s is given twice", specs[i]);
				dup = 1;
			}
	}
	free(abs);
	return dup;
}

/* Open @n specs with @flags; on failure close what was opened. */
static int open_all(tc_ctx *ctx, char **specs, unsigned n, unsigned flags, tc_dev **out)
{
	for (unsigned i = 0; i < n; i++) {
		char abs[PATH_MAX];
		int r = cli_abs_spec(specs[i], abs, sizeof(abs));
		if (!r)
			r = tc_dev_open_spec(ctx, abs, flags, 0, 1, &out[i]) ? -1 : 0;
		if (r) {
			for (unsigned j = 0; j < i; j++)
				tc_dev_close(out[j]);
			return -1;
		}
	}
	return 0;
}

/* The text form of an array (ctl_array_json's object). */
static void print_array(json_object *a)
{
	char sz[32], ck[32];
	json_object *ms, *sp;
	json_object_object_get_ex(a, "members", &ms);
	json_object_object_get_ex(a, "spares", &sp);
	int red = 0;
	json_object *jr;
	if (json_object_object_get_ex(a, "redundancy", &jr))
		red = json_object_get_int(jr);
	json_object *jd = NULL;
	json_object_object_get_ex(a, "dirty", &jd);
	printf("array %s (uuid %s): %s, chunk %s, %zu members, %s, %s (survives %d more "
	       "member failure%s), %s, events %" PRIu64 "\n", cli_jstr(a, "name"),
	       cli_jstr(a, "uuid"), cli_jstr(a, "level"),
	       tc_size_format(cli_ju64(a, "chunk"), ck, sizeof(ck)),
	       ms ? json_object_array_length(ms) : 0,
	       tc_size_format(cli_ju64(a, "size"), sz, sizeof(sz)), cli_jstr(a, "state"),
	       red < 0 ? 0 : red, red == 1 ? "" : "s",
	       jd && json_object_get_boolean(jd) ? "dirty (in use, or stopped uncleanly)" :
	       "clean", cli_ju64(a, "events"));
	json_object *jp = NULL;
	json_object_object_get_ex(a, "ppl", &jp);
	if (cli_ju64(a, "map_regions"))
		printf("  consistency: write-intent map, %" PRIu64 " of %" PRIu64 " regions of %s "
		       "dirty\n", cli_ju64(a, "map_dirty"), cli_ju64(a, "map_regions"),
		       tc_size_format(cli_ju64(a, "map_region_size"), (char[32]){ 0 }, 32));
	else if (jp && json_object_get_boolean(jp))
		printf("  consistency: partial-parity log (no write hole)\n");
	if (cli_ju64(a, "written_map_regions"))
		printf("  written: %" PRIu64 " of %" PRIu64 " regions of %s (a rebuild writes "
		       "zeros to the others)\n", cli_ju64(a, "written_regions"),
		       cli_ju64(a, "written_map_regions"),
		       tc_size_format(cli_ju64(a, "written_region_size"), (char[32]){ 0 }, 32));
	printf("  %-4s  %-10s  %s\n", "SLOT", "STATE", "DEVICE");
	for (size_t i = 0; ms && i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i), *jr;
		printf("  %-4" PRIu64 "  %-10s  %s", cli_ju64(m, "slot"), cli_jstr(m, "state"),
		       cli_jstr(m, "device"));
		/* A replace: the member copied from stays in service until the copy ends. */
		if (json_object_object_get_ex(m, "replacing", &jr))
			printf(" (replacing %s, in service until the copy ends)",
			       json_object_get_string(jr));
		printf("\n");
	}
	json_object *ex = NULL;
	json_object_object_get_ex(a, "extra", &ex);
	if (ex && json_object_array_length(ex)) {
		/* Spares, and members out of the array not yet removed. */
		for (size_t i = 0; i < json_object_array_length(ex); i++) {
			json_object *m = json_object_array_get_idx(ex, i);
			printf("  %-4s  %-10s  %s\n", "-", cli_jstr(m, "state"),
			       cli_jstr(m, "device"));
		}
	} else {
		for (size_t i = 0; sp && i < json_object_array_length(sp); i++)
			printf("  %-4s  %-10s  %s\n", "-", "spare",
			       json_object_get_string(json_object_array_get_idx(sp, i)));
	}
	json_object *lo = NULL;
	json_object_object_get_ex(a, "left_out", &lo);
	for (size_t i = 0; lo && i < json_object_array_length(lo); i++) {
		json_object *m = json_object_array_get_idx(lo, i);
		printf("  %-4s  %-10s  %s (slot %" PRIu64 ", %s, event count %" PRIu64 " of the "
		       "array's %" PRIu64 ")\n", "-", "left out", cli_jstr(m, "device"),
		       cli_ju64(m, "slot"), cli_jstr(m, "reason"), cli_ju64(m, "events"),
		       cli_ju64(a, "events"));
	}
	const char *sync = cli_jstr(a, "sync");
	uint64_t pos = cli_ju64(a, "sync_pos"), end = cli_ju64(a, "sync_end");
	char p[32], e[32];
	if (strcmp(sync, "idle") && strcmp(sync, "-")) {
		/* Rounded up: "0m00s" while a part of a second is left reads as done. */
		uint64_t eta = (cli_ju64(a, "sync_eta_ns") + 999999999ull) / 1000000000ull;
		/* Every row done, the pass still open: its last flush and superblocks. */
		bool finishing = end && pos >= end;
		printf("  %s: %s of %s (%.1f%%), %.1f MB/s per member", sync,
		       tc_size_format(pos, p, sizeof(p)), tc_size_format(end, e, sizeof(e)),
		       end ? 100.0 * (double)pos / (double)end : 0.0,
		       (double)cli_ju64(a, "sync_rate") / 1e6);
		/* The rows paced by the rebuild rate, apart from the zero-filled ones. */
		if (cli_ju64(a, "sync_written_rate"))
			printf(" (written rows %.1f MB/s)",
			       (double)cli_ju64(a, "sync_written_rate") / 1e6);
		printf(", %s", finishing ? "finishing (recording the end)"
		       : cli_ju64(a, "sync_eta_ns") ? "ETA " : "ETA unknown");
		if (!finishing && cli_ju64(a, "sync_eta_ns"))
			printf("%" PRIu64 "m%02" PRIu64 "s", eta / 60, eta % 60);
		if (strcmp(sync, "rebuild"))
			printf(", %" PRIu64 " mismatches so far", cli_ju64(a, "mismatches"));
		printf("\n");
	} else if (cli_ju64(a, "checked")) {
		json_object *js = NULL;
		json_object_object_get_ex(a, "check_stopped", &js);
		if (js && json_object_get_boolean(js))
			printf("  last check: stopped after %" PRIu64 " of %" PRIu64 " windows (a "
			       "member failed), %" PRIu64 " mismatches in those\n",
			       cli_ju64(a, "checked"), cli_ju64(a, "check_windows"),
			       cli_ju64(a, "mismatches"));
		else
			printf("  last check: %" PRIu64 " mismatches in %" PRIu64 " windows\n",
			       cli_ju64(a, "mismatches"), cli_ju64(a, "checked"));
	}
	/* RAID 5/6 writes since assembly, by how the parity was made (live status). */
	uint64_t wf = cli_ju64(a, "stripe_writes_full"), wr = cli_ju64(a, "stripe_writes_rcw"),
		 wm = cli_ju64(a, "stripe_writes_rmw"), wd = cli_ju64(a, "stripe_writes_degraded");
	if (wf + wr + wm + wd)
		printf("  stripe writes: %" PRIu64 " full, %" PRIu64 " reconstruct-write, %" PRIu64
		       " read-modify-write, %" PRIu64 " degraded\n", wf, wr, wm, wd);
	json_object *rb;
	if (json_object_object_get_ex(a, "rebuild", &rb) && rb) {
		uint64_t mx = cli_ju64(rb, "max_rate");
		printf("  rebuild rate: min %.1f MB/s, max ", (double)(cli_ju64(rb, "min_rate") ?
		       cli_ju64(rb, "min_rate") : TC_ARRAY_REBUILD_MIN_DEFAULT) / 1e6);
		if (mx == UINT64_MAX)
			printf("unlimited");
		else
			printf("%.1f MB/s", (double)(mx ? mx : TC_ARRAY_REBUILD_MAX_DEFAULT) / 1e6);
		printf(", priority %" PRIu64 "\n", cli_ju64(rb, "priority"));
	}
}

int cmd_create_array(int argc, char **argv, const char *help)
{
	const char *level_arg = NULL;
	uint64_t chunk = 0, copies = 0;
	bool force = false, clean = false, json = false;
	const char *chunk_arg = NULL;
	enum tc_array_consistency consistency = TC_CONSISTENCY_DEFAULT;
	char *spares[TC_ARRAY_MAX_MEMBERS];
	unsigned nspares = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", create_options, NULL)) != -1) {
		switch (c) {
		case OPT_LEVEL: level_arg = optarg; break;
		case OPT_CHUNK:
			chunk_arg = optarg;
			if (cli_size("--chunk", optarg, &chunk))
				return TC_EXIT_USAGE;
			/* RAID 0 takes any multiple of 4K; the library refuses the
			 * others' non-powers of two, naming the level. */
			if (chunk < TC_ARRAY_CHUNK_MIN || chunk > TC_ARRAY_CHUNK_MAX ||
			    chunk % TC_ARRAY_CHUNK_MIN)
				return cli_usage("--chunk: \"%s\" is not a multiple of 4K from 4K "
						 "to 64M", optarg);
			break;
		case OPT_COPIES:
			if (cli_uint("--copies", optarg, 2, TC_ARRAY_MAX_MEMBERS, &copies))
				return TC_EXIT_USAGE;
			break;
		case OPT_SPARE:
			if (nspares == TC_ARRAY_MAX_MEMBERS)
				return cli_usage("--spare: at most %u", TC_ARRAY_MAX_MEMBERS);
			spares[nspares++] = optarg;
			break;
		case OPT_FORCE: force = true; break;
		case OPT_CLEAN: clean = true; break;
		case OPT_CONSISTENCY:
			/* mdadm's --consistency-policy, of the values tiercache has. */
			if (!strcmp(optarg, "ppl"))
				consistency = TC_CONSISTENCY_PPL;
			else if (!strcmp(optarg, "bitmap"))
				consistency = TC_CONSISTENCY_BITMAP;
			else
				return cli_usage("--consistency-policy: \"%s\" is not ppl or bitmap",
						 optarg);
			break;
		case OPT_JSON: json = true; break;
		case 'h':
		case OPT_HELP: return cli_help(help);
		default: return cli_bad_option(argv);
		}
	}
	if (optind >= argc)
		return cli_usage("create array: expected NAME and the member devices");
	const char *name = argv[optind++];
	if (!tc_volume_name_valid(name))
		return cli_usage("create array: \"%s\" is not an array name (1-%d characters of "
				 "[A-Za-z0-9._-], not \".\", \"..\" or starting with '-')", name,
				 TC_NAME_MAX - 1);
	/* The NAME forgotten: the first member would become the name, unsaid. */
	struct stat nst;
	if (stat(name, &nst) == 0 && (S_ISREG(nst.st_mode) || S_ISBLK(nst.st_mode)))
		return cli_usage("create array: the name \"%s\" is also a %s here: the array's "
				 "name comes first (create array NAME --level L DEVICE...)", name,
				 S_ISBLK(nst.st_mode) ? "block device" : "file");
	if (!level_arg)
		return cli_usage("create array: --level LEVEL is required (0, 1, 5, 6 or 10)");
	int level = tc_raid_level_parse(level_arg);
	if (level < 0)
		return cli_usage("--level: \"%s\" is not 0, 1, 5, 6 or 10 (raid0 ... raid10)",
				 level_arg);
	if (copies && level != TC_RAID10)
		return cli_usage("--copies: for raid10 only, not %s", tc_raid_level_name(level));
	if (chunk && level != TC_RAID0 && (chunk & (chunk - 1)))
		return cli_usage("--chunk: \"%s\" is not a power of two from 4K to 64M (%s; RAID 0 "
				 "takes any multiple of 4K)", chunk_arg, tc_raid_level_name(level));
	unsigned n = (unsigned)(argc - optind);
	unsigned min = level_min(level, (unsigned)copies);
	bool bracketed = false;
	for (int i = optind; i < argc; i++)
		bracketed |= !strncmp(argv[i], "array:[", 7);
	if (n < min || n > TC_ARRAY_MAX_MEMBERS)
		return cli_usage("create array: %u member devices for %s: it needs %u to %u%s%s",
				 n, tc_raid_level_name(level), min, TC_ARRAY_MAX_MEMBERS,
				 nspares ? " (spares not counted)" : "", bracketed ?
				 "; give each leg of a RAID 50 / 60 as a device of its own "
				 "(array:a0,a1,... array:b0,b1,...): the form with brackets names "
				 "the RAID 0 once it is made" : "");
	if (n + nspares > TC_ARRAY_MAX_MEMBERS)
		return cli_usage("create array: %u members and %u spares: at most %u devices", n,
				 nspares, TC_ARRAY_MAX_MEMBERS);

	char *all[TC_ARRAY_MAX_MEMBERS];
	for (unsigned i = 0; i < n; i++)
		all[i] = argv[optind + i];
	for (unsigned i = 0; i < nspares; i++)
		all[n + i] = spares[i];
	if (given_twice(all, n + nspares))
		return TC_EXIT_FAIL;
	tc_ctx *ctx = cli_ctx(false);
	tc_dev *m[TC_ARRAY_MAX_MEMBERS], *s[TC_ARRAY_MAX_MEMBERS];
	if (open_all(ctx, argv + optind, n, TC_DEV_EXCLUSIVE, m)) {
		tc_ctx_free(ctx);
		return TC_EXIT_FAIL;
	}
	if (open_all(ctx, spares, nspares, TC_DEV_EXCLUSIVE, s)) {
		for (unsigned i = 0; i < n; i++)
			tc_dev_close(m[i]);
		tc_ctx_free(ctx);
		return TC_EXIT_FAIL;
	}
	struct tc_array_opts o = { .level = (enum tc_raid_level_id)level,
				   .chunk = (uint32_t)chunk, .copies = (unsigned)copies,
				   .consistency = consistency };
	tc_dev *a;
	int r = tc_array_create(ctx, name, &o, m, n, s, nspares,
				/* mdadm's --assume-clean: also over members that hold an
				 * array's data (re-creating it), so no region may count as
				 * never written, or a rebuild would write zeros over it. */
				(force ? TC_ARRAY_FORCE : 0) |
				(clean ? TC_ARRAY_ASSUME_CLEAN | TC_ARRAY_ALL_WRITTEN : 0),
				&a);
	if (r) {
		tc_ctx_free(ctx);
		return TC_EXIT_FAIL;
	}
	json_object *jo = ctl_array_json(a, NULL);
	r = 0;
	tc_dev_close(a);
	if (jo) {
		/* As the members now say, after the clean close. */
		json_object_object_add(jo, "dirty", json_object_new_boolean(0));
		if (json) {
			print_json(jo);
		} else {
			char sz[32];
			printf("array %s: %s of %" PRIu64 " members", cli_jstr(jo, "name"),
			       cli_jstr(jo, "level"),
			       (uint64_t)json_object_array_length(json_object_object_get(jo,
									      "members")));
			if (nspares)
				printf(" and %u spare%s", nspares, nspares > 1 ? "s" : "");
			printf(", chunk %s, %s, uuid %s\n",
			       tc_size_format(cli_ju64(jo, "chunk"), (char[32]){ 0 }, 32),
			       tc_size_format(cli_ju64(jo, "size"), sz, sizeof(sz)),
			       cli_jstr(jo, "uuid"));
		}
		json_object_put(jo);
	}
	tc_ctx_free(ctx);
	return TC_EXIT_OK;
}

/* ---- array status | fail ----------------------------------------------------------- */

static const char help[] =
"NAME\n"
"    tiercache array - status of an array, its spares, rebuild, replace and check\n"
"\n"
"SYNOPSIS\n"
"    tiercache array status [--control PATH] [--json] [DEVICE... | NAME]\n"
"    tiercache array assemble [--force] [--json] DEVICE...\n"
"    tiercache array fail NAME MEMBER [--force] [--control PATH] [--json]\n"
"    tiercache array add-spare NAME DEVICE [--force] [--control PATH] [--json]\n"
"    tiercache array add-spare --global DEVICE [--force] [--control PATH] [--json]\n"
"    tiercache array re-add NAME DEVICE [--control PATH] [--json]\n"
"    tiercache array remove NAME MEMBER [--control PATH] [--json]\n"
"    tiercache array remove --global DEVICE [--control PATH] [--json]\n"
"    tiercache array replace NAME SLOT DEVICE [--force] [--control PATH] [--json]\n"
"    tiercache array check NAME [--repair] [--control PATH] [--json]\n"
"    tiercache array rebuild-rate NAME [--min MB/s] [--max MB/s] [--priority N]\n"
"                                 [--control PATH] [--json]\n"
"\n"
"DESCRIPTION\n"
"    An array (software RAID 0, 1, 10, 5 or 6; see `tiercache create --help` to make\n"
"    one) keeps a superblock on every member: the array's uuid and name, its level and\n"
"    geometry, the member's slot (or hot spare), an event counter and a clean/dirty\n"
"    flag.  Wherever a device is named, array:MEMBER,MEMBER,... is the array\n"
"    assembled from those members (any order), and `tiercache serve` also takes the\n"
"    members themselves among its devices.  A RAID 50 or 60 (a RAID 0 over RAID 5\n"
"    or 6 legs) is named with each leg in brackets:\n"
"    'array:[array:a0,a1,a2,a3],[array:b0,b1,b2,b3]' (quote it for the shell); its\n"
"    legs are arrays of the server too, by name, for every command below.\n"
"\n"
"    `array status DEVICE...` reads the array from the member devices given, offline\n"
"    and read-only: nothing is written to them, and a server may be using them.  It\n"
"    shows the array's level, size, state (active, degraded, failed), how many more\n"
"    member failures it survives, clean or dirty, the event count, every slot's state\n"
"    and device, and the hot spares.  A member left out of the assembly (stale: an\n"
"    older event count; replaced in its slot; recorded faulty) is named on stderr\n"
"    and listed as `left out` with its slot, the reason and its event count\n"
"    (`left_out` in --json).  A device of another array among them is refused,\n"
"    named (the array most of the devices belong to is the reference).\n"
"    An array with too few members to start is shown too, failed.\n"
"    `array status [NAME]` asks the running server (--control) for its arrays, or only\n"
"    the array NAME.  With --json both print {\"arrays\": [...]}, one object per array\n"
"    (offline, the one array the members make).\n"
"\n"
"    `array assemble DEVICE...` assembles the array from the members given, offline,\n"
"    records the assembly on them (members left out are faulty from then on, and the\n"
"    event count moves) and stops it clean.  A RAID 5 or 6 that is both dirty (it\n"
"    stopped while writes may have been in flight: a crash) and degraded (a member\n"
"    missing) is refused, as md refuses it: the parity of the stripes written at the\n"
"    crash may not match their data, and rebuilding the missing member from it could\n"
"    corrupt data unrelated to those writes.  --force starts it anyway (that data may\n"
"    be corrupt: check what the array holds), after which `serve` takes it.  Any\n"
"    command that opens an array for writing (serve, create backing, attach, ...)\n"
"    refuses a member list without a member the array last ran with, as mdadm\n"
"    --assemble does without --run: starting without it would leave it stale for good\n"
"    (a typo costs the array its redundancy).  `array assemble --force` starts the\n"
"    array degraded once and records that member faulty; the other commands then\n"
"    take the member list without it.  When more members are missing than the\n"
"    level survives (RAID 1, 10, 5, 6), --force also takes back members left out\n"
"    as stale or faulty, the freshest first (the last to fail; RAID 10: of those\n"
"    whose copy set has no member left), until the array can start, as mdadm\n"
"    --assemble --force does: each is named in a warning, since it lacks the\n"
"    writes made after it left; check what the array holds.\n"
"\n"
"    `array fail NAME MEMBER` marks MEMBER (its device, as the array names it, or its\n"
"    slot number) of the array NAME of the running server faulty, as an I/O error\n"
"    would: for drills and tests.  The array goes on degraded while its redundancy\n"
"    lasts; the other members' superblocks record the failure, so the failed member\n"
"    is stale at the next assembly and is left out.  Refused when failing MEMBER\n"
"    (active) would fail the array and make its data unreachable (RAID 10: when no\n"
"    other member of its copy set is active); --force fails it anyway.\n"
"\n"
"    The commands below change an array of the running server (--control), live.\n"
"\n"
"    `array add-spare NAME DEVICE` opens DEVICE in the server (as the server opens its\n"
"    own devices) and gives it to the array NAME as a hot spare; its superblock is\n"
"    written and the other members record it.  When a member is faulty already, the\n"
"    spare takes its slot at once and a rebuild starts; otherwise it waits for the\n"
"    next failure.  Refused: a device that holds any superblock (a file system, a\n"
"    tiercache cache, backing or array member) or data of no known format in its\n"
"    first 16 KiB, unless --force; a device the server uses already, a device smaller\n"
"    than the members' used size, a RAID 0.\n"
"\n"
"    `array add-spare --global DEVICE` gives the server a global hot spare instead:\n"
"    any of its arrays takes it when a member becomes faulty and the array has no\n"
"    spare of its own (the first global spare that is large enough, in the order\n"
"    they were added; RAID 0 takes none, the legs of a RAID 50 or 60 do).  It is\n"
"    opened and checked as for add-spare, and an array degraded now takes it at once.\n"
"    Until then it holds no superblock, so the server does not keep it across a\n"
"    restart: give it to `tiercache serve --spare` (or `spare =` in the server's\n"
"    configuration) as well.  `array remove --global DEVICE` takes it out of the\n"
"    pool.  `array status` lists the global spares after the arrays.\n"
"\n"
"    `array re-add NAME DEVICE` puts DEVICE, a member of the array NAME that became\n"
"    faulty or was missing at the assembly (a cable, a controller, a disk that came\n"
"    back), back in its slot, and resyncs only what it missed (mdadm --re-add with a\n"
"    write-intent bitmap): while an array is degraded its write-intent map keeps\n"
"    every region written since (the bits are cleared only once every slot is\n"
"    active again), and the rebuild copies those regions and skips the rest.\n"
"    DEVICE is known by its superblock: this array's uuid, its slot, and the member\n"
"    the slot table still records there.  `array status` shows the resync as a\n"
"    rebuild; a restart resumes it as it was.  Refused, and the device left as it\n"
"    was: an array without a write-intent map (consistency policy ppl, RAID 0), a\n"
"    device that was a spare, of another array, or whose slot another member (a\n"
"    spare) has taken since, a slot that is not faulty.  Those come back as spares\n"
"    instead, a whole rebuild: `array remove` the device if the array still lists\n"
"    it, then `array add-spare --force`.\n"
"\n"
"    `array remove NAME MEMBER` takes a spare, a faulty member, or a member retired\n"
"    by a spare or a replace out of the array and closes it (MEMBER: its device as\n"
"    `array status` names it, or a slot number for the device in that slot).  A\n"
"    spare's array superblock is erased, so that it is blank afterwards and no later\n"
"    assembly takes it back (`serve` ignores a blank device with a warning); a\n"
"    faulty or retired member keeps its superblock, which the array's records leave\n"
"    out.  An active or rebuilding member is refused: fail it first.  A member\n"
"    missing since the assembly (missing:slotN) has no device to remove: a spare\n"
"    (`array add-spare`) rebuilds into its slot.\n"
"\n"
"    `array replace NAME SLOT DEVICE` copies the member in SLOT onto DEVICE (opened as\n"
"    by add-spare) while the member stays in service, then retires the member: the\n"
"    array keeps its redundancy throughout, unlike fail and rebuild.  Remove the\n"
"    retired member afterwards.  If DEVICE fails during the copy (or `array fail`\n"
"    names it), the replace stops and the member keeps its slot, with the array's\n"
"    redundancy: it took every write of the replace.\n"
"\n"
"    `array check NAME` starts a consistency check (md's check): RAID 5 and 6 compare\n"
"    every stripe's parity with its data, RAID 1 and 10 the copies of every chunk;\n"
"    mismatches are counted.  With --repair, what differs is rewritten from the data\n"
"    (the first copy).  The command returns once the check started; `array status`\n"
"    shows its progress, rate and mismatches.  Refused while the array is degraded,\n"
"    rebuilding or checking already.\n"
"\n"
"    `array rebuild-rate NAME` sets the rates of the array's rebuild and check\n"
"    passes, per member, in force at once (after Linux md's speed_limit_min and\n"
"    _max): the pass runs at --max while the array has no other I/O, and at\n"
"    min + (max - min) x priority / 100 under load.  Options not given keep their\n"
"    value; without any, the rates in force are shown.  The rates are kept in the\n"
"    members' superblocks, so a restart or an assembly elsewhere keeps them (md's\n"
"    sysctls go back to their defaults at boot; the controllers keep theirs).\n"
"\n"
"    `array status` lists spares, retired members and devices left out as slot -,\n"
"    the background pass (rebuild, check or repair: position, rate, ETA,\n"
"    mismatches), the last check's mismatches and the rates in force, and how many\n"
"    regions were ever written: a rebuild writes zeros to the new member in the\n"
"    others and reads nothing there (arrays made by versions without this record\n"
"    rebuild every region).\n"
"\n"
"OPTIONS\n"
"    --control PATH    the server's control socket (default " TC_CONTROL_DEFAULT ")\n"
"    --json            print the result as JSON\n"
"    --force           array assemble: start a dirty, degraded RAID 5 or 6, or without\n"
"                      a member the array last ran with, taking stale members back\n"
"                      when too few are left (see above); fail: fail the\n"
"                      member even when the array does not survive it; add-spare,\n"
"                      replace: take a device holding a superblock\n"
"    --repair          array check: rewrite parity or copies that differ\n"
"    --min MB/s        array rebuild-rate: the rate under load (default 1, 1 MB/s =\n"
"                      1000000 bytes/s, per member)\n"
"    --max MB/s        array rebuild-rate: the rate when idle (default 200;\n"
"                      \"unlimited\")\n"
"    --priority N      array rebuild-rate: 0..100, the share of max - min kept under\n"
"                      load (default 0: md's rule, the floor)\n"
"    --global          add-spare, remove: a global hot spare of the server, not a\n"
"                      spare of one array (no NAME)\n"
"\n"
"EXAMPLES\n"
"    tiercache array status /srv/d0.img /srv/d1.img /srv/d2.img /srv/d3.img\n"
"    tiercache array status data\n"
"    tiercache array fail data /srv/d2.img\n"
"    tiercache array add-spare data /srv/d4.img\n"
"    tiercache array add-spare --global /srv/d9.img\n"
"    tiercache array re-add data /srv/d2.img\n"
"    tiercache array remove data /srv/d2.img\n"
"    tiercache array replace data 1 /srv/d5.img\n"
"    tiercache array check data\n"
"    tiercache array rebuild-rate data --min 10 --max 100 --priority 50\n"
"\n"
"EXIT STATUS\n"
"    0 success, 1 the array cannot be read or assembled, the member or array is\n"
"    unknown, the device is refused, or no server answers, 2 bad usage.\n";

static const struct option array_options[] = {
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "repair", no_argument, NULL, OPT_REPAIR },
	{ "min", required_argument, NULL, OPT_MIN },
	{ "max", required_argument, NULL, OPT_MAX },
	{ "priority", required_argument, NULL, OPT_PRIORITY },
	{ "global", no_argument, NULL, OPT_GLOBAL },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* One request to the server on @control: the result (the caller puts *@resp), or NULL
 * after a message. */
static json_object *call(const char *control, json_object *req, json_object **resp)
{
	*resp = NULL;
	int fd = ctl_connect(control);
	if (fd < 0) {
		cli_err("control socket %s: %s%s", control, strerror(-fd),
			fd == -ENOENT || fd == -ECONNREFUSED ? " (no server answers; for an "
			"array offline, give its member devices)" : "");
		return NULL;
	}
	int err;
	*resp = ctl_call(fd, req, NULL, NULL, &err);
	close(fd);
	if (!*resp) {
		cli_err("control socket %s: %s", control, err == -EPROTO ?
			"the server's answer is not the control protocol" : strerror(-err));
		return NULL;
	}
	return cli_result(*resp);
}

/* Whether @arg names a device rather than an array: it has a prefix or a '/', or a
 * file of that name exists. */
static bool is_device(const char *arg)
{
	/* The place of a member missing at assembly, as the array names it. */
	if (!strncmp(arg, "missing:slot", 12))
		return false;
	return strchr(arg, '/') || strchr(arg, ':') || access(arg, F_OK) == 0;
}

/* Read the array from its members (read-only), or assemble it for writing (@rw:
 * `array assemble`, which records the assembly on the members and closes clean). */
static int offline(char **specs, unsigned n, bool json, bool rw, bool force)
{
	tc_ctx *ctx = cli_ctx(false);
	tc_dev *devs[2 * TC_ARRAY_MAX_MEMBERS];
	if (n > 2 * TC_ARRAY_MAX_MEMBERS) {
		tc_ctx_free(ctx);
		return cli_usage("array status: at most %u devices", 2 * TC_ARRAY_MAX_MEMBERS);
	}
	/* Status: read-only and unlocked (a server may hold the members). */
	if (given_twice(specs, n) ||
	    open_all(ctx, specs, n, rw ? TC_DEV_EXCLUSIVE : TC_DEV_READONLY | TC_DEV_BUFFERED,
		     devs)) {
		tc_ctx_free(ctx);
		return TC_EXIT_FAIL;
	}
	tc_dev *a;
	if (tc_array_assemble(ctx, devs, n, rw ? (force ? TC_ARRAY_FORCE : 0) :
			      TC_ARRAY_READONLY | TC_ARRAY_INSPECT, &a)) {
		tc_ctx_free(ctx);
		return TC_EXIT_FAIL;
	}
	json_object *jo = ctl_array_json(a, NULL);
	tc_dev_close(a);
	if (jo && rw) {
		/* What the members say now, after the close: the freshest superblock of
		 * this array among them (a resync that could not run, e.g. a mirror's
		 * waiting for a rebuild, leaves it dirty). */
		struct tc_array_member_info mi, best = { .events = 0 };
		bool found = false;
		tc_dev *d;
		for (unsigned i = 0; i < n; i++)
			if (open_all(ctx, &specs[i], 1, TC_DEV_READONLY | TC_DEV_BUFFERED, &d) == 0) {
				if (tc_array_examine(ctx, d, &mi) == 1 && mi.role >= 0 &&
				    !strcmp(mi.uuid, cli_jstr(jo, "uuid")) &&
				    (!found || mi.events > best.events)) {
					best = mi;
					found = true;
				}
				tc_dev_close(d);
			}
		if (found) {
			json_object_object_add(jo, "dirty", json_object_new_boolean(best.dirty));
			json_object_object_add(jo, "events", json_object_new_uint64(best.events));
		}
	}
	tc_ctx_free(ctx);
	if (!jo)
		return TC_EXIT_FAIL;
	json_object_object_del(jo, "readonly");   /* how it was read, not a state */
	if (json) {
		/* The running server's shape, with the one array read here. */
		json_object *res = json_object_new_object(), *list = json_object_new_array();
		json_object_array_add(list, jo);
		json_object_object_add(res, "arrays", list);
		print_json(res);
		json_object_put(res);
	} else {
		print_array(jo);
		json_object_put(jo);
	}
	return TC_EXIT_OK;
}

/* The "global_spares" of a server's answer, one line: "global spares: DEV (SIZE), ..."
 * or "global spares: none". */
static void print_global_spares(json_object *res)
{
	json_object *gs = NULL;
	json_object_object_get_ex(res, "global_spares", &gs);
	size_t n = gs ? json_object_array_length(gs) : 0;
	printf("\nglobal spares: %s", n ? "" : "none");
	for (size_t i = 0; i < n; i++) {
		json_object *g = json_object_array_get_idx(gs, i);
		char sz[32];
		printf("%s%s (%s)", i ? ", " : "", cli_jstr(g, "device"),
		       tc_size_format(cli_ju64(g, "size"), sz, sizeof(sz)));
	}
	printf("\n");
}

static int array_status(int argc, char **argv, const char *control, bool json)
{
	unsigned n = (unsigned)(argc - optind);
	if (n > 1 || (n == 1 && is_device(argv[optind])))
		return offline(argv + optind, n, json, false, false);
	json_object *req = json_object_new_object(), *resp;
	json_object_object_add(req, "op", json_object_new_string("array_status"));
	if (n == 1)
		json_object_object_add(req, "array", json_object_new_string(argv[optind]));
	json_object *res = call(control, req, &resp);
	json_object_put(req);
	if (!res) {
		json_object_put(resp);
		return TC_EXIT_FAIL;
	}
	json_object *arrays;
	json_object_object_get_ex(res, "arrays", &arrays);
	if (json) {
		print_json(res);
	} else if (!arrays || !json_object_array_length(arrays)) {
		printf("no arrays on this server\n");
	} else {
		for (size_t i = 0; i < json_object_array_length(arrays); i++) {
			if (i)
				printf("\n");
			print_array(json_object_array_get_idx(arrays, i));
		}
	}
	if (!json && n == 0)
		print_global_spares(res);
	json_object_put(resp);
	return TC_EXIT_OK;
}

static int array_fail(int argc, char **argv, const char *control, bool json, bool force)
{
	if (argc - optind != 2)
		return cli_usage("array fail: expected NAME MEMBER");
	const char *name = argv[optind], *member = argv[optind + 1];
	char abs[PATH_MAX];
	/* A path as the server names it: absolute. */
	if (is_device(member) && cli_abs_spec_named(member, abs, sizeof(abs)) == 0)
		member = abs;
	json_object *req = json_object_new_object(), *resp;
	json_object_object_add(req, "op", json_object_new_string("array_fail"));
	json_object_object_add(req, "array", json_object_new_string(name));
	json_object_object_add(req, "member", json_object_new_string(member));
	if (force)
		json_object_object_add(req, "force", json_object_new_boolean(true));
	json_object *res = call(control, req, &resp);
	json_object_put(req);
	if (!res) {
		json_object_put(resp);
		return TC_EXIT_FAIL;
	}
	json_object *jw;
	bool was = json_object_object_get_ex(res, "was_faulty", &jw) &&
		   json_object_get_boolean(jw);
	if (json) {
		print_json(res);
	} else {
		uint64_t slot = cli_ju64(res, "failed_slot");
		json_object *jr;
		json_object_object_get_ex(res, "redundancy", &jr);
		/* The device failed (a hot spare may hold the slot by now). */
		int red = jr && json_object_get_int(jr) > 0 ? json_object_get_int(jr) : 0;
		printf("array %s: member %" PRIu64 " (%s) %s; the array is %s (survives %d more "
		       "member failure%s)", name, slot, cli_jstr(res, "failed_device"),
		       was ? "was already faulty" : "marked faulty", cli_jstr(res, "state"),
		       red, red == 1 ? "" : "s");
		/* A hot spare that took the slot. */
		json_object *ms = NULL;
		json_object_object_get_ex(res, "members", &ms);
		for (size_t i = 0; ms && i < json_object_array_length(ms); i++) {
			json_object *m = json_object_array_get_idx(ms, i);
			if (cli_ju64(m, "slot") == slot && strcmp(cli_jstr(m, "device"),
								 cli_jstr(res, "failed_device")))
				printf("; spare %s took the slot (%s)", cli_jstr(m, "device"),
				       cli_jstr(m, "state"));
		}
		printf("\n");
	}
	json_object_put(resp);
	return TC_EXIT_OK;
}

/* A device operand as the server names it: absolute (into @abs). */
static const char *server_spec(const char *dev, char *abs, size_t len)
{
	return cli_abs_spec_named(dev, abs, len) == 0 ? abs : dev;
}

/* Send @req (consumed) to the server: its result (the caller puts *@resp), or NULL
 * after a message (nothing left to put). */
static json_object *send_req(const char *control, json_object *req, json_object **resp)
{
	json_object *res = call(control, req, resp);
	json_object_put(req);
	if (!res) {
		json_object_put(*resp);
		*resp = NULL;
	}
	return res;
}

/* Send @req (consumed) and print the array of the answer: JSON, or @what (NULL: the
 * answer's "removed" device) and a short status line. */
static int array_change(const char *control, json_object *req, bool json, const char *name,
			const char *what)
{
	json_object *resp, *res = send_req(control, req, &resp);
	if (!res)
		return TC_EXIT_FAIL;
	if (json) {
		print_json(res);
	} else {
		json_object *jr;
		json_object_object_get_ex(res, "redundancy", &jr);
		int red = jr && json_object_get_int(jr) > 0 ? json_object_get_int(jr) : 0;
		char removed[4096 + 16];
		if (!what) {   /* array remove: the device the server took out */
			snprintf(removed, sizeof(removed), "%s removed", cli_jstr(res, "removed"));
			what = removed;
		}
		printf("array %s: %s; the array is %s (survives %d more member failure%s)", name,
		       what, cli_jstr(res, "state"), red, red == 1 ? "" : "s");
		if (strcmp(cli_jstr(res, "sync"), "idle"))
			printf(", %s running", cli_jstr(res, "sync"));
		printf("\n");
	}
	json_object_put(resp);
	return TC_EXIT_OK;
}

static json_object *array_req(const char *op, const char *name)
{
	json_object *req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string(op));
	json_object_object_add(req, "array", json_object_new_string(name));
	return req;
}

/* `array add-spare --global DEVICE` and `array remove --global DEVICE`. */
static int global_spare(int argc, char **argv, const char *control, bool json, bool force,
			bool add)
{
	if (argc - optind != 1)
		return cli_usage("array %s --global: expected DEVICE (and no array NAME)",
				 add ? "add-spare" : "remove");
	char abs[PATH_MAX];
	const char *dev = server_spec(argv[optind], abs, sizeof(abs));
	json_object *req = json_object_new_object(), *resp;
	json_object_object_add(req, "op", json_object_new_string(add ? "global_spare_add" :
								   "global_spare_remove"));
	json_object_object_add(req, "device", json_object_new_string(dev));
	if (force)
		json_object_object_add(req, "force", json_object_new_boolean(1));
	json_object *res = send_req(control, req, &resp);
	if (!res)
		return TC_EXIT_FAIL;
	if (json) {
		print_json(res);
	} else {
		json_object *gs = NULL;
		json_object_object_get_ex(res, "global_spares", &gs);
		size_t n = gs ? json_object_array_length(gs) : 0;
		json_object *jby = NULL;
		json_object_object_get_ex(res, "taken_by", &jby);
		const char *by = jby ? json_object_get_string(jby) : "";
		if (!add)
			printf("global spare %s removed; %zu left in the pool\n", dev, n);
		else if (*by)
			printf("global spare %s added, and taken at once by array %s (a member "
			       "was faulty): rebuilding\n", dev, by);
		else
			printf("global spare %s added; %zu in the pool (not kept across a "
			       "restart: give it to `tiercache serve --spare` too)\n", dev, n);
	}
	json_object_put(resp);
	return TC_EXIT_OK;
}

/* `array SUB NAME DEVICE`: request @op for the array NAME with DEVICE (made absolute
 * for the server) and "force" when @force; says "DEVICE @what" after. */
static int device_change(int argc, char **argv, const char *control, bool json,
			 const char *sub, const char *op, bool force, const char *what)
{
	if (argc - optind != 2)
		return cli_usage("array %s: expected NAME DEVICE", sub);
	const char *name = argv[optind];
	char abs[PATH_MAX], line[PATH_MAX + 64];
	const char *dev = server_spec(argv[optind + 1], abs, sizeof(abs));
	json_object *req = array_req(op, name);
	json_object_object_add(req, "device", json_object_new_string(dev));
	if (force)
		json_object_object_add(req, "force", json_object_new_boolean(1));
	snprintf(line, sizeof(line), "%s %s", dev, what);
	return array_change(control, req, json, name, line);
}

static int array_add_spare(int argc, char **argv, const char *control, bool json,
			   bool force)
{
	return device_change(argc, argv, control, json, "add-spare", "array_add_spare", force,
			     "added as a hot spare");
}

static int array_re_add(int argc, char **argv, const char *control, bool json)
{
	return device_change(argc, argv, control, json, "re-add", "array_re_add", false,
			     "back in its slot: resyncing what it missed");
}

static int array_remove(int argc, char **argv, const char *control, bool json)
{
	if (argc - optind != 2)
		return cli_usage("array remove: expected NAME MEMBER");
	const char *name = argv[optind];
	char abs[PATH_MAX];
	const char *m = argv[optind + 1];
	if (is_device(m))
		m = server_spec(m, abs, sizeof(abs));
	json_object *req = array_req("array_remove", name);
	json_object_object_add(req, "member", json_object_new_string(m));
	return array_change(control, req, json, name, NULL);
}

static int array_replace(int argc, char **argv, const char *control, bool json, bool force)
{
	if (argc - optind != 3)
		return cli_usage("array replace: expected NAME SLOT DEVICE");
	const char *name = argv[optind];
	uint64_t slot;
	if (cli_uint("array replace: SLOT", argv[optind + 1], 0, TC_ARRAY_MAX_MEMBERS - 1, &slot))
		return TC_EXIT_USAGE;
	char abs[PATH_MAX], what[PATH_MAX + 64];
	const char *dev = server_spec(argv[optind + 2], abs, sizeof(abs));
	json_object *req = array_req("array_replace", name);
	json_object_object_add(req, "slot", json_object_new_int64((int64_t)slot));
	json_object_object_add(req, "device", json_object_new_string(dev));
	if (force)
		json_object_object_add(req, "force", json_object_new_boolean(1));
	snprintf(what, sizeof(what), "copying slot %" PRIu64 " onto %s", slot, dev);
	return array_change(control, req, json, name, what);
}

static int array_check(int argc, char **argv, const char *control, bool json, bool repair)
{
	if (argc - optind != 1)
		return cli_usage("array check: expected NAME");
	const char *name = argv[optind];
	json_object *req = array_req("array_check", name);
	if (repair)
		json_object_object_add(req, "repair", json_object_new_boolean(1));
	return array_change(control, req, json, name, repair ? "repair started (progress "
			    "in `tiercache array status`)" : "check started (progress in "
			    "`tiercache array status`)");
}

/* A rate in MB/s (1 MB = 10^6 bytes; "unlimited" for --max): bytes/s. */
static int rate_arg(const char *opt, const char *arg, bool unlimited, uint64_t *out)
{
	if (unlimited && !strcmp(arg, "unlimited")) {
		*out = UINT64_MAX;
		return 0;
	}
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || v > 1e9) {
		cli_usage("%s: \"%s\" is not a rate in MB/s (above 0, up to 1000000000%s)", opt,
			  arg, unlimited ? ", or \"unlimited\"" : "");
		return -1;
	}
	*out = (uint64_t)(v * 1e6);
	return 0;
}

static int array_rebuild_rate(int argc, char **argv, const char *control, bool json,
			      const char *min, const char *max, const char *prio)
{
	if (argc - optind != 1)
		return cli_usage("array rebuild-rate: expected NAME");
	const char *name = argv[optind];
	uint64_t v;
	json_object *req = array_req("array_set_rebuild", name);
	if (min) {
		if (rate_arg("--min", min, false, &v)) {
			json_object_put(req);
			return TC_EXIT_USAGE;
		}
		json_object_object_add(req, "min_rate", json_object_new_uint64(v));
	}
	if (max) {
		if (rate_arg("--max", max, true, &v)) {
			json_object_put(req);
			return TC_EXIT_USAGE;
		}
		json_object_object_add(req, "max_rate", json_object_new_uint64(v));
	}
	if (prio) {
		if (cli_uint("--priority", prio, 0, 100, &v)) {
			json_object_put(req);
			return TC_EXIT_USAGE;
		}
		json_object_object_add(req, "priority", json_object_new_uint64(v));
	}
	json_object *resp, *res = call(control, req, &resp);
	json_object_put(req);
	if (!res) {
		json_object_put(resp);
		return TC_EXIT_FAIL;
	}
	json_object *rb = NULL;
	json_object_object_get_ex(res, "rebuild", &rb);
	if (json) {
		print_json(rb);
	} else {
		uint64_t lo = cli_ju64(rb, "min_rate"), hi = cli_ju64(rb, "max_rate");
		printf("array %s: rebuild and check rate min %.1f MB/s, max ", name,
		       (double)(lo ? lo : TC_ARRAY_REBUILD_MIN_DEFAULT) / 1e6);
		if (hi == UINT64_MAX)
			printf("unlimited");
		else
			printf("%.1f MB/s", (double)(hi ? hi : TC_ARRAY_REBUILD_MAX_DEFAULT) / 1e6);
		printf(", priority %" PRIu64 " (per member)\n", cli_ju64(rb, "priority"));
	}
	json_object_put(resp);
	return TC_EXIT_OK;
}

int cmd_array(int argc, char **argv)
{
	const char *control = TC_CONTROL_DEFAULT;
	const char *min = NULL, *max = NULL, *prio = NULL;
	bool json = false, force = false, repair = false, global = false;
	int c;
	static const char *const subs[] = { "status", "assemble", "fail", "add-spare", "re-add",
					     "remove", "replace", "check", "rebuild-rate" };

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return cli_help(help);
	if (argc < 2)
		return cli_usage("expected `array status|assemble|fail|add-spare|re-add|remove|"
				 "replace|check|rebuild-rate ...`");
	const char *sub = argv[1];
	bool known = false;
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		known |= !strcmp(sub, subs[i]);
	if (!known)
		return cli_usage("array: \"%s\": expected status, assemble, fail, add-spare, "
				 "re-add, remove, replace, check or rebuild-rate", sub);
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "h", array_options, NULL)) != -1) {
		switch (c) {
		case OPT_CONTROL: control = optarg; break;
		case OPT_JSON: json = true; break;
		case OPT_FORCE: force = true; break;
		case OPT_REPAIR: repair = true; break;
		case OPT_MIN: min = optarg; break;
		case OPT_MAX: max = optarg; break;
		case OPT_PRIORITY: prio = optarg; break;
		case OPT_GLOBAL: global = true; break;
		case 'h':
		case OPT_HELP: return cli_help(help);
		default: return cli_bad_option(argv + 1);
		}
	}
	if (force && strcmp(sub, "assemble") && strcmp(sub, "add-spare") && strcmp(sub, "replace") &&
	    strcmp(sub, "fail"))
		return cli_usage("--force: for `array assemble`, `fail`, `add-spare` and `replace` "
				 "only");
	if (repair && strcmp(sub, "check"))
		return cli_usage("--repair: for `array check` only");
	if ((min || max || prio) && strcmp(sub, "rebuild-rate"))
		return cli_usage("--%s: for `array rebuild-rate` only",
				 min ? "min" : max ? "max" : "priority");
	if (!strcmp(sub, "assemble")) {
		if (argc - 1 - optind < 1)
			return cli_usage("array assemble: expected the member devices");
		return offline(argv + 1 + optind, (unsigned)(argc - 1 - optind), json, true,
			       force);
	}
	if (!strcmp(sub, "status"))
		return array_status(argc - 1, argv + 1, control, json);
	if (global && strcmp(sub, "add-spare") && strcmp(sub, "remove"))
		return cli_usage("--global: for `array add-spare` and `array remove` only");
	if (global)
		return global_spare(argc - 1, argv + 1, control, json, force,
				    !strcmp(sub, "add-spare"));
	if (!strcmp(sub, "add-spare"))
		return array_add_spare(argc - 1, argv + 1, control, json, force);
	if (!strcmp(sub, "re-add"))
		return array_re_add(argc - 1, argv + 1, control, json);
	if (!strcmp(sub, "remove"))
		return array_remove(argc - 1, argv + 1, control, json);
	if (!strcmp(sub, "replace"))
		return array_replace(argc - 1, argv + 1, control, json, force);
	if (!strcmp(sub, "check"))
		return array_check(argc - 1, argv + 1, control, json, repair);
	if (!strcmp(sub, "rebuild-rate"))
		return array_rebuild_rate(argc - 1, argv + 1, control, json, min, max, prio);
	return array_fail(argc - 1, argv + 1, control, json, force);
}
