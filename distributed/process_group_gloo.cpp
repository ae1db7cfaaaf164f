// ProcessGroupGloo: rendezvous over a syncgrad Store, a background worker thread that runs the collectives
// in call order through Gloo's options API (one tag per collective), and errors that name the peer rank.
#include "distributed/process_group_gloo.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/gather.h>
#include <gloo/scatter.h>
#include <gloo/types.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <signal.h>

#include <condition_variable>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "distributed/collective_fingerprint.h"
#include "distributed/errors.h"
#include "distributed/flight_recorder.h"
#include "distributed/gloo_counted_buffer.h"
#include "distributed/gloo_reduce.h"
#include "distributed/gloo_ring.h"
#include "distributed/gloo_small_allreduce.h"
#include "distributed/gloo_store.h"
#include "distributed/hash_store.h"
#include "profiler/events.h"
#include "tensor/check.h"
#include "tensor/ops/views.h"

namespace syncgrad::distributed {

namespace {

struct Task {
  std::shared_ptr<Work> work;
  std::function<void(uint32_t tag)> body;
  uint32_t tag = 0;
  // Point to point (instead of body): posts the message; a thread of its own finishes the Work.
  std::function<void(uint32_t tag, const std::shared_ptr<Work>& work)> post;
  // SYNCGRAD_DEBUG=detail: compared across ranks before the body runs.
  std::optional<CollectiveFingerprint> fingerprint;
  profiler::Handoff handoff;  // while tracing: the flow from the caller to the worker, and its Label
};


// The slot prefix of send/recv (Gloo's collectives use 0x01..0x08, the reduce-scatter ring 0x21).
constexpr uint8_t kPointToPointSlotPrefix = 0x22;

}  // namespace

struct ProcessGroupGloo::Shared {
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<gloo::Context> context;  // null for world size 1
  std::unique_ptr<GlooSmallAllreduce> small;  // messages up to GlooSmallAllreduce::kMaxBytes (world size > 1)
  std::vector<std::string> peer_addresses;  // rank -> "[ip]:port" of its Gloo listener
  std::shared_ptr<CommCounters> counters;
  std::shared_ptr<FlightRecorder> flight;  // null when turned off
  bool check_collectives = false;          // SYNCGRAD_DEBUG=detail

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Task> queue;
  bool stopping = false;
  bool running = false;
  std::exception_ptr broken;  // the first failure; later collectives fail with it
  std::string broken_message;
  uint64_t next_seq = 0;

  // Closes every connection so that a collective blocked in Gloo returns with an error.
  void abort() {
    std::shared_ptr<gloo::Context> ctx;
    {
      std::lock_guard lock(mutex);
      ctx = context;
    }
    if (!ctx) return;
    for (int peer = 0; peer < size; ++peer) {
      if (peer != rank) ctx->getPair(peer)->close();
    }
    small->abort();
  }

  // In place over `count` elements; small messages take the synchronous path. Returns the bytes it sent.
  uint64_t allreduce_buffer(void* data, size_t count, DType dtype, ReduceOp op, uint32_t tag) {
    if (!context) return 0;
    const size_t bytes = count * element_size(dtype);
    if (bytes <= GlooSmallAllreduce::kMaxBytes) {
      small->run(data, count, dtype, op);
      return count == 0 ? 0 : static_cast<uint64_t>(size - 1) * bytes;  // the legacy ring's fixed schedule
    }
    return run_allreduce(data, count, dtype, op, tag);
  }

  uint64_t run_allreduce(void* data, size_t count, DType dtype, ReduceOp op, uint32_t tag);

  // Records a failure as the group's first, unless one came before.
  void mark_broken(std::exception_ptr error, const std::string& message) {
    std::lock_guard lock(mutex);
    if (!broken) {
      broken = std::move(error);
      broken_message = message;
    }
  }

  // Any exception of a Gloo call as a syncgrad error (syncgrad's own pass through), with its message.
  std::pair<std::exception_ptr, std::string> as_error(const std::string& description) const {
    std::exception_ptr error;
    std::string message;
    try {
      throw;
    } catch (const syncgrad::Error& e) {
      error = std::current_exception();
      message = e.what();
    } catch (const std::exception& e) {
      error = translate(description, e.what());
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& translated) {
        message = translated.what();
      }
    }
    return {error, message};
  }

  static std::string what_of(const std::exception_ptr& error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "an unknown error";
    }
  }

  std::string peers_named_in(const std::string& text) const {
    std::string ranks;
    for (int r = 0; r < size; ++r) {
      if (r != rank && !peer_addresses[r].empty() && text.find(peer_addresses[r]) != std::string::npos) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    if (ranks.empty() && size == 2) ranks = std::to_string(1 - rank);
    return ranks;
  }

  // A Gloo failure as a syncgrad error naming this rank, the collective and the peer.
  std::exception_ptr translate(const std::string& description, const std::string& what) const {
    const std::string peers = peers_named_in(what);
    const std::string who = peers.empty() ? "a peer rank" : "rank " + peers;
    const std::string head = "rank " + std::to_string(rank) + ": " + description + " failed: ";
    // Gloo says "Timed out waiting ..." for a collective's deadline and "Read timeout" for a pair's: both mean
    // the peer went silent, not that its connection was lost.
    const bool timed_out = what.find("imed out") != std::string::npos || what.find("timeout") != std::string::npos;
    if (timed_out) {
      return std::make_exception_ptr(TimeoutError(
          head + "timed out after " + std::to_string(timeout.count()) + " ms waiting for " + who +
          " (it is stuck, dead, or calling a different collective; every rank must call the same collectives "
          "in the same order) [gloo: " + what + "]"));
    }
    return std::make_exception_ptr(PeerError(head + "lost the connection to " + who +
                                             " (it exited or crashed: its own output says why) [gloo: " + what +
                                             "]"));
  }

  void run_one(Task& task) {
    std::exception_ptr earlier;
    std::string earlier_message;
    {
      std::lock_guard lock(mutex);
      earlier = broken;
      earlier_message = broken_message;
    }
    if (earlier) {
      task.work->finish(std::make_exception_ptr(PeerError(
          "rank " + std::to_string(rank) + ": " + task.work->description() +
          " was not run: the process group failed earlier (" + earlier_message + ")")));
      return;
    }
    std::exception_ptr error;
    profiler::Scope span("gloo");  // the collective on the worker's track, named by its kind ("allreduce")
    if (span.active()) {
      const std::string& description = task.work->description();
      span.set_name(description.substr(0, description.find(' ')));
      span.arg("seq", task.tag);
      span.receive(task.handoff);
    }
    task.work->mark_started();
    try {
      if (task.fingerprint && context) {
        check_fingerprints(*task.fingerprint, rank, size, task.tag, [&](uint8_t* data, size_t bytes) {
          small->run(data, bytes, DType::u8, ReduceOp::kSum);
        });
      }
      if (task.post) {
        task.post(task.tag, task.work);
      } else {
        task.body(task.tag);
      }
    } catch (const std::exception&) {
      auto [translated, message] = as_error(task.work->description());
      error = translated;
      if (flight) {
        error = flight->explained(error, task.tag);
        message = what_of(error);
      }
      mark_broken(error, message);
    }
    if (error || !task.post) task.work->finish(error);
  }

  static void worker_loop(std::shared_ptr<Shared> self) {
    profiler::set_thread_name("gloo worker");
    for (;;) {
      Task task;
      {
        std::unique_lock lock(self->mutex);
        self->wake.wait(lock, [&] { return self->stopping || !self->queue.empty(); });
        if (self->stopping) break;
        task = std::move(self->queue.front());
        self->queue.pop_front();
        self->running = true;
      }
      self->run_one(task);
      std::lock_guard lock(self->mutex);
      self->running = false;
    }
    std::deque<Task> left;
    {
      std::lock_guard lock(self->mutex);
      left.swap(self->queue);
    }
    for (Task& task : left) {
      task.work->finish(std::make_exception_ptr(DistributedError(
          task.work->description() + " was not run: its process group was destroyed first")));
    }
  }
};

namespace {

// A Work whose timeout aborts the group's connections. Its default wait is a little longer than the
// collective's own timeout inside Gloo, so that Gloo's error (which names the peer) usually comes first.
class GlooWork : public Work {
 public:
  GlooWork(std::string description, std::chrono::milliseconds timeout,
           std::shared_ptr<ProcessGroupGloo::Shared> shared)
      : Work(std::move(description), timeout + std::chrono::milliseconds{2000}), shared_(std::move(shared)) {}

 protected:
  void on_timeout() override { shared_->abort(); }

 private:
  std::shared_ptr<ProcessGroupGloo::Shared> shared_;
};

// Gloo writes to its sockets with writev, which raises SIGPIPE when the peer is dead: that would kill this
// process (exit 141) before the error could name the peer. SIGPIPE is directed at the writing thread, so it is
// blocked, for as long as this object lives, in the thread that creates the group; the threads created
// meanwhile (Gloo's event loop, the group's worker, which starts the send/recv waiters) inherit the block for
// good, and their writes fail with EPIPE instead. A SIGPIPE raised in this thread meanwhile is discarded.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &previous_);
  }
  ~SigpipeBlock() {
    if (sigismember(&previous_, SIGPIPE)) return;
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      const timespec now{0, 0};
      sigtimedwait(&pipe, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t previous_;
};

std::shared_ptr<gloo::transport::Device> make_device(const ProcessGroupOptions& options, int rank) {
  gloo::transport::tcp::attr attr;
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (iface != nullptr && *iface != '\0') {
    attr.iface = iface;
  } else {
    attr.hostname = options.bind_address.empty() ? "127.0.0.1" : options.bind_address;
  }
  try {
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    const std::string where = attr.iface.empty() ? "address " + attr.hostname : "interface " + attr.iface;
    throw RendezvousError("rank " + std::to_string(rank) + ": Gloo cannot use " + where + " (" + e.what() +
                          "); set GLOO_SOCKET_IFNAME to the network interface that reaches the other ranks");
  }
}

// The "[ip]:port" part of a Gloo device description (which may carry more after it).
std::string listener_address(const std::string& device_text) {
  const size_t close = device_text.find(']');
  if (close == std::string::npos) return device_text;
  size_t end = close + 1;
  if (end < device_text.size() && device_text[end] == ':') {
    ++end;
    while (end < device_text.size() && std::isdigit(static_cast<unsigned char>(device_text[end]))) ++end;
  }
  return device_text.substr(device_text.find('['), end - device_text.find('['));
}

void check_cpu_contiguous(const Tensor& t, const char* collective, const char* what) {
  SYNCGRAD_CHECK(t.defined(), ValueError, collective, ": ", what, " is an undefined tensor");
  SYNCGRAD_CHECK(t.device().type == DeviceType::kCPU, DeviceError, collective,
                 ": the gloo backend handles CPU tensors, but ", what, " is on ", t.device().str(),
                 "; use backend \"nccl\" for CUDA tensors or copy it to the CPU");
  SYNCGRAD_CHECK(t.is_contiguous(), ValueError, collective, ": ", what,
                 " is not contiguous; pass tensor.contiguous() (collectives work in place on dense memory)");
}

void check_like(const Tensor& t, const Tensor& like, const char* collective, const std::string& what) {
  check_cpu_contiguous(t, collective, what.c_str());
  SYNCGRAD_CHECK(t.sizes() == like.sizes() && t.dtype() == like.dtype(), ShapeError, collective, ": ", what, " is ",
                 shape_str(t.sizes()), " ", dtype_name(t.dtype()), " but must match ", shape_str(like.sizes()), " ",
                 dtype_name(like.dtype()));
}

DescribedCall describe(const char* collective, uint64_t seq, const Tensor& t, const std::string& extra = "") {
  return {std::string(collective) + " #" + std::to_string(seq) + " (" + (extra.empty() ? "" : extra + ", ") +
              dtype_name(t.dtype()) + ", " + std::to_string(t.numel()) + " elements)",
          FlightCall{collective, &t, extra}};
}

// Gloo sizes its buffers by sizeof(T); only the element width matters to it.
template <class F>
void with_element_width(size_t width, F&& f) {
  switch (width) {
    case 1: f(static_cast<uint8_t*>(nullptr)); return;
    case 2: f(static_cast<uint16_t*>(nullptr)); return;
    case 4: f(static_cast<uint32_t*>(nullptr)); return;
    case 8: f(static_cast<uint64_t*>(nullptr)); return;
  }
  throw DTypeError("gloo: unsupported element width " + std::to_string(width));
}

}  // namespace

uint64_t ProcessGroupGloo::Shared::run_allreduce(void* data, size_t count, DType dtype, ReduceOp op,
                                                 uint32_t tag) {
  uint64_t sent = 0;
  gloo::AllreduceOptions opts(context);
  with_element_width(element_size(dtype), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    opts.template setOutput<T>(counted_buffer(*context, data, count * sizeof(T), &sent));
  });
  opts.setReduceFunction(reduce_kernel(dtype, op, "allreduce"));
  opts.setTag(tag);
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
  return sent;
}

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size,
                                   const ProcessGroupOptions& options)
    : ProcessGroup(rank, size, options), shared_(std::make_shared<Shared>()), store_(store) {
  const SigpipeBlock no_sigpipe;
  set_up_debugging(store);
  shared_->counters = counters();
  shared_->flight = flight_recorder();
  shared_->check_collectives = checks_collectives();
  shared_->rank = rank;
  shared_->size = size;
  shared_->timeout = options.timeout;
  shared_->peer_addresses.resize(size);
  if (size > 1) {
    auto device = make_device(options, rank);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options.timeout);
    GlooStore gloo_store(store, size);
    try {
      context->connectFullMesh(gloo_store, device);
    } catch (const syncgrad::Error&) {
      throw;
    } catch (const std::exception& e) {
      throw RendezvousError("rank " + std::to_string(rank) + ": Gloo could not connect to the other " +
                            std::to_string(size - 1) + " rank(s) (" + e.what() +
                            "); check that every rank can reach the others' addresses (GLOO_SOCKET_IFNAME picks "
                            "the interface)");
    }
    // A second, synchronous context for small messages (see gloo_small_allreduce.h).
    auto sync_context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    sync_context->setTimeout(options.timeout);
    GlooStore sync_store(std::make_shared<PrefixStore>("sync", store), size);
    sync_context->connectFullMesh(sync_store, device);
    shared_->small = std::make_unique<GlooSmallAllreduce>(sync_context);
    store->set("gloo_address/" + std::to_string(rank), listener_address(device->str()));
    for (int r = 0; r < size; ++r) {
      if (r != rank) shared_->peer_addresses[r] = store->get_string("gloo_address/" + std::to_string(r));
    }
    shared_->context = context;
  }
  std::thread(&Shared::worker_loop, shared_).detach();
}

ProcessGroupGloo::~ProcessGroupGloo() {
  bool busy;
  {
    std::lock_guard lock(shared_->mutex);
    busy = shared_->running;
    shared_->stopping = true;
  }
  shared_->wake.notify_all();
  // A collective still blocked in Gloo (a peer is gone) is woken by closing the connections; the detached
  // worker owns what it uses, so it can finish after this object is gone.
  if (busy) shared_->abort();
}

namespace {

// Numbers the collective and queues it; numbering and queueing happen under one lock so the tag order is
// the execution order even when several threads issue collectives.
std::shared_ptr<Work> enqueue(const std::shared_ptr<ProcessGroupGloo::Shared>& shared,
                              const std::function<DescribedCall(uint64_t seq)>& describe_seq,
                              std::function<void(uint32_t)> body,
                              std::function<void(uint32_t, const std::shared_ptr<Work>&)> post = {}) {
  std::shared_ptr<Work> work;
  {
    std::lock_guard lock(shared->mutex);
    const uint64_t seq = shared->next_seq;
    const DescribedCall described = describe_seq(seq);
    SYNCGRAD_CHECK(!shared->stopping, DistributedError, described.text, ": the process group is being destroyed");
    ++shared->next_seq;
    work = std::make_shared<GlooWork>(described.text, shared->timeout, shared);
    if (shared->flight) {
      shared->flight->record(seq, described.call);
      work->set_flight(shared->flight, seq);
    }
    Task task{work, std::move(body), static_cast<uint32_t>(seq), std::move(post), std::nullopt, profiler::hand_off()};
    if (shared->check_collectives && !task.post) task.fingerprint = fingerprint_of(described.call);
    shared->queue.push_back(std::move(task));
  }
  shared->wake.notify_one();
  return work;
}

}  // namespace

std::shared_ptr<Work> ProcessGroupGloo::allreduce(const Tensor& tensor, ReduceOp op) {
  check_cpu_contiguous(tensor, "allreduce", "the tensor");
  reduce_kernel(tensor.dtype(), op, "allreduce");  // an unsupported dtype/op fails here, in the caller
  auto shared = shared_;
  return enqueue(
      shared_, [&](uint64_t seq) { return describe("allreduce", seq, tensor, reduce_op_name(op)); },
      [=](uint32_t tag) {
        const uint64_t sent = shared->allreduce_buffer(tensor.data_ptr(), tensor.numel(), tensor.dtype(), op, tag);
        if (op == ReduceOp::kAvg) divide_in_place(tensor.data_ptr(), tensor.dtype(), tensor.numel(), shared->size);
        shared->counters->add("allreduce", sent);
      });
}

std::shared_ptr<Work> ProcessGroupGloo::broadcast(const Tensor& tensor, int root) {
  check_cpu_contiguous(tensor, "broadcast", "the tensor");
  SYNCGRAD_CHECK(root >= 0 && root < size(), ValueError, "broadcast: root ", root, " is outside 0..", size() - 1);
  auto shared = shared_;
  return enqueue(
      shared_, [&](uint64_t seq) { return describe("broadcast", seq, tensor, "root " + std::to_string(root)); },
      [=](uint32_t tag) {
        if (!shared->context) return shared->counters->add("broadcast", 0);
        if (tensor.nbytes() <= GlooSmallAllreduce::kMaxBytes) {
          // A sum of bytes where every rank but the root contributes zeros: the root's bytes, exactly.
          if (shared->rank != root) std::memset(tensor.data_ptr(), 0, tensor.nbytes());
          const uint64_t sent = shared->allreduce_buffer(tensor.data_ptr(), tensor.nbytes(), DType::u8,
                                                         ReduceOp::kSum, tag);
          return shared->counters->add("broadcast", sent);
        }
        uint64_t sent = 0;
        gloo::BroadcastOptions opts(shared->context);
        with_element_width(tensor.element_size(), [&](auto* type) {
          using T = std::remove_pointer_t<decltype(type)>;
          opts.template setOutput<T>(counted_buffer(*shared->context, tensor.data_ptr(), tensor.nbytes(), &sent));
        });
        opts.setRoot(root);
        opts.setTag(tag);
        opts.setTimeout(shared->timeout);
        gloo::broadcast(opts);
        shared->counters->add("broadcast", sent);
      });
}

namespace {

// Gloo's ring allgather of `bytes` from `input` into `output` (size * bytes; may contain input at its block).
uint64_t run_allgather(ProcessGroupGloo::Shared& shared, const void* input, void* output, size_t bytes,
                       size_t element_width, uint32_t tag) {
  uint64_t sent = 0;
  if (bytes == 0) return 0;
  if (!shared.context) {
    if (output != input) std::memmove(output, input, bytes);
    return 0;
  }
  gloo::AllgatherOptions opts(shared.context);
  with_element_width(element_width, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    opts.template setInput<T>(counted_buffer(*shared.context, input, bytes, &sent));
    opts.template setOutput<T>(counted_buffer(*shared.context, output, bytes * shared.size, &sent));
  });
  opts.setTag(tag);
  opts.setTimeout(shared.timeout);
  gloo::allgather(opts);
  return sent;
}

void check_root(int root, int size, const char* collective) {
  SYNCGRAD_CHECK(root >= 0 && root < size, ValueError, collective, ": root ", root, " is outside 0..", size - 1);
}

void check_peer(int peer, int rank, int size, const char* call, const char* what) {
  SYNCGRAD_CHECK(peer >= 0 && peer < size, ValueError, call, ": ", what, " rank ", peer, " is outside 0..", size - 1);
  SYNCGRAD_CHECK(peer != rank, ValueError, call, ": ", what, " rank ", peer,
                 " is this rank itself; copy the tensor instead of sending it to yourself");
}

}  // namespace

std::shared_ptr<Work> ProcessGroupGloo::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
  check_cpu_contiguous(input, "allgather", "the input");
  SYNCGRAD_CHECK(static_cast<int>(outputs.size()) == size(), ValueError, "allgather: got ", outputs.size(),
                 " output tensors for world size ", size(), "; pass one output per rank");
  for (size_t r = 0; r < outputs.size(); ++r) check_like(outputs[r], input, "allgather", "output " + std::to_string(r));
  auto shared = shared_;
  return enqueue(shared_, [&](uint64_t seq) { return describe("allgather", seq, input); }, [=](uint32_t tag) {
    const size_t bytes = input.nbytes();
    std::vector<uint8_t> gathered(bytes * shared->size);
    uint64_t sent = 0;
    if (shared->context && gathered.size() <= GlooSmallAllreduce::kMaxBytes) {
      // Each rank fills its own slot of a zeroed buffer; a byte-wise sum assembles all slots exactly (fewer
      // round trips than the ring for small messages, at size() times its bytes).
      std::memcpy(gathered.data() + shared->rank * bytes, input.data_ptr(), bytes);
      sent = shared->allreduce_buffer(gathered.data(), gathered.size(), DType::u8, ReduceOp::kSum, tag);
    } else {
      sent = run_allgather(*shared, input.data_ptr(), gathered.data(), bytes, input.element_size(), tag);
    }
    for (int r = 0; r < shared->size; ++r) std::memcpy(outputs[r].data_ptr(), gathered.data() + r * bytes, bytes);
    shared->counters->add("allgather", sent);
  });
}

std::shared_ptr<Work> ProcessGroupGloo::allgather_into_tensor(const Tensor& output, const Tensor& input) {
  check_cpu_contiguous(output, "allgather_into_tensor", "the output");
  check_cpu_contiguous(input, "allgather_into_tensor", "the input");
  SYNCGRAD_CHECK(output.dtype() == input.dtype(), DTypeError, "allgather_into_tensor: the output is ",
                 dtype_name(output.dtype()), " but the input is ", dtype_name(input.dtype()),
                 "; both must have the same dtype");
  SYNCGRAD_CHECK(output.numel() == input.numel() * size(), ValueError, "allgather_into_tensor: the output has ",
                 output.numel(), " elements but must have world size ", size(), " x ", input.numel(),
                 " (the input's) = ", input.numel() * size());
  auto shared = shared_;
  return enqueue(shared_, [&](uint64_t seq) { return describe("allgather_into_tensor", seq, input); },
                 [=](uint32_t tag) {
                   const uint64_t sent = run_allgather(*shared, input.data_ptr(), output.data_ptr(), input.nbytes(),
                                                       input.element_size(), tag);
                   shared->counters->add("allgather", sent);
                 });
}

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       ReduceOp op) {
  check_cpu_contiguous(output, "reduce_scatter", "the output");
  SYNCGRAD_CHECK(static_cast<int>(inputs.size()) == size(), ValueError, "reduce_scatter: got ", inputs.size(),
                 " input tensors for world size ", size(), "; pass one input per rank");
  for (size_t r = 0; r < inputs.size(); ++r)
    check_like(inputs[r], output, "reduce_scatter", "input " + std::to_string(r));
  reduce_kernel(output.dtype(), op, "reduce_scatter");  // an unsupported dtype/op fails here, in the caller
  auto shared = shared_;
  return enqueue(
      shared_, [&](uint64_t seq) { return describe("reduce_scatter", seq, output, reduce_op_name(op)); },
      [=](uint32_t tag) {
        std::vector<const void*> blocks;
        for (const Tensor& input : inputs) blocks.push_back(input.data_ptr());
        uint64_t sent = 0;
        ring_reduce_scatter(shared->context, blocks, output.data_ptr(), output.numel(), output.dtype(), op, tag,
                            shared->timeout, &sent);
        if (op == ReduceOp::kAvg) divide_in_place(output.data_ptr(), output.dtype(), output.numel(), shared->size);
        shared->counters->add("reduce_scatter", sent);
      });
}

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter_tensor(const Tensor& output, const Tensor& input,
                                                              ReduceOp op) {
  check_cpu_contiguous(output, "reduce_scatter_tensor", "the output");
  check_cpu_contiguous(input, "reduce_scatter_tensor", "the input");
  SYNCGRAD_CHECK(output.dtype() == input.dtype(), DTypeError, "reduce_scatter_tensor: the input is ",
                 dtype_name(input.dtype()), " but the output is ", dtype_name(output.dtype()),
                 "; both must have the same dtype");
  SYNCGRAD_CHECK(input.numel() == output.numel() * size(), ValueError, "reduce_scatter_tensor: the input has ",
                 input.numel(), " elements but must have world size ", size(), " x ", output.numel(),
                 " (the output's) = ", output.numel() * size(), "; pad the input to a multiple of the world size");
  reduce_kernel(output.dtype(), op, "reduce_scatter_tensor");
  auto shared = shared_;
  return enqueue(
      shared_, [&](uint64_t seq) { return describe("reduce_scatter_tensor", seq, input, reduce_op_name(op)); },
      [=](uint32_t tag) {
        std::vector<const void*> blocks;
        for (int r = 0; r < shared->size; ++r) {
          blocks.push_back(static_cast<const uint8_t*>(input.data_ptr()) + r * output.nbytes());
        }
        uint64_t sent = 0;
        ring_reduce_scatter(shared->context, blocks, output.data_ptr(), output.numel(), output.dtype(), op, tag,
                            shared->timeout, &sent);
        if (op == ReduceOp::kAvg) divide_in_place(output.data_ptr(), output.dtype(), output.numel(), shared->size);
        shared->counters->add("reduce_scatter", sent);
      });
}

std::shared_ptr<Work> ProcessGroupGloo::gather(const std::vector<Tensor>& outputs, const Tensor& input, int root) {
  check_cpu_contiguous(input, "gather", "the input");
  check_root(root, size(), "gather");
  if (rank() == root) {
    SYNCGRAD_CHECK(static_cast<int>(outputs.size()) == size(), ValueError, "gather: the root got ", outputs.size(),
                   " output tensors for world size ", size(), "; pass one output per rank");
    for (size_t r = 0; r < outputs.size(); ++r) check_like(outputs[r], input, "gather", "output " + std::to_string(r));
  } else {
    SYNCGRAD_CHECK(outputs.empty(), ValueError, "gather: rank ", rank(), " is not the root (", root, ") but got ",
                   outputs.size(), " output tensors; only the root passes outputs");
  }
  auto shared = shared_;
  return enqueue(
      shared_, [&](uint64_t seq) { return describe("gather", seq, input, "root " + std::to_string(root)); },
      [=](uint32_t tag) {
        const size_t bytes = input.nbytes();
        uint64_t sent = 0;
        if (!shared->context || bytes == 0) {
          if (!outputs.empty() && bytes > 0) std::memcpy(outputs[0].data_ptr(), input.data_ptr(), bytes);
          return shared->counters->add("gather", 0);
        }
        std::vector<uint8_t> gathered(shared->rank == root ? bytes * shared->size : 0);
        gloo::GatherOptions opts(shared->context);
        with_element_width(input.element_size(), [&](auto* type) {
          using T = std::remove_pointer_t<decltype(type)>;
          opts.template setInput<T>(counted_buffer(*shared->context, input.data_ptr(), bytes, &sent));
          if (shared->rank == root) {
            opts.setOutput(reinterpret_cast<T*>(gathered.data()), input.numel() * shared->size);
          }
        });
        opts.setRoot(root);
        opts.setTag(tag);
        opts.setTimeout(shared->timeout);
        gloo::gather(opts);
        for (size_t r = 0; r < outputs.size(); ++r) {
          std::memcpy(outputs[r].data_ptr(), gathered.data() + r * bytes, bytes);
        }
        shared->counters->add("gather", sent);
      });
}

std::shared_ptr<Work> ProcessGroupGloo::scatter(const Tensor& output, const std::vector<Tensor>& inputs, int root) {
  check_cpu_contiguous(output, "scatter", "the output");
  check_root(root, size(), "scatter");
  if (rank() == root) {
    SYNCGRAD_CHECK(static_cast<int>(inputs.size()) == size(), ValueError, "scatter: the root got ", inputs.size(),
                   " input tensors for world size ", size(), "; pass one input per rank");
    for (size_t r = 0; r < inputs.size(); ++r) check_like(inputs[r], output, "scatter", "input " + std::to_string(r));
  } else {
    SYNCGRAD_CHECK(inputs.empty(), ValueError, "scatter: rank ", rank(), " is not the root (", root, ") but got ",
                   inputs.size(), " input tensors; only the root passes inputs");
  }
  auto shared = shared_;
  return enqueue(
      shared_, [&](uint64_t seq) { return describe("scatter", seq, output, "root " + std::to_string(root)); },
      [=](uint32_t tag) {
        const size_t bytes = output.nbytes();
        uint64_t sent = 0;
        if (!shared->context || bytes == 0) {
          if (!inputs.empty() && bytes > 0) std::memcpy(output.data_ptr(), inputs[0].data_ptr(), bytes);
          return shared->counters->add("scatter", 0);
        }
        gloo::ScatterOptions opts(shared->context);
        with_element_width(output.element_size(), [&](auto* type) {
          using T = std::remove_pointer_t<decltype(type)>;
          if (shared->rank == root) {
            std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buffers;
            for (const Tensor& input : inputs) {
              buffers.push_back(counted_buffer(*shared->context, input.data_ptr(), bytes, &sent));
            }
            opts.template setInputs<T>(std::move(buffers));
          }
          opts.setOutput(static_cast<T*>(output.data_ptr()), output.numel());
        });
        opts.setRoot(root);
        opts.setTag(tag);
        opts.setTimeout(shared->timeout);
        gloo::scatter(opts);
        shared->counters->add("scatter", sent);
      });
}

std::shared_ptr<Work> ProcessGroupGloo::all_to_all(const Tensor& output, const Tensor& input) {
  check_cpu_contiguous(output, "all_to_all", "the output");
  check_like(input, output, "all_to_all", "the input");
  SYNCGRAD_CHECK(input.numel() % size() == 0, ValueError, "all_to_all: ", input.numel(),
                 " elements do not split into world size ", size(),
                 " equal blocks; pad the tensors to a multiple of the world size");
  auto shared = shared_;
  return enqueue(shared_, [&](uint64_t seq) { return describe("all_to_all", seq, input); }, [=](uint32_t tag) {
    const size_t bytes = input.nbytes();
    uint64_t sent = 0;
    if (!shared->context || bytes == 0) {
      if (bytes > 0 && output.data_ptr() != input.data_ptr()) std::memcpy(output.data_ptr(), input.data_ptr(), bytes);
      return shared->counters->add("all_to_all", 0);
    }
    gloo::AlltoallOptions opts(shared->context);
    with_element_width(input.element_size(), [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      opts.template setInput<T>(counted_buffer(*shared->context, input.data_ptr(), bytes, &sent));
      opts.setOutput(static_cast<T*>(output.data_ptr()), output.numel());
    });
    opts.setTag(tag);
    opts.setTimeout(shared->timeout);
    gloo::alltoall(opts);
    shared->counters->add("all_to_all", sent);
  });
}

namespace {

// Posts one send or receive on the worker thread and finishes `work` from a thread of its own once Gloo says the
// message left or arrived.
std::shared_ptr<Work> point_to_point(const std::shared_ptr<ProcessGroupGloo::Shared>& shared, const Tensor& tensor,
                                     int peer, uint32_t tag, bool sending) {
  const char* call = sending ? "send" : "recv";
  auto describe_seq = [&](uint64_t seq) {
    return describe(call, seq, tensor, std::string(sending ? "to" : "from") + " rank " + std::to_string(peer) +
                                           ", tag " + std::to_string(tag));
  };
  auto post = [=](uint32_t, const std::shared_ptr<Work>& self) {
    std::shared_ptr<gloo::transport::UnboundBuffer> buffer =
        shared->context->createUnboundBuffer(tensor.data_ptr(), tensor.nbytes());
    const uint64_t slot = gloo::Slot::build(kPointToPointSlotPrefix, tag);
    if (sending) {
      buffer->send(peer, slot);
    } else {
      buffer->recv(peer, slot);
    }
    std::thread([shared, self, buffer, tensor, sending, call] {
      std::exception_ptr error;
      try {
        const bool completed = sending ? buffer->waitSend(shared->timeout) : buffer->waitRecv(shared->timeout);
        if (!completed) throw gloo::IoException(std::string(call) + " was aborted");
        if (sending) shared->counters->add("send", tensor.nbytes());
      } catch (const std::exception&) {
        auto [translated, message] = shared->as_error(self->description());
        error = translated;
        shared->mark_broken(error, message);
      }
      self->finish(error);
    }).detach();
  };
  return enqueue(shared, describe_seq, nullptr, post);
}

}  // namespace

std::shared_ptr<Work> ProcessGroupGloo::send(const Tensor& tensor, int dst, uint32_t tag) {
  check_cpu_contiguous(tensor, "send", "the tensor");
  check_peer(dst, rank(), size(), "send", "destination");
  return point_to_point(shared_, tensor, dst, tag, true);
}

std::shared_ptr<Work> ProcessGroupGloo::recv(const Tensor& tensor, int src, uint32_t tag) {
  check_cpu_contiguous(tensor, "recv", "the tensor");
  check_peer(src, rank(), size(), "recv", "source");
  return point_to_point(shared_, tensor, src, tag, false);
}

std::shared_ptr<ProcessGroup> ProcessGroupGloo::new_group(const std::vector<int>& ranks) {
  const std::vector<int> members = checked_group_ranks(ranks, size());
  const uint64_t index = subgroups_created_++;
  const auto self = std::find(members.begin(), members.end(), rank());
  if (self == members.end()) return make_non_member_group("gloo", rank(), members, options());
  auto store = std::make_shared<PrefixStore>("subgroup/" + std::to_string(index), store_);
  auto group = std::make_shared<ProcessGroupGloo>(store, static_cast<int>(self - members.begin()),
                                                  static_cast<int>(members.size()), options());
  if (group->flight_recorder()) group->flight_recorder()->set_group_name("subgroup " + std::to_string(index));
  return group;
}

std::shared_ptr<Work> ProcessGroupGloo::barrier() {
  auto shared = shared_;
  auto name = [](uint64_t seq) {
    return DescribedCall{"barrier #" + std::to_string(seq), FlightCall{"barrier", nullptr, ""}};
  };
  return enqueue(shared_, name, [=](uint32_t tag) {
    if (!shared->context) return shared->counters->add("barrier", 0);
    int32_t token = 0;
    shared->counters->add("barrier", shared->allreduce_buffer(&token, 1, DType::i32, ReduceOp::kSum, tag));
  });
}

namespace {

const bool registered = [] {
  register_process_group_backend("gloo", [](std::shared_ptr<Store> store, int rank, int size,
                                            const ProcessGroupOptions& options) -> std::shared_ptr<ProcessGroup> {
    return std::make_shared<ProcessGroupGloo>(std::move(store), rank, size, options);
  });
  return true;
}();

}  // namespace

}  // namespace syncgrad::distributed
