// A communicator that is rank `rank` of `world` for building sharded layouts in one process;
// any collective is an error (the layouts must not need one).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"

namespace shardbench::testing {

class LayoutOnlyComm : public comm::Communicator {
 public:
  LayoutOnlyComm(int rank, int world) : Communicator(rank, world, {}) {}
  std::string backend() const override { return "none"; }

 protected:
  comm::WorkHandle do_all_gather(const at::Tensor&, const at::Tensor&, const std::vector<int64_t>&) override { return fail(); }
  comm::WorkHandle do_reduce_scatter(const at::Tensor&, const at::Tensor&, const std::vector<int64_t>&) override {
    return fail();
  }
  comm::WorkHandle do_all_reduce(const at::Tensor&) override { return fail(); }
  comm::WorkHandle do_broadcast(const at::Tensor&, int) override { return fail(); }
  comm::WorkHandle do_scatter(const at::Tensor&, const at::Tensor&, int) override { return fail(); }
  comm::WorkHandle do_barrier() override { return fail(); }

 private:
  comm::WorkHandle fail() { throw std::logic_error("layout-only communicator: no collectives"); }
};

}  // namespace shardbench::testing
