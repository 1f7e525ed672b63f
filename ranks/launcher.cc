// Whether an MPI launcher started this process; see rank_group.h.
#include <cstdlib>

#include "ranks/rank_group.h"

namespace xmlt::ranks {

bool LaunchedUnderMpi() {
  // OpenMPI's mpirun, and PMI / PMIx launchers (srun, MPICH's hydra).
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

}  // namespace xmlt::ranks
