# LibTorch comes from the pip torch wheel installed by scripts/setup.sh (version pinned in
# requirements.txt). We ask that Python where the wheel keeps its CMake config.
if(NOT SHARDBENCH_PYTHON)
  if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
    set(SHARDBENCH_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  else()
    find_program(SHARDBENCH_PYTHON NAMES python3 python REQUIRED)
  endif()
endif()
execute_process(
  COMMAND ${SHARDBENCH_PYTHON} -c "import torch.utils, torch; print(torch.utils.cmake_prefix_path); print(torch.__version__); print(torch.version.cuda or '')"
  OUTPUT_VARIABLE _torch_info OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _torch_rc ERROR_QUIET)
if(NOT _torch_rc EQUAL 0)
  message(FATAL_ERROR "shardbench: '${SHARDBENCH_PYTHON}' cannot import torch. Run scripts/setup.sh "
                      "or pass -DSHARDBENCH_PYTHON=/path/to/python-with-torch.")
endif()
string(REPLACE "\n" ";" _torch_info "${_torch_info}")
list(GET _torch_info 0 _torch_prefix)
list(GET _torch_info 1 SHARDBENCH_TORCH_VERSION)
list(LENGTH _torch_info _n)
set(SHARDBENCH_TORCH_CUDA "")
if(_n GREATER 2)
  list(GET _torch_info 2 SHARDBENCH_TORCH_CUDA)
endif()
list(APPEND CMAKE_PREFIX_PATH ${_torch_prefix})

# Decide the GPU path before find_package(Torch): a CUDA build of torch wants the toolkit.
set(SHARDBENCH_WITH_CUDA OFF)
if(SHARDBENCH_CUDA STREQUAL "AUTO")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND SHARDBENCH_TORCH_CUDA)
    set(SHARDBENCH_WITH_CUDA ON)
  endif()
elseif(SHARDBENCH_CUDA)
  find_package(CUDAToolkit REQUIRED)
  if(NOT SHARDBENCH_TORCH_CUDA)
    message(FATAL_ERROR "shardbench: SHARDBENCH_CUDA=ON but torch ${SHARDBENCH_TORCH_VERSION} is a CPU build")
  endif()
  set(SHARDBENCH_WITH_CUDA ON)
endif()

find_package(Torch REQUIRED)
# TorchConfig puts its flags (the C++11 ABI define) in TORCH_CXX_FLAGS.
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
message(STATUS "shardbench: torch ${SHARDBENCH_TORCH_VERSION} (CUDA '${SHARDBENCH_TORCH_CUDA}') from ${_torch_prefix}; GPU path ${SHARDBENCH_WITH_CUDA}")

get_filename_component(SHARDBENCH_TORCH_LIB_DIR "${TORCH_LIBRARY}" DIRECTORY)
