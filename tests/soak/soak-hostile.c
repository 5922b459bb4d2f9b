/* SPDX-License-Identifier: MIT */
/*
 * soak-hostile: the attack tests' hostile tenants (tests/integration/
 * test-attack.c, through attack.h and raw.c), run in a loop for the soak
 * while well-behaved tenants work.  Nothing here is a pass/fail check: the
 * daemon is killed under these connections now and then, and the soak
 * judges the daemon by what the well-behaved clients see and by its
 * memory, descriptors and latency.  Counts go to stdout at the end.
 *
 *   --mode pipeline   ALLOCATE+MAP pairs pushed without reading the replies
 *                     until the daemon stops reading, held, then dropped
 *   --mode trickle    eight connections each sending a frame a byte at a
 *                     time, slower than the idle timeout allows
 *   --mode refused    a flood of connections past max_connections_per_uid
 *                     (-EUSERS frames), held a moment, closed
 *   --mode flush      a lease and FLUSH frames of 256 ranges of it pushed
 *                     without reading; a stranger's FLUSH of the whole
 *                     region (-E2BIG / -EPERM)
 *   --mode garbage    random bytes, over-long frame headers, valid lengths
 *                     with garbage inside
 *   --mode mix        all of the above in turn, in the order of --seed
 *   --mode truncate   once: OPEN_REGION --region, ftruncate the descriptor
 *                     it hands out, then ALLOCATE there must fail with -EIO
 *                     (exit 0), else exit 1 (docs/SECURITY.md)
 *
 * Usage: soak-hostile --socket PATH --region NAME --mode MODE
 *          [--seconds N] [--seed S]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "attack.h"
#include "harness.h"

#define MAX_CONNS 256
#define CALL_TIMEOUT_MS 5000

static struct {
	const char *sock, *region, *mode;
	unsigned seconds;
	uint64_t seed;
} opt = {.seconds = 60, .seed = 1};

static struct {
	uint64_t rounds, pipelined_frames, pipeline_stalls, trickle_closed, trickle_answered,
	    conns_opened, conns_refused, conns_refused_frame, flush_frames, flush_e2big,
	    flush_eperm, garbage_sent, garbage_closed, conn_errors;
} tot;

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Sleep up to ms, in slices, returning early on a stop request. */
static void nap(unsigned ms)
{
	while (ms && !stop_requested) {
		unsigned s = ms < 100 ? ms : 100;

		itest_msleep(s);
		ms -= s;
	}
}

/* Send req and wait for its reply (others skipped): the status, or a transport -errno. */
static int call(int fd, Pmemz__Request *req, Pmemz__Response **out, int *fd_out)
{
	static uint64_t id = 1u << 20;
	uint64_t deadline = itest_now_ms() + CALL_TIMEOUT_MS;
	int r;

	req->version = PMEMZ_PROTO_VERSION;
	req->id = ++id;
	r = itest_raw_send(fd, req);
	if (r < 0)
		return r;
	for (;;) {
		Pmemz__Response *resp = NULL;
		int64_t left = (int64_t)deadline - (int64_t)itest_now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		r = itest_raw_recv(fd, (int)left, &resp, fd_out);
		if (r < 0)
			return r;
		if (resp->id != req->id) {
			itest_resp_free(resp);
			continue;
		}
		r = resp->status;
		if (out)
			*out = resp;
		else
			itest_resp_free(resp);
		return r;
	}
}

/* OPEN_REGION: the region's geometry (and its descriptor when fd_out). */
static int open_region(int fd, const char *region, uint64_t *data_off, uint64_t *ext_size,
		       uint64_t *ext_count, int *fd_out)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__OpenRegionReq o = PMEMZ__OPEN_REGION_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int r;

	o.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
	req.open_region = &o;
	r = call(fd, &req, &resp, fd_out);
	if (r == 0 && resp->op_case == PMEMZ__RESPONSE__OP_OPEN_REGION && resp->open_region->info) {
		*data_off = resp->open_region->info->data_offset;
		*ext_size = resp->open_region->info->extent_size;
		*ext_count = resp->open_region->info->extent_count;
	} else if (r == 0) {
		r = -EBADMSG;
	}
	itest_resp_free(resp);
	return r;
}

/* ALLOCATE; the byte offset of the lease's first run. */
static int allocate(int fd, const char *region, uint64_t bytes, uint64_t data_off,
		    uint64_t ext_size, uint64_t *off, uint64_t *run_bytes)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int r;

	a.region = UNCONST(region);
	a.bytes = bytes;
	a.has_nowait = true;
	a.nowait = true;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &a;
	r = call(fd, &req, &resp, NULL);
	if (r == 0 && resp->op_case == PMEMZ__RESPONSE__OP_ALLOCATE && resp->allocate->n_runs) {
		*off = data_off + resp->allocate->runs[0]->first * ext_size;
		*run_bytes = resp->allocate->runs[0]->count * ext_size;
	} else if (r == 0) {
		r = -EBADMSG;
	}
	itest_resp_free(resp);
	return r;
}

static void count_conn_error(int r)
{
	if (r < 0)
		tot.conn_errors++;
}

/* ---- the attacks ---- */

static void attack_pipeline(void)
{
	struct attack_stream s = {0};
	ssize_t sent;
	int fd = itest_raw_connect(opt.sock);

	if (fd < 0) {
		count_conn_error(fd);
		return;
	}
	for (unsigned i = 0; i < 20000; i++)
		if (attack_stream_add_alloc_map(&s, opt.region, 1 + 2 * (uint64_t)i) < 0)
			break;
	sent = attack_push_until_stalled(fd, &s, 0, 1000);
	if (sent < 0) {
		count_conn_error((int)sent);
	} else {
		tot.pipelined_frames += s.n_frames;
		tot.pipeline_stalls += (size_t)sent < s.len;
	}
	nap(2000); /* holding it all, reading nothing */
	close(fd);
	attack_stream_free(&s);
}

static void attack_trickle(void)
{
	enum { N = 8 };
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__NoopReq n = PMEMZ__NOOP_REQ__INIT;
	struct attack_stream s = {0};
	int fds[N];
	size_t pos = 0;

	req.op_case = PMEMZ__REQUEST__OP_NOOP;
	req.noop = &n;
	if (attack_stream_add(&s, &req, 7) < 0)
		return;
	for (int i = 0; i < N; i++)
		fds[i] = itest_raw_connect(opt.sock);
	/* One byte per connection every 700 ms: a whole frame takes longer than idle_timeout. */
	while (pos < s.len && !stop_requested) {
		bool any = false;

		for (int i = 0; i < N; i++) {
			if (fds[i] < 0)
				continue;
			if (itest_raw_write(fds[i], s.buf + pos, 1) < 0) {
				tot.trickle_closed++;
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
			any = true;
		}
		if (!any)
			break;
		pos++;
		nap(700);
	}
	for (int i = 0; i < N; i++) {
		Pmemz__Response *resp = NULL;

		if (fds[i] < 0)
			continue;
		if (itest_raw_recv(fds[i], 1000, &resp, NULL) == 0)
			tot.trickle_answered++;
		else
			tot.trickle_closed++;
		itest_resp_free(resp);
		close(fds[i]);
	}
	attack_stream_free(&s);
}

static void attack_refused(void)
{
	static int fds[MAX_CONNS];

	for (int i = 0; i < MAX_CONNS; i++) {
		fds[i] = itest_raw_connect(opt.sock);
		tot.conns_opened += fds[i] >= 0;
	}
	nap(1000);
	for (int i = 0; i < MAX_CONNS; i++) {
		struct pollfd p = {.fd = fds[i], .events = POLLIN};
		Pmemz__Response *resp = NULL;

		if (fds[i] < 0)
			continue;
		if (poll(&p, 1, 0) == 1) {
			tot.conns_refused++;
			if (itest_raw_recv(fds[i], 500, &resp, NULL) == 0 && resp->status == -EUSERS)
				tot.conns_refused_frame++;
			itest_resp_free(resp);
		}
		close(fds[i]);
	}
}

static void attack_flush(void)
{
	enum { FRAMES = 40, RANGES = 256 };
	static uint64_t ranges[2 * 3000];
	uint64_t data_off = 0, ext_size = 0, ext_count = 0, off = 0, len = 0;
	struct attack_stream s = {0};
	struct attack_flush q;
	int fd, r;

	fd = itest_raw_connect(opt.sock);
	if (fd < 0) {
		count_conn_error(fd);
		return;
	}
	r = open_region(fd, opt.region, &data_off, &ext_size, &ext_count, NULL);
	if (r < 0)
		goto out;
	/* A stranger's: the whole data area, 3000 times, then 256 times. */
	for (size_t i = 0; i < 3000; i++) {
		ranges[2 * i] = data_off;
		ranges[2 * i + 1] = ext_count * ext_size;
	}
	for (size_t n = 3000;; n = RANGES) {
		if (attack_flush_init(&q, opt.region, ranges, n) < 0)
			goto out;
		r = call(fd, &q.req, NULL, NULL);
		attack_flush_done(&q);
		tot.flush_e2big += r == -E2BIG;
		tot.flush_eperm += r == -EPERM;
		if (n == RANGES || (r != -E2BIG && r != -EPERM))
			break;
	}
	/* Its own: a lease of up to 8 extents, flushed over and over. */
	r = allocate(fd, opt.region, 8 * ext_size, data_off, ext_size, &off, &len);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < RANGES; i++) {
		ranges[2 * i] = off + (i % 16) * 4096;
		ranges[2 * i + 1] = len - (i % 16) * 4096;
	}
	for (unsigned f = 0; f < FRAMES; f++)
		if (attack_stream_add_flush(&s, opt.region, ranges, RANGES, 1 + f) < 0)
			break;
	tot.flush_frames += s.n_frames;
	(void)attack_push_until_stalled(fd, &s, 0, 300);
	nap(1000);
out:
	count_conn_error(r);
	close(fd); /* the daemon drops the rest of the work */
	attack_stream_free(&s);
}

static void attack_garbage(uint64_t *rng)
{
	for (int i = 0; i < 20 && !stop_requested; i++) {
		uint8_t buf[512];
		uint32_t n = 8 + (uint32_t)(splitmix(rng) % (sizeof(buf) - 8));
		int fd = itest_raw_connect(opt.sock), nresp = 0, first = 0;

		if (fd < 0) {
			count_conn_error(fd);
			return;
		}
		for (uint32_t k = 0; k < n; k++)
			buf[k] = (uint8_t)splitmix(rng);
		switch (i % 3) {
		case 0: /* a length over the cap */
			buf[0] = 0xff, buf[1] = 0xff, buf[2] = 0xff, buf[3] = 0x7f;
			break;
		case 1: /* a fitting length, garbage inside */
			buf[0] = (uint8_t)(n - 4), buf[1] = buf[2] = buf[3] = 0;
			break;
		default: /* whatever came out */
			break;
		}
		if (itest_raw_write(fd, buf, n) == 0)
			tot.garbage_sent++;
		if (itest_raw_wait_closed(fd, 3000, &nresp, &first))
			tot.garbage_closed++;
		close(fd);
	}
}

/* ---- a tenant truncates its region ---- */

static int truncate_region(void)
{
	uint64_t data_off, ext_size, ext_count, off, len;
	int fd, rfd = -1, r = -1;

	fd = itest_raw_connect(opt.sock);
	if (fd < 0) {
		fprintf(stderr, "soak-hostile: connect: %s\n", strerror(-fd));
		return 1;
	}
	r = open_region(fd, opt.region, &data_off, &ext_size, &ext_count, &rfd);
	if (r < 0 || rfd < 0) {
		fprintf(stderr, "soak-hostile: OPEN_REGION %s: %s\n", opt.region, strerror(-r));
		return 1;
	}
	if (ftruncate(rfd, 4096) < 0) {
		fprintf(stderr, "soak-hostile: ftruncate: %s\n", strerror(errno));
		return 1;
	}
	close(rfd);
	/* The next store of the daemon there faults; from then on -EIO. */
	for (uint64_t deadline = itest_now_ms() + 10000; itest_now_ms() < deadline;) {
		r = allocate(fd, opt.region, ext_size, data_off, ext_size, &off, &len);
		if (r == -EIO)
			break;
		itest_msleep(100);
	}
	close(fd);
	printf("truncated region %s to 4096 bytes: ALLOCATE there then: %d (%s)\n", opt.region,
	       r, strerror(-r));
	return r == -EIO ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"socket", required_argument, NULL, 's'},
					   {"region", required_argument, NULL, 'r'},
					   {"mode", required_argument, NULL, 'm'},
					   {"seconds", required_argument, NULL, 'T'},
					   {"seed", required_argument, NULL, 'S'},
					   {NULL, 0, NULL, 0}};
	struct sigaction sa = {.sa_handler = on_term};
	uint64_t end, rng;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			opt.sock = optarg;
			break;
		case 'r':
			opt.region = optarg;
			break;
		case 'm':
			opt.mode = optarg;
			break;
		case 'T':
			opt.seconds = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		default:
			return 2;
		}
	}
	if (!opt.sock || !opt.region || !opt.mode || optind != argc) {
		fprintf(stderr, "usage: soak-hostile --socket PATH --region NAME --mode "
				"pipeline|trickle|refused|flush|garbage|mix|truncate [--seconds N] "
				"[--seed S]\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(opt.mode, "truncate") == 0)
		return truncate_region();

	rng = opt.seed;
	end = itest_now_ms() + 1000ull * opt.seconds;
	while (!stop_requested && itest_now_ms() < end) {
		const char *m = opt.mode;

		if (strcmp(m, "mix") == 0) {
			static const char *const all[] = {"pipeline", "trickle", "refused", "flush",
							  "garbage"};

			m = all[splitmix(&rng) % 5];
		}
		if (strcmp(m, "pipeline") == 0)
			attack_pipeline();
		else if (strcmp(m, "trickle") == 0)
			attack_trickle();
		else if (strcmp(m, "refused") == 0)
			attack_refused();
		else if (strcmp(m, "flush") == 0)
			attack_flush();
		else if (strcmp(m, "garbage") == 0)
			attack_garbage(&rng);
		else {
			fprintf(stderr, "soak-hostile: unknown mode '%s'\n", m);
			return 2;
		}
		tot.rounds++;
		nap(200 + (unsigned)(splitmix(&rng) % 800));
	}
	printf("A mode=%s rounds=%" PRIu64 " pipelined_frames=%" PRIu64 " pipeline_stalls=%" PRIu64
	       " trickle_closed=%" PRIu64 " trickle_answered=%" PRIu64 " conns_opened=%" PRIu64
	       " conns_refused=%" PRIu64 " conns_refused_frame=%" PRIu64 " flush_frames=%" PRIu64
	       " flush_e2big=%" PRIu64 " flush_eperm=%" PRIu64 " garbage_sent=%" PRIu64
	       " garbage_closed=%" PRIu64 " conn_errors=%" PRIu64 "\n",
	       opt.mode, tot.rounds, tot.pipelined_frames, tot.pipeline_stalls, tot.trickle_closed,
	       tot.trickle_answered, tot.conns_opened, tot.conns_refused, tot.conns_refused_frame,
	       tot.flush_frames, tot.flush_e2big, tot.flush_eperm, tot.garbage_sent,
	       tot.garbage_closed, tot.conn_errors);
	return 0;
}
