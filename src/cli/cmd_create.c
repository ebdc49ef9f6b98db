/* SPDX-License-Identifier: MIT */
/*
 * cmd_create.c - `tiercache create backing|cache DEVICE`: format a device, refusing to
 * overwrite what it holds unless told, and never losing dirty data by accident.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
"NAME\n"
"    tiercache create - format a backing device (a volume) or a cache device\n"
"\n"
"SYNOPSIS\n"
"    tiercache create backing DEVICE --name NAME [--stripe-size SIZE] [--size SIZE]\n"
"                     [--read-cache on|off] [--write-policy wt|wb|wa|pt]\n"
"                     [--flush-rate low|medium|high] [--force] [--json]\n"
"    tiercache create cache DEVICE [--line-size SIZE] [--replacement s3fifo|lru]\n"
"                     [--checksums on|off] [--size SIZE] [--force] [--discard-dirty]\n"
"                     [--json]\n"
"\n"
"DESCRIPTION\n"
"    `create backing` writes a backing superblock on DEVICE (the slow device or array)\n"
"    naming the volume NAME; the volume's data starts 1 MiB into the device.  The\n"
"    volume's settings (given here, or the defaults: read cache on, write-back, medium\n"
"    flush rate) are stored on the device and used when it is attached to a cache.\n"
"\n"
"    `create cache` writes an empty cache onto DEVICE (the fast device): two superblock\n"
"    copies and the metadata area.  One cache serves up to 64 volumes.\n"
"\n"
"    DEVICE is a path (file or block device), crash:PATH (a crash-test device, for\n"
"    tests), emu:PROFILE:PATH (an emulated HDD or SSD) or nbd:URI (an NBD export,\n"
"    e.g. nbd:nbd://host/name; its size is the server's).  A missing file is created\n"
"    (sparse) when --size is given.\n"
"\n"
"    Safety: a device that holds a file system, a partition table, another format's\n"
"    superblock or a tiercache superblock is refused unless --force.  A device holding\n"
"    a cache with dirty data, or the backing of a write-back volume (whose cache may\n"
"    hold its newest data), is refused even with --force, since formatting would lose\n"
"    that data: detach the volumes first, or give --discard-dirty to throw it away.\n"
"    A device in use by a running server (locked) is refused.  A refused command\n"
"    changes nothing.\n"
"\n"
"OPTIONS\n"
"    --name NAME            volume name: 1-31 characters of [A-Za-z0-9._-]\n"
"    --stripe-size SIZE     full-stripe size of the array behind the backing (power of\n"
"                           two, 4K..16M; 0 = none), recorded for stripe-aware writeback\n"
"    --read-cache on|off, --write-policy wt|wb|wa|pt, --flush-rate low|medium|high\n"
"                           the volume's initial settings (see `tiercache set --help`)\n"
"    --line-size SIZE       cache line size: 4K, 8K, 16K, 32K or 64K (default 64K)\n"
"    --replacement POLICY   s3fifo (default) or lru\n"
"    --checksums on|off     check cached data on every read from the cache device\n"
"                           (default on): a 32-bit XXH3 of each 4 KiB unit is kept in\n"
"                           RAM (4 bytes per 4 KiB of cache, 1 GiB per TiB); a clean\n"
"                           unit that fails is read from the backing and filled again,\n"
"                           a dirty one is an I/O error and is never written back\n"
"    --size SIZE            create DEVICE as a sparse file of SIZE if it does not exist\n"
"    --force                overwrite a device that holds data (see Safety)\n"
"    --discard-dirty        also overwrite a cache that holds dirty data, or a\n"
"                           write-back backing (that data is lost; implies --force)\n"
"    --json                 print the result as JSON\n"
"\n"
"EXAMPLES\n"
"    truncate -s 20G /srv/hdd.img && truncate -s 2G /srv/ssd.img\n"
"    tiercache create backing /srv/hdd.img --name db\n"
"    tiercache create cache /srv/ssd.img --line-size 64K\n"
"\n"
"EXIT STATUS\n"
"    0 formatted, 1 refused or failed (nothing changed), 2 bad usage.\n";

enum { OPT_NAME = 256, OPT_STRIPE, OPT_LINE, OPT_REPL, OPT_SIZE, OPT_FORCE, OPT_DISCARD,
       OPT_JSON, OPT_RC, OPT_WP, OPT_FR, OPT_CSUM, OPT_HELP };

static const struct option options[] = {
	{ "name", required_argument, NULL, OPT_NAME },
	{ "stripe-size", required_argument, NULL, OPT_STRIPE },
	{ "line-size", required_argument, NULL, OPT_LINE },
	{ "replacement", required_argument, NULL, OPT_REPL },
	{ "checksums", required_argument, NULL, OPT_CSUM },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "discard-dirty", no_argument, NULL, OPT_DISCARD },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "read-cache", required_argument, NULL, OPT_RC },
	{ "write-policy", required_argument, NULL, OPT_WP },
	{ "flush-rate", required_argument, NULL, OPT_FR },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static bool pow2_in(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

/* Refuse unless what @p shows may be overwritten.  Returns 0 to go on, or 1. */
static int check_overwrite(tc_ctx *ctx, tc_dev *dev, const char *spec,
			   const struct tc_probe *p, bool force, bool discard_dirty)
{
	if (p->kind == TC_PROBE_EMPTY)
		return 0;
	if (p->kind == TC_PROBE_CACHE) {
		struct tc_cache_report *rep = calloc(1, sizeof(*rep));
		if (!rep)
			return 1;
		int r = tc_cache_inspect(ctx, dev, rep);
		uint64_t dirty = 0;
		char names[256] = "";
		for (unsigned i = 0; i < rep->nvolumes; i++) {
			if (!rep->volumes[i].dirty_bytes)
				continue;
			dirty += rep->volumes[i].dirty_bytes;
			size_t n = strlen(names);
			snprintf(names + n, sizeof(names) - n, "%s\"%s\"", n ? ", " : "",
				 rep->volumes[i].name);
		}
		free(rep);
		char hb[32];
		if (dirty && !discard_dirty) {
			cli_err("device %s: holds cache %s with %s of dirty data (volumes %s); "
				"formatting would lose it.  Detach the volumes first (tiercache "
				"detach), or give --discard-dirty to throw the data away", spec,
				p->uuid, tc_size_format(dirty, hb, sizeof(hb)), names);
			return 1;
		}
		if (r && !discard_dirty) {
			cli_err("device %s: holds cache %s whose metadata cannot be read, so it "
				"may hold dirty data; give --discard-dirty to format it anyway",
				spec, p->uuid);
			return 1;
		}
		if (!force && !discard_dirty) {
			cli_err("device %s: holds tiercache cache %s (%u volume records, no dirty "
				"data); give --force to format it", spec, p->uuid, p->nvolumes);
			return 1;
		}
		return 0;
	}
	if (p->kind == TC_PROBE_BACKING && p->cache_uuid[0] &&
	    p->settings.write_policy == TC_WP_WB && !discard_dirty) {
		/* Its cache may hold the volume's newest data: formatting the backing would
		 * orphan it.  Only the cache knows; without it, assume so. */
		cli_err("device %s: holds the backing of volume \"%s\", attached in write-back "
			"to cache %s, which may hold its dirty data; detach the volume first "
			"(tiercache detach), or give --discard-dirty to format it anyway", spec,
			p->name, p->cache_uuid);
		return 1;
	}
	if (p->kind == TC_PROBE_UNKNOWN && strstr(p->what, "too small")) {
		cli_err("device %s: %s for a tiercache device", spec, p->what);
		return 1;
	}
	if (force || discard_dirty)
		return 0;
	if (p->kind == TC_PROBE_BACKING)
		cli_err("device %s: holds the tiercache backing of volume \"%s\"%s%s; give "
			"--force to format it", spec, p->name,
			p->cache_uuid[0] ? ", attached to cache " : "", p->cache_uuid);
	else
		cli_err("device %s: holds %s; give --force to format it", spec, p->what);
	return 1;
}

int cmd_create(int argc, char **argv)
{
	const char *name = NULL, *line_arg = NULL, *stripe_arg = NULL;
	uint64_t stripe = 0, line = 0, size = 0;
	int repl = -1, csum = -1;
	bool force = false, discard = false, json = false;
	struct tc_volume_settings set;
	tc_volume_settings_default(&set);
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		int v;
		switch (c) {
		case OPT_NAME: name = optarg; break;
		case OPT_STRIPE:
			stripe_arg = optarg;
			if (cli_size("--stripe-size", optarg, &stripe))
				return TC_EXIT_USAGE;
			break;
		case OPT_LINE:
			line_arg = optarg;
			if (cli_size("--line-size", optarg, &line))
				return TC_EXIT_USAGE;
			break;
		case OPT_CSUM:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return cli_usage("--checksums: \"%s\" is not on or off", optarg);
			csum = !strcmp(optarg, "on");
			break;
		case OPT_REPL:
			if ((repl = tc_replacement_parse(optarg)) < 0)
				return cli_usage("--replacement: \"%s\" is not s3fifo or lru", optarg);
			break;
		case OPT_SIZE:
			if (cli_size("--size", optarg, &size))
				return TC_EXIT_USAGE;
			if (size == 0 || size % 4096)
				return cli_usage("--size: \"%s\" is not a positive multiple of 4K",
						 optarg);
			break;
		case OPT_FORCE: force = true; break;
		case OPT_DISCARD: discard = true; break;
		case OPT_JSON: json = true; break;
		case OPT_RC:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return cli_usage("--read-cache: \"%s\" is not on or off", optarg);
			set.read_cache = !strcmp(optarg, "on");
			break;
		case OPT_WP:
			if ((v = tc_write_policy_parse(optarg)) < 0)
				return cli_usage("--write-policy: \"%s\" is not wt, wb, wa or pt",
						 optarg);
			set.write_policy = (uint8_t)v;
			break;
		case OPT_FR:
			if ((v = tc_flush_rate_parse(optarg)) < 0)
				return cli_usage("--flush-rate: \"%s\" is not low, medium or high",
						 optarg);
			set.flush_rate = (uint8_t)v;
			break;
		case 'h':
		case OPT_HELP: return cli_help(help);
		default: return cli_bad_option(argv);
		}
	}
	if (argc - optind != 2)
		return cli_usage("expected `backing DEVICE` or `cache DEVICE`");
	const char *kind = argv[optind], *spec = argv[optind + 1];
	bool backing = !strcmp(kind, "backing");
	if (!backing && strcmp(kind, "cache"))
		return cli_usage("\"%s\": expected backing or cache", kind);
	if (backing && !name)
		return cli_usage("create backing: --name NAME is required");
	if (!backing && (name || stripe))
		return cli_usage("create cache: --name and --stripe-size are for backings");
	if (backing && (line || repl >= 0 || csum >= 0))
		return cli_usage("create backing: --line-size, --replacement and --checksums are "
				 "for caches");
	if (backing && !tc_volume_name_valid(name))
		return cli_usage("--name: \"%s\" is not a volume name (1-%d characters of "
				 "[A-Za-z0-9._-], not \".\", \"..\" or starting with '-')", name,
				 TC_NAME_MAX - 1);
	if (line_arg && !pow2_in(line, 4096, 65536))
		return cli_usage("--line-size: \"%s\" is not 4K, 8K, 16K, 32K or 64K",
				 line_arg);
	if (stripe && !pow2_in(stripe, 4096, TC_STRIPE_MAX))
		return cli_usage("--stripe-size: \"%s\" is not a power of two from 4K to 16M",
				 stripe_arg);

	unsigned flags = TC_DEV_EXCLUSIVE;
	const char *path = tc_dev_spec_path(spec);
	struct stat st;
	if (!path) {
		if (size)
			return cli_usage("--size: device %s is remote; its size is the server's",
					 spec);
	} else if (stat(path, &st) < 0) {
		if (errno != ENOENT || !size) {
			cli_err("device %s: %s%s", spec, strerror(errno), errno == ENOENT ?
				" (give --size SIZE to create a file)" : "");
			return TC_EXIT_FAIL;
		}
		flags |= TC_DEV_CREATE;
	} else if (size && S_ISREG(st.st_mode) && (uint64_t)st.st_size != size) {
		cli_err("device %s: exists with %" PRIu64 " bytes; --size %" PRIu64 " only "
			"creates missing files", spec, (uint64_t)st.st_size, size);
		return TC_EXIT_FAIL;
	}
	tc_ctx *ctx = cli_ctx(false);
	tc_dev *dev;
	int rc = TC_EXIT_FAIL;
	int r = tc_dev_open_spec(ctx, spec, flags, size, 1, &dev);
	if (r) {
		tc_ctx_free(ctx);
		if (flags & TC_DEV_CREATE)
			unlink(path);
		return TC_EXIT_FAIL;
	}
	struct tc_probe p;
	r = tc_dev_probe(ctx, dev, &p);
	if (r || check_overwrite(ctx, dev, spec, &p, force, discard))
		goto out;
	if (backing) {
		r = tc_backing_format_striped(ctx, dev, name, &set, (uint32_t)stripe);
	} else {
		struct tc_cache_opts o;
		tc_cache_opts_default(&o);
		if (line)
			o.line_size = (uint32_t)line;
		if (repl >= 0)
			o.replacement = (uint8_t)repl;
		if (csum >= 0)
			o.checksums = csum;
		r = tc_cache_format(ctx, dev, &o);
	}
	if (r)
		goto out;
	r = tc_dev_probe(ctx, dev, &p);
	if (r)
		goto out;
	char hb[32];
	if (json) {
		printf("{\"device\":\"%s\",\"kind\":\"%s\",\"uuid\":\"%s\"", spec, kind, p.uuid);
		if (backing)
			printf(",\"name\":\"%s\",\"size\":%" PRIu64 ",\"stripe_size\":%u}\n",
			       p.name, p.volume_size, p.stripe_size);
		else
			printf(",\"line_size\":%u,\"lines\":%" PRIu64 "}\n", p.line_size, p.lines);
	} else if (backing) {
		printf("backing %s: volume \"%s\", %s, uuid %s\n", spec, p.name,
		       tc_size_format(p.volume_size, hb, sizeof(hb)), p.uuid);
	} else {
		printf("cache %s: %" PRIu64 " lines of %s (%s), uuid %s\n", spec, p.lines,
		       tc_size_format(p.line_size, hb, sizeof(hb)),
		       tc_size_format(p.lines * p.line_size, (char[32]){0}, 32), p.uuid);
	}
	rc = TC_EXIT_OK;
out:
	tc_dev_close(dev);
	tc_ctx_free(ctx);
	/* A refused command changes nothing: not even the file it just created. */
	if (rc != TC_EXIT_OK && (flags & TC_DEV_CREATE))
		unlink(path);
	return rc;
}
