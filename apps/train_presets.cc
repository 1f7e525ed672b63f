// The presets; see train_presets.h. The measurements behind the default preset are in
// docs/experiments/defaults.md.
#include "apps/train_presets.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xmlt::apps {

LrScaling ParseLrScaling(const std::string& text) {
  if (text == "none") return LrScaling::kNone;
  if (text == "sqrt") return LrScaling::kSqrt;
  if (text == "linear") return LrScaling::kLinear;
  throw std::invalid_argument("--lr-scaling must be none, sqrt or linear, not '" + text + "'");
}

const char* LrScalingName(LrScaling scaling) {
  switch (scaling) {
    case LrScaling::kSqrt: return "sqrt";
    case LrScaling::kLinear: return "linear";
    default: return "none";
  }
}

double LrScalingFactor(LrScaling scaling, size_t devices) {
  const double n = double(std::max<size_t>(devices, 1));
  switch (scaling) {
    case LrScaling::kSqrt: return std::sqrt(n);
    case LrScaling::kLinear: return n;
    default: return 1.0;
  }
}

PresetValues DefaultPreset(const std::string& algo, size_t devices, uint64_t batches_per_epoch) {
  PresetValues v;
  // Every replica runs the single-device optimizer (heavy-ball, 0.9) and the merge adds no
  // momentum of its own: a global momentum on top of the local one overshoots.
  v.momentum = 0;
  v.local_momentum = 0.9f;
  // Averaging n replicas that moved the same way gives one replica's progress for n replicas'
  // rows; the learning rate makes up for it (the linear scaling rule across devices). Adasum adds
  // orthogonal changes and averages parallel ones, and CROSSBOW's learners are pulled only 1/n of
  // the way to the center each step: both sit between the two, hence sqrt(n).
  v.lr_scaling = algo == "adaptive" || algo == "elastic" ? LrScaling::kLinear : LrScaling::kSqrt;
  // Two merges per epoch (the paper's 100 batches is more than two epochs of a small set: 8 merges
  // in a run), at most 100 batches, and at least one batch per device. More frequent merges cost
  // adaptive its lead over elastic (each merge takes as long on both), rarer ones accuracy.
  const uint64_t half = (batches_per_epoch + 1) / 2;
  v.mega_batch = uint32_t(std::clamp<uint64_t>(half, std::max<uint64_t>(devices, 1), 100));
  // Early on the model moves fast and replicas far apart average poorly: the first mega-batches
  // grow from one batch per device, doubling (run/mega_batch_work.h). Only the merges of adaptive
  // and elastic come after several batches per device; the others merge every round or batch. One
  // device has nothing to merge: its mega-batches only set when it is evaluated.
  v.mega_batch_warmup = (algo == "adaptive" || algo == "elastic") && devices > 1;
  if (algo == "sync") {
    // One plain SGD step of the averaged gradient per round is one batch of single-device SGD:
    // the global momentum is that optimizer's momentum, and nothing is divided.
    v.momentum = 0.9;
    v.local_momentum = 0;
    v.lr_scaling = LrScaling::kNone;
  } else if (algo == "adasum") {
    // Adasum combines gradients (Maleki et al.; Horovod applies the optimizer after it): one
    // plain SGD batch per device between merges, the momentum applied to the combination.
    // Merged less often, it lost 5 to 11 points on Bibtex.
    v.momentum = 0.9;
    v.local_momentum = 0;
    v.mega_batch = uint32_t(std::max<size_t>(devices, 1));
  }
  v.pert_renormalize = true;
  return v;
}

PresetValues PaperPreset() {
  PresetValues v;
  v.momentum = 0.9;         // gamma, "set to 0.9 according to the literature" (section 3.3)
  v.local_momentum = 0;     // each GPU runs mini-batch SGD (section 2)
  v.mega_batch = 100;       // "We use a value of 100 throughout the experiments" (section 5.3)
  v.lr_scaling = LrScaling::kNone;  // one learning rate for b_max, gridded (section 5.1)
  v.pert_renormalize = false;       // "this weight modification can result in denormalization"
  return v;
}

std::string PresetTable() {
  return R"(Presets of the multi-device knobs (--preset; flags given explicitly win):
  knob              default                                   paper (section 5.1)
  momentum          0: local momentum already accelerates;    0.9
                    on top of it the model overshoots
                    (sync, adasum: 0.9, the only momentum)
  local-momentum    0.9, the single-device optimizer          0, mini-batch SGD
                    (sync, adasum: 0)
  lr-scaling        linear (adaptive, elastic): an average     none
                    of n replicas moves as far as one;
                    sqrt (adasum, crossbow); none (sync)
  mega-batch        batches per epoch / 2 within [devices,     100
                    100]: two merges per epoch
                    (adasum: devices, one batch each)
  mega-batch-warmup on (adaptive, elastic): the first mega-    off
                    batches grow from one batch a device,
                    doubling; early merges of far-apart
                    replicas lose most of their progress
  pert-weights      normalized: raw weights sum above 1 and    raw
                    compound over hundreds of merges
  batch-min, beta, pert-thr, pert-delta: b_max / 8, b_min / 2, 0.1, 0.1 in both.
Measurements: docs/experiments/defaults.md.)";
}

}  // namespace xmlt::apps
