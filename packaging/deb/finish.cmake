# CPack pre-build script of the .deb (CPACK_PRE_BUILD_SCRIPTS): what Debian
# policy wants in the staged tree that CMake's install rules do not make.
# Runs after the install into the staging directory, before dpkg-deb.
set(_root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
set(_doc "${_root}/usr/share/doc/${CPACK_PACKAGE_NAME}")

# Manual pages are gzip-compressed (-n: no name or time stamp, reproducible).
file(GLOB_RECURSE _pages "${_root}/usr/share/man/*")
foreach(_page ${_pages})
  if(NOT _page MATCHES "\\.gz$")
    execute_process(COMMAND gzip -9nf "${_page}" RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "gzip ${_page} failed")
    endif()
  endif()
endforeach()

# copyright and the changelog of a native package.
file(MAKE_DIRECTORY "${_doc}")
file(COPY "${CPACK_PMEMZ_DEB_DIR}/copyright" DESTINATION "${_doc}")
string(TIMESTAMP _date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE "${_doc}/changelog"
  "${CPACK_PACKAGE_NAME} (${CPACK_PACKAGE_VERSION}) unstable; urgency=medium\n\n"
  "  * Built from the upstream sources by CPack (scripts/package).\n\n"
  " -- ${CPACK_PACKAGE_CONTACT}  ${_date}\n")
execute_process(COMMAND gzip -9nf "${_doc}/changelog" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "gzip ${_doc}/changelog failed")
endif()

# Reasoned lintian overrides (packaging/deb/lintian-overrides).
file(MAKE_DIRECTORY "${_root}/usr/share/lintian/overrides")
configure_file("${CPACK_PMEMZ_DEB_DIR}/lintian-overrides"
  "${_root}/usr/share/lintian/overrides/${CPACK_PACKAGE_NAME}" COPYONLY)
