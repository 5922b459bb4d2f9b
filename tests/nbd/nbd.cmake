# nbdkit-pmemz-plugin against the real pmemzerod, through libnbd's Python
# bindings (tests/nbd/test-nbd.py, harness nbdtest.py): one ctest per
# scenario, label nbd, with PMEM2_FORCE_GRANULARITY=CACHE_LINE (the NT-store
# and fence path the plugin's durability rests on).  They skip (77) when
# nbdkit, python3-libnbd, qemu-img or nbdcopy is missing.
#
#   ctest -L nbd                     all of them
#   PMEMZ_NBD_SEED=N                 repeat the random operations of a run
#   PMEMZ_ITEST_KEEP=1               keep the temp dirs (logs, region)
if(NOT PMEMZ_NBDKIT_PLUGIN_FOUND OR NOT TARGET pmemzerod OR NOT TARGET pmemzctl)
  message(STATUS "nbd tests skipped: nbdkit-pmemz-plugin, pmemzerod or pmemzctl not built")
  return()
endif()

# Debian's interpreter: python3-libnbd installs there (not in a pyenv's).
find_program(PMEMZ_NBD_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT PMEMZ_NBD_PYTHON)
  find_program(PMEMZ_NBD_PYTHON python3)
endif()

# A sanitizer build's plugin needs the sanitizer's runtime first in nbdkit's
# process: the tests run nbdkit through tests/nbdkit-sanitized, which
# preloads it and the shim that keeps it working in the distribution's
# nbdkit (nbdkit-sanitizer-shim.c says why), and stops at the first report.
# Without the runtime (clang's is linked statically) they skip, loudly,
# unless PMEMZ_NBDKIT names a wrapper of one's own.
set(_nbd_san "")
if(PMEMZ_SANITIZER)
  set(_nbd_san ";PMEMZ_NBD_SANITIZED=1")
  if(PMEMZ_NBDKIT_PRELOAD)
    add_library(pmemz-nbdkit-sanitizer-shim SHARED ${PMEMZ_TEST_SRC}/nbd/nbdkit-sanitizer-shim.c)
    # runs before the runtime has initialized: no instrumentation
    target_compile_options(pmemz-nbdkit-sanitizer-shim PRIVATE -fno-sanitize=all)
    target_link_options(pmemz-nbdkit-sanitizer-shim PRIVATE -fno-sanitize=all)
    target_link_libraries(pmemz-nbdkit-sanitizer-shim PRIVATE ${CMAKE_DL_LIBS})
    set(_nbd_runtime ${PMEMZ_NBDKIT_PRELOAD})
    configure_file(${PMEMZ_TEST_SRC}/nbd/nbdkit-sanitized.in
      ${CMAKE_CURRENT_BINARY_DIR}/nbdkit-sanitized.gen @ONLY)
    file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/nbdkit-sanitized
      INPUT ${CMAKE_CURRENT_BINARY_DIR}/nbdkit-sanitized.gen
      FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
        WORLD_READ WORLD_EXECUTE)
    set(_nbd_san "${_nbd_san};PMEMZ_NBDKIT=${CMAKE_CURRENT_BINARY_DIR}/nbdkit-sanitized")
  endif()
endif()

# What every test may need beside the installed plugin: its test build (a
# disk made with a small journal) and the shim of libpmemzclient that
# refuses MOVEs and delays leases (tests/nbd/pmemz-shim.c), preloaded into
# nbdkit by nbdtest.py when a PMEMZ_SHIM_* setting asks for it.
add_library(pmemz-nbd-shim MODULE ${PMEMZ_TEST_SRC}/nbd/pmemz-shim.c)
set_target_properties(pmemz-nbd-shim PROPERTIES PREFIX "")
# libpmemzclient's headers, not the library: the shim finds it behind itself (RTLD_NEXT)
target_include_directories(pmemz-nbd-shim PRIVATE
  $<TARGET_PROPERTY:pmemzclient,INTERFACE_INCLUDE_DIRECTORIES>)
target_link_libraries(pmemz-nbd-shim PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
# Preloaded, it loads into every process between the harness and nbdkit
# (a PMEMZ_NBDKIT wrapper's shell too): never instrumented, so that it
# needs no sanitizer runtime loaded before it.
target_compile_options(pmemz-nbd-shim PRIVATE -fno-sanitize=all)
target_link_options(pmemz-nbd-shim PRIVATE -fno-sanitize=all)
set(_nbd_tools ";PMEMZ_PLUGIN_TEST=$<TARGET_FILE:nbdkit-pmemz-plugin-test>")
string(APPEND _nbd_tools ";PMEMZ_NBD_SHIM=$<TARGET_FILE:pmemz-nbd-shim>")

set(_nbd_tests ops restart kill9 claim quota tags qemu sparse size multiconn spares flags prewarm
  zero)
foreach(t ${_nbd_tests})
  add_test(NAME nbd-${t}
    COMMAND ${PMEMZ_NBD_PYTHON} ${PMEMZ_TEST_SRC}/nbd/test-nbd.py ${t})
  set_tests_properties(nbd-${t} PROPERTIES
    ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE;PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>;PMEMZ_CTL=$<TARGET_FILE:pmemzctl>;PMEMZ_PLUGIN=$<TARGET_FILE:nbdkit-pmemz-plugin>${_nbd_tools}${_nbd_san}"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "nbd")
endforeach()
# The fallback paths, without extents owned ahead (ahead=0): write-back of
# fresh chunks (-wb), and none (-sync: every fresh chunk committed on the write
# path).
foreach(t ops restart kill9 tags multiconn)
  add_test(NAME nbd-${t}-wb
    COMMAND ${PMEMZ_NBD_PYTHON} ${PMEMZ_TEST_SRC}/nbd/test-nbd.py ${t})
  set_tests_properties(nbd-${t}-wb PROPERTIES
    ENVIRONMENT "PMEMZ_NBD_ARGS=ahead=0;PMEM2_FORCE_GRANULARITY=CACHE_LINE;PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>;PMEMZ_CTL=$<TARGET_FILE:pmemzctl>;PMEMZ_PLUGIN=$<TARGET_FILE:nbdkit-pmemz-plugin>${_nbd_tools}${_nbd_san}"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "nbd")
endforeach()
foreach(t ops restart kill9 tags multiconn spares)
  add_test(NAME nbd-${t}-sync
    COMMAND ${PMEMZ_NBD_PYTHON} ${PMEMZ_TEST_SRC}/nbd/test-nbd.py ${t})
  set_tests_properties(nbd-${t}-sync PROPERTIES
    ENVIRONMENT "PMEMZ_NBD_ARGS=ahead=0 writeback=0;PMEM2_FORCE_GRANULARITY=CACHE_LINE;PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>;PMEMZ_CTL=$<TARGET_FILE:pmemzctl>;PMEMZ_PLUGIN=$<TARGET_FILE:nbdkit-pmemz-plugin>${_nbd_tools}${_nbd_san}"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "nbd")
endforeach()
# 'ops' once more on the mapping's own granularity (PAGE on tmpfs: msync).
add_test(NAME nbd-ops-default COMMAND ${PMEMZ_NBD_PYTHON} ${PMEMZ_TEST_SRC}/nbd/test-nbd.py ops)
set_tests_properties(nbd-ops-default PROPERTIES
  ENVIRONMENT "PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>;PMEMZ_CTL=$<TARGET_FILE:pmemzctl>;PMEMZ_PLUGIN=$<TARGET_FILE:nbdkit-pmemz-plugin>${_nbd_tools}${_nbd_san}"
  ENVIRONMENT_MODIFICATION "PMEM2_FORCE_GRANULARITY=unset:"
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "nbd")
# The crash loop (tests/nbd/test-nbd-crash.py): kill -9 of nbdkit or of
# pmemzerod at random points of writes, FUA writes and FLUSHes, each chunk
# checked against a model after every restart; and the fallback without
# extents owned ahead (ahead=0: every fresh chunk committed on its own).
# pmemz_nbd_crash_loop(NAME [VAR=VALUE;...]): the loop, with a variant's settings.
function(pmemz_nbd_crash_loop name vars)
  add_test(NAME ${name}
    COMMAND ${PMEMZ_NBD_PYTHON} ${PMEMZ_TEST_SRC}/nbd/test-nbd-crash.py loop)
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "${vars}PMEM2_FORCE_GRANULARITY=CACHE_LINE;PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>;PMEMZ_CTL=$<TARGET_FILE:pmemzctl>;PMEMZ_PLUGIN=$<TARGET_FILE:nbdkit-pmemz-plugin>${_nbd_tools}${_nbd_san}"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "nbd")
endfunction()
pmemz_nbd_crash_loop(nbd-crash-loop "")
pmemz_nbd_crash_loop(nbd-crash-loop-noahead "PMEMZ_NBD_ARGS=ahead=0;PMEMZ_NBD_ROUNDS=4;")
# Fresh chunks, then a fold, as the first requests to find pmemzerod
# restarted; the journal filling, folding and wrapping (8 slots); folds
# refused across restarts (the chunks stay in the journal); a fold refused
# halfway (the moved chunks' records spent at once); extents too
# small for a journal; a journal the tenant forged.  The superblock's
# versions and features: version 1 (db6afef's) opens as the features it
# had; version 2 with an incompat feature this plugin does not know is
# refused, nothing written; with a ro_compat one served read-only; with a
# compat one served as usual.
foreach(t sync-after-restart journal-wrap journal-adopt journal-partial no-journal journal-hostile
    superblock-v1 features-incompat features-ro-compat features-compat)
  add_test(NAME nbd-${t}
    COMMAND ${PMEMZ_NBD_PYTHON} ${PMEMZ_TEST_SRC}/nbd/test-nbd-crash.py ${t})
  set_tests_properties(nbd-${t} PROPERTIES
    ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE;PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>;PMEMZ_CTL=$<TARGET_FILE:pmemzctl>;PMEMZ_PLUGIN=$<TARGET_FILE:nbdkit-pmemz-plugin>${_nbd_tools}${_nbd_san}"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "nbd")
endforeach()
# The crash loop on a disk made with a journal of 16 slots: folds, wraps
# and a full journal (fresh chunks falling back) under kill -9.
pmemz_nbd_crash_loop(nbd-crash-loop-journal "PMEMZ_NBD_JOURNAL_SLOTS=16;PMEMZ_NBD_ROUNDS=6;")
# The same with folds that move two chunks and are refused the rest, every
# other MOVE request (the tag limit reached halfway): records written again.
pmemz_nbd_crash_loop(nbd-crash-loop-partial
  "PMEMZ_NBD_JOURNAL_SLOTS=16;PMEMZ_SHIM_MOVES_MAX=2;PMEMZ_SHIM_REFUSE_MOVES_AFTER=1;PMEMZ_NBD_ROUNDS=6;")
# A region file truncated under the plugin's mapping (tests/nbd/test-nbd-fault.py):
# with write-back, and without (every fresh chunk written on the request's thread).
foreach(v "" "-sync")
  set(_args "")
  if(v STREQUAL "-sync")
    set(_args "PMEMZ_NBD_ARGS=writeback=0;")
  endif()
  add_test(NAME nbd-truncated${v}
    COMMAND ${PMEMZ_NBD_PYTHON} ${PMEMZ_TEST_SRC}/nbd/test-nbd-fault.py truncated)
  set_tests_properties(nbd-truncated${v} PROPERTIES
    ENVIRONMENT "${_args}PMEM2_FORCE_GRANULARITY=CACHE_LINE;PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>;PMEMZ_CTL=$<TARGET_FILE:pmemzctl>;PMEMZ_PLUGIN=$<TARGET_FILE:nbdkit-pmemz-plugin>${_nbd_tools}${_nbd_san}"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "nbd")
endforeach()
# The installed plugin exports plugin_init alone (no pmemz_debug_* variable
# for nbdkit -D), and takes neither the test build's nor the benchmark
# build's parameters.
add_test(NAME nbd-plugin-product
  COMMAND sh ${PMEMZ_TEST_SRC}/nbd/plugin-product.sh $<TARGET_FILE:nbdkit-pmemz-plugin>
    $<TARGET_FILE:nbdkit-pmemz-plugin-test> $<TARGET_FILE:nbdkit-pmemz-plugin-bench>)
set_tests_properties(nbd-plugin-product PROPERTIES
  ENVIRONMENT "NM=${CMAKE_NM}${_nbd_san}" SKIP_RETURN_CODE 77 TIMEOUT 60 LABELS "nbd")
