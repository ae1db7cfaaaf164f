// GPTConfig parsing, printing and validation.
#include "models/gpt_config.h"

#include <charconv>
#include <sstream>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::models {
namespace {

constexpr const char* kAllowedKeys = "vocab_size, block_size, n_layer, n_head, n_embd, dropout, bias";

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

[[noreturn]] void bad_value(const std::string& key, const std::string& value, const std::string& expected) {
  throw ValueError("--model-config: " + key + "=\"" + value + "\" is not " + expected + " (keys: " + kAllowedKeys +
                   ")");
}

int64_t parse_int(const std::string& key, const std::string& value) {
  int64_t out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (value.empty() || ec != std::errc() || ptr != end) bad_value(key, value, "an integer");
  return out;
}

double parse_double(const std::string& key, const std::string& value) {
  double out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (value.empty() || ec != std::errc() || ptr != end) bad_value(key, value, "a number");
  return out;
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  bad_value(key, value, "a boolean (true/false or 1/0)");
}

void apply(GPTConfig& c, const std::string& key, const std::string& value) {
  if (key == "vocab_size") c.vocab_size = parse_int(key, value);
  else if (key == "block_size") c.block_size = parse_int(key, value);
  else if (key == "n_layer") c.n_layer = parse_int(key, value);
  else if (key == "n_head") c.n_head = parse_int(key, value);
  else if (key == "n_embd") c.n_embd = parse_int(key, value);
  else if (key == "dropout") c.dropout = parse_double(key, value);
  else if (key == "bias") c.bias = parse_bool(key, value);
  else throw ValueError("--model-config: unknown key \"" + key + "\" for gpt; allowed keys: " + kAllowedKeys);
}

}  // namespace

GPTConfig GPTConfig::parse(const std::string& text) {
  GPTConfig c;
  std::stringstream pairs(text);
  std::string pair;
  while (std::getline(pairs, pair, ',')) {
    if (trimmed(pair).empty()) continue;
    const size_t eq = pair.find('=');
    SYNCGRAD_CHECK(eq != std::string::npos, ValueError, "--model-config: \"", trimmed(pair),
                   "\" is not key=value (keys: ", kAllowedKeys, ")");
    apply(c, trimmed(pair.substr(0, eq)), trimmed(pair.substr(eq + 1)));
  }
  c.validate();
  return c;
}

std::string GPTConfig::to_string() const {
  std::ostringstream out;
  out << "vocab_size=" << vocab_size << ",block_size=" << block_size << ",n_layer=" << n_layer << ",n_head=" << n_head
      << ",n_embd=" << n_embd << ",dropout=" << dropout << ",bias=" << (bias ? "true" : "false");
  return out.str();
}

void GPTConfig::validate() const {
  const std::pair<const char*, int64_t> sizes[] = {{"vocab_size", vocab_size}, {"block_size", block_size},
                                                   {"n_layer", n_layer},       {"n_head", n_head},
                                                   {"n_embd", n_embd}};
  for (const auto& [key, value] : sizes) {
    SYNCGRAD_CHECK(value >= 1, ValueError, "--model-config: ", key, "=", value, " must be >= 1");
  }
  SYNCGRAD_CHECK(n_embd % n_head == 0, ValueError, "--model-config: n_embd=", n_embd,
                 " is not a multiple of n_head=", n_head, " (each head gets n_embd / n_head channels)");
  SYNCGRAD_CHECK(dropout >= 0.0 && dropout < 1.0, ValueError, "--model-config: dropout=", std::to_string(dropout),
                 " must be in [0, 1)");
}

}  // namespace syncgrad::models
