/* SPDX-License-Identifier: MIT */
/*
 * cmd_check.c - `tiercache check DEVICE...`: read every superblock and metadata block
 * copy without writing, and report what is damaged and what a start would recover.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "ctl.h"

static const char help[] =
"NAME\n"
"    tiercache check - verify superblocks and metadata, report damage\n"
"\n"
"SYNOPSIS\n"
"    tiercache check [--json] DEVICE...\n"
"\n"
"DESCRIPTION\n"
"    Reads each DEVICE without writing to it and reports what it holds:\n"
"    - a cache: both superblock copies, every metadata block copy (each block is\n"
"      stored twice; one damaged copy is covered by the other, both damaged means the\n"
"      cache will refuse to start), the lines in use and dirty, and per volume the\n"
"      dirty bytes a start would recover;\n"
"    - a backing: its volume name, size, settings and the cache it is attached to;\n"
"    - anything else: what it is (a file system, ...), or that it is empty.\n"
"    Checking a device a server is using works but shows a moment of a moving state.\n"
"\n"
"OPTIONS\n"
"    --json    one JSON object: {\"devices\": [...]}, one entry per DEVICE\n"
"\n"
"EXIT STATUS\n"
"    0 every device is a healthy cache or backing, 1 damage found (or a device that\n"
"    is not a tiercache device, or unreadable), 2 bad usage.\n";

static const char *kind_name(enum tc_probe_kind k)
{
	static const char *const n[] = { "empty", "cache", "backing", "foreign", "unknown",
					  "array member" };
	return k <= TC_PROBE_ARRAY ? n[k] : "unknown";
}

/* Check one device; fills @o; returns true when healthy. */
static bool check_one(tc_ctx *ctx, const char *spec, json_object *o, bool print)
{
	json_object_object_add(o, "device", json_object_new_string(spec));
	tc_dev *dev;
	int r = tc_dev_open_spec(ctx, spec, TC_DEV_READONLY | TC_DEV_BUFFERED, 0, 0, &dev);
	if (r) {
		json_object_object_add(o, "error", json_object_new_string(strerror(-r)));
		/* The library said why (on stderr); only a failure it did not name is
		 * reported here. */
		if (r == -ENOMEM)
			cli_err("%s: cannot open: %s", spec, strerror(-r));
		return false;
	}
	struct tc_cache_report *rep = calloc(1, sizeof(*rep));
	bool healthy = false;
	char hb[32], hb2[32];
	if (!rep)
		goto out;
	r = tc_dev_probe(ctx, dev, &rep->probe);
	if (r)
		goto out;
	const struct tc_probe *p = &rep->probe;
	json_object_object_add(o, "kind", json_object_new_string(kind_name(p->kind)));
	json_object_object_add(o, "what", json_object_new_string(p->what));
	if (p->kind == TC_PROBE_BACKING) {
		healthy = true;
		json_object_object_add(o, "uuid", json_object_new_string(p->uuid));
		json_object_object_add(o, "name", json_object_new_string(p->name));
		json_object_object_add(o, "size", json_object_new_uint64(p->volume_size));
		json_object_object_add(o, "cache_uuid", p->cache_uuid[0] ?
				       json_object_new_string(p->cache_uuid) : NULL);
		json_object_object_add(o, "settings", ctl_settings_json(&p->settings));
		if (print)
			printf("%s: backing of volume \"%s\", %s, %s%s, write policy %s: ok\n",
			       spec, p->name, tc_size_format(p->volume_size, hb, sizeof(hb)),
			       p->cache_uuid[0] ? "attached to cache " : "no cache",
			       p->cache_uuid, tc_write_policy_name(p->settings.write_policy));
	} else if (p->kind == TC_PROBE_CACHE || (p->kind == TC_PROBE_UNKNOWN &&
						 strstr(p->what, "cache"))) {
		r = tc_cache_inspect(ctx, dev, rep);
		healthy = !r && rep->sb_copies_ok == 2 && !rep->md_copies_damaged;
		json_object_object_add(o, "uuid", json_object_new_string(p->uuid));
		json_object_object_add(o, "superblock_copies_ok",
				       json_object_new_int((int)rep->sb_copies_ok));
		json_object *dmg = json_object_new_array();
		for (int i = 0; i < 2; i++)
			if (rep->sb_damage[i][0])
				json_object_array_add(dmg, json_object_new_string(rep->sb_damage[i]));
		json_object_object_add(o, "superblock_damage", dmg);
		json_object_object_add(o, "metadata_blocks", json_object_new_uint64(rep->md_blocks));
		json_object_object_add(o, "metadata_copies_damaged",
				       json_object_new_uint64(rep->md_copies_damaged));
		json_object_object_add(o, "metadata_blocks_lost",
				       json_object_new_uint64(rep->md_blocks_lost));
		json_object_object_add(o, "line_size", json_object_new_uint64(p->line_size));
		json_object_object_add(o, "lines", json_object_new_uint64(p->lines));
		json_object_object_add(o, "lines_used", json_object_new_uint64(rep->lines_used));
		json_object_object_add(o, "lines_dirty", json_object_new_uint64(rep->lines_dirty));
		json_object_object_add(o, "clean_shutdown",
				       json_object_new_boolean(p->clean_shutdown));
		json_object_object_add(o, "checksums", json_object_new_boolean(p->checksums));
		json_object *vols = json_object_new_array();
		for (unsigned i = 0; i < rep->nvolumes; i++) {
			const struct tc_inspect_volume *v = &rep->volumes[i];
			json_object *jv = json_object_new_object();
			json_object_object_add(jv, "name", json_object_new_string(v->name));
			json_object_object_add(jv, "backing_uuid",
					       json_object_new_string(v->backing_uuid));
			json_object_object_add(jv, "size", json_object_new_uint64(v->size));
			json_object_object_add(jv, "dirty_bytes",
					       json_object_new_uint64(v->dirty_bytes));
			json_object_object_add(jv, "cached_bytes",
					       json_object_new_uint64(v->cached_bytes));
			json_object_object_add(jv, "settings", ctl_settings_json(&v->settings));
			json_object_array_add(vols, jv);
		}
		json_object_object_add(o, "volumes", vols);
		if (print) {
			printf("%s: cache %s, %" PRIu64 " lines of %s, %" PRIu64 " used, %" PRIu64
			       " dirty, %s shutdown, checksums %s\n", spec, p->uuid, p->lines,
			       tc_size_format(p->line_size, hb, sizeof(hb)), rep->lines_used,
			       rep->lines_dirty, p->clean_shutdown ? "clean" : "not a clean",
			       p->checksums ? "on" : "off");
			printf("  superblock copies ok: %u of 2\n", rep->sb_copies_ok);
			for (int i = 0; i < 2; i++)
				if (rep->sb_damage[i][0])
					printf("  superblock copy %d: %s\n", i, rep->sb_damage[i]);
			printf("  metadata blocks: %" PRIu64 ", damaged copies %" PRIu64
			       ", blocks lost %" PRIu64 "\n", rep->md_blocks,
			       rep->md_copies_damaged, rep->md_blocks_lost);
			for (unsigned i = 0; i < rep->nvolumes; i++)
				printf("  volume \"%s\": %s, dirty %s, cached %s\n",
				       rep->volumes[i].name,
				       tc_size_format(rep->volumes[i].size, hb, sizeof(hb)),
				       tc_size_format(rep->volumes[i].dirty_bytes, hb2, sizeof(hb2)),
				       tc_size_format(rep->volumes[i].cached_bytes, (char[32]){0}, 32));
			printf("  %s\n", healthy ? "ok" : r ? "DAMAGED: the cache will not open" :
			       "DAMAGED: covered by the other copies, the cache opens");
		}
	} else if (print) {
		printf("%s: %s, not a tiercache device\n", spec, p->what);
	}
out:
	json_object_object_add(o, "healthy", json_object_new_boolean(healthy));
	free(rep);
	tc_dev_close(dev);
	return healthy;
}

int cmd_check(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h')
			return cli_help(help);
		else
			return cli_bad_option(argv);
	}
	if (optind >= argc)
		return cli_usage("no DEVICE given");
	tc_ctx *ctx = cli_ctx(false);
	json_object *devs = json_object_new_array();
	bool all = true;
	for (int i = optind; i < argc; i++) {
		json_object *o = json_object_new_object();
		all &= check_one(ctx, argv[i], o, !json);
		json_object_array_add(devs, o);
	}
	if (json) {
		json_object *top = json_object_new_object();
		json_object_object_add(top, "devices", devs);
		json_object_object_add(top, "healthy", json_object_new_boolean(all));
		printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
								      JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(top);
	} else {
		json_object_put(devs);
	}
	tc_ctx_free(ctx);
	return all ? TC_EXIT_OK : TC_EXIT_FAIL;
}
