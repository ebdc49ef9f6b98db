/* SPDX-License-Identifier: MIT */
/*
 * probe.c - what a device holds, read without writing: our own superblocks first,
 * then every signature libblkid knows (file systems, LVM, md, partition tables), so
 * that `tiercache create` refuses to format over data it does not own.
 */
#include <blkid/blkid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_priv.h"
#include "format.h"

/* The file behind @dev for libblkid: crash devices are named "crash:PATH". */
static const char *dev_path(tc_dev *dev)
{
	struct tc_dev_info info;
	tc_dev_info(dev, &info);
	if (!strcmp(info.backend, "memory"))
		return NULL;
	if (!strncmp(info.name, "crash:", 6))
		return info.name + 6;
	return info.name;
}

/* libblkid's verdict on @path: 1 and a description of a foreign signature, 0 when
 * none, negative errno when the probe could not run. */
static int probe_foreign(const char *path, char *what, size_t len)
{
	blkid_probe pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return -errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	int found = 0;
	int rc = blkid_do_safeprobe(pr);
	if (rc == 0) {
		const char *type = NULL, *usage = NULL;
		blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
		blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
		if (!type)
			blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL);
		snprintf(what, len, "%s %s", type ? type : "unknown",
			 usage && !strcmp(usage, "filesystem") ? "file system" :
			 usage ? usage : "partition table");
		found = 1;
	} else if (rc == -2) {
		snprintf(what, len, "several conflicting signatures");
		found = 1;
	}
	blkid_free_probe(pr);
	return found;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int tc_dev_probe(tc_ctx *ctx, tc_dev *dev, struct tc_probe *out)
{
	memset(out, 0, sizeof(*out));
	struct tc_dev_info info;
	tc_dev_info(dev, &info);
	size_t len = 2 * TC_CACHE_SB_SIZE;
	if (info.size < len) {
		out->kind = TC_PROBE_UNKNOWN;
		snprintf(out->what, sizeof(out->what), "device of %llu bytes is too small",
			 (unsigned long long)info.size);
		return 0;
	}
	uint8_t *buf = tc_alloc_buf(len);
	struct tc_cache_sb *csb = calloc(1, sizeof(*csb));
	struct tc_backing_sb bsb;
	int r = -ENOMEM;
	if (!buf || !csb)
		goto out;
	r = tc_dev_pread(dev, buf, len, 0);
	if (r) {
		tc_err(ctx, "device %s: cannot read its first %zu bytes: %s", info.name, len,
		       strerror(-r));
		goto out;
	}
	/* Cache superblock copies at 0 and 8 KiB; backing copies at 0 and 4 KiB. */
	int best = -1;
	for (int i = 0; i < 2; i++) {
		struct tc_cache_sb tmp;
		if (tc_fmt_cache_sb_decode(buf + i * TC_CACHE_SB_SIZE, &tmp, NULL, 0) ==
		    TC_FMT_OK && (best < 0 || tmp.generation > csb->generation)) {
			*csb = tmp;
			best = i;
		}
	}
	if (best >= 0) {
		out->kind = TC_PROBE_CACHE;
		tc_fmt_uuid_str(csb->uuid, out->uuid);
		out->line_size = csb->line_size;
		out->lines = csb->nslots;
		out->clean_shutdown = csb->clean_shutdown == 1;
		out->checksums = !csb->csum_off;
		for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
			out->nvolumes += csb->vols[i].id != 0;
		snprintf(out->what, sizeof(out->what), "tiercache cache");
		goto out;
	}
	best = -1;
	for (int i = 0; i < 2; i++) {
		struct tc_backing_sb tmp;
		if (tc_fmt_backing_sb_decode(buf + i * TC_BACKING_SB_SIZE, &tmp, NULL, 0) ==
		    TC_FMT_OK && (best < 0 || tmp.generation > bsb.generation)) {
			bsb = tmp;
			best = i;
		}
	}
	if (best >= 0) {
		out->kind = TC_PROBE_BACKING;
		tc_fmt_uuid_str(bsb.uuid, out->uuid);
		snprintf(out->name, sizeof(out->name), "%s", bsb.name);
		out->volume_size = bsb.size;
		out->data_offset = bsb.data_offset;
		out->stripe_size = bsb.stripe_size;
		if (!tc_fmt_uuid_is_zero(bsb.cache_uuid))
			tc_fmt_uuid_str(bsb.cache_uuid, out->cache_uuid);
		out->settings = bsb.settings;
		snprintf(out->what, sizeof(out->what), "tiercache backing");
		goto out;
	}
	/* An array member: the array's superblock, the array's data further in. */
	struct tc_array_member_info *ami = calloc(1, sizeof(*ami));
	int ar = ami ? tc_array_examine(ctx, dev, ami) : -ENOMEM;
	if (ar == 1 || ar == -EUCLEAN) {
		out->kind = ar == 1 ? TC_PROBE_ARRAY : TC_PROBE_UNKNOWN;
		if (ar == 1) {
			snprintf(out->uuid, sizeof(out->uuid), "%s", ami->uuid);
			snprintf(out->name, sizeof(out->name), "%s", ami->name);
			snprintf(out->what, sizeof(out->what), "%s of tiercache array \"%s\"",
				 ami->role < 0 ? "hot spare" : "member", ami->name);
		} else {
			snprintf(out->what, sizeof(out->what), "damaged tiercache array superblock");
		}
		free(ami);
		goto out;
	}
	free(ami);
	/* Damaged copies of our own superblocks: the magic is there. */
	uint32_t m0, m1, m2;
	memcpy(&m0, buf, 4);
	memcpy(&m1, buf + TC_BACKING_SB_SIZE, 4);
	memcpy(&m2, buf + TC_CACHE_SB_SIZE, 4);
	if (le32toh(m0) == TC_CACHE_MAGIC || le32toh(m2) == TC_CACHE_MAGIC ||
	    le32toh(m0) == TC_BACKING_MAGIC || le32toh(m1) == TC_BACKING_MAGIC) {
		out->kind = TC_PROBE_UNKNOWN;
		snprintf(out->what, sizeof(out->what), "damaged tiercache %s superblock",
			 le32toh(m0) == TC_BACKING_MAGIC || le32toh(m1) == TC_BACKING_MAGIC ?
			 "backing" : "cache");
		goto out;
	}
	const char *path = dev_path(dev);
	if (path) {
		int f = probe_foreign(path, out->what, sizeof(out->what));
		if (f > 0) {
			out->kind = TC_PROBE_FOREIGN;
			goto out;
		}
	}
	if (all_zero(buf, len)) {
		out->kind = TC_PROBE_EMPTY;
		snprintf(out->what, sizeof(out->what), "empty");
	} else {
		out->kind = TC_PROBE_UNKNOWN;
		snprintf(out->what, sizeof(out->what), "unrecognised data");
	}
out:
	free(csb);
	free(buf);
	return r;
}
