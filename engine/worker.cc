// Device manager threads; see worker.h.
#include "engine/worker.h"

#include <pthread.h>

#include <chrono>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "kernels/context_lost.h"

namespace xmlt::engine {

Worker::Worker(size_t index, std::unique_ptr<Device> device, const data::Dataset* train,
               ResultQueue* results)
    : index_(index), device_(std::move(device)), train_(train), results_(results) {
  thread_ = std::thread([this] { Run(); });
  // Named after its device, so that a debugger or top shows who is who (15 characters at most).
  const std::string name = ("xmlt " + device_->spec().id).substr(0, 15);
  pthread_setname_np(thread_.native_handle(), name.c_str());
}

Worker::~Worker() {
  inbox_.push(Message{BatchTask{}, true, {}});
  thread_.join();
}

std::future<void> Worker::RunOnDevice(std::function<void(Device&)> job) {
  auto task = std::make_shared<std::packaged_task<void(Device&)>>(std::move(job));
  std::future<void> done = task->get_future();
  inbox_.push(Message{BatchTask{}, false, std::move(task)});
  return done;
}

void Worker::Run() {
  using Clock = std::chrono::steady_clock;
  for (;;) {
    Message message;
    inbox_.pop(message);
    if (message.stop) return;
    if (message.job) {
      (*message.job)(*device_);
      continue;
    }
    const BatchTask& task = message.task;
    BatchResult result;
    result.device = index_;
    result.count = task.count;
    result.id = task.id;
    if (failure_) {
      result.error = failure_;
      result.context_lost = failure_lost_context_;
      results_->push(result);
      continue;
    }
    try {
      if (task.inject_exit) std::_Exit(kInjectedExitCode);
      if (task.inject_fault)
        throw std::runtime_error(device_->spec().id + ": injected fault (--inject-fault)");
      if (task.inject_lost)
        throw kernels::ContextLost(device_->spec().id + ": injected loss of the device's context (--inject-fault)");
      const Clock::time_point start = Clock::now();
      const kernels::cpu::LossResult loss =
          device_->TrainBatch(*train_, task.rows, task.count, task.lr);
      result.compute_s = std::chrono::duration<double>(Clock::now() - start).count();
      result.loss_sum = task.inject_nan ? std::numeric_limits<double>::quiet_NaN() : loss.loss_sum;
      result.labeled_rows = loss.labeled_rows;
      result.busy_s = result.compute_s * task.slowdown;
      if (task.emulate_wait && task.slowdown > 1)
        std::this_thread::sleep_for(std::chrono::duration<double>(result.busy_s - result.compute_s));
    } catch (const kernels::ContextLost&) {
      result.error = failure_ = std::current_exception();
      result.context_lost = failure_lost_context_ = true;
    } catch (...) {
      result.error = failure_ = std::current_exception();
    }
    results_->push(result);
  }
}

}  // namespace xmlt::engine
