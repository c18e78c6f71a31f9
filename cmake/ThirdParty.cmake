# Third-party libraries, all from Debian packages (scripts/apt-packages.txt).
find_package(Threads REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(ZLIB REQUIRED)     # CRC-32 of checkpoint files
find_package(CLI11 REQUIRED)
find_package(Gloo REQUIRED)   # Debian's libgloo-dev; see engine/comm/README.md for why Gloo
if(SHARDBENCH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SHARDBENCH_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
