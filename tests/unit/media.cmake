# The media module (common/media/, pmemzd_media): format helpers and the
# rules recovery and the checker share, tested on buffers in memory.  It
# links pmemzd_media alone: nothing in the module may need storage,
# logging or configuration.
add_executable(test-layout ${PMEMZ_TEST_SRC}/unit/test-layout.c)
target_link_libraries(test-layout PRIVATE pmemzd_media PkgConfig::CMOCKA)
add_test(NAME unit-layout COMMAND test-layout)
set_tests_properties(unit-layout PROPERTIES LABELS "unit" TIMEOUT 120)

# Damaged media vs. crash states (tests/unit/test-media.c): the on-media
# state encodings, a zeroed block of the tag table, single bit flips, and
# images taken at each drain of the commit and free protocols, recovered
# by the storage core and checked by the offline checker (pmemzd_check).
add_executable(test-media ${PMEMZ_TEST_SRC}/unit/test-media.c ${PMEMZ_TEST_SRC}/unit/media-fixture.c)
target_link_libraries(test-media PRIVATE pmemzd_check pmemzd_storage PkgConfig::CMOCKA
  Threads::Threads)
add_test(NAME unit-media COMMAND test-media)
add_test(NAME unit-media-cacheline COMMAND test-media)
set_tests_properties(unit-media unit-media-cacheline PROPERTIES LABELS "unit" TIMEOUT 120)
set_tests_properties(unit-media-cacheline
  PROPERTIES ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE")
