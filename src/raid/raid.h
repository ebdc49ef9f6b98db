/* SPDX-License-Identifier: MIT */
/*
 * raid.h - the array layer's inside: the array device (array.c) and the ops table of
 * each RAID level (md's personalities: raid0.c, raid1.c, raid10.c, raid56.c).
 *
 * array.c owns what every level shares: the member table and member states, child
 * requests to members and their completion, member failure (a failed write makes a
 * member faulty; a failed read is for the level to repair), FLUSH, health events,
 * limits and status.  A level maps array offsets to members and runs READ, WRITE,
 * WRITE_ZEROES and DISCARD.
 *
 * Two engines run the levels: the mapped engine of array.c for the levels that place
 * copies of data and no parity (RAID 0, 1, 10: a level's map() names the members and
 * offsets of every copy of a run of bytes), and the stripe engine of raid56.c.
 */
#ifndef TC_RAID_H
#define TC_RAID_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include "dev.h"

struct tc_array;

/* One copy of a run of array bytes on one member. */
struct raid_copy {
	unsigned member;
	uint64_t offset;        /* on the member, bytes */
};

/* Where a run of array bytes starting at some offset lives. */
struct raid_extent {
	uint64_t len;           /* bytes from the offset that map contiguously */
	unsigned ncopies;
	struct raid_copy copy[TC_ARRAY_MAX_MEMBERS];
};

struct tc_raid_level {
	const char *name;               /* "raid0", ... */
	enum tc_raid_level_id id;
	unsigned min_members;           /* with the default copies */
	unsigned parity;                /* parity chunks per stripe */
	/* The array's data members (members' worth of data per stripe). */
	unsigned (*data_members)(const struct tc_array *a);
	int (*init)(struct tc_array *a);        /* optional: level state in a->level_priv */
	void (*fini)(struct tc_array *a);       /* optional */
	/* Mapped levels: the copies of array bytes from @off (at most @len of them). */
	void (*map)(const struct tc_array *a, uint64_t off, uint64_t len,
		    struct raid_extent *ext);
	/* READ, WRITE, WRITE_ZEROES, DISCARD of @io, already checked by dev.c and with
	 * the array not failed.  Completes through array_complete(). */
	void (*submit)(struct tc_array *a, struct tc_io *io);
	/* Member failures survivable with the faulty members of @faulty (bit per member);
	 * negative when the array has failed. */
	int (*redundancy)(const struct tc_array *a, uint32_t faulty);
};

extern const struct tc_raid_level raid0_level, raid1_level, raid10_level, raid5_level,
	raid6_level;

struct array_member {
	struct tc_dev *dev;
	_Atomic int state;              /* enum tc_member_state */
	atomic_uint inflight;           /* child requests in flight (RAID 1 read choice) */
	_Atomic uint64_t read_errors, corrected;
};

struct tc_array {
	struct tc_dev dev;              /* first: tc_dev * and tc_array * convert */
	const struct tc_raid_level *level;
	unsigned n;                     /* members */
	unsigned copies;                /* RAID 1: n, RAID 10: opts, else 1 */
	uint64_t chunk;                 /* bytes */
	unsigned chunk_shift;
	uint64_t member_size;           /* bytes used on every member, whole chunks */
	struct array_member m[TC_ARRAY_MAX_MEMBERS];
	void *level_priv;
	atomic_uint rr;                 /* rotating start for read balancing */

	pthread_mutex_t lock;           /* member state changes and events */
	_Atomic uint32_t faulty;        /* bit per member */
	atomic_bool failed;
	int redundancy;                 /* under lock: last reported */
};

/* A request to one member on behalf of the array. */
struct array_child;
typedef void (*array_child_fn)(struct array_child *c, int result);

struct array_child {
	struct tc_io io;
	struct tc_array *a;
	unsigned member;
	array_child_fn done;
	void *owner;
	struct iovec iov1;              /* a flat buffer */
	struct iovec *iovs;             /* malloc'ed slice of a parent's iovecs, or NULL */
};

/* array_child_submit - submit @c to member @member: @op at @off for @len bytes, from or
 * into the flat buffer @buf, or (@buf NULL, op READ/WRITE) the slice [@skip, @skip +
 * @len) of the parent @parent's iovecs.  @done runs on completion with the result;
 * an allocation failure completes @c with -ENOMEM from a context work item. */
void array_child_submit(struct tc_array *a, struct array_child *c, unsigned member,
			unsigned op, unsigned flags, uint64_t off, uint64_t len, void *buf,
			const struct tc_io *parent, uint64_t skip, array_child_fn done,
			void *owner);

/* array_complete - complete the array request @io: directly from a completion, from a
 * context work item when an array submit is running on this thread. */
void array_complete(struct tc_array *a, struct tc_io *io, int result);

/* array_io_error - whether a member request's result is the member's fault (an I/O
 * error), not the array's (-EINVAL, -ENOMEM). */
static inline bool array_io_error(int result)
{
	return result < 0 && result != -EINVAL && result != -ENOMEM;
}

static inline bool array_member_active(const struct tc_array *a, unsigned i)
{
	return atomic_load_explicit(&a->m[i].state, memory_order_acquire) == TC_MEMBER_ACTIVE;
}

static inline bool array_failed(const struct tc_array *a)
{
	return atomic_load_explicit(&a->failed, memory_order_acquire);
}

/* array_member_fail - member @i becomes faulty (@why: "write error", ...; @err the
 * errno or 0): logged, redundancy recomputed and reported (TC_DEV_DEGRADED,
 * TC_DEV_FAILED).  Returns false when it already was faulty. */
bool array_member_fail(struct tc_array *a, unsigned i, const char *why, int err);

/* The shared engine of the mapped levels (RAID 0, 1, 10). */
void array_submit_mapped(struct tc_array *a, struct tc_io *io);

/* Redundancy of md's near layout with @copies copies over the members (RAID 0, 1, 10):
 * the fewest active copies of any chunk, less one. */
int array_near_redundancy(const struct tc_array *a, unsigned copies, uint32_t faulty);
void array_near_map(const struct tc_array *a, unsigned copies, uint64_t off, uint64_t len,
		    struct raid_extent *ext);

#endif /* TC_RAID_H */
