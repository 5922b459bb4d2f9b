# Compatibility across versions (docs/DESIGN.md section 11), label compat.
#
#   compat-golden-SET-IMAGE   an image an older commit wrote, kept in
#                             tests/compat/images/SET (README.md there),
#                             opened with this build's checker, daemon,
#                             library and plugin (tests/compat/test-golden.py);
#                             needs no older build
#   compat-baseline           fixture: db6afef built from git history into
#                             BUILD/compat/ once per run (build-baseline); 77
#                             in a clone without that history
#   compat-history            writes with db6afef's build, reads every byte
#                             with this one, and the reverse
#                             (check-format-compatible)
#
#   ctest -L compat
#
# The VM test of a package upgrade (tests/vm/vm.cmake, vm-upgrade) uses the
# fixture's .deb.
find_program(PMEMZ_COMPAT_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT PMEMZ_COMPAT_PYTHON)
  find_program(PMEMZ_COMPAT_PYTHON python3)
endif()
if(NOT PMEMZ_COMPAT_PYTHON OR NOT TARGET pmemzerod OR NOT TARGET pmemzctl)
  message(STATUS "compat tests skipped: python3, pmemzerod or pmemzctl missing")
  return()
endif()

set(_compat_dir ${PMEMZ_TEST_SRC}/compat)
# A sanitizer build's library and plugin load only into a process whose
# ASan runtime comes first: not into python3, not into Debian's nbdkit.
set(_compat_lib "")
set(_compat_plugin "")
if(NOT PMEMZ_SANITIZE)
  set(_compat_lib $<TARGET_FILE:pmemzclient>)
  if(TARGET nbdkit-pmemz-plugin)
    set(_compat_plugin $<TARGET_FILE:nbdkit-pmemz-plugin>)
  endif()
endif()
set(_compat_env
  "PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>;PMEMZ_CTL=$<TARGET_FILE:pmemzctl>;PMEMZ_CLIENT_LIB=${_compat_lib};PMEMZ_PLUGIN=${_compat_plugin}")

file(GLOB _compat_manifests CONFIGURE_DEPENDS ${_compat_dir}/images/*/*.json)
list(SORT _compat_manifests)
foreach(m ${_compat_manifests})
  get_filename_component(_set ${m} DIRECTORY)
  get_filename_component(_set ${_set} NAME)
  get_filename_component(_image ${m} NAME_WE)
  add_test(NAME compat-golden-${_set}-${_image}
    COMMAND ${PMEMZ_COMPAT_PYTHON} ${_compat_dir}/test-golden.py ${m})
  set_tests_properties(compat-golden-${_set}-${_image} PROPERTIES
    ENVIRONMENT "${_compat_env}" SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "compat")
endforeach()

# The baseline built from git history once per run, in the build tree (the
# sanitizer build has no use for it: neither python3 nor QEMU loads an ASan
# library).  Its fixture name is the one the VM upgrade test requires.
if(PMEMZ_SANITIZE)
  return()
endif()
set(PMEMZ_COMPAT_BASELINE db6afef5bd950d2f9eab6e3b68d27bb0b055684a)
set(PMEMZ_COMPAT_BASELINE_DIR ${CMAKE_BINARY_DIR}/compat/${PMEMZ_COMPAT_BASELINE})
add_test(NAME compat-baseline
  COMMAND ${_compat_dir}/build-baseline ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}/compat
          ${PMEMZ_COMPAT_BASELINE})
set_tests_properties(compat-baseline PROPERTIES
  FIXTURES_SETUP compat-baseline SKIP_RETURN_CODE 77 TIMEOUT 1800 LABELS "compat")
add_test(NAME compat-history
  COMMAND ${PMEMZ_COMPAT_PYTHON} ${_compat_dir}/check-format-compatible ${PMEMZ_COMPAT_BASELINE_DIR})
set_tests_properties(compat-history PROPERTIES
  FIXTURES_REQUIRED compat-baseline ENVIRONMENT "${_compat_env}" SKIP_RETURN_CODE 77
  TIMEOUT 600 LABELS "compat")
