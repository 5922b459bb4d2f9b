/* SPDX-License-Identifier: MIT */
/*
 * compat-cut: the states of a golden image that running the baseline's
 * programs cannot reach, made by the baseline's own storage core and its
 * power-failure simulator (tests/crash/pmsim.c).  tests/compat/make-images
 * copies this file and compat-cut.cmake into the baseline's source tree
 * (tests/compat-cut/) and builds it there, against that commit's
 * pmemzd_storage and pmsim: every byte it writes is the baseline's.  It is
 * written against the storage API of db6afef; a later image set made from
 * a later commit adapts it to that commit's API.
 *
 *   compat-cut move IMAGE EXTENT_SIZE UID FROM_TAG TO_TAG[,TO_TAG...] DRAIN SEED OUT
 *       Open a copy of IMAGE (a region the baseline daemon wrote and
 *       stopped), move the first extents of FROM_TAG (owned by UID) to new
 *       tags TO_TAG..., one each, in one MOVE request, and cut the power at
 *       the DRAIN-th drain of that request's group commit, before it takes
 *       effect; the stores not yet drained are all kept (SEED 1) or all
 *       dropped (SEED 0).  Those media are written to OUT.  With the
 *       baseline's order (docs/on-media-format.md, "Move"): DRAIN 2, SEED 0
 *       leaves the batch undecided (recovery moves nothing back); DRAIN 3,
 *       SEED 0 leaves it decided with no record moved yet (recovery rolls
 *       it forward).
 *   compat-cut bad IMAGE EXTENT_SIZE OFF:LEN[,OFF:LEN...] OUT
 *       Open a copy of IMAGE with libpmem2's bad-block list replaced by
 *       these byte ranges (the link wraps pstore_badblocks): recovery marks
 *       the free extents under them BAD on the media, as on a device-DAX
 *       device whose namespace reports them.  The copy is written to OUT.
 *
 * Exit 0, or 1 with a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "media.h"
#include "pmsim.h"
#include "pstore.h"
#include "region-internal.h"
#include "region.h"

#define MAX_MOVES 16
#define MAX_BAD 16

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("compat-cut: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint8_t *read_all(const char *path, uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t end;
	uint8_t *buf;

	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));
	end = lseek(fd, 0, SEEK_END);
	if (end <= 0)
		die("%s is empty", path);
	buf = malloc((size_t)end);
	if (!buf)
		die("out of memory");
	if (pread(fd, buf, (size_t)end, 0) != end)
		die("cannot read %s", path);
	(void)close(fd);
	*size = (uint64_t)end;
	return buf;
}

static void write_all(const char *path, const uint8_t *buf, uint64_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		die("cannot create %s: %s", path, strerror(errno));
	/* Zero blocks are holes: the image stays sparse. */
	for (uint64_t off = 0; off < size; off += 4096) {
		uint64_t n = size - off < 4096 ? size - off : 4096;
		bool zero = true;

		for (uint64_t i = 0; i < n && zero; i++)
			zero = buf[off + i] == 0;
		if (!zero && pwrite(fd, buf + off, n, (off_t)off) != (ssize_t)n)
			die("cannot write %s", path);
	}
	if (ftruncate(fd, (off_t)size) < 0 || close(fd) < 0)
		die("cannot write %s: %s", path, strerror(errno));
}

static struct region *open_image(char *path, uint64_t extent_size)
{
	static struct region_conf rc;
	struct region *r = NULL;
	int ret;

	rc.name = (char *)"compat";
	rc.path = path;
	rc.size = 0;
	rc.extent_size = extent_size;
	rc.zeroer_threads = 1;
	rc.batch_extents = 4;
	rc.source = (char *)"compat-cut";
	ret = region_open(&rc, &r);
	if (ret < 0)
		die("region_open %s: %s", path, strerror(-ret));
	/* What the zeroer does meanwhile is legal at any cut; less of it is less noise. */
	region_zeroer_pause(r, true);
	return r;
}

/* ---- bad: the bad-block list recovery is given ---- */

static struct media_badblock bad[MAX_BAD];
static size_t n_bad;

int __real_pstore_badblocks(struct pstore *ps, struct pstore_badblock **out, size_t *n);
int __wrap_pstore_badblocks(struct pstore *ps, struct pstore_badblock **out, size_t *n);
int __wrap_pstore_badblocks(struct pstore *ps, struct pstore_badblock **out, size_t *n)
{
	(void)ps;
	*out = calloc(n_bad ? n_bad : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, bad, n_bad * sizeof(bad[0]));
	*n = n_bad;
	return 0;
}

static int cmd_bad(char **argv)
{
	uint64_t size;
	uint8_t *img = read_all(argv[0], &size);
	char *spec = argv[2], *save = NULL;
	struct region *r;

	for (char *tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n_bad == MAX_BAD || sscanf(tok, "%" SCNu64 ":%" SCNu64, &bad[n_bad].off,
					       &bad[n_bad].len) != 2)
			die("bad range '%s' (OFF:LEN, at most %d)", tok, MAX_BAD);
		n_bad++;
	}
	write_all(argv[3], img, size);
	free(img);
	r = open_image(argv[3], strtoull(argv[1], NULL, 0));
	region_close(r);
	return 0;
}

/* ---- move: one MOVE request cut at a drain of its group commit ---- */

static size_t parse_tags(char *list, const char **to)
{
	size_t n = 0;
	char *save = NULL;

	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_MOVES)
			die("at most %d moves", MAX_MOVES);
		to[n++] = tok;
	}
	if (!n)
		die("no TO_TAG");
	return n;
}

/* The first n extents of from (uid's), in the order of its runs. */
static void pick_extents(struct region *r, const char *from, uid_t uid, size_t n,
			 uint64_t *extents)
{
	struct run *runs = NULL;
	size_t n_runs = 0, k = 0;
	uint64_t n_ext;
	uint32_t id;

	if (region_tag_lookup(r, from, uid, &id) != 0)
		die("no tag '%s' of uid %u", from, (unsigned)uid);
	if (region_tag_runs(r, id, &runs, &n_runs, &n_ext) < 0)
		die("cannot read the runs of '%s'", from);
	for (size_t i = 0; i < n_runs && k < n; i++)
		for (uint64_t e = runs[i].first; e < runs[i].first + runs[i].count && k < n; e++)
			extents[k++] = e;
	free(runs);
	if (k < n)
		die("tag '%s' has %zu extents, %zu wanted", from, k, n);
}

static int cmd_move(char **argv)
{
	const char *path = argv[0], *from = argv[3], *out = argv[7];
	uint64_t extent_size = strtoull(argv[1], NULL, 0), drain = strtoull(argv[5], NULL, 0);
	uid_t uid = (uid_t)strtoul(argv[2], NULL, 0);
	uint64_t seed = strtoull(argv[6], NULL, 0), size, extents[MAX_MOVES];
	const char *to[MAX_MOVES];
	struct region_move mv[MAX_MOVES];
	uint32_t ids[MAX_MOVES];
	size_t n = parse_tags(argv[4], to), which = 0;
	uint8_t *img = read_all(path, &size);
	char work[4096];
	struct pmsim *sim = pmsim_new(size);
	pid_t tid = pmsim_gettid();
	struct region *r;
	int ret;

	if (!sim || drain == 0)
		die("pmsim_new failed, or DRAIN 0");
	(void)snprintf(work, sizeof(work), "%s.work", out);
	write_all(work, img, size);
	pmsim_set_main(sim, tid);
	pmsim_reset(sim, img);
	pmsim_arm(sim, 0, tid); /* count the main thread's drains only */
	pmsim_trace_next_opens(sim);
	r = open_image(work, extent_size);
	pmsim_trace_next_opens(NULL);
	pick_extents(r, from, uid, n, extents);
	for (size_t k = 0; k < n; k++)
		mv[k] = (struct region_move){from, extents[k], to[k]};
	ret = region_move(r, mv, n, uid, ids, &which);
	if (ret < 0)
		die("region_move: %s (move %zu)", strerror(-ret), which);
	pmsim_arm(sim, pmsim_drains(sim) + drain, tid);
	(void)region_sync(r);
	if (!pmsim_cut(sim))
		die("the group commit issued fewer than %" PRIu64 " drains", drain);
	pmsim_image(sim, seed, img);
	pmsim_detach(sim);
	region_close_abandon(r);
	(void)unlink(work);
	write_all(out, img, size);
	pmsim_free(sim);
	free(img);
	return 0;
}

int main(int argc, char **argv)
{
	log_set_max_level(LOG_WARNING);
	(void)setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	if (argc == 10 && strcmp(argv[1], "move") == 0)
		return cmd_move(argv + 2);
	if (argc == 6 && strcmp(argv[1], "bad") == 0)
		return cmd_bad(argv + 2);
	fprintf(stderr, "usage: compat-cut move IMAGE EXTENT_SIZE UID FROM_TAG TO_TAG[,...] DRAIN "
			"SEED OUT\n       compat-cut bad IMAGE EXTENT_SIZE OFF:LEN[,...] OUT\n");
	return 2;
}
