# Integration tests: the real pmemzerod binary on a private temporary socket
# and small file regions under /dev/shm, driven through libpmemzclient,
# raw protocol frames and pmemzctl.  Every test runs twice: with
# PMEM2_FORCE_GRANULARITY=CACHE_LINE (the NT-store + fence path) and with
# the default granularity of the mapping (PAGE on tmpfs: msync).
#
#   ctest -L integration            all of them
#   PMEMZ_ITEST_KEEP=1              keep the temp dirs (logs, regions)
#   PMEMZ_ITEST_VERBOSE=1           run the daemon with -v

if(NOT TARGET pmemzerod OR NOT TARGET pmemzclient)
  message(STATUS "integration tests skipped: targets pmemzerod/pmemzclient not defined yet")
  return()
endif()

set(_itest_dir ${PMEMZ_TEST_SRC}/integration)

add_library(pmemz_itest STATIC ${_itest_dir}/harness.c ${_itest_dir}/raw.c
  ${_itest_dir}/attack.c)
target_include_directories(pmemz_itest PUBLIC ${_itest_dir} ${PROJECT_SOURCE_DIR}/client)
target_link_libraries(pmemz_itest PUBLIC pmemzproto pmemzclient PkgConfig::CMOCKA
  Threads::Threads)
target_compile_definitions(pmemz_itest PRIVATE
  PMEMZ_DAEMON_PATH="$<TARGET_FILE:pmemzerod>")
if(TARGET pmemzctl)
  target_compile_definitions(pmemz_itest PRIVATE PMEMZ_CTL_PATH="$<TARGET_FILE:pmemzctl>")
endif()

# nbdkit (not instrumented) loads a sanitizer build's plugin only with the
# sanitizer's runtime preloaded: gcc's libasan.so or libtsan.so; without it
# (clang) the tests that run nbdkit skip.
set(PMEMZ_NBDKIT_PRELOAD "")
set(PMEMZ_NBDKIT_RUNNABLE ON)
if(PMEMZ_SANITIZER)
  if(PMEMZ_SANITIZER STREQUAL "thread")
    set(_runtime libtsan.so)
  else()
    set(_runtime libasan.so)
  endif()
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${_runtime}
    OUTPUT_VARIABLE PMEMZ_NBDKIT_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${PMEMZ_NBDKIT_PRELOAD}" OR NOT EXISTS "${PMEMZ_NBDKIT_PRELOAD}")
    set(PMEMZ_NBDKIT_PRELOAD "")
    set(PMEMZ_NBDKIT_RUNNABLE OFF)
  endif()
endif()

# name -> source; ctl (json-c), quota (json-c), metrics and bare need pmemzctl
set(_itests alloc zero kill isolation nospace robust startup concurrent systemd reconnect attack fragment
  claim tags batch move names)
if(TARGET pmemzctl)
  list(APPEND _itests ctl quota metrics bare policy disks)
else()
  message(STATUS "integration tests ctl, bare skipped: target pmemzctl not defined yet")
endif()

foreach(t ${_itests})
  add_executable(itest-${t} ${_itest_dir}/test-${t}.c)
  target_link_libraries(itest-${t} PRIVATE pmemz_itest)
  if(t STREQUAL "ctl" OR t STREQUAL "quota" OR t STREQUAL "policy")
    target_link_libraries(itest-${t} PRIVATE PkgConfig::JSONC)
  endif()
  if(t STREQUAL "ctl" OR t STREQUAL "bare" OR ((t STREQUAL "tags" OR t STREQUAL "move") AND
      TARGET pmemzctl))
    add_dependencies(itest-${t} pmemzctl)
  endif()
  if(t STREQUAL "disks")
    # the disk format of nbdkit-pmemz-plugin, to make disks' tags by hand
    target_link_libraries(itest-${t} PRIVATE PkgConfig::JSONC pmemzdisk)
    add_dependencies(itest-${t} pmemzctl)
    if(TARGET nbdkit-pmemz-plugin AND PMEMZ_NBDKIT_RUNNABLE)
      target_compile_definitions(itest-${t} PRIVATE
        PMEMZ_NBDKIT_PLUGIN="$<TARGET_FILE:nbdkit-pmemz-plugin>"
        PMEMZ_NBDKIT_PRELOAD="${PMEMZ_NBDKIT_PRELOAD}")
      add_dependencies(itest-${t} nbdkit-pmemz-plugin)
    endif()
  endif()
  if(t STREQUAL "metrics")
    # check-metrics.py is run from the source tree.
    target_compile_definitions(itest-${t} PRIVATE PMEMZ_TEST_SRC_DIR="${PMEMZ_TEST_SRC}")
    add_dependencies(itest-${t} pmemzctl)
  endif()
  add_dependencies(itest-${t} pmemzerod)

  add_test(NAME integ-${t}-cacheline COMMAND itest-${t})
  set_tests_properties(integ-${t}-cacheline PROPERTIES
    ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE"
    SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "integration")

  add_test(NAME integ-${t}-default COMMAND itest-${t})
  set_tests_properties(integ-${t}-default PROPERTIES
    ENVIRONMENT_MODIFICATION "PMEM2_FORCE_GRANULARITY=unset:"
    SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "integration")
endforeach()

# pmemzerod-nbd@.service: systemd-analyze verify, and its ExecStart expanded
# with the example configuration serves a disk (nbd-unit.sh).
if(TARGET nbdkit-pmemz-plugin AND TARGET pmemzctl AND PMEMZ_NBDKIT_RUNNABLE)
  add_test(NAME integ-nbd-unit COMMAND bash ${_itest_dir}/nbd-unit.sh
    ${PROJECT_BINARY_DIR}/systemd/pmemzerod-nbd@.service
    ${PROJECT_SOURCE_DIR}/systemd/pmemzerod.socket ${PROJECT_SOURCE_DIR}/etc/nbd-disk.conf
    $<TARGET_FILE:pmemzerod> $<TARGET_FILE:pmemzctl> $<TARGET_FILE:nbdkit-pmemz-plugin>)
  set_tests_properties(integ-nbd-unit PROPERTIES
    ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE;PMEMZ_NBDKIT_PRELOAD=${PMEMZ_NBDKIT_PRELOAD}"
    SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "integration")
endif()
