# External dependencies: MPI, StarPU (+ StarPU-MPI) through pkg-config, hwloc,
# optional CUDA. Version differences between StarPU 1.3 and 1.4 are detected
# by compiling against the StarPU that was found, never by version numbers.
find_package(MPI REQUIRED COMPONENTS C)
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

set(STRATA_STARPU_SERIES "" CACHE STRING
    "StarPU series to use (1.3 or 1.4); empty picks the first found, newest first")
if(STRATA_STARPU_SERIES)
  set(_strata_series ${STRATA_STARPU_SERIES})
else()
  set(_strata_series 1.4 1.3)
endif()
foreach(series IN LISTS _strata_series)
  pkg_check_modules(STARPU QUIET IMPORTED_TARGET GLOBAL starpu-${series} starpumpi-${series})
  if(STARPU_FOUND)
    set(STRATA_STARPU_MODULES "starpu-${series} starpumpi-${series}")
    set(_strata_starpu_found starpu-${series})
    break()
  endif()
endforeach()
# StarPU's own tools, of the StarPU found (the tests read perf models).
if(STARPU_FOUND)
  pkg_get_variable(_strata_starpu_prefix ${_strata_starpu_found} prefix)
  find_program(STARPU_PERFMODEL_DISPLAY starpu_perfmodel_display
               HINTS ${_strata_starpu_prefix}/bin NO_CACHE)
endif()
if(NOT STARPU_FOUND)
  message(FATAL_ERROR "StarPU with StarPU-MPI not found through pkg-config "
                      "(starpu-1.3/starpumpi-1.3 or the 1.4 modules); run scripts/setup.sh")
endif()
# A StarPU built for SimGrid (scripts/build-starpu.sh --simgrid) is static
# and simulates its workers and SimGrid's MPI (SMPI) its ranks: Strata is then
# built as one static library with smpicc, so that SMPI gives every simulated
# rank its own copy of Strata's and StarPU's globals (scripts/simulate.sh).
find_file(_strata_starpu_config starpu_config.h PATHS ${STARPU_INCLUDE_DIRS} NO_DEFAULT_PATH
          NO_CACHE)
file(STRINGS ${_strata_starpu_config} _strata_simgrid_define REGEX "^#define STARPU_SIMGRID 1")
if(_strata_simgrid_define)
  set(STRATA_SIMGRID ON)
  if(NOT CMAKE_C_COMPILER MATCHES "smpicc$")
    message(FATAL_ERROR "StarPU ${_strata_starpu_found} is a SimGrid build: configure with "
                        "CC=smpicc (scripts/simulate.sh does)")
  endif()
  # StarPU's main() starts SMPI's rank, then runs the program's main()
  # renamed to starpu_main() (starpu_simgrid_wrap.h) as a simulated thread.
  get_filename_component(_strata_starpu_include ${_strata_starpu_config} DIRECTORY)
  add_compile_options(-I${_strata_starpu_include} "SHELL:-include starpu_simgrid_wrap.h")
  # SMPI answers MPI calls only from the rank's own thread, which StarPU-MPI
  # keeps: the host side's calls go through core/runtime/simgrid_mpi.c.
  add_compile_options("SHELL:-include ${PROJECT_SOURCE_DIR}/core/internal/simgrid_mpi.h")
  # Each rank keeps its own memory (no SMPI_SHARED_MALLOC folding).
  add_compile_definitions(SMPI_NO_OVERRIDE_MALLOC)
  # The static libraries StarPU needs (SimGrid among them) after StarPU's own.
  set_property(TARGET PkgConfig::STARPU APPEND PROPERTY INTERFACE_LINK_LIBRARIES
               ${STARPU_STATIC_LDFLAGS})
else()
  set(STRATA_SIMGRID OFF)
endif()

pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET GLOBAL hwloc)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET GLOBAL openblas)
pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET GLOBAL libcjson)
pkg_check_modules(FFTW REQUIRED IMPORTED_TARGET GLOBAL fftw3)
# HDF5 by module name, never Debian's `hdf5`, which turns into the Open MPI
# build as soon as libhdf5-openmpi-dev is installed. Parallel HDF5 lets every
# rank write its own blocks (amr/hdf5.c); the serial library gathers them to
# rank 0. Under SimGrid only the serial one: Open MPI cannot share a
# simulated process with SMPI.
option(STRATA_PARALLEL_HDF5 "Write AMR files with parallel HDF5 (hdf5-openmpi) when present" ON)
# One prefix per module: both libraries are called libhdf5, and CMake caches
# a found library by prefix and name, so a shared prefix would keep linking
# the other build's library after a switch.
set(STRATA_HDF5_PARALLEL OFF)
if(STRATA_PARALLEL_HDF5 AND NOT STRATA_SIMGRID)
  pkg_check_modules(HDF5_OPENMPI QUIET IMPORTED_TARGET GLOBAL hdf5-openmpi)
  set(STRATA_HDF5_PARALLEL ${HDF5_OPENMPI_FOUND})
endif()
if(STRATA_HDF5_PARALLEL)
  add_library(PkgConfig::HDF5 ALIAS PkgConfig::HDF5_OPENMPI)
  message(STATUS "HDF5 ${HDF5_OPENMPI_VERSION}: parallel (hdf5-openmpi; "
                 "-DSTRATA_PARALLEL_HDF5=OFF for serial)")
else()
  pkg_check_modules(HDF5_SERIAL REQUIRED IMPORTED_TARGET GLOBAL hdf5-serial)
  add_library(PkgConfig::HDF5 ALIAS PkgConfig::HDF5_SERIAL)
  message(STATUS "HDF5 ${HDF5_SERIAL_VERSION}: serial, rank 0 writes (no hdf5-openmpi, or "
                 "STRATA_PARALLEL_HDF5 off)")
endif()
pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET GLOBAL cairo)
# p4est (libp4est-dev) holds the octree's structure (amr/forest.c). Under
# SimGrid, the p4est that scripts/build-starpu.sh --simgrid builds next to
# StarPU: Debian's is compiled against Open MPI's handles, and that one calls
# Strata's simulated MPI, so Strata's library follows it on the link line.
if(STRATA_SIMGRID)
  set(_strata_p4est_hints HINTS ${_strata_starpu_prefix} PATH_SUFFIXES include lib NO_DEFAULT_PATH)
endif()
find_path(P4EST_INCLUDE_DIR p8est.h ${_strata_p4est_hints} REQUIRED)
find_library(P4EST_LIBRARY p4est ${_strata_p4est_hints} REQUIRED)
find_library(SC_LIBRARY sc ${_strata_p4est_hints} REQUIRED)
add_library(strata_p4est INTERFACE)
target_include_directories(strata_p4est INTERFACE ${P4EST_INCLUDE_DIR})
target_link_libraries(strata_p4est INTERFACE ${P4EST_LIBRARY} ${SC_LIBRARY} z m) # libsc: zlib
# oneDNN (libdnnl-dev) for the CPU convolutions of models, and the OpenMP
# runtime it is built on (libgomp), whose thread count Strata sets to 1
# inside StarPU workers.
find_path(STRATA_DNNL_INCLUDE_DIR dnnl.h REQUIRED)
find_library(STRATA_DNNL_LIBRARY dnnl REQUIRED)
find_library(STRATA_GOMP_LIBRARY NAMES gomp libgomp.so.1 REQUIRED)
set(STRATA_DNNL_LIBRARIES ${STRATA_DNNL_LIBRARY} ${STRATA_GOMP_LIBRARY})
# ONNX import: onnx.proto from libonnx-dev, compiled to C by protoc-c
# (protobuf-c-compiler) and decoded by libprotobuf-c.
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET GLOBAL libprotobuf-c)
find_program(STRATA_PROTOC_C protoc-c REQUIRED)
find_file(STRATA_ONNX_PROTO onnx.proto PATHS /usr/include/onnx NO_DEFAULT_PATH REQUIRED)
message(STATUS "StarPU ${STARPU_starpu-1.3_VERSION}${STARPU_starpu-1.4_VERSION} (${STRATA_STARPU_MODULES})")

# pkg-config name of the MPI implementation, for strata.pc.
pkg_check_modules(MPI_PC QUIET mpi-c)
if(MPI_PC_FOUND)
  set(STRATA_PC_MPI "mpi-c")
endif()

# StarPU API shims.
include(CheckSymbolExists)
include(CMakePushCheckState)
cmake_push_check_state(RESET)
set(CMAKE_REQUIRED_INCLUDES ${STARPU_INCLUDE_DIRS} ${MPI_C_INCLUDE_DIRS})
set(CMAKE_REQUIRED_LIBRARIES ${STARPU_LINK_LIBRARIES} ${MPI_C_LIBRARIES})
if(STRATA_SIMGRID)
  list(APPEND CMAKE_REQUIRED_LIBRARIES ${STARPU_STATIC_LDFLAGS})
endif()
set(CMAKE_REQUIRED_QUIET ON)
# 1.4 reduction codelets take arguments and expect STARPU_COMMUTE on the
# accumulator (1.3 aborts when it is there).
check_symbol_exists(starpu_data_set_reduction_methods_with_args starpu.h
                    STRATA_STARPU_REDUX_WITH_ARGS)
# StarPU configured with CUDA / FxT.
check_symbol_exists(STARPU_USE_CUDA starpu_config.h STRATA_STARPU_HAS_CUDA)
check_symbol_exists(STARPU_USE_FXT starpu_config.h STRATA_STARPU_HAS_FXT)
cmake_pop_check_state()

# CUDA kernels.
set(STRATA_HAVE_CUDA_KERNELS OFF)
if(NOT STRATA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(STRATA_HAVE_CUDA_KERNELS ON)
    # cuDNN for the network runner's convolutions, where the toolkit has it.
    find_library(STRATA_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(STRATA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  elseif(STRATA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "STRATA_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
set(STRATA_HAVE_CUDNN OFF)
if(STRATA_HAVE_CUDA_KERNELS AND STRATA_CUDNN_LIBRARY AND STRATA_CUDNN_INCLUDE_DIR)
  set(STRATA_HAVE_CUDNN ON)
endif()
message(STATUS "Strata CUDA kernels: ${STRATA_HAVE_CUDA_KERNELS} (cuDNN: ${STRATA_HAVE_CUDNN}); "
               "StarPU CUDA workers: ${STRATA_STARPU_HAS_CUDA}")
