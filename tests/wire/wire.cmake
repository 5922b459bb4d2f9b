# Clients and daemons of different releases, from frames recorded with an
# older release (tests/wire/README.md; tests/wire/record-baseline.sh
# records them, the test needs no older build): the older client's requests
# against this daemon, this library against the older daemon's replies.
#
#   ctest -L wire
if(NOT TARGET pmemzerod OR NOT TARGET pmemz_itest)
  message(STATUS "wire compatibility test skipped: pmemzerod or the integration harness missing")
  return()
endif()

add_executable(test-wire-compat ${PMEMZ_TEST_SRC}/wire/test-wire-compat.c
  ${PMEMZ_TEST_SRC}/wire/wire-workload.c ${PMEMZ_TEST_SRC}/unit/fake-daemon.c)
target_include_directories(test-wire-compat PRIVATE ${PMEMZ_TEST_SRC}/wire ${PMEMZ_TEST_SRC}/unit)
target_link_libraries(test-wire-compat PRIVATE pmemz_itest pmemzclient)
target_compile_definitions(test-wire-compat PRIVATE
  PMEMZ_WIRE_FRAMES_DIR="${PMEMZ_TEST_SRC}/wire/frames")
add_dependencies(test-wire-compat pmemzerod)
add_test(NAME wire-compat COMMAND test-wire-compat)
set_tests_properties(wire-compat PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "wire;compat")
