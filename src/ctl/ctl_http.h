/* SPDX-License-Identifier: MIT */
/*
 * ctl_http.h - the server's read-only HTTP endpoint (`tiercache serve --http`): the
 * Prometheus metrics (ctl_metrics.c), the status page and its history of samples
 * (ctl_page.c), and the HTTP server itself over libmicrohttpd (ctl_http.c, built only
 * when libmicrohttpd is present: TC_HAVE_MICROHTTPD).
 *
 * Everything here reads the same snapshots the control socket's `status` and `stats`
 * read (tc_volume_stats, tc_volume_latency, tc_cache_stats, tc_array_status): lock-free
 * copies of counters, so a scrape never waits for, nor holds up, a request.
 */
#ifndef TC_CTL_HTTP_H
#define TC_CTL_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tiercache.h"

/*
 * ctl_parse_hostport - split "[HOST:]PORT" (HOST may be "[v6-address]") into @host
 * (@hostlen bytes; "127.0.0.1" when no host is given) and the port (1..65535).  @what
 * names the option in messages ("--http").  Returns 0, or -EINVAL with a message naming
 * the option and the value in @why (@whylen bytes).  The host is not resolved here.
 */
int ctl_parse_hostport(const char *what, const char *s, char *host, size_t hostlen,
		       uint16_t *port, char *why, size_t whylen);

/*
 * ctl_metrics_write - the Prometheus text exposition format (version 0.0.4) of every
 * counter and gauge of `stats --json` and the state numbers of `status --json` on
 * @host, per volume, cache, array and member, to @out.  Counters end in _total; units
 * are bytes and seconds; the latency histograms are Prometheus histograms with
 * power-of-two bounds.  Every HELP names the JSON key it mirrors.  Returns 0 or
 * -ENOMEM.  Thread-safe (takes its own snapshots).
 */
int ctl_metrics_write(tc_host *host, FILE *out);

/* The history behind the status page's plots: one sample per volume every interval,
 * the last CTL_HISTORY_SAMPLES of them (an hour at 5 s). */
#define CTL_HISTORY_SAMPLES 720

struct ctl_history;

/* ctl_history_new - an empty history.  NULL when out of memory. */
struct ctl_history *ctl_history_new(void);
void ctl_history_free(struct ctl_history *h);

/*
 * ctl_history_sample - add one sample of every cached volume of @host, taken now: over
 * the time since the previous sample, the read hit ratio (full read hits per cache line
 * read), the mean and 99th percentile read and write latency (ns, from the latency
 * histograms' differences), and dirty bytes now.  Thread-safe (a mutex inside, held
 * only while the sample is stored).  Returns 0 or -ENOMEM.
 */
int ctl_history_sample(struct ctl_history *h, tc_host *host);

/*
 * ctl_page_write - the status page (HTML, everything inline: CSS and SVG plots drawn
 * here, no script) of @host to @out: volumes (state, policies, dirty, hit ratio),
 * caches, arrays and their members (state, rebuild progress and ETA), and plots from
 * @hist (may be NULL: no plots).  @refresh_s > 0 adds a refresh of that many seconds.
 * Returns 0 or -ENOMEM.  Thread-safe.
 */
int ctl_page_write(tc_host *host, struct ctl_history *hist, unsigned refresh_s, FILE *out);

struct ctl_http;

/*
 * ctl_http_start - serve GET /metrics, / (the status page) and /status.json (the
 * result of the control socket's `status`) on @host:@port (a numeric address or a name
 * resolving to one), with libmicrohttpd's own thread; any other path answers 404 and a
 * method other than GET or HEAD 405.  A sampler thread adds to the page's history
 * every @interval_s seconds (1..3600).  Returns 0 and *@out; -EADDRINUSE, -EACCES,
 * -EINVAL (a host that does not resolve; logged, naming it), -ENOTSUP (built without
 * libmicrohttpd), -errno.
 */
int ctl_http_start(tc_host *host, const char *hostname, uint16_t port, unsigned interval_s,
		   struct ctl_http **out);

/* ctl_http_stop - stop serving (requests in progress finish first) and free. */
void ctl_http_stop(struct ctl_http *srv);

#endif /* TC_CTL_HTTP_H */
