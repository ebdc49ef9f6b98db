/* SPDX-License-Identifier: MIT */
/*
 * tiercache-test.h - libtiercache's test API: crash-test devices that model volatile
 * write caches and power loss, fault-injection layers, power cuts of a whole host, and
 * process death of a cache.  For tests, benchmarks and fault drills (`tiercache serve
 * --testing`), never for the I/O path of a production server: a cache abandoned or a
 * host cut here loses what a real crash would lose.
 *
 * Everything here follows tiercache.h's rules (sizes in bytes, 0 or a negative errno,
 * messages through the context's log sink).  Symbols declared here are exported by
 * libtiercache.so like the rest of the API, under the same version node.
 */
#ifndef TIERCACHE_TEST_H
#define TIERCACHE_TEST_H

#include "tiercache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------
 * Crash-test devices and fault-injection layers
 */

/*
 * tc_dev_new_crash - a crash-test device over the file @path (its durable contents).
 * Writes stay in a volatile layer until a FLUSH (FUA writes are durable on completion);
 * reads see the newest data.  tc_crash_power_cut() then keeps a seed-chosen subset of
 * the unflushed writes, at TC_UNIT_SIZE granularity, and fails all later I/O with -EIO.
 * With TC_DEV_CREATE the file is created or extended to @size (sparse).
 */
int tc_dev_new_crash(tc_ctx *ctx, const char *path, unsigned flags, uint64_t size,
		     uint64_t seed, tc_dev **out);

/*
 * tc_crash_power_cut - crash devices only: for every 4 KiB unit written since the last
 * FLUSH, write to the file one of {its durable value, each value written to it since},
 * chosen by the device's seed; drop the rest; from now on every request fails with
 * -EIO.  Returns the number of units whose value changed on the file, or -EINVAL if
 * @dev is not a crash device.
 */
int tc_crash_power_cut(tc_dev *dev);

/* Kinds of request a fault applies to.  WRITE covers WRITE, WRITE_ZEROES and DISCARD. */
enum tc_fault_op {
	TC_FAULT_READ = 0,
	TC_FAULT_WRITE = 1,
	TC_FAULT_FLUSH = 2,
	TC_FAULT_ALL = 3,       /* every request (fault layer only, not tc_crash_fail_nth) */
};

/*
 * tc_crash_fail_nth - crash devices only: make the @nth (1-based, counted from this
 * call) request of kind @op (READ, WRITE or FLUSH) fail with -EIO; with @persistent
 * every later one fails too.  @nth == 0 clears the fault.  Returns -EINVAL if @dev is
 * not a crash device or @op is TC_FAULT_ALL.
 */
int tc_crash_fail_nth(tc_dev *dev, enum tc_fault_op op, uint64_t nth, bool persistent);

/* A fault to arm on a fault-injection device (tc_fault_arm). */
struct tc_fault {
	enum tc_fault_op op;      /* which requests fail */
	uint64_t after;           /* matching requests let through first; 0: the next fails */
	int error;                /* the positive errno they fail with, 1..4095 (EIO, ...) */
	bool transient;           /* fail one request, then disarm; false: every matching
	                           * request from then on, until tc_fault_heal() */
};

/* What a fault-injection device is doing (tc_fault_get). */
struct tc_fault_state {
	bool armed;
	struct tc_fault fault;    /* the fault armed now or last; @after: requests still to
	                           * let through before it fails them (0 once failing) */
	uint64_t failed;          /* requests failed by the fault armed now or last */
	uint64_t failed_total;    /* requests failed since the layer was created */
};

/*
 * tc_dev_new_fault - a fault-injection layer over @inner: requests pass through to
 * @inner unchanged (with their own counters on both devices) until a fault is armed,
 * then matching requests complete with the fault's errno (negated) without reaching
 * @inner, from a context work item like every completion.  The layer reports @inner's
 * size, logical block size, O_DIRECT use and name; its backend is "fault".  It owns
 * @inner from now on: tc_dev_close() of the layer closes @inner too (also when this
 * call fails).  Errors: -ENOMEM.  Thread-safe like every device; an unarmed layer
 * costs one atomic load and one small allocation per request.
 */
int tc_dev_new_fault(tc_ctx *ctx, tc_dev *inner, tc_dev **out);

/*
 * tc_fault_arm - arm @f on the fault layer @dev, replacing a fault armed before (its
 * count of requests let through starts again from @f->after).  Takes effect for
 * requests submitted after the call; requests already passed on complete as @inner
 * completes them.  Returns 0, or -EINVAL (not a fault layer, an unknown @f->op, an
 * @f->error outside 1..4095; the message names the device and the value) with the
 * fault left as it was.  Thread-safe.
 */
int tc_fault_arm(tc_dev *dev, const struct tc_fault *f);

/* tc_fault_heal - disarm the fault of @dev: every request passes through again.
 * Returns 1 if a fault was armed, 0 if none was, -EINVAL if @dev is not a fault layer.
 * Thread-safe. */
int tc_fault_heal(tc_dev *dev);

/* tc_fault_get - fill @st.  Returns 0, or -EINVAL if @dev is not a fault layer.
 * Thread-safe. */
int tc_fault_get(tc_dev *dev, struct tc_fault_state *st);

/* Names of fault kinds as the command line and the control protocol spell them:
 * "read", "write", "flush", "all".  tc_fault_op_name() returns "unknown" when out of
 * range; tc_fault_op_parse() returns the enum tc_fault_op value or -EINVAL. */
const char *tc_fault_op_name(unsigned op);
int tc_fault_op_parse(const char *s);

/* ------------------------------------------------------------------------------------
 * Emulated devices: what the model did
 */

/* What an emulated device (emu.c) modelled since it was opened; times are model time. */
struct tc_emu_stats {
	uint64_t requests;      /* requests started (service began) */
	uint64_t busy_ns;       /* sum of service times: HDD actuator busy time, ns */
	uint64_t wait_ns;       /* sum of queueing delays, arrival to start of service, ns */
	uint64_t positioned;    /* HDD: requests that needed seek and/or rotation */
	uint64_t reordered;     /* HDD: requests started ahead of an older queued one (NCQ) */
};

/* tc_emu_stats - copy @dev's model counters (average service time = busy_ns /
 * requests).  Returns 0, or -EINVAL if @dev is not an emulated device.  Thread-safe. */
int tc_emu_stats(tc_dev *dev, struct tc_emu_stats *st);

/* ------------------------------------------------------------------------------------
 * Process death and power cuts
 */

/*
 * tc_cache_abandon - process death, for crash tests: no metadata commit, no superblock
 * write, requests in flight are freed without completing.  Deterministic mode: frees at
 * once; the context must then be freed (tc_ctx_free) before it is polled again, since
 * its queue may point into the freed requests.  Threaded mode: first waits for the
 * requests and background work already in flight to finish (cut the devices' power
 * first so they fail fast), since device threads would otherwise complete into freed
 * memory.
 */
void tc_cache_abandon(tc_cache *cache);

/* tc_host_power_cut - crash devices only: every "crash:" device of the host loses
 * power at the same instant (first all refuse new requests, then each applies
 * tc_crash_power_cut()).  Returns the number of devices cut. */
int tc_host_power_cut(tc_host *host);

/* ---- Fault injection on a host's devices (hosts assembled with fault_injection) ---- */

#define TC_SPEC_MAX 4352          /* longest device spec tc_host_device holds, bytes */

/* One device of a host, as tc_host_device_at(), tc_host_fault() and tc_host_heal()
 * report it (a copy: it stays valid whatever the host does next). */
struct tc_host_device {
	char spec[TC_SPEC_MAX];   /* the spec it was opened with */
	enum tc_probe_kind kind;  /* TC_PROBE_CACHE or TC_PROBE_BACKING */
	bool fault_injection;     /* under a fault layer: @fault is its state */
	struct tc_fault_state fault;
};

/* tc_host_fault_injection - the host's devices are under fault layers. */
bool tc_host_fault_injection(tc_host *host);

/* tc_host_device_at - copy the @i-th device of the host into @out.  Returns 0, or
 * -ENOENT past the end.  Thread-safe. */
int tc_host_device_at(tc_host *host, unsigned i, struct tc_host_device *out);

/*
 * tc_host_fault - arm @f (see tc_fault_arm) on the host's device @device, named by its
 * spec or by a path to the same file ("crash:/a" also matches "/a"); a cache device's
 * failures reach its cache engine as device errors, a backing's its volume.  @out (may
 * be NULL) receives the device's state after the call.  Returns 0, -EPERM (the host was
 * assembled without fault_injection), -ENOENT (no such device: the message lists the
 * host's devices), -EINVAL (a bad @f); on an error nothing changed.  Thread-safe; it
 * does not wait for management operations (a detach draining, say).
 */
int tc_host_fault(tc_host *host, const char *device, const struct tc_fault *f,
		  struct tc_host_device *out);

/* tc_host_heal - disarm the fault of @device (tc_fault_heal).  Returns 1 if a fault was
 * armed, 0 if none was, or the errors of tc_host_fault.  Thread-safe. */
int tc_host_heal(tc_host *host, const char *device, struct tc_host_device *out);

/*
 * tc_volume_set_latency_stats - record the volume's latency histograms (@on, the
 * default) or not.  For the hit-path benchmark, which measures what recording costs by
 * alternating rounds with and without it; the counters of tc_volume_stats stay on.
 */
void tc_volume_set_latency_stats(tc_volume *vol, bool on);

/*
 * tc_volume_set_stripe_fill - let the cleaner complete the backing's stripes with
 * clean cached data (@on, the default) or write back dirty units only.  For the drain
 * benchmark, which compares the two in one run, and tests.  Thread-safe; applies to
 * the batches collected after it.
 */
void tc_volume_set_stripe_fill(tc_volume *vol, bool on);

/*
 * tc_volume_check_dirty_index - compare the volume's dirty index (the dirty units of
 * each group of lines, which the cleaner works from) with a count made from every
 * cache line now.  For tests, with no request or writeback in flight.  0 when they
 * agree; -EIO when they differ (the first difference logged); -ENOENT when the index
 * is lost (out of memory: the cleaner scans the lines); -ENOMEM.
 */
int tc_volume_check_dirty_index(tc_volume *vol);

#ifdef __cplusplus
}
#endif
#endif /* TIERCACHE_TEST_H */
