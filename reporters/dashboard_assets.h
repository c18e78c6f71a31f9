// The dashboard's static parts, embedded in the binary at build time (cmake/EmbedAssets.cmake):
// the page template (reporters/dashboard_template.html) and Chart.js from Debian's
// libjs-chart.js, so a dashboard needs no network and no file next to the binary.
#pragma once

#include <string>

namespace shardbench {

std::string ChartJsSource();
std::string DashboardTemplate();  // holds the markers @CHARTJS@ then @DATA@, once each

}  // namespace shardbench
