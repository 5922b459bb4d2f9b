/* SPDX-License-Identifier: MIT */
/*
 * Clients and daemons of different releases, from recorded frames
 * (tests/wire/README.md: tests/wire/frames/COMMIT/, recorded by
 * record-baseline.sh from an older commit; no older build needed here).
 * For every recording:
 *
 *  - the older client's requests, replayed against this daemon, get the
 *    answers the older daemon gave (status and kind, the leases' sizes, the
 *    tags listed, what was freed and moved), and HELLO answers version 1,
 *    the only one the libraries of pmemzerod 0.1 accept;
 *  - this library, running the same workload against the older daemon's
 *    recorded replies (no version range, no field added since), sends only
 *    version 1 requests and works; the getters of what the older daemon
 *    does not send return -ENODATA.
 *
 * A replay follows the recording's order: a request is sent when the
 * recording sent it, and each recorded reply is waited for before what
 * came after it.  Leases and extents are named by the ids and indices this
 * daemon gives (taken from its replies to the recorded ALLOCATEs), so a
 * change of allocation order or of the metadata size does not count as
 * incompatible; a different answer does.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake-daemon.h"
#include "harness.h"
#include "libpmemzadmin.h"
#include "libpmemzclient.h"
#include "wire-workload.h"

#define REGION "wire"
#define REGION_SIZE "64M"
#define MAX_FRAMES 4096
#define MAX_MAP 1024

/* ---- the recorded frames ---------------------------------------------- */

struct wframe {
	bool request; /* C: client to daemon; else D: daemon to client */
	bool fd;      /* D+fd: a file descriptor came with it */
	uint8_t *bytes;
	size_t len; /* the whole frame, its length header included */
};

struct wrec {
	char name[256];
	struct wframe v[MAX_FRAMES];
	size_t n;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void frame_parse(struct wrec *w, const char *tag, const char *hex, size_t line)
{
	size_t n = strlen(hex) / 2;
	struct wframe *f;

	if (w->n == MAX_FRAMES)
		fail_msg("%s:%zu: more than %d frames", w->name, line, MAX_FRAMES);
	f = &w->v[w->n++];
	f->request = strcmp(tag, "C") == 0;
	f->fd = strcmp(tag, "D+fd") == 0;
	if (!f->request && !f->fd && strcmp(tag, "D") != 0)
		fail_msg("%s:%zu: unknown direction '%s'", w->name, line, tag);
	f->bytes = malloc(n);
	assert_non_null(f->bytes);
	f->len = n;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			fail_msg("%s:%zu: not hex", w->name, line);
		f->bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	if (n < PMEMZ_FRAME_HDR || pmemz_frame_len(f->bytes) != n - PMEMZ_FRAME_HDR)
		fail_msg("%s:%zu: the frame's length header says %u, it has %zu bytes", w->name,
			 line, n < PMEMZ_FRAME_HDR ? 0 : pmemz_frame_len(f->bytes), n);
}

static struct wrec *rec_load(const char *dir, const char *file)
{
	struct wrec *w = calloc(1, sizeof(*w));
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0, no = 0;
	FILE *fp;

	assert_non_null(w);
	(void)snprintf(w->name, sizeof(w->name), "%s", file);
	(void)snprintf(path, sizeof(path), "%s/%s", dir, file);
	fp = fopen(path, "r");
	if (!fp)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	while (getline(&line, &cap, fp) > 0) {
		char tag[8], *hex;

		no++;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		hex = strchr(line, ' ');
		if (!hex || hex - line >= (ptrdiff_t)sizeof(tag))
			fail_msg("%s:%zu: not 'C|D|D+fd HEX'", file, no);
		memcpy(tag, line, (size_t)(hex - line));
		tag[hex - line] = '\0';
		frame_parse(w, tag, hex + 1, no);
	}
	free(line);
	(void)fclose(fp);
	if (w->n == 0)
		fail_msg("%s holds no frame", path);
	return w;
}

static void rec_free(struct wrec *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].bytes);
	free(w);
}

static Pmemz__Request *frame_request(const struct wrec *w, size_t i)
{
	Pmemz__Request *req = NULL;

	if (pmemz_frame_unpack_request(w->v[i].bytes + PMEMZ_FRAME_HDR,
				       w->v[i].len - PMEMZ_FRAME_HDR, &req) < 0)
		fail_msg("%s: frame %zu is not a request", w->name, i);
	return req;
}

static Pmemz__Response *frame_response(const struct wrec *w, size_t i)
{
	Pmemz__Response *resp = NULL;

	if (pmemz_frame_unpack_response(w->v[i].bytes + PMEMZ_FRAME_HDR,
					w->v[i].len - PMEMZ_FRAME_HDR, &resp) < 0)
		fail_msg("%s: frame %zu is not a response", w->name, i);
	return resp;
}

static int is_recording(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* The recordings, frames/COMMIT/ each, in *dirs (each malloc'ed, like the array). */
static int recordings(char ***dirs)
{
	struct dirent **names;
	int n = scandir(PMEMZ_WIRE_FRAMES_DIR, &names, is_recording, alphasort);

	if (n <= 0) {
		fail_msg("no recording in %s", PMEMZ_WIRE_FRAMES_DIR);
		return 0;
	}
	*dirs = calloc((size_t)n, sizeof(**dirs));
	assert_non_null(*dirs);
	for (int i = 0; i < n; i++) {
		assert_true(asprintf(&(*dirs)[i], "%s/%s", PMEMZ_WIRE_FRAMES_DIR,
				     names[i]->d_name) > 0);
		free(names[i]);
	}
	free(names);
	return n;
}

static void recordings_free(char **dirs, int n)
{
	for (int i = 0; i < n; i++)
		free(dirs[i]);
	free(dirs);
}

static int is_frames(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 7 && strcmp(d->d_name + n - 7, ".frames") == 0;
}

/* ---- the older client's requests against this daemon ---------------- */

/* What the recording's ids and indices are on this daemon. */
struct idmap {
	uint64_t from[MAX_MAP], to[MAX_MAP];
	size_t n;
};

struct replay {
	const struct wrec *w;
	int fd;
	struct idmap leases, extents;
	uint64_t old_data_off, new_data_off, extent_size;
	Pmemz__Response *early[MAX_FRAMES]; /* this daemon's replies not waited for yet */
	size_t n_early;
};

static void map_add(struct idmap *m, uint64_t from, uint64_t to)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->from[i] == from) {
			m->to[i] = to;
			return;
		}
	assert_true(m->n < MAX_MAP);
	m->from[m->n] = from;
	m->to[m->n++] = to;
}

/* The id on this daemon; unmapped ids stay as they are (e.g. one never allocated). */
static uint64_t map_get(const struct idmap *m, uint64_t from)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->from[i] == from)
			return m->to[i];
	return from;
}

/* A byte offset of a recorded FLUSH range, in this daemon's region. */
static uint64_t map_offset(const struct replay *rp, uint64_t off)
{
	uint64_t ext, in;

	if (off < rp->old_data_off || !rp->extent_size)
		return off;
	ext = (off - rp->old_data_off) / rp->extent_size;
	in = (off - rp->old_data_off) % rp->extent_size;
	return rp->new_data_off + map_get(&rp->extents, ext) * rp->extent_size + in;
}

/* *id becomes its name on this daemon; *changed when that is another. */
static void remap(const struct idmap *m, uint64_t *id, bool *changed)
{
	uint64_t to = map_get(m, *id);

	*changed |= to != *id;
	*id = to;
}

/* Rename the recording's leases and extents in req; true when anything changed. */
static bool request_rewrite(const struct replay *rp, Pmemz__Request *req)
{
	bool changed = false;

	switch (req->op_case) {
	case PMEMZ__REQUEST__OP_COMMIT:
		remap(&rp->leases, &req->commit->lease, &changed);
		break;
	case PMEMZ__REQUEST__OP_FREE:
		if (req->free->has_lease)
			remap(&rp->leases, &req->free->lease, &changed);
		break;
	case PMEMZ__REQUEST__OP_RUNS:
		if (req->runs->has_lease)
			remap(&rp->leases, &req->runs->lease, &changed);
		break;
	case PMEMZ__REQUEST__OP_FLUSH:
		for (size_t i = 0; i < req->flush->n_ranges; i++) {
			Pmemz__ByteRange *b = req->flush->ranges[i];
			uint64_t first = map_offset(rp, b->offset);

			if (map_offset(rp, b->offset + b->length - 1) != first + b->length - 1)
				fail_msg("a recorded FLUSH range spans extents this daemon placed apart");
			changed |= first != b->offset;
			b->offset = first;
		}
		break;
	case PMEMZ__REQUEST__OP_MOVE:
		for (size_t i = 0; i < req->move->n_moves; i++)
			remap(&rp->extents, &req->move->moves[i]->extent, &changed);
		break;
	default:
		break;
	}
	return changed;
}

static void replay_send(struct replay *rp, size_t i)
{
	Pmemz__Request *req = frame_request(rp->w, i);
	uint8_t *frame;
	size_t len;
	int r;

	if (req->version != 1)
		fail_msg("%s: frame %zu: the older client sent version %u", rp->w->name, i,
			 req->version);
	if (!request_rewrite(rp, req)) {
		r = itest_raw_write(rp->fd, rp->w->v[i].bytes, rp->w->v[i].len);
	} else {
		assert_int_equal(pmemz_frame_pack_request(req, &frame, &len), 0);
		r = itest_raw_write(rp->fd, frame, len);
		free(frame);
	}
	if (r < 0)
		fail_msg("%s: frame %zu: this daemon closed the connection: %s", rp->w->name, i,
			 strerror(-r));
	pmemz__request__free_unpacked(req, NULL);
}

/* This daemon's reply with id (received now, or earlier and kept). */
static Pmemz__Response *replay_reply(struct replay *rp, uint64_t id)
{
	for (;;) {
		Pmemz__Response *resp;
		int r, fd;

		for (size_t k = 0; k < rp->n_early; k++)
			if (rp->early[k]->id == id) {
				resp = rp->early[k];
				rp->early[k] = rp->early[--rp->n_early];
				return resp;
			}
		r = itest_raw_recv(rp->fd, ITEST_RPC_TIMEOUT_MS, &resp, &fd);
		if (r < 0)
			fail_msg("%s: waiting for the reply to request %llu: %s", rp->w->name,
				 (unsigned long long)id, strerror(-r));
		if (fd >= 0)
			(void)close(fd);
		assert_true(rp->n_early < MAX_FRAMES);
		rp->early[rp->n_early++] = resp;
	}
}

static uint64_t runs_extents(Pmemz__Run **runs, size_t n)
{
	uint64_t e = 0;

	for (size_t i = 0; i < n; i++)
		e += runs[i]->count;
	return e;
}

/* An ALLOCATE answered both times: the same size; learn its lease and extents. */
static void learn_allocate(struct replay *rp, const Pmemz__AllocateResp *was,
			   const Pmemz__AllocateResp *now)
{
	size_t i = 0, j = 0;
	uint64_t a = 0, b = 0;

	if (runs_extents(was->runs, was->n_runs) != runs_extents(now->runs, now->n_runs))
		fail_msg("%s: ALLOCATE gave %llu extents, the older daemon %llu", rp->w->name,
			 (unsigned long long)runs_extents(now->runs, now->n_runs),
			 (unsigned long long)runs_extents(was->runs, was->n_runs));
	map_add(&rp->leases, was->lease, now->lease);
	/* the k-th extent of the recorded lease is the k-th of this one */
	while (i < was->n_runs && j < now->n_runs) {
		map_add(&rp->extents, was->runs[i]->first + a, now->runs[j]->first + b);
		if (++a == was->runs[i]->count)
			i++, a = 0;
		if (++b == now->runs[j]->count)
			j++, b = 0;
	}
}

/* The same tag names, in the same order. */
static void same_tags(const struct replay *rp, const Pmemz__ListResp *was,
		      const Pmemz__ListResp *now)
{
	if (was->n_tags != now->n_tags)
		fail_msg("%s: LIST gave %zu tags, the older daemon %zu", rp->w->name, now->n_tags,
			 was->n_tags);
	for (size_t i = 0; i < was->n_tags; i++)
		if (strcmp(was->tags[i]->name, now->tags[i]->name) != 0)
			fail_msg("%s: LIST gave tag '%s', the older daemon '%s'", rp->w->name,
				 now->tags[i]->name, was->tags[i]->name);
}

/* This daemon's answer against the older daemon's. */
static void replay_compare(struct replay *rp, const Pmemz__Response *was, const Pmemz__Response *now)
{
	if (now->status != was->status || now->op_case != was->op_case)
		fail_msg("%s: request %llu: status %d (%s), kind %d; the older daemon: status %d "
			 "(%s), kind %d",
			 rp->w->name, (unsigned long long)was->id, now->status,
			 now->message ? now->message : "", now->op_case, was->status,
			 was->message ? was->message : "", was->op_case);
	if (was->status != 0)
		return;
	switch (was->op_case) {
	case PMEMZ__RESPONSE__OP_HELLO:
		/* what the libraries of pmemzerod 0.1 check: they refuse anything but 1 */
		assert_int_equal(now->hello->version, 1);
		break;
	case PMEMZ__RESPONSE__OP_OPEN_REGION:
		assert_int_equal(now->open_region->info->extent_size,
				 was->open_region->info->extent_size);
		assert_int_equal(now->open_region->info->extent_count,
				 was->open_region->info->extent_count);
		rp->old_data_off = was->open_region->info->data_offset;
		rp->new_data_off = now->open_region->info->data_offset;
		rp->extent_size = was->open_region->info->extent_size;
		break;
	case PMEMZ__RESPONSE__OP_ALLOCATE:
		learn_allocate(rp, was->allocate, now->allocate);
		break;
	case PMEMZ__RESPONSE__OP_FREE:
		assert_int_equal(now->free->extents, was->free->extents);
		break;
	case PMEMZ__RESPONSE__OP_MOVE:
		assert_int_equal(now->move->moved, was->move->moved);
		break;
	case PMEMZ__RESPONSE__OP_LIST:
		same_tags(rp, was->list, now->list);
		break;
	default:
		break;
	}
}

/* One recorded connection, replayed on a connection of its own; returns the replies compared. */
static size_t replay_connection(const char *sock, const struct wrec *w)
{
	struct replay *rp = calloc(1, sizeof(*rp));
	size_t replies = 0;

	assert_non_null(rp);
	rp->w = w;
	rp->fd = itest_raw_connect(sock);
	assert_true(rp->fd >= 0);
	for (size_t i = 0; i < w->n; i++) {
		Pmemz__Response *was, *now;

		if (w->v[i].request) {
			replay_send(rp, i);
			continue;
		}
		was = frame_response(w, i);
		now = replay_reply(rp, was->id);
		replay_compare(rp, was, now);
		pmemz__response__free_unpacked(was, NULL);
		pmemz__response__free_unpacked(now, NULL);
		replies++;
	}
	if (rp->n_early)
		fail_msg("%s: this daemon sent %zu replies the older daemon did not", w->name,
			 rp->n_early);
	(void)close(rp->fd);
	free(rp);
	return replies;
}

/* As the recording's daemon: one region, zeroed; the caller's group administers. */
static void start_daemon(struct itest_env *e)
{
	struct group *g = getgrgid(getgid());

	if (!g)
		fail_msg("the group %u has no name (admin_group needs one)", (unsigned)getgid());
	itest_write_conf(e, "[daemon]\nadmin_group = %s\n", g->gr_name);
	itest_cli_region(e, REGION, REGION_SIZE);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 60000, &(struct itest_stat){0});
}

/* One recording's connections, in the order they were made, on one fresh daemon. */
static void replay_recording(const char *dir)
{
	struct itest_env e;
	struct dirent **names;
	size_t replies = 0;
	int n;

	itest_env_init(&e, "wire-compat");
	start_daemon(&e);
	n = scandir(dir, &names, is_frames, alphasort);
	if (n <= 0)
		fail_msg("no .frames in %s", dir);
	for (int i = 0; i < n; i++) {
		struct wrec *w = rec_load(dir, names[i]->d_name);
		size_t k = replay_connection(e.sock, w);

		(void)fprintf(stderr, "%s/%s: %zu replies as the older daemon's\n",
			      strrchr(dir, '/') + 1, w->name, k);
		replies += k;
		rec_free(w);
		free(names[i]);
	}
	free(names);
	assert_true(replies > 0);
	itest_daemon_stop(&e);
	itest_env_cleanup(&e);
}

static void test_older_requests(void **state)
{
	char **dirs;
	int n = recordings(&dirs);

	for (int i = 0; i < n; i++)
		replay_recording(dirs[i]);
	recordings_free(dirs, n);
}

/* ---- this library against the older daemon's replies ---------------- */

/*
 * A daemon that answers each request with the older daemon's recorded
 * reply to the same kind of request, in the recorded order of that kind,
 * and hangs up on a request the older daemon would have dropped (any
 * version but 1) or that the recording has no reply for.
 */
struct fake {
	const struct wrec *w;
	struct fake_listener l;
	pthread_t thread;
	char why[256]; /* the first thing this library did that the older daemon would refuse */
	unsigned connections, requests;
};

/* The recorded reply to the n-th (from 0) request of kind op; -1 when there is none. */
static long recorded_reply(const struct wrec *w, int op, unsigned n)
{
	for (size_t i = 0; i < w->n; i++) {
		Pmemz__Request *req;
		bool hit;
		uint64_t id;

		if (!w->v[i].request)
			continue;
		req = frame_request(w, i);
		hit = (int)req->op_case == op && n-- == 0;
		id = req->id;
		pmemz__request__free_unpacked(req, NULL);
		if (!hit)
			continue;
		for (size_t j = i + 1; j < w->n; j++) {
			Pmemz__Response *resp;
			bool mine;

			if (w->v[j].request)
				continue;
			resp = frame_response(w, j);
			mine = resp->id == id;
			pmemz__response__free_unpacked(resp, NULL);
			if (mine)
				return (long)j;
		}
		return -1;
	}
	return -1;
}

/* The region's memory, as the daemon passes it: a memfd of the recorded size. */
static int fake_region_fd(const Pmemz__Response *resp)
{
	int fd = memfd_create("wire-region", MFD_CLOEXEC);

	if (fd >= 0 && ftruncate(fd, (off_t)resp->open_region->info->size) < 0) {
		(void)close(fd);
		return -1;
	}
	return fd;
}

/* Send the recorded reply frame j with id, and a region fd when it came with one. */
static int fake_send(const struct wrec *w, size_t j, uint64_t id, int cfd)
{
	Pmemz__Response *resp = frame_response(w, j);
	int fd = -1, r = -1;

	resp->id = id;
	if (!w->v[j].fd || (fd = fake_region_fd(resp)) >= 0)
		r = fake_send_response(cfd, resp, fd);
	if (fd >= 0)
		(void)close(fd);
	pmemz__response__free_unpacked(resp, NULL);
	return r;
}

/* One connection: the older daemon's replies, kind by kind. */
static void fake_serve(struct fake *f, int cfd)
{
	unsigned seen[64] = {0};
	Pmemz__Request *req;

	while ((req = fake_read_request(cfd))) {
		int op = (int)req->op_case;
		long j = op >= 0 && op < 64 ? recorded_reply(f->w, op, seen[op]++) : -1;

		f->requests++;
		if (req->version != 1 && !f->why[0])
			(void)snprintf(f->why, sizeof(f->why),
				       "request %llu (kind %d) has version %u: the older daemon "
				       "drops the connection",
				       (unsigned long long)req->id, op, req->version);
		else if (j < 0 && !f->why[0])
			(void)snprintf(f->why, sizeof(f->why),
				       "request %llu (kind %d): the older client sent no such "
				       "request at this point",
				       (unsigned long long)req->id, op);
		if (f->why[0] || fake_send(f->w, (size_t)j, req->id, cfd) < 0) {
			pmemz__request__free_unpacked(req, NULL);
			break;
		}
		pmemz__request__free_unpacked(req, NULL);
	}
	(void)close(cfd);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int cfd;

	while ((cfd = accept4(f->l.fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		f->connections++;
		fake_serve(f, cfd);
	}
	return NULL;
}

static struct fake *fake_start(const struct wrec *w)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->w = w;
	assert_int_equal(fake_listen(&f->l), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
	return f;
}

static void fake_stop(struct fake *f)
{
	(void)shutdown(f->l.fd, SHUT_RDWR);
	pthread_join(f->thread, NULL);
	fake_unlisten(&f->l);
	free(f);
}

/* The workload's recording: the connection the older library made. */
static struct wrec *workload_rec(const char *dir)
{
	struct dirent **names;
	struct wrec *w = NULL;
	int n = scandir(dir, &names, is_frames, alphasort);

	for (int i = 0; i < n; i++) {
		if (!w && strstr(names[i]->d_name, "-workload-"))
			w = rec_load(dir, names[i]->d_name);
		free(names[i]);
	}
	free(names);
	if (!w)
		fail_msg("no *-workload-*.frames in %s", dir);
	return w;
}

static void new_client_older_replies(const char *dir)
{
	struct wrec *w = workload_rec(dir);
	struct fake *f = fake_start(w);
	long j = recorded_reply(w, PMEMZ__REQUEST__OP_HELLO, 0);
	Pmemz__Response *hello;
	struct pmemz_client *c;
	unsigned min = 0, max = 0;
	char why[sizeof(f->why)];
	int r;

	/*
	 * The connection as the older daemon's HELLO has it: its version and
	 * protocol; a range that it does not state (pmemzerod 0.1) reads as
	 * not sent.
	 */
	assert_true(j >= 0);
	hello = frame_response(w, (size_t)j);
	CHECK_RC(pmemz_client_new(f->l.path, &c), 0);
	assert_int_equal(pmemz_client_protocol(c), hello->hello->version);
	assert_string_equal(pmemz_client_daemon_version(c), hello->hello->daemon_version);
	if (!hello->hello->has_min_version) {
		assert_int_equal(pmemz_client_protocol_range(c, &min, &max), -ENODATA);
	} else {
		CHECK_RC(pmemz_client_protocol_range(c, &min, &max), 0);
		assert_int_equal(min, hello->hello->min_version);
		assert_int_equal(max, hello->hello->max_version);
	}
	pmemz_client_free(c);
	pmemz__response__free_unpacked(hello, NULL);

	r = wire_workload(f->l.path, REGION);
	(void)snprintf(why, sizeof(why), "%s", f->why);
	fake_stop(f);
	rec_free(w);
	if (why[0])
		fail_msg("%s: %s", dir, why);
	assert_int_equal(r, 0);
}

static void test_new_client_older_replies(void **state)
{
	char **dirs;
	int n = recordings(&dirs);

	for (int i = 0; i < n; i++)
		new_client_older_replies(dirs[i]);
	recordings_free(dirs, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_older_requests),
	    cmocka_unit_test(test_new_client_older_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
