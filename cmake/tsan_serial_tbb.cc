// Linked into every executable of a TSan build (XMLT_SANITIZE=thread, see CMakeLists.txt): caps
// TBB at one thread for the whole process.
//
// Why. Debian's TBB is not built with TSan, so TSan cannot see the synchronization inside libtbb:
// handing a task to a TBB worker thread (spawn, steal), recycling task objects between threads
// and joining at the end of a parallel loop all happen in uninstrumented code. With TBB worker
// threads, every parallel_for/reduce/sort then looks like races between the calling thread and
// the workers, on TBB's task objects and on the loop body's own data. A suppressions file cannot
// separate those from real races: a loop body runs with TBB frames beneath it, so any pattern
// that silences them silences our code as well.
//
// With max_allowed_parallelism = 1 no TBB worker thread is ever started and every TBB algorithm
// runs on the thread that calls it. The threads left are the ones our code starts (the device
// manager threads of engine/worker.h and the coordinator that feeds them, each running its own
// kernels), and TSan sees all of their hand-offs: the items of tbb::concurrent_bounded_queue are
// published with std::atomic operations in TBB's headers, which are instrumented. What this
// gives up: races between the iterations of one TBB loop are not looked for here (the normal
// build's tests check those loops' results, ASan their memory accesses). A TSan-built TBB would
// lift that limit.
//
// global_control's max_allowed_parallelism is the minimum over the live instances, so
// `xmltrain --threads N` (apps/cli.cc) and the tests' task_arenas of N threads run on one thread
// too; the results those tests compare do not depend on the thread count.
#include <tbb/global_control.h>

namespace {

// Constructed before any other static object, so before anything can start TBB.
__attribute__((init_priority(101)))
tbb::global_control serial_tbb(tbb::global_control::max_allowed_parallelism, 1);

}  // namespace
