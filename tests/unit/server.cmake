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

# The server end to end in one process over an in-memory fake of the
# storage core (fake-region.c implements daemon/region.h).
set(_srv ${PROJECT_SOURCE_DIR}/daemon)
add_executable(test-server ${PMEMZ_TEST_SRC}/unit/test-server.c
  ${PMEMZ_TEST_SRC}/unit/fake-region.c
  ${_srv}/manager.c ${_srv}/listener.c ${_srv}/connection.c ${_srv}/lease.c
  ${_srv}/notify.c ${_srv}/rpc.c ${_srv}/rpc-hello.c ${_srv}/rpc-open-region.c
  ${_srv}/rpc-allocate.c ${_srv}/rpc-commit.c ${_srv}/rpc-free.c ${_srv}/rpc-flush.c
  ${_srv}/rpc-list.c ${_srv}/rpc-stat.c ${_srv}/rpc-noop.c
  ${_srv}/rpc-map.c
  ${_srv}/rpc-zeroer.c)
target_include_directories(test-server PRIVATE ${_srv} ${PMEMZ_TEST_SRC}/unit)
target_link_libraries(test-server PRIVATE pmemzd_conf pmemzproto PkgConfig::LIBEVENT
  PkgConfig::LIBSYSTEMD PkgConfig::CMOCKA Threads::Threads)
add_test(NAME unit-server COMMAND test-server)
set_tests_properties(unit-server PROPERTIES LABELS "unit" TIMEOUT 120)
