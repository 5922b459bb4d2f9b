# Soak: an hour of everything at once (scripts/soak, docs/RELIABILITY.md).
# The daemon under well-behaved tenants of several uids (soak-client),
# hostile ones (soak-hostile: the attack tests' clients), an admin, kill -9
# cycles and a truncated region; nothing may be lost, nothing may grow.
#
#   ctest -L soak                       the 2-minute version
#   ./scripts/soak --minutes 60         the real one
# pmemz_itest (raw.c, attack.c) comes from integration.cmake, read before
# this file (fragments are sorted).
if(NOT TARGET pmemzerod OR NOT TARGET pmemzclient OR NOT TARGET pmemzctl)
  message(STATUS "soak skipped: pmemzerod/pmemzclient/pmemzctl not defined")
  return()
endif()

set(_soak_dir ${PMEMZ_TEST_SRC}/soak)
# tag-pattern.c: the data the kill -9 test writes and checks, the same here.
add_executable(soak-client ${_soak_dir}/soak-client.c ${PMEMZ_TEST_SRC}/crash/tag-pattern.c)
target_include_directories(soak-client PRIVATE ${PROJECT_SOURCE_DIR}/client
  ${PMEMZ_TEST_SRC}/crash)
target_link_libraries(soak-client PRIVATE pmemzclient Threads::Threads)
add_executable(soak-hostile ${_soak_dir}/soak-hostile.c)
target_link_libraries(soak-hostile PRIVATE pmemz_itest)
add_dependencies(soak-client pmemzerod pmemzctl)

add_test(NAME soak COMMAND ${PROJECT_SOURCE_DIR}/scripts/soak --minutes 2
  --build ${CMAKE_BINARY_DIR} --out ${CMAKE_BINARY_DIR}/soak-ctest)
set_tests_properties(soak PROPERTIES LABELS "soak" TIMEOUT 900 SKIP_RETURN_CODE 77)
