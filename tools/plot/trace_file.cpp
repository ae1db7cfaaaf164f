// Reading and checking trace-event JSON (see trace_file.h).
#include "tools/plot/trace_file.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::plot {
namespace {

using nlohmann::json;

constexpr double kRoundingUs = 0.002;  // timestamps are written in microseconds with nanosecond digits

const std::string kPhases = "BEXiIsCtfPONDMbenSTpRc";

[[noreturn]] void bad(const std::string& what, size_t index, const std::string& problem) {
  throw ValueError(what + ": event " + std::to_string(index) + " " + problem +
                   " (not the trace-event format Perfetto and chrome://tracing read)");
}

const json& field(const json& e, const char* key, const std::string& what, size_t index) {
  if (!e.contains(key)) bad(what, index, std::string("has no \"") + key + "\"");
  return e.at(key);
}

void read_args(const json& e, TraceSpan& span, const std::string& what, size_t index) {
  if (!e.contains("args")) return;
  const json& args = e.at("args");
  if (!args.is_object()) bad(what, index, "has \"args\" that is not an object");
  for (const auto& [key, value] : args.items()) {
    if (value.is_number()) span.numbers[key] = value.get<double>();
    if (value.is_string()) span.texts[key] = value.get<std::string>();
  }
}

}  // namespace

double TraceSpan::number(const std::string& key, double fallback) const {
  const auto it = numbers.find(key);
  return it == numbers.end() ? fallback : it->second;
}

TraceFile parse_trace(const std::string& text, const std::string& what) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ValueError(what + ": not JSON (" + e.what() + ")");
  }
  const json* events = &document;
  if (document.is_object()) {
    SYNCGRAD_CHECK(document.contains("traceEvents") && document["traceEvents"].is_array(), ValueError, what,
                   ": a JSON object without a \"traceEvents\" array");
    events = &document["traceEvents"];
  }
  SYNCGRAD_CHECK(events->is_array(), ValueError, what, ": neither an array of events nor {\"traceEvents\": [...]}");
  TraceFile trace;
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object()) bad(what, i, "is not an object");
    const json& ph = field(e, "ph", what, i);
    if (!ph.is_string() || ph.get<std::string>().size() != 1 ||
        kPhases.find(ph.get<std::string>()[0]) == std::string::npos) {
      bad(what, i, "has an unknown \"ph\" " + ph.dump());
    }
    const char phase = ph.get<std::string>()[0];
    const json& name = field(e, "name", what, i);
    if (!name.is_string()) bad(what, i, "has a \"name\" that is not a string");
    const json& pid = field(e, "pid", what, i);
    const json& tid = field(e, "tid", what, i);
    if (!pid.is_number_integer() || !tid.is_number_integer())
      bad(what, i, "has a \"pid\" or \"tid\" that is not an integer");
    ++trace.events;
    if (phase == 'M') {
      if (!e.contains("args") || !e["args"].is_object()) bad(what, i, "(metadata) has no \"args\" object");
      const std::string kind = name.get<std::string>();
      if (kind == "process_name" || kind == "thread_name") {
        if (!e["args"].contains("name") || !e["args"]["name"].is_string()) bad(what, i, "names no \"args\".\"name\"");
        const std::string value = e["args"]["name"].get<std::string>();
        if (kind == "process_name") trace.process_names[pid.get<int>()] = value;
        if (kind == "thread_name") trace.thread_names[{pid.get<int>(), tid.get<int64_t>()}] = value;
      }
      continue;
    }
    const json& ts = field(e, "ts", what, i);
    if (!ts.is_number()) bad(what, i, "has a \"ts\" that is not a number");
    if (phase == 'X') {
      const json& dur = field(e, "dur", what, i);
      if (!dur.is_number() || dur.get<double>() < 0) bad(what, i, "(\"X\") has no \"dur\" >= 0");
      TraceSpan span;
      span.pid = pid.get<int>();
      span.tid = tid.get<int64_t>();
      span.name = name.get<std::string>();
      span.category = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
      span.ts_us = ts.get<double>();
      span.dur_us = dur.get<double>();
      read_args(e, span, what, i);
      trace.spans.push_back(std::move(span));
    } else if (phase == 's' || phase == 't' || phase == 'f') {
      const json& id = field(e, "id", what, i);
      if (!id.is_number_unsigned() && !id.is_string())
        bad(what, i, "(flow) has an \"id\" that is neither a number nor a string");
      TraceFlow flow{phase,
                     id.is_number_unsigned() ? id.get<uint64_t>() : std::hash<std::string>{}(id.get<std::string>()),
                     pid.get<int>(), tid.get<int64_t>(), ts.get<double>()};
      trace.flows.push_back(flow);
    }
  }
  return trace;
}

TraceFile read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SYNCGRAD_CHECK(in, IOError, "cannot read the trace ", path, " (does it exist?)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_trace(text.str(), path);
}

std::vector<std::string> nesting_problems(const TraceFile& trace, size_t limit) {
  std::map<std::pair<int, int64_t>, std::vector<const TraceSpan*>> by_thread;
  for (const TraceSpan& s : trace.spans) by_thread[{s.pid, s.tid}].push_back(&s);
  std::vector<std::string> problems;
  for (auto& [thread, spans] : by_thread) {
    std::stable_sort(spans.begin(), spans.end(), [](const TraceSpan* a, const TraceSpan* b) {
      return a->ts_us != b->ts_us ? a->ts_us < b->ts_us : a->dur_us > b->dur_us;
    });
    std::vector<const TraceSpan*> open;
    for (const TraceSpan* s : spans) {
      while (!open.empty() && open.back()->end_us() <= s->ts_us + kRoundingUs) open.pop_back();
      if (!open.empty() && s->end_us() > open.back()->end_us() + kRoundingUs && problems.size() < limit) {
        std::ostringstream text;
        text << "pid " << thread.first << " tid " << thread.second << ": \"" << s->name << "\" [" << s->ts_us << ", "
             << s->end_us() << "] overlaps \"" << open.back()->name << "\" [" << open.back()->ts_us << ", "
             << open.back()->end_us() << "] without nesting in it";
        problems.push_back(text.str());
      }
      open.push_back(s);
    }
  }
  return problems;
}

}  // namespace syncgrad::plot
