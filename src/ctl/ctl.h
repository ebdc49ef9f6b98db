/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - the control protocol between the `tiercache` command and a running server,
 * and the volume operations both of them run.
 *
 * Wire format: a unix stream socket; the client sends one JSON object on one line, the
 * server answers with zero or more progress lines and one final line:
 *   request   {"op": "status" | "stats" | "set" | "flush" | "detach" | "attach" |
 *              "fault" | "heal" | "power_cut", ...operands}
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
 * admission ("always" / "nhit"), nhit, fill ("line" / "sectors"), seq_cutoff (bytes).
 * ctl_settings_json() returns a new object with every key (NULL only when out of
 * memory); `status`, `stats` and `check` all show settings with it.
 * ctl_settings_apply() changes only the keys @obj has; it returns 0 or -EINVAL with a
 * message naming the key and the value in @why (@len bytes). */
json_object *ctl_settings_json(const struct tc_volume_settings *s);
int ctl_settings_apply(json_object *obj, struct tc_volume_settings *s, char *why,
		       size_t len);

#endif /* TC_CTL_H */
