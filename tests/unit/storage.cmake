# Storage core: format, regions, recovery, zeroer (daemon/storage/, pmemzd_storage).
# The region tests run on files in /dev/shm, once with libpmem2's default
# granularity for files (page: msync) and once forced to the cache-line path
# (CLWB/CLFLUSHOPT + SFENCE, as on device-DAX).
add_executable(test-region ${PMEMZ_TEST_SRC}/unit/test-region.c)
target_link_libraries(test-region PRIVATE pmemzd_storage PkgConfig::CMOCKA)
add_test(NAME unit-region COMMAND test-region)
add_test(NAME unit-region-cacheline COMMAND test-region)

set_tests_properties(unit-region unit-region-cacheline
  PROPERTIES LABELS "unit" TIMEOUT 120)
set_tests_properties(unit-region-cacheline
  PROPERTIES ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE")

# MOVE: the batch protocol, its refusals, crashes before and after the
# decision, hostile links, and the checker on every image.
add_executable(test-region-move ${PMEMZ_TEST_SRC}/unit/test-region-move.c)
target_link_libraries(test-region-move PRIVATE pmemzd_storage pmemzd_check PkgConfig::CMOCKA)
add_test(NAME unit-region-move COMMAND test-region-move)
add_test(NAME unit-region-move-cacheline COMMAND test-region-move)
set_tests_properties(unit-region-move unit-region-move-cacheline
  PROPERTIES LABELS "unit" TIMEOUT 120)
set_tests_properties(unit-region-move-cacheline
  PROPERTIES ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE")

# pstore's fault containment and release-build store checks: a region file
# truncated under the daemon fails that mapping, not the process.
add_executable(test-pstore ${PMEMZ_TEST_SRC}/unit/test-pstore.c)
target_link_libraries(test-pstore PRIVATE pmemzd_storage PkgConfig::CMOCKA Threads::Threads)
add_test(NAME unit-pstore COMMAND test-pstore)
add_test(NAME unit-pstore-cacheline COMMAND test-pstore)
set_tests_properties(unit-pstore unit-pstore-cacheline PROPERTIES LABELS "unit" TIMEOUT 60)
set_tests_properties(unit-pstore-cacheline
  PROPERTIES ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE")

# The adaptive zeroing policy's decisions, on a test clock.
add_executable(test-zeroer-policy ${PMEMZ_TEST_SRC}/unit/test-zeroer-policy.c)
target_link_libraries(test-zeroer-policy PRIVATE pmemzd_storage PkgConfig::CMOCKA)
add_test(NAME unit-zeroer-policy COMMAND test-zeroer-policy)
set_tests_properties(unit-zeroer-policy PROPERTIES LABELS "unit" TIMEOUT 60)
