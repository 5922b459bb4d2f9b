/* SPDX-License-Identifier: MIT */
/*
 * pmemz-bench-json-check [--first-touch|--wake-stall] FILE: exit 0 when FILE
 * has what docs/PERFORMANCE.md's renderer (scripts/perf-table) reads.
 *   (default)      a pmemz-bench report: "meta" with the strings "date",
 *                  "commit" and "cpu" (every figure is quoted with them),
 *                  "rows" (a non-empty array of objects with a scenario and
 *                  a name) and "targets" (objects with a target, a value, a
 *                  threshold and met)
 *   --first-touch  pmemz-first-touch --json: first_us, warm_us, idle_us, line
 *   --wake-stall   pmemz-wake-stall --json: two runs (without and with the
 *                  mapping), each with mapped_mib, p50_us, p99_us, max_ms,
 *                  over and requests
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

static int fail(const char *path, const char *why)
{
	fprintf(stderr, "%s: %s\n", path, why);
	return EXIT_FAILURE;
}

/* true when o has every key of keys (NULL-terminated) with type t. */
static bool has_all(json_object *o, const char *const *keys, json_type t)
{
	json_object *v;

	for (; *keys; keys++)
		if (!json_object_object_get_ex(o, *keys, &v) ||
		    !(json_object_is_type(v, t) ||
		      (t == json_type_double && json_object_is_type(v, json_type_int))))
			return false;
	return true;
}

/* o[key] when it is an array of at least min objects each with keys; else NULL. */
static json_object *objects(json_object *o, const char *key, size_t min,
			    const char *const *keys, json_type t)
{
	json_object *a;

	if (!json_object_object_get_ex(o, key, &a) || !json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) < min)
		return NULL;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *x = json_object_array_get_idx(a, i);

		if (!json_object_is_type(x, json_type_object) || !has_all(x, keys, t))
			return NULL;
	}
	return a;
}

static int check_report(const char *path, json_object *root)
{
	static const char *const meta_keys[] = {"date", "commit", "cpu", NULL};
	static const char *const row_keys[] = {"scenario", "name", NULL};
	static const char *const target_text[] = {"target", NULL};
	static const char *const target_num[] = {"value", "threshold", NULL};
	json_object *meta, *rows, *targets;

	if (!json_object_object_get_ex(root, "meta", &meta) ||
	    !json_object_is_type(meta, json_type_object))
		return fail(path, "no \"meta\" object");
	if (!has_all(meta, meta_keys, json_type_string))
		return fail(path, "\"meta\" lacks one of date, commit, cpu");
	rows = objects(root, "rows", 1, row_keys, json_type_string);
	if (!rows)
		return fail(path, "no \"rows\", or a row without scenario or name");
	targets = objects(root, "targets", 0, target_text, json_type_string);
	if (!targets || !objects(root, "targets", 0, target_num, json_type_double))
		return fail(path, "no \"targets\", or a target without target, value or threshold");
	printf("%s: valid (%zu rows, %zu targets)\n", path, json_object_array_length(rows),
	       json_object_array_length(targets));
	return EXIT_SUCCESS;
}

static int check_first_touch(const char *path, json_object *root)
{
	static const char *const num[] = {"first_us", "warm_us", "idle_us", NULL};
	static const char *const text[] = {"line", NULL};

	if (!has_all(root, num, json_type_double) || !has_all(root, text, json_type_string))
		return fail(path, "lacks one of first_us, warm_us, idle_us, line");
	printf("%s: valid\n", path);
	return EXIT_SUCCESS;
}

static int check_wake_stall(const char *path, json_object *root)
{
	static const char *const num[] = {"mapped_mib", "p50_us", "p99_us", "max_ms", "over",
					  "requests", NULL};

	if (!objects(root, "runs", 2, num, json_type_double))
		return fail(path, "no two \"runs\" with mapped_mib, p50_us, p99_us, max_ms, over, "
				  "requests");
	printf("%s: valid\n", path);
	return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	int (*check)(const char *, json_object *) = check_report;
	json_object *root;
	const char *path;
	int r;

	if (argc == 3 && strcmp(argv[1], "--first-touch") == 0)
		check = check_first_touch;
	else if (argc == 3 && strcmp(argv[1], "--wake-stall") == 0)
		check = check_wake_stall;
	else if (argc != 2) {
		fprintf(stderr, "usage: %s [--first-touch|--wake-stall] FILE\n", argv[0]);
		return 2;
	}
	path = argv[argc - 1];
	root = json_object_from_file(path);
	if (!root)
		return fail(path, json_util_get_last_err());
	r = check(path, root);
	json_object_put(root);
	return r;
}
