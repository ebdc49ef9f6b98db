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
"    tiercache create - format a backing device (a volume) or a cache device, or\n"
"    create an array (software RAID) over member devices\n"
"\n"
"SYNOPSIS\n"
"    tiercache create backing DEVICE --name NAME [--stripe-size SIZE] [--size SIZE]\n"
"                     [--read-cache on|off] [--write-policy wt|wb|wa|pt|instwb]\n"
"                     [--flush-rate low|medium|high] [--force] [--json]\n"
"    tiercache create cache DEVICE [--line-size SIZE] [--replacement POLICY]\n"
"                     [--checksums on|off] [--unprotected-writeback] [--size SIZE]\n"
"                     [--force] [--discard-dirty] [--json]\n"
"    tiercache create array NAME --level 0|1|5|6|10 [--chunk SIZE] [--copies N]\n"
"                     [--spare DEVICE]... [--assume-clean] [--consistency-policy ppl|bitmap]\n"
"                     [--force] [--json] DEVICE...\n"
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
"    `create array` writes a member superblock on every DEVICE (in slot order) and on\n"
"    every --spare, making the array NAME: RAID 0 (striping), 1 (n-way mirror), 10\n"
"    (striped mirrors, md's near layout), 5 (one parity chunk per stripe) or 6 (two).\n"
"    Each member's first 8 MiB hold the array's metadata; the array's data follows.\n"
"    Members of different sizes are used up to the smallest (said on stderr).  On the\n"
"    redundant levels the members' data areas are zeroed first, so that parity and\n"
"    copies agree (a hole punch on sparse files; on disks it writes every byte, unless\n"
"    --assume-clean), and the array records which regions are ever written, so that\n"
"    a rebuild reads the survivors only where data was written.  Refused, before\n"
"    anything is written: a name that is not valid, too few members for the level\n"
"    (raid0 and raid1 2, raid5 3, raid6 4, raid10 the copies), a device given twice,\n"
"    a chunk that is not a power of two from 4K to 64M (RAID 0: a multiple of 4K),\n"
"    a member too small, and, unless --force, a device that holds another array's\n"
"    member superblock, a tiercache cache or backing, a file system or another\n"
"    format's signature.\n"
"    Afterwards the array is array:DEVICE,DEVICE,... wherever a device is named\n"
"    (e.g. `create backing array:d0,d1,d2 --name vol`), and `serve` takes the members\n"
"    among its devices; see `tiercache array --help`.\n"
"\n"
"    DEVICE is a path (file or block device), crash:PATH (a crash-test device, for\n"
"    tests), emu:PROFILE:PATH (an emulated HDD or SSD), nbd:URI (an NBD export,\n"
"    e.g. nbd:nbd://host/name; its size is the server's), rbd:POOL/IMAGE[@CONF]\n"
"    (a Ceph RBD image; its size is the image's) or array:MEMBER,MEMBER,...\n"
"    (an array, assembled from its members in any order).  A missing file is created\n"
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
"    --read-cache on|off, --write-policy wt|wb|wa|pt|instwb, --flush-rate low|medium|high\n"
"                           the volume's initial settings (see `tiercache set --help`)\n"
"    --line-size SIZE       cache line size: 4K, 8K, 16K, 32K or 64K (default 64K)\n"
"    --replacement POLICY   which resident line a miss evicts: s3fifo (default), lru,\n"
"                           arc, 2q, sieve, wtinylfu, lirs or wtinylfu-hc (W-TinyLFU\n"
"                           with an adaptive window; docs/policy.md compares\n"
"                           them); --policy POLICY is the same option\n"
"    --checksums on|off     check cached data on every read from the cache device\n"
"                           (default on): a 32-bit XXH3 of each 4 KiB unit is kept in\n"
"                           RAM (4 bytes per 4 KiB of cache, 1 GiB per TiB); a clean\n"
"                           unit that fails is read from the backing and filled again,\n"
"                           a dirty one is an I/O error and is never written back\n"
"    --unprotected-writeback\n"
"                           allow write-back (wb, instwb) on a cache device without\n"
"                           redundancy (a single SSD, a RAID 0), stored in the\n"
"                           superblock: dirty data is lost if that device fails.\n"
"                           Without it, write-back needs a cache that survives a\n"
"                           device failure (redundancy >= 1: RAID 1, 10, 5) and is\n"
"                           refused otherwise; status warns about such a cache.\n"
"                           Caches formatted before this option existed keep\n"
"                           write-back as if it had been given\n"
"    --size SIZE            create DEVICE as a sparse file of SIZE if it does not exist\n"
"    --force                overwrite a device that holds data (see Safety)\n"
"    --discard-dirty        also overwrite a cache that holds dirty data, or a\n"
"                           write-back backing (that data is lost; implies --force)\n"
"    --json                 print the result as JSON\n"
"    --level LEVEL          array: 0, 1, 5, 6 or 10 (also raid0 ... raid10)\n"
"    --chunk SIZE           array: bytes per member per stripe, a power of two from\n"
"                           4K to 64M (default 256K); RAID 0 any multiple of 4K\n"
"                           (the outer array of a RAID 60 of twelve-disk legs:\n"
"                           one leg stripe, 10 x 256K = 2560K)\n"
"    --copies N             array, raid10 only: copies of every chunk (default 2)\n"
"    --spare DEVICE         array: a hot spare (repeatable), kept for a rebuild\n"
"    --assume-clean         array: the members' data areas agree already (zeros, or\n"
"                           an array's data when re-creating it over its members in\n"
"                           their order, as with mdadm): nothing is written to them,\n"
"                           and every region counts as written\n"
"    --consistency-policy P array, raid5/raid6: how parity is made consistent after a\n"
"                           crash.  ppl (default): a partial-parity log on the members\n"
"                           closes the write hole; bitmap: a write-intent map, resync of\n"
"                           the regions written (the write hole stays open).  raid1 and\n"
"                           raid10 always keep the write-intent map (bitmap; ppl is\n"
"                           refused); raid0 takes no policy\n"
"\n"
"EXAMPLES\n"
"    truncate -s 20G /srv/hdd.img && truncate -s 2G /srv/ssd.img\n"
"    tiercache create backing /srv/hdd.img --name db\n"
"    tiercache create cache /srv/ssd.img --line-size 64K --unprotected-writeback\n"
"    tiercache create array data --level 6 --chunk 256K /srv/d0.img /srv/d1.img \\\n"
"        /srv/d2.img /srv/d3.img --spare /srv/s0.img\n"
"    tiercache create backing array:/srv/d0.img,/srv/d1.img,/srv/d2.img,/srv/d3.img \\\n"
"        --name db\n"
"\n"
"EXIT STATUS\n"
"    0 formatted, 1 refused or failed (nothing changed), 2 bad usage.\n";

enum { OPT_NAME = 256, OPT_STRIPE, OPT_LINE, OPT_REPL, OPT_SIZE, OPT_FORCE, OPT_DISCARD,
       OPT_JSON, OPT_RC, OPT_WP, OPT_FR, OPT_CSUM, OPT_UNPROT, OPT_HELP };

static const struct option options[] = {
	{ "name", required_argument, NULL, OPT_NAME },
	{ "stripe-size", required_argument, NULL, OPT_STRIPE },
	{ "line-size", required_argument, NULL, OPT_LINE },
	{ "replacement", required_argument, NULL, OPT_REPL },
	{ "policy", required_argument, NULL, OPT_REPL },
	{ "checksums", required_argument, NULL, OPT_CSUM },
	{ "unprotected-writeback", no_argument, NULL, OPT_UNPROT },
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
	    tc_write_policy_is_wb(p->settings.write_policy) && !discard_dirty) {
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
	if (argc >= 2 && !strcmp(argv[1], "array"))
		return cmd_create_array(argc - 1, argv + 1, help);
	const char *name = NULL, *line_arg = NULL, *stripe_arg = NULL;
	uint64_t stripe = 0, line = 0, size = 0;
	int repl = -1, csum = -1;
	bool force = false, discard = false, json = false, unprot = false;
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
				return cli_usage("--replacement/--policy: \"%s\" is not s3fifo, "
						 "lru, arc, 2q, sieve, wtinylfu, lirs or wtinylfu-hc", optarg);
			break;
		case OPT_SIZE:
			if (cli_size("--size", optarg, &size))
				return TC_EXIT_USAGE;
			if (size == 0 || size % 4096)
				return cli_usage("--size: \"%s\" is not a positive multiple of 4K",
						 optarg);
			break;
		case OPT_FORCE: force = true; break;
		case OPT_UNPROT: unprot = true; break;
		case OPT_DISCARD: discard = true; break;
		case OPT_JSON: json = true; break;
		case OPT_RC:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return cli_usage("--read-cache: \"%s\" is not on or off", optarg);
			set.read_cache = !strcmp(optarg, "on");
			break;
		case OPT_WP:
			if ((v = tc_write_policy_parse(optarg)) < 0)
				return cli_usage("--write-policy: \"%s\" is not wt, wb, wa, pt or instwb",
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
	if (backing && unprot)
		return cli_usage("create backing: --unprotected-writeback is for caches");
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
		o.unprotected_writeback = unprot;
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
			printf(",\"line_size\":%u,\"lines\":%" PRIu64 ",\"unprotected_writeback\":%s}\n",
			       p.line_size, p.lines, unprot ? "true" : "false");
	} else if (backing) {
		printf("backing %s: volume \"%s\", %s, uuid %s\n", spec, p.name,
		       tc_size_format(p.volume_size, hb, sizeof(hb)), p.uuid);
	} else {
		printf("cache %s: %" PRIu64 " lines of %s (%s), uuid %s%s\n", spec, p.lines,
		       tc_size_format(p.line_size, hb, sizeof(hb)),
		       tc_size_format(p.lines * p.line_size, (char[32]){0}, 32), p.uuid,
		       unprot ? "; write-back allowed without redundancy" : "");
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
