// SHA-256 (FIPS 180-4), for deriving public names from secrets: the job id from the store token.
#pragma once

#include <string>
#include <string_view>

namespace syncgrad::launch {

// The digest of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace syncgrad::launch
