# Server-side unit tests: framing and the lease table.
add_executable(test-frame ${PMEMZ_TEST_SRC}/unit/test-frame.c)
target_link_libraries(test-frame PRIVATE pmemzproto PkgConfig::CMOCKA)
add_test(NAME unit-frame COMMAND test-frame)

# lease.c alone: no storage, no event loop.
add_executable(test-lease ${PMEMZ_TEST_SRC}/unit/test-lease.c ${PROJECT_SOURCE_DIR}/daemon/lease.c)
target_include_directories(test-lease PRIVATE ${PROJECT_SOURCE_DIR}/daemon
  ${PROJECT_SOURCE_DIR}/common)
target_link_libraries(test-lease PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit-lease COMMAND test-lease)

set_tests_properties(unit-frame unit-lease PROPERTIES LABELS "unit" TIMEOUT 60)
