// PNG copies of the SVG pictures through librsvg's rsvg-convert (Debian's librsvg2-bin) where it is on PATH;
// syncgrad does not depend on it.
#pragma once

#include <string>

namespace syncgrad::plot {

// Whether an executable rsvg-convert is on PATH.
bool rsvg_convert_available();
// Renders `svg` into `png` with rsvg-convert; IOError naming the files and rsvg-convert's exit status when it
// fails.
void svg_to_png(const std::string& svg, const std::string& png);

}  // namespace syncgrad::plot
