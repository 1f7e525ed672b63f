// JoinRankGroup in a build without MPI: this process alone, or a clear refusal under a launcher.
#include <stdexcept>

#include "ranks/rank_group.h"

namespace xmlt::ranks {

std::unique_ptr<RankGroup> JoinRankGroup(std::chrono::milliseconds) {
  if (LaunchedUnderMpi())
    throw std::runtime_error(
        "started by an MPI launcher, but this build of xmltrain has no MPI: install libopenmpi-dev and build with "
        "-DXMLT_MPI=ON (or run without mpirun)");
  return MakeSoloGroup();
}

}  // namespace xmlt::ranks
