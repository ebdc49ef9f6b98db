/* SPDX-License-Identifier: MIT */
/*
 * cmd_forget.c - `tiercache forget-cache BACKING [--cache DEVICE]`: the recovery of a
 * volume whose cache is lost for good (a dead SSD): the backing forgets its cache and
 * can be served alone, or attached to a new cache.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"

static const char help[] =
"NAME\n"
"    tiercache forget-cache - let a volume go on without a cache that is lost\n"
"\n"
"SYNOPSIS\n"
"    tiercache forget-cache BACKING [--cache DEVICE] [--discard-dirty] [--json]\n"
"\n"
"DESCRIPTION\n"
"    For a volume whose cache device is gone for good (a failed SSD, a lost\n"
"    partition): records on BACKING that it has no cache any more, keeping the\n"
"    volume's name, size and settings.  `tiercache serve BACKING` then serves the\n"
"    volume alone, and `tiercache attach` can give it a new cache.  The data on\n"
"    BACKING is not touched.\n"
"\n"
"    In write-back the lost cache may have held data that never reached BACKING: that\n"
"    data is lost, and the volume holds what BACKING holds (older data in the places\n"
"    the cache had not yet written back).  Give the old cache's device with --cache\n"
"    when any of it can still be read: its metadata says how much dirty data it held\n"
"    for the volume, and when it can still be read whole, the command refuses (serve\n"
"    both devices and `tiercache flush` the volume instead) unless --discard-dirty.\n"
"\n"
"    The old cache, if it comes back, is stale for this volume: attaching the volume\n"
"    to it drops (or, with dirty lines, refuses) its old copies.\n"
"\n"
"    Offline only: BACKING must not be served (the command takes its lock).\n"
"\n"
"OPTIONS\n"
"    --cache DEVICE     the old cache's device, if it can still be read: its dirty\n"
"                       data for the volume is reported (read-only)\n"
"    --discard-dirty    forget the cache even though DEVICE still holds the volume's\n"
"                       dirty data\n"
"    --json             print the result as one JSON object\n"
"\n"
"EXAMPLES\n"
"    tiercache forget-cache /dev/md0\n"
"    tiercache forget-cache /dev/md0 --cache /dev/nvme0n1p2\n"
"\n"
"EXIT STATUS\n"
"    0 the cache was forgotten, 1 refused or failed (BACKING unchanged), 2 bad usage.\n";

/* What the old cache's device says of the volume's dirty data: 0 and *@dirty, or -1. */
static int old_cache_dirty(tc_ctx *ctx, const char *spec, const struct tc_probe *b,
			   uint64_t *dirty, bool *whole)
{
	tc_dev *dev;
	int r = tc_dev_open_spec(ctx, spec, TC_DEV_READONLY | TC_DEV_BUFFERED, 0, 0, &dev);
	if (r) {
		cli_warn("cache %s cannot be opened (%s): the dirty data it held is not known",
			 spec, strerror(-r));
		return -1;
	}
	struct tc_cache_report *rep = calloc(1, sizeof(*rep));
	int ret = -1;
	if (!rep || tc_dev_probe(ctx, dev, &rep->probe)) {
		cli_warn("cache %s cannot be read: the dirty data it held is not known", spec);
		goto out;
	}
	if (rep->probe.kind != TC_PROBE_CACHE) {
		cli_err("%s is not a tiercache cache (%s)", spec,
			rep->probe.kind == TC_PROBE_BACKING ? "it is a backing" :
			rep->probe.what[0] ? rep->probe.what : "empty");
		ret = -2;
		goto out;
	}
	if (strcmp(rep->probe.uuid, b->cache_uuid)) {
		cli_err("cache %s is cache %s, not the cache %s of volume \"%s\"", spec,
			rep->probe.uuid, b->cache_uuid, b->name);
		ret = -2;
		goto out;
	}
	r = tc_cache_inspect(ctx, dev, rep);
	if (r && r != -EUCLEAN) {
		cli_warn("cache %s: its metadata cannot be read (%s): the dirty data it held is "
			 "not known", spec, strerror(-r));
		goto out;
	}
	*whole = r == 0;
	*dirty = 0;
	for (unsigned i = 0; i < rep->nvolumes; i++)
		if (!strcmp(rep->volumes[i].backing_uuid, b->uuid))
			*dirty = rep->volumes[i].dirty_bytes;
	ret = 0;
out:
	free(rep);
	tc_dev_close(dev);
	return ret;
}

int cmd_forget(int argc, char **argv)
{
	static const struct option options[] = {
		{ "cache", required_argument, NULL, 'c' },
		{ "discard-dirty", no_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cache = NULL;
	bool discard = false, json = false;
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 'c': cache = optarg; break;
		case 'D': discard = true; break;
		case 'j': json = true; break;
		case 'h': return cli_help(help);
		default: return cli_bad_option(argv);
		}
	}
	if (argc - optind != 1)
		return cli_usage(optind >= argc ? "no BACKING given" : "one BACKING at a time");
	const char *spec = argv[optind];
	tc_ctx *ctx = cli_ctx(false);
	tc_dev *dev;
	int rc = TC_EXIT_FAIL;
	int r = tc_dev_open_spec(ctx, spec, TC_DEV_EXCLUSIVE, 0, 0, &dev);
	if (r) {
		tc_ctx_free(ctx);
		return TC_EXIT_FAIL;   /* the library said why */
	}
	struct tc_probe p;
	r = tc_dev_probe(ctx, dev, &p);
	if (r) {
		cli_err("%s: cannot read it: %s", spec, strerror(-r));
		goto out;
	}
	if (p.kind != TC_PROBE_BACKING) {
		cli_err("%s is not a tiercache backing (%s)", spec,
			p.kind == TC_PROBE_CACHE ? "it is a cache: give the backing whose cache "
			"is lost" : p.what[0] ? p.what : "empty");
		goto out;
	}
	if (!p.cache_uuid[0]) {
		cli_err("backing %s (volume \"%s\"): no cache attached, nothing to forget", spec,
			p.name);
		goto out;
	}
	uint64_t dirty = 0;
	bool known = false, whole = false;
	if (cache) {
		int k = old_cache_dirty(ctx, cache, &p, &dirty, &whole);
		if (k == -2)
			goto out;
		known = k == 0;
	}
	char hb[32];
	if (known && whole && dirty && !discard) {
		cli_err("cache %s can still be read and holds %s of dirty data of volume \"%s\": "
			"serve both devices and `tiercache flush %s` (or detach), or give "
			"--discard-dirty to lose it", cache, tc_size_format(dirty, hb, sizeof(hb)),
			p.name, p.name);
		goto out;
	}
	char uuid[37];
	r = tc_backing_forget_cache(ctx, dev, uuid);
	if (r)
		goto out;
	rc = TC_EXIT_OK;
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "volume", json_object_new_string(p.name));
		json_object_object_add(o, "backing", json_object_new_string(spec));
		json_object_object_add(o, "forgotten_cache", json_object_new_string(uuid));
		json_object_object_add(o, "write_policy",
				       json_object_new_string(tc_write_policy_name(
					       p.settings.write_policy)));
		json_object_object_add(o, "dirty_bytes_lost",
				       known ? json_object_new_uint64(dirty) : NULL);
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		printf("volume \"%s\" (backing %s): cache %s forgotten; the volume can be served "
		       "alone or attached to a new cache\n", p.name, spec, uuid);
		if (known)
			printf("dirty data lost: %s, as the cache's metadata last recorded it\n",
			       tc_size_format(dirty, hb, sizeof(hb)));
		else if (tc_write_policy_is_wb(p.settings.write_policy))
			printf("dirty data lost: not known (write-back; give --cache DEVICE if the "
			       "old cache can still be read)\n");
		else
			printf("dirty data lost: none expected (write policy %s keeps none in the "
			       "cache)\n", tc_write_policy_name(p.settings.write_policy));
	}
out:
	tc_dev_close(dev);
	tc_ctx_free(ctx);
	return rc;
}
