/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - the control protocol between the `tiercache` command and a running server,
 * and the volume operations both of them run.
 *
 * Wire format: a unix stream socket; the client sends one JSON object on one line, the
 * server answers with zero or more progress lines and one final line:
 *   request   {"op": "status" | "stats" | "set" | "flush" | "invalidate" | "detach" |
 *              "attach" | "array_status" | "array_fail" | "array_add_spare" |
 *              "array_re_add" | "array_remove" | "array_replace" | "array_check" |
 *              "array_set_rebuild" | "fault" | "heal" | "power_cut", ...operands}
 *             flush and invalidate take "range": {"offset": BYTES, "length": BYTES}
 *             (invalidate requires it; flush without it drains the whole volume),
 *             invalidate also "discard_dirty": true
 * array_status {"array": NAME} (optional: all arrays) answers {"arrays": [...]}, each
 * as ctl_array_json(); array_fail {"array": NAME, "member": DEVICE or slot number}
 * marks the member faulty (a drill) and answers the array's object.  Live changes,
 * each answering the array's object: array_add_spare {"array", "device": SPEC,
 * "force": bool} (the host opens SPEC: tc_host_open_spare; adds "added"),
 * array_re_add {"array", "device": SPEC} (a faulty or missing member back in its
 * slot: tc_host_re_add; adds "re_added"),
 * array_remove {"array", "member": DEVICE} (a spare, faulty or retired member; adds
 * "removed"), array_replace {"array", "slot": N, "device": SPEC, "force"} (adds
 * "replacing_slot"), array_check {"array", "repair": bool} (starts the pass),
 * array_set_rebuild {"array", "min_rate", "max_rate": bytes/s per member (UINT64_MAX
 * unlimited), "priority": 0..100; those given change}.
 * fault, heal and power_cut are test hooks: only a server started for testing
 * (plugin parameter testing=1) runs them; any other host answers EPERM.
 *   progress  {"progress": {"dirty_left": BYTES, "dirty_start": BYTES}}
 *   final     {"ok": true, "result": {...}}  or  {"ok": false, "errno": E, "error": "..."}
 * Closing the connection while an operation runs interrupts it (a flush, detach or
 * policy change then stops, leaving the volume as it was).
 *
 * The same requests run offline: ctl_execute() on a host the command assembled itself,
 * so a volume command does exactly the same thing with or without a server.
 *
 * The control library (tc_ctl, linked by the command and the plugin): ctl_proto.c (wire
 * format, error responses, settings JSON), ctl_ops.c (ctl_execute), ctl_capture.c (log
 * capture), ctl_client.c (ctl_connect, ctl_call), ctl_server.c (ctl_server.h),
 * ctl_path.c (ctl_path.h).
 */
#ifndef TC_CTL_H
#define TC_CTL_H

#include <json-c/json.h>
#include "tiercache.h"

#define CTL_LINE_MAX (64 * 1024)   /* longest request line, bytes */
/* Longest response line, bytes: a stats answer carries every volume's latency
 * histograms (their non-empty buckets), which outgrow a request's bound. */
#define CTL_RESPONSE_MAX (16 * 1024 * 1024)

/* The smallest sequential cutoff, bytes (0 turns detection off): a stream shorter
 * than the smallest cache line (4 KiB) cannot be told from random I/O. */
#define CTL_SEQ_CUTOFF_MIN 4096u

/*
 * ctl_execute - run request @req on @host; @progress (may be NULL) receives progress of
 * long operations and may interrupt them by returning non-zero.  Returns a new final
 * response object (never NULL unless out of memory).  Messages the library logs on
 * this thread while the request runs are collected (ctl_capture_log) and become the
 * "error" of a failed response.  Thread-safe.
 */
json_object *ctl_execute(tc_host *host, json_object *req, tc_progress_fn progress,
			 void *opaque);

/* ctl_capture_log - a log sink calls this with each message; it is kept when the
 * calling thread runs ctl_execute(), and dropped otherwise.  Returns true if kept
 * (false too when out of memory: the caller then prints it). */
bool ctl_capture_log(const char *msg);

/* ctl_capture_begin / ctl_capture_end - ctl_execute()'s bracket: from begin on, this
 * thread's ctl_capture_log() messages are kept; end stops that and returns them joined
 * by "; " (malloc'ed, caller frees), or NULL when there were none. */
void ctl_capture_begin(void);
char *ctl_capture_end(void);

/* ctl_error - a final error response: errno @err (positive), message @msg. */
json_object *ctl_error(int err, const char *msg);

/* ctl_connect - connect to the control socket @path.  Returns the fd, or -ENOENT /
 * -ECONNREFUSED when no server listens there, or another -errno. */
int ctl_connect(const char *path);

/*
 * ctl_call - send @req on @fd and read the answer; progress lines go to @progress
 * (may be NULL; its return value is ignored: interrupting is closing the socket).
 * Returns the final response (caller puts it), or NULL with *@err (-EPROTO: the
 * server's answer is not the protocol; -ECONNRESET: the server went away; -errno).
 */
json_object *ctl_call(int fd, json_object *req, tc_progress_fn progress, void *opaque,
		      int *err);

/* ctl_send / ctl_recv - one line each way.  ctl_recv returns NULL at EOF or on a line
 * that is not a JSON object (*@err -EPROTO, or 0 at EOF), or a read error (*@err). */
int ctl_send(int fd, json_object *obj);
json_object *ctl_recv(int fd, char *buf, size_t cap, size_t *fill, int *err);

/* Settings <-> JSON: keys read_cache (bool), write_policy, flush_rate ("wb", "medium"),
 * admission ("always" / "nhit"), nhit, fill ("line" / "sectors"), seq_cutoff (bytes),
 * the partition shares reserve_bytes / reserve_pct and cap_bytes / cap_pct (one of each
 * pair is 0; setting either replaces the share, 0 clears it).
 * ctl_settings_json() returns a new object with every key (NULL only when out of
 * memory); `status`, `stats` and `check` all show settings with it.
 * ctl_settings_apply() changes only the keys @obj has; it returns 0 or -EINVAL with a
 * message naming the key and the value in @why (@len bytes). */
json_object *ctl_settings_json(const struct tc_volume_settings *s);
int ctl_settings_apply(json_object *obj, struct tc_volume_settings *s, char *why,
		       size_t len);

/*
 * ctl_array_json - a new object describing @array (tc_array_status and, for arrays with
 * superblocks, tc_array_identity): name, uuid, device (@spec, may be NULL), level,
 * chunk (bytes), copies, size, member_size, data_offset (bytes), state ("active",
 * "degraded", "failed"), redundancy, faulty, events, dirty, readonly, rebuild_pos
 * (bytes), members [{slot, device, state ("active", "faulty", "spare",
 * "rebuilding"), size, read_errors, corrected, replacing (when a replace copies
 * it)}], spares [device names], extra [{device, state ("spare", "faulty",
 * "replaced"), size}] (spares and retired members), sync ("idle", "rebuild", "check",
 * "repair"), sync_pos, sync_end (member bytes), sync_rate (bytes/s per member),
 * sync_eta_ns, mismatches, checked (of the running or last check), rebuild {min_rate,
 * max_rate (bytes/s), priority, depth} (tc_array_status).  NULL when
 * @array is not an array or out of memory.  `status`, `array status` show it.
 */
json_object *ctl_array_json(tc_dev *array, const char *spec);

#endif /* TC_CTL_H */
