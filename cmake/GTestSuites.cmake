# One ctest test per GoogleTest suite, not per test.
#
# Every test process loads LibTorch first (~0.6 s on this 2-core machine before any test code
# runs), so gtest_discover_tests' one process per test spent ~3 of CI's minutes starting
# processes. A suite runs its tests in one process; `ctest -R Suite` still picks a suite, and
# the test binary's --gtest_filter a single test. Suites list after each build, like
# gtest_discover_tests, so a new suite needs no CMake change.
#
#   shardbench_gtest_suites(TARGET [PROPERTIES prop value ...])
#
# A suite passes with its skipped tests (GTEST_SKIP) inside it: ctest cannot tell "all skipped"
# from "none passed" by output alone, so scripts/test.sh names every skipped test with its reason.
function(shardbench_gtest_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "PROPERTIES")
  set(properties "")
  foreach(word IN LISTS arg_PROPERTIES)
    string(APPEND properties " [==[${word}]==]")
  endforeach()
  set(dir ${CMAKE_CURRENT_BINARY_DIR})
  file(WRITE ${dir}/${target}_suite_properties.txt "${properties}")
  set(ctest_file ${dir}/${target}_suites.cmake)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D EXECUTABLE=$<TARGET_FILE:${target}> -D OUTPUT=${ctest_file}
            -D PROPERTIES_FILE=${dir}/${target}_suite_properties.txt
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/GTestSuitesList.cmake
    BYPRODUCTS ${ctest_file}
    VERBATIM)
  file(WRITE ${dir}/${target}_include.cmake
    "if(EXISTS [==[${ctest_file}]==])\n  include([==[${ctest_file}]==])\n"
    "else()\n  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${dir}/${target}_include.cmake)
endfunction()
