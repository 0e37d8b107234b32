// emu_runtime.cc - fibers, the block scheduler, shadow shared memory and the
// per-lane semantics of the warp collectives (see cuda_shim/emu_runtime.h).
#include "emu_runtime.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <vector>

#include "cuda_runtime.h"

uint3 threadIdx, blockIdx, blockDim, gridDim;

namespace fad_emu {
namespace {

// ------------------------------------------------------------------ fibers
// A fiber's saved state is its stack pointer; the callee-saved registers sit
// on its stack. fad_emu_switch(save, load) saves the current context into
// *save and resumes the one whose stack pointer is `load`.
extern "C" void fad_emu_switch(void** save_sp, void* load_sp);
#if defined(__x86_64__)
asm(R"(
  .text
  .p2align 4
  .globl fad_emu_switch
  .type fad_emu_switch, @function
fad_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size fad_emu_switch, .-fad_emu_switch
)");
#elif defined(__aarch64__)
asm(R"(
  .text
  .p2align 4
  .globl fad_emu_switch
  .type fad_emu_switch, %function
fad_emu_switch:
  sub sp, sp, #176
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x2, sp
  str x2, [x0]
  mov sp, x1
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  add sp, sp, #176
  ret
  .size fad_emu_switch, .-fad_emu_switch
)");
#else
#error "the kernel emulation needs x86-64 or aarch64"
#endif

constexpr std::size_t kStackBytes = 512 << 10;

enum class St { runnable, wait_warp, wait_block, done };

struct Copy {
  unsigned char* dst;
  unsigned char data[16];
};

struct Thread {
  void* sp = nullptr;
  char* stack = nullptr;
  St state = St::runnable;
  std::vector<Copy> open;                 // issued, not yet committed
  std::deque<std::vector<Copy>> groups;   // committed, not yet waited for
};

enum Kind { kShfl = 1, kMmaF16, kMmaBf16, kLdsm, kLdsmT, kSyncWarp };
const char* kind_name(int k) {
  switch (k) {
    case kShfl: return "shfl.sync";
    case kMmaF16: return "mma.sync (f16)";
    case kMmaBf16: return "mma.sync (bf16)";
    case kLdsm: return "ldmatrix";
    case kLdsmT: return "ldmatrix.trans";
    case kSyncWarp: return "__syncwarp";
  }
  return "?";
}

struct Warp {
  int arrived = 0;
  std::uint64_t gen = 0;
  std::uint32_t epoch = 0;
  int kind = 0;
  std::uint32_t in[32][10];
  std::uint32_t out[32][4];
  const unsigned char* addr[32];
};

// Shadow of one 4-byte word of shared memory.
struct Word {
  std::int16_t writer;  // thread id of the last completed write, -1: never written
  std::uint8_t pending;  // cp.async copies in flight to this word
  std::int8_t rd_lane_warp;
  std::uint32_t w_bepoch, w_wepoch;
  std::uint32_t rd_bepoch, rd_warps;  // warps that read since block epoch rd_bepoch
  std::uint32_t rd_wepoch, rd_lanes;  // lanes of rd_lane_warp that read since its epoch rd_wepoch
};

struct Block {
  int n = 0;
  std::vector<Thread> th;
  std::vector<Warp> warps;
  int arrived = 0;
  std::uint64_t gen = 0;
  std::uint32_t epoch = 0;
  unsigned char* smem = nullptr;
  std::size_t smem_bytes = 0;
  std::vector<Word> shadow;
};

Block g_block;
int g_cur = 0;
void* g_sched_sp = nullptr;
void (*g_body)(const void*) = nullptr;
const void* g_ctx = nullptr;
std::string g_kernel;
std::vector<char*> g_stacks;
unsigned char* g_arena = nullptr;
std::size_t g_arena_bytes = 0;

Device g_device;
Stats g_stats;
int g_report_left = 8;
std::map<std::uintptr_t, std::size_t> g_allocs;
std::map<const void*, int> g_func_smem;

std::string where() {
  char buf[96];
  std::snprintf(buf, sizeof buf, " [block (%u,%u,%u) thread %d]", blockIdx.x, blockIdx.y, blockIdx.z, g_cur);
  return (g_kernel.empty() ? std::string("host") : g_kernel) + buf;
}

Thread& me() { return g_block.th[g_cur]; }
Warp& my_warp() { return g_block.warps[g_cur >> 5]; }

void yield() { fad_emu_switch(&me().sp, g_sched_sp); }

void fiber_entry() {
  g_body(g_ctx);
  Thread& t = me();
  bool in_flight = !t.open.empty();
  for (const auto& grp : t.groups) in_flight = in_flight || !grp.empty();
  if (in_flight)
    violation("cp.async copies issued and never waited for (cp.async.wait_group) before the thread exited");
  t.state = St::done;
  fad_emu_switch(&t.sp, g_sched_sp);
  std::abort();  // a finished fiber is never resumed
}

char* stack_for(int i) {
  while ((int)g_stacks.size() <= i) {
    void* m = mmap(nullptr, kStackBytes + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) fatal("cannot map a fiber stack");
    mprotect(m, 4096, PROT_NONE);  // guard page: an overflow faults instead of corrupting
    g_stacks.push_back(static_cast<char*>(m) + 4096);
  }
  return g_stacks[i];
}

void init_fiber(Thread& t, int i) {
  t.stack = stack_for(i);
  auto top = reinterpret_cast<std::uintptr_t>(t.stack + kStackBytes) & ~std::uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top);
#if defined(__x86_64__)
  *--sp = nullptr;                                       // fiber_entry's (unused) return address
  *--sp = reinterpret_cast<void*>(&fiber_entry);         // popped by `ret`
  for (int r = 0; r < 6; ++r) *--sp = nullptr;           // rbp rbx r12-r15
#else
  sp -= 22;                                              // 176 bytes of saved registers
  for (int r = 0; r < 22; ++r) sp[r] = nullptr;
  sp[11] = reinterpret_cast<void*>(&fiber_entry);        // x30, the link register
#endif
  t.sp = sp;
  t.state = St::runnable;
  t.open.clear();
  t.groups.clear();
}

std::string kernel_name(const void* fn) {
  Dl_info info;
  if (dladdr(fn, &info) == 0 || info.dli_sname == nullptr) return "kernel";
  int status = 0;
  char* d = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::string name = status == 0 && d ? d : info.dli_sname;
  std::free(d);
  if (name.size() > 200) name = name.substr(0, 200) + "...";
  return name;
}

// ------------------------------------------------------- shadow checks
bool in_smem(const void* p, std::size_t n) {
  auto a = reinterpret_cast<const unsigned char*>(p);
  return a >= g_block.smem && a + n <= g_block.smem + g_block.smem_bytes;
}

Word& word_at(const void* p) {
  return g_block.shadow[(reinterpret_cast<const unsigned char*>(p) - g_block.smem) >> 2];
}

// A read by thread t (warp_wide: on behalf of the whole warp, as ldmatrix).
void check_read(const void* p, int t, bool warp_wide, const char* what) {
  Word& s = word_at(p);
  const int w = t >> 5, lane = t & 31;
  const std::uint32_t wep = g_block.warps[w].epoch;
  if (s.pending) {
    violation(std::string(what) + " reads shared memory whose cp.async has not completed (no cp.async.wait_group)");
  } else if (s.writer < 0) {
    violation(std::string(what) + " reads shared memory never written (uninitialised)");
  } else if (s.writer != t || warp_wide) {
    const int ww = s.writer >> 5;
    if (ww == w) {
      if (s.w_wepoch == wep)
        violation(std::string(what) + " reads data another lane of its warp wrote with no __syncwarp between");
    } else if (s.w_bepoch == g_block.epoch) {
      violation(std::string(what) + " reads data another warp wrote with no __syncthreads between");
    }
  }
  if (s.rd_bepoch != g_block.epoch) s.rd_bepoch = g_block.epoch, s.rd_warps = 0;
  s.rd_warps |= 1u << w;
  if (s.rd_lane_warp != w || s.rd_wepoch != wep) s.rd_lane_warp = (std::int8_t)w, s.rd_wepoch = wep, s.rd_lanes = 0;
  s.rd_lanes |= warp_wide ? 0xffffffffu : 1u << lane;
}

// Hazards of a write by thread t that lands now (or, for cp.async, at some
// point before the issuing thread's wait).
void check_write_hazards(const void* p, int t, const char* what) {
  Word& s = word_at(p);
  const int w = t >> 5, lane = t & 31;
  const std::uint32_t wep = g_block.warps[w].epoch;
  if (s.pending) violation(std::string(what) + " writes shared memory with a cp.async to it still in flight");
  if (s.writer >= 0 && s.writer != t) {
    const int ww = s.writer >> 5;
    if (ww == w ? s.w_wepoch == wep : s.w_bepoch == g_block.epoch)
      violation(std::string(what) + " overwrites data another " + (ww == w ? "lane" : "warp") +
                " wrote with no " + (ww == w ? "__syncwarp" : "__syncthreads") + " between");
  }
  if (s.rd_bepoch == g_block.epoch && (s.rd_warps & ~(1u << w)))
    violation(std::string(what) + " overwrites data another warp read with no __syncthreads between");
  else if (s.rd_lane_warp == w && s.rd_wepoch == wep && (s.rd_lanes & ~(1u << lane)))
    violation(std::string(what) + " overwrites data another lane of its warp read with no __syncwarp between");
}

void complete_write(const void* p, int t) {
  Word& s = word_at(p);
  s.writer = (std::int16_t)t;
  s.w_bepoch = g_block.epoch;
  s.w_wepoch = g_block.warps[t >> 5].epoch;
  s.rd_warps = 0;
  s.rd_lanes = 0;
}

bool check_smem_access(const void* p, std::size_t n, const char* what) {
  if (!in_smem(p, n)) {
    violation(std::string(what) + " outside the block's shared memory");
    return false;
  }
  if (reinterpret_cast<std::uintptr_t>(p) % n != 0) {
    violation(std::string(what) + " misaligned shared-memory address");
    return false;
  }
  return true;
}

// --------------------------------------------------------- collectives
template <typename F>
void warp_collective(int kind, F&& compute) {
  Warp& w = my_warp();
  if (w.arrived == 0) {
    w.kind = kind;
  } else if (w.kind != kind) {
    fatal(std::string("divergent warp: lanes reached ") + kind_name(w.kind) + " and " + kind_name(kind) + " in " +
          where());
  }
  if (++w.arrived == 32) {
    w.arrived = 0;
    compute(w);
    ++w.gen;
    const int base = g_cur & ~31;
    for (int l = 0; l < 32; ++l)
      if (g_block.th[base + l].state == St::wait_warp) g_block.th[base + l].state = St::runnable;
    return;
  }
  const std::uint64_t gen = w.gen;
  me().state = St::wait_warp;
  while (w.gen == gen) yield();
}

float half_to_float(std::uint16_t h, bool bf16) {
  if (bf16) return __bfloat162float(__nv_bfloat16{h});
  return __half2float(__half{h});
}

}  // namespace

Device& device() { return g_device; }
Stats& stats() { return g_stats; }
void reset_stats() { g_stats = Stats{}; }
void set_report_limit(int n) { g_report_left = n; }

void violation(const std::string& what) {
  ++g_stats.violations;
  if (g_report_left > 0) {
    --g_report_left;
    std::fprintf(stderr, "EMULATION VIOLATION: %s in %s\n", what.c_str(), where().c_str());
  }
}

void fatal(const std::string& what) {
  std::fprintf(stderr, "EMULATION FATAL: %s\n", what.c_str());
  std::fflush(stderr);
  std::exit(2);
}

// ---------------------------------------------------------------- global
void* dev_alloc(std::size_t bytes) {
  const std::size_t n = (bytes + 255) & ~std::size_t(255);
  void* p = std::aligned_alloc(256, n == 0 ? 256 : n);
  if (p == nullptr) return nullptr;
  std::memset(p, 0xff, n == 0 ? 256 : n);  // poison: NaN in every float type
  g_allocs[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  return p;
}

void dev_free(void* p) {
  if (p == nullptr) return;
  auto it = g_allocs.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == g_allocs.end()) {
    violation("cudaFree of a pointer cudaMalloc did not return");
    return;
  }
  g_allocs.erase(it);
  std::free(p);
}

bool gmem_ok(const void* p, std::size_t n, const char* what) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = g_allocs.upper_bound(a);
  if (it != g_allocs.begin()) {
    --it;
    if (a >= it->first && a + n <= it->first + it->second) return true;
  }
  violation(std::string(what) + " outside every device allocation");
  return false;
}

// ------------------------------------------------------------- launches
int set_func_smem(const void* kernel, int bytes) {
  if (bytes < 0 || bytes > g_device.smem_optin) return cudaErrorInvalidValue;
  g_func_smem[kernel] = bytes;
  return cudaSuccess;
}

int run_grid(const void* kernel, const dim3& grid, int threads, int smem_bytes, void (*body)(const void*),
             const void* ctx) {
  ++g_stats.launches;
  if (threads <= 0 || threads > 1024 || threads % 32 != 0 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.y > 65535 || grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  const auto opt = g_func_smem.find(kernel);
  const int limit = smem_bytes <= 48 * 1024 ? 48 * 1024 : (opt == g_func_smem.end() ? 48 * 1024 : opt->second);
  if (smem_bytes > limit) return cudaErrorInvalidValue;
  if ((std::size_t)smem_bytes > g_arena_bytes) {
    std::free(g_arena);
    g_arena_bytes = ((std::size_t)smem_bytes + 127) & ~std::size_t(127);
    g_arena = static_cast<unsigned char*>(std::aligned_alloc(128, g_arena_bytes));
  }
  g_kernel = kernel_name(kernel);
  g_body = body;
  g_ctx = ctx;
  Block& b = g_block;
  b.n = threads;
  b.th.resize(threads);
  b.warps.assign(threads / 32, Warp{});
  b.smem = g_arena;
  b.smem_bytes = smem_bytes;
  gridDim = {grid.x, grid.y, grid.z};
  blockDim = {(unsigned)threads, 1, 1};
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        ++g_stats.blocks;
        blockIdx = {x, y, z};
        if (smem_bytes > 0) std::memset(b.smem, 0xff, smem_bytes);
        b.shadow.assign(((std::size_t)smem_bytes + 3) / 4, Word{-1, 0, -1, 0, 0, 0xffffffffu, 0, 0, 0});
        b.arrived = 0;
        b.epoch = 1;
        for (auto& w : b.warps) w = Warp{};
        for (int i = 0; i < threads; ++i) init_fiber(b.th[i], i);
        int done = 0;
        while (done < threads) {
          bool ran = false;
          for (int i = 0; i < threads; ++i) {
            if (b.th[i].state != St::runnable) continue;
            ran = true;
            g_cur = i;
            threadIdx = {(unsigned)i, 0, 0};
            fad_emu_switch(&g_sched_sp, b.th[i].sp);
            if (b.th[i].state == St::done) ++done;
          }
          if (!ran) {
            int at_block = 0, at_warp = 0;
            for (auto& t : b.th) at_block += t.state == St::wait_block, at_warp += t.state == St::wait_warp;
            g_cur = 0;
            fatal("deadlock in " + where() + ": " + std::to_string(at_block) + " threads at __syncthreads, " +
                  std::to_string(at_warp) + " at warp collectives, " + std::to_string(done) + " exited");
          }
        }
      }
  g_kernel.clear();
  return cudaSuccess;
}

unsigned char* dyn_smem() { return g_block.smem; }
int tid() { return g_cur; }

// -------------------------------------------------------------- barriers
void syncthreads() {
  Block& b = g_block;
  if (++b.arrived == b.n) {
    b.arrived = 0;
    ++b.epoch;
    for (auto& w : b.warps) ++w.epoch;
    ++b.gen;
    for (auto& t : b.th)
      if (t.state == St::wait_block) t.state = St::runnable;
    return;
  }
  const std::uint64_t gen = b.gen;
  me().state = St::wait_block;
  while (b.gen == gen) yield();
}

void syncwarp() {
  warp_collective(kSyncWarp, [](Warp& w) { ++w.epoch; });
}

float shfl_xor(float v, int mask) {
  if (mask < 0 || mask > 31) fatal("shfl_xor lane mask out of range in " + where());
  const int lane = g_cur & 31;
  Warp& w = my_warp();
  std::memcpy(&w.in[lane][0], &v, 4);
  warp_collective(kShfl, [mask](Warp& x) {
    for (int l = 0; l < 32; ++l) x.out[l][0] = x.in[l ^ mask][0];
  });
  float r;
  std::memcpy(&r, &w.out[lane][0], 4);
  return r;
}

// mma.sync.m16n8k16.row.col.f32 with the PTX ISA fragment layouts; lane
// l = 4g + t:
//   A (16x16): a0 (g, 2t..2t+1)   a1 (g+8, 2t..)   a2 (g, 2t+8..)   a3 (g+8, 2t+8..)
//   B (16x8):  b0 (k 2t..2t+1, n g)   b1 (k 2t+8.., n g)
//   C/D:       c0 c1 (g, 2t..2t+1)   c2 c3 (g+8, 2t..2t+1)
// The lower-indexed element sits in the low half of each register.
void mma_16816(bool bf16, float d[4], const std::uint32_t a[4], std::uint32_t b0, std::uint32_t b1) {
  ++g_stats.mma;
  const int lane = g_cur & 31;
  Warp& w = my_warp();
  std::memcpy(&w.in[lane][0], a, 16);
  w.in[lane][4] = b0;
  w.in[lane][5] = b1;
  std::memcpy(&w.in[lane][6], d, 16);
  warp_collective(bf16 ? kMmaBf16 : kMmaF16, [bf16](Warp& x) {
    float A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; ++l) {
      const int g = l >> 2, t = l & 3;
      const std::uint32_t* in = x.in[l];
      const int ar[4] = {g, g + 8, g, g + 8}, ac[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
      for (int r = 0; r < 4; ++r) {
        A[ar[r]][ac[r]] = half_to_float(in[r] & 0xffffu, bf16);
        A[ar[r]][ac[r] + 1] = half_to_float(in[r] >> 16, bf16);
      }
      B[2 * t][g] = half_to_float(in[4] & 0xffffu, bf16);
      B[2 * t + 1][g] = half_to_float(in[4] >> 16, bf16);
      B[2 * t + 8][g] = half_to_float(in[5] & 0xffffu, bf16);
      B[2 * t + 9][g] = half_to_float(in[5] >> 16, bf16);
      float c[4];
      std::memcpy(c, &in[6], 16);
      C[g][2 * t] = c[0];
      C[g][2 * t + 1] = c[1];
      C[g + 8][2 * t] = c[2];
      C[g + 8][2 * t + 1] = c[3];
    }
    for (int l = 0; l < 32; ++l) {
      const int g = l >> 2, t = l & 3;
      const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
      float out[4];
      for (int e = 0; e < 4; ++e) {
        float s = C[rows[e]][cols[e]];
        for (int k = 0; k < 16; ++k) s += A[rows[e]][k] * B[k][cols[e]];
        out[e] = s;
      }
      std::memcpy(x.out[l], out, 16);
    }
  });
  std::memcpy(d, w.out[lane], 16);
}

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lane l supplies the
// address of row l % 8 of matrix l / 8 (16 contiguous bytes, 16-byte aligned);
// r[i] of lane l is row l/4, elements 2(l%4), 2(l%4)+1 of matrix i, or with
// .trans, rows 2(l%4), 2(l%4)+1 of column l/4.
void ldmatrix_x4(std::uint32_t r[4], const void* row, bool trans) {
  ++g_stats.ldsm;
  const int lane = g_cur & 31;
  Warp& w = my_warp();
  w.addr[lane] = static_cast<const unsigned char*>(row);
  warp_collective(trans ? kLdsmT : kLdsm, [trans](Warp& x) {
    const int t0 = g_cur & ~31;
    bool ok = true;
    for (int l = 0; l < 32; ++l) {
      if (!check_smem_access(x.addr[l], 16, trans ? "ldmatrix.trans row" : "ldmatrix row")) {
        ok = false;
        continue;
      }
      for (int k = 0; k < 4; ++k) check_read(x.addr[l] + 4 * k, t0 + l, true, trans ? "ldmatrix.trans" : "ldmatrix");
    }
    // Bank groups: 8 rows of one matrix form one request; rows in the same
    // 16-byte bank group at different addresses serialise.
    for (int m = 0; m < 4; ++m) {
      int worst = 1;
      for (int i = 0; i < 8; ++i) {
        int same = 0;
        for (int j = 0; j < 8; ++j) {
          const auto ai = reinterpret_cast<std::uintptr_t>(x.addr[m * 8 + i]);
          const auto aj = reinterpret_cast<std::uintptr_t>(x.addr[m * 8 + j]);
          bool dup = false;
          for (int k = 0; k < j; ++k) dup = dup || x.addr[m * 8 + k] == x.addr[m * 8 + j];
          if (!dup && ((ai >> 4) & 7) == ((aj >> 4) & 7)) ++same;
        }
        if (same > worst) worst = same;
      }
      g_stats.ldsm_wavefronts += worst;
      ++g_stats.ldsm_phases;
    }
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        std::uint16_t lo = 0xffff, hi = 0xffff;
        if (ok) {
          if (!trans) {
            const unsigned char* p = x.addr[i * 8 + (l >> 2)] + 4 * (l & 3);
            std::memcpy(&lo, p, 2);
            std::memcpy(&hi, p + 2, 2);
          } else {
            std::memcpy(&lo, x.addr[i * 8 + 2 * (l & 3)] + 2 * (l >> 2), 2);
            std::memcpy(&hi, x.addr[i * 8 + 2 * (l & 3) + 1] + 2 * (l >> 2), 2);
          }
        }
        x.out[l][i] = lo | (std::uint32_t(hi) << 16);
      }
  });
  std::memcpy(r, w.out[lane], 16);
}

// ---------------------------------------------------------------- cp.async
void cp_async16(void* dst, const void* src, bool pred) {
  ++g_stats.cp_async;
  Copy c;
  c.dst = static_cast<unsigned char*>(dst);
  std::memset(c.data, 0, 16);
  if (!check_smem_access(dst, 16, "cp.async destination")) return;
  if (pred) {
    if (reinterpret_cast<std::uintptr_t>(src) % 16 != 0)
      violation("cp.async source not 16-byte aligned");
    else if (gmem_ok(src, 16, "cp.async source"))
      std::memcpy(c.data, src, 16);  // global inputs are not written during a kernel
  }
  for (int k = 0; k < 4; ++k) {
    check_write_hazards(c.dst + 4 * k, g_cur, "cp.async");
    ++word_at(c.dst + 4 * k).pending;
  }
  me().open.push_back(c);
}

void cp_async_commit() {
  Thread& t = me();
  t.groups.push_back(std::move(t.open));
  t.open.clear();
}

void cp_async_wait(int n) {
  Thread& t = me();
  while ((int)t.groups.size() > n) {
    for (const Copy& c : t.groups.front()) {
      std::memcpy(c.dst, c.data, 16);
      for (int k = 0; k < 4; ++k) {
        --word_at(c.dst + 4 * k).pending;
        complete_write(c.dst + 4 * k, g_cur);
      }
    }
    t.groups.pop_front();
  }
}

void smem_store(void* p, const void* v, std::size_t n) {
  if (!check_smem_access(p, n, "st.shared")) return;
  for (std::size_t k = 0; k < n; k += 4) check_write_hazards(static_cast<char*>(p) + k, g_cur, "st.shared");
  std::memcpy(p, v, n);
  for (std::size_t k = 0; k < n; k += 4) complete_write(static_cast<char*>(p) + k, g_cur);
}

void smem_load(void* out, const void* p, std::size_t n) {
  if (!check_smem_access(p, n, "ld.shared")) {
    std::memset(out, 0xff, n);
    return;
  }
  for (std::size_t k = 0; k < n; k += 4) check_read(static_cast<const char*>(p) + k, g_cur, false, "ld.shared");
  std::memcpy(out, p, n);
}

void gmem_load(void* out, const void* p, std::size_t n) {
  if (reinterpret_cast<std::uintptr_t>(p) % n != 0) violation("misaligned global load");
  if (gmem_ok(p, n, "global load"))
    std::memcpy(out, p, n);
  else
    std::memset(out, 0, n);
}

void gmem_store(void* p, const void* v, std::size_t n) {
  if (reinterpret_cast<std::uintptr_t>(p) % n != 0) violation("misaligned global store");
  if (gmem_ok(p, n, "global store")) std::memcpy(p, v, n);
}

void gmem_atomic_add(float* p, float v) {
  ++g_stats.atomics;
  if (reinterpret_cast<std::uintptr_t>(p) % 4 != 0) violation("misaligned atomicAdd");
  if (gmem_ok(p, 4, "atomicAdd")) *p += v;
}

void gmem_atomic_add2(float* p, float v0, float v1) {
  ++g_stats.atomics;
  if (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) violation("misaligned atomicAdd.v2");
  if (gmem_ok(p, 8, "atomicAdd.v2")) {
    p[0] += v0;
    p[1] += v1;
  }
}

}  // namespace fad_emu

cudaError_t& emu_last_error() {
  static cudaError_t e = cudaSuccess;
  return e;
}
