/* SPDX-License-Identifier: MIT */
/*
 * pmemz-example: the libpmemzclient API on one page.
 *
 *   pmemz-example [SOCKET [REGION]]
 *
 * Connects to pmemzerod, maps a region, leases zeroed extents, checks they
 * read zero, writes and persists a message, commits it under a tag, finds
 * it again by tag (as the application would after a restart) and frees it.
 *
 * Build it against an installed library with
 *   cc -o pmemz-example pmemz-example.c $(pkg-config --cflags --libs libpmemzclient)
 */
#include <libpmemzclient.h>
#include <stdio.h>
#include <string.h>

#define TAG "pmemz-example"

static int fail(const char *what, int err)
{
	/* Every call returns 0 or -errno; pmemz_errormsg() says what happened. */
	fprintf(stderr, "pmemz-example: %s failed (%s): %s\n", what, strerror(-err),
		pmemz_errormsg());
	return 1;
}

int main(int argc, char **argv)
{
	const char *socket_path =
	    argc > 1 ? argv[1] : NULL; /* NULL: $PMEMZ_SOCKET or the default */
	const char *region_name = argc > 2 ? argv[2] : "default";
	static const char message[] = "hello from pmemz-example";
	struct pmemz_client *client;
	struct pmemz_region *region;
	struct pmemz_alloc *alloc;
	size_t len, nonzero = 0;
	char *p;
	int r;

	/* 1. Connect.  One client handle may be shared by many threads. */
	r = pmemz_client_new(socket_path, &client);
	if (r < 0)
		return fail("pmemz_client_new", r);

	/* 2. Open the region: the daemon passes its fd, we map all of it. */
	r = pmemz_region_open(client, region_name, &region);
	if (r < 0)
		return fail("pmemz_region_open", r);
	printf("region '%s': %zu bytes mapped at %p, extents of %zu bytes\n", region_name,
	       pmemz_region_size(region), pmemz_region_address(region),
	       pmemz_region_extent_size(region));

	/* A tag left over by an interrupted run would make the commit fail: free it. */
	if (pmemz_alloc_open(region, TAG, &alloc) == 0)
		(void)pmemz_alloc_release(alloc);

	/* 3. Lease space; it is rounded up to whole extents, zeroed and durable already. */
	r = pmemz_alloc_new(region, 2 * pmemz_region_extent_size(region), 0, &alloc);
	if (r < 0)
		return fail("pmemz_alloc_new", r);
	printf("leased %zu bytes in %zu range(s)\n", pmemz_alloc_size(alloc),
	       pmemz_alloc_count(alloc));

	/* 4. Every byte reads zero: nobody else's data can leak to us. */
	for (size_t i = 0; i < pmemz_alloc_count(alloc); i++) {
		p = pmemz_alloc_range(alloc, i, &len);
		for (size_t k = 0; k < len; k++)
			nonzero += p[k] != 0;
	}
	printf("%zu non-zero bytes\n", nonzero);

	/* 5. Write through our own mapping and make it durable (no daemon call). */
	p = pmemz_alloc_range(alloc, 0, &len);
	memcpy(p, message, sizeof(message));
	r = pmemz_persist(region, p, sizeof(message));
	if (r < 0)
		return fail("pmemz_persist", r);

	/* 6. Commit: the extents now belong to the tag and survive crashes and restarts. */
	r = pmemz_alloc_commit(alloc, TAG, 0);
	if (r < 0)
		return fail("pmemz_alloc_commit", r);
	pmemz_alloc_close(alloc); /* drops the handle; the committed tag stays */

	/* 7. After a restart an application finds its data again by tag. */
	r = pmemz_alloc_open(region, TAG, &alloc);
	if (r < 0)
		return fail("pmemz_alloc_open", r);
	p = pmemz_alloc_range(alloc, 0, &len);
	printf("tag '%s' holds %zu bytes: \"%s\"\n", TAG, pmemz_alloc_size(alloc), p);
	if (strcmp(p, message) != 0) {
		fprintf(stderr, "pmemz-example: the data did not come back\n");
		return 1;
	}

	/* 8. Release frees the space (the daemon zeroes it again) and the handle. */
	r = pmemz_alloc_release(alloc);
	if (r < 0)
		return fail("pmemz_alloc_release", r);

	pmemz_region_close(region);
	pmemz_client_free(client);
	printf("done\n");
	return 0;
}
