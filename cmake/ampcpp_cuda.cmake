# Decides whether the CUDA backend is built (AMPCPP_WITH_CUDA) from AMPCPP_CUDA=AUTO/ON/OFF.
# AUTO uses nvcc when it is on PATH or under /usr/local/cuda and otherwise builds CPU-only with
# a note; ON fails without nvcc.
set(AMPCPP_WITH_CUDA OFF)
if(NOT AMPCPP_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(AMPCPP_NVCC nvcc PATHS /usr/local/cuda/bin NO_CACHE)
    if(AMPCPP_NVCC)
      set(CMAKE_CUDA_COMPILER "${AMPCPP_NVCC}")
    endif()
  endif()
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    # CMake < 3.26 knows no C++20 flag for nvcc (CUDA_STANDARD 20, or cxx_std_20 on a target
    # with .cu sources, fails to configure), so it is taught the flag after enable_language.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(AMPCPP_WITH_CUDA ON)
    message(STATUS "ampcpp: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(AMPCPP_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ampcpp: AMPCPP_CUDA=ON but nvcc was found neither on PATH nor under "
                        "/usr/local/cuda/bin")
  else()
    message(STATUS "ampcpp: note: nvcc not found (PATH, /usr/local/cuda/bin): building CPU-only; "
                   "CUDA entry points will raise amp::Error")
  endif()
else()
  message(STATUS "ampcpp: CUDA backend OFF (AMPCPP_CUDA=OFF): building CPU-only")
endif()
