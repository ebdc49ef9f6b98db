/* SPDX-License-Identifier: MIT */
/*
 * ctl_client.c - the client side of the control socket: connect, send a request, read
 * its progress lines and final answer (ctl.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"

int ctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

json_object *ctl_call(int fd, json_object *req, tc_progress_fn progress, void *opaque,
		      int *err)
{
	*err = ctl_send(fd, req);
	if (*err)
		return NULL;
	char *buf = malloc(CTL_RESPONSE_MAX);
	if (!buf) {
		*err = -ENOMEM;
		return NULL;
	}
	size_t fill = 0;
	json_object *resp = NULL;
	for (;;) {
		json_object *o = ctl_recv(fd, buf, CTL_RESPONSE_MAX, &fill, err);
		if (!o) {
			if (!*err)
				*err = -ECONNRESET;
			break;
		}
		json_object *p, *a, *b;
		if (json_object_object_get_ex(o, "progress", &p)) {
			if (progress && json_object_object_get_ex(p, "dirty_left", &a) &&
			    json_object_object_get_ex(p, "dirty_start", &b))
				progress(opaque, json_object_get_uint64(a),
					 json_object_get_uint64(b));
			json_object_put(o);
			continue;
		}
		if (!json_object_object_get_ex(o, "ok", &p)) {
			json_object_put(o);
			*err = -EPROTO;
			break;
		}
		resp = o;
		break;
	}
	free(buf);
	return resp;
}
