// The virtual clock (timing.h) as the streams run work on it: the running operation's time and the
// host's. A file of its own, since timing.cc waits for the streams (streams.h) on a reset.
#pragma once

namespace gpusim::detail {

// The clock of one operation while it runs (operations may nest: a stream wait runs the other
// stream's work).
struct OpClock {
  double start = 0;  // when it may start
  double end = 0;    // when what it did so far finished
};
// Makes `clock` the running operation's; returns the outer one for LeaveOp.
OpClock* EnterOp(OpClock* clock);
void LeaveOp(OpClock* clock, OpClock* outer);
// The running operation starts no earlier than `time`.
void After(double time);
// When what the running operation did so far finished (0 outside an operation).
double Now();
// What the host knows has finished: it issues nothing earlier.
double HostNow();
void HostAdvance(double time);

}  // namespace gpusim::detail
