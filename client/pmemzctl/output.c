/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl output backends behind one vtable: aligned text (key/value
 * blocks and tables) and JSON (json-c).  Commands describe what they print;
 * the backend decides how.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <string.h>

#include "pmemzctl.h"
#include "vector.h"

#define MAX_DEPTH 8

/* ---- text ------------------------------------------------------------- */

struct strv {
	char **v;
	size_t n, cap;
};

static int strv_push(struct strv *s, const char *str)
{
	char *d;
	int r = PMEMZ_GROW(s->v, &s->cap, s->n + 1);

	if (r < 0)
		return r;
	d = strdup(str);
	if (!d)
		return -ENOMEM;
	s->v[s->n++] = d;
	return 0;
}

static void strv_clear(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

static void strv_free(struct strv *s)
{
	strv_clear(s);
	free(s->v);
	s->v = NULL;
	s->cap = 0;
}

struct text {
	int err;    /* first allocation failure */
	int blocks; /* blocks printed so far: separate them with a blank line */
	int depth;  /* object nesting */
	/* key/value block being collected */
	struct strv kv_labels, kv_values;
	/* table being collected */
	bool in_table;
	const char *empty_text;
	struct strv headers, cells;
	bool *right; /* per column: right-aligned (numbers) */
	size_t cap_right;
	size_t ncols, row_cells, rows;
};

static void text_push(struct text *t, struct strv *s, const char *str)
{
	int r = strv_push(s, str);

	if (r < 0 && !t->err)
		t->err = r;
}

static void text_sep(struct out *o)
{
	struct text *t = o->priv;

	if (t->blocks++ > 0)
		(void)fputc('\n', o->f);
}

static void text_flush_kv(struct out *o)
{
	struct text *t = o->priv;
	size_t w = 0;

	if (t->kv_labels.n == 0)
		return;
	text_sep(o);
	for (size_t i = 0; i < t->kv_labels.n; i++)
		w = MAX(w, strlen(t->kv_labels.v[i]));
	for (size_t i = 0; i < t->kv_labels.n; i++)
		(void)fprintf(o->f, "%s:%*s %s\n", t->kv_labels.v[i],
			      (int)(w - strlen(t->kv_labels.v[i])), "", t->kv_values.v[i]);
	strv_clear(&t->kv_labels);
	strv_clear(&t->kv_values);
}

static void text_value(const struct out *o, const struct field *f, char *buf, size_t len)
{
	switch (f->type) {
	case F_STR:
		(void)snprintf(buf, len, "%s", f->v.s ? f->v.s : "-");
		break;
	case F_U64:
		(void)snprintf(buf, len, "%" PRIu64, f->v.u);
		break;
	case F_SIZE:
		(void)ctl_format_size(f->v.u, o->human, buf, len);
		break;
	case F_RATE:
		(void)ctl_format_rate(f->v.d, o->human, buf, len);
		break;
	case F_DURATION:
		(void)ctl_format_duration(f->v.u, o->human, buf, len);
		break;
	case F_BOOL:
		(void)snprintf(buf, len, "%s", f->v.b ? "yes" : "no");
		break;
	case F_RUNS:
		(void)ctl_format_runs(f->v.runs.v, f->v.runs.n, buf, len);
		if (!*buf)
			(void)snprintf(buf, len, "-");
		break;
	}
}

static void text_field(struct out *o, const struct field *f)
{
	struct text *t = o->priv;
	char buf[256];

	if (f->detail)
		return;
	text_value(o, f, buf, sizeof(buf));
	if (!t->in_table) {
		text_push(t, &t->kv_labels, f->label);
		text_push(t, &t->kv_values, buf);
		return;
	}
	if (t->rows == 0) {
		char hdr[64];
		size_t i;
		int r = PMEMZ_GROW(t->right, &t->cap_right, t->headers.n + 1);

		if (r < 0) {
			t->err = r;
			return;
		}
		t->right[t->headers.n] = f->type != F_STR && f->type != F_BOOL && f->type != F_RUNS;
		for (i = 0; f->label[i] && i + 1 < sizeof(hdr); i++)
			hdr[i] = (char)toupper((unsigned char)f->label[i]);
		hdr[i] = '\0';
		text_push(t, &t->headers, hdr);
	}
	text_push(t, &t->cells, buf);
	t->row_cells++;
}

static void text_object_begin(struct out *o, const char *key)
{
	struct text *t = o->priv;

	t->depth++;
}

static void text_object_end(struct out *o)
{
	struct text *t = o->priv;

	text_flush_kv(o);
	t->depth--;
}

static void text_list_begin(struct out *o, const char *key, const char *empty_text)
{
	struct text *t = o->priv;

	text_flush_kv(o);
	t->in_table = true;
	t->empty_text = empty_text;
	t->rows = t->ncols = t->row_cells = 0;
}

static void text_item_begin(struct out *o)
{
	struct text *t = o->priv;

	t->row_cells = 0;
}

static void text_item_end(struct out *o)
{
	struct text *t = o->priv;

	if (t->rows == 0)
		t->ncols = t->row_cells;
	/* Every row must have the header's columns: pad a short one. */
	for (; t->row_cells < t->ncols; t->row_cells++)
		text_push(t, &t->cells, "");
	t->rows++;
}

static void text_list_end(struct out *o)
{
	struct text *t = o->priv;
	size_t *w;

	t->in_table = false;
	text_sep(o);
	if (t->rows == 0 || t->ncols == 0 || t->err) {
		if (!t->err)
			(void)fprintf(o->f, "%s\n", t->empty_text ? t->empty_text : "(none)");
		goto out;
	}
	w = calloc(t->ncols, sizeof(*w));
	if (!w) {
		t->err = -ENOMEM;
		goto out;
	}
	for (size_t c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->headers.v[c]);
		for (size_t r = 0; r < t->rows; r++)
			w[c] = MAX(w[c], strlen(t->cells.v[r * t->ncols + c]));
	}
	for (size_t r = 0; r <= t->rows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s =
			    r == 0 ? t->headers.v[c] : t->cells.v[(r - 1) * t->ncols + c];
			bool last = c + 1 == t->ncols;

			if (t->right[c])
				(void)fprintf(o->f, "%*s%s", (int)w[c], s, last ? "" : "  ");
			else if (last)
				(void)fputs(s, o->f);
			else
				(void)fprintf(o->f, "%-*s  ", (int)w[c], s);
		}
		(void)fputc('\n', o->f);
	}
	free(w);
out:
	strv_clear(&t->headers);
	strv_clear(&t->cells);
	t->rows = t->ncols = 0;
}

static int text_finish(struct out *o)
{
	struct text *t = o->priv;

	text_flush_kv(o);
	if (t->err)
		return t->err;
	return fflush(o->f) == 0 ? 0 : -errno;
}

static void text_free(struct out *o)
{
	struct text *t = o->priv;

	strv_free(&t->kv_labels);
	strv_free(&t->kv_values);
	strv_free(&t->headers);
	strv_free(&t->cells);
	free(t->right);
	free(t);
}

static int text_init(struct out *o)
{
	o->priv = calloc(1, sizeof(struct text));
	return o->priv ? 0 : -ENOMEM;
}

static void text_block(struct out *o, const char *text)
{
	size_t n = strlen(text);

	text_flush_kv(o);
	text_sep(o);
	(void)fputs(text, o->f);
	if (n && text[n - 1] != '\n')
		(void)fputc('\n', o->f);
}

const struct out_ops out_text_ops = {
    .name = "text",
    .init = text_init,
    .object_begin = text_object_begin,
    .object_end = text_object_end,
    .list_begin = text_list_begin,
    .list_end = text_list_end,
    .item_begin = text_item_begin,
    .item_end = text_item_end,
    .field = text_field,
    .finish = text_finish,
    .free = text_free,
    .block = text_block,
};

/* ---- JSON ------------------------------------------------------------- */

struct json {
	int err;
	int depth;
	struct json_object *stack[MAX_DEPTH];
};

/* v NULL is JSON null when allowed, else an allocation failure. */
static void json_add_v(struct out *o, const char *key, struct json_object *v, bool null_ok)
{
	struct json *j = o->priv;
	struct json_object *top = j->stack[j->depth - 1];

	if (!v && !null_ok) {
		j->err = -ENOMEM;
		return;
	}
	if (json_object_is_type(top, json_type_array))
		(void)json_object_array_add(top, v);
	else
		(void)json_object_object_add(top, key, v);
}

static void json_add(struct out *o, const char *key, struct json_object *v)
{
	json_add_v(o, key, v, false);
}

static void json_push(struct out *o, const char *key, struct json_object *v)
{
	struct json *j = o->priv;

	if (j->depth >= MAX_DEPTH || !v) {
		j->err = v ? -E2BIG : -ENOMEM;
		json_object_put(v);
		return;
	}
	json_add(o, key, json_object_get(v));
	j->stack[j->depth++] = v;
}

static void json_pop(struct out *o)
{
	struct json *j = o->priv;

	if (j->depth > 1)
		json_object_put(j->stack[--j->depth]);
}

static void json_object_begin_(struct out *o, const char *key)
{
	json_push(o, key, json_object_new_object());
}

static void json_list_begin(struct out *o, const char *key, const char *empty_text)
{
	json_push(o, key, json_object_new_array());
}

static void json_item_begin(struct out *o)
{
	json_push(o, NULL, json_object_new_object());
}

static void json_field(struct out *o, const struct field *f)
{
	struct json_object *v = NULL;

	switch (f->type) {
	case F_STR:
		if (!f->v.s) {
			json_add_v(o, f->key, NULL, true);
			return;
		}
		v = json_object_new_string(f->v.s);
		break;
	case F_U64:
	case F_SIZE:
	case F_DURATION:
		v = json_object_new_uint64(f->v.u);
		break;
	case F_RATE: /* whole bytes per second */
		v = json_object_new_uint64(f->v.d > 0 && f->v.d < 1.8e19 ? (uint64_t)(f->v.d + 0.5)
									 : 0);
		break;
	case F_BOOL:
		v = json_object_new_boolean(f->v.b);
		break;
	case F_RUNS:
		v = json_object_new_array();
		for (size_t i = 0; v && i < f->v.runs.n; i++) {
			struct json_object *run = json_object_new_object();

			if (!run) {
				json_object_put(v);
				v = NULL;
				break;
			}
			(void)json_object_object_add(run, "first",
						     json_object_new_uint64(f->v.runs.v[i].first));
			(void)json_object_object_add(run, "count",
						     json_object_new_uint64(f->v.runs.v[i].count));
			(void)json_object_array_add(v, run);
		}
		break;
	}
	json_add(o, f->key, v);
}

static int json_finish(struct out *o)
{
	struct json *j = o->priv;
	const char *s;

	if (j->err)
		return j->err;
	s = json_object_to_json_string_ext(j->stack[0], JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_SPACED |
							    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return -ENOMEM;
	(void)fprintf(o->f, "%s\n", s);
	return fflush(o->f) == 0 ? 0 : -errno;
}

static void json_free_(struct out *o)
{
	struct json *j = o->priv;

	while (j->depth > 1)
		json_pop(o);
	json_object_put(j->stack[0]);
	free(j);
}

static int json_init(struct out *o)
{
	struct json *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->stack[0] = json_object_new_object();
	if (!j->stack[0]) {
		free(j);
		return -ENOMEM;
	}
	j->depth = 1;
	o->priv = j;
	return 0;
}

static void json_block(struct out *o, const char *text)
{
	(void)o;
	(void)text;
}

const struct out_ops out_json_ops = {
    .name = "json",
    .init = json_init,
    .object_begin = json_object_begin_,
    .object_end = json_pop,
    .list_begin = json_list_begin,
    .list_end = json_pop,
    .item_begin = json_item_begin,
    .item_end = json_pop,
    .field = json_field,
    .finish = json_finish,
    .free = json_free_,
    .block = json_block,
};

/* ---- common ----------------------------------------------------------- */

int out_new(const struct out_ops *ops, FILE *f, bool human, struct out **out)
{
	struct out *o = calloc(1, sizeof(*o));
	int r;

	if (!o)
		return -ENOMEM;
	o->ops = ops;
	o->f = f;
	o->human = human;
	r = ops->init(o);
	if (r < 0) {
		free(o);
		return r;
	}
	*out = o;
	return 0;
}

/* A failure of pmemzctl's own, which pmemz_errormsg() cannot know; NULL: the library's. */
static const char *ctl_error;

int ctl_oom(void)
{
	ctl_error = "out of memory";
	return -ENOMEM;
}

int ctl_fail(void)
{
	(void)fprintf(stderr, "pmemzctl: %s\n", ctl_error ? ctl_error : pmemz_errormsg());
	ctl_error = NULL;
	return CTL_EXIT_FAIL;
}

const char *ctl_region_state(const struct pmemz_stat *s, size_t i)
{
	const char *st = pmemz_stat_region_str(s, i, PMEMZ_RS_STATE);

	return st && *st ? st : "online";
}

uint64_t ctl_stat_u64(const struct pmemz_stat *s, size_t i, enum pmemz_region_stat_key k)
{
	uint64_t v = 0;

	return pmemz_stat_region_u64(s, i, k, &v) == 0 ? v : 0;
}

void out_free(struct out *o)
{
	if (!o)
		return;
	o->ops->free(o);
	free(o);
}
