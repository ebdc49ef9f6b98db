/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ctl_request.c - the control protocol's request side (src/ctl/): the input is
 * what a client sends on the control socket.  It goes through a socket pair into
 * ctl_recv() (line framing, JSON parsing), and each request decoded runs through
 * ctl_execute() (dispatch, argument checks, the operations) on a host assembled from
 * no devices, read-only, so no request can change a file.  `attach` requests, which
 * open the device paths they name, are decoded but not run.  A request's "settings"
 * object also goes through ctl_settings_apply() (the parse-and-validate layer of
 * attach and set).  Properties: every answer is an object with a boolean "ok"; a
 * refusal carries an error.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"
#include "fuzz.h"

#define FUZZ_CTL_CAP 65536

static tc_host *host;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	struct tc_host_opts ho = { .dev_flags = TC_DEV_READONLY };
	if (tc_host_assemble(fuzz_ctx(), NULL, 0, &ho, &host))
		abort();
	return 0;
}

static void run_one(json_object *req)
{
	json_object *jop, *js, *jok;
	if (json_object_object_get_ex(req, "settings", &js)) {
		struct tc_volume_settings s;
		char why[256] = "";
		tc_volume_settings_default(&s);
		int r = ctl_settings_apply(js, &s, why, sizeof(why));
		fuzz_require(r == 0 || (r == -EINVAL && why[0]));
	}
	if (json_object_object_get_ex(req, "op", &jop) &&
	    json_object_is_type(jop, json_type_string) &&
	    !strcmp(json_object_get_string(jop), "attach"))
		return;
	json_object *resp = ctl_execute(host, req, NULL, NULL);
	fuzz_require(resp && json_object_is_type(resp, json_type_object));
	fuzz_require(json_object_object_get_ex(resp, "ok", &jok) &&
		     json_object_is_type(jok, json_type_boolean));
	if (!json_object_get_boolean(jok))
		fuzz_require(json_object_object_get_ex(resp, "error", &jok));
	json_object_put(resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[FUZZ_CTL_CAP];
	int sv[2];

	if (!host)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size > FUZZ_CTL_CAP - 1)
		size = FUZZ_CTL_CAP - 1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	/* A line as a client sends it: the bytes, then the newline that ends a request. */
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	if (write(sv[1], "\n", 1) != 1)
		abort();
	shutdown(sv[1], SHUT_WR);
	size_t fill = 0;
	for (;;) {
		int err;
		json_object *req = ctl_recv(sv[0], buf, sizeof(buf), &fill, &err);
		if (!req) {
			fuzz_require(err <= 0);
			break;
		}
		run_one(req);
		json_object_put(req);
	}
	close(sv[0]);
	close(sv[1]);
	return 0;
}
