/* SPDX-License-Identifier: MIT */
/*
 * One request, one answer: submit, wait, and check the answer's status and
 * kind.  Thread-safe; the calls of several threads share the connection.
 */
#include <errno.h>

#include "client-private.h"

int pmemz_check_response(int op, const Pmemz__Response *resp)
{
	if (resp->status > 0 || resp->status < -4095)
		return pmemz_err(-EPROTO, "daemon sent an invalid status %d", resp->status);
	if (resp->status < 0)
		return pmemz_err(resp->status, "%s",
				 resp->message && *resp->message ? resp->message
								 : pmemz_strerror(resp->status));
	if ((int)resp->op_case != op)
		return pmemz_err(-EPROTO, "daemon answered request kind %d with kind %d", op,
				 (int)resp->op_case);
	return 0;
}

int pmemz_client_call_fd(struct pmemz_client *c, Pmemz__Request *req, Pmemz__Response **out,
			 int *out_fd)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	_cleanup_close_ int fd = -1;
	struct pmemz_pending *ticket;
	int op, r;

	if (!c || !req || !out)
		return pmemz_err(-EINVAL, "pmemz_client_call: NULL argument");
	*out = NULL;
	if (out_fd)
		*out_fd = -1;
	op = (int)req->op_case;
	r = pmemz_client_submit(c, req, &ticket);
	if (r < 0)
		return r;
	r = pmemz_client_wait(c, ticket, &resp, &fd);
	if (r < 0)
		return r;
	r = pmemz_check_response(op, resp);
	if (r < 0)
		return r;
	*out = TAKE_PTR(resp);
	if (out_fd)
		*out_fd = TAKE_FD(fd);
	return 0;
}

int pmemz_client_call(struct pmemz_client *c, Pmemz__Request *req, Pmemz__Response **resp)
{
	return pmemz_client_call_fd(c, req, resp, NULL);
}
