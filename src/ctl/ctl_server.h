/* SPDX-License-Identifier: MIT */
/*
 * ctl_server.h - the server side of the control socket (see ctl.h for the protocol).
 */
#ifndef TC_CTL_SERVER_H
#define TC_CTL_SERVER_H

#include "ctl.h"

struct ctl_server;

/* Called for {"op": "power_cut"}; it is not expected to return.  With none given,
 * power_cut goes to ctl_execute(), which refuses it (a server not started for testing). */
typedef void (*ctl_power_cut_fn)(void *opaque);

/*
 * ctl_server_start - listen on the unix socket @path (mode 0600; its folder is created
 * 0755 if missing; a stale socket file nobody answers on is replaced) and serve each
 * connection on its own thread, running requests on @host.  Returns 0 and *@out,
 * -EADDRINUSE when a server already answers on @path, or -errno.
 */
int ctl_server_start(tc_host *host, const char *path, ctl_power_cut_fn power_cut,
		     void *opaque, struct ctl_server **out);

/* ctl_server_stop - stop accepting, interrupt running operations (they return -EINTR,
 * leaving volumes as they were), wait for the connection threads, remove the socket. */
void ctl_server_stop(struct ctl_server *srv);

#endif /* TC_CTL_SERVER_H */
