// One manager thread per device. The scheduler talks to it only through messages: batches go
// into its inbox, results come back through a queue shared by all workers. An exception in the
// device is carried back in the result, so the coordinator can stop the run cleanly with the cause.
#pragma once

#include <tbb/concurrent_queue.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "data/dataset.h"
#include "engine/device.h"

namespace xmlt::engine {

// The exit status of a process ended by BatchTask::inject_exit.
inline constexpr int kInjectedExitCode = 86;

struct BatchTask {
  const uint64_t* rows = nullptr;  // owned by the scheduler, valid until the result is back
  size_t count = 0;
  float lr = 0;
  double slowdown = 1;    // emulated heterogeneity: the batch takes `slowdown` times its real time
  bool emulate_wait = false;  // wall clock: turn the extra time into real waiting
  bool inject_fault = false;  // tests and drills: fail as a broken device would, without training
  bool inject_nan = false;    // tests and drills: train, then report a NaN loss (a divergence)
  bool inject_exit = false;   // tests and drills: end this process at once, as a dying server would
  bool inject_lost = false;   // tests and drills: fail as a GPU whose context is lost (a sticky error)
  uint64_t id = 0;            // the scheduler's tag, returned in the result
};

struct BatchResult {
  size_t device = 0;
  uint64_t id = 0;  // the task's tag
  size_t count = 0;
  double loss_sum = 0;
  uint32_t labeled_rows = 0;
  double compute_s = 0;  // measured time of the step itself
  double busy_s = 0;     // compute_s * slowdown: what the emulated device spent
  std::exception_ptr error;
  // The error lost the device's whole context (kernels::ContextLost): every logical device sharing
  // its GPU is lost with it.
  bool context_lost = false;
};

using ResultQueue = tbb::concurrent_bounded_queue<BatchResult>;

class Worker {
 public:
  Worker(size_t index, std::unique_ptr<Device> device, const data::Dataset* train,
         ResultQueue* results);
  ~Worker();  // stops and joins the thread
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void Submit(const BatchTask& task) { inbox_.push(Message{task, false, {}}); }
  // Runs `job` on the device from the worker's own thread (where a GPU's context lives), between
  // batches; the future carries its exception, if any.
  std::future<void> RunOnDevice(std::function<void(Device&)> job);
  Device& device() { return *device_; }  // touch only while the worker is idle (between mega-batches)

 private:
  struct Message {
    BatchTask task;
    bool stop = false;
    std::shared_ptr<std::packaged_task<void(Device&)>> job;  // instead of a batch, when set
  };
  void Run();

  size_t index_;
  std::unique_ptr<Device> device_;
  const data::Dataset* train_;
  ResultQueue* results_;
  tbb::concurrent_bounded_queue<Message> inbox_;
  std::thread thread_;
  std::exception_ptr failure_;  // the device's first error (touched only by the worker's thread)
  bool failure_lost_context_ = false;
};

}  // namespace xmlt::engine
