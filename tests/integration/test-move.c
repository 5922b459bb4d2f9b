/* SPDX-License-Identifier: MIT */
/*
 * MOVE on the real daemon, over raw frames (libpmemzclient has no call for
 * it yet): a pool tag's extents moved to new tags, the pool removed when
 * emptied, STAT's moves counter, USAGE's counts, the per-uid tag limit net
 * of the emptied tags, refusals (another uid's tag, an existing to_tag,
 * 257 moves), a kill -9 and restart keeping every move that returned, and
 * `pmemzctl check` clean on the image at the end.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define REGION "mv"
#define EXTENT (64u * 1024u)
#define OTHER_UID 65534
#define MAX_TAGS 7

static int setup(void **state)
{
	struct itest_env *e;
	int r = itest_setup(state);

	if (r)
		return r;
	e = *state;
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/mv.img\n"
			 "size = 16M\n"
			 "extent_size = 64K\n"
			 "uid_max_tags = %d\n"
			 "allow_users = root, %d\n",
			 e->dir, MAX_TAGS, OTHER_UID);
	itest_daemon_start(e);
	return 0;
}

/* MOVE n extents of from to to[k]; the status (and the message on stderr). */
static int do_move(int fd, const char *from, const uint64_t *ext, const char *const *to, size_t n)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__MoveReq m = PMEMZ__MOVE_REQ__INIT;
	Pmemz__Move *mv = calloc(n ? n : 1, sizeof(*mv));
	Pmemz__Move **pv = calloc(n ? n : 1, sizeof(*pv));
	Pmemz__Response *resp = NULL;
	int r;

	assert_non_null(mv);
	assert_non_null(pv);
	for (size_t k = 0; k < n; k++) {
		pmemz__move__init(&mv[k]);
		mv[k].from_tag = UNCONST(from);
		mv[k].extent = ext[k];
		mv[k].to_tag = UNCONST(to[k]);
		pv[k] = &mv[k];
	}
	m.region = UNCONST(REGION);
	m.n_moves = n;
	m.moves = pv;
	req.op_case = PMEMZ__REQUEST__OP_MOVE;
	req.move = &m;
	r = itest_raw_call(fd, &req, &resp);
	if (r)
		fprintf(stderr, "MOVE from %s: %d (%s)\n", from, r,
			resp->message ? resp->message : "");
	else
		assert_int_equal(resp->move->moved, n);
	itest_resp_free(resp);
	free(mv);
	free(pv);
	return r;
}

/* A tag's extent indices (LIST); how many, -ENOENT when there is no such tag. */
static int tag_extents(int fd, const char *tag, uint64_t *ext, size_t cap)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ListReq l = PMEMZ__LIST_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int r, n = 0;

	l.region = UNCONST(REGION);
	l.tag = UNCONST(tag);
	req.op_case = PMEMZ__REQUEST__OP_LIST;
	req.list = &l;
	r = itest_raw_call(fd, &req, &resp);
	if (r == 0) {
		assert_int_equal(resp->list->n_tags, 1);
		for (size_t i = 0; i < resp->list->tags[0]->n_runs; i++) {
			const Pmemz__Run *ru = resp->list->tags[0]->runs[i];

			for (uint64_t x = ru->first; x < ru->first + ru->count; x++, n++)
				if ((size_t)n < cap)
					ext[n] = x;
		}
	}
	itest_resp_free(resp);
	return r ? r : n;
}

static void usage_of_root(int fd, uint64_t *committed, uint64_t *tags)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__UsageReq u = PMEMZ__USAGE_REQ__INIT;
	Pmemz__Response *resp = NULL;

	u.region = UNCONST(REGION);
	req.op_case = PMEMZ__REQUEST__OP_USAGE;
	req.usage = &u;
	assert_int_equal(itest_raw_call(fd, &req, &resp), 0);
	*committed = *tags = 0;
	for (size_t i = 0; i < resp->usage->n_uids; i++)
		if (resp->usage->uids[i]->uid == 0) {
			*committed = resp->usage->uids[i]->committed;
			*tags = resp->usage->uids[i]->tags;
		}
	itest_resp_free(resp);
}

static uint64_t stat_moves(int fd)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq s = PMEMZ__STAT_REQ__INIT;
	Pmemz__Response *resp = NULL;
	uint64_t n;

	s.region = UNCONST(REGION);
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &s;
	assert_int_equal(itest_raw_call(fd, &req, &resp), 0);
	assert_true(resp->stat->regions[0]->has_moves);
	n = resp->stat->regions[0]->moves;
	itest_resp_free(resp);
	return n;
}

/* Another uid may not move root's tag: -ENOENT, as for a tag it does not have. */
static void other_uid_refused(const struct itest_env *e, uint64_t ext)
{
	static const char *const to[1] = {"stolen"};
	pid_t pid;
	int status;

	/* The other uid reaches the socket (the test directory is root's). */
	assert_int_equal(chmod(e->dir, 0711), 0);
	assert_int_equal(chmod(e->sock, 0666), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd, r;

		if (setgroups(0, NULL) < 0 || setgid(OTHER_UID) < 0 || setuid(OTHER_UID) < 0)
			_exit(100);
		fd = itest_raw_connect(e->sock);
		if (fd < 0)
			_exit(101);
		{
			Pmemz__Request req = PMEMZ__REQUEST__INIT;
			Pmemz__MoveReq m = PMEMZ__MOVE_REQ__INIT;
			Pmemz__Move mv = PMEMZ__MOVE__INIT, *pv[1] = {&mv};

			mv.from_tag = UNCONST("pool");
			mv.extent = ext;
			mv.to_tag = UNCONST(to[0]);
			m.region = UNCONST(REGION);
			m.n_moves = 1;
			m.moves = pv;
			req.op_case = PMEMZ__REQUEST__OP_MOVE;
			req.move = &m;
			r = itest_child_call(fd, &req);
		}
		_exit(r == -ENOENT ? 0 : 102);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_move(void **state)
{
	struct itest_env *e = *state;
	static const char *const to[] = {"nbd/d/0", "nbd/d/1", "nbd/d/2", "nbd/d/3",
					 "nbd/d/4", "nbd/d/5", "nbd/d/6", "nbd/d/7"};
	static const char *many[257];
	uint64_t pool[8], got[8], lease, committed, tags, many_ext[257];
	struct itest_stat st;
	char img[PATH_MAX], *argv[4], *out = NULL, *err = NULL;
	int fd;

	itest_wait_zeroed(e->sock, REGION, 20000, &st);
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	assert_int_equal(itest_raw_alloc(fd, REGION, 8 * EXTENT, false, &lease), 0);
	assert_int_equal(itest_raw_commit(fd, REGION, lease, "pool", true), 0);
	assert_int_equal(tag_extents(fd, "pool", pool, 8), 8);

	/* Three moved: new tags of one extent, the pool smaller, the counts the same. */
	assert_int_equal(do_move(fd, "pool", pool, to, 3), 0);
	assert_int_equal(tag_extents(fd, "pool", got, 8), 5);
	assert_int_equal(tag_extents(fd, "nbd/d/1", got, 8), 1);
	assert_int_equal(got[0], pool[1]);
	assert_int_equal(stat_moves(fd), 1);
	usage_of_root(fd, &committed, &tags);
	assert_int_equal(committed, 8 * EXTENT);
	assert_int_equal(tags, 4);

	/* Refused, nothing changed: an existing to_tag, 257 moves, another uid, the limit. */
	assert_int_equal(do_move(fd, "pool", pool + 3, to, 1), -EEXIST);
	for (size_t k = 0; k < 257; k++) {
		many[k] = to[k % 8];
		many_ext[k] = pool[3];
	}
	assert_int_equal(do_move(fd, "pool", many_ext, many, 257), -EINVAL);
	other_uid_refused(e, pool[3]);
	assert_int_equal(do_move(fd, "pool", pool + 3, to + 3, 4), -EDQUOT); /* 4 + 4 > 7 */
	assert_int_equal(stat_moves(fd), 1);
	assert_int_equal(do_move(fd, "pool", pool + 3, to + 3, 3), 0); /* 7 tags */

	/* kill -9: every move that returned is there after the restart. */
	close(fd);
	itest_daemon_kill(e);
	itest_daemon_start(e);
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	assert_int_equal(tag_extents(fd, "pool", got, 8), 2);
	for (int k = 0; k < 6; k++) {
		assert_int_equal(tag_extents(fd, to[k], got, 8), 1);
		assert_int_equal(got[0], pool[k]);
	}
	usage_of_root(fd, &committed, &tags);
	assert_int_equal(committed, 8 * EXTENT);
	assert_int_equal(tags, MAX_TAGS);

	/* At the limit: emptying the pool into 2 new tags is one more (-EDQUOT); 1 for 1 is not. */
	assert_int_equal(do_move(fd, "pool", pool + 6, to + 6, 2), -EDQUOT);
	assert_int_equal(do_move(fd, "nbd/d/0", pool, to + 7, 1), 0);
	assert_int_equal(tag_extents(fd, "nbd/d/0", got, 8), -ENOENT);
	usage_of_root(fd, &committed, &tags);
	assert_int_equal(tags, MAX_TAGS);
	close(fd);
	itest_daemon_stop(e);

	/* The image the daemon left: clean. */
	itest_path(e, img, sizeof(img), "mv.img");
	argv[0] = UNCONST(itest_ctl_path());
	argv[1] = UNCONST("check");
	argv[2] = img;
	argv[3] = NULL;
	if (itest_run(argv, 60000, &out, &err) != 0)
		fail_msg("pmemzctl check: %s%s", out ? out : "", err ? err : "");
	free(out);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_move, setup, itest_teardown),
	};

	if (getuid() != 0) {
		fprintf(stderr, "SKIP: needs root (another uid's request)\n");
		return ITEST_SKIP;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
