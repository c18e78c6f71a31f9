// The warnings a peer engine's libraries raised, for people to read: PyTorch repeats one warning
// per wrapped unit ("base_model.model.model.layers.0 has both parameters with requires_grad=True
// and False ..."), so warnings that differ only in their first word (the unit) are folded into
// one line naming the units. The console summary, the Markdown report and the dashboard show
// them this way; the result keeps them as raised.
#pragma once

#include <string>
#include <vector>

namespace shardbench {

std::vector<std::string> FoldPeerWarnings(const std::vector<std::string>& warnings);

}  // namespace shardbench
