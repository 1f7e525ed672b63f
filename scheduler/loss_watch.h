// Divergence beyond non-finite values: a batch whose mean loss exceeds a multiple of the first
// batch's has blown up (a far too large --lr explodes the loss with every value still finite).
// The first batch meets the initial model, whose cross-entropy is about ln(labels), the loss of a
// uniform guess. An overconfident model can score a batch several times worse than that in a sound
// run, but a hundred times worse means probabilities of e^-400 on the targets: --divergence-factor
// defaults to 100 (measured: docs/long-runs.md, "Divergence"). (The lowest batch loss so far is no
// reference: near zero on easy batches, it made tenfold ratios common.)
#pragma once

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace xmlt::scheduler {

class LossWatch {
 public:
  explicit LossWatch(double factor) : factor_(factor) {}

  // Empty when the batch is fine; otherwise what went wrong.
  std::string Check(double batch_mean_loss) {
    if (!std::isfinite(batch_mean_loss)) return "non-finite loss";
    if (!(reference_ > 0)) {
      reference_ = std::max(batch_mean_loss, 1e-3);
      return "";
    }
    if (factor_ > 0 && batch_mean_loss > factor_ * reference_) {
      std::ostringstream what;
      what << "loss " << batch_mean_loss << ", above " << factor_ << "x the first batch's " << reference_
           << " (the divergence factor)";
      return what.str();
    }
    return "";
  }

  // Checkpoints carry the reference, so that a resumed run judges its batches as the run that
  // never stopped does (0: no batch seen yet).
  double reference() const { return reference_; }
  void Restore(double reference) { reference_ = std::isfinite(reference) && reference > 0 ? reference : 0; }

 private:
  double factor_;
  double reference_ = 0;  // the first batch's loss; 0 until then
};

}  // namespace xmlt::scheduler
