// Slurm's compressed host lists, as in SLURM_JOB_NODELIST and SLURM_STEP_NODELIST, expanded with Slurm's own
// rules (what `scontrol show hostnames` prints): hosts are separated by commas (or blanks) outside brackets;
// a bracket holds comma-separated numbers and ranges whose zero padding is the width of the range's first
// number ("node[08-11]" is node08 .. node11, "n[8-10]" is n8, n9, n10); several bracket groups in one name
// multiply, the first one outermost ("rack[1-2]-n[01-02]" is rack1-n01, rack1-n02, rack2-n01, rack2-n02); text
// may follow a bracket ("gpu[1-2]-ib" is gpu1-ib, gpu2-ib).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace syncgrad::distributed {

// Slurm's limit on the hosts of one range ("n[1-100000]" is refused), which is also the most hosts a whole
// list may name here.
inline constexpr size_t kMaxSlurmRangeHosts = 65536;

// Every host of `list`, in Slurm's order. A malformed list (an unclosed or nested bracket, an empty or
// reversed range, a non-number, no host at all, more than kMaxSlurmRangeHosts hosts) is a RendezvousError
// naming `name` (the variable or flag it came from), the list and what is wrong.
std::vector<std::string> expand_slurm_nodelist(std::string_view list, std::string_view name);

// The first host of `list` (the node of rank 0 under srun), checked like expand_slurm_nodelist().
std::string first_slurm_host(std::string_view list, std::string_view name);

}  // namespace syncgrad::distributed
