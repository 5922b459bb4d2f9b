# Damaged media vs. crash states (tests/unit/test-media.c): the on-media
# state encodings, a zeroed block of the tag table, single bit flips, and
# images taken at each drain of the commit and free protocols, recovered
# by the storage core and checked by the offline checker (pmemzd_check).
if(NOT TARGET pmemzd_check)
  return()
endif()

add_executable(test-media ${PMEMZ_TEST_SRC}/unit/test-media.c ${PMEMZ_TEST_SRC}/unit/media-fixture.c)
target_link_libraries(test-media PRIVATE pmemzd_check PkgConfig::CMOCKA Threads::Threads)
add_test(NAME unit-media COMMAND test-media)
add_test(NAME unit-media-cacheline COMMAND test-media)
set_tests_properties(unit-media unit-media-cacheline PROPERTIES LABELS "unit" TIMEOUT 120)
set_tests_properties(unit-media-cacheline
  PROPERTIES ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE")
