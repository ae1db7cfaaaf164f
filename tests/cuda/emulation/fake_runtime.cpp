// A host-memory stand-in for the CUDA runtime calls the CUDA module makes, so the module's host code (device
// discovery, caching allocator, copies, geometry, value conversion, kernel registration) and test_cuda run
// on machines without a GPU: linked into libsyncgrad_cuda_emulated.so instead of libcudart (test fixture
// only, never installed). Devices: $SYNCGRAD_FAKE_CUDA_DEVICES (default 2), each with 1 GiB.
// Every runtime function the module calls must have a stand-in here (the emulated module fails to load
// otherwise, and the cuda_emulated test fails rather than skips).
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace {

constexpr size_t kDeviceBytes = size_t{1} << 30;

thread_local int current_device = 0;
thread_local cudaError_t last_error = cudaSuccess;

struct Memory {
  std::mutex mutex;
  std::unordered_map<void*, std::pair<int, size_t>> blocks;  // ptr -> (device, bytes)
  size_t used[64] = {};
};
Memory& memory() {
  static Memory* m = new Memory();
  return *m;
}

int fake_device_count() {
  static const int n = [] {
    const char* env = std::getenv("SYNCGRAD_FAKE_CUDA_DEVICES");
    int v = env ? std::atoi(env) : 2;
    return v < 0 ? 0 : (v > 64 ? 64 : v);
  }();
  return n;
}

cudaError_t fail(cudaError_t err) {
  last_error = err;
  return err;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (fake_device_count() == 0) return fail(cudaErrorNoDevice);
  *count = fake_device_count();
  return cudaSuccess;
}

const char* cudaGetErrorName(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    default: return "unknown error";
  }
}

cudaError_t cudaGetLastError() {
  cudaError_t err = last_error;
  last_error = cudaSuccess;
  return err;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= fake_device_count()) return fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::strcpy(prop->name, "emulated CUDA device");
  prop->major = 9;
  prop->minor = 0;
  prop->totalGlobalMem = kDeviceBytes;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = current_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= fake_device_count()) return fail(cudaErrorInvalidDevice);
  current_device = device;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  static int streams[64];
  *stream = reinterpret_cast<cudaStream_t>(&streams[current_device]);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

cudaError_t cudaMalloc(void** ptr, size_t size) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (size > kDeviceBytes - m.used[current_device]) return fail(cudaErrorMemoryAllocation);
  void* p = std::aligned_alloc(256, (size + 255) / 256 * 256);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  std::memset(p, 0xA5, size);  // fresh device memory holds garbage
  m.blocks[p] = {current_device, size};
  m.used[current_device] += size;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.blocks.find(ptr);
  if (it == m.blocks.end()) return fail(cudaErrorInvalidValue);
  m.used[it->second.first] -= it->second.second;
  m.blocks.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

// Pinned host memory: plain aligned host memory here (there is no DMA engine to page-lock it for).
cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) {
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  *free_bytes = kDeviceBytes - m.used[current_device];
  *total_bytes = kDeviceBytes;
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind, cudaStream_t) {
  std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t count, cudaStream_t) {
  std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t) {
  std::memset(dst, value, count);
  return cudaSuccess;
}

}  // extern "C"
