// An open mega-batch in a checkpoint; see mega_batch_work.h.
#include "run/mega_batch_work.h"

#include <stdexcept>
#include <string>

namespace xmlt::run {

nlohmann::json OpenMegaBatchToJson(const MegaBatchWork& t) {
  const scheduler::MegaBatchRun& r = t.run;
  return {{"updates", r.updates},       {"rows_of", r.rows_of},   {"busy_s", r.busy_s},
          {"loss_of", r.loss_of},       {"span_s", r.span_s},     {"batches", r.batches},
          {"rows", r.rows},             {"merge_s", t.merge_s},   {"merges", t.merges},
          {"planned", t.planned},       {"mega_batch_rows", t.mega_batch_rows},
          {"weights", t.merged.weights}, {"perturbed", t.merged.perturbed}};
}

MegaBatchWork OpenMegaBatchFromJson(const nlohmann::json& j, scheduler::MegaBatchRun empty) {
  MegaBatchWork t;
  t.run = std::move(empty);
  const size_t n = t.run.updates.size();
  auto sized = [&](const char* key, auto* out) {
    j.at(key).get_to(*out);
    if (out->size() != n) throw std::invalid_argument(std::string("open mega-batch: ") + key + " for another number of devices");
  };
  sized("updates", &t.run.updates);
  sized("rows_of", &t.run.rows_of);
  sized("busy_s", &t.run.busy_s);
  sized("loss_of", &t.run.loss_of);
  t.run.span_s = j.at("span_s").get<double>();
  t.run.batches = j.at("batches").get<uint64_t>();
  t.run.rows = j.at("rows").get<uint64_t>();
  t.merge_s = j.at("merge_s").get<double>();
  t.merges = j.at("merges").get<uint64_t>();
  t.planned = j.at("planned").get<uint64_t>();
  t.mega_batch_rows = j.at("mega_batch_rows").get<uint64_t>();
  t.merged.weights = j.at("weights").get<std::vector<double>>();
  t.merged.perturbed = j.at("perturbed").get<bool>();
  if (t.planned == 0 || t.planned >= t.mega_batch_rows || t.run.rows > t.planned)
    throw std::invalid_argument("open mega-batch: bad row counts");
  return t;
}

}  // namespace xmlt::run
