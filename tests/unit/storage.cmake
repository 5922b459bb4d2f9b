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
