# VM tests: boot a Debian kernel under QEMU (TCG) with an emulated NVDIMM and
# run pmemzerod on the real device-DAX path (/dev/dax0.0), once per
# libpmem2 store granularity; and once on an emulated CXL pmem device.  QEMU, busybox-static, ndctl, daxctl and the
# kernel package are fetched at test time and cached in the build tree
# (${CMAKE_BINARY_DIR}/vm-cache); exit 77 (skip) only when they cannot be
# installed.  See docs/vm-test.md.
if(TARGET pmemzerod AND TARGET pmemzctl AND TARGET pmemz-demo)
  set(_vm_bins
    --bin $<TARGET_FILE:pmemzerod>
    --bin $<TARGET_FILE:pmemzctl>
    --bin $<TARGET_FILE:pmemz-demo>)
  foreach(_vm_gran cacheline byte)
    if(_vm_gran STREQUAL "cacheline")
      set(_vm_arg cache_line)
    else()
      set(_vm_arg byte)
    endif()
    add_test(NAME vm-devdax-${_vm_gran}
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-vm-test ${CMAKE_BINARY_DIR}
        --granularity ${_vm_arg} --timeout 240 ${_vm_bins})
    # One QEMU at a time: TCG is CPU-bound.
    set_tests_properties(vm-devdax-${_vm_gran} PROPERTIES
      SKIP_RETURN_CODE 77
      TIMEOUT 600
      RESOURCE_LOCK pmemz-vm
      LABELS vm)
  endforeach()
  # The same workload on emulated CXL pmem (a Type-3 device, its region
  # assembled with `cxl create-region` on every boot).  Skips (77) only
  # where QEMU has no CXL emulation.
  add_test(NAME vm-cxl
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-vm-test ${CMAKE_BINARY_DIR}
      --machine cxl --timeout 240 ${_vm_bins})
  set_tests_properties(vm-cxl PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT 600
    RESOURCE_LOCK pmemz-vm
    LABELS "vm;cxl")
  # Two NUMA nodes, one CPU and one NVDIMM each: each region
  # reports its node, its zeroer threads may run only on that node's CPU,
  # and both regions' extents are zeroed and served.
  add_test(NAME vm-numa
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-vm-test ${CMAKE_BINARY_DIR}
      --machine numa --timeout 300 ${_vm_bins})
  set_tests_properties(vm-numa PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT 600
    RESOURCE_LOCK pmemz-vm
    LABELS "vm;numa")
  # ext4 and XFS on pmemzerod disks: nbdkit's pmemz plugin on Unix sockets,
  # the kernel's nbd driver, a power cut with the file systems mounted and
  # writers running.  Registered without the plugin too: run-nbd-test then
  # skips (77) and says why, as it does without nbdkit or the nbd module.
  # Not in the sanitizer build: the distribution's nbdkit cannot dlopen()
  # an ASan plugin.
  if(NOT PMEMZ_SANITIZE)
    set(_vm_nbd_plugin)
    if(TARGET nbdkit-pmemz-plugin)
      set(_vm_nbd_plugin --plugin $<TARGET_FILE:nbdkit-pmemz-plugin>)
    endif()
    add_test(NAME vm-nbd
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-nbd-test ${CMAKE_BINARY_DIR}
        ${_vm_nbd_plugin} --timeout 600
        --bin $<TARGET_FILE:pmemzerod> --bin $<TARGET_FILE:pmemzctl>)
    set_tests_properties(vm-nbd PROPERTIES
      SKIP_RETURN_CODE 77
      TIMEOUT 1500
      RESOURCE_LOCK pmemz-vm
      LABELS "vm;nbd")
  endif()
  # No VM boot: the harness's initramfs, built as for a build tree under
  # /tmp, /run and a path with spaces, has nothing where the guest mounts
  # (tests/vm/guest-files.sh).  Cheap, so not labelled vm.
  set(_vm_paths_files $<TARGET_FILE:pmemzerod> $<TARGET_FILE:pmemzctl> $<TARGET_FILE:pmemz-demo>)
  if(TARGET nbdkit-pmemz-plugin)
    list(APPEND _vm_paths_files $<TARGET_FILE:nbdkit-pmemz-plugin>)
  endif()
  add_test(NAME vm-harness-paths
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/check-guest-paths ${CMAKE_BINARY_DIR} ${_vm_paths_files})
  set_tests_properties(vm-harness-paths PROPERTIES LABELS "unit" TIMEOUT 120)
else()
  message(STATUS "VM tests not registered: need targets pmemzerod, pmemzctl and pmemz-demo")
endif()

# Real systemd: the NVDIMM machine with the host's systemd as PID 1, the
# project's .deb (scripts/package, built by the test) installed with dpkg.
# Labels vm (one QEMU at a time; the ASan run leaves it out) and systemd.
if(TARGET pmemz-reconnect AND NOT PMEMZ_SANITIZE)
  add_test(NAME vm-systemd
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-systemd-test ${CMAKE_BINARY_DIR}
      --timeout 900 --bin $<TARGET_FILE:pmemz-reconnect>)
  set_tests_properties(vm-systemd PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT 1500
    RESOURCE_LOCK pmemz-vm
    LABELS "vm;systemd"
    ENVIRONMENT "PMEMZ_WERROR=${PMEMZ_WERROR}")
endif()

# A package upgrade on the systemd machine (tests/vm/run-upgrade-test,
# workload-upgrade.sh): db6afef's .deb from the compat-baseline fixture
# (tests/compat/compat.cmake), tags and a disk written with it, this tree's
# .deb installed over it with apt-get (every byte intact; a client holding
# leases across the restart), then db6afef's over this one (what it does
# not know refused, not one byte changed).  Skips (77) without that
# history.  Label upgrade, not compat: `ctest -L compat` stays quick.
if(NOT PMEMZ_SANITIZE AND DEFINED PMEMZ_COMPAT_BASELINE_DIR)
  add_test(NAME vm-upgrade
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-upgrade-test ${CMAKE_BINARY_DIR}
      ${PMEMZ_COMPAT_BASELINE_DIR} --timeout 1200)
  set_tests_properties(vm-upgrade PROPERTIES
    FIXTURES_REQUIRED compat-baseline
    SKIP_RETURN_CODE 77
    TIMEOUT 1800
    RESOURCE_LOCK pmemz-vm
    LABELS "vm;systemd;upgrade"
    ENVIRONMENT "PMEMZ_WERROR=${PMEMZ_WERROR}")
endif()
