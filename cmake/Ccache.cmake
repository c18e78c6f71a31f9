# ccache in front of the compiler when available. The sloppiness settings let ccache cache
# translation units that use a precompiled header (ATen's headers are the bulk of every TU).
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  # CCACHE_BASEDIR: paths under the checkout hash as relative ones, so a fresh clone elsewhere
  # (CI's) reuses what another checkout compiled. CCACHE_NOHASHDIR: the same for builds with debug
  # info (build-fuzz/), whose hash would otherwise include the working directory.
  set(launcher ${CMAKE_COMMAND} -E env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=5G ${CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${launcher})
  message(STATUS "shardbench: using ccache (${CCACHE_PROGRAM})")
endif()
