# The on-pmem disk format of nbdkit-pmemz-plugin (common/disk/disk-format.c).
if(NOT TARGET pmemzdisk)
  return()
endif()
add_executable(test-disk-format ${PMEMZ_TEST_SRC}/unit/test-disk-format.c)
target_link_libraries(test-disk-format PRIVATE pmemzdisk PkgConfig::CMOCKA)
add_test(NAME unit-disk-format COMMAND test-disk-format)
set_tests_properties(unit-disk-format PROPERTIES LABELS "unit;nbd" TIMEOUT 60)
