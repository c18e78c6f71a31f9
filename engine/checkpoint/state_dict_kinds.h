// The four kinds behind SaveStateDict/LoadStateDict (engine/checkpoint/state_dict.h), one file
// each: full_state_dict.cc, sharded_state_dict.cc, local_state_dict.cc, adapter_export.cc.
#pragma once

#include "engine/checkpoint/state_dict.h"

namespace shardbench::checkpoint {

SaveReport SaveFull(const StateDictTarget& target, const std::string& dir);
LoadReport LoadFull(const StateDictTarget& target, const std::string& dir, LoadOptions options);
SaveReport SaveSharded(const StateDictTarget& target, const std::string& dir);
LoadReport LoadSharded(const StateDictTarget& target, const std::string& dir, LoadOptions options);
SaveReport SaveLocal(const StateDictTarget& target, const std::string& dir);
LoadReport LoadLocal(const StateDictTarget& target, const std::string& dir, LoadOptions options);
SaveReport SaveAdapter(const StateDictTarget& target, const std::string& dir);
LoadReport LoadAdapter(const StateDictTarget& target, const std::string& dir, LoadOptions options);

}  // namespace shardbench::checkpoint
