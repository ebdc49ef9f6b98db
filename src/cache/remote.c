/* SPDX-License-Identifier: MIT */
/*
 * remote.c - one writer while dirty, for backings that live on a shared store (a Ceph
 * RBD image, src/dev/rbd.c): the backing's superblock says which cache it is attached
 * to, but another host sees that only once it has opened and read the image; so a
 * cache that may hold a remote backing's dirty data also records itself on the image,
 * where every client sees it (RBD image metadata "tiercache.dirty" =
 * "CACHE-UUID@HOST"), and every tiercache opener checks the record first.
 *
 * The record is set when the volume is attached, or set, in a write-back policy
 * (before any write can be dirty in the cache), and removed once the volume holds no
 * dirty data and cannot get more: at detach (after the drain and the backing's flush),
 * when the volume leaves write-back (after its drain), and by forget-cache (the admin
 * gives the dirty data up).  Devices without such a record (files, nbd) are left alone.
 * The image's exclusive lock (rbd.c) fences a second writer while the holder lives; this
 * record outlives a crash of the holder.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache_priv.h"

#define OWNER_MAX 256
/* What a refusal tells the admin to do. */
#define REMEDY "detach or flush it on that host, or, if that cache is lost for good, " \
	"`tiercache forget-cache` gives its dirty data up"

/* Whether @dev records a cache holding its dirty data; the record into @owner. */
static bool recorded(tc_dev *dev, char owner[OWNER_MAX])
{
	tc_dev_dirty_owner(dev, owner, OWNER_MAX);
	return owner[0] != 0;
}

/* The record this cache writes: "CACHE-UUID@HOST". */
static void owner_of(const struct tc_cache *c, char *buf, size_t len)
{
	char uuid[37], host[128];
	tc_fmt_uuid_str(c->sb.uuid, uuid);
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "unknown-host");
	host[sizeof(host) - 1] = 0;
	snprintf(buf, len, "%s@%s", uuid, host);
}

/* Whether the record @owner names the cache @uuid (36 characters, then '@'). */
static bool owner_is(const char *owner, const char *uuid)
{
	return !strncmp(owner, uuid, 36) && owner[36] == '@';
}

int tc_remote_check_owner(struct tc_cache *c, tc_dev *dev, const char *volume)
{
	char owner[OWNER_MAX], uuid[37];
	tc_fmt_uuid_str(c->sb.uuid, uuid);
	if (!recorded(dev, owner) || owner_is(owner, uuid))
		return 0;
	tc_err(c->ctx, "backing %s (volume \"%s\"): cache %s holds its dirty data "
	       "(recorded on the image); refusing to attach it to cache %s (%s): " REMEDY,
	       dev->name, volume, owner, uuid, c->dev->name);
	return -EBUSY;
}

int tc_remote_check_uncached(tc_ctx *ctx, tc_dev *dev, const char *volume)
{
	char owner[OWNER_MAX];
	if (!recorded(dev, owner))
		return 0;
	tc_err(ctx, "backing %s (volume \"%s\"): cache %s holds its dirty data (recorded "
	       "on the image); refusing to use it uncached: " REMEDY, dev->name, volume, owner);
	return -EBUSY;
}

int tc_remote_mark_dirty(struct tc_cache *c, tc_dev *dev, bool dirty)
{
	char owner[OWNER_MAX], now[OWNER_MAX];
	if (c->readonly)
		return 0;       /* inspection writes nothing */
	bool have = recorded(dev, now);
	if (dirty) {
		owner_of(c, owner, sizeof(owner));
		return strcmp(now, owner) ? tc_dev_set_dirty_owner(dev, owner) : 0;
	}
	return have ? tc_dev_set_dirty_owner(dev, NULL) : 0;
}

int tc_remote_forget(tc_ctx *ctx, tc_dev *dev, const char *volume)
{
	char owner[OWNER_MAX];
	if (!recorded(dev, owner))
		return 0;
	tc_warn(ctx, "backing %s (volume \"%s\"): removing the record that cache %s holds "
		"its dirty data: whatever that cache did not write back is lost, and the "
		"image holds older data there", dev->name, volume, owner);
	return tc_dev_set_dirty_owner(dev, NULL);
}
