/* SPDX-License-Identifier: MIT */
/*
 * ctl_server.c - accept control connections and run their requests (ctl.h).
 *
 * One thread accepts; each connection gets a thread of its own, so a long flush on
 * one connection does not hold up `tiercache status` on another.  An operation stops
 * early (-EINTR, nothing lost) when its client hangs up or the server stops: the
 * progress callback notices both.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_path.h"
#include "ctl_server.h"

struct ctl_server {
	tc_host *host;
	char *path;
	int listen_fd;
	int stop_pipe[2];
	pthread_t accept_thread;
	atomic_bool stopping;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned nconns;
	struct ctl_conn *conns;        /* open connections, under lock */
	ctl_power_cut_fn power_cut;
	void *opaque;
};

struct ctl_conn {
	struct ctl_server *srv;
	int fd;
	uint64_t last_progress_ns;
	struct ctl_conn *next;
};

/* Progress of a long operation: a line at most every 200 ms; interrupt when the
 * client has gone or the server stops. */
static int conn_progress(void *opaque, uint64_t left, uint64_t start)
{
	struct ctl_conn *c = opaque;
	if (atomic_load(&c->srv->stopping))
		return 1;
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return 1;
	uint64_t now = tc_monotonic_ns();
	if (now - c->last_progress_ns >= 200000000u) {
		c->last_progress_ns = now;
		json_object *o = json_object_new_object(), *p2 = json_object_new_object();
		json_object_object_add(p2, "dirty_left", json_object_new_uint64(left));
		json_object_object_add(p2, "dirty_start", json_object_new_uint64(start));
		json_object_object_add(o, "progress", p2);
		int r = ctl_send(c->fd, o);
		json_object_put(o);
		if (r)
			return 1;
	}
	return 0;
}

static void *conn_main(void *arg)
{
	struct ctl_conn *c = arg;
	struct ctl_server *srv = c->srv;
	char *buf = malloc(CTL_LINE_MAX);
	size_t fill = 0;
	while (buf && !atomic_load(&srv->stopping)) {
		int err;
		json_object *req = ctl_recv(c->fd, buf, CTL_LINE_MAX, &fill, &err);
		if (!req) {
			if (err == -EPROTO) {
				json_object *e = ctl_error(EPROTO, "request: not one JSON object "
							   "on one line of at most 64 KiB");
				ctl_send(c->fd, e);
				json_object_put(e);
			}
			break;
		}
		json_object *jop;
		/* "op" may be absent, null or not a string: ctl_execute() answers those. */
		if (json_object_object_get_ex(req, "op", &jop) &&
		    json_object_is_type(jop, json_type_string) &&
		    !strcmp(json_object_get_string(jop), "power_cut") && srv->power_cut) {
			json_object_put(req);
			srv->power_cut(srv->opaque);
			break;
		}
		c->last_progress_ns = tc_monotonic_ns();
		json_object *resp = ctl_execute(srv->host, req, conn_progress, c);
		json_object_put(req);
		int r = ctl_send(c->fd, resp);
		json_object_put(resp);
		if (r)
			break;
	}
	free(buf);
	pthread_mutex_lock(&srv->lock);
	for (struct ctl_conn **pp = &srv->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	close(c->fd);
	free(c);
	srv->nconns--;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct ctl_server *srv = arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = srv->listen_fd, .events = POLLIN },
				       { .fd = srv->stop_pipe[0], .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct ctl_conn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->srv = srv;
		c->fd = fd;
		pthread_mutex_lock(&srv->lock);
		srv->nconns++;
		c->next = srv->conns;
		srv->conns = c;
		pthread_mutex_unlock(&srv->lock);
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, conn_main, c)) {
			pthread_mutex_lock(&srv->lock);
			srv->conns = c->next;
			srv->nconns--;
			pthread_mutex_unlock(&srv->lock);
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

int ctl_server_start(tc_host *host, const char *path, ctl_power_cut_fn power_cut,
		     void *opaque, struct ctl_server **out)
{
	tc_ctx *ctx = tc_host_ctx(host);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		tc_log(ctx, TC_LOG_ERROR, "control socket %s: path longer than %zu bytes", path,
		       sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	int r = ctl_make_parent(path);
	if (r) {
		tc_log(ctx, TC_LOG_ERROR, "control socket %s: cannot create its folder: %s", path,
		       strerror(-r));
		return r;
	}
	int probe = ctl_connect(path);
	if (probe >= 0) {
		close(probe);
		tc_log(ctx, TC_LOG_ERROR, "control socket %s: another server answers there", path);
		return -EADDRINUSE;
	}
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		tc_log(ctx, TC_LOG_ERROR, "control socket %s: exists and is not a socket", path);
		return -EEXIST;
	}
	if (probe == -ECONNREFUSED)
		unlink(path);    /* a stale socket file from a server that died */
	struct ctl_server *srv = calloc(1, sizeof(*srv));
	if (!srv || !(srv->path = strdup(path))) {
		free(srv);
		return -ENOMEM;
	}
	srv->host = host;
	srv->power_cut = power_cut;
	srv->opaque = opaque;
	srv->stop_pipe[0] = srv->stop_pipe[1] = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->cond, NULL);
	srv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv->listen_fd < 0)
		goto fail_errno;
	/* Mode 0600 from the start: the socket controls the devices. */
	mode_t old = umask(0177);
	int b = bind(srv->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (b < 0 || listen(srv->listen_fd, 16) < 0 || pipe2(srv->stop_pipe, O_CLOEXEC) < 0)
		goto fail_errno;
	r = -pthread_create(&srv->accept_thread, NULL, accept_main, srv);
	if (r)
		goto fail;
	*out = srv;
	return 0;
fail_errno:
	r = -errno;
fail:
	tc_log(ctx, TC_LOG_ERROR, "control socket %s: %s", path, strerror(-r));
	if (srv->listen_fd >= 0) {
		close(srv->listen_fd);
		unlink(path);
	}
	if (srv->stop_pipe[0] >= 0) {
		close(srv->stop_pipe[0]);
		close(srv->stop_pipe[1]);
	}
	free(srv->path);
	free(srv);
	return r;
}

void ctl_server_stop(struct ctl_server *srv)
{
	atomic_store(&srv->stopping, true);
	ssize_t w = write(srv->stop_pipe[1], "x", 1);
	(void)w;
	pthread_join(srv->accept_thread, NULL);
	close(srv->listen_fd);
	unlink(srv->path);
	/* Connections blocked reading a request: shut their sockets down; running
	 * operations see `stopping` at their next progress call. */
	pthread_mutex_lock(&srv->lock);
	for (struct ctl_conn *c = srv->conns; c; c = c->next)
		shutdown(c->fd, SHUT_RD);
	while (srv->nconns) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&srv->cond, &srv->lock, &ts);
	}
	pthread_mutex_unlock(&srv->lock);
	close(srv->stop_pipe[0]);
	close(srv->stop_pipe[1]);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv->path);
	free(srv);
}
