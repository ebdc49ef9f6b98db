/* SPDX-License-Identifier: MIT */
/*
 * ctl_http.c - the HTTP server of `tiercache serve --http` over libmicrohttpd
 * (ctl_http.h): GET /metrics, / and /status.json, read-only.
 *
 * libmicrohttpd runs its own polling thread and answers one request at a time on it
 * (MHD_USE_INTERNAL_POLLING_THREAD): a scrape takes a few snapshots and formats text,
 * which is quick, and no handler waits for anything but those snapshots, which are the
 * library's lock-free copies of counters (ctl_snap.h): the I/O path never waits for
 * the HTTP server.  A second thread samples the volumes every interval for the page's
 * plots (ctl_history_sample).  /status.json runs the control socket's own `status`
 * (ctl_execute), so the two cannot disagree.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "ctl.h"
#include "ctl_http.h"

struct ctl_http {
	tc_host *host;
	struct MHD_Daemon *daemon;
	struct ctl_history *hist;
	unsigned interval_s;
	pthread_t sampler;
	bool sampler_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;             /* under lock */
};

static void *sampler_main(void *arg)
{
	struct ctl_http *srv = arg;
	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		pthread_mutex_unlock(&srv->lock);
		ctl_history_sample(srv->hist, srv->host);   /* -ENOMEM: this sample is lost */
		pthread_mutex_lock(&srv->lock);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += srv->interval_s;
		while (!srv->stopping &&
		       pthread_cond_timedwait(&srv->cond, &srv->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned code, const char *type,
			       char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body,
								 MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond_text(struct MHD_Connection *c, unsigned code, const char *msg)
{
	char *body = strdup(msg);
	return body ? respond(c, code, "text/plain; charset=utf-8", body, strlen(body)) : MHD_NO;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req_cls)
{
	struct ctl_http *srv = cls;
	(void)version;
	(void)upload;
	(void)upload_size;
	(void)req_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "405 method not allowed: this endpoint is read-only (GET)\n");
	const char *type;
	char *body = NULL;
	size_t len = 0;
	int r = 0;
	if (!strcmp(url, "/metrics")) {
		/* The content type of the text format, version 0.0.4. */
		type = "text/plain; version=0.0.4; charset=utf-8";
		FILE *f = open_memstream(&body, &len);
		r = f ? ctl_metrics_write(srv->host, f) : -ENOMEM;
		if (f && fclose(f))
			r = -ENOMEM;
	} else if (!strcmp(url, "/")) {
		type = "text/html; charset=utf-8";
		FILE *f = open_memstream(&body, &len);
		r = f ? ctl_page_write(srv->host, srv->hist, srv->interval_s, f) : -ENOMEM;
		if (f && fclose(f))
			r = -ENOMEM;
	} else if (!strcmp(url, "/status.json")) {
		type = "application/json";
		json_object *req = json_object_new_object();
		json_object_object_add(req, "op", json_object_new_string("status"));
		json_object *resp = ctl_execute(srv->host, req, NULL, NULL), *res;
		json_object_put(req);
		if (resp && json_object_object_get_ex(resp, "result", &res)) {
			const char *s = json_object_to_json_string_ext(res, JSON_C_TO_STRING_PRETTY |
								       JSON_C_TO_STRING_NOSLASHESCAPE);
			body = strdup(s);
			len = body ? strlen(body) : 0;
		}
		r = body ? 0 : -ENOMEM;
		json_object_put(resp);
	} else {
		return respond_text(c, MHD_HTTP_NOT_FOUND,
				    "404 not found: the paths are /, /metrics and /status.json\n");
	}
	if (r) {
		free(body);
		return respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "500 out of memory\n");
	}
	return respond(c, MHD_HTTP_OK, type, body, len);
}

int ctl_http_start(tc_host *host, const char *hostname, uint16_t port, unsigned interval_s,
		   struct ctl_http **out)
{
	if (interval_s < 1 || interval_s > 3600) {
		tc_log(tc_host_ctx(host), TC_LOG_ERROR, "http: sample interval %u s is not 1 "
		       "to 3600", interval_s);
		return -EINVAL;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai;
	char pstr[8];
	snprintf(pstr, sizeof(pstr), "%u", port);
	int g = getaddrinfo(hostname, pstr, &hints, &ai);
	if (g) {
		tc_log(tc_host_ctx(host), TC_LOG_ERROR, "http: host \"%s\" does not resolve: %s",
		       hostname, gai_strerror(g));
		return -EINVAL;
	}
	struct ctl_http *srv = calloc(1, sizeof(*srv));
	if (!srv || !(srv->hist = ctl_history_new())) {
		free(srv);
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	srv->host = host;
	srv->interval_s = interval_s;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* The first address the name resolves to; libmicrohttpd binds it as given. */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	srv->daemon = MHD_start_daemon(flags, port, NULL, NULL, handle, srv,
				       MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				       MHD_OPTION_CONNECTION_LIMIT, 64u,
				       MHD_OPTION_CONNECTION_TIMEOUT, 30u,
				       MHD_OPTION_END);
	int err = errno ? errno : EADDRINUSE;
	freeaddrinfo(ai);
	if (!srv->daemon) {
		tc_log(tc_host_ctx(host), TC_LOG_ERROR, "http: cannot listen on %s port %u: %s",
		       hostname, port, strerror(err));
		ctl_http_stop(srv);
		return -err;
	}
	if (pthread_create(&srv->sampler, NULL, sampler_main, srv)) {
		ctl_http_stop(srv);
		return -EAGAIN;
	}
	srv->sampler_started = true;
	*out = srv;
	return 0;
}

void ctl_http_stop(struct ctl_http *srv)
{
	if (!srv)
		return;
	if (srv->daemon)
		MHD_stop_daemon(srv->daemon);
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (srv->sampler_started)
		pthread_join(srv->sampler, NULL);
	pthread_cond_destroy(&srv->cond);
	pthread_mutex_destroy(&srv->lock);
	ctl_history_free(srv->hist);
	free(srv);
}
