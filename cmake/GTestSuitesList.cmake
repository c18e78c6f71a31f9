# Run by cmake -P after a test binary links (cmake/GTestSuites.cmake): lists its suites and
# writes one add_test per suite into OUTPUT. A suite's COST is its number of tests, so a fresh
# clone (no ctest timing history) starts the big suites first instead of ending on one alone.
execute_process(COMMAND ${EXECUTABLE} --gtest_list_tests
  OUTPUT_VARIABLE listing RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests failed (${status}):\n${listing}")
endif()
file(READ ${PROPERTIES_FILE} properties)
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(suite "")

macro(add_suite)
  if(suite)
    string(APPEND script "add_test([==[${suite}]==] [==[${EXECUTABLE}]==] [==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${suite}]==] PROPERTIES COST ${tests}${properties})\n")
  endif()
endmacro()

foreach(line IN LISTS lines)
  # Suite lines start in column 0 and end with '.', maybe followed by "  # TypeParam = ...";
  # its tests follow, indented.
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    add_suite()
    set(suite ${CMAKE_MATCH_1})
    set(tests 0)
  elseif(line MATCHES "^  [^ ]")
    math(EXPR tests "${tests} + 1")
  endif()
endforeach()
add_suite()
file(WRITE ${OUTPUT} "${script}")
