// Which of our engines: the unsharded reference, FSDP1-style flat parameters or FSDP2-style
// per-parameter shards. Its own header so that what only needs the kind (the memory model,
// checkpoints) does not pull in the engine interface.
#pragma once

#include <string>

namespace shardbench::shard {

enum class EngineKind { kReference, kFlat, kPerParam };
// "reference" | "flat" | "per_param": the scenario's `engine` values, and what checkpoints record.
const char* EngineKindName(EngineKind kind);
// InputError naming `field` for anything else.
EngineKind ParseEngineKind(const std::string& name, const std::string& field);

}  // namespace shardbench::shard
