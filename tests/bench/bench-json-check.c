/* SPDX-License-Identifier: MIT */
/*
 * pmemz-bench-json-check FILE: exit 0 when FILE is a pmemz-bench report,
 * i.e. valid JSON with "meta" (an object), "rows" (a non-empty array of
 * objects with a scenario and a name) and "targets" (an array).
 */
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

static int fail(const char *path, const char *why)
{
	fprintf(stderr, "%s: %s\n", path, why);
	return EXIT_FAILURE;
}

int main(int argc, char **argv)
{
	json_object *root, *meta, *rows, *targets;
	int r = EXIT_SUCCESS;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	root = json_object_from_file(argv[1]);
	if (!root)
		return fail(argv[1], json_util_get_last_err());
	if (!json_object_object_get_ex(root, "meta", &meta) ||
	    !json_object_is_type(meta, json_type_object))
		r = fail(argv[1], "no \"meta\" object");
	else if (!json_object_object_get_ex(root, "rows", &rows) ||
		 !json_object_is_type(rows, json_type_array) || json_object_array_length(rows) == 0)
		r = fail(argv[1], "no \"rows\" (or none)");
	else if (!json_object_object_get_ex(root, "targets", &targets) ||
		 !json_object_is_type(targets, json_type_array))
		r = fail(argv[1], "no \"targets\" array");
	else
		for (size_t i = 0; i < json_object_array_length(rows) && r == EXIT_SUCCESS; i++) {
			json_object *row = json_object_array_get_idx(rows, i), *v;

			if (!json_object_is_type(row, json_type_object) ||
			    !json_object_object_get_ex(row, "scenario", &v) ||
			    !json_object_object_get_ex(row, "name", &v))
				r = fail(argv[1], "a row without scenario or name");
		}
	if (r == EXIT_SUCCESS)
		printf("%s: valid (%zu rows, %zu targets)\n", argv[1],
		       json_object_array_length(rows), json_object_array_length(targets));
	json_object_put(root);
	return r;
}
