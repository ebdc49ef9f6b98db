/* SPDX-License-Identifier: MIT */
/*
 * host.h - the host's and the export's private structures, shared by host.c
 * (assembly, live attach and detach, fault injection) and export.c (the I/O path of an
 * export and its freeze).  Library-internal: front ends see tc_host and tc_export only
 * as opaque handles.
 */
#ifndef TC_HOST_H
#define TC_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "ctx.h"
#include "tiercache.h"

struct host_dev {
	char *spec;                /* as given */
	dev_t st_dev;              /* identity of the file behind (stat), to match specs */
	ino_t st_ino;
	tc_dev *dev;               /* what the engine uses: @base, or the fault layer over it */
	tc_dev *base;              /* the device opened from @spec */
	struct tc_probe probe;
	tc_cache *cache;           /* an open cache */
	bool cache_failed;         /* a cache that did not open */
};

struct tc_export {
	tc_host *host;
	char name[TC_NAME_MAX];
	uint64_t size, data_offset;          /* bytes */
	_Atomic int state;                   /* enum tc_export_state */
	struct host_dev *backing;
	struct host_dev *_Atomic cache;      /* NULL when uncached */
	tc_volume *_Atomic vol;              /* NULL when uncached */
	_Atomic unsigned inflight;
	atomic_bool frozen;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* A global hot spare (host_spare.c): the spec as given and the open device. */
struct host_spare {
	char *spec;
	tc_dev *dev;
};

#define TC_HOST_WARNED_MAX 64

struct tc_host {
	tc_ctx *ctx;
	struct tc_host_opts opts;
	pthread_mutex_t lock;
	pthread_mutex_t mgmt;
	struct host_dev **devs;
	unsigned ndevs, devs_cap;
	tc_export **exps;
	unsigned nexps, exps_cap;
	/* Global hot spares (host_spare.c); the pool, the thread's flags and the warned
	 * list under spare_lock, one placement pass at a time under spare_place. */
	pthread_mutex_t spare_lock, spare_place;
	pthread_cond_t spare_cond;      /* wakes the spare thread (CLOCK_MONOTONIC) */
	struct host_spare *gspares;
	unsigned ngspares, gspares_cap;
	pthread_t spare_thread;
	bool spare_thread_on, spare_stop, spare_kick;
	tc_dev *spare_warned[TC_HOST_WARNED_MAX];   /* arrays told no spare fits */
	unsigned nwarned;
};

void *host_grow(void *arr, unsigned *cap, unsigned need, size_t elem);

/* host_spec_stat - stat() of the file behind device spec @spec: 0, or -1 with errno
 * (ENODEV: a spec with no local file, e.g. nbd: or rbd:). */
int host_spec_stat(const char *spec, struct stat *st);

/* host_same_device - whether the device named @name is @spec, or has the file behind
 * @spec behind it (@st, when @have: host_spec_stat() of @spec succeeded). */
bool host_same_device(const char *name, const char *spec, bool have, const struct stat *st);

/* The global spares (host_spare.c): host_spare_init right after the host is
 * allocated, host_spare_fini first thing at its close (stops the spare thread,
 * closes the pool's devices); host_spare_holds - whether @spec (or the file behind
 * it) is in the pool. */
void host_spare_init(tc_host *h);
void host_spare_fini(tc_host *h);
bool host_spare_holds(tc_host *h, const char *spec);

/* export_add - a new export of the volume on @backing (its probe names it), through
 * @vol on @cache or uncached (@cache and @vol NULL), in @state; *@out when @out.
 * Errors: -EEXIST (a volume of that name on another backing; logged), -ENOMEM. */
int export_add(tc_host *h, struct host_dev *backing, struct host_dev *cache,
	       tc_volume *vol, enum tc_export_state state, tc_export **out);

/* export_freeze - wait until no request of @e is in flight and hold new ones back
 * until export_thaw(); for switching the export between cached and uncached. */
void export_freeze(tc_export *e);
void export_thaw(tc_export *e);

#endif /* TC_HOST_H */
