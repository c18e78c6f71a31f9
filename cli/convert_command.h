// `shardbench convert-checkpoint to-shardbench|to-dcp SRC OUT`: a SHARDED checkpoint between
// torch.distributed.checkpoint (PyTorch's FSDP) and ours, so that either side starts from the
// other's (`checkpoint.load_from`). Python at conversion time only: the peer's Python runs
// `python -m torch_fsdp.dcp_convert` (peers/torch_fsdp/dcp_convert.py), whose exit code this returns.
#pragma once

#include <string>

namespace shardbench::cli {

int ConvertCheckpointCommand(const std::string& direction, const std::string& src, const std::string& out);

}  // namespace shardbench::cli
