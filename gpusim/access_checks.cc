// Racecheck and initcheck; see access_checks.h. All state is the host thread's: a block runs on
// one host thread from start to end, so nothing here takes a lock but the allocation registry's,
// on the first access to an allocation (or to host memory between allocations) in a block.
#include "gpusim/access_checks.h"

#include <link.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpusim/code_locations.h"
#include "gpusim/device_memory.h"
#include "gpusim/fault_in_kernel.h"
#include "gpusim/written_bits.h"

namespace gpusim::detail {

__thread bool access_checks_active = false;

namespace {

constexpr uint16_t kNobody = 0xffff;
constexpr unsigned kWarp = 32;

// What one block knows of one word (or byte) within the current barrier interval.
struct Record {
  uint64_t key = 0;     // the word's address * 2, or the byte's * 2 + 1
  uint32_t block = 0;   // the block run it belongs to; any other is an empty slot
  uint32_t epoch = 0;   // the barrier interval of the accesses below
  uint16_t writer = kNobody, reader = kNobody, other_reader = kNobody;
  uint32_t writer_warp_epoch = 0, reader_warp_epoch = 0, other_reader_warp_epoch = 0;
  const void* writer_pc = nullptr;
  const void* reader_pc = nullptr;
  const void* other_reader_pc = nullptr;
};

// Open addressing; a new block empties it by changing `block`, without touching the slots.
class RecordTable {
 public:
  void NextBlock() {
    if (++block_ == 0) {  // after 2^32 blocks: the stale slots could match again
      std::fill(slots_.begin(), slots_.end(), Record{});
      block_ = 1;
    }
    used_ = 0;
  }
  Record& Find(uint64_t key) {
    if (2 * (used_ + 1) > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
      Record& r = slots_[i];
      if (r.block != block_) {
        r = Record{};
        r.key = key;
        r.block = block_;
        r.epoch = UINT32_MAX;
        ++used_;
        return r;
      }
      if (r.key == key) return r;
    }
  }

 private:
  static size_t Hash(uint64_t key) { return size_t((key * 0x9E3779B97F4A7C15ull) >> 20); }
  void Grow() {
    std::vector<Record> old(std::max<size_t>(1024, slots_.size() * 2));
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Record& r : old) {
      if (r.block != block_) continue;
      size_t i = Hash(r.key) & mask;
      while (slots_[i].block == block_) i = (i + 1) & mask;
      slots_[i] = r;
    }
  }
  std::vector<Record> slots_;
  uint32_t block_ = 1;
  size_t used_ = 0;
};

struct CachedRegion {
  uintptr_t begin = 0, end = 0;  // end == begin: empty
  Region region;
};

// Static shared memory is thread-local storage here (kernel_builtins.h): the thread-local block,
// on this host thread, of the module that holds this code. The simulator and the device code are
// linked into one module (static libraries), so that block holds every __shared__ variable.
struct ThreadLocalBlock {
  uintptr_t begin = 0;
  size_t size = 0;
};

int FindThreadLocalBlock(dl_phdr_info* info, size_t, void* data) {
  const uintptr_t self = reinterpret_cast<uintptr_t>(&FindThreadLocalBlock);
  bool holds_this_code = false;
  size_t tls_size = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type == PT_LOAD && self >= start && self < start + segment.p_memsz) holds_this_code = true;
    if (segment.p_type == PT_TLS) tls_size = segment.p_memsz;
  }
  if (!holds_this_code) return 0;
  auto* block = static_cast<ThreadLocalBlock*>(data);
  block->begin = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
  block->size = info->dlpi_tls_data != nullptr ? tls_size : 0;
  return 1;
}

bool Reads(AccessKind k) { return k != AccessKind::kWrite && k != AccessKind::kAtomicStore; }
bool Writes(AccessKind k) { return k != AccessKind::kRead && k != AccessKind::kAtomicLoad; }
bool Plain(AccessKind k) { return k == AccessKind::kRead || k == AccessKind::kWrite; }

class Checker {
 public:
  Checker() { dl_iterate_phdr(FindThreadLocalBlock, &tls_); }

  void BeginGrid(const void* dynamic_shared, size_t dynamic_bytes, unsigned threads) {
    dynamic_begin_ = reinterpret_cast<uintptr_t>(dynamic_shared);
    dynamic_size_ = dynamic_bytes;
    // A count before the bits, as in device memory's (written_bits.h); only the bits matter here.
    shared_bits_.assign(1 + (tls_.size + dynamic_bytes + 63) / 64, 0);
    shared_bits_[0] = kNeverAllWritten;
    shared_written_ = shared_bits_.data() + 1;
    shared_words_ = shared_bits_.size() - 1;
    warp_epochs_.assign((threads + kWarp - 1) / kWarp, 0);
    const uint64_t generation = RegistryGeneration();
    if (generation != registry_generation_) {  // an allocation has gone: its record may be stale
      for (CachedRegion& c : regions_) c = CachedRegion{};
      for (CachedRegion& c : gaps_) c = CachedRegion{};
      last_ = &regions_[0];
      last_gap_ = &gaps_[0];
      registry_generation_ = generation;
    }
  }

  void BeginBlock() {
    table_.NextBlock();
    epoch_ = 0;
    std::fill(warp_epochs_.begin(), warp_epochs_.end(), 0);
    if (dirty_end_ > dirty_begin_) std::fill(shared_written_ + dirty_begin_, shared_written_ + dirty_end_, 0);
    shared_written_[-1] = kNeverAllWritten;
    dirty_begin_ = SIZE_MAX;
    dirty_end_ = 0;
  }

  void Barrier() { ++epoch_; }
  void WarpSynced(unsigned warp) { ++warp_epochs_[warp]; }

  void Check(const void* address, size_t bytes, AccessKind kind, const void* pc) {
    const ThreadView* me = current_thread;
    if (me == nullptr || bytes == 0) return;
    const uintptr_t a = reinterpret_cast<uintptr_t>(address);
    size_t shared_bit;
    if (a - tls_.begin < tls_.size) {
      shared_bit = a - tls_.begin;
    } else if (a - dynamic_begin_ < dynamic_size_) {
      shared_bit = tls_.size + (a - dynamic_begin_);
    } else {
      return CheckDevice(*me, a, bytes, kind, pc);
    }
    // Shared memory: initcheck against this block's own writes.
    const size_t end_bit = std::min(shared_bit + bytes, shared_words_ * 64);
    if (Reads(kind)) {
      const size_t unwritten = FirstUnwritten(shared_written_, shared_bit, end_bit);
      if (unwritten < end_bit)
        Fail(*me, "initcheck: " + Who(*me) + " reads " + DescribeShared(a + (unwritten - shared_bit)) + " at " +
                      DescribeCode(pc) + ", which no thread of the block has written");
    }
    if (Writes(kind)) {
      MarkWritten(shared_written_, shared_bit, end_bit);
      dirty_begin_ = std::min(dirty_begin_, shared_bit / 64);
      dirty_end_ = std::max(dirty_end_, (end_bit + 63) / 64);
    }
    if (Plain(kind)) Race(*me, a, bytes, kind, pc, true);
  }

 private:
  void CheckDevice(const ThreadView& me, uintptr_t a, size_t bytes, AccessKind kind, const void* pc) {
    const Region* region = LookUp(a);
    if (region == nullptr) return;  // host memory: the kernel's own stack, its arguments, pinned memory
    if (region->written != nullptr && !AllWritten(region->written)) {
      const size_t from = a - region->base, to = std::min(region->size, from + bytes);
      if (Reads(kind)) {
        const size_t unwritten = FirstUnwritten(region->written, from, to);
        if (unwritten < to)
          Fail(me, "initcheck: " + Who(me) + " reads " + DescribeDevice(*region, region->base + unwritten) + " at " +
                       DescribeCode(pc) + ", which nothing has written since it was allocated");
      }
      if (Writes(kind)) MarkWritten(region->written, from, to);
    }
    // From the block's first barrier on only: before it, every word a thread touches is its own in
    // a kernel that is right, and a kernel that never synchronizes its block (every element-wise
    // one) then costs no racecheck of device memory at all.
    if (Plain(kind) && epoch_ > 0) Race(me, a, bytes, kind, pc, false);
  }

  const Region* LookUp(uintptr_t a) {
    if (a - last_->begin < last_->end - last_->begin) return &last_->region;  // most accesses
    for (const CachedRegion& c : regions_)
      if (a - c.begin < c.end - c.begin) {
        last_ = &c;
        return &c.region;
      }
    if (a - last_gap_->begin < last_gap_->end - last_gap_->begin) return nullptr;  // the stack, arguments
    for (const CachedRegion& c : gaps_)
      if (a - c.begin < c.end - c.begin) {
        last_gap_ = &c;
        return nullptr;
      }
    return LookUpSlowly(a);
  }

  // The registry, under its lock; what it says is remembered until it changes (BeginGrid).
  const Region* LookUpSlowly(uintptr_t a) {
    Region region;
    uintptr_t gap_begin = 0, gap_end = 0;
    if (FindDeviceForChecks(a, &region, &gap_begin, &gap_end)) {
      CachedRegion& slot = regions_[next_region_++ % kCached];
      slot = {region.base, region.base + region.size, region};
      last_ = &slot;
      return &slot.region;
    }
    CachedRegion& gap = gaps_[next_gap_++ % kCached];
    gap = {gap_begin, gap_end, {}};
    last_gap_ = &gap;
    return nullptr;
  }

  // Racecheck of one access, word by word (or byte by byte where it is narrower or unaligned).
  void Race(const ThreadView& me, uintptr_t a, size_t bytes, AccessKind kind, const void* pc, bool shared) {
    const bool words = bytes >= 4 && a % 4 == 0 && bytes % 4 == 0;
    const size_t step = words ? 4 : 1;
    for (uintptr_t at = a; at < a + bytes; at += step) {
      Record& r = table_.Find(words ? at << 1 : (at << 1) | 1);
      RaceOne(me, r, at, kind, pc, shared);
    }
  }

  void RaceOne(const ThreadView& me, Record& r, uintptr_t at, AccessKind kind, const void* pc, bool shared) {
    const uint16_t t = uint16_t(me.linear);
    const uint32_t warp_epoch = warp_epochs_[me.linear / kWarp];
    if (r.epoch != epoch_) {  // a __syncthreads has passed since: every earlier access is ordered
      r.epoch = epoch_;
      r.writer = r.reader = r.other_reader = kNobody;
    }
    // Whether thread u's access (at its warp's epoch u_epoch) may run concurrently with this one.
    const auto unordered = [&](uint16_t u, uint32_t u_epoch) {
      return u != kNobody && u != t && !(u / kWarp == t / kWarp && u_epoch != warp_epoch);
    };
    if (kind == AccessKind::kRead) {
      if (unordered(r.writer, r.writer_warp_epoch))
        Hazard(me, "read-after-write", at, shared, pc, r.writer, r.writer_pc, "wrote");
      if (r.reader == kNobody || r.reader == t) {
        r.reader = t;
        r.reader_warp_epoch = warp_epoch;
        r.reader_pc = pc;
      } else {
        r.other_reader = t;
        r.other_reader_warp_epoch = warp_epoch;
        r.other_reader_pc = pc;
      }
      return;
    }
    if (unordered(r.writer, r.writer_warp_epoch))
      Hazard(me, "write-after-write", at, shared, pc, r.writer, r.writer_pc, "wrote");
    if (unordered(r.reader, r.reader_warp_epoch))
      Hazard(me, "write-after-read", at, shared, pc, r.reader, r.reader_pc, "read");
    if (unordered(r.other_reader, r.other_reader_warp_epoch))
      Hazard(me, "write-after-read", at, shared, pc, r.other_reader, r.other_reader_pc, "read");
    r.writer = t;
    r.writer_warp_epoch = warp_epoch;
    r.writer_pc = pc;
  }

  [[noreturn]] void Hazard(const ThreadView& me, const char* what, uintptr_t at, bool shared, const void* pc,
                           uint16_t other, const void* other_pc, const char* other_did) {
    const bool same_warp = other / kWarp == me.linear / kWarp;
    std::string where;
    if (shared) {
      where = DescribeShared(at);
    } else {
      Region region;
      uintptr_t gap_begin, gap_end;
      where = FindDeviceForChecks(at, &region, &gap_begin, &gap_end) ? DescribeDevice(region, at) : "device memory";
    }
    Fail(me, std::string("racecheck: ") + what + " hazard: " + Who(me) + " " +
                 (std::strcmp(what, "read-after-write") == 0 ? "reads " : "writes ") + where + " at " +
                 DescribeCode(pc) + ", which thread " + ThreadName(me, other) + " " + other_did + " at " +
                 DescribeCode(other_pc) + " with no barrier between them" +
                 (same_warp ? " (one warp: a __syncwarp or __syncthreads is missing)" : " (a __syncthreads is missing)"));
  }

  [[noreturn]] static void Fail(const ThreadView&, const std::string& what) { FaultInKernel(what); }

  std::string ThreadName(const ThreadView& me, unsigned linear) const {
    const dim3 d = me.block_dim;
    if (d.y == 1 && d.z == 1) return std::to_string(linear);
    return "(" + std::to_string(linear % d.x) + "," + std::to_string(linear / d.x % d.y) + "," +
           std::to_string(linear / (d.x * d.y)) + ")";
  }

  std::string Who(const ThreadView& me) const {
    const uint3 b = me.block_idx;
    return "thread " + ThreadName(me, me.linear) + " of block (" + std::to_string(b.x) + "," + std::to_string(b.y) +
           "," + std::to_string(b.z) + ")";
  }

  std::string DescribeShared(uintptr_t a) const {
    if (a - dynamic_begin_ < dynamic_size_) {
      const size_t offset = a - dynamic_begin_;
      return "dynamic shared memory word " + std::to_string(offset / 4) + " (byte " + std::to_string(offset) + ")";
    }
    size_t offset = 0;
    const std::string name = DescribeThreadLocal(a - tls_.begin, &offset);
    if (name.empty()) return "static shared memory at " + std::to_string(a);
    return "shared word " + std::to_string(offset / 4) + " (byte " + std::to_string(offset) + ") of " + name;
  }

  static std::string DescribeDevice(const Region& region, uintptr_t a) {
    const size_t offset = a - region.base;
    return "device memory word " + std::to_string(offset / 4) + " (byte " + std::to_string(offset) + ") of a " +
           std::to_string(region.size) + "-byte allocation on GPU " + std::to_string(region.device);
  }

  // Kernels address a handful of allocations, and their threads' stacks and arguments lie in a
  // handful of gaps between them: enough that the registry's lock is rarely taken.
  static constexpr size_t kCached = 16;
  // Shared memory's count of unwritten bytes is never read; it only has to stay far from zero.
  static constexpr uint64_t kNeverAllWritten = uint64_t{1} << 62;
  ThreadLocalBlock tls_;
  uintptr_t dynamic_begin_ = 0;
  size_t dynamic_size_ = 0;
  std::vector<uint64_t> shared_bits_;  // a count, then a bit per byte: thread-local block, dynamic shared
  uint64_t* shared_written_ = nullptr;  // the bits
  size_t shared_words_ = 0;
  size_t dirty_begin_ = SIZE_MAX, dirty_end_ = 0;  // words of shared_written_ set in this block
  std::vector<uint32_t> warp_epochs_;
  uint32_t epoch_ = 0;
  RecordTable table_;
  CachedRegion regions_[kCached], gaps_[kCached];
  const CachedRegion* last_ = &regions_[0];     // the region of the last device access
  const CachedRegion* last_gap_ = &gaps_[0];    // the gap of the last access to host memory
  unsigned next_region_ = 0, next_gap_ = 0;
  uint64_t registry_generation_ = UINT64_MAX;
};

// The host thread's checker, made at its first grid; a plain pointer for the hooks' sake (a
// thread_local object with a constructor would cost a guard test on every access).
thread_local Checker* mine = nullptr;

}  // namespace

void BeginGridChecks(const void* dynamic_shared, size_t dynamic_shared_bytes, unsigned threads) {
  if (mine == nullptr) {
    static thread_local std::unique_ptr<Checker> owner;
    owner = std::make_unique<Checker>();
    mine = owner.get();
  }
  mine->BeginGrid(dynamic_shared, dynamic_shared_bytes, threads);
  access_checks_active = true;
}

void EndGridChecks() { access_checks_active = false; }
void BeginBlockChecks() { mine->BeginBlock(); }
void BlockBarrierPassed() { mine->Barrier(); }
void WarpSynced(unsigned warp) { mine->WarpSynced(warp); }

void CheckAccess(const void* address, size_t bytes, AccessKind kind, const void* pc) {
  mine->Check(address, bytes, kind, pc);
}

}  // namespace gpusim::detail
