# Server-side unit tests: framing and the lease table.
add_executable(test-frame ${PMEMZ_TEST_SRC}/unit/test-frame.c)
target_link_libraries(test-frame PRIVATE pmemzproto PkgConfig::CMOCKA)
add_test(NAME unit-frame COMMAND test-frame)

# lease.c alone: no storage, no event loop.
add_executable(test-lease ${PMEMZ_TEST_SRC}/unit/test-lease.c
  ${PROJECT_SOURCE_DIR}/daemon/server/lease.c)
target_include_directories(test-lease PRIVATE ${PROJECT_SOURCE_DIR}/daemon/server
  ${PROJECT_SOURCE_DIR}/daemon/storage ${PROJECT_SOURCE_DIR}/common/media
  ${PROJECT_SOURCE_DIR}/common)
target_link_libraries(test-lease PRIVATE pmemzd_conf PkgConfig::CMOCKA)
add_test(NAME unit-lease COMMAND test-lease)

set_tests_properties(unit-frame unit-lease PROPERTIES LABELS "unit" TIMEOUT 60)

# The server end to end in one process over an in-memory fake of the
# storage core: fake-region.c implements daemon/storage/region.h, and the
# server library itself does not link pmemzd_storage, so this links the
# very library pmemzerod runs, against the fake.
add_executable(test-server ${PMEMZ_TEST_SRC}/unit/test-server.c
  ${PMEMZ_TEST_SRC}/unit/fake-region.c)
target_include_directories(test-server PRIVATE ${PMEMZ_TEST_SRC}/unit)
target_link_libraries(test-server PRIVATE pmemzd_server PkgConfig::CMOCKA)
# The test fails a reply frame's allocation (__wrap_calloc in test-server.c).
target_link_options(test-server PRIVATE "LINKER:--wrap=calloc")
add_test(NAME unit-server COMMAND test-server)
set_tests_properties(unit-server PROPERTIES LABELS "unit" TIMEOUT 120)

# heap.c alone: the trim of a heap a burst left free.
add_executable(test-heap ${PMEMZ_TEST_SRC}/unit/test-heap.c
  ${PROJECT_SOURCE_DIR}/daemon/server/heap.c)
target_include_directories(test-heap PRIVATE ${PROJECT_SOURCE_DIR}/daemon/server)
target_link_libraries(test-heap PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit-heap COMMAND test-heap)
set_tests_properties(unit-heap PROPERTIES LABELS "unit" TIMEOUT 60 SKIP_RETURN_CODE 77)
