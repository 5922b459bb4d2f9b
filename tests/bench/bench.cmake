# pmemz-bench: the benchmark suite (docs/PERFORMANCE.md; targets: docs/DESIGN.md).
#   build/tests/pmemz-bench [--quick] [--json FILE]
# ctest runs only the smoke test: 'bench-quick' (--quick, checks that the
# run completes and that its JSON is valid).
if(NOT TARGET pmemzerod OR NOT TARGET pmemzclient_static OR NOT TARGET pmemzd_storage)
  message(STATUS "pmemz-bench skipped: pmemzerod, pmemzclient_static or pmemzd_storage missing")
  return()
endif()

set(_bench_dir ${PMEMZ_TEST_SRC}/bench)
add_executable(pmemz-bench
  ${_bench_dir}/bench-main.c ${_bench_dir}/bench-daemon.c ${_bench_dir}/bench-kernels.c
  ${_bench_dir}/bench-report.c ${_bench_dir}/bench-zero.c ${_bench_dir}/bench-alloc.c
  ${_bench_dir}/bench-fill.c ${_bench_dir}/bench-waitzero.c
  ${_bench_dir}/bench-floor.c ${_bench_dir}/bench-scale.c
  ${_bench_dir}/bench-interfere.c ${_bench_dir}/bench-frag.c ${_bench_dir}/bench-attack.c
  ${_bench_dir}/bench-handback.c
  ${PMEMZ_TEST_SRC}/integration/attack.c)
# attack.c: the attack tests' hostile clients (no cmocka, no harness in it).
target_include_directories(pmemz-bench PRIVATE ${_bench_dir} ${PMEMZ_TEST_SRC}/integration)
target_link_libraries(pmemz-bench PRIVATE pmemzd_storage pmemzclient_static pmemzproto
  PkgConfig::JSONC PkgConfig::LIBPMEM2 Threads::Threads)
target_compile_definitions(pmemz-bench PRIVATE
  PMEMZ_BENCH_DAEMON="$<TARGET_FILE:pmemzerod>"
  PMEMZ_BENCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(pmemz-bench pmemzerod)

# The machine's cost of the first store into a page through a mapping (the
# floor under the disk's fresh writes; scripts/bench-disk prints it).
add_executable(pmemz-first-touch ${_bench_dir}/first-touch.c)
# ... and its cost of waking a process that holds a large mapping (pmemzerod).
add_executable(pmemz-wake-stall ${_bench_dir}/wake-stall.c)
target_link_libraries(pmemz-first-touch PRIVATE PkgConfig::JSONC)
target_link_libraries(pmemz-wake-stall PRIVATE PkgConfig::JSONC)

# Validates the JSON the bench wrote (json-c), so the smoke test needs no python.
add_executable(pmemz-bench-json-check ${_bench_dir}/bench-json-check.c)
target_link_libraries(pmemz-bench-json-check PRIVATE PkgConfig::JSONC)

add_test(NAME bench-quick
  COMMAND sh -c "\"$1\" --quick --json \"$3\" && \"$2\" \"$3\""
          bench-quick $<TARGET_FILE:pmemz-bench> $<TARGET_FILE:pmemz-bench-json-check>
          ${CMAKE_CURRENT_BINARY_DIR}/bench-quick.json)
set_tests_properties(bench-quick PROPERTIES LABELS "bench" TIMEOUT 240 RUN_SERIAL TRUE)

# The host's floor lines (scripts/bench-disk keeps them in its JSON): each
# program, in its smallest size, writes the JSON the renderer reads.
add_test(NAME bench-floor-json
  COMMAND sh -c "\"$1\" --json \"$3\" /dev/shm 8 && \"$2\" --first-touch \"$3\" &&
                 \"$4\" --json \"$5\" /dev/shm 8 100 && \"$2\" --wake-stall \"$5\""
          bench-floor-json $<TARGET_FILE:pmemz-first-touch> $<TARGET_FILE:pmemz-bench-json-check>
          ${CMAKE_CURRENT_BINARY_DIR}/first-touch.json $<TARGET_FILE:pmemz-wake-stall>
          ${CMAKE_CURRENT_BINARY_DIR}/wake-stall.json)
set_tests_properties(bench-floor-json PROPERTIES LABELS "bench" TIMEOUT 120)

# --socket: the bench measures a daemon it did not start and leaves its socket alone.
add_test(NAME bench-socket
  COMMAND sh ${_bench_dir}/bench-socket.sh $<TARGET_FILE:pmemz-bench>
          $<TARGET_FILE:pmemzerod> $<TARGET_FILE:pmemzctl>)
set_tests_properties(bench-socket PROPERTIES LABELS "bench" TIMEOUT 120)

# The client library's allocation reserve (the mechanism scenario 4 (d)
# measures) against the real daemon; uses the integration-test harness.
add_executable(test-reserve ${_bench_dir}/test-reserve.c)
target_link_libraries(test-reserve PRIVATE pmemz_itest)
target_compile_definitions(test-reserve PRIVATE PMEMZ_DAEMON_PATH="$<TARGET_FILE:pmemzerod>")
add_dependencies(test-reserve pmemzerod)
add_test(NAME client-reserve COMMAND test-reserve)
set_tests_properties(client-reserve PROPERTIES
  ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE"
  SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "client;integration")
