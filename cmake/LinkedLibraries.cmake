# A fuzz build (SHARDBENCH_FUZZ) links the libraries of a main build (SHARDBENCH_LINK_BUILD) as
# they are, instead of compiling every file of ours a second time: CI builds both, on 2 cores, and
# only the parsers of outside input need libFuzzer's coverage, ASan and UBSan (tests/fuzz/CMakeLists.txt
# compiles those, and the CLI, instrumented; their objects come first on the link line, so the
# archives' uninstrumented copies of the same files are never pulled in).
#
# The usage requirements below repeat engine/, harness/scenario/, reporters/ and harness/
# CMakeLists.txt: one left out there is a link or compile error of the fuzz build, in CI.
if(NOT SHARDBENCH_LINK_BUILD OR NOT EXISTS ${SHARDBENCH_LINK_BUILD}/CMakeCache.txt)
  message(FATAL_ERROR "SHARDBENCH_LINK_BUILD=${SHARDBENCH_LINK_BUILD} is not a configured build: a fuzz build links one (scripts/fuzz.sh passes build/)")
endif()
# The linked archives were compiled with or without the GPU path: the objects compiled here must
# see the same definitions (struct layouts differ), so take that build's choice.
load_cache(${SHARDBENCH_LINK_BUILD} READ_WITH_PREFIX LINKED_ SHARDBENCH_CUDA)
if(NOT LINKED_SHARDBENCH_CUDA STREQUAL SHARDBENCH_CUDA)
  message(FATAL_ERROR "SHARDBENCH_CUDA=${SHARDBENCH_CUDA} here but ${LINKED_SHARDBENCH_CUDA} in ${SHARDBENCH_LINK_BUILD}: configure both alike")
endif()

function(shardbench_linked_library name path)
  add_library(${name} STATIC IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES IMPORTED_LOCATION ${SHARDBENCH_LINK_BUILD}/${path})
  target_link_libraries(${name} INTERFACE ${ARGN})
endfunction()

shardbench_linked_library(shardbench_engine engine/libshardbench_engine.a
  stdc++ gloo ${TORCH_LIBRARIES} nlohmann_json::nlohmann_json ZLIB::ZLIB Threads::Threads ${CMAKE_DL_LIBS})
target_include_directories(shardbench_engine INTERFACE ${PROJECT_SOURCE_DIR})
if(SHARDBENCH_WITH_CUDA)
  target_compile_definitions(shardbench_engine INTERFACE SHARDBENCH_WITH_CUDA=1 USE_C10D_NCCL)
  target_link_libraries(shardbench_engine INTERFACE CUDA::cudart)
  if(TARGET CUDA::cupti)
    target_link_libraries(shardbench_engine INTERFACE CUDA::cupti)
  endif()
endif()
shardbench_linked_library(shardbench_scenarios harness/scenario/libshardbench_scenarios.a shardbench_engine yaml-cpp)
shardbench_linked_library(shardbench_reporters reporters/libshardbench_reporters.a
  shardbench_engine nlohmann_json::nlohmann_json yaml-cpp)
shardbench_linked_library(shardbench_harness harness/libshardbench_harness.a
  shardbench_scenarios shardbench_reporters shardbench_engine)
