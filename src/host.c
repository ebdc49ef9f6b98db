/* SPDX-License-Identifier: MIT */
/*
 * host.c - hosts: every cache and volume found on a set of devices, assembled from
 * their superblocks alone (docs/architecture.md, invariant 6): devices are opened and
 * probed, caches opened, each backing attached to its cache or served uncached; then
 * live attach and detach, power cuts of a whole host and fault injection on its
 * devices.  The exports that serve the volumes are in export.c.
 *
 * Locking: host->lock protects the device and export tables (they only grow, and
 * their elements are freed only by tc_host_close()); one management operation at a
 * time runs under host->mgmt.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>

#include "dev.h"
#include "host.h"
#include "tiercache-test.h"

/* host_grow - @arr with room for @need elements of @elem bytes (doubling *@cap), or
 * NULL on -ENOMEM (then @arr is unchanged). */
void *host_grow(void *arr, unsigned *cap, unsigned need, size_t elem)
{
	if (need <= *cap)
		return arr;
	unsigned ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	void *n = realloc(arr, (size_t)ncap * elem);
	if (n)
		*cap = ncap;
	return n;
}

/* ---- devices ---------------------------------------------------------------------- */

/* stat() of the file behind @spec: local devices are matched by file identity too (two
 * specs naming one file are one device); a remote one has no file (-1, ENODEV) and is
 * matched by its spec alone. */
int host_spec_stat(const char *spec, struct stat *st)
{
	const char *path = tc_dev_spec_path(spec);
	if (!path) {
		errno = ENODEV;
		return -1;
	}
	return stat(path, st);
}

/* The host's device given as @spec, or with the same file behind it (@st, when
 * @have), or NULL.  Caller holds h->lock. */
static struct host_dev *host_dev_match(tc_host *h, const char *spec, bool have,
				       const struct stat *st)
{
	for (unsigned i = 0; i < h->ndevs; i++)
		if (!strcmp(h->devs[i]->spec, spec) ||
		    (have && h->devs[i]->st_dev == st->st_dev && h->devs[i]->st_ino == st->st_ino))
			return h->devs[i];
	return NULL;
}

static tc_dev *host_array_holding(tc_host *h, const char *spec, bool have,
				  const struct stat *st);

/* An "array:M1,M2,..." spec naming an array the host has open under another spec
 * (its members changed since: a spare took a slot, a member was removed): that
 * array's device, when every member given that the host knows is one of it. */
static struct host_dev *host_array_by_members(tc_host *h, const char *spec)
{
	char *m = malloc(strlen(spec) + 1);
	tc_dev *arr = NULL;
	bool mixed = false;
	if (!m)
		return NULL;
	for (unsigned i = 0; !mixed; i++) {
		int kind = tc_array_spec_member(spec + 6, i, m, strlen(spec) + 1);
		if (kind < 0)
			break;
		if (kind == 1)
			continue;   /* a leg: its members are not the array's */
		struct stat st;
		bool have = host_spec_stat(m, &st) == 0;
		tc_dev *a = host_array_holding(h, m, have, &st);
		if (a && arr && a != arr)
			mixed = true;
		else if (a)
			arr = a;
	}
	free(m);
	struct host_dev *found = NULL;
	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < h->ndevs && arr && !mixed && !found; i++)
		if (h->devs[i]->base == arr)
			found = h->devs[i];
	pthread_mutex_unlock(&h->lock);
	return found;
}

/* The host's device given as @spec, or with the same file behind it, or (an array
 * spec) the open array of those members, or NULL. */
static struct host_dev *host_dev_find(tc_host *h, const char *spec)
{
	struct stat st;
	bool have = host_spec_stat(spec, &st) == 0;
	pthread_mutex_lock(&h->lock);
	struct host_dev *found = host_dev_match(h, spec, have, &st);
	pthread_mutex_unlock(&h->lock);
	if (!found && !strncmp(spec, "array:", 6))
		found = host_array_by_members(h, spec);
	return found;
}

static int host_dev_open(tc_host *h, const char *spec, struct host_dev **out)
{
	if (host_dev_find(h, spec)) {
		tc_err(h->ctx, "device %s: given twice", spec);
		return -EEXIST;
	}
	struct host_dev *d = calloc(1, sizeof(*d));
	if (!d || !(d->spec = strdup(spec))) {
		free(d);
		return -ENOMEM;
	}
	struct stat st;
	if (host_spec_stat(spec, &st) == 0) {
		d->st_dev = st.st_dev;
		d->st_ino = st.st_ino;
	}
	int r = tc_dev_open_spec(h->ctx, spec, h->opts.dev_flags, 0, h->opts.crash_seed,
				 &d->base);
	d->dev = d->base;
	/* A fault layer owns its device from now on, even when it fails. */
	if (!r && h->opts.fault_injection && (r = tc_dev_new_fault(h->ctx, d->base, &d->dev)))
		d->dev = d->base = NULL;
	if (!r && h->opts.wrap_dev)
		r = h->opts.wrap_dev(h->opts.wrap_opaque, &d->dev);
	if (!r)
		r = tc_dev_probe(h->ctx, d->dev, &d->probe);
	if (!r) {
		pthread_mutex_lock(&h->lock);
		struct host_dev **n = host_grow(h->devs, &h->devs_cap, h->ndevs + 1, sizeof(*n));
		if (n) {
			h->devs = n;
			h->devs[h->ndevs++] = d;
		}
		pthread_mutex_unlock(&h->lock);
		if (!n)
			r = -ENOMEM;
	}
	if (r) {
		if (d->dev)
			tc_dev_close(d->dev);
		free(d->spec);
		free(d);
		return r;
	}
	*out = d;
	return 0;
}

static struct host_dev *host_cache_by_uuid(tc_host *h, const char *uuid)
{
	struct host_dev *found = NULL;
	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < h->ndevs && !found; i++)
		if (h->devs[i]->probe.kind == TC_PROBE_CACHE &&
		    !strcmp(h->devs[i]->probe.uuid, uuid))
			found = h->devs[i];
	pthread_mutex_unlock(&h->lock);
	return found;
}

/* ---- assembly --------------------------------------------------------------------- */

/* Serve @b: through its cache when it has one here, else uncached when that is safe. */
static int assemble_backing(tc_host *h, struct host_dev *b)
{
	const struct tc_probe *p = &b->probe;
	if (!p->cache_uuid[0])
		return export_add(h, b, NULL, NULL, TC_EXPORT_UNCACHED, NULL);
	struct host_dev *c = host_cache_by_uuid(h, p->cache_uuid);
	if (c && c->cache) {
		tc_volume *vol;
		int r = tc_cache_attach(c->cache, b->dev, NULL, 0, &vol);
		if (r == -ESTALE)
			tc_warn(h->ctx, "volume \"%s\" (backing %s) is not served: cache %s holds "
				"dirty lines older than the backing (see the error above; `tiercache "
				"attach --discard-dirty` drops them)", p->name, b->spec, c->spec);
		if (r)
			return r;
		r = export_add(h, b, c, vol, TC_EXPORT_CACHED, NULL);
		if (r)
			tc_volume_detach(vol, 0, NULL, NULL);
		return r;
	}
	const char *why = c ? "failed to open" : "is not among the devices given";
	/* A remote backing that records a cache holding its dirty data (src/cache/remote.c). */
	char owner[256];
	tc_dev_dirty_owner(b->dev, owner, sizeof(owner));
	if (owner[0] && !(h->opts.dev_flags & TC_DEV_READONLY)) {
		tc_err(h->ctx, "volume \"%s\" (backing %s) is not served: cache %s holds its "
		       "dirty data (recorded on the image), and that cache %s here; detach or "
		       "flush it on that host (if the cache is lost for good: `tiercache "
		       "forget-cache %s`)", p->name, b->spec, owner, why, b->spec);
		return -EBUSY;
	}
	if (tc_write_policy_is_wb(p->settings.write_policy)) {
		tc_warn(h->ctx, "volume \"%s\" (backing %s) is not served: its cache %s %s, and "
			"in write-back it may hold the volume's dirty data; give the cache's "
			"device too (if the cache is lost for good: `tiercache forget-cache %s`)",
			p->name, b->spec, p->cache_uuid, why, b->spec);
		return c ? -EUCLEAN : -ENODEV;
	}
	tc_warn(h->ctx, "volume \"%s\" (backing %s): its cache %s %s; serving the volume "
		"uncached (its write policy %s keeps no dirty data in the cache)", p->name,
		b->spec, p->cache_uuid, why, tc_write_policy_name(p->settings.write_policy));
	/* Inspection leaves the backing's superblock as it is. */
	int r = h->opts.dev_flags & TC_DEV_READONLY ? 0 : tc_backing_use_uncached(h->ctx, b->dev);
	if (r)
		return r;
	return export_add(h, b, NULL, NULL, TC_EXPORT_DEGRADED, NULL);
}

/* The array uuid the member superblock of device @spec names, into @out ("" when none:
 * not an array member, or what tc_dev_probe finds there is something else: a device
 * formatted over a member later, as a cache keeping a member's copy 1, is what it was
 * formatted as). */
static void member_uuid(tc_ctx *ctx, const char *spec, unsigned dev_flags, char out[37])
{
	struct tc_probe *p = calloc(1, sizeof(*p));
	struct stat st;
	tc_dev *d;
	out[0] = 0;
	if (p && host_spec_stat(spec, &st) == 0 &&
	    tc_dev_open_spec(ctx, spec, (dev_flags & ~(TC_DEV_EXCLUSIVE | TC_DEV_CREATE)) |
			     TC_DEV_READONLY, 0, 0, &d) == 0) {
		if (tc_dev_probe(ctx, d, p) == 0 && p->kind == TC_PROBE_ARRAY)
			snprintf(out, 37, "%s", p->uuid);
		tc_dev_close(d);
	}
	free(p);
}

/* A leg of a RAID 50 / 60 given in brackets in an "array:" spec: which spec, which of
 * its members, the leg's uuid (its first member's). */
struct host_leg {
	unsigned spec, member;
	char uuid[37];
};

/* The legs among @specs (their first members probed), into a new *@legs. */
static int find_legs(tc_ctx *ctx, const char *const *specs, const bool *array_spec,
		     unsigned nspecs, unsigned dev_flags, struct host_leg **legs,
		     unsigned *nlegs)
{
	*legs = NULL;
	*nlegs = 0;
	for (unsigned i = 0; i < nspecs; i++) {
		if (!array_spec[i])
			continue;
		size_t len = strlen(specs[i]) + 1;
		char *m = malloc(len), *first = malloc(len);
		for (unsigned k = 0; m && first; k++) {
			int kind = tc_array_spec_member(specs[i] + 6, k, m, len);
			if (kind < 0)
				break;
			if (kind != 1 || strncmp(m, "array:", 6))
				continue;
			struct host_leg *g = realloc(*legs, (*nlegs + 1) * sizeof(**legs));
			if (!g) {
				free(m);
				free(first);
				return -ENOMEM;
			}
			*legs = g;
			g[*nlegs] = (struct host_leg){ .spec = i, .member = k };
			/* The first of its members that names an array (one may be gone: a
			 * spare took its place). */
			for (unsigned f = 0; !g[*nlegs].uuid[0] &&
			     tc_array_spec_member(m + 6, f, first, len) == 0; f++)
				member_uuid(ctx, first, dev_flags, g[*nlegs].uuid);
			if (g[*nlegs].uuid[0])
				(*nlegs)++;
		}
		bool ok = m && first;
		free(m);
		free(first);
		if (!ok)
			return -ENOMEM;
	}
	return 0;
}

/* Spec @spec (an "array:" spec) with the devices @specs[j] of @leg_of[j] == a leg of it
 * (index into @legs) added to that leg's brackets.  Returns a new string or NULL. */
static char *join_legs(const char *spec, unsigned i, const char *const *specs,
		       const int *leg_of, unsigned nspecs, const struct host_leg *legs)
{
	size_t len = strlen(spec) + 1;
	for (unsigned j = 0; j < nspecs; j++)
		if (leg_of[j] >= 0 && legs[leg_of[j]].spec == i)
			len += strlen(specs[j]) + 1;
	char *out = malloc(len), *m = malloc(strlen(spec) + 1);
	if (!out || !m) {
		free(out);
		free(m);
		return NULL;
	}
	strcpy(out, "array:");
	for (unsigned k = 0;; k++) {
		int kind = tc_array_spec_member(spec + 6, k, m, strlen(spec) + 1);
		if (kind == -ENOENT)
			break;
		if (kind < 0) {
			/* Malformed: left as given, for its open to say why. */
			strcpy(out, spec);
			break;
		}
		if (k)
			strcat(out, ",");
		if (kind == 1)
			strcat(out, "[");
		strcat(out, m);
		for (unsigned j = 0; kind == 1 && j < nspecs; j++)
			if (leg_of[j] >= 0 && legs[leg_of[j]].spec == i &&
			    legs[leg_of[j]].member == k) {
				strcat(out, ",");
				strcat(out, specs[j]);
			}
		if (kind == 1)
			strcat(out, "]");
	}
	free(m);
	return out;
}

/* Array members among @specs: the devices whose superblock is an array member's,
 * grouped by array uuid, each group replaced by one "array:M1,M2,..." spec where its
 * first member was (tc_dev_open_spec assembles it).  A member given alone whose array
 * is also given as an "array:..." spec (its first member tells the uuid) joins that
 * spec: a global spare an array took is named alone at the next start (serve --spare)
 * while the array may be named by its old members.  *@out is a new list of *@nout
 * malloc'ed specs. */
static int group_array_members(tc_ctx *ctx, const char *const *specs, unsigned nspecs,
			       unsigned dev_flags, char ***out, unsigned *nout)
{
	char **list = calloc(nspecs ? nspecs : 1, sizeof(*list));
	char (*uuid)[37] = calloc(nspecs ? nspecs : 1, sizeof(*uuid));
	int *group = calloc(nspecs ? nspecs : 1, sizeof(*group));
	bool *array_spec = calloc(nspecs ? nspecs : 1, sizeof(*array_spec));
	int *leg_of = calloc(nspecs ? nspecs : 1, sizeof(*leg_of));
	struct host_leg *legs = NULL;
	unsigned n = 0, nlegs = 0;
	int r = 0;

	if (!list || !uuid || !group || !array_spec || !leg_of) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < nspecs; i++) {
		group[i] = -1;
		leg_of[i] = -1;
		/* An "array:" spec: the uuid its first member names (none for a RAID 50 /
		 * 60 named by its legs: those are found below). */
		bool arr = !strncmp(specs[i], "array:", 6);
		size_t len = strlen(specs[i]) + 1;
		char *first = malloc(len);
		if (!first) {
			r = -ENOMEM;
			goto out;
		}
		if (!arr)
			snprintf(first, len, "%s", specs[i]);
		else if (tc_array_spec_member(specs[i] + 6, 0, first, len) != 0)
			first[0] = 0;
		uuid[i][0] = 0;
		if (*first)
			member_uuid(ctx, first, dev_flags, uuid[i]);
		free(first);
		array_spec[i] = arr;
	}
	r = find_legs(ctx, specs, array_spec, nspecs, dev_flags, &legs, &nlegs);
	if (r)
		goto out;
	/* The member given alone of an array also given as a spec joins that spec, or
	 * the leg in brackets of that uuid. */
	for (unsigned j = 0; j < nspecs; j++) {
		for (unsigned i = 0; !array_spec[j] && uuid[j][0] && i < nspecs; i++)
			if (array_spec[i] && !strcmp(uuid[i], uuid[j])) {
				group[j] = (int)i;   /* an index into @specs until placed */
				break;
			}
		for (unsigned g = 0; !array_spec[j] && group[j] < 0 && uuid[j][0] && g < nlegs; g++)
			if (!strcmp(legs[g].uuid, uuid[j]))
				leg_of[j] = (int)g;
	}
	for (unsigned i = 0; i < nspecs && !r; i++) {
		if ((group[i] >= 0 || leg_of[i] >= 0) && !array_spec[i])
			continue;   /* placed with its group, or joins an "array:" spec */
		bool to_legs = false;
		for (unsigned j = 0; j < nspecs; j++)
			to_legs |= leg_of[j] >= 0 && legs[leg_of[j]].spec == i;
		if (array_spec[i] && to_legs) {
			if (!(list[n++] = join_legs(specs[i], i, specs, leg_of, nspecs, legs)))
				r = -ENOMEM;
			continue;
		}
		if (array_spec[i]) {
			size_t len = strlen(specs[i]) + 1;
			for (unsigned j = 0; j < nspecs; j++)
				if (!array_spec[j] && group[j] == (int)i)
					len += strlen(specs[j]) + 1;
			char *a = malloc(len);
			if (!a) {
				r = -ENOMEM;
				break;
			}
			strcpy(a, specs[i]);
			for (unsigned j = 0; j < nspecs; j++)
				if (!array_spec[j] && group[j] == (int)i) {
					strcat(a, ",");
					strcat(a, specs[j]);
				}
			list[n++] = a;
			continue;
		}
		if (!uuid[i][0]) {
			if (!(list[n++] = strdup(specs[i])))
				r = -ENOMEM;
			continue;
		}
		size_t len = 7;
		for (unsigned j = i; j < nspecs; j++)
			if (!strcmp(uuid[j], uuid[i]))
				len += strlen(specs[j]) + 1;
		char *a = malloc(len);
		if (!a) {
			r = -ENOMEM;
			break;
		}
		strcpy(a, "array:");
		for (unsigned j = i; j < nspecs; j++)
			if (!strcmp(uuid[j], uuid[i])) {
				if (j != i)
					strcat(a, ",");
				strcat(a, specs[j]);
				group[j] = (int)n;
			}
		list[n++] = a;
	}
out:
	if (r) {
		for (unsigned i = 0; i < n; i++)
			free(list[i]);
		free(list);
		list = NULL;
		n = 0;
	}
	free(uuid);
	free(group);
	free(array_spec);
	free(leg_of);
	free(legs);
	*out = list;
	*nout = n;
	return r;
}

static int host_assemble(tc_ctx *ctx, const char *const *specs, unsigned nspecs,
			 const struct tc_host_opts *opts, tc_host **out);

int tc_host_assemble(tc_ctx *ctx, const char *const *specs, unsigned nspecs,
		     const struct tc_host_opts *opts, tc_host **out)
{
	char **list;
	unsigned n;

	*out = NULL;
	int r = group_array_members(ctx, specs, nspecs, opts ? opts->dev_flags : 0, &list, &n);
	if (r)
		return r;
	r = host_assemble(ctx, (const char *const *)list, n, opts, out);
	for (unsigned i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return r;
}

static int host_assemble(tc_ctx *ctx, const char *const *specs, unsigned nspecs,
			 const struct tc_host_opts *opts, tc_host **out)
{
	*out = NULL;
	tc_host *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->ctx = ctx;
	if (opts)
		h->opts = *opts;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->mgmt, NULL);
	host_spare_init(h);
	/* A device that is missing or cannot be read does not stop the others: what can be
	 * served safely without it is (a backing whose cache it was, served uncached when
	 * its write policy keeps no dirty data in the cache).  Assembly fails only when
	 * nothing was served and something was missing or refused. */
	int r = 0, missing = 0, refused = 0;
	for (unsigned i = 0; i < nspecs && !r; i++) {
		struct host_dev *d;
		r = host_dev_open(h, specs[i], &d);
		if (r == -ENOENT || r == -ENXIO || r == -ENODEV || r == -EIO) {
			tc_warn(ctx, "device %s cannot be used (%s): serving what can be served "
				"safely without it", specs[i], strerror(-r));
			if (!missing)
				missing = r;
			r = 0;
			continue;
		}
		if (r)
			break;
		if (d->probe.kind != TC_PROBE_CACHE && d->probe.kind != TC_PROBE_BACKING &&
		    d->probe.kind != TC_PROBE_EMPTY) {
			tc_err(ctx, "device %s: holds %s, not a tiercache cache or backing "
			       "(format it with `tiercache create`)", specs[i], d->probe.what);
			r = -EINVAL;
		}
	}
	/* Blank devices: nothing of them can be lost, and a spare removed from its array
	 * is left blank (its superblock erased) while the server's device list may still
	 * name it.  Left alone (closed, unlocked), unless they are all there is. */
	bool only_blank = !missing;
	for (unsigned i = 0; i < h->ndevs; i++)
		only_blank &= h->devs[i]->probe.kind == TC_PROBE_EMPTY;
	for (unsigned i = 0; i < h->ndevs && !r;) {
		struct host_dev *d = h->devs[i];
		if (d->probe.kind != TC_PROBE_EMPTY) {
			i++;
		} else if (only_blank) {
			tc_err(ctx, "device %s: is empty, not a tiercache cache or backing "
			       "(format it with `tiercache create`)", d->spec);
			r = -EINVAL;
		} else {
			tc_warn(ctx, "device %s: is empty (no tiercache superblock): ignored, as "
				"a spare removed from its array is", d->spec);
			pthread_mutex_lock(&h->lock);
			memmove(&h->devs[i], &h->devs[i + 1], (--h->ndevs - i) * sizeof(*h->devs));
			pthread_mutex_unlock(&h->lock);
			tc_dev_close(d->dev);
			free(d->spec);
			free(d);
		}
	}
	/* The same cache or backing twice (copies of one device image, say). */
	for (unsigned i = 0; i < h->ndevs && !r; i++)
		for (unsigned j = i + 1; j < h->ndevs && !r; j++)
			if (h->devs[i]->probe.kind == h->devs[j]->probe.kind &&
			    !strcmp(h->devs[i]->probe.uuid, h->devs[j]->probe.uuid)) {
				tc_err(ctx, "devices %s and %s: same uuid %s (a copy of one "
				       "device?)", h->devs[i]->spec, h->devs[j]->spec,
				       h->devs[i]->probe.uuid);
				r = -EEXIST;
			}
	/* Caches first: a backing needs its cache open.  A cache that does not open
	 * fails the assembly only if a volume needs it (assemble_backing decides). */
	for (unsigned i = 0; i < h->ndevs && !r; i++) {
		struct host_dev *d = h->devs[i];
		if (d->probe.kind != TC_PROBE_CACHE)
			continue;
		int cr = h->opts.dev_flags & TC_DEV_READONLY ?
			tc_cache_open_readonly(ctx, d->dev, &d->cache) :
			tc_cache_open(ctx, d->dev, &d->cache);
		if (cr) {
			d->cache = NULL;
			d->cache_failed = true;
		}
	}
	for (unsigned i = 0; i < h->ndevs && !r; i++) {
		if (h->devs[i]->probe.kind != TC_PROBE_BACKING)
			continue;
		int br = assemble_backing(h, h->devs[i]);
		if (br == -ENODEV || br == -EUCLEAN || br == -ESTALE) {
			if (!refused)
				refused = br;   /* that volume alone is not served (logged) */
		} else {
			r = br;
		}
	}
	if (!r && !h->nexps && (refused || missing))
		r = refused ? refused : missing;
	if (r) {
		tc_host_close(h);
		return r;
	}
	*out = h;
	return 0;
}

int tc_host_close(tc_host *h)
{
	int first = 0;
	host_spare_fini(h);   /* the spare thread stops before the arrays close */
	for (unsigned i = 0; i < h->ndevs; i++) {
		struct host_dev *d = h->devs[i];
		if (d->cache) {
			int r = tc_cache_close(d->cache);
			if (r && !first)
				first = r;
		} else if (d->probe.kind == TC_PROBE_BACKING) {
			/* Uncached backings: writes acknowledged since the last FLUSH become
			 * durable, as a clean shutdown promises. */
			bool served = false;
			for (unsigned j = 0; j < h->nexps; j++)
				served |= h->exps[j]->backing == d && !atomic_load(&h->exps[j]->vol);
			int r = served && !(h->opts.dev_flags & TC_DEV_READONLY) ?
				tc_dev_flush(d->dev) : 0;
			if (r && !first)
				first = r;
		}
	}
	for (unsigned i = 0; i < h->ndevs; i++) {
		tc_dev_close(h->devs[i]->dev);
		free(h->devs[i]->spec);
		free(h->devs[i]);
	}
	for (unsigned i = 0; i < h->nexps; i++) {
		pthread_mutex_destroy(&h->exps[i]->lock);
		pthread_cond_destroy(&h->exps[i]->cond);
		free(h->exps[i]);
	}
	free(h->devs);
	free(h->exps);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->mgmt);
	free(h);
	return first;
}

static bool is_crash_dev(tc_dev *dev)
{
	struct tc_dev_info info;
	tc_dev_info(dev, &info);
	return info.backend && !strcmp(info.backend, "crash");
}

int tc_host_power_cut(tc_host *h)
{
	/* The power fails on every device at the same instant: first no crash device
	 * accepts another request, then each keeps its seed-chosen part of what was not
	 * flushed.  Cut one by one, a device still alive would take the engine's reaction
	 * to another one's death (a write-back write whose cache write failed goes to the
	 * backing, FUA, and is acknowledged), which no power failure allows. */
	for (unsigned i = 0; i < h->ndevs; i++)
		if (is_crash_dev(h->devs[i]->base))
			for (int op = TC_FAULT_READ; op <= TC_FAULT_FLUSH; op++)
				tc_crash_fail_nth(h->devs[i]->base, (enum tc_fault_op)op, 1, true);
	int n = 0;
	for (unsigned i = 0; i < h->ndevs; i++)
		if (is_crash_dev(h->devs[i]->base) && tc_crash_power_cut(h->devs[i]->base) >= 0)
			n++;
	return n;
}

unsigned tc_host_export_count(tc_host *h)
{
	pthread_mutex_lock(&h->lock);
	unsigned n = h->nexps;
	pthread_mutex_unlock(&h->lock);
	return n;
}

tc_export *tc_host_export_at(tc_host *h, unsigned i)
{
	pthread_mutex_lock(&h->lock);
	tc_export *e = i < h->nexps ? h->exps[i] : NULL;
	pthread_mutex_unlock(&h->lock);
	return e;
}

tc_export *tc_host_find(tc_host *h, const char *name)
{
	tc_export *found = NULL;
	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < h->nexps && !found; i++)
		if (!strcmp(h->exps[i]->name, name))
			found = h->exps[i];
	pthread_mutex_unlock(&h->lock);
	return found;
}

static bool is_array(tc_dev *d)
{
	struct tc_dev_info info;
	tc_dev_info(d, &info);
	return !strcmp(info.backend, "array");
}

static bool raid0_of_arrays(tc_dev *a)
{
	tc_dev *first = tc_array_member(a, 0);
	return tc_array_level(a) == TC_RAID0 && first && is_array(first);
}

tc_dev *tc_host_array_at(tc_host *h, unsigned i, const char **spec)
{
	tc_dev *found = NULL;
	pthread_mutex_lock(&h->lock);
	for (unsigned k = 0; k < h->ndevs && !found; k++) {
		tc_dev *a = h->devs[k]->base;
		if (!is_array(a))
			continue;
		if (i-- == 0) {
			found = a;
			if (spec)
				*spec = h->devs[k]->spec;
			break;
		}
		/* Then its members that are arrays: the legs of a RAID 50 / 60 (of a RAID 0
		 * only, whose members stay for its life: tc_array_member). */
		if (!raid0_of_arrays(a))
			continue;
		for (unsigned s = 0; !found && s < TC_ARRAY_MAX_MEMBERS; s++) {
			tc_dev *leg = tc_array_member(a, s);
			if (leg && is_array(leg) && i-- == 0) {
				found = leg;
				if (spec)
					*spec = NULL;
			}
		}
	}
	pthread_mutex_unlock(&h->lock);
	return found;
}

tc_cache *tc_host_cache_at(tc_host *h, unsigned i, const char **spec)
{
	tc_cache *found = NULL;
	pthread_mutex_lock(&h->lock);
	for (unsigned j = 0; j < h->ndevs && !found; j++)
		if (h->devs[j]->cache && i-- == 0) {
			found = h->devs[j]->cache;
			if (spec)
				*spec = h->devs[j]->spec;
		}
	pthread_mutex_unlock(&h->lock);
	return found;
}

tc_ctx *tc_host_ctx(tc_host *h)
{
	return h->ctx;
}

/* Whether @name (a device of an array) is @spec or the file behind it (@st, @have). */
bool host_same_device(const char *name, const char *spec, bool have, const struct stat *st)
{
	struct stat ns;
	return !strcmp(name, spec) ||
	       (have && host_spec_stat(name, &ns) == 0 && ns.st_dev == st->st_dev &&
		ns.st_ino == st->st_ino);
}

/* The array of @h that has @spec among its members, spares or retired members. */
static tc_dev *host_array_holding(tc_host *h, const char *spec, bool have,
				  const struct stat *st)
{
	struct tc_array_status *as = malloc(sizeof(*as));
	tc_dev *a, *found = NULL;
	for (unsigned i = 0; as && !found && (a = tc_host_array_at(h, i, NULL)); i++) {
		if (tc_array_status(a, as))
			continue;
		for (unsigned k = 0; k < as->members && !found; k++)
			if (as->member[k].name && host_same_device(as->member[k].name, spec, have, st))
				found = a;
		for (unsigned k = 0; k < as->nextra && !found; k++)
			if (as->extra[k].name && host_same_device(as->extra[k].name, spec, have, st))
				found = a;
	}
	free(as);
	return found;
}

/* Whether @spec (stat'ed into @st when @have) is neither a device of the host nor in
 * its pool of global spares: 0, else -EEXIST, said. */
static int host_not_held(tc_host *h, const char *spec, bool have, const struct stat *st)
{
	pthread_mutex_lock(&h->lock);
	struct host_dev *hd = host_dev_match(h, spec, have, st);
	pthread_mutex_unlock(&h->lock);
	if (hd) {
		tc_err(h->ctx, "device %s: already a device of this server (%s)", spec, hd->spec);
		return -EEXIST;
	}
	if (host_spare_holds(h, spec)) {
		tc_err(h->ctx, "device %s: already a global spare of this server", spec);
		return -EEXIST;
	}
	return 0;
}

int tc_host_open_spare(tc_host *h, const char *spec, bool force, tc_dev **out)
{
	struct stat st;
	bool have = host_spec_stat(spec, &st) == 0;
	int held = host_not_held(h, spec, have, &st);
	if (held)
		return held;
	tc_dev *a = host_array_holding(h, spec, have, &st);
	if (a) {
		struct tc_array_identity id;
		tc_err(h->ctx, "device %s: already in array \"%s\" of this server", spec,
		       tc_array_identity(a, &id) ? "?" : id.name);
		return -EEXIST;
	}
	tc_dev *d;
	int r = tc_dev_open_spec(h->ctx, spec, h->opts.dev_flags, 0, h->opts.crash_seed, &d);
	if (r)
		return r;
	struct tc_probe p;
	if (!force && (r = tc_dev_probe(h->ctx, d, &p)) == 0 && p.kind != TC_PROBE_EMPTY) {
		if (p.kind == TC_PROBE_ARRAY)
			tc_err(h->ctx, "device %s: belongs to array \"%s\" (uuid %s); give "
			       "--force to reuse it", spec, p.name, p.uuid);
		else
			tc_err(h->ctx, "device %s: holds %s; give --force to reuse it", spec,
			       p.kind == TC_PROBE_CACHE ? "a tiercache cache" :
			       p.kind == TC_PROBE_BACKING ? "a tiercache backing" : p.what);
		r = -EINVAL;
	}
	if (r) {
		tc_dev_close(d);
		return r;
	}
	*out = d;
	return 0;
}

/* @spec is a device @array holds: when it is the faulty member of one of its slots,
 * check read-only (without the device's lock, which that handle holds) that its
 * superblock names this array and that slot, then take the handle out of the slot
 * (tc_array_remove), so that the device can be opened again.  Else say why not. */
static int host_readd_release(tc_host *h, tc_dev *array, const char *spec, bool have,
			      const struct stat *st)
{
	struct tc_array_status *as = malloc(sizeof(*as));
	struct tc_array_identity id;
	int r = as && !tc_array_status(array, as) && !tc_array_identity(array, &id) ? 0 :
		-ENOMEM;
	int slot = -1;
	char name[PATH_MAX] = "";
	for (unsigned k = 0; !r && k < as->members && slot < 0; k++)
		if (as->member[k].name && host_same_device(as->member[k].name, spec, have, st)) {
			slot = (int)k;
			snprintf(name, sizeof(name), "%s", as->member[k].name);
			if (as->member[k].state != TC_MEMBER_FAULTY) {
				tc_err(h->ctx, "device %s: %s member of array \"%s\" (slot %u): "
				       "nothing to re-add", spec, as->member[k].state ==
				       TC_MEMBER_REBUILDING ? "a rebuilding" : "an active", id.name, k);
				r = -EBUSY;
			}
		}
	if (!r && slot < 0) {
		tc_err(h->ctx, "device %s: retired from array \"%s\" (another member took its "
		       "slot, or it was replaced): remove it (`tiercache array remove`) and add "
		       "it as a spare", spec, id.name);
		r = -EINVAL;
	}
	free(as);
	if (r)
		return r;
	tc_dev *ro;
	unsigned flags = (h->opts.dev_flags & ~TC_DEV_EXCLUSIVE) | TC_DEV_READONLY;
	r = tc_dev_open_spec(h->ctx, spec, flags, 0, h->opts.crash_seed, &ro);
	if (r)
		return r;
	/* Every check of the re-add, on the read-only handle: a refusal changes nothing. */
	r = tc_array_re_add_check(array, ro);
	struct tc_array_member_info mi;
	int e = r ? 0 : tc_array_examine(h->ctx, ro, &mi);
	tc_dev_close(ro);
	if (r)
		return r;
	if (e != 1 || mi.role != slot) {
		tc_err(h->ctx, "device %s: its superblock does not name slot %d of array \"%s\" "
		       "(uuid %s): not re-added", spec, slot, id.name, id.uuid);
		return -EINVAL;
	}
	return tc_array_remove(array, name);
}

int tc_host_re_add(tc_host *h, tc_dev *array, const char *spec)
{
	struct stat st;
	bool have = host_spec_stat(spec, &st) == 0;
	int held = host_not_held(h, spec, have, &st);
	if (held)
		return held;
	/* The member may still be held by its array, faulty in its slot. */
	tc_dev *a = host_array_holding(h, spec, have, &st);
	if (a && a != array) {
		struct tc_array_identity id;
		tc_err(h->ctx, "device %s: in array \"%s\" of this server", spec,
		       tc_array_identity(a, &id) ? "?" : id.name);
		return -EEXIST;
	}
	int r = a ? host_readd_release(h, array, spec, have, &st) : 0;
	if (r)
		return r;
	tc_dev *d;
	r = tc_dev_open_spec(h->ctx, spec, h->opts.dev_flags, 0, h->opts.crash_seed, &d);
	if (r)
		return r;
	return tc_array_re_add(array, d);
}

/* ---- live attach and detach ------------------------------------------------------- */

/* Close a device a failed live attach opened, and take it out of the table (no export
 * refers to it: exports are only added on success). */
static void host_dev_forget(tc_host *h, struct host_dev *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < h->ndevs; i++)
		if (h->devs[i] == d) {
			h->devs[i] = h->devs[--h->ndevs];
			break;
		}
	pthread_mutex_unlock(&h->lock);
	if (d->cache)
		tc_cache_close(d->cache);
	tc_dev_close(d->dev);
	free(d->spec);
	free(d);
}

int tc_host_attach(tc_host *h, const char *cache_spec, const char *backing_spec,
		   const struct tc_volume_settings *settings, unsigned flags, tc_export **out)
{
	pthread_mutex_lock(&h->mgmt);
	int r;
	struct host_dev *c = host_dev_find(h, cache_spec), *new_c = NULL, *new_b = NULL;
	if (!c) {
		/* A cache new to the host: open it (and close it again if the attach fails). */
		r = host_dev_open(h, cache_spec, &c);
		new_c = r ? NULL : c;
		if (r)
			goto out;
		if (c->probe.kind == TC_PROBE_CACHE && tc_cache_open(h->ctx, c->dev, &c->cache))
			c->cache_failed = true;
	}
	if (c->probe.kind != TC_PROBE_CACHE) {
		tc_err(h->ctx, "device %s: holds %s, not a tiercache cache", cache_spec,
		       c->probe.what);
		r = -EINVAL;
		goto out;
	}
	if (!c->cache) {
		tc_err(h->ctx, "cache %s: did not open (see the messages above)", cache_spec);
		r = -EIO;
		goto out;
	}
	struct host_dev *b = host_dev_find(h, backing_spec);
	tc_export *e = NULL;
	if (b) {
		for (unsigned i = 0; i < tc_host_export_count(h); i++)
			if (tc_host_export_at(h, i)->backing == b)
				e = tc_host_export_at(h, i);
		if (b->probe.kind != TC_PROBE_BACKING) {
			tc_err(h->ctx, "device %s: holds %s, not a tiercache backing", backing_spec,
			       b->probe.what);
			r = -EINVAL;
			goto out;
		}
		if (e && atomic_load(&e->vol)) {
			tc_err(h->ctx, "volume \"%s\": already attached to cache %s", e->name,
			       atomic_load(&e->cache)->spec);
			r = -EEXIST;
			goto out;
		}
	} else {
		r = host_dev_open(h, backing_spec, &b);
		if (r)
			goto out;
		new_b = b;
		if (b->probe.kind != TC_PROBE_BACKING) {
			tc_err(h->ctx, "device %s: holds %s, not a tiercache backing (format it "
			       "with `tiercache create backing`)", backing_spec, b->probe.what);
			r = -EINVAL;
			goto out;
		}
		if (tc_host_find(h, b->probe.name)) {
			tc_err(h->ctx, "volume \"%s\": the host already serves a volume of that "
			       "name", b->probe.name);
			r = -EEXIST;
			goto out;
		}
	}
	/* An export serving the backing now stops for the switch. */
	if (e)
		export_freeze(e);
	tc_volume *vol;
	r = tc_cache_attach(c->cache, b->dev, settings, flags, &vol);
	if (!r) {
		if (e) {
			atomic_store(&e->cache, c);
			atomic_store(&e->vol, vol);
			atomic_store(&e->state, TC_EXPORT_CACHED);
		} else {
			r = export_add(h, b, c, vol, TC_EXPORT_CACHED, &e);
			if (r)
				tc_volume_detach(vol, 0, NULL, NULL);
		}
	}
	if (e)
		export_thaw(e);
	if (!r && out)
		*out = e;
out:
	/* A refused attach leaves the host as it was: devices it opened are closed. */
	if (r) {
		host_dev_forget(h, new_b);
		host_dev_forget(h, new_c);
	}
	pthread_mutex_unlock(&h->mgmt);
	return r;
}

int tc_host_detach(tc_host *h, tc_export *e, unsigned flags, tc_progress_fn fn,
		   void *opaque)
{
	pthread_mutex_lock(&h->mgmt);
	tc_volume *vol = atomic_load(&e->vol);
	int r;
	if (!vol) {
		tc_err(h->ctx, "volume \"%s\": not attached to a cache", e->name);
		r = -EINVAL;
		goto out;
	}
	/* Drain while clients go on (their writes go write-through meanwhile), so the
	 * freeze below only waits for what is left. */
	if (!(flags & TC_DETACH_DISCARD_DIRTY)) {
		r = tc_volume_flush_dirty(vol, fn, opaque);
		if (r)
			goto out;
	}
	export_freeze(e);
	r = tc_volume_detach(vol, flags, fn, opaque);
	if (!r) {
		atomic_store(&e->vol, NULL);
		atomic_store(&e->cache, NULL);
		atomic_store(&e->state, TC_EXPORT_UNCACHED);
	}
	export_thaw(e);
out:
	pthread_mutex_unlock(&h->mgmt);
	return r;
}

/* ---- fault injection -------------------------------------------------------------- */

bool tc_host_fault_injection(tc_host *h)
{
	return h->opts.fault_injection;
}

/* Fill @out from @d.  Caller holds h->lock. */
static void host_device_fill(tc_host *h, struct host_dev *d, struct tc_host_device *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->spec, sizeof(out->spec), "%s", d->spec);
	out->kind = d->probe.kind;
	out->fault_injection = h->opts.fault_injection;
	if (out->fault_injection)
		tc_fault_get(d->dev, &out->fault);
}

int tc_host_device_at(tc_host *h, unsigned i, struct tc_host_device *out)
{
	pthread_mutex_lock(&h->lock);
	bool have = i < h->ndevs;
	if (have)
		host_device_fill(h, h->devs[i], out);
	pthread_mutex_unlock(&h->lock);
	return have ? 0 : -ENOENT;
}

/* The device @device names, with h->lock held; or NULL, h->lock released and a
 * message naming @device and the host's devices. */
static struct host_dev *host_fault_target(tc_host *h, const char *device, const char *what)
{
	if (!h->opts.fault_injection) {
		tc_err(h->ctx, "device %s: cannot %s: the host's devices were opened without "
		       "fault injection", device, what);
		return NULL;
	}
	struct stat st;
	bool have = host_spec_stat(device, &st) == 0;
	pthread_mutex_lock(&h->lock);
	struct host_dev *d = host_dev_match(h, device, have, &st);
	if (d)
		return d;
	size_t len = 1;
	for (unsigned i = 0; i < h->ndevs; i++)
		len += strlen(h->devs[i]->spec) + 2;
	char *list = malloc(len);
	if (list) {
		list[0] = 0;
		for (unsigned i = 0; i < h->ndevs; i++) {
			if (i)
				strcat(list, ", ");
			strcat(list, h->devs[i]->spec);
		}
	}
	pthread_mutex_unlock(&h->lock);
	tc_err(h->ctx, "device %s: not a device of this host (its devices: %s)", device,
	       list ? list : "?");
	free(list);
	return NULL;
}

int tc_host_fault(tc_host *h, const char *device, const struct tc_fault *f,
		  struct tc_host_device *out)
{
	struct host_dev *d = host_fault_target(h, device, "arm a fault");
	if (!d)
		return h->opts.fault_injection ? -ENOENT : -EPERM;
	/* Under h->lock: a device leaves the table (a failed live attach) only under it. */
	int r = tc_fault_arm(d->dev, f);
	if (!r && out)
		host_device_fill(h, d, out);
	pthread_mutex_unlock(&h->lock);
	return r;
}

int tc_host_heal(tc_host *h, const char *device, struct tc_host_device *out)
{
	struct host_dev *d = host_fault_target(h, device, "heal it");
	if (!d)
		return h->opts.fault_injection ? -ENOENT : -EPERM;
	int r = tc_fault_heal(d->dev);
	if (r >= 0 && out)
		host_device_fill(h, d, out);
	pthread_mutex_unlock(&h->lock);
	return r;
}
