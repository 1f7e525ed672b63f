// The flags of `xmltrain train`; see train_flags.h.
#include "apps/train_flags.h"

#include <CLI/CLI.hpp>

#include "apps/float_rate_flag.h"
#include "apps/propensity_flag.h"
#include "apps/unsigned_flag.h"

namespace xmlt::apps {

bool TrainFlags::given(const char* flag) const { return command->count(flag) > 0; }

void AddTrainFlags(CLI::App* cmd, TrainFlags* f) {
  cmd->add_option("--train", f->train, "Training data (XML-repository/libSVM text, or .xmlb)")->required();
  cmd->add_option("--train-labels", f->train_labels, "Labels file when --train is the X file of a split pair");
  cmd->add_option("--test", f->test, "Test data, evaluated on the --eval-every schedule");
  cmd->add_option("--test-labels", f->test_labels, "Labels file when --test is the X file of a split pair");
  cmd->add_option("--epochs", f->options.epochs,
                  "Passes over the training rows (fractions allowed); 30 where --hidden auto narrowed the MLP "
                  "to 512 for the ranker")
      ->capture_default_str();
  cmd->add_option("--batch", f->options.batch, "Rows per batch")->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--lr", f->lr,
                  "Learning rate (SGD on the batch-mean loss) for a batch of --batch rows, or 'auto': "
                  "searched on a held-out slice of the training rows before training")
      ->capture_default_str();
  cmd->add_option("--lr-schedule", f->lr_schedule,
                  "The learning rate over the run: constant, or cosine (--lr x 0.5 (1 + cos(pi x rows trained / "
                  "rows of the whole run)), set at each mega-batch's start; a resumed run follows the same "
                  "schedule, and resuming a finished run with more --epochs stretches it over the new total)")
      ->capture_default_str();
  cmd->add_option("--input-optimizer", f->input_optimizer,
                  "The first layer's step: adagrad (per-coordinate rates over its sparse rows, at --input-lr) or "
                  "sgd (the other layers' rule). auto: adagrad, on every device (CPU dense, SLIDE's sampled step, "
                  "GPU)")
      ->capture_default_str();
  cmd->add_option("--input-lr", f->input_lr,
                  "Adagrad's rate for the first layer at --lr; it follows --lr's schedule, Algorithm 1's batch "
                  "rescaling and rollbacks in proportion, but not the scaling with the device count; several "
                  "devices with a global --momentum gamma take (1 - gamma) of it")
      ->capture_default_str()
      ->check(kFloatRate);
  cmd->add_option("--ranker", f->ranker,
                  "After training, fit a linear model (squared hinge per label, over the (feature, label) pairs "
                  "that share a training row) that re-scores the MLP's top --ranker-shortlist labels, blended "
                  "with the MLP's probabilities by --ranker-blend: auto, or off (the MLP alone)")
      ->capture_default_str();
  cmd->add_option("--ranker-blend", f->ranker_blend,
                  "How the ranker's sigmoid(score) s and the MLP's probability p combine: auto (a x s + (1 - a) "
                  "x p or s^a x p^(1 - a), the form and a in 0, 0.1, ..., 1 chosen on --ranker-holdout of the "
                  "training rows, which neither model then trains on; a = 0 keeps the MLP alone), or a fixed a "
                  "in [0, 1] of s^a x p^(1 - a) (no rows held out)")
      ->capture_default_str();
  cmd->add_option("--ranker-holdout", f->ranker_options.holdout,
                  "The share of the training rows held out to choose --ranker-blend auto, in (0, 0.5], at most "
                  "5000 rows; with fewer than 100, the blend is chosen by 3 folds of the training rows instead, after "
                  "training (no ranker under 30 rows)")
      ->capture_default_str();
  cmd->add_option("--holdout-stop", f->holdout_stop,
                  "auto: where --ranker-blend auto holds at least 2000 training rows out, they are scored at "
                  "the end of each epoch once the schedule's factor on the rate is below 0.2, and the MLP's "
                  "training stops there when their mean P@1/3/5 gained less than 0.0005 in two such epochs in a "
                  "row; off: every planned epoch. A run they stopped resumes as stopped; with off it trains on "
                  "to --epochs")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "off"}));
  cmd->add_option("--ranker-shortlist", f->ranker_options.shortlist,
                  "How many of the MLP's best labels of a row the ranker trains on (as negatives) and re-scores, "
                  "5 to 1000")
      ->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--ranker-passes", f->ranker_options.passes,
                  "The most passes of the ranker's solver over each label's rows, 1 or more (a label stops "
                  "sooner once its dual's projected gradients span less than 0.1)")
      ->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--local-momentum", f->options.local_momentum,
                  "Heavy-ball momentum of each device's SGD, in [0, 1) (single: 0.9; several devices: preset)");
  cmd->add_option("--weight-decay", f->options.weight_decay,
                  "L2 weight decay: each step adds this x w to the gradient of every weight matrix (not the "
                  "biases); the first layer's rows only at the steps whose batch holds their feature. CPU "
                  "devices' dense step only")
      ->capture_default_str();
  cmd->add_option("--dropout", f->options.dropout,
                  "In training, zero each hidden unit's activation with this probability and scale the kept ones "
                  "by 1 / (1 - it), masks drawn from --seed; in [0, 1), off in evaluation. Every device, dense or "
                  "sampled step (default: 0.5)");
  cmd->add_option("--normalize", f->normalize, "Input rows: l2 (scaled to unit norm) or none")->capture_default_str();
  cmd->add_option("--hidden", f->hidden,
                  "Hidden layer sizes, comma separated (e.g. 256,128), or auto: one layer, the largest power of two "
                  "from 128 to 1024 that keeps (features + labels) x it within 2^27 parameters and is no wider "
                  "than the features rounded up to a power of two; with --ranker auto, whose shortlist is the MLP's job, "
                  "at most 512 where (features + labels) x the width passes 2^24")
      ->capture_default_str();
  cmd->add_option("--mega-batch", f->options.mega_batch,
                  "Batches per mega-batch (single: 100; several devices: preset)")->check(kUnsignedValue);
  cmd->add_option("--eval-every", f->eval_every, "Evaluate: 'epoch', 'end' (or 0), or every N mega-batches")
      ->capture_default_str();
  cmd->add_option("--eval-rows", f->options.eval_rows,
                  "Evaluate on a fixed sample of this many test rows, drawn from --seed (0 = all rows)")
      ->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--final-eval", f->final_eval,
                  "The run's last evaluation: 'full' (the whole test set) or 'sample' (the --eval-rows sample)")
      ->capture_default_str();
  cmd->add_option("--math", f->math,
                  "The output layer's products in training: auto (bf16 where every device is a CPU with AMX or "
                  "AVX-512 BF16 and the step is the dense one, else fp32); fp32; bf16 (bfloat16 inputs, fp32 sums; "
                  "GPUs, and CPUs with AMX or AVX-512 BF16); or tf32 (GPUs only). On a GPU it is every dense "
                  "product's cuBLAS compute type")
      ->capture_default_str();
  cmd->add_option("--optimizer-state", f->optimizer_state,
                  "How the dense step, on CPUs and GPUs, keeps its momentum and the first layer's Adagrad squares: "
                  "auto (bf16 where --math is bf16, else fp32); fp32; or bf16 (half the memory, rounded "
                  "stochastically; needs --math bf16). The sampled step keeps fp32")
      ->capture_default_str();
  cmd->add_option("--weights", f->weights,
                  "How the dense step keeps the weights: auto (bf16 where --math is bf16 and the merges run on "
                  "the host: CPU devices, any --algo, on one machine or across ranks, and GPUs merged on the host; "
                  "else fp32); fp32; or bf16 (half the memory, rounded stochastically, no fp32 copy; needs --math "
                  "bf16; on GPUs alone it moves the merges to the host). The sampled step reads fp32 weights")
      ->capture_default_str();
  AddPropensityFlag(cmd, &f->propensity);
  cmd->add_option("--seed", f->options.seed, "Seed for initialization and shuffling")->capture_default_str()->check(kUnsignedValue);
  cmd->add_option("--metrics", f->metrics, "Write one JSON line per evaluation to this file");
  cmd->add_option("--model", f->model_out, "Save the trained model to this file");
  AddDataFlags(cmd, &f->data);

  const char* kReliability = "Checkpoints and faults";
  cmd->add_option("--checkpoint-dir", f->control.checkpoint_dir,
                  "Write checkpoints here (at the end, on SIGINT/SIGTERM, and every --checkpoint-every mega-batches)")
      ->group(kReliability);
  cmd->add_option("--checkpoint-every", f->control.checkpoint_every,
                  "Mega-batches between checkpoints (0 = only at the end and on a stop)")
      ->capture_default_str()->group(kReliability)->check(kUnsignedValue);
  cmd->add_option("--resume", f->control.resume_dir,
                  "Continue the run checkpointed in this directory (same flags; --epochs is the total)")
      ->group(kReliability);
  cmd->add_option("--max-rollbacks", f->control.max_rollbacks,
                  "Divergences (NaN/Inf loss or model) rolled back with halved learning rates before the run stops")
      ->capture_default_str()->group(kReliability)->check(kUnsignedValue);
  cmd->add_option("--divergence-factor", f->options.divergence_factor,
                  "A batch loss above this many times the first batch's is a divergence, rolled back like a "
                  "non-finite one (0 = only non-finite values)")
      ->capture_default_str()->group(kReliability);
  cmd->add_option("--inject-fault", f->faults,
                  "Make a device fail, for tests and drills: device=I,megabatch=K[,kind=fail|nan|exit|lost] (repeatable; "
                  "kind=nan reports a NaN loss, a divergence; kind=exit ends the device's process, a dying rank; "
                  "kind=lost fails as a GPU whose context is lost, taking every logical device of that GPU with it)")
      ->group(kReliability);

  const char* kEngine = "Several devices";
  cmd->add_option("--algo", f->algo,
                  "single (one device); slide (SLIDE: one CPU device, each row training on the labels LSH tables "
                  "over the output layer find for it, threads updating the shared model without locks); adaptive (dynamic dispatch, Algorithm 1, normalized merge); elastic "
                  "(static, average); adasum (static, Adasum); sync (gradient aggregation every step); "
                  "crossbow (synchronous model averaging every step)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--cpu-output", f->cpu_output,
                  "The output layer of the CPU devices of a multi-device run: dense, or sampled (SLIDE's LSH "
                  "tables and active labels, the --slide-* knobs; plain SGD: those devices step without "
                  "--local-momentum, at lr / (1 - local momentum) instead; GPUs and the merges unchanged)")
      ->capture_default_str()->group(kEngine);
  const char* kSlide = "SLIDE (--algo slide, --cpu-output sampled)";
  cmd->add_option("--slide-hash", f->sampled_output.hash,
                  "Hash family of the tables over the output layer: dwta or simhash (default by the label count: "
                  "dwta from 500,000 labels, as SLIDE for Amazon-670K, else simhash, as for Delicious-200K)")
      ->group(kSlide);
  cmd->add_option("--slide-k", f->sampled_output.k, "Codes per table key (default: 8 with dwta, 9 with simhash)")
      ->group(kSlide);
  cmd->add_option("--slide-l", f->sampled_output.l, "Tables (default 50)")->group(kSlide);
  cmd->add_option("--slide-bucket", f->sampled_output.bucket_cap, "Labels taken from one bucket at most")
      ->capture_default_str()->group(kSlide);
  cmd->add_option("--slide-min-active", f->sampled_output.min_active,
                  "Random labels pad a row's active set to this size")
      ->capture_default_str()->group(kSlide);
  cmd->add_option("--slide-weight-padding", f->sampled_output.weight_padding,
                  "Weight each random padding label in the softmax by the left-out labels it stands for "
                  "(log(left out / drawn) added to its logit: the sampled softmax's correction); false: as SLIDE, "
                  "unweighted (default: true where the labels are at most 64x --slide-min-active)")
      ->group(kSlide);
  cmd->add_option("--slide-rehash-first", f->sampled_output.first_rebuild,
                  "Updates after a rebuild before the updated rows are rehashed")
      ->capture_default_str()->group(kSlide);
  cmd->add_option("--slide-rehash-growth", f->sampled_output.rebuild_growth,
                  "Each gap between rehashes is this much longer than the last (the tables are rebuilt whole at "
                  "every mega-batch)")
      ->capture_default_str()->group(kSlide);
  cmd->add_option("--devices", f->devices,
                  "Devices: cpu:N, cuda:0,cuda:1, cuda:0xN, or mixes (--algo single: one device, cpu unless given)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--speed", f->speed, "Relative slowness per device, e.g. 1,1.1,1.2,1.32")->group(kEngine);
  cmd->add_option("--hetero", f->hetero, "Gamma-model heterogeneity: cvb:vmach=0.6,vtask=0.1, or none")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--rank-timeout", f->rank_timeout_s,
                  "Under mpirun: seconds a rank waits for the others at a merge or exchange before it stops "
                  "the run naming itself (a dead or hung rank)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--clock", f->clock,
                  "virtual (simulated time from a per-row and a per-merge cost: deterministic) or wall (real "
                  "time; emulated slowness becomes waiting)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--clock-costs", f->clock_costs,
                  "Virtual clock, costs not given below: model (from the model's shape and the data's mean row "
                  "length on a nominal 10 GFLOP/s, 10 GB/s device: the same for every run) or measured (timed on "
                  "the run's own first mega-batch and merge: they vary with the machine's load)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--row-cost", f->scheduling.row_cost_s, "Virtual clock: seconds per row (0 = from --clock-costs)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--merge-cost", f->scheduling.merge_cost_s,
                  "Virtual clock: seconds per parameter and replica of one merge (0 = from --clock-costs)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--batch-min", f->scheduling.batch_min, "Smallest batch of Algorithm 1 (0 = --batch / 8)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--beta", f->scheduling.beta, "Algorithm 1's rows per update of deviation (0 = batch-min / 2)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--preset", f->preset,
                  "Values of the knobs below that are not given: default (measured to match one device's "
                  "accuracy) or paper (the Adaptive SGD paper's section 5.1); table below")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--momentum", f->scheduling.merge_rule.momentum,
                  "Global momentum gamma of the merged model (default: preset)")
      ->group(kEngine);
  cmd->add_option("--lr-scaling", f->lr_scaling,
                  "How --lr grows with the device count n: linear (x n), sqrt or none (default: preset)")
      ->group(kEngine);
  cmd->add_option("--mega-batch-warmup", f->mega_batch_warmup,
                  "The first mega-batches grow from one batch per device, doubling up to --mega-batch: on or off "
                  "(default: preset)")
      ->group(kEngine);
  cmd->add_option("--pert-weights", f->pert_weights,
                  "Perturbed merge weights: normalized (scaled back to sum 1) or raw (the paper's; default: preset)")
      ->group(kEngine);
  cmd->add_option("--pert-thr", f->scheduling.merge_rule.pert_threshold,
                  "Perturb merge weights when every replica's L2 norm / #params is below this")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--pert-delta", f->scheduling.merge_rule.pert_delta, "Perturbation factor of the merge weights")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--schedule", f->schedule,
                  "Overrides the preset: dynamic (next batch to the free device), static (equal shares), "
                  "sync (each round every device takes --batch / n rows; merged every round)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--merge", f->merge,
                  "Overrides the preset: normalized (Algorithm 2), average (elastic; EASGD with "
                  "--elastic-alpha), adasum, crossbow or gradient (the last two need --schedule sync)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--collective", f->collective,
                  "Weighted sums over the replicas: ring, tree or naive on the host; with every device a GPU, "
                  "ring runs on the GPUs, and nccl is NCCL's (across MPI ranks too, for adaptive, elastic and sync)")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--merge-on", f->merge_on,
                  "auto (on the GPUs when every device is a GPU and the collective is ring or nccl, across MPI ranks "
                  "nccl only; else on the host), host (through the devices' host mirrors) or gpus")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--momentum-mode", f->momentum_mode,
                  "heavy (w' = merge + gamma (w - w_prev)) or nesterov (replicas start from w + gamma "
                  "(w - w_prev))")
      ->capture_default_str()->group(kEngine);
  cmd->add_option("--elastic-alpha", f->scheduling.merge_rule.elastic_alpha,
                  "Elastic force: with --merge average, EASGD's pull toward the center (0 = plain "
                  "averaging); with crossbow, its a (0 = 1 / devices)")
      ->capture_default_str()->group(kEngine);
}

}  // namespace xmlt::apps
