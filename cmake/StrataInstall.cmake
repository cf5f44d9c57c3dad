# Installation: library, headers, the `strata` tool, a CMake package
# (find_package(Strata) -> Strata::strata) and strata.pc.
include(CMakePackageConfigHelpers)

set(_strata_installed strata)
if(STRATA_SIMGRID) # the static libstrata's simulated MPI (core/CMakeLists.txt)
  list(APPEND _strata_installed strata_simgrid_mpi)
endif()
install(TARGETS ${_strata_installed} EXPORT StrataTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/strata DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/strata/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/strata)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/ DESTINATION ${CMAKE_INSTALL_DATADIR}/strata/models
        PATTERN README.md EXCLUDE)

set(STRATA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
install(EXPORT StrataTargets NAMESPACE Strata:: DESTINATION ${STRATA_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/StrataConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/StrataConfig.cmake
                              INSTALL_DESTINATION ${STRATA_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/StrataConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/StrataConfig.cmake
              ${PROJECT_BINARY_DIR}/StrataConfigVersion.cmake
        DESTINATION ${STRATA_CMAKE_DIR})

# The .pc file locates the prefix from its own place, so that installing
# with `cmake --install --prefix` anywhere works.
file(RELATIVE_PATH STRATA_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
string(REPLACE ";" " " STRATA_PC_REQUIRES "${STRATA_STARPU_MODULES} ${STRATA_PC_MPI}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/strata.pc.in ${PROJECT_BINARY_DIR}/strata.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/strata.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
