// Ends a finished process without LibTorch's static destructors.
//
// Why: LibTorch's static destructors deregister every operator it registered at load, ~0.2 s of
// the ~0.7 s a CPU process spends only loading and unloading it here (an empty main linked to
// libtorch: 0.71-1.06 s returning, 0.48-0.81 s with _exit; 4 launches each). Every rank, every
// CLI call and every test process paid it; a 2-rank run is three such processes.
//
// Call it from main, after the work's scope has ended: by then every object of ours is destroyed
// (files closed, locks released, children waited for) and what is left is LibTorch's and the C++
// runtime's bookkeeping. Standard streams are flushed first. Under AddressSanitizer the leak
// check that would have run at exit runs here (a no-op with detect_leaks=0).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <iostream>

#if defined(__SANITIZE_ADDRESS__)
#define SHARDBENCH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHARDBENCH_UNDER_ASAN 1
#endif
#endif
#ifdef SHARDBENCH_UNDER_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace shardbench {

[[noreturn]] inline void ExitWithoutStaticDestructors(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::clog.flush();
  std::fflush(nullptr);
#ifdef SHARDBENCH_UNDER_ASAN
  __lsan_do_leak_check();
#endif
  std::_Exit(code);
}

}  // namespace shardbench
