// Chooses the job's store token: given (--token or SYNCGRAD_STORE_TOKEN, which every node must share), freshly
// drawn from /dev/urandom on a single node, or named after the srun step; and the job's id.
#include "tools/launch/token.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "tensor/check.h"
#include "tools/launch/errors.h"
#include "tools/launch/sha256.h"

namespace syncgrad::launch {

std::string random_token() {
  unsigned char bytes[16];
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  SYNCGRAD_CHECK(urandom.read(reinterpret_cast<char*>(bytes), sizeof bytes), LaunchError,
                 "cannot read 16 random bytes from /dev/urandom for the store token (", std::strerror(errno),
                 "); pass a secret with --token instead");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

std::string job_token(const LaunchOptions& options) {
  if (options.token) return *options.token;
  if (options.nnodes == 1) return random_token();
  const char* from_env = std::getenv("SYNCGRAD_STORE_TOKEN");
  if (from_env != nullptr && *from_env != '\0') return from_env;
  if (options.slurm_job) return "slurm-" + *options.slurm_job;
  throw UsageError("--nnodes " + std::to_string(options.nnodes) +
                   " needs the job's store token, shared by all nodes: pass the same --token to every node's "
                   "launcher (or export the same SYNCGRAD_STORE_TOKEN on every node), e.g. generate one with "
                   "openssl rand -hex 16");
}

std::string job_id(const std::string& token, const std::optional<std::string>& slurm_job) {
  const char* from_env = std::getenv("SYNCGRAD_JOB_ID");
  if (from_env != nullptr && *from_env != '\0') return from_env;
  if (slurm_job && !slurm_job->empty()) return *slurm_job;
  return "sg-" + sha256_hex("syncgrad job id\n" + token).substr(0, 12);
}

}  // namespace syncgrad::launch
