# Decides whether CUDA backends are built (ATTNKIT_CUDA = AUTO | ON | OFF) and sets
# ATTNKIT_HAVE_CUDA, ATTNKIT_HAVE_SM90A and CMAKE_CUDA_ARCHITECTURES.
set(ATTNKIT_HAVE_CUDA OFF)
set(ATTNKIT_HAVE_SM90A OFF)
set(ATTNKIT_NO_CUDA_REASON "")
if(ATTNKIT_CUDA STREQUAL "OFF")
  set(ATTNKIT_NO_CUDA_REASON "built with ATTNKIT_CUDA=OFF")
else()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES "${ATTNKIT_CUDA_ARCHS}")
    # One CUDA runtime per process: the shared libcudart that CUDA::cudart (and PyTorch) use.
    # CMake's default (static cudart in every target with CUDA code) put two runtimes into the
    # Python module.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # CMake 3.25 (Debian 12, the CI machine) has no C++20 entry for nvcc, so any target with
    # CUDA sources that inherits cxx_std_20 fails at generate time ("requires the language dialect
    # CUDA20"). Teach it the flag; CMake >= 3.26 already knows it and skips this.
    if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
      set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(ATTNKIT_HAVE_CUDA ON)
    if("90a" IN_LIST ATTNKIT_CUDA_ARCHS)
      set(ATTNKIT_HAVE_SM90A ON)
    endif()
  elseif(ATTNKIT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ATTNKIT_CUDA=ON but no CUDA compiler was found")
  else()
    set(ATTNKIT_NO_CUDA_REASON "no CUDA toolchain found at configure time")
  endif()
endif()
message(STATUS "attnkit: CUDA backends ${ATTNKIT_HAVE_CUDA} (archs: ${ATTNKIT_CUDA_ARCHS})")
