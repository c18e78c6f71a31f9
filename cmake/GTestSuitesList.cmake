# Run by cmake -P after a test binary links (cmake/GTestSuites.cmake): lists its suites and
# writes one add_test per suite into OUTPUT. A suite's COST is its number of tests, so a fresh
# clone (no ctest timing history) starts the big suites first instead of ending on one alone.
execute_process(COMMAND ${EXECUTABLE} --gtest_list_tests
  OUTPUT_VARIABLE listing RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests failed (${status}):\n${listing}")
endif()
file(READ ${PROPERTIES_FILE} properties)
# Parameter comments ("  # GetParam() = ...", "  # TypeParam = ...") may hold any text, brackets
# and semicolons included, which a CMake list would split or join: they go before splitting.
string(REGEX REPLACE "  # [^\n]*" "" listing "${listing}")
string(REPLACE ";" "" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(suite "")

# A suite's time limit grows with its tests (5 min, plus 1 min a test): a hang in any one of them
# still ends it.
macro(add_suite)
  if(NOT suite STREQUAL "")
    math(EXPR timeout "300 + 60 * ${tests}")
    string(APPEND script "add_test([==[${suite}]==] [==[${EXECUTABLE}]==] [==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${suite}]==] PROPERTIES COST ${tests} TIMEOUT ${timeout}${properties})\n")
  endif()
endmacro()

foreach(line IN LISTS lines)
  # Suite lines start in column 0 and end with '.'; its tests follow, indented.
  if(line MATCHES "^([^ #][^ ]*)\\.$")
    add_suite()
    set(suite ${CMAKE_MATCH_1})
    set(tests 0)
  elseif(line MATCHES "^  [^ ]")
    math(EXPR tests "${tests} + 1")
  endif()
endforeach()
add_suite()
file(WRITE ${OUTPUT} "${script}")
