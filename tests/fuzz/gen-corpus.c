/* SPDX-License-Identifier: MIT */
/*
 * The seed corpora of the fuzzers (run by gen-corpus.sh, whose outputs are
 * committed under tests/fuzz/corpus/):
 *
 *   frame/    one frame of every request kind, and all of them pipelined;
 *             each kind with a NUL inside a name (nul-*)
 *   request/  fuzz-request programs: every request kind per identity, and
 *             allocate / commit / list / free flows; each kind sent with a
 *             NUL after a name that exists (nul-*)
 *   media/    metadata prefixes (FUZZ_MEDIA_META bytes) of FUZZ_MEDIA_SIZE
 *             regions: formatted, states and tag slots set as the media
 *             fixture (tests/unit/media-fixture.c) sets them, damaged
 *             headers, a newer build's feature bits (features-*), and the
 *             power-fail simulator's (tests/crash/pmsim.c) images at every
 *             drain of a commit-and-free workload; v1-* are some of them
 *             with layout version 1 headers, as earlier builds wrote them
 *   check/    flags byte + whole images: the fixture's, some power-fail ones
 *
 * Every file is named seed-*; regression inputs (regress-*) are left alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz-media.h"
#include "fuzz-request.h"
#include "fuzz.h"
#include "media.h"
#include "log.h"
#include "pmsim.h"
#include "region.h"
#include "util.h"

static const char *outdir;
static unsigned n_written;

static void die(const char *fmt, ...) _printf_(1, 2);
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "gen-corpus: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void put(const char *corpus, const char *name, const void *buf, size_t len)
{
	char path[512];
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s/%s", outdir, corpus);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
	(void)snprintf(path, sizeof(path), "%s/%s/seed-%s", outdir, corpus, name);
	f = fopen(path, "we");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
		die("cannot write %s", path);
	n_written++;
}

/* ---- frames and request programs ---- */

struct prog {
	uint8_t b[4096];
	size_t n;
};

static void emit(struct prog *p, unsigned count, ...)
{
	va_list ap;

	va_start(ap, count);
	for (unsigned i = 0; i < count; i++) {
		if (p->n == sizeof(p->b))
			die("program too long");
		p->b[p->n++] = (uint8_t)va_arg(ap, int);
	}
	va_end(ap);
}

static void connect_(struct prog *p, unsigned slot, unsigned who)
{
	emit(p, 3, FUZZ_REQ_OP_CONNECT, slot, who);
}

static void req(struct prog *p, unsigned slot, unsigned kind, unsigned region, unsigned num,
		unsigned flags, unsigned tag)
{
	emit(p, 7, FUZZ_REQ_OP_REQUEST, slot, kind, region, num, flags, tag);
}

static size_t frame_of(const struct fuzz_req_args *a, uint8_t *out, size_t cap)
{
	Pmemz__Request scratch;
	size_t len = fuzz_req_build(a, &scratch, out + PMEMZ_FRAME_HDR, cap - PMEMZ_FRAME_HDR);

	out[0] = (uint8_t)len;
	out[1] = (uint8_t)(len >> 8);
	out[2] = (uint8_t)(len >> 16);
	out[3] = (uint8_t)(len >> 24);
	return PMEMZ_FRAME_HDR + len;
}

static const char *const kinds[FUZZ_REQ_N_KINDS] = {
    "hello", "open-region", "allocate", "commit", "free",  "flush", "list", "stat",
    "noop",  "map",	    "zeroer",	"claim",  "move", "runs",  "usage"};

/* The flags that put a NUL into kind k's other names (and use them all). */
static unsigned nul_name_flags(unsigned k)
{
	if (k == FUZZ_REQ_LIST)
		return FUZZ_REQ_F_NUL_NAME | FUZZ_REQ_F_FLUSH; /* tag and prefix */
	return FUZZ_REQ_F_NUL_NAME | FUZZ_REQ_F_BY_TAG;	       /* FREE, RUNS: by tag */
}

/* Every kind with a NUL in its region (HELLO: client) name, then in its other names. */
static void gen_nul_frames(void)
{
	static uint8_t one[FUZZ_REQ_BUF];

	for (unsigned k = 0; k < FUZZ_REQ_N_KINDS; k++)
		for (unsigned v = 0; v < 2; v++) {
			struct fuzz_req_args a = {
			    .kind = (uint8_t)k,
			    .num = 3,
			    .flags = (uint8_t)(v ? nul_name_flags(k) : FUZZ_REQ_F_NUL_REGION),
			    .tag = 1,
			    .lease = 1};
			Pmemz__Request scratch;
			size_t len = fuzz_req_build(&a, &scratch, one + PMEMZ_FRAME_HDR,
						    sizeof(one) - PMEMZ_FRAME_HDR);
			char name[64];

			if (!(scratch.id & FUZZ_REQ_ID_NUL))
				continue; /* no such name in this kind */
			(void)frame_of(&a, one, sizeof(one));
			(void)snprintf(name, sizeof(name), "nul-%s-%s", v ? "name" : "region",
				       kinds[k]);
			put("frame", name, one, PMEMZ_FRAME_HDR + len);
		}
}

static void gen_frames(void)
{
	static uint8_t all[FUZZ_REQ_N_KINDS * FUZZ_REQ_BUF], one[FUZZ_REQ_BUF];
	size_t n_all = 0;

	for (unsigned k = 0; k < FUZZ_REQ_N_KINDS; k++) {
		struct fuzz_req_args a = {.kind = (uint8_t)k, .num = 8, .flags = FUZZ_REQ_F_NOWAIT,
					  .lease = 1};
		size_t len = frame_of(&a, one, sizeof(one));
		char name[64];

		(void)snprintf(name, sizeof(name), "%s", kinds[k]);
		put("frame", name, one, len);
		memcpy(all + n_all, one, len);
		n_all += len;
	}
	put("frame", "pipelined", all, n_all);
	gen_nul_frames();
}

/*
 * A tenant (uid 1000) with a tag "t1", a second lease and a claim on "t0"
 * sends kind k with a NUL after a name that exists ("a", "t1"...): refused
 * (-EINVAL), nothing committed, freed, claimed or moved; then it lists.
 */
static void gen_nul_requests(void)
{
	for (unsigned k = 0; k < FUZZ_REQ_N_KINDS; k++) {
		struct prog p;
		char name[64];

		if (k == FUZZ_REQ_NOOP)
			continue; /* no string */
		p.n = 0;
		connect_(&p, 0, 1);
		emit(&p, 3, FUZZ_REQ_OP_ZERO, 0, 12);
		req(&p, 0, FUZZ_REQ_ALLOCATE, 0, 8, FUZZ_REQ_F_NOWAIT, 0);
		req(&p, 0, FUZZ_REQ_COMMIT, 0, 0, FUZZ_REQ_F_SEEN_LEASE, 1);
		req(&p, 0, FUZZ_REQ_ALLOCATE, 0, 4, FUZZ_REQ_F_NOWAIT, 0);
		req(&p, 0, FUZZ_REQ_CLAIM, 0, 0, 0, 0);
		/* num 1: the second lease (COMMIT, RUNS); 2 moves (MOVE) */
		req(&p, 0, k, 0, 1 | 2 << 3, FUZZ_REQ_F_NUL_REGION | FUZZ_REQ_F_SEEN_LEASE, 1);
		req(&p, 0, k, 0, 1 | 2 << 3, nul_name_flags(k) | FUZZ_REQ_F_SEEN_LEASE, 1);
		req(&p, 0, FUZZ_REQ_LIST, 0, 0, FUZZ_REQ_F_NO_REGION, 0);
		(void)snprintf(name, sizeof(name), "nul-%s", kinds[k]);
		put("request", name, p.b, p.n);
	}
}

/* MOVE: the disk's sync point, and what a hostile tenant sends instead. */
static void gen_moves(void)
{
	struct prog p;

	/* Valid: a pool of 8 extents (tag "t1"), 3 moved out, then the other 5 (pool removed). */
	p.n = 0;
	connect_(&p, 0, 1);
	emit(&p, 3, FUZZ_REQ_OP_ZERO, 0, 12);
	req(&p, 0, FUZZ_REQ_ALLOCATE, 0, 32, FUZZ_REQ_F_NOWAIT, 0);
	req(&p, 0, FUZZ_REQ_COMMIT, 0, 0, FUZZ_REQ_F_SEEN_LEASE, 1);
	req(&p, 0, FUZZ_REQ_MOVE, 0, (0 << 3) | 3, 0, 1);
	req(&p, 0, FUZZ_REQ_LIST, 0, 0, FUZZ_REQ_F_NO_REGION, 0);
	req(&p, 0, FUZZ_REQ_MOVE, 0, (3 << 3) | 5, 0, 1);
	req(&p, 0, FUZZ_REQ_STAT, 0, 0, 0, 0);
	req(&p, 0, FUZZ_REQ_FREE, 0, 0, FUZZ_REQ_F_BY_TAG, 1);
	put("request", "move", p.b, p.n);

	/*
	 * Hostile: 257 moves, a repeated to_tag, an extent named twice, to_tags
	 * that exist, extents out of range, no moves, and another uid moving
	 * uid 1000's tag; each refused with nothing changed.
	 */
	p.n = 0;
	connect_(&p, 0, 1);
	connect_(&p, 1, 2);
	emit(&p, 3, FUZZ_REQ_OP_ZERO, 0, 12);
	req(&p, 0, FUZZ_REQ_ALLOCATE, 0, 32, FUZZ_REQ_F_NOWAIT, 0);
	req(&p, 0, FUZZ_REQ_COMMIT, 0, 0, FUZZ_REQ_F_SEEN_LEASE, 1);
	req(&p, 0, FUZZ_REQ_MOVE, 0, 3, FUZZ_REQ_F_FLUSH, 1);
	req(&p, 0, FUZZ_REQ_MOVE, 0, 3, FUZZ_REQ_F_BY_TAG, 1);
	req(&p, 0, FUZZ_REQ_MOVE, 0, 3, FUZZ_REQ_F_NOWAIT, 1);
	req(&p, 0, FUZZ_REQ_MOVE, 0, 3, FUZZ_REQ_F_NO_REGION, 1);
	req(&p, 0, FUZZ_REQ_MOVE, 0, (31 << 3) | 7, 0, 1);
	req(&p, 0, FUZZ_REQ_MOVE, 0, 0, 0, 1);
	req(&p, 1, FUZZ_REQ_MOVE, 0, 3, 0, 1);
	req(&p, 1, FUZZ_REQ_MOVE, 1, 3, 0, 1);
	req(&p, 0, FUZZ_REQ_MOVE, 2, 3, 0, 1);
	req(&p, 0, FUZZ_REQ_LIST, 0, 0, FUZZ_REQ_F_NO_REGION, 0);
	put("request", "move-hostile", p.b, p.n);
}

static void gen_requests(void)
{
	struct prog p;

	/* Every kind, as each identity, on each region. */
	for (unsigned who = 0; who < FUZZ_REQ_N_IDENTITIES; who++) {
		char name[32];

		p.n = 0;
		connect_(&p, 0, who);
		emit(&p, 3, FUZZ_REQ_OP_ZERO, 0, 8);
		emit(&p, 3, FUZZ_REQ_OP_ZERO, 1, 8);
		for (unsigned k = 0; k < FUZZ_REQ_N_KINDS; k++)
			for (unsigned region = 0; region < 2; region++)
				req(&p, 0, k, region, 8, FUZZ_REQ_F_NOWAIT | FUZZ_REQ_F_SEEN_LEASE,
				    0);
		(void)snprintf(name, sizeof(name), "every-kind-%u", who);
		put("request", name, p.b, p.n);
	}

	/* Allocate, commit, list, free by tag; a second lease freed by id. */
	p.n = 0;
	connect_(&p, 0, 1);
	emit(&p, 3, FUZZ_REQ_OP_ZERO, 0, 12);
	req(&p, 0, FUZZ_REQ_ALLOCATE, 0, 8, FUZZ_REQ_F_NOWAIT, 0);
	req(&p, 0, FUZZ_REQ_COMMIT, 0, 0, FUZZ_REQ_F_SEEN_LEASE | FUZZ_REQ_F_FLUSH, 1);
	req(&p, 0, FUZZ_REQ_LIST, 0, 0, FUZZ_REQ_F_NO_REGION, 0);
	req(&p, 0, FUZZ_REQ_ALLOCATE, 0, 4, FUZZ_REQ_F_NOWAIT, 0);
	req(&p, 0, FUZZ_REQ_FREE, 0, 1, FUZZ_REQ_F_SEEN_LEASE, 0);
	req(&p, 0, FUZZ_REQ_FREE, 0, 0, FUZZ_REQ_F_BY_TAG, 1);
	req(&p, 0, FUZZ_REQ_MAP, 0, 0, 0, 0);
	req(&p, 0, FUZZ_REQ_STAT, 0, 0, FUZZ_REQ_F_NO_REGION, 0);
	put("request", "commit-free", p.b, p.n);

	/* Waiting allocations on two connections, one hangs up, the zeroer serves the other. */
	p.n = 0;
	connect_(&p, 0, 1);
	connect_(&p, 1, 0);
	req(&p, 0, FUZZ_REQ_ALLOCATE, 0, 16, 0, 0);
	req(&p, 1, FUZZ_REQ_ALLOCATE, 0, 8, 0, 0);
	emit(&p, 2, FUZZ_REQ_OP_CLOSE, 0);
	emit(&p, 3, FUZZ_REQ_OP_ZERO, 0, 4);
	req(&p, 1, FUZZ_REQ_COMMIT, 0, 0, FUZZ_REQ_F_SEEN_LEASE, 0);
	req(&p, 1, FUZZ_REQ_ZEROER, 3, 0, FUZZ_REQ_F_BY_TAG | FUZZ_REQ_F_NOWAIT, 0);
	req(&p, 1, FUZZ_REQ_LIST, 0, 0, FUZZ_REQ_F_NOWAIT | FUZZ_REQ_F_NO_REGION, 0);
	put("request", "waiters", p.b, p.n);

	/* Claims on two connections of one identity; the holder hangs up; paged LIST. */
	p.n = 0;
	connect_(&p, 0, 1);
	connect_(&p, 1, 1);
	emit(&p, 3, FUZZ_REQ_OP_ZERO, 0, 8);
	req(&p, 0, FUZZ_REQ_CLAIM, 0, 0, 0, 0);
	req(&p, 1, FUZZ_REQ_CLAIM, 0, 0, 0, 0);
	req(&p, 1, FUZZ_REQ_CLAIM, 0, 0, FUZZ_REQ_F_BY_TAG, 0);
	req(&p, 0, FUZZ_REQ_CLAIM, 1, 0, 0, 1);
	req(&p, 0, FUZZ_REQ_ALLOCATE, 0, 4, FUZZ_REQ_F_NOWAIT, 0);
	req(&p, 0, FUZZ_REQ_COMMIT, 0, 0, FUZZ_REQ_F_SEEN_LEASE, 1);
	req(&p, 0, FUZZ_REQ_LIST, 0, 0, FUZZ_REQ_F_FLUSH | FUZZ_REQ_F_NO_REGION, 0);
	req(&p, 0, FUZZ_REQ_LIST, 0, 2, FUZZ_REQ_F_FLUSH | FUZZ_REQ_F_NO_REGION, 0);
	emit(&p, 2, FUZZ_REQ_OP_CLOSE, 0);
	req(&p, 1, FUZZ_REQ_CLAIM, 0, 0, 0, 0);
	req(&p, 1, FUZZ_REQ_CLAIM, 0, 0, FUZZ_REQ_F_BY_TAG, 0);
	put("request", "claims", p.b, p.n);

	/* Leases held across a disconnect; an other user's lease; a bad version. */
	p.n = 0;
	connect_(&p, 0, 0);
	connect_(&p, 1, 2);
	emit(&p, 3, FUZZ_REQ_OP_ZERO, 1, 8);
	req(&p, 0, FUZZ_REQ_ALLOCATE, 1, 8, FUZZ_REQ_F_NOWAIT, 0);
	req(&p, 1, FUZZ_REQ_COMMIT, 1, 0, FUZZ_REQ_F_SEEN_LEASE, 2);
	req(&p, 1, FUZZ_REQ_ALLOCATE, 1, 4, FUZZ_REQ_F_NOWAIT, 0);
	emit(&p, 2, FUZZ_REQ_OP_CLOSE, 0);
	req(&p, 1, FUZZ_REQ_HELLO, 0, 0, FUZZ_REQ_F_BAD_VERSION, 0);
	put("request", "disconnect", p.b, p.n);

	/* A frame with a raw payload, and raw bytes: a partial header, an oversized one. */
	p.n = 0;
	connect_(&p, 0, 0);
	{
		struct fuzz_req_args a = {.kind = FUZZ_REQ_STAT, .num = 3};
		uint8_t f[256];
		size_t len = frame_of(&a, f, sizeof(f)) - PMEMZ_FRAME_HDR;

		emit(&p, 4, FUZZ_REQ_OP_FRAME, 0, (unsigned)len, 0);
		memcpy(p.b + p.n, f + PMEMZ_FRAME_HDR, len);
		p.n += len;
	}
	emit(&p, 5, FUZZ_REQ_OP_RAW, 0, 2, 0x10, 0x00);
	connect_(&p, 1, 1);
	emit(&p, 7, FUZZ_REQ_OP_RAW, 1, 4, 0xff, 0xff, 0xff, 0x7f);
	put("request", "raw", p.b, p.n);
	gen_moves();
	gen_nul_requests();
}

/* ---- media images ---- */

static char img_path[128];
static struct region_conf img_rc;

static void read_file(const char *path, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || pread(fd, buf, len, 0) != (ssize_t)len || close(fd) != 0)
		die("cannot read %s", path);
}

/* An image: its metadata to media/, and (check) a flags byte + all of it to check/. */
static void put_image(const char *name, const uint8_t *img, bool check)
{
	static uint8_t buf[1 + FUZZ_MEDIA_SIZE];

	put("media", name, img, FUZZ_MEDIA_META);
	if (!check)
		return;
	buf[0] = 0;
	memcpy(buf + 1, img, FUZZ_MEDIA_SIZE);
	put("check", name, buf, sizeof(buf));
}

/*
 * The same image as the build before the feature masks wrote it: every
 * valid header block rewritten as layout version 1 (split as flag bit 0).
 */
static void put_image_v1(const char *name, const uint8_t *img, bool check)
{
	static uint8_t v1[FUZZ_MEDIA_SIZE];
	char n[96];

	memcpy(v1, img, sizeof(v1));
	for (uint64_t off = 0; off < 2 * LAYOUT_BLOCK; off += LAYOUT_BLOCK) {
		struct layout_header h;

		if (layout_header_check(v1 + off, &h, NULL, 0) != HDR_OK || h.version != 2)
			continue;
		h.flags = layout_header_split(&h) ? LAYOUT_FLAG_SPLIT : 0;
		h.version = 1;
		h.compat = h.ro_compat = h.incompat = 0;
		layout_header_seal(&h);
		memcpy(v1 + off, &h, sizeof(h));
	}
	(void)snprintf(n, sizeof(n), "v1-%s", name);
	put_image(n, v1, check);
}

static struct region *open_region(void)
{
	struct region *r = NULL;
	int ret = region_open(&img_rc, &r);

	if (ret < 0)
		die("region_open: %s", strerror(-ret));
	return r;
}

static void wait_zeroed(struct region *r, uint64_t n)
{
	for (int i = 0; i < 3000 && region_count_zeroed(r) < n; i++) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};

		(void)poll(&p, 1, 10);
		(void)region_zeroer_collect(r);
		(void)region_sync(r);
	}
	if (region_count_zeroed(r) < n)
		die("the zeroer did not zero %" PRIu64 " extents", n);
}

/*
 * The workload of the power-fail images: lease and commit a tag, lease
 * again (left LEASED), free the tag.  Stops at the cut (pmsim ignores the
 * rest, region_close included).
 */
static void workload(struct pmsim *sim)
{
	struct region *r;
	struct run *runs = NULL;
	size_t n_runs = 0;
	uint32_t id;
	uint64_t n;

	pmsim_trace_next_opens(sim);
	r = open_region(); /* formats: traced too */
	pmsim_trace_next_opens(NULL);
	wait_zeroed(r, 6);
	if (!pmsim_cut(sim) && region_lease(r, 3, &runs, &n_runs) == 0) {
		(void)region_sync(r);
		if (region_commit(r, runs, n_runs, "t1", 1000, true) == 0)
			(void)region_sync(r);
		free(runs);
		runs = NULL;
	}
	if (!pmsim_cut(sim) && region_lease(r, 2, &runs, &n_runs) == 0) {
		(void)region_sync(r);
		free(runs);
	}
	if (!pmsim_cut(sim) && region_tag_lookup(r, "t1", 1000, &id) == 0 &&
	    region_tag_free(r, id, &n) == 0)
		(void)region_sync(r);
	pmsim_detach(sim);
	region_close(r);
}

/*
 * A pool of 4 committed; two MOVEs of one iteration take 2 each (the pool
 * removed); then one of the new tags moved on (emptied), its batch in the
 * slots the first iteration freed while the old marker's FREE is pending.
 */
static void workload_move(struct pmsim *sim)
{
	struct region *r;
	struct run *runs = NULL;
	size_t n_runs = 0;

	pmsim_trace_next_opens(sim);
	r = open_region();
	pmsim_trace_next_opens(NULL);
	wait_zeroed(r, 6);
	if (!pmsim_cut(sim) && region_lease(r, 4, &runs, &n_runs) == 0) {
		uint64_t e = runs[0].first; /* a fresh region: one run */
		struct region_move a[2] = {{"p", e, "c0"}, {"p", e + 1, "c1"}};
		struct region_move b[2] = {{"p", e + 2, "c2"}, {"p", e + 3, "c3"}};
		struct region_move c[1] = {{"c0", e, "d0"}};
		uint32_t ids[2];

		(void)region_sync(r);
		if (!pmsim_cut(sim) && region_commit(r, runs, n_runs, "p", 1000, true) == 0)
			(void)region_sync(r);
		if (!pmsim_cut(sim) && region_move(r, a, 2, 1000, ids, NULL) == 0 &&
		    region_move(r, b, 2, 1000, ids, NULL) == 0)
			(void)region_sync(r);
		if (!pmsim_cut(sim) && region_move(r, c, 1, 1000, ids, NULL) == 0)
			(void)region_sync(r);
		free(runs);
	}
	pmsim_detach(sim);
	region_close(r);
}

/* Cut a workload at each drain (every 2nd past the first 16): two images each. */
static void cut_each_drain(struct pmsim *sim, void (*wl)(struct pmsim *), const char *prefix)
{
	static uint8_t img[FUZZ_MEDIA_SIZE];
	uint64_t total;

	pmsim_reset(sim, NULL);
	(void)unlink(img_path);
	wl(sim);
	total = pmsim_drains(sim);
	for (uint64_t cut = 1; cut <= total; cut += cut < 16 ? 1 : 2) {
		pmsim_reset(sim, NULL);
		pmsim_arm(sim, cut, 0);
		(void)unlink(img_path);
		wl(sim);
		for (uint64_t seed = 0; seed < 2; seed++) {
			char name[64];

			pmsim_image(sim, seed, img);
			(void)snprintf(name, sizeof(name), "%s-%02" PRIu64 "-%" PRIu64, prefix, cut,
				       seed);
			put_image(name, img, seed == 1 && cut % 4 == 0);
			if (seed == 1 && cut % 4 == 0)
				put_image_v1(name, img, false);
		}
	}
}

static void gen_powerfail_move(void)
{
	struct pmsim *sim = pmsim_new(FUZZ_MEDIA_SIZE);

	if (!sim)
		die("pmsim_new failed");
	pmsim_set_main(sim, pmsim_gettid());
	cut_each_drain(sim, workload_move, "powerfail-move");
	pmsim_free(sim);
}

static void gen_powerfail(void)
{
	static uint8_t img[FUZZ_MEDIA_SIZE];
	struct pmsim *sim = pmsim_new(FUZZ_MEDIA_SIZE);
	uint64_t total;

	if (!sim)
		die("pmsim_new failed");
	pmsim_set_main(sim, pmsim_gettid());
	/* Count the drains once, then cut at each (every 2nd past the first 16). */
	pmsim_reset(sim, NULL);
	(void)unlink(img_path);
	workload(sim);
	total = pmsim_drains(sim);
	for (uint64_t cut = 1; cut <= total; cut += cut < 16 ? 1 : 2) {
		pmsim_reset(sim, NULL);
		pmsim_arm(sim, cut, 0);
		(void)unlink(img_path);
		workload(sim);
		for (uint64_t seed = 0; seed < 2; seed++) {
			char name[64];

			pmsim_image(sim, seed, img);
			(void)snprintf(name, sizeof(name), "powerfail-%02" PRIu64 "-%" PRIu64, cut,
				       seed);
			put_image(name, img, seed == 1 && cut % 4 == 0);
			if (seed == 1 && cut % 4 == 0)
				put_image_v1(name, img, false);
		}
	}
	pmsim_free(sim);
}

static struct layout_header hdr;

static void set_rec(uint8_t *img, uint64_t i, uint64_t rec)
{
	memcpy(img + hdr.extent_table_off + i * 8, &rec, 8);
}

static void set_slot(uint8_t *img, uint32_t id, uint64_t state, uint32_t uid, const char *name,
		     uint64_t n)
{
	struct layout_tag t;

	memset(&t, 0, sizeof(t));
	t.uid = uid;
	t.ctime = 1700000000;
	t.n_extents = n;
	(void)snprintf(t.name, sizeof(t.name), "%s", name);
	t.checksum = layout_tag_checksum(&t);
	t.state = state;
	memcpy(img + hdr.tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE, &t, sizeof(t));
}

/* A MOVE slot's link (the reserved bytes), sealed again. */
static void set_link(uint8_t *img, uint32_t id, uint64_t kind, uint32_t batch, uint32_t source,
		     uint64_t nonce, uint64_t arg)
{
	struct layout_tag t;
	struct layout_link l = {kind, batch, source, nonce, arg};
	uint8_t *at = img + hdr.tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE;

	memcpy(&t, at, sizeof(t));
	layout_tag_set_link(&t, &l);
	t.checksum = layout_tag_checksum(&t);
	memcpy(at, &t, sizeof(t));
}

/*
 * MOVE batches cut at each step (media_moves_resolve): a pool "p" (slot 1)
 * of extents 0..3, moves of extents 2 and 3 to "c2" (slot 3) and "c3"
 * (slot 4), the marker in slot 2; undecided, decided, half applied; and
 * hostile links.
 */
static void gen_moves_media(const uint8_t *base)
{
	static uint8_t img[FUZZ_MEDIA_SIZE], batch[FUZZ_MEDIA_SIZE];

	memcpy(batch, base, sizeof(batch));
	for (uint64_t i = 0; i < 4; i++)
		set_rec(batch, i, layout_rec(EXT_COMMITTED, 1, 1));
	set_slot(batch, 1, TAG_VALID, 1000, "p", 4);
	set_slot(batch, 2, TAG_WRITTEN, 0, "", 0);
	set_link(batch, 2, LINK_MARKER, 0, 0, 77, 2);
	set_slot(batch, 3, TAG_WRITTEN, 1000, "c2", 1);
	set_link(batch, 3, LINK_MEMBER, 2, 1, 77, 2);
	set_slot(batch, 4, TAG_WRITTEN, 1000, "c3", 1);
	set_link(batch, 4, LINK_MEMBER, 2, 1, 77, 3);
	put_image("move-undecided", batch, true);
	put_image_v1("move-undecided", batch, true);

	memcpy(img, batch, sizeof(img));
	set_slot(img, 2, TAG_VALID, 0, "", 0);
	set_link(img, 2, LINK_MARKER, 0, 0, 77, 2);
	put_image("move-decided", img, true);
	put_image_v1("move-decided", img, true);

	/* Half of phase 2: one record moved, its member VALID, the pool's count torn. */
	set_rec(img, 2, layout_rec(EXT_COMMITTED, 3, 1));
	memset(img + hdr.tag_table_off + 2 * LAYOUT_TAG_SLOT_SIZE, 0x33, 8); /* c2 VALID */
	img[hdr.tag_table_off + 24] = 2; /* p's n_extents, its checksum not */
	put_image("move-half-applied", img, true);
	put_image_v1("move-half-applied", img, true);

	/* Every pool extent moved and the pool FREE: the marker still VALID. */
	memcpy(img, batch, sizeof(img));
	set_slot(img, 2, TAG_VALID, 0, "", 0);
	set_link(img, 2, LINK_MARKER, 0, 0, 77, 2);
	set_rec(img, 0, layout_rec(EXT_DIRTY, 0, 1));
	set_rec(img, 1, layout_rec(EXT_DIRTY, 0, 1));
	set_slot(img, 1, TAG_FREE, 1000, "p", 2);
	put_image("move-source-freed", img, true);

	/* Hostile: a decided batch whose members name the marker, another extent, themselves. */
	memcpy(img, batch, sizeof(img));
	set_slot(img, 2, TAG_VALID, 0, "", 0);
	set_link(img, 2, LINK_MARKER, 0, 0, 77, 2);
	set_link(img, 3, LINK_MEMBER, 2, 2, 77, 2);
	set_link(img, 4, LINK_MEMBER, 2, 1, 77, 999);
	put_image("move-bad-links", img, true);
	memcpy(img, batch, sizeof(img));
	set_slot(img, 2, TAG_VALID, 0, "", 0);
	set_link(img, 2, LINK_MARKER, 0, 0, 77, 2);
	set_link(img, 3, LINK_MEMBER, 2, 1, 77, 3); /* both name extent 3 */
	set_link(img, 4, LINK_MEMBER, 4, 0xffffffffu, 77, 3);
	put_image("move-same-extent", img, true);
}

/* Header block off of img: its features or'ed with f (version 3 when f is NULL), resealed. */
static void set_features(uint8_t *img, uint64_t off, const struct layout_features *f)
{
	struct layout_header h;

	memcpy(&h, img + off, sizeof(h));
	if (f) {
		h.compat |= f->compat;
		h.ro_compat |= f->ro_compat;
		h.incompat |= f->incompat;
	} else {
		h.version = 3;
	}
	layout_header_seal(&h);
	memcpy(img + off, &h, sizeof(h));
}

/*
 * A newer build's headers (docs/on-media-format.md, "Features"): unknown
 * incompat, ro_compat and compat bits, in both blocks or one, beside a
 * torn primary, a newer version; and masks a tenant flipped in an inline
 * region's header, resealed or not.
 */
static void gen_features(const uint8_t *base)
{
	static uint8_t img[FUZZ_MEDIA_SIZE], tagged[FUZZ_MEDIA_SIZE];
	static const struct layout_features inc = {.incompat = UINT64_C(1) << 5};
	static const struct layout_features ro = {.ro_compat = UINT64_C(1) << 0};
	static const struct layout_features co = {.compat = UINT64_C(1) << 63};
	static const struct {
		const char *name;
		const struct layout_features *f[2]; /* primary, backup; NULL entries: not edited */
		bool torn_primary;
	} cases[] = {
	    {"features-incompat", {&inc, &inc}, false},
	    {"features-incompat-backup", {NULL, &inc}, false},
	    {"features-incompat-torn-primary", {&inc, &inc}, true},
	    {"features-ro-compat", {&ro, &ro}, false},
	    {"features-ro-compat-backup", {NULL, &ro}, false},
	    {"features-compat", {&co, &co}, false},
	    {"features-compat-torn-primary", {&co, &co}, true},
	};

	memcpy(tagged, base, sizeof(tagged));
	set_rec(tagged, 0, layout_rec(EXT_COMMITTED, 1, 1));
	set_rec(tagged, 1, layout_rec(EXT_LEASED, 0, 1));
	set_slot(tagged, 1, TAG_VALID, 1000, "t1", 1);
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		memcpy(img, tagged, sizeof(img));
		for (unsigned b = 0; b < 2; b++)
			if (cases[k].f[b])
				set_features(img, b * LAYOUT_BLOCK, cases[k].f[b]);
		if (cases[k].torn_primary)
			memset(img + LAYOUT_PRIMARY_OFF + 48, 0, 16);
		put_image(cases[k].name, img, true);
	}
	memcpy(img, tagged, sizeof(img));
	set_features(img, LAYOUT_PRIMARY_OFF, NULL);
	put_image("features-version-3", img, true);
	/* Flipped without resealing: a corrupt primary, then both. */
	memcpy(img, tagged, sizeof(img));
	img[LAYOUT_PRIMARY_OFF + offsetof(struct layout_header, incompat) + 2] ^= 0x40;
	put_image("features-flipped-primary", img, true);
	img[LAYOUT_BACKUP_OFF + offsetof(struct layout_header, ro_compat)] ^= 0x01;
	put_image("features-flipped-both", img, true);
}

/* The media fixture's kinds of damage (tests/unit/test-media.c), on a formatted image. */
static void gen_fixture(void)
{
	static uint8_t base[FUZZ_MEDIA_SIZE], img[FUZZ_MEDIA_SIZE];
	struct region *r;

	(void)unlink(img_path);
	r = open_region();
	wait_zeroed(r, 4);
	region_close(r);
	read_file(img_path, base, sizeof(base));
	if (layout_header_check(base, &hdr, NULL, 0) != HDR_OK)
		die("the formatted image has no valid header");
	if (hdr.extent_count != 12 || hdr.data_off != FUZZ_MEDIA_META)
		die("unexpected geometry: %" PRIu64 " extents, data at %" PRIu64, hdr.extent_count,
		    hdr.data_off);
	put_image("formatted", base, true);
	put_image_v1("formatted", base, true);
	gen_moves_media(base);
	gen_features(base);

	/* Every state, a VALID tag with its records. */
	memcpy(img, base, sizeof(img));
	set_rec(img, 0, layout_rec(EXT_LEASED, 0, 1));
	set_rec(img, 1, layout_rec(EXT_COMMITTED, 1, 1));
	set_rec(img, 2, layout_rec(EXT_COMMITTED, 1, 1));
	set_rec(img, 3, layout_rec(EXT_BAD, 0, 1));
	set_slot(img, 1, TAG_VALID, 1000, "t1", 2);
	put_image("states", img, true);
	put_image_v1("states", img, true);

	/* A commit cut before VALID (rolled back) and a free cut before FREE (completed). */
	memcpy(img, base, sizeof(img));
	set_rec(img, 4, layout_rec(EXT_COMMITTED, 2, 1));
	set_slot(img, 2, TAG_WRITTEN, 1000, "w", 1);
	set_rec(img, 5, layout_rec(EXT_COMMITTED, 3, 1));
	set_rec(img, 6, layout_rec(EXT_COMMITTED, 3, 1));
	set_slot(img, 3, TAG_FREEING, 0, "f", 2);
	put_image("written-freeing", img, true);
	put_image_v1("written-freeing", img, true);

	/* Damage: unknown code, tag out of range, COMMITTED under a FREE slot, a bad checksum. */
	memcpy(img, base, sizeof(img));
	set_rec(img, 0, layout_rec_raw(0x7e, 0, 1));
	set_rec(img, 1, layout_rec(EXT_COMMITTED, 999, 1));
	set_rec(img, 2, layout_rec(EXT_COMMITTED, 4, 1));
	set_rec(img, 3, layout_rec(EXT_COMMITTED, 5, 1));
	set_slot(img, 5, TAG_VALID, 1000, "sum", 1);
	img[hdr.tag_table_off + 4 * LAYOUT_TAG_SLOT_SIZE + 40] ^= 1;
	set_slot(img, 6, 0x1234, 0, "junk", 0);
	put_image("damaged-records", img, true);

	/* Two tags of one owner with one name; a name with no NUL. */
	memcpy(img, base, sizeof(img));
	set_rec(img, 0, layout_rec(EXT_COMMITTED, 1, 1));
	set_rec(img, 1, layout_rec(EXT_COMMITTED, 2, 1));
	set_slot(img, 1, TAG_VALID, 1000, "dup", 1);
	set_slot(img, 2, TAG_VALID, 1000, "dup", 1);
	set_slot(img, 3, TAG_VALID, 0, "x", 0);
	memset(img + hdr.tag_table_off + 2 * LAYOUT_TAG_SLOT_SIZE + 32, 'x', 64);
	put_image("duplicate-tags", img, true);

	/* Headers: primary corrupt, backup corrupt, primary blank, both corrupt. */
	memcpy(img, base, sizeof(img));
	img[LAYOUT_PRIMARY_OFF + 40] ^= 0x10;
	put_image("primary-corrupt", img, true);
	put_image_v1("primary-corrupt", img, true);
	memcpy(img, base, sizeof(img));
	img[LAYOUT_BACKUP_OFF + 48] ^= 0x01;
	put_image("backup-corrupt", img, true);
	memcpy(img, base, sizeof(img));
	memset(img + LAYOUT_PRIMARY_OFF, 0, LAYOUT_BLOCK);
	put_image("primary-blank", img, true);
	put_image_v1("primary-blank", img, true);
	memcpy(img, base, sizeof(img));
	img[LAYOUT_PRIMARY_OFF + 8] ^= 0x02;
	img[LAYOUT_BACKUP_OFF + 8] ^= 0x02;
	put_image("both-corrupt", img, true);
	memcpy(img, base, sizeof(img));
	memcpy(img + LAYOUT_PRIMARY_OFF, "NOTOURS!", 8);
	put_image("foreign", img, true);
	memset(img, 0, sizeof(img));
	put_image("blank", img, true);
	(void)unlink(img_path);
}

int main(int argc, char **argv)
{
	struct stat st;
	const char *dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	log_set_max_level(LOG_ERR);
	(void)setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	(void)snprintf(img_path, sizeof(img_path), "%s/pmemz-gen-corpus-%d", dir, (int)getpid());
	img_rc.name = (char *)"fuzz";
	img_rc.path = img_path;
	img_rc.size = FUZZ_MEDIA_SIZE;
	img_rc.extent_size = FUZZ_MEDIA_EXTENT;
	img_rc.zeroer_threads = 1;
	img_rc.batch_extents = 4;
	img_rc.source = (char *)"gen-corpus";

	gen_frames();
	gen_requests();
	gen_fixture();
	gen_powerfail();
	gen_powerfail_move();
	printf("gen-corpus: %u files in %s\n", n_written, outdir);
	return 0;
}
