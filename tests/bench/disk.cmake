# scripts/bench-disk (fio, ioengine=nbd, against the pmemz nbdkit plugin and
# nbdkit's memory and file plugins; docs/PERFORMANCE.md).  ctest runs only its
# smoke test, 'bench-disk-quick': small sizes, checks that the script runs end
# to end, prints its table and writes every figure to its JSON; no speed is
# asserted.  Skips (77) without fio's nbd engine or nbdkit.
if(NOT TARGET pmemzerod OR NOT TARGET pmemzctl)
  message(STATUS "bench-disk-quick skipped: pmemzerod or pmemzctl not defined")
  return()
endif()

find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "bench-disk-quick skipped: python3 not found")
  return()
endif()

# With the plugin built, (a) and (b) must run: naming them makes a missing
# plugin an error instead of a note.  (a) is the plugin as installed, (b)
# its benchmark build (nbdkit-pmemz-plugin-bench, zeroing=inline), built
# beside it; the plugin's counts come from its lines at close.
if(TARGET nbdkit-pmemz-plugin)
  set(_bench_disk_targets a,b,c,d)
else()
  set(_bench_disk_targets c,d)
endif()

add_test(NAME bench-disk-quick
  COMMAND ${Python3_EXECUTABLE} ${PMEMZ_TEST_SRC}/bench/bench-disk-check.py
    ${PROJECT_SOURCE_DIR}/scripts/bench-disk ${PROJECT_BINARY_DIR}
    ${_bench_disk_targets} ${CMAKE_CURRENT_BINARY_DIR}/bench-disk-quick.json)
set_tests_properties(bench-disk-quick PROPERTIES
  LABELS "bench" TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)

# perf that refuses its arguments (here an unknown event) never opens its
# control fifo: bench-disk went on and exited 0 with no profile.  It must
# fail at once and say why.
if(TARGET nbdkit-pmemz-plugin)
  add_test(NAME bench-disk-bad-perf
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/bench-disk --quick
      --targets a --build-dir ${PROJECT_BINARY_DIR}
      --perf ${CMAKE_CURRENT_BINARY_DIR}/bench-disk-bad-perf --perf-event no_such_event)
  set_tests_properties(bench-disk-bad-perf PROPERTIES
    LABELS "bench" TIMEOUT 120 RUN_SERIAL TRUE
    PASS_REGULAR_EXPRESSION "bench-disk: perf record exited"
    SKIP_REGULAR_EXPRESSION "perf is not installed;bench-disk: SKIP")
endif()
