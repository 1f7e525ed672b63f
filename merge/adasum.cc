// The Adasum all-reduce on the CPU: one parallel pass over the model per tree level, each pass
// combining the previous level's pairs and measuring the next level's dot products while the
// chunk is still in cache. And the pairwise tree, for both, as the GPUs' reduce-scatter schedule.
#include "merge/adasum.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "merge/replica_blocks.h"

namespace xmlt::merge {
namespace {

// Parameters of one work item: a chunk of every replica (n x 32 KiB) stays in L2 between the
// combination of one level and the dot products of the next. Fixed, so that the partial sums and
// their order of summation never depend on the thread count.
constexpr size_t kChunk = 8192;

struct Chunk {
  size_t tensor, begin, end;
};

struct Dots {
  double ab = 0.0, aa = 0.0, bb = 0.0;
};

Dots PartialDots(const float* a, const float* b, size_t m) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
#pragma omp simd reduction(+ : ab, aa, bb)
  for (size_t j = 0; j < m; ++j) {
    const double x = a[j], y = b[j];
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return {ab, aa, bb};
}

void Combine(float* a, const float* b, size_t m, float ca, float cb) {
#pragma omp simd
  for (size_t j = 0; j < m; ++j) a[j] = ca * a[j] + cb * b[j];
}

// Tensor k spans [bounds[k], bounds[k + 1]).
std::vector<size_t> TensorBounds(const ReplicaSet& vectors) {
  std::vector<size_t> bounds = vectors.tensors;
  if (bounds.empty()) bounds.push_back(0);
  if (bounds[0] != 0) throw std::invalid_argument("adasum: the first tensor must start at 0");
  for (size_t k = 1; k < bounds.size(); ++k) {
    if (bounds[k] < bounds[k - 1] || bounds[k] > vectors.size) {
      throw std::invalid_argument("adasum: tensor offset " + std::to_string(bounds[k]) +
                                  " is not ascending within " + std::to_string(vectors.size) +
                                  " parameters");
    }
  }
  bounds.push_back(vectors.size);
  return bounds;
}

}  // namespace

std::vector<std::vector<TreePair>> PairwiseTreeLevels(size_t n) {
  std::vector<std::vector<TreePair>> levels;
  if (n < 2) return levels;
  size_t power = 1;
  while (power <= n / 2) power *= 2;
  const size_t m = n - power;
  std::vector<size_t> operands;
  if (m > 0) {
    levels.emplace_back();
    for (size_t i = 0; i < m; ++i) {
      levels.back().push_back({2 * i, 2 * i + 1});
      operands.push_back(2 * i);
    }
  }
  for (size_t i = 2 * m; i < n; ++i) operands.push_back(i);
  while (operands.size() > 1) {
    levels.emplace_back();
    std::vector<size_t> next;
    for (size_t j = 0; j < operands.size(); j += 2) {
      levels.back().push_back({operands[j], operands[j + 1]});
      next.push_back(operands[j]);
    }
    operands = std::move(next);
  }
  return levels;
}

AdasumSchedule AdasumReduceScatter(size_t n, size_t count) {
  AdasumSchedule schedule;
  std::vector<std::vector<AdasumStep>>& levels = schedule.levels;
  const std::vector<std::vector<TreePair>> tree = PairwiseTreeLevels(n);
  if (tree.empty()) {  // one replica: it holds the whole result
    schedule.slices.push_back({0, 0, count});
    return schedule;
  }
  size_t power = 1;
  while (power <= n / 2) power *= 2;
  const bool folds = n > power;
  if (folds) {
    levels.emplace_back();
    for (const TreePair& pair : tree[0]) levels.back().push_back({pair.left, pair.right, true, 0, count, {pair.left}});
  }
  std::vector<size_t> holder;  // o_j's replica
  for (const TreePair& pair : tree[folds ? 1 : 0]) {
    holder.push_back(pair.left);
    holder.push_back(pair.right);
  }
  if (holder.size() != power) throw std::logic_error("DeviceAdasum: the tree does not halve to a power of two");
  std::vector<std::pair<size_t, size_t>> range(power, {0, count});
  size_t tree_level = folds ? 1 : 0;
  for (size_t d = 1; d < power; d *= 2, ++tree_level) {
    for (size_t p = 0; p < tree.at(tree_level).size(); ++p)
      if (tree[tree_level][p].left != holder[2 * d * p] || tree[tree_level][p].right != holder[2 * d * p + d])
        throw std::logic_error("DeviceAdasum: the tree's level " + std::to_string(tree_level) +
                               " is not distance doubling");
    levels.emplace_back();
    std::vector<std::pair<size_t, size_t>> next = range;
    for (size_t j = 0; j < power; ++j) {
      const bool left = (j / d) % 2 == 0;
      const auto [lo, hi] = range[j];
      const size_t mid = lo + (hi - lo) / 2;
      next[j] = left ? std::pair{lo, mid} : std::pair{mid, hi};
      AdasumStep step{holder[j], holder[left ? j + d : j - d], left, next[j].first, next[j].second, {}};
      const size_t j0 = j / (2 * d) * (2 * d);
      for (size_t k = j0; k < j0 + 2 * d; ++k) step.group.push_back(holder[k]);
      levels.back().push_back(std::move(step));
    }
    range = std::move(next);
  }
  for (size_t j = 0; j < power; ++j) schedule.slices.push_back({holder[j], range[j].first, range[j].second});
  // What each replica gives away at the next level: its range less the half it keeps there.
  for (size_t l = 0; l + 1 < levels.size(); ++l)
    for (AdasumStep& step : levels[l])
      for (const AdasumStep& next : levels[l + 1])
        if (next.replica == step.replica) {
          step.sent_begin = next.left ? next.end : step.begin;
          step.sent_end = next.left ? step.end : next.begin;
        }
  return schedule;
}

void AdasumAllReduce(const ReplicaSet& vectors, const PrepareBlock& prepare,
                     const FinishBlock& finish) {
  const size_t n = vectors.count();
  if (n == 0) throw std::invalid_argument("adasum: no replicas");
  const bool bf16 = vectors.in_bf16();
  for (const base::ReplicaParams& x : vectors.members) {
    if (x.in_bf16() != bf16) throw std::invalid_argument("adasum: some replicas are in bf16 and others in fp32");
    if (!bf16 && x.params == nullptr && vectors.size > 0) throw std::invalid_argument("adasum: null parameters");
  }
  const std::vector<size_t> bounds = TensorBounds(vectors);
  const size_t tensors = bounds.size() - 1;
  std::vector<Chunk> chunks;
  for (size_t t = 0; t < tensors; ++t)
    for (size_t b = bounds[t]; b < bounds[t + 1]; b += kChunk)
      chunks.push_back({t, b, std::min(b + kChunk, bounds[t + 1])});

  const std::vector<std::vector<TreePair>> levels = PairwiseTreeLevels(n);
  const size_t passes = levels.size() + 1;
  // coef[level][(t * pairs + p) * 2 + side]: level's coefficients for tensor t, pair p.
  std::vector<std::vector<float>> coef(levels.size());
  std::vector<Dots> partial;  // partial[c * pairs + p]: chunk c's share of level `pass`'s dots
  for (size_t pass = 0; pass < passes; ++pass) {
    const std::vector<TreePair>* measure = pass < levels.size() ? &levels[pass] : nullptr;
    const size_t measured = measure ? measure->size() : 0;
    const bool last = pass + 1 == passes;
    // fp32 replicas hold the levels combined by the passes before, in place; bf16 replicas are
    // not written until the end (each level rounded would not be Adasum), so each pass widens the
    // replicas and combines every level before its own again, the same arithmetic in the same
    // order: the same bits as fp32 replicas of the widened values.
    const size_t first_combined = bf16 || pass == 0 ? 0 : pass - 1;
    partial.assign(chunks.size() * measured, Dots{});
    tbb::parallel_for(tbb::blocked_range<size_t>(0, chunks.size()), [&](const auto& range) {
      ReplicaBlocks blocks(vectors, kChunk);
      for (size_t c = range.begin(); c != range.end(); ++c) {
        const Chunk& chunk = chunks[c];
        const size_t m = chunk.end - chunk.begin;
        float* const* x = blocks.Load(chunk.begin, chunk.end);
        if ((pass == 0 || bf16) && prepare)
          for (size_t i = 0; i < n; ++i) prepare(i, chunk.begin, chunk.end, x[i]);
        for (size_t level = first_combined; level < pass; ++level) {
          const float* k = coef[level].data() + chunk.tensor * levels[level].size() * 2;
          for (size_t p = 0; p < levels[level].size(); ++p)
            Combine(x[levels[level][p].left], x[levels[level][p].right], m, k[2 * p], k[2 * p + 1]);
        }
        for (size_t p = 0; p < measured; ++p)
          partial[c * measured + p] = PartialDots(x[(*measure)[p].left], x[(*measure)[p].right], m);
        if (last) {
          if (finish) finish(chunk.begin, chunk.end, x[0]);
          blocks.StoreAll(x[0]);
        }
      }
    });
    if (!measure) continue;
    // Whole-tensor dots: the chunks of a tensor are consecutive and summed in index order.
    std::vector<Dots> sums(tensors * measured);
    for (size_t c = 0; c < chunks.size(); ++c) {
      for (size_t p = 0; p < measured; ++p) {
        Dots& s = sums[chunks[c].tensor * measured + p];
        const Dots& d = partial[c * measured + p];
        s.ab += d.ab;
        s.aa += d.aa;
        s.bb += d.bb;
      }
    }
    std::vector<float>& k = coef[pass];
    k.assign(tensors * measured * 2, 1.0f);
    for (size_t q = 0; q < sums.size(); ++q) {
      k[2 * q] = static_cast<float>(AdasumCoefficient(sums[q].ab, sums[q].aa));
      k[2 * q + 1] = static_cast<float>(AdasumCoefficient(sums[q].ab, sums[q].bb));
    }
  }
}

}  // namespace xmlt::merge
