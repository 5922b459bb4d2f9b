/* SPDX-License-Identifier: MIT */
/* The on-pmem disk format of nbdkit-pmemz-plugin: names, tags, superblock. */
#include "disk-format.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pmemz_disk_name_valid(const char *name)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strlen(name);
	if (n == 0 || n > PMEMZ_DISK_NAME_MAX)
		return -EINVAL;
	/* "." and ".." would read as path components in unit and socket names */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return -EINVAL;
	}
	return 0;
}

int pmemz_disk_super_tag(char *buf, size_t len, const char *disk)
{
	int n;

	if (pmemz_disk_name_valid(disk) < 0)
		return -EINVAL;
	n = snprintf(buf, len, PMEMZ_DISK_TAG_PREFIX "%s", disk);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int pmemz_disk_chunk_prefix(char *buf, size_t len, const char *disk)
{
	int n;

	if (pmemz_disk_name_valid(disk) < 0)
		return -EINVAL;
	n = snprintf(buf, len, PMEMZ_DISK_TAG_PREFIX "%s/", disk);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int pmemz_disk_chunk_tag(char *buf, size_t len, const char *disk, uint64_t index)
{
	int n;

	if (pmemz_disk_name_valid(disk) < 0 || index >= PMEMZ_DISK_MAX_CHUNKS)
		return -EINVAL;
	n = snprintf(buf, len, PMEMZ_DISK_TAG_PREFIX "%s/%llu", disk, (unsigned long long)index);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* "nbd/NAME/KIND/SEQ": an ahead or a pool tag. */
static int seq_tag(char *buf, size_t len, const char *disk, const char *kind, uint64_t seq)
{
	int n;

	if (pmemz_disk_name_valid(disk) < 0 || seq > PMEMZ_DISK_AHEAD_SEQ_MAX)
		return -EINVAL;
	n = snprintf(buf, len, PMEMZ_DISK_TAG_PREFIX "%s/%s/%llu", disk, kind,
		     (unsigned long long)seq);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int pmemz_disk_ahead_tag(char *buf, size_t len, const char *disk, uint64_t seq)
{
	return seq_tag(buf, len, disk, "ahead", seq);
}

int pmemz_disk_pool_tag(char *buf, size_t len, const char *disk, uint64_t seq)
{
	return seq_tag(buf, len, disk, "pool", seq);
}

/* Canonical decimal (no sign, no leading zero unless "0") up to max. */
static int parse_decimal(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0' || (s[0] == '0' && s[1] != '\0'))
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_index(const char *s, uint64_t *out)
{
	return parse_decimal(s, PMEMZ_DISK_MAX_CHUNKS - 1, out);
}

int pmemz_disk_tag_parse(const char *tag, char *disk, uint64_t *index)
{
	const char *name, *slash;
	size_t n;

	if (!tag || strncmp(tag, PMEMZ_DISK_TAG_PREFIX, strlen(PMEMZ_DISK_TAG_PREFIX)) != 0)
		return -EINVAL;
	name = tag + strlen(PMEMZ_DISK_TAG_PREFIX);
	slash = strchr(name, '/');
	n = slash ? (size_t)(slash - name) : strlen(name);
	if (n == 0 || n > PMEMZ_DISK_NAME_MAX)
		return -EINVAL;
	char buf[PMEMZ_DISK_NAME_MAX + 1];
	memcpy(buf, name, n);
	buf[n] = '\0';
	if (pmemz_disk_name_valid(buf) < 0)
		return -EINVAL;
	if (!slash) {
		memcpy(disk, buf, n + 1);
		return PMEMZ_DISK_TAG_SUPER;
	}
	uint64_t i;
	int kind = PMEMZ_DISK_TAG_CHUNK;
	if (strncmp(slash + 1, "ahead/", 6) == 0) {
		if (parse_decimal(slash + 7, PMEMZ_DISK_AHEAD_SEQ_MAX, &i) < 0)
			return -EINVAL;
		kind = PMEMZ_DISK_TAG_AHEAD;
	} else if (strncmp(slash + 1, "pool/", 5) == 0) {
		if (parse_decimal(slash + 6, PMEMZ_DISK_AHEAD_SEQ_MAX, &i) < 0)
			return -EINVAL;
		kind = PMEMZ_DISK_TAG_POOL;
	} else if (parse_index(slash + 1, &i) < 0) {
		return -EINVAL;
	}
	memcpy(disk, buf, n + 1);
	if (index)
		*index = i;
	return kind;
}

int pmemz_disk_size_valid(uint64_t size, uint64_t chunk_size, const char **why)
{
	if (chunk_size == 0 || chunk_size % 4096 != 0) {
		*why = "the chunk size is not a multiple of 4 KiB";
		return -EINVAL;
	}
	if (size == 0) {
		*why = "the size is 0";
		return -EINVAL;
	}
	if (pmemz_disk_chunks(size, chunk_size) > PMEMZ_DISK_MAX_CHUNKS) {
		*why = "the size needs more chunks than the chunk map holds "
		       "(at most 16777216 chunks of the region's extent size)";
		return -EFBIG;
	}
	return 0;
}

static uint64_t fnv_bytes(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * FNV-1a, 64 bits: catches a stray or torn superblock, not an attacker (a
 * tenant may write its own extents anyway).
 */
uint64_t pmemz_disk_super_checksum(const struct pmemz_disk_super *sb)
{
	const unsigned char *p = (const unsigned char *)sb;
	size_t sum = offsetof(struct pmemz_disk_super, checksum);
	size_t after = offsetof(struct pmemz_disk_super, compat);
	uint64_t h = fnv_bytes(0xcbf29ce484222325ull, p, sum);

	if (sb->version == PMEMZ_DISK_VERSION_1)
		return h;
	return fnv_bytes(h, p + after, sizeof(*sb) - after);
}

void pmemz_disk_super_init(struct pmemz_disk_super *sb, const char *disk, uint64_t size,
			   uint64_t chunk_size, uint64_t created, const uint8_t uuid[16],
			   uint64_t journal_slots)
{
	memset(sb, 0, sizeof(*sb));
	memcpy(sb->magic, PMEMZ_DISK_MAGIC, sizeof(sb->magic));
	sb->version = PMEMZ_DISK_VERSION;
	sb->super_size = sizeof(*sb);
	sb->chunk_size = chunk_size;
	sb->created = created;
	memcpy(sb->uuid, uuid, sizeof(sb->uuid));
	(void)snprintf(sb->name, sizeof(sb->name), "%s", disk);
	sb->size = size;
	sb->journal_slots = journal_slots;
	if (journal_slots)
		sb->incompat = PMEMZ_DISK_INCOMPAT_JOURNAL | PMEMZ_DISK_INCOMPAT_POOL;
	sb->checksum = pmemz_disk_super_checksum(sb);
}

/* A version this build reads, its own size, its checksum right. */
static bool super_sound(const struct pmemz_disk_super *sb)
{
	if (sb->version == PMEMZ_DISK_VERSION_1 && sb->super_size != PMEMZ_DISK_SUPER_SIZE_1)
		return false;
	if (sb->version == PMEMZ_DISK_VERSION && sb->super_size != PMEMZ_DISK_SUPER_SIZE_2)
		return false;
	if (sb->version != PMEMZ_DISK_VERSION_1 && sb->version != PMEMZ_DISK_VERSION)
		return false;
	return sb->checksum == pmemz_disk_super_checksum(sb);
}

/* A version 2 journal that fits its extent, and the bits that say it is there. */
static bool journal_sound(const struct pmemz_disk_super *sb, uint64_t chunk_size)
{
	bool journal = sb->incompat & PMEMZ_DISK_INCOMPAT_JOURNAL;

	if (sb->version == PMEMZ_DISK_VERSION_1)
		return true;
	if ((sb->incompat & PMEMZ_DISK_INCOMPAT_POOL) && !journal)
		return false; /* the pools' extents are mapped by the journal alone */
	if (!journal)
		return sb->journal_slots == 0;
	return sb->journal_slots >= PMEMZ_DISK_JOURNAL_SLOTS_MIN &&
	       sb->journal_slots <= pmemz_disk_journal_slots(chunk_size);
}

int pmemz_disk_super_check(const struct pmemz_disk_super *sb, const char *disk, uint64_t chunk_size,
			   const char **why)
{
	if (memcmp(sb->magic, PMEMZ_DISK_MAGIC, sizeof(sb->magic)) != 0) {
		*why = "no disk superblock (bad magic)";
		return -EUCLEAN;
	}
	if (sb->version > PMEMZ_DISK_VERSION) {
		*why = "the disk was made by a later version of the plugin";
		return -EPROTO;
	}
	if (!super_sound(sb)) {
		*why = "the disk superblock is damaged (checksum)";
		return -EUCLEAN;
	}
	if (memchr(sb->name, '\0', sizeof(sb->name)) == NULL || strcmp(sb->name, disk) != 0) {
		*why = "the superblock belongs to another disk (name)";
		return -EUCLEAN;
	}
	if (sb->version == PMEMZ_DISK_VERSION && (sb->incompat & ~PMEMZ_DISK_INCOMPAT_KNOWN)) {
		*why = "the disk uses incompat features of a later version of the plugin";
		return -EPROTO;
	}
	if (sb->chunk_size != chunk_size) {
		*why = "the disk was made with another chunk size than the region's extent size";
		return -EINVAL;
	}
	if (!journal_sound(sb, chunk_size)) {
		*why = "the disk superblock is damaged (its journal does not fit its features)";
		return -EUCLEAN;
	}
	return pmemz_disk_size_valid(sb->size, chunk_size, why) < 0 ? -EINVAL : 0;
}

void pmemz_disk_super_features(const struct pmemz_disk_super *sb, struct pmemz_disk_features *f)
{
	if (sb->version == PMEMZ_DISK_VERSION_1) {
		/* what the plugin that wrote it used: pool tags, and the journal where it fits */
		f->journal_slots = pmemz_disk_journal_slots(sb->chunk_size);
		f->compat = f->ro_compat = 0;
		f->incompat =
		    PMEMZ_DISK_INCOMPAT_POOL | (f->journal_slots ? PMEMZ_DISK_INCOMPAT_JOURNAL : 0);
		return;
	}
	f->compat = sb->compat;
	f->ro_compat = sb->ro_compat;
	f->incompat = sb->incompat;
	f->journal_slots = sb->journal_slots;
}

void pmemz_disk_super_unknown(const struct pmemz_disk_features *f,
			      struct pmemz_disk_features *unknown)
{
	unknown->compat = f->compat & ~PMEMZ_DISK_COMPAT_KNOWN;
	unknown->ro_compat = f->ro_compat & ~PMEMZ_DISK_RO_COMPAT_KNOWN;
	unknown->incompat = f->incompat & ~PMEMZ_DISK_INCOMPAT_KNOWN;
	unknown->journal_slots = 0;
}

size_t pmemz_disk_journal_slots(uint64_t chunk_size)
{
	uint64_t n;

	if (chunk_size <= PMEMZ_DISK_JOURNAL_RECORDS)
		return 0;
	n = (chunk_size - PMEMZ_DISK_JOURNAL_RECORDS) / sizeof(struct pmemz_disk_jrec);
	return n < PMEMZ_DISK_JOURNAL_MIN_SLOTS ? 0 : (size_t)n;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * FNV-1a over the uuid and the fields: catches a torn record (the crash
 * came before the write's drain) and one of an earlier disk in the same
 * extent, not an attacker (a tenant writes its own disk anyway).
 */
uint64_t pmemz_disk_jrec_check(const uint8_t uuid[16], uint64_t seq, uint64_t chunk,
			       uint64_t extent)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < 16; i++) {
		h ^= uuid[i];
		h *= 0x100000001b3ull;
	}
	h = fnv_u64(h, seq);
	h = fnv_u64(h, chunk);
	h = fnv_u64(h, extent);
	return h ? h : 1; /* never 0: a zeroed slot is no record */
}

void pmemz_disk_jrec_make(struct pmemz_disk_jrec *rec, const uint8_t uuid[16], uint64_t seq,
			  uint64_t chunk, uint64_t extent)
{
	rec->seq = seq;
	rec->chunk = chunk;
	rec->extent = extent;
	rec->check = pmemz_disk_jrec_check(uuid, seq, chunk, extent);
}

bool pmemz_disk_jrec_valid(const struct pmemz_disk_jrec *rec, const uint8_t uuid[16], uint64_t base,
			   size_t slot, size_t slots, uint64_t nchunks)
{
	if (!slots || rec->seq < base || rec->seq % slots != slot || rec->chunk >= nchunks)
		return false;
	return rec->check == pmemz_disk_jrec_check(uuid, rec->seq, rec->chunk, rec->extent);
}

static int by_chunk_latest(const void *a, const void *b)
{
	const struct pmemz_disk_jrec *x = a, *y = b;

	if (x->chunk != y->chunk)
		return x->chunk < y->chunk ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

static int by_extent_latest(const void *a, const void *b)
{
	const struct pmemz_disk_jrec *x = a, *y = b;

	if (x->extent != y->extent)
		return x->extent < y->extent ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/* The first of each run of equal keys (v sorted by key, then latest first). */
static size_t first_of_each(struct pmemz_disk_jrec *v, size_t n, bool by_chunk)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t key = by_chunk ? v[i].chunk : v[i].extent;

		if (k && key == (by_chunk ? v[k - 1].chunk : v[k - 1].extent))
			continue;
		v[k++] = v[i];
	}
	return k;
}

size_t pmemz_disk_journal_latest(struct pmemz_disk_jrec *v, size_t n)
{
	qsort(v, n, sizeof(*v), by_chunk_latest);
	n = first_of_each(v, n, true);
	qsort(v, n, sizeof(*v), by_extent_latest);
	n = first_of_each(v, n, false);
	qsort(v, n, sizeof(*v), by_chunk_latest);
	return n;
}
