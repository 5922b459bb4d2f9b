/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl map REGION [--width N]: a picture of the region's extent map, one
 * character per extent, or per group of extents when there are more than
 * MAP_LINES lines of N characters hold; a legend and the count of extents
 * in each state.  --json gives the counts and, per state, the extent runs.
 * `regions --map` shows the same for every region (ctl_map_show()).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pmemzctl.h"
#include "vector.h"

#define MAP_WIDTH_DEFAULT 64u
#define MAP_WIDTH_MAX 1024u
#define MAP_LINES 32u /* more extents than MAP_LINES * width: a character per group */

/* MAP's state values (proto/pmemz.proto), plus one for values we do not know. */
enum map_state {
	MS_DIRTY = 0,
	MS_ZEROED = 1,
	MS_LEASED = 2,
	MS_COMMITTED = 3,
	MS_BAD = 4,
	MS_ZEROING = 5,
	MS_UNKNOWN = 6,
	MS_N,
};

static const struct {
	char c;
	const char *name;
} map_states[MS_N] = {
    [MS_ZEROED] = {'.', "zeroed"},	 [MS_ZEROING] = {'z', "zeroing"},
    [MS_DIRTY] = {'d', "dirty"},	 [MS_LEASED] = {'L', "leased"},
    [MS_COMMITTED] = {'C', "committed"}, [MS_BAD] = {'X', "bad"},
    [MS_UNKNOWN] = {'?', "unknown"},
};
/* Legend and count order. */
static const enum map_state map_order[] = {MS_ZEROED, MS_ZEROING,   MS_DIRTY,
					   MS_LEASED, MS_COMMITTED, MS_BAD};
/* A group's character: the most common state; ties go to the later one here. */
static const enum map_state map_tie_order[] = {MS_ZEROED,    MS_ZEROING, MS_DIRTY, MS_LEASED,
					       MS_COMMITTED, MS_UNKNOWN, MS_BAD};

struct map_run {
	enum map_state state;
	uint64_t first, count;
};

struct map {
	uint64_t n, extent_size;
	struct map_run *runs;
	size_t n_runs, cap;
	uint64_t count[MS_N];
};

static void map_done(struct map *m)
{
	free(m->runs);
}

static enum map_state map_state_of(enum pmemz_extent_state v)
{
	return (unsigned)v < MS_UNKNOWN ? (enum map_state)v : MS_UNKNOWN;
}

static int map_push(struct map *m, enum map_state s, uint64_t first, uint64_t count)
{
	m->count[s] += count;
	if (PMEMZ_GROW(m->runs, &m->cap, m->n_runs + 1) < 0)
		return -ENOMEM;
	m->runs[m->n_runs++] = (struct map_run){.state = s, .first = first, .count = count};
	return 0;
}

static void map_freep(struct pmemz_map **pm)
{
	pmemz_map_free(*pm);
}

/* MAP of one region as runs (the library checked they cover it); 0 or -errno. */
static int map_get(struct ctl *ctl, const char *region, struct map *m)
{
	_cleanup_(map_freep) struct pmemz_map *pm = NULL;
	int r;

	r = pmemz_admin_map(ctl->client, region, &pm);
	if (r < 0)
		return r;
	m->n = pmemz_map_extents(pm);
	m->extent_size = pmemz_map_extent_size(pm);
	for (size_t i = 0; i < pmemz_map_runs(pm); i++) {
		enum pmemz_extent_state st;
		uint64_t first, count;

		(void)pmemz_map_run(pm, i, &st, &first, &count);
		r = map_push(m, map_state_of(st), first, count);
		if (r < 0)
			return r;
	}
	return 0;
}

static unsigned map_auto_width(unsigned prefix)
{
	struct winsize ws;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
	    ws.ws_col > prefix + 16u)
		return MIN((unsigned)ws.ws_col - prefix - 1u, 128u);
	return MAP_WIDTH_DEFAULT;
}

/* The character for extents [first, first + len): *ri is the run that holds first. */
static char map_cell(const struct map *m, size_t *ri, uint64_t first, uint64_t len)
{
	uint64_t cnt[MS_N] = {0}, end = first + len;
	enum map_state best = MS_ZEROED;
	size_t i = *ri;

	while (i < m->n_runs && m->runs[i].first + m->runs[i].count <= first)
		i++;
	*ri = i;
	for (; i < m->n_runs && m->runs[i].first < end; i++) {
		uint64_t a = MAX(first, m->runs[i].first);
		uint64_t b = MIN(end, m->runs[i].first + m->runs[i].count);

		cnt[m->runs[i].state] += b - a;
	}
	if (cnt[MS_BAD])
		return map_states[MS_BAD].c;
	for (size_t k = 0; k < ARRAY_SIZE(map_tie_order); k++)
		if (cnt[map_tie_order[k]] >= cnt[best])
			best = map_tie_order[k];
	return map_states[best].c;
}

/* The picture: rows of width characters, each led by its first extent index. */
static char *map_picture(const struct map *m, unsigned width, uint64_t per)
{
	uint64_t cells = DIV_ROUND_UP(m->n, per), rows = DIV_ROUND_UP(cells, width);
	char last[24];
	int digits = snprintf(last, sizeof(last), "%" PRIu64, m->n ? m->n - 1 : 0);
	size_t len = (size_t)rows * ((size_t)digits + 2 + width) + 256, used = 0;
	char *buf = malloc(len);
	size_t ri = 0;

	if (!buf)
		return NULL;
	for (uint64_t row = 0; row < rows; row++) {
		used += (size_t)snprintf(buf + used, len - used, "%*" PRIu64 " ", digits,
					 row * width * per);
		for (uint64_t c = row * width; c < MIN(cells, (row + 1) * width); c++)
			buf[used++] = map_cell(m, &ri, c * per, MIN(per, m->n - c * per));
		buf[used++] = '\n';
	}
	buf[used] = '\0';
	/* The legend. */
	used += (size_t)snprintf(buf + used, len - used, "\n");
	for (size_t k = 0; k < ARRAY_SIZE(map_order); k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%c %s", k ? "  " : "",
					 map_states[map_order[k]].c, map_states[map_order[k]].name);
	(void)snprintf(buf + used, len - used, "\n");
	return buf;
}

/* Per state, its runs for the F_RUNS fields (JSON only). */
static int map_emit_runs(struct out *o, const struct map *m)
{
	/* One slot at least: a map always has runs, but calloc(0) may be NULL. */
	_cleanup_free_ struct ctl_run *runs = calloc(m->n_runs ? m->n_runs : 1, sizeof(*runs));

	if (!runs)
		return -ENOMEM;
	out_details(o, true);
	o->ops->object_begin(o, "runs");
	/* Each state's runs in consecutive slots: one array per field. */
	for (size_t k = 0, base = 0; k < ARRAY_SIZE(map_order) + 1; k++) {
		enum map_state s = k < ARRAY_SIZE(map_order) ? map_order[k] : MS_UNKNOWN;
		size_t n = 0;

		if (s == MS_UNKNOWN && !m->count[MS_UNKNOWN])
			continue;
		for (size_t i = 0; i < m->n_runs; i++) {
			if (m->runs[i].state != s)
				continue;
			runs[base + n] =
			    (struct ctl_run){.first = m->runs[i].first, .count = m->runs[i].count};
			n++;
		}
		out_runs(o, map_states[s].name, map_states[s].name, n ? runs + base : NULL, n);
		base += n;
	}
	o->ops->object_end(o);
	out_details(o, false);
	return 0;
}

int ctl_map_show(struct ctl *ctl, const char *region, unsigned width)
{
	_cleanup_(map_done) struct map m = {0};
	_cleanup_free_ char *picture = NULL;
	struct out *o = ctl->out;
	char scale[96], digits[24];
	uint64_t per;
	int r;

	r = map_get(ctl, region, &m);
	if (r == -ENOMEM)
		return ctl_oom();
	if (r < 0)
		return r;
	if (width == 0)
		width = map_auto_width(
		    (unsigned)snprintf(digits, sizeof(digits), "%" PRIu64, m.n ? m.n - 1 : 0) + 1u);
	per = MAX((uint64_t)1, DIV_ROUND_UP(m.n, (uint64_t)width * MAP_LINES));
	if (per == 1)
		(void)snprintf(scale, sizeof(scale), "1 extent per character");
	else
		(void)snprintf(scale, sizeof(scale),
			       "%" PRIu64 " extents per character (X if any is bad, else the "
			       "most common state)",
			       per);
	picture = map_picture(&m, width, per);
	if (!picture)
		return ctl_oom();

	out_str(o, "region", "region", region);
	out_u64(o, "extents", "extents", m.n);
	if (m.extent_size)
		out_size(o, "extent_size", "extent size", m.extent_size);
	out_str(o, "scale", "scale", scale);
	out_details(o, true);
	out_u64(o, "extents_per_char", "extents per character", per);
	out_details(o, false);
	o->ops->block(o, picture);
	for (size_t k = 0; k < ARRAY_SIZE(map_order); k++)
		out_u64(o, map_states[map_order[k]].name, map_states[map_order[k]].name,
			m.count[map_order[k]]);
	if (m.count[MS_UNKNOWN])
		out_u64(o, "unknown", "unknown", m.count[MS_UNKNOWN]);
	r = map_emit_runs(o, &m);
	if (r < 0)
		return ctl_oom();
	return 0;
}

int ctl_map_parse_width(const struct ctl_cmd *cmd, const char *s, unsigned *width)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > MAP_WIDTH_MAX)
		return ctl_usage_error(cmd, "invalid width '%s': expected 1 to %u characters", s,
				       MAP_WIDTH_MAX);
	*width = (unsigned)v;
	return 0;
}

static int map_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"width", required_argument, NULL, 'w'},
	    {},
	};
	const char *region;
	unsigned width = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT "w:", opts, NULL)) != -1) {
		if (c == 'w') {
			if ((r = ctl_map_parse_width(&cmd_map, optarg, &width)) != 0)
				return r;
			continue;
		}
		if ((r = ctl_common_opt(ctl, &cmd_map, c)) >= 0)
			return r;
	}
	if (optind >= argc)
		return ctl_usage_error(&cmd_map, "which region?");
	region = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(&cmd_map, "unexpected argument '%s'", argv[optind]);

	r = ctl_connect(ctl);
	if (r)
		return r;
	r = ctl_output(ctl);
	if (r)
		return r;
	if (ctl_map_show(ctl, region, width) < 0)
		return ctl_fail();
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_map = {
    .name = "map",
    .args = "REGION [--width N]",
    .summary = "a picture of the region's extents by state, with counts",
    .options = "  -w, --width N  characters per line (default: the terminal's, else 64)\n",
    .exec = map_exec,
};
