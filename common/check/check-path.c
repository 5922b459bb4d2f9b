/* SPDX-License-Identifier: MIT */
/*
 * Files and devices: map a region (file or device-DAX, with its bad
 * ranges when known) read-only and check it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-internal.h"
#include "dax.h"

/* Without libdaxctl's answer: map one alignment unit and read the header's size. */
static int devdax_size_from_header(int fd, uint64_t *size)
{
	static const uint64_t aligns[] = {2ull << 20, 1ull << 30, 4096};

	for (size_t k = 0; k < ARRAY_SIZE(aligns); k++) {
		struct layout_header h;
		void *m = mmap(NULL, aligns[k], PROT_READ, MAP_SHARED, fd, 0);
		enum layout_hdr_status s;

		if (m == MAP_FAILED)
			continue;
		s = layout_header_check(m, &h, NULL, 0);
		if (s != HDR_OK)
			s = layout_header_check((const uint8_t *)m + LAYOUT_BACKUP_OFF, &h, NULL,
						0);
		(void)munmap(m, aligns[k]);
		if (s != HDR_OK)
			return -EMEDIUMTYPE;
		*size = h.region_size;
		return 0;
	}
	return -ENODEV;
}

struct mapped {
	void *map;
	uint64_t size;
	bool device;
	struct media_badblock *bbs;
	size_t n_bbs;
};

static void mapped_done(struct mapped *m)
{
	if (m->map)
		(void)munmap(m->map, m->size);
	free(m->bbs);
}

/* Map PATH read-only (file or device-DAX, with its bad ranges when known). */
static int map_path(const char *path, struct mapped *m)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	uint64_t size;
	int r;

	memset(m, 0, sizeof(*m));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISCHR(st.st_mode)) {
		struct dax_dev d;
		_cleanup_free_ struct dax_badblock *dbb = NULL;
		size_t n = 0;

		m->device = true;
		r = dax_lookup_rdev(st.st_rdev, &d);
		if (r >= 0 && d.size) {
			size = d.size;
			/* -ENOTSUP (not root, no NVDIMM region): read everything */
			if (dax_badblocks(&d, &dbb, &n) >= 0 && n) {
				m->bbs = calloc(n, sizeof(*m->bbs));
				if (!m->bbs)
					return -ENOMEM;
				for (size_t k = 0; k < n; k++)
					m->bbs[k] = (struct media_badblock){dbb[k].off, dbb[k].len};
				m->n_bbs = n;
			}
		} else {
			r = devdax_size_from_header(fd, &size);
			if (r < 0)
				return r;
		}
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else {
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if (size > 0) {
		void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

		if (map == MAP_FAILED)
			return -errno;
		(void)madvise(map, size, MADV_SEQUENTIAL);
		m->map = map;
	}
	m->size = size;
	return 0;
}

int check_path(const char *path, unsigned flags, struct check_report *rep)
{
	struct mapped m;
	int r;

	memset(rep, 0, sizeof(*rep));
	r = map_path(path, &m);
	if (r < 0) {
		mapped_done(&m);
		return r;
	}
	r = check_image_badblocks(m.map, m.size, flags, m.bbs, m.n_bbs, rep);
	mapped_done(&m);
	if (r >= 0)
		(void)snprintf(rep->path, sizeof(rep->path), "%s", path);
	return r;
}

int check_path_split(const char *meta_path, const char *data_path, unsigned flags,
		     struct check_report *rep)
{
	struct mapped meta, data;
	int r;

	memset(rep, 0, sizeof(*rep));
	memset(&data, 0, sizeof(data));
	r = map_path(meta_path, &meta);
	if (r >= 0)
		r = map_path(data_path, &data);
	if (r >= 0)
		r = check_run(meta.map, meta.size, data.map, data.size, true, meta.device, flags,
			      meta.bbs, meta.n_bbs, data.bbs, data.n_bbs, rep);
	mapped_done(&meta);
	mapped_done(&data);
	if (r >= 0) {
		(void)snprintf(rep->path, sizeof(rep->path), "%s", data_path);
		(void)snprintf(rep->meta_path, sizeof(rep->meta_path), "%s", meta_path);
	}
	return r;
}
